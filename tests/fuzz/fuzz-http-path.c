/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: request paths (http/router.c: pattern matching and percent-decoding), the first
 * bytes of every request a client sends us. Any input must match, not match or be a bad
 * parameter, never crash or over-read; matched parameters must be decoded NUL-free strings
 * inside the buffer. An input "PATTERN\nPATH" also fuzzes the pattern checker. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/router.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_match(const char *pattern, Slice path) {
        const char *params[HTTP_ROUTE_MAX_PARAMS];
        size_t n_params = 0, used = 0;
        int n_expected, k;
        char *buf;

        n_expected = http_pattern_parse(pattern);
        if (n_expected < 0)
                return;

        /* Exactly the documented bound, so that ASan sees any write past it. */
        buf = malloc(path.len + 1);
        if (!buf)
                abort();
        k = http_path_match(pattern, path, buf, path.len + 1, params, &n_params);
        if (k != 0 && k != HTTP_PATH_E_NO_MATCH && k != HTTP_PATH_E_BAD_PARAM)
                abort();
        if (k == 0) {
                if (n_params != (size_t)n_expected)
                        abort();
                for (size_t i = 0; i < n_params; i++) {
                        size_t len;

                        if (params[i] < buf + used || params[i] >= buf + path.len + 1)
                                abort();
                        len = strlen(params[i]);
                        if (len == 0 || params[i] + len >= buf + path.len + 1)
                                abort();
                        used = (size_t)(params[i] - buf) + len + 1;
                }
        }
        free(buf);

        /* One byte short of the bound must be refused or fit, never overflow. */
        if (path.len > 0) {
                buf = malloc(path.len);
                if (!buf)
                        abort();
                k = http_path_match(pattern, path, buf, path.len, params, &n_params);
                if (k != 0 && k != HTTP_PATH_E_NO_MATCH && k != HTTP_PATH_E_BAD_PARAM &&
                    k != -ENOBUFS)
                        abort();
                free(buf);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const patterns[] = {
                "/",
                "/healthz",
                "/v1/commits/{}",
                "/v1/namespaces/{}/tables/{}/commits",
                "/{}/{}/{}/{}/{}/{}/{}/{}",
                "/a/{}/b/{}",
        };
        Slice input = slice_make(data, size);
        const uint8_t *newline;
        char *out;
        size_t len;

        for (size_t i = 0; i < sizeof(patterns) / sizeof(patterns[0]); i++)
                check_match(patterns[i], input);

        out = malloc(size > 0 ? size : 1);
        if (!out)
                abort();
        if (http_percent_decode(input, /* plus_is_space= */ true, out, &len) == 0 && len > size)
                abort();
        free(out);

        newline = memchr(data, '\n', size);
        if (newline) {
                size_t pattern_len = (size_t)(newline - data);
                char *pattern = malloc(pattern_len + 1);

                if (!pattern)
                        abort();
                memcpy(pattern, data, pattern_len);
                pattern[pattern_len] = '\0';
                check_match(pattern, slice_make(newline + 1, size - pattern_len - 1));
                free(pattern);
        }
        return 0;
}
