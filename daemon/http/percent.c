/* SPDX-License-Identifier: Apache-2.0 */
/* Percent-decoding (percent.h): pure, never reads past the Slice it is given. */
#include <errno.h>
#include <stdint.h>

#include "http/percent.h"
#include "util/parse.h"

int http_percent_decode(Slice in, bool plus_is_space, char *out, size_t *ret_len) {
        size_t n = 0;

        for (size_t i = 0; i < in.len; i++) {
                uint8_t c = in.ptr[i];

                if (c == '%') {
                        int hi, lo;

                        if (in.len - i < 3)
                                return -EINVAL;
                        hi = parse_hex_digit(in.ptr[i + 1]);
                        lo = parse_hex_digit(in.ptr[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EINVAL;
                        c = (uint8_t)(hi << 4 | lo);
                        i += 2;
                } else if (c == '+' && plus_is_space)
                        c = ' ';
                out[n++] = (char)c;
        }

        *ret_len = n;
        return 0;
}
