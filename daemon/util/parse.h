/* SPDX-License-Identifier: Apache-2.0 */
/* Strict number and flag parsing: no sign where none is allowed, no junk, no overflow. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* Each returns 0 and writes *ret, or -EINVAL (not a number) / -ERANGE (out of range). */
int parse_u64(const char *s, uint64_t *ret);
int parse_i64(const char *s, int64_t *ret);
int parse_bool(const char *s, bool *ret);
/* The value of one hexadecimal digit (either case), or -1. */
int parse_hex_digit(int c);
