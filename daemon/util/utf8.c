/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 checks for text that came from outside (file metadata, request paths) before it is put
 * into JSON (jansson refuses invalid UTF-8) or quoted in a message. */
#include <stdint.h>

#include "util/utf8.h"

size_t utf8_char_length(const void *p, size_t len) {
        const uint8_t *s = p;
        uint32_t cp;
        size_t n;

        /* RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
        if (len == 0)
                return 0;
        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 1, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 2, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 3, cp = s[0] & 0x07;
        else
                return 0;
        if (len <= n)
                return 0;
        for (size_t i = 1; i <= n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        return n + 1;
}

bool utf8_is_valid(const void *p, size_t len) {
        const uint8_t *s = p;

        for (size_t i = 0, n; i < len; i += n) {
                n = utf8_char_length(s + i, len - i);
                if (n == 0)
                        return false;
        }
        return true;
}

bool utf8_ascii_is_printable(const void *p, size_t len) {
        const uint8_t *s = p;

        for (size_t i = 0; i < len; i++)
                if (s[i] < 0x20 || s[i] > 0x7e)
                        return false;
        return true;
}
