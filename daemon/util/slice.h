/* SPDX-License-Identifier: Apache-2.0 */
/* Borrowed bytes: a pointer and a length, never owning, never NUL-terminated by contract. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct Slice {
        const uint8_t *ptr;
        size_t len;
} Slice;

#define SLICE_NULL ((Slice){ NULL, 0 })

static inline Slice slice_from_str(const char *s) {
        return (Slice){ (const uint8_t *)s, s ? strlen(s) : 0 };
}

static inline Slice slice_make(const void *p, size_t len) {
        return (Slice){ (const uint8_t *)p, len };
}

static inline bool slice_eq_str(Slice a, const char *s) {
        size_t n = strlen(s);
        return a.len == n && (n == 0 || memcmp(a.ptr, s, n) == 0);
}

static inline bool slice_has_prefix(Slice a, const char *prefix) {
        size_t n = strlen(prefix);
        return a.len >= n && memcmp(a.ptr, prefix, n) == 0;
}
