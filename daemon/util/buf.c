/* SPDX-License-Identifier: Apache-2.0 */
/* Growable byte buffer with a hard maximum (see buf.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

void buf_init(Buf *b, size_t max) {
        *b = (Buf){ .max = max };
}

void buf_deinit(Buf *b) {
        free(b->data);
        *b = (Buf){ .max = b->max };
}

int buf_reserve(Buf *b, size_t n) {
        size_t want, cap;
        uint8_t *p;

        /* One byte beyond len stays reserved for the NUL terminator. */
        if (n > b->max - b->len)
                return -E2BIG;
        want = b->len + n + 1;
        if (want <= b->cap)
                return 0;
        cap = b->cap ? b->cap : 64;
        while (cap < want)
                cap = cap > SIZE_MAX / 2 ? want : cap * 2;
        p = realloc(b->data, cap);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->cap = cap;
        return 0;
}

int buf_append(Buf *b, const void *p, size_t n) {
        int r;

        r = buf_reserve(b, n);
        if (r < 0)
                return r;
        if (n > 0)
                memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0;
        return 0;
}

int buf_append_str(Buf *b, const char *s) {
        return buf_append(b, s, strlen(s));
}

int buf_append_byte(Buf *b, uint8_t c) {
        return buf_append(b, &c, 1);
}

int buf_vprintf(Buf *b, const char *fmt, va_list ap) {
        va_list aq;
        int n, r;

        va_copy(aq, ap);
        n = vsnprintf(NULL, 0, fmt, aq);
        va_end(aq);
        if (n < 0)
                return -EINVAL;
        r = buf_reserve(b, (size_t)n);
        if (r < 0)
                return r;
        (void)vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
        b->len += (size_t)n;
        return 0;
}

int buf_printf(Buf *b, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = buf_vprintf(b, fmt, ap);
        va_end(ap);
        return r;
}

void buf_trim(Buf *b) {
        uint8_t *p;

        if (!b->data || b->cap <= b->len + 1)
                return;
        p = realloc(b->data, b->len + 1);
        if (!p)
                return; /* the larger block stays: still correct */
        b->data = p;
        b->cap = b->len + 1;
}

uint8_t *buf_steal(Buf *b, size_t *ret_len) {
        uint8_t *p;

        if (!b->data) {
                if (buf_reserve(b, 0) < 0)
                        return NULL;
                b->data[0] = 0; /* empty, and NUL-terminated as promised */
        }
        p = b->data;
        if (ret_len)
                *ret_len = b->len;
        *b = (Buf){ .max = b->max };
        return p;
}
