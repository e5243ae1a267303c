/* SPDX-License-Identifier: Apache-2.0 */
/* UTF-8 validation (RFC 3629) of byte strings. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The length (1 to 4) of the valid UTF-8 character p[0..len) starts with; 0 when it starts with
 * none (an invalid or cut sequence) or len is 0. */
size_t utf8_char_length(const void *p, size_t len);
/* Whether p[0..len) is valid UTF-8: no overlong forms, surrogates or code points past U+10FFFF. */
bool utf8_is_valid(const void *p, size_t len);
/* Whether p[0..len) is printable ASCII (0x20-0x7e), safe to quote in any message or log. */
bool utf8_ascii_is_printable(const void *p, size_t len);
