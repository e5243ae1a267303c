/* SPDX-License-Identifier: Apache-2.0 */
/* UUID v4 and v7 strings from getrandom(2). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>

#include "util/time-util.h"
#include "util/uuid.h"

static void uuid_random_bytes(uint8_t b[16]) {
        /* getrandom on Linux >= 3.17 does not fail for 16 bytes once the pool is initialized;
         * the fallback only keeps the id unique-enough if it ever does. */
        if (getrandom(b, 16, 0) != 16)
                for (size_t i = 0; i < 16; i++)
                        b[i] = (uint8_t)random();
}

static void uuid_format(const uint8_t b[16], char out[UUID_STRING_MAX]) {
        (void)snprintf(out, UUID_STRING_MAX,
                       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                       b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                       b[13], b[14], b[15]);
}

void uuid_v4_string(char out[UUID_STRING_MAX]) {
        uint8_t b[16];

        uuid_random_bytes(b);
        b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
        b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
        uuid_format(b, out);
}

void uuid_v7_string(char out[UUID_STRING_MAX]) {
        uint64_t ms = (uint64_t)now_realtime_ms();
        uint8_t b[16];

        uuid_random_bytes(b);
        for (int i = 0; i < 6; i++) /* 48-bit big-endian Unix milliseconds */
                b[i] = (uint8_t)(ms >> (40 - 8 * i));
        b[6] = (uint8_t)((b[6] & 0x0f) | 0x70);
        b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
        uuid_format(b, out);
}
