/* SPDX-License-Identifier: Apache-2.0 */
/* The scripted HTTP/1.1 server double (see http-double.h): one uv_tcp_t listener, one uv_tcp_t
 * and at most one uv_timer_t per connection, all on the test's loop. Reads a request head (16
 * KiB at most) and a Content-Length body (max_body_bytes at most), records it, matches it with
 * the next step of the script and acts on it. Never chunked bodies: libcurl sends ours with a
 * Content-Length. */
#include <arpa/inet.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http-double.h"
#include "test.h"
#include "util/cleanup.h"
#include "util/parse.h"

#define HTTP_DOUBLE_MAX_HEAD_BYTES (16u * 1024)
#define HTTP_DOUBLE_MAX_HEADERS 100

typedef struct HttpDoubleConn HttpDoubleConn;

/* Owned by the test; each connection is owned by the double's list until its last handle
 * closed. */
struct HttpDouble {
        uv_loop_t *loop;
        uv_tcp_t listener;
        bool is_closing;
        unsigned n_open_handles;
        size_t max_body_bytes;
        bool keep_alive;
        uint16_t port;
        char url[64];
        HttpDoubleStep *steps;
        size_t n_steps, next_step;
        HttpDoubleRequest *requests;
        size_t n_requests;
        unsigned n_connections;
        char failure[2048];
        HttpDoubleConn *conns;
};

struct HttpDoubleConn {
        HttpDouble *d;
        unsigned id;
        uv_tcp_t tcp;
        uv_timer_t timer; /* a delayed answer */
        bool has_timer;
        unsigned n_open_handles;
        bool is_closing;
        bool is_waiting;    /* a delayed answer is pending: the next request waits */
        bool sent_continue; /* "100 Continue" went out for the request being read */
        char *in;           /* bytes read and not yet consumed */
        size_t in_len;
        size_t pending_step;    /* the delayed answer's step */
        size_t pending_request; /* ... and request */
        HttpDoubleConn *prev, *next;
};

/* One uv_write and the bytes it sends, freed by its callback. */
typedef struct HttpDoubleWrite {
        uv_write_t req;
        HttpDoubleConn *conn;
        bool close_after;
        size_t len;
        char data[];
} HttpDoubleWrite;

static void *xrealloc(void *p, size_t n) {
        p = realloc(p, n ? n : 1);
        if (!p)
                TEST_FAIL("http-double: out of memory");
        return p;
}

static char *xstrndup(const char *s, size_t n) {
        char *p = strndup(s, n);

        if (!p)
                TEST_FAIL("http-double: out of memory");
        return p;
}

_printf_(2, 3) static void http_double_fail(HttpDouble *d, const char *fmt, ...) {
        va_list ap;

        if (d->failure[0])
                return; /* the first failure is the one that explains the rest */
        va_start(ap, fmt);
        (void)vsnprintf(d->failure, sizeof(d->failure), fmt, ap);
        va_end(ap);
}

/* ---- connections ---------------------------------------------------------------------------- */

static void http_double_conn_maybe_freed(HttpDoubleConn *c) {
        HttpDouble *d = c->d;

        if (c->n_open_handles > 0)
                return;
        if (c->prev)
                c->prev->next = c->next;
        else
                d->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        free(c->in);
        free(c);
}

static void http_double_on_conn_handle_closed(uv_handle_t *handle) {
        HttpDoubleConn *c = handle->data;

        c->n_open_handles--;
        c->d->n_open_handles--;
        http_double_conn_maybe_freed(c);
}

static void http_double_conn_close(HttpDoubleConn *c) {
        if (c->is_closing)
                return;
        c->is_closing = true;
        if (c->has_timer)
                uv_close((uv_handle_t *)&c->timer, http_double_on_conn_handle_closed);
        uv_close((uv_handle_t *)&c->tcp, http_double_on_conn_handle_closed);
}

static void http_double_on_written(uv_write_t *req, int status) {
        HttpDoubleWrite *w = (HttpDoubleWrite *)req;

        (void)status; /* a client that went away early is the test's business */
        if (w->close_after)
                http_double_conn_close(w->conn);
        free(w);
}

static void http_double_conn_write(HttpDoubleConn *c, const char *data, size_t len,
                                   bool close_after) {
        HttpDoubleWrite *w = xrealloc(NULL, sizeof(*w) + len);
        uv_buf_t b;

        w->conn = c;
        w->close_after = close_after;
        w->len = len;
        memcpy(w->data, data, len);
        b = uv_buf_init(w->data, (unsigned)len);
        if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, http_double_on_written) < 0) {
                free(w);
                http_double_conn_close(c);
        }
}

