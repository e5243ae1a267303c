/* SPDX-License-Identifier: Apache-2.0 */
/* Owned, growable byte buffer with a hard maximum: growth past `max` fails with -E2BIG instead
 * of eating memory. The data is always followed by a NUL byte (not counted in len) so text
 * can be handed to C APIs. */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/slice.h"

typedef struct Buf {
        uint8_t *data;
        size_t len;
        size_t cap;
        size_t max;
} Buf;

/* Initializes an empty buffer that may grow to `max` bytes. Never fails. */
void buf_init(Buf *b, size_t max);
/* Frees the storage; the buffer is empty and reusable afterwards. */
void buf_deinit(Buf *b);
/* Appends bytes. Returns 0, -E2BIG past the maximum, or -ENOMEM. */
int buf_append(Buf *b, const void *p, size_t n);
int buf_append_str(Buf *b, const char *s);
int buf_append_byte(Buf *b, uint8_t c);
/* Appends formatted text. Returns 0, -E2BIG or -ENOMEM. */
int buf_printf(Buf *b, const char *fmt, ...) _printf_(2, 3);
int buf_vprintf(Buf *b, const char *fmt, va_list ap) _printf_(2, 0);
/* Ensures room for n more bytes. */
int buf_reserve(Buf *b, size_t n);
/* Gives back the room beyond the data (and its NUL): for bytes kept a while, as read. */
void buf_trim(Buf *b);
/* Hands the storage to the caller (NUL-terminated, length in *ret_len); the buffer is empty. */
uint8_t *buf_steal(Buf *b, size_t *ret_len);

static inline Slice buf_slice(const Buf *b) {
        return slice_make(b->data, b->len);
}

static inline const char *buf_str(const Buf *b) {
        return b->data ? (const char *)b->data : "";
}

static inline void buf_deinitp(Buf *b) {
        buf_deinit(b);
}
