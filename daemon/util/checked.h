/* SPDX-License-Identifier: Apache-2.0 */
/* Overflow-checked arithmetic for values derived from input (manifest counts, row ids, sizes).
 * Each returns true when the result overflowed; *ret is then unspecified. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool checked_add_i64(int64_t *ret, int64_t a, int64_t b) {
        return __builtin_add_overflow(a, b, ret);
}

static inline bool checked_sub_i64(int64_t *ret, int64_t a, int64_t b) {
        return __builtin_sub_overflow(a, b, ret);
}

static inline bool checked_add_u64(uint64_t *ret, uint64_t a, uint64_t b) {
        return __builtin_add_overflow(a, b, ret);
}

static inline bool checked_add_size(size_t *ret, size_t a, size_t b) {
        return __builtin_add_overflow(a, b, ret);
}

static inline bool checked_mul_size(size_t *ret, size_t a, size_t b) {
        return __builtin_mul_overflow(a, b, ret);
}
