/* SPDX-License-Identifier: Apache-2.0 */
/* Route patterns and request-path matching of daemon/http: pure functions over bytes (no h2o,
 * no allocation, no logging) so that tests and the fuzzer drive them directly. They never read
 * past the Slice they are given. Their percent-decoding is percent.h's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "http/percent.h"
#include "util/slice.h"

#define HTTP_ROUTE_MAX_PARAMS 8

enum {
        _HTTP_PATH_E_SUCCESS,
        HTTP_PATH_E_NO_MATCH,  /* the path has another shape: try the next route */
        HTTP_PATH_E_BAD_PARAM, /* the shape matches, but a parameter has a malformed escape or a
                                * %00: the request is answered 400 */
};

/* Checks a route pattern (see http_server_route()). Returns the number of "{}" segments, or
 * -EINVAL for a malformed pattern or one with more than HTTP_ROUTE_MAX_PARAMS parameters. */
int http_pattern_parse(const char *pattern);

/* Matches a request path (raw, without the query) against a pattern accepted by
 * http_pattern_parse(). Literal segments compare equal after percent-decoding; each "{}" takes
 * one non-empty segment. On a match, the decoded parameters are written to `buf` as consecutive
 * NUL-terminated strings, pointed to by ret_params[0..*ret_n_params) (ret_params has room for
 * HTTP_ROUTE_MAX_PARAMS); buf_size >= path.len + 1 is always enough. Returns 0,
 * HTTP_PATH_E_NO_MATCH, HTTP_PATH_E_BAD_PARAM or -ENOBUFS (buf too small); writes the outputs
 * only on 0. */
int http_path_match(const char *pattern, Slice path, char *buf, size_t buf_size,
                    const char **ret_params, size_t *ret_n_params);