/* ---- answers -------------------------------------------------------------------------------- */

static const char *http_double_reason(unsigned status) {
        switch (status) {
        case 200:
                return "OK";
        case 204:
                return "No Content";
        case 206:
                return "Partial Content";
        case 403:
                return "Forbidden";
        case 404:
                return "Not Found";
        case 409:
                return "Conflict";
        case 412:
                return "Precondition Failed";
        case 418:
                return "Unexpected Request";
        case 500:
                return "Internal Server Error";
        case 503:
                return "Service Unavailable";
        default:
                return "Scripted";
        }
}

/* The head and body of an answer; at most truncate_at body bytes when truncate. */
static void http_double_answer(HttpDoubleConn *c, const HttpDoubleRequest *req, unsigned status,
                               const char *extra_headers, const uint8_t *body, size_t body_len,
                               bool truncate, size_t truncate_at) {
        HttpDouble *d = c->d;
        bool close_after = truncate || !d->keep_alive;
        bool has_body = strcmp(req->method, "HEAD") != 0 && status != 204 && status != 304;
        size_t n_sent =
                has_body ? (truncate && truncate_at < body_len ? truncate_at : body_len) : 0;
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        f = open_memstream(&text, &len);
        if (!f)
                TEST_FAIL("http-double: out of memory");
        /* HEAD: the Content-Length a GET would have, as object stores answer it. */
        fprintf(f, "HTTP/1.1 %u %s\r\nContent-Length: %zu\r\n%s%s\r\n", status,
                http_double_reason(status), body_len, close_after ? "Connection: close\r\n" : "",
                extra_headers ? extra_headers : "");
        if (n_sent > 0)
                fwrite(body, 1, n_sent, f);
        if (fclose(f) != 0)
                TEST_FAIL("http-double: out of memory");
        http_double_conn_write(c, text, len, close_after);
        free(text);
}

/* Answers request `ri` as step `si` says (the delay, if any, has passed). */
static void http_double_act(HttpDoubleConn *c, size_t si, size_t ri) {
        HttpDouble *d = c->d;
        const HttpDoubleStep *step = &d->steps[si];
        const HttpDoubleRequest *req = &d->requests[ri];
        const uint8_t *body = (const uint8_t *)step->body;
        size_t body_len = step->body && step->body_len == 0 ? strlen(step->body) : step->body_len;

        if (step->echo_last_put) {
                body = NULL;
                body_len = 0;
                for (size_t i = ri; i-- > 0;)
                        if (strcmp(d->requests[i].method, "PUT") == 0 &&
                            strcmp(d->requests[i].target, req->target) == 0) {
                                body = d->requests[i].body;
                                body_len = d->requests[i].body_len;
                                break;
                        }
                if (!body)
                        http_double_fail(d, "step %zu: no PUT to '%s' to echo", si, req->target);
        }
        if (step->fault == HTTP_DOUBLE_CLOSE) {
                http_double_conn_close(c);
                return;
        }
        http_double_answer(c, req, step->status ? step->status : 200, step->extra_headers, body,
                           body_len, step->fault == HTTP_DOUBLE_TRUNCATE, step->truncate_at);
}

/* ---- matching ------------------------------------------------------------------------------- */

const char *http_double_request_header(const HttpDoubleRequest *req, const char *name) {
        for (size_t i = 0; i < req->n_headers; i++)
                if (strcasecmp(req->headers[i].name, name) == 0)
                        return req->headers[i].value;
        return NULL;
}

/* Why the request does not match the step, or NULL when it does. */
static const char *http_double_mismatch(const HttpDoubleStep *step, const HttpDoubleRequest *req,
                                        char *why, size_t size) {
        if (step->method && strcmp(step->method, req->method) != 0)
                return "another method";
        if (step->target && fnmatch(step->target, req->target, 0) != 0)
                return "another target";
        for (size_t i = 0; step->headers && step->headers[i]; i++) {
                const char *check = step->headers[i], *colon = strchr(check, ':');
                bool is_absent = check[0] == '!';
                char name[128];
                const char *value;

                (void)snprintf(name, sizeof(name), "%.*s",
                               (int)(colon ? (size_t)(colon - check) : strlen(check)) -
                                       (is_absent ? 1 : 0),
                               check + (is_absent ? 1 : 0));
                value = http_double_request_header(req, name);
                if (is_absent && value) {
                        (void)snprintf(why, size, "header %s present: '%s'", name, value);
                        return why;
                }
                if (!is_absent && !value) {
                        (void)snprintf(why, size, "header %s missing", name);
                        return why;
                }
                if (!is_absent && colon) {
                        const char *pattern = colon + 1;

                        while (*pattern == ' ')
                                pattern++;
                        if (fnmatch(pattern, value, 0) != 0) {
                                (void)snprintf(why, size, "header %s is '%s', not '%s'", name,
                                               value, pattern);
                                return why;
                        }
                }
        }
        return NULL;
}

