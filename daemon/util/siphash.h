/* SPDX-License-Identifier: Apache-2.0 */
/* SipHash-2-4 with its 128-bit output (Aumasson and Bernstein): a keyed hash whose collisions
 * cannot be searched for without the key. Pure and thread-safe. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_BYTES 16

/* The 128-bit SipHash-2-4 of data under key: the reference output bytes 0-7 in *ret_lo and
 * 8-15 in *ret_hi, each read little-endian. */
void siphash128(const uint8_t key[SIPHASH_KEY_BYTES], const void *data, size_t len,
                uint64_t *ret_lo, uint64_t *ret_hi);
