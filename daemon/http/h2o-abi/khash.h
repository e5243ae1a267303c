/* SPDX-License-Identifier: Apache-2.0 */
/* Our own declaration of the one hash table type h2o/http2_internal.h needs, written for
 * icecommit (no klib code). Debian's libh2o-dev installs http2_internal.h, which includes
 * "khash.h", but not khash.h itself; guard.c needs http2_internal.h to see each HTTP/2
 * connection's streams and their buffered bodies.
 *
 * What must match libh2o 2.2.5's build (klib khash 0.2.8, deps/klib/khash.h there) is the
 * memory layout h2o_http2_conn_t embeds a pointer to, and the bucket flags:
 *   struct { khint_t n_buckets, size, n_occupied, upper_bound; khint32_t *flags;
 *            khkey_t *keys; khval_t *vals; }
 *   two flag bits per bucket, 16 buckets per 32-bit word: bit 1 "empty", bit 0 "deleted".
 * We only read the table (iterate occupied buckets), never insert or resize. kh_get, which
 * http2_internal.h's inline h2o_http2_conn_get_stream() names, is a linear search here with
 * the same answer (the bucket of the key, or kh_end); nothing of ours calls it. */
#pragma once

#include <stdint.h>

typedef uint32_t khint32_t;
typedef uint64_t khint64_t;
typedef khint32_t khint_t;
typedef khint_t khiter_t;

#define ICECOMMIT_KH_IS_EMPTY_OR_DELETED(flags, i) (((flags)[(i) >> 4] >> ((0xfU & (i)) << 1)) & 3U)

#define khash_t(name) kh_##name##_t

#define KHASH_MAP_INIT_INT64(name, khval_t)                                                        \
        typedef struct kh_##name##_s {                                                             \
                khint_t n_buckets, size, n_occupied, upper_bound;                                  \
                khint32_t *flags;                                                                  \
                khint64_t *keys;                                                                   \
                khval_t *vals;                                                                     \
        } kh_##name##_t;                                                                           \
        static inline khint_t kh_get_##name(const kh_##name##_t *h, khint64_t key) {               \
                for (khint_t i = 0; h && i < h->n_buckets; i++)                                    \
                        if (!ICECOMMIT_KH_IS_EMPTY_OR_DELETED(h->flags, i) && h->keys[i] == key)   \
                                return i;                                                          \
                return h ? h->n_buckets : 0;                                                       \
        }

#define kh_get(name, h, k) kh_get_##name(h, k)
#define kh_end(h) ((h)->n_buckets)
#define kh_val(h, x) ((h)->vals[x])
#define kh_exist(h, x) (!ICECOMMIT_KH_IS_EMPTY_OR_DELETED((h)->flags, (x)))

/* Runs `code` with `vvar` set to each value in an occupied bucket. */
#define kh_foreach_value(h, vvar, code)                                                            \
        do {                                                                                       \
                for (khint_t kh_i_ = 0; kh_i_ < kh_end(h); kh_i_++) {                              \
                        if (!kh_exist(h, kh_i_))                                                   \
                                continue;                                                          \
                        (vvar) = kh_val(h, kh_i_);                                                 \
                        code;                                                                      \
                }                                                                                  \
        } while (0)
