/* SPDX-License-Identifier: Apache-2.0 */
/* Routing: the pure pattern and path matching declared in router.h, plus the route table that
 * picks a handler for each request or answers 400/404/405 itself. Owns the route strings; never
 * looks at bodies or headers. */
#define LOG_MODULE "http"
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http/http-internal.h"
#include "http/router.h"
#include "util/log.h"
#include "util/parse.h"

/* A pattern literal may hold RFC 3986 pchar except '%' (literals are compared decoded, so an
 * escape in a pattern would be ambiguous) and our own '{' '}'. */
static bool is_literal_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != '\0' && strchr("-._~!$&'()*+,;=:@", c));
}

int http_pattern_parse(const char *pattern) {
        size_t n_params = 0;
        const char *p;

        if (!pattern || pattern[0] != '/')
                return -EINVAL;
        if (strcmp(pattern, "/") == 0)
                return 0;

        p = pattern;
        while (*p == '/') {
                const char *segment = p + 1;
                size_t len = strcspn(segment, "/");

                if (len == 0)
                        return -EINVAL; /* "//" or a trailing '/': no empty segments */
                if (len == 2 && segment[0] == '{' && segment[1] == '}') {
                        if (++n_params > HTTP_ROUTE_MAX_PARAMS)
                                return -EINVAL;
                } else {
                        for (size_t i = 0; i < len; i++)
                                if (!is_literal_char(segment[i]))
                                        return -EINVAL;
                }
                p = segment + len;
        }

        return *p == '\0' ? (int)n_params : -EINVAL;
}

/* Cuts the next segment off *rest, which starts at a '/'. Returns false when nothing is left. */
static bool next_segment(Slice *rest, Slice *ret_segment) {
        const uint8_t *slash;
        size_t len;

        if (rest->len == 0)
                return false;
        assert(rest->ptr[0] == '/');
        slash = memchr(rest->ptr + 1, '/', rest->len - 1);
        len = slash ? (size_t)(slash - (rest->ptr + 1)) : rest->len - 1;
        *ret_segment = slice_make(rest->ptr + 1, len);
        *rest = slice_make(rest->ptr + 1 + len, rest->len - 1 - len);
        return true;
}

/* Compares a raw path segment, decoded on the fly, with a literal. A malformed escape in a
 * literal position is simply no match. */
static bool segment_equals_literal(Slice segment, const char *literal, size_t literal_len) {
        size_t n = 0;

        for (size_t i = 0; i < segment.len; i++, n++) {
                uint8_t c = segment.ptr[i];

                if (c == '%') {
                        int hi, lo;

                        if (segment.len - i < 3)
                                return false;
                        hi = parse_hex_digit(segment.ptr[i + 1]);
                        lo = parse_hex_digit(segment.ptr[i + 2]);
                        if (hi < 0 || lo < 0)
                                return false;
                        c = (uint8_t)(hi << 4 | lo);
                        i += 2;
                }
                if (n >= literal_len || (uint8_t)literal[n] != c)
                        return false;
        }
        return n == literal_len;
}

int http_path_match(const char *pattern, Slice path, char *buf, size_t buf_size,
                    const char **ret_params, size_t *ret_n_params) {
        const char *params[HTTP_ROUTE_MAX_PARAMS];
        size_t n_params = 0, used = 0;
        Slice rest, segment;
        const char *p;

        if (path.len == 0 || path.ptr[0] != '/')
                return HTTP_PATH_E_NO_MATCH;

        /* Pass 1: the shape (segment count and literals), so that a malformed parameter of a
         * path that belongs to no route is a 404, not a 400. */
        rest = path;
        p = pattern;
        while (*p == '/') {
                const char *literal = p + 1;
                size_t literal_len = strcspn(literal, "/");

                if (!next_segment(&rest, &segment))
                        return HTTP_PATH_E_NO_MATCH;
                if (literal_len == 2 && literal[0] == '{' && literal[1] == '}') {
                        if (segment.len == 0)
                                return HTTP_PATH_E_NO_MATCH;
                } else if (!segment_equals_literal(segment, literal, literal_len))
                        return HTTP_PATH_E_NO_MATCH;
                p = literal + literal_len;
        }
        if (rest.len != 0)
                return HTTP_PATH_E_NO_MATCH;

        /* Pass 2: decode the parameters. Each one needs at most its raw length plus a NUL, and
         * each raw segment follows a '/' of the path, hence path.len + 1 always suffices. */
        rest = path;
        p = pattern;
        while (*p == '/') {
                const char *literal = p + 1;
                size_t literal_len = strcspn(literal, "/"), len;

                (void)next_segment(&rest, &segment);
                if (literal_len == 2 && literal[0] == '{' && literal[1] == '}') {
                        if (segment.len > buf_size - used || buf_size - used - segment.len < 1)
                                return -ENOBUFS;
                        if (http_percent_decode(segment, /* plus_is_space= */ false, buf + used,
                                                &len) < 0 ||
                            memchr(buf + used, '\0', len))
                                return HTTP_PATH_E_BAD_PARAM;
                        buf[used + len] = '\0';
                        assert(n_params < HTTP_ROUTE_MAX_PARAMS);
                        params[n_params++] = buf + used;
                        used += len + 1;
                }
                p = literal + literal_len;
        }

        memcpy(ret_params, params, n_params * sizeof(params[0]));
        *ret_n_params = n_params;
        return 0;
}