static void http_double_conn_process(HttpDoubleConn *c);

static void http_double_on_delay(uv_timer_t *timer) {
        HttpDoubleConn *c = timer->data;

        c->is_waiting = false;
        http_double_act(c, c->pending_step, c->pending_request);
        http_double_conn_process(c);
}

static void http_double_dispatch(HttpDoubleConn *c, size_t ri) {
        HttpDouble *d = c->d;
        HttpDoubleRequest *req = &d->requests[ri];
        const HttpDoubleStep *step;
        char why[512], text[1024];
        const char *mismatch;
        size_t si = d->next_step;

        if (si >= d->n_steps) {
                http_double_fail(d, "request %zu '%s %s' is past the script's %zu steps", ri,
                                 req->method, req->target, d->n_steps);
                req->step = SIZE_MAX;
                http_double_answer(c, req, 418, NULL, (const uint8_t *)"past the script", 15, false,
                                   0);
                return;
        }
        step = &d->steps[si];
        req->step = si;
        mismatch = http_double_mismatch(step, req, why, sizeof(why));
        if (mismatch) {
                (void)snprintf(text, sizeof(text),
                               "request %zu '%s %s' does not match step %zu ('%s %s'): %s", ri,
                               req->method, req->target, si, step->method ? step->method : "*",
                               step->target ? step->target : "*", mismatch);
                http_double_fail(d, "%s", text);
                /* A status nobody retries, so that the failure shows at once. */
                http_double_answer(c, req, 418, NULL, (const uint8_t *)text, strlen(text), false,
                                   0);
                return;
        }
        d->next_step++;
        if (step->fault == HTTP_DOUBLE_ANSWER && step->delay_ms > 0) {
                if (!c->has_timer) {
                        if (uv_timer_init(d->loop, &c->timer) < 0)
                                TEST_FAIL("http-double: cannot make a timer");
                        c->timer.data = c;
                        c->has_timer = true;
                        c->n_open_handles++;
                        d->n_open_handles++;
                }
                c->is_waiting = true;
                c->pending_step = si;
                c->pending_request = ri;
                (void)uv_timer_start(&c->timer, http_double_on_delay, step->delay_ms, 0);
                return;
        }
        http_double_act(c, si, ri);
}

/* ---- requests ------------------------------------------------------------------------------- */

static const char *http_double_find_crlf(const char *p, const char *end) {
        for (; p + 1 < end; p++)
                if (p[0] == '\r' && p[1] == '\n')
                        return p;
        return NULL;
}

/* Parses the head in c->in[0..head_len) (without its final CRLF CRLF) into req. Returns 0, or
 * -EBADMSG with the reason in why. */
static int http_double_parse_head(HttpDoubleConn *c, size_t head_len, HttpDoubleRequest *req,
                                  uint64_t *ret_content_length, char *why, size_t size) {
        const char *p = c->in, *end = c->in + head_len, *eol, *sp1, *sp2;
        uint64_t content_length = 0;

        eol = http_double_find_crlf(p, end + 2);
        sp1 = memchr(p, ' ', (size_t)(eol - p));
        sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || (size_t)(eol - sp2 - 1) != 8 || memcmp(sp2 + 1, "HTTP/1.1", 8) != 0) {
                (void)snprintf(why, size, "a request line that is not HTTP/1.1: '%.*s'",
                               (int)(eol - p), p);
                return -EBADMSG;
        }
        req->method = xstrndup(p, (size_t)(sp1 - p));
        req->target = xstrndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
        for (p = eol + 2; p < end; p = eol + 2) {
                const char *colon, *v, *ve;
                HttpDoubleHeader *h;

                eol = http_double_find_crlf(p, end + 2);
                colon = memchr(p, ':', (size_t)(eol - p));
                if (!colon || colon == p || req->n_headers >= HTTP_DOUBLE_MAX_HEADERS) {
                        (void)snprintf(why, size, "a bad header line: '%.*s'", (int)(eol - p), p);
                        return -EBADMSG;
                }
                for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
                        ;
                for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--)
                        ;
                req->headers = xrealloc(req->headers, (req->n_headers + 1) * sizeof(*h));
                h = &req->headers[req->n_headers++];
                h->name = xstrndup(p, (size_t)(colon - p));
                h->value = xstrndup(v, (size_t)(ve - v));
                if (strcasecmp(h->name, "Transfer-Encoding") == 0) {
                        (void)snprintf(why, size, "a chunked body (Transfer-Encoding: %s)",
                                       h->value);
                        return -EBADMSG;
                }
                if (strcasecmp(h->name, "Content-Length") == 0 &&
                    parse_u64(h->value, &content_length) < 0) {
                        (void)snprintf(why, size, "a bad Content-Length: '%s'", h->value);
                        return -EBADMSG;
                }
        }
        *ret_content_length = content_length;
        return 0;
}

