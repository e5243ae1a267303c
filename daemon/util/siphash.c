/* SPDX-License-Identifier: Apache-2.0 */
/* SipHash-2-4, 128-bit output, after the reference implementation (siphash.c of
 * github.com/veorq/SipHash): two compression rounds per word, four finalization rounds. */
#include "util/siphash.h"

static uint64_t siphash_rotl(uint64_t x, unsigned b) {
        return (x << b) | (x >> (64 - b));
}

static uint64_t siphash_load_le(const uint8_t *p) {
        uint64_t v = 0;

        for (unsigned i = 0; i < 8; i++)
                v |= (uint64_t)p[i] << (8 * i);
        return v;
}

typedef struct SipState {
        uint64_t v0, v1, v2, v3;
} SipState;

static void siphash_rounds(SipState *s, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                s->v0 += s->v1;
                s->v1 = siphash_rotl(s->v1, 13);
                s->v1 ^= s->v0;
                s->v0 = siphash_rotl(s->v0, 32);
                s->v2 += s->v3;
                s->v3 = siphash_rotl(s->v3, 16);
                s->v3 ^= s->v2;
                s->v0 += s->v3;
                s->v3 = siphash_rotl(s->v3, 21);
                s->v3 ^= s->v0;
                s->v2 += s->v1;
                s->v1 = siphash_rotl(s->v1, 17);
                s->v1 ^= s->v2;
                s->v2 = siphash_rotl(s->v2, 32);
        }
}

void siphash128(const uint8_t key[SIPHASH_KEY_BYTES], const void *data, size_t len,
                uint64_t *ret_lo, uint64_t *ret_hi) {
        const uint8_t *p = data;
        uint64_t k0 = siphash_load_le(key), k1 = siphash_load_le(key + 8);
        SipState s = {
                .v0 = 0x736f6d6570736575ull ^ k0,
                .v1 = 0x646f72616e646f6dull ^ k1 ^ 0xee, /* 128-bit output */
                .v2 = 0x6c7967656e657261ull ^ k0,
                .v3 = 0x7465646279746573ull ^ k1,
        };
        size_t n_words = len / 8;
        uint64_t last = (uint64_t)len << 56;

        for (size_t i = 0; i < n_words; i++) {
                uint64_t m = siphash_load_le(p + 8 * i);

                s.v3 ^= m;
                siphash_rounds(&s, 2);
                s.v0 ^= m;
        }
        for (size_t i = 0; i < len % 8; i++)
                last |= (uint64_t)p[8 * n_words + i] << (8 * i);
        s.v3 ^= last;
        siphash_rounds(&s, 2);
        s.v0 ^= last;

        s.v2 ^= 0xee;
        siphash_rounds(&s, 4);
        *ret_lo = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
        s.v1 ^= 0xdd;
        siphash_rounds(&s, 4);
        *ret_hi = s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}