void http_router_deinit(HttpRouter *router) {
        for (size_t i = 0; i < router->n_routes; i++) {
                free(router->routes[i].method);
                free(router->routes[i].pattern);
        }
        free(router->routes);
        *router = (HttpRouter){ 0 };
}

/* RFC 9110 token characters. */
static bool is_method_valid(const char *method) {
        if (!method || !*method)
                return false;
        for (const char *c = method; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || strchr("!#$%&'*+-.^_`|~", *c)))
                        return false;
        return true;
}

int http_router_add(HttpRouter *router, const char *method, const char *pattern,
                    HttpHandler handler, void *userdata) {
        _cleanup_(freep) char *method_copy = NULL, *pattern_copy = NULL;
        HttpRoute *routes;
        int n_params;

        if (!is_method_valid(method) || !handler)
                return -EINVAL;
        n_params = http_pattern_parse(pattern);
        if (n_params < 0)
                return n_params;
        for (size_t i = 0; i < router->n_routes; i++)
                if (strcmp(router->routes[i].method, method) == 0 &&
                    strcmp(router->routes[i].pattern, pattern) == 0)
                        return -EEXIST;

        method_copy = strdup(method);
        pattern_copy = strdup(pattern);
        if (!method_copy || !pattern_copy)
                return -ENOMEM;
        routes = reallocarray(router->routes, router->n_routes + 1, sizeof(*routes));
        if (!routes)
                return -ENOMEM;
        router->routes = routes;
        routes[router->n_routes++] = (HttpRoute){
                .method = TAKE_PTR(method_copy),
                .pattern = TAKE_PTR(pattern_copy),
                .n_params = (size_t)n_params,
                .handler = handler,
                .userdata = userdata,
        };
        return 0;
}

/* "GET, POST": the methods of every route whose pattern matches, each once, in route order. */
static h2o_iovec_t router_allowed_methods(const HttpRouter *router, HttpRequest *r, char *buf,
                                          size_t buf_size) {
        h2o_mem_pool_t *pool = &r->req->pool;
        h2o_iovec_t allow = { NULL, 0 };
        const char *params[HTTP_ROUTE_MAX_PARAMS];
        size_t n_params;

        for (size_t i = 0; i < router->n_routes; i++) {
                const HttpRoute *route = &router->routes[i];
                bool seen = false;

                if (http_path_match(route->pattern, r->path, buf, buf_size, params, &n_params) ==
                    HTTP_PATH_E_NO_MATCH)
                        continue;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = strcmp(router->routes[j].method, route->method) == 0 &&
                               http_path_match(router->routes[j].pattern, r->path, buf, buf_size,
                                               params, &n_params) != HTTP_PATH_E_NO_MATCH;
                if (seen)
                        continue;
                if (allow.len == 0)
                        allow = h2o_strdup(pool, route->method, SIZE_MAX);
                else
                        allow = h2o_concat(pool, allow, h2o_iovec_init(H2O_STRLIT(", ")),
                                           h2o_iovec_init(route->method, strlen(route->method)));
        }
        return allow;
}

void http_router_dispatch(const HttpRouter *router, HttpRequest *r) {
        const char *params[HTTP_ROUTE_MAX_PARAMS];
        size_t n_params, buf_size;
        bool is_path_known = false;
        char *buf;

        /* Pool memory lives exactly as long as the request; h2o aborts on allocation failure
         * everywhere, so there is no error path to take here either. */
        buf_size = r->path.len + 1;
        buf = h2o_mem_alloc_pool(&r->req->pool, buf_size);

        for (size_t i = 0; i < router->n_routes; i++) {
                const HttpRoute *route = &router->routes[i];
                int k;

                k = http_path_match(route->pattern, r->path, buf, buf_size, params, &n_params);
                assert(k >= 0);
                if (k == HTTP_PATH_E_NO_MATCH)
                        continue;
                is_path_known = true;
                if (strcmp(route->method, r->method) != 0)
                        continue;
                if (k == HTTP_PATH_E_BAD_PARAM) {
                        http_reply_error(r, 400, "bad-request",
                                         "a path parameter holds a malformed %%-escape or %%00");
                        return;
                }

                r->params = h2o_mem_alloc_pool(&r->req->pool, sizeof(params[0]) * (n_params + 1));
                memcpy(r->params, params, sizeof(params[0]) * n_params);
                r->n_params = n_params;
                r->route = route;
                route->handler(r, route->userdata);
                return;
        }

        if (is_path_known) {
                h2o_iovec_t allow = router_allowed_methods(router, r, buf, buf_size);

                h2o_add_header(&r->req->pool, &r->req->res.headers, H2O_TOKEN_ALLOW,
                               /* orig_name= */ NULL, allow.base, allow.len);
                http_reply_error(r, 405, "method-not-allowed",
                                 "method '%s' is not allowed here, use %.*s", r->method,
                                 (int)allow.len, allow.base);
                return;
        }

        http_reply_error(r, 404, "not-found", "no such resource '%.*s'",
                         (int)(r->path.len < 256 ? r->path.len : 256), (const char *)r->path.ptr);
}
