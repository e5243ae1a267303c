/* SPDX-License-Identifier: Apache-2.0 */
/* Percent-decoding of daemon/http: a pure function over bytes (no h2o, no allocation, no
 * logging), used by the path matching (router.h) and the query lookup (request.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "util/slice.h"

/* Percent-decodes `in` into `out`, which has room for in.len bytes (decoding never grows).
 * With plus_is_space, '+' becomes ' ' (form encoding, for queries). The result may contain NUL
 * bytes and is not NUL-terminated. Returns 0 and the length in *ret_len, or -EINVAL for a '%'
 * not followed by two hex digits. */
int http_percent_decode(Slice in, bool plus_is_space, char *out, size_t *ret_len);