static void http_double_request_deinit(HttpDoubleRequest *req) {
        free(req->method);
        free(req->target);
        for (size_t i = 0; i < req->n_headers; i++) {
                free(req->headers[i].name);
                free(req->headers[i].value);
        }
        free(req->headers);
        free(req->body);
}

/* Takes every whole request out of c->in, one at a time. */
static void http_double_conn_process(HttpDoubleConn *c) {
        HttpDouble *d = c->d;

        while (!c->is_closing && !c->is_waiting && c->in_len > 0) {
                HttpDoubleRequest req = { 0 };
                uint64_t content_length = 0;
                char why[512];
                const char *end = NULL, *expect;
                size_t head_len, total;

                for (size_t i = 0; i + 3 < c->in_len && !end; i++)
                        if (memcmp(c->in + i, "\r\n\r\n", 4) == 0)
                                end = c->in + i;
                if (!end) {
                        if (c->in_len > HTTP_DOUBLE_MAX_HEAD_BYTES) {
                                http_double_fail(d, "a request head past %u bytes",
                                                 HTTP_DOUBLE_MAX_HEAD_BYTES);
                                http_double_conn_close(c);
                        }
                        return;
                }
                head_len = (size_t)(end - c->in);
                if (head_len > HTTP_DOUBLE_MAX_HEAD_BYTES ||
                    http_double_parse_head(c, head_len, &req, &content_length, why, sizeof(why)) <
                            0 ||
                    content_length > d->max_body_bytes) {
                        if (head_len > HTTP_DOUBLE_MAX_HEAD_BYTES)
                                (void)snprintf(why, sizeof(why), "a request head past %u bytes",
                                               HTTP_DOUBLE_MAX_HEAD_BYTES);
                        else if (req.method && content_length > d->max_body_bytes)
                                (void)snprintf(why, sizeof(why),
                                               "a body of %" PRIu64 " bytes, past %zu",
                                               content_length, d->max_body_bytes);
                        http_double_fail(d, "connection %u sent %s", c->id, why);
                        http_double_request_deinit(&req);
                        http_double_conn_close(c);
                        return;
                }
                total = head_len + 4 + (size_t)content_length;
                expect = http_double_request_header(&req, "Expect");
                if (c->in_len < total) {
                        if (expect && strcasecmp(expect, "100-continue") == 0 &&
                            !c->sent_continue) {
                                c->sent_continue = true;
                                http_double_conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25,
                                                       false);
                        }
                        http_double_request_deinit(&req);
                        return;
                }
                req.body = xrealloc(NULL, (size_t)content_length + 1);
                memcpy(req.body, c->in + head_len + 4, (size_t)content_length);
                req.body[content_length] = 0;
                req.body_len = (size_t)content_length;
                req.connection = c->id;
                memmove(c->in, c->in + total, c->in_len - total);
                c->in_len -= total;
                c->sent_continue = false;

                d->requests = xrealloc(d->requests, (d->n_requests + 1) * sizeof(req));
                d->requests[d->n_requests++] = req;
                http_double_dispatch(c, d->n_requests - 1);
        }
}

static void http_double_on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
        (void)handle;
        buf->base = xrealloc(NULL, suggested);
        buf->len = suggested;
}

static void http_double_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
        HttpDoubleConn *c = stream->data;
        HttpDouble *d = c->d;
        size_t max = HTTP_DOUBLE_MAX_HEAD_BYTES + 4 + d->max_body_bytes;

        if (nread < 0) {
                free(buf->base);
                http_double_conn_close(c);
                return;
        }
        if ((size_t)nread > max - c->in_len) {
                free(buf->base);
                http_double_fail(d, "connection %u sent more than %zu bytes unanswered", c->id,
                                 max);
                http_double_conn_close(c);
                return;
        }
        c->in = xrealloc(c->in, c->in_len + (size_t)nread);
        memcpy(c->in + c->in_len, buf->base, (size_t)nread);
        c->in_len += (size_t)nread;
        free(buf->base);
        http_double_conn_process(c);
}

static void http_double_on_connection(uv_stream_t *server, int status) {
        HttpDouble *d = server->data;
        HttpDoubleConn *c;

        if (status < 0 || d->is_closing)
                return;
        c = xrealloc(NULL, sizeof(*c));
        *c = (HttpDoubleConn){ .d = d, .id = ++d->n_connections };
        if (uv_tcp_init(d->loop, &c->tcp) < 0)
                TEST_FAIL("http-double: cannot make a socket");
        c->tcp.data = c;
        c->n_open_handles = 1;
        d->n_open_handles++;
        c->next = d->conns;
        if (d->conns)
                d->conns->prev = c;
        d->conns = c;
        if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
            uv_read_start((uv_stream_t *)&c->tcp, http_double_on_alloc, http_double_on_read) < 0)
                http_double_conn_close(c);
}

/* ---- the double ----------------------------------------------------------------------------- */

HttpDouble *http_double_new(uv_loop_t *loop, size_t max_body_bytes, bool keep_alive) {
        HttpDouble *d = xrealloc(NULL, sizeof(*d));
        struct sockaddr_storage name;
        struct sockaddr_in addr;
        int n_name = sizeof(name);

        *d = (HttpDouble){ .loop = loop,
                           .max_body_bytes = max_body_bytes ? max_body_bytes : 1u << 20,
                           .keep_alive = keep_alive };
        if (uv_ip4_addr("127.0.0.1", 0, &addr) < 0 || uv_tcp_init(loop, &d->listener) < 0)
                TEST_FAIL("http-double: cannot make the listener");
        d->listener.data = d;
        d->n_open_handles = 1;
        if (uv_tcp_bind(&d->listener, (const struct sockaddr *)&addr, 0) < 0 ||
            uv_listen((uv_stream_t *)&d->listener, 16, http_double_on_connection) < 0 ||
            uv_tcp_getsockname(&d->listener, (struct sockaddr *)&name, &n_name) < 0)
                TEST_FAIL("http-double: cannot listen on 127.0.0.1");
        d->port = ntohs(((struct sockaddr_in *)&name)->sin_port);
        (void)snprintf(d->url, sizeof(d->url), "http://127.0.0.1:%u", d->port);
        return d;
}

uint16_t http_double_port(const HttpDouble *d) {
        return d->port;
}

const char *http_double_url(const HttpDouble *d) {
        return d->url;
}

void http_double_script(HttpDouble *d, const HttpDoubleStep *steps, size_t n_steps) {
        d->steps = xrealloc(d->steps, (d->n_steps + n_steps) * sizeof(*steps));
        memcpy(d->steps + d->n_steps, steps, n_steps * sizeof(*steps));
        d->n_steps += n_steps;
}

size_t http_double_n_requests(const HttpDouble *d) {
        return d->n_requests;
}

const HttpDoubleRequest *http_double_request(const HttpDouble *d, size_t i) {
        if (i >= d->n_requests)
                TEST_FAIL("http-double: request %zu of %zu asked for", i, d->n_requests);
        return &d->requests[i];
}

unsigned http_double_n_connections(const HttpDouble *d) {
        return d->n_connections;
}

const char *http_double_failure(const HttpDouble *d) {
        return d->failure[0] ? d->failure : NULL;
}

void http_double_assert_done(const HttpDouble *d) {
        if (d->failure[0])
                TEST_FAIL("http-double: %s", d->failure);
        if (d->next_step != d->n_steps)
                TEST_FAIL("http-double: %zu of %zu scripted steps used; next: '%s %s'",
                          d->next_step, d->n_steps,
                          d->steps[d->next_step].method ? d->steps[d->next_step].method : "*",
                          d->steps[d->next_step].target ? d->steps[d->next_step].target : "*");
}

static void http_double_on_listener_closed(uv_handle_t *handle) {
        HttpDouble *d = handle->data;

        d->n_open_handles--;
}

void http_double_close(HttpDouble *d) {
        if (d->is_closing)
                return;
        d->is_closing = true;
        uv_close((uv_handle_t *)&d->listener, http_double_on_listener_closed);
        for (HttpDoubleConn *c = d->conns; c; c = c->next)
                http_double_conn_close(c);
}

HttpDouble *http_double_free(HttpDouble *d) {
        if (!d)
                return NULL;
        if (d->n_open_handles > 0 || d->conns)
                TEST_FAIL("http-double: freed with %u handles open", d->n_open_handles);
        for (size_t i = 0; i < d->n_requests; i++)
                http_double_request_deinit(&d->requests[i]);
        free(d->requests);
        free(d->steps);
        free(d);
        return NULL;
}
