/* SPDX-License-Identifier: Apache-2.0 */
/* The guard: the limits on what clients make us hold that libh2o 2.2.5 has no knob for. A
 * uv_check sums the request bytes held by every connection and HTTP/2 stream once per loop
 * turn and refuses unfinished bodies over max-buffered-bytes; a timer cuts requests whose
 * headers or body take longer than header-timeout-ms / body-timeout-ms. Also the RFC 9112
 * section 6.3 framing check h2o leaves out. How each maps onto h2o: see server.c. The same
 * check, until the last connection is gone, gives h2o the errors of the writes and reads
 * libuv refused without a callback (http_guard_wake), which h2o 2.2.5 does not notice. */
#define LOG_MODULE "http"
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "http/http-internal.h" /* h2o.h first: http2_internal.h needs its types */

#include <h2o/http2.h>
#include <h2o/http2_internal.h>
#include "util/log.h"

/* picohttpparser, as libh2o 2.2.5 exports it (its header is not installed): h2o's own HTTP/1.1
 * parser, so that this check sees the request exactly as h2o did. */
struct phr_header {
        const char *name; /* NULL for a continuation line */
        size_t name_len;
        const char *value;
        size_t value_len;
};
int phr_parse_request(const char *buf, size_t len, const char **method, size_t *method_len,
                      const char **path, size_t *path_len, int *minor_version,
                      struct phr_header *headers, size_t *num_headers, size_t last_len);

/* The layout of h2o 2.2.5's libuv socket (lib/common/socket/uv-binding.c.h), which is not in
 * its headers: the uv stream follows the generic socket, then the one write request of the
 * socket (a union with a connect request, which only client sockets use).
 * server_on_connection() checks the stream against the handle it created for every
 * connection. */
struct GuardUvSocket {
        h2o_socket_t super;
        struct {
                uv_stream_t *stream;
                uv_close_cb close_cb;
        } uv;
        union {
                uv_connect_t creq;
                uv_write_t wreq;
        };
};

HttpConn *http_guard_conn_of_sock(h2o_socket_t *sock) {
        /* HttpConn starts with its uv_tcp_t (static_assert in server.c). */
        return sock ? (HttpConn *)((struct GuardUvSocket *)sock)->uv.stream : NULL;
}

HttpConn *http_guard_conn_of(h2o_conn_t *conn) {
        if (!conn || !conn->callbacks->get_socket)
                return NULL;
        return http_guard_conn_of_sock(conn->callbacks->get_socket(conn));
}

/* h2o 2.2.5's libuv binding ignores what uv_write() and uv_read_start() return (do_write(),
 * do_read_start()), and libuv 1.44 refuses both on a stream whose read failed: uv__read()
 * clears UV_HANDLE_READABLE and UV_HANDLE_WRITABLE on any read error but EAGAIN (a reset
 * peer: ECONNRESET), after which uv_write() returns UV_EPIPE and uv_read_start() UV_ENOTCONN
 * at once, without a callback. h2o then waits for a callback that never comes, with no timer
 * left: a TLS connection reset by its client (an HTTP/2 one that never sent a request, an
 * idle HTTP/1.1 one: a client that closes with unread session tickets resets it) is closed by
 * h2o through shutdown_ssl(), whose close_notify write is refused, so the socket is never
 * disposed: it held its connection slot forever and kept http_server_close() from finishing.
 *
 * So once per loop turn (after the reads, where a refusal happens) and again at close, every
 * connection whose h2o socket waits for a write while libuv holds none of it and will accept
 * no more, or waits for a read libuv is not doing and will not do, gets the error libuv
 * would have given a request it had queued: the write's through h2o's own completion
 * (on_do_write_complete, reached through the socket's write request, which keeps it from the
 * last write libuv took), the read's through h2o's read callback, as on_read_tcp() and
 * on_read_ssl() report a failed read. h2o handles either by closing the connection through
 * its usual path (for TLS, shutdown_ssl() with an error disposes the socket at once). A stream
 * in this state is dead: libuv never accepts a write or a read on it again, so an error
 * delivered early (a write that completed but whose callback is still pending) only closes a
 * connection that was closing anyway, and the late completion finds h2o's write callback
 * cleared (do_dispose_socket) and does nothing. Returns true when it delivered one. */
static bool guard_wake_refused(HttpConn *c) {
        struct GuardUvSocket *u = (struct GuardUvSocket *)c->sock;
        uv_stream_t *stream = (uv_stream_t *)&c->tcp;

        /* Disposed by h2o already: freed in this turn's close callbacks. */
        if (uv_is_closing((uv_handle_t *)&c->tcp))
                return false;

        /* libuv keeps write_queue_size above 0 for a failed request until just before its
         * callback, so 0 means no request of this socket is waiting for one. */
        if (h2o_socket_is_writing(c->sock) && !uv_is_writable(stream) &&
            uv_stream_get_write_queue_size(stream) == 0) {
                if (u->wreq.type == UV_WRITE && u->wreq.cb) {
                        /* Does what on_write_complete() does: clears the TLS output, then
                         * calls and clears the socket's write callback. */
                        u->wreq.cb(&u->wreq, UV_EPIPE);
                } else {
                        /* No write ever went through: not a TLS socket (its handshake
                         * writes first), so on_write_complete() has no output to clear. */
                        h2o_socket_cb cb = c->sock->_cb.write;

                        c->sock->_cb.write = NULL;
                        cb(c->sock, h2o_socket_error_io);
                }
                return true;
        }
        if (h2o_socket_is_reading(c->sock) && !uv_is_readable(stream)) {
                c->sock->bytes_read = 0;
                c->sock->_cb.read(c->sock,
                                  c->sock->ssl ? h2o_socket_error_io : h2o_socket_error_closed);
                return true;
        }
        return false;
}

void http_guard_wake(HttpServer *s) {
        HttpConn *next;

        /* Callbacks only dispose sockets (freed later, in close callbacks), so the list
         * holds. h2o may answer a delivered error with another refused write (TLS: the
         * close_notify), hence a few rounds on the same connection. */
        for (HttpConn *c = s->conns; c; c = next) {
                next = c->next;
                for (unsigned i = 0; i < 4 && guard_wake_refused(c); i++)
                        ;
        }
}

static void guard_on_forced_shutdown(uv_shutdown_t *req, int status) {
        (void)req;
        (void)status;
}

void http_guard_force_close(HttpConn *c) {
        uv_stream_t *stream = (uv_stream_t *)&c->tcp;

        if (uv_is_closing((uv_handle_t *)&c->tcp))
                return;
        /* uv_shutdown() makes libuv refuse new writes, as a failed read does; the writes it
         * holds end with the EPIPE of the shutdown(2) done at close, and their callbacks
         * come. Refused later: http_guard_wake(). */
        if (!c->is_shut_down &&
            uv_shutdown(&c->shutdown_req, stream, guard_on_forced_shutdown) == 0)
                c->is_shut_down = true;
        if (h2o_socket_is_reading(c->sock)) {
                /* libuv stops reading first, so this error is the only read h2o gets. */
                (void)uv_read_stop(stream);
                c->sock->bytes_read = 0;
                c->sock->_cb.read(c->sock,
                                  c->sock->ssl ? h2o_socket_error_io : h2o_socket_error_closed);
        }
        for (unsigned i = 0; i < 4 && guard_wake_refused(c); i++)
                ;
}

static bool guard_header_is(const struct phr_header *h, const char *name) {
        return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

int http_guard_check_framing(const char *buf, size_t len, const char **ret_reason) {
        struct phr_header headers[H2O_MAX_HEADERS];
        size_t n_headers = ELEMENTSOF(headers), method_len, path_len;
        const char *method, *path, *content_length = NULL;
        size_t content_length_len = 0;
        bool has_transfer_encoding = false;
        int minor_version, k;

        k = phr_parse_request(buf, len, &method, &method_len, &path, &path_len, &minor_version,
                              headers, &n_headers, 0);
        if (k == -2)
                return -EAGAIN;
        if (k < 0) {
                *ret_reason = "malformed request headers";
                return -EINVAL;
        }
        for (size_t i = 0; i < n_headers; i++) {
                const struct phr_header *h = &headers[i];

                if (!h->name) /* a continuation line (obs-fold) */
                        continue;
                if (guard_header_is(h, "transfer-encoding"))
                        has_transfer_encoding = true;
                else if (guard_header_is(h, "content-length")) {
                        if (content_length &&
                            (h->value_len != content_length_len ||
                             memcmp(h->value, content_length, h->value_len) != 0)) {
                                *ret_reason = "two different Content-Length values";
                                return -EBADMSG;
                        }
                        content_length = h->value;
                        content_length_len = h->value_len;
                }
        }
        if (has_transfer_encoding && content_length) {
                *ret_reason = "both Content-Length and Transfer-Encoding";
                return -EBADMSG;
        }
        return 0;
}

/* An HTTP/1.1 connection gets a last answer written straight to its socket (h2o is reading
 * the request, so it writes nothing itself), then shutdown(2) makes h2o see the end and
 * close it. A client still sending may get a reset instead of reading the answer. */
static void guard_cut_http1(HttpConn *c, int status, const char *type, const char *msg,
                            bool has_retry_after) {
        char body[512], head[512];
        struct iovec iov[2];
        int fd, n_body, n_head;

        if (c->is_cut)
                return;
        c->is_cut = true;
        fd = h2o_socket_get_fd(c->sock);
        if (fd < 0)
                return;
        n_body = snprintf(body, sizeof(body),
                          "{\"error\":{\"code\":%d,\"type\":\"%s\",\"message\":\"%s\"}}", status,
                          type, msg);
        n_head = snprintf(head, sizeof(head),
                          "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                          "Connection: close\r\n%sContent-Length: %d\r\n\r\n",
                          status, status == 408 ? "Request Timeout" : "Service Unavailable",
                          has_retry_after ? "Retry-After: 1\r\n" : "", n_body);
        if (n_body > 0 && (size_t)n_body < sizeof(body) && n_head > 0 &&
            (size_t)n_head < sizeof(head)) {
                iov[0] = (struct iovec){ head, (size_t)n_head };
                iov[1] = (struct iovec){ body, (size_t)n_body };
                /* Best effort: a full send buffer only loses the answer. */
                (void)sendmsg(fd, &(struct msghdr){ .msg_iov = iov, .msg_iovlen = 2 },
                              MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        http_stats_count_reply(&c->server->stats, status);
        (void)shutdown(fd, SHUT_RDWR);
}

/* Resets one HTTP/2 stream that is still receiving, as h2o does for its own refusals. */
static void guard_reset_stream(h2o_http2_conn_t *conn, h2o_http2_stream_t *stream,
                               bool is_refused) {
        if (is_refused)
                h2o_http2_encode_rst_stream_frame(&conn->_write.buf, stream->stream_id,
                                                  -H2O_HTTP2_ERROR_REFUSED_STREAM);
        else
                h2o_http2_encode_rst_stream_frame(&conn->_write.buf, stream->stream_id,
                                                  -H2O_HTTP2_ERROR_CANCEL);
        h2o_http2_conn_request_write(conn);
        h2o_http2_stream_reset(conn, stream);
}

static bool guard_stream_is_receiving(const h2o_http2_stream_t *stream) {
        return stream->state == H2O_HTTP2_STREAM_STATE_RECV_HEADERS ||
               stream->state == H2O_HTTP2_STREAM_STATE_RECV_BODY;
}

static size_t guard_buffer_bytes(const h2o_buffer_t *b) {
        return b && b->bytes ? b->capacity : 0;
}

/* Every HTTP/2 connection, also those that began as HTTP/1.1 (prior knowledge, Upgrade). */
#define GUARD_FOREACH_HTTP2(s, conn)                                                               \
        for (h2o_linklist_t *_l = (s)->context.http2._conns.next;                                  \
             _l != &(s)->context.http2._conns &&                                                   \
             ((conn) = H2O_STRUCT_FROM_MEMBER(h2o_http2_conn_t, _conns, _l), true);                \
             _l = _l->next)

static uint64_t guard_count(HttpServer *s) {
        h2o_http2_conn_t *conn;
        h2o_http2_stream_t *stream;
        uint64_t total = 0;

        /* HTTP/1.1 holds a request, body included, in the socket's input buffer until it is
         * answered; HTTP/2 consumes that buffer frame by frame. */
        for (HttpConn *c = s->conns; c; c = c->next)
                total += guard_buffer_bytes(c->sock->input);
        GUARD_FOREACH_HTTP2 (s, conn) {
                HttpConn *c = http_guard_conn_of_sock(conn->sock);

                if (c)
                        c->is_http2 = true;
                total += guard_buffer_bytes(conn->_headers_unparsed) +
                         guard_buffer_bytes(conn->_http1_req_input);
                kh_foreach_value(conn->streams, stream,
                                 { total += guard_buffer_bytes(stream->_req_body); });
        }
        return total;
}

/* Over the cap: every body still arriving is refused, whoever sends it; requests already in
 * are kept (they are answered and then freed). */
static void guard_refuse_unfinished(HttpServer *s, uint64_t total) {
        h2o_http2_conn_t *conn;
        h2o_http2_stream_t *stream;
        uint64_t n_suppressed, n_refused = 0;

        GUARD_FOREACH_HTTP2 (s, conn) {
                if (conn->state >= H2O_HTTP2_CONN_STATE_HALF_CLOSED)
                        continue;
                kh_foreach_value(conn->streams, stream, {
                        if (stream->state == H2O_HTTP2_STREAM_STATE_RECV_BODY) {
                                guard_reset_stream(conn, stream, /* is_refused= */ true);
                                n_refused++;
                        }
                });
        }
        for (HttpConn *c = s->conns; c; c = c->next)
                if (!c->is_http2 && !c->is_cut && !uv_is_closing((uv_handle_t *)&c->tcp) &&
                    h2o_socket_is_reading(c->sock) && c->sock->input->size > 0) {
                        guard_cut_http1(c, 503, "server-busy",
                                        "too many request bytes held at once "
                                        "(http.max-buffered-bytes), retry",
                                        /* has_retry_after= */ true);
                        n_refused++;
                }

        if (http_ratelimit_test(&s->buffer_ratelimit, s->loop, &n_suppressed))
                log_warning("request bytes held=%" PRIu64 " reached max-buffered-bytes=%" PRIu64
                            ", refused %" PRIu64 " unfinished requests (%" PRIu64
                            " more times since the last warning)",
                            total, s->max_buffered_bytes, n_refused, n_suppressed);
}

static void guard_on_check(uv_check_t *check) {
        HttpServer *s = check->data;

        http_guard_wake(s);
        if (!s->has_context || s->is_closing)
                return;
        s->n_buffered_bytes = guard_count(s);
        if (s->max_buffered_bytes > 0 && s->n_buffered_bytes > s->max_buffered_bytes) {
                guard_refuse_unfinished(s, s->n_buffered_bytes);
                s->n_buffered_bytes = guard_count(s);
        }
}

static void guard_log_timeout(HttpServer *s, HttpConn *c, const char *what, uint32_t timeout_ms) {
        uint64_t n_suppressed;
        char addr[64] = "?";

        if (!http_ratelimit_test(&s->timeout_ratelimit, s->loop, &n_suppressed))
                return;
        if (c && c->peer)
                http_peer_format(c->peer, addr, sizeof(addr));
        log_warning("cutting a slow client address=%s: %s not in after %" PRIu32 " ms (%" PRIu64
                    " more since the last warning)",
                    addr, what, timeout_ms, n_suppressed);
}

/* Stamps the time the guard first saw a stream in a phase in fields h2o 2.2.5 leaves unset
 * for HTTP/2 (request_begin_at, request_body_begin_at: only access logs read them), as loop
 * milliseconds. Returns the stamp. */
static uint64_t guard_stamp(struct timeval *tv, uint64_t now) {
        if (tv->tv_sec == 0 && tv->tv_usec == 0) {
                tv->tv_sec = (time_t)(now / 1000);
                tv->tv_usec = (suseconds_t)(now % 1000) * 1000 + 1; /* never 0:0 */
        }
        return (uint64_t)tv->tv_sec * 1000 + (uint64_t)(tv->tv_usec / 1000);
}

static void guard_timeouts_http2(HttpServer *s, uint64_t now) {
        h2o_http2_conn_t *conn;
        h2o_http2_stream_t *stream;

        GUARD_FOREACH_HTTP2 (s, conn) {
                HttpConn *c = http_guard_conn_of_sock(conn->sock);
                bool is_headers_late = false;

                if (conn->state >= H2O_HTTP2_CONN_STATE_HALF_CLOSED)
                        continue;
                kh_foreach_value(conn->streams, stream, {
                        if (!guard_stream_is_receiving(stream))
                                continue;
                        if (stream->state == H2O_HTTP2_STREAM_STATE_RECV_HEADERS) {
                                uint64_t since =
                                        guard_stamp(&stream->req.timestamps.request_begin_at, now);

                                if (s->header_timeout_ms > 0 && now - since >= s->header_timeout_ms)
                                        is_headers_late = true;
                        } else {
                                uint64_t since =
                                        guard_stamp(&stream->req.timestamps.request_body_begin_at,
                                                    now);

                                if (s->body_timeout_ms > 0 && now - since >= s->body_timeout_ms) {
                                        guard_log_timeout(s, c, "an HTTP/2 request body",
                                                          s->body_timeout_ms);
                                        guard_reset_stream(conn, stream, /* is_refused= */ false);
                                }
                        }
                });
                /* As an HTTP/1.1 connection's first request, the first stream's headers
                 * are due header-timeout-ms after the accept (which covers the TLS
                 * handshake and the preface): a connection that opens none holds a slot
                 * under h2o's idle timer alone otherwise. */
                if (conn->pull_stream_ids.max_open == 0 && c && s->header_timeout_ms > 0 &&
                    now - c->accepted_ms >= s->header_timeout_ms)
                        is_headers_late = true;
                /* A header block cut into CONTINUATION frames holds the whole connection (no
                 * other frame may come in between): it goes. */
                if (is_headers_late && c && !c->is_cut) {
                        int fd = h2o_socket_get_fd(conn->sock);

                        guard_log_timeout(s, c, "HTTP/2 request headers", s->header_timeout_ms);
                        c->is_cut = true;
                        if (fd >= 0)
                                (void)shutdown(fd, SHUT_RDWR);
                }
        }
}

static void guard_timeouts_http1(HttpServer *s, HttpConn *c, uint64_t now) {
        h2o_buffer_t *input = c->sock->input;
        HttpConnPhase phase;
        const char *reason;

        if (c->is_http2 || c->is_cut)
                return;
        /* A new request was handed to us: whatever came before is over. */
        if (c->phase_n_requests != c->n_requests) {
                c->phase_n_requests = c->n_requests;
                c->phase = HTTP_CONN_PHASE_NONE;
        }
        if (!h2o_socket_is_reading(c->sock))
                phase = HTTP_CONN_PHASE_NONE; /* handled, or its answer is being written */
        else if (input->size == 0)
                /* The first request's clock runs from the accept (which also covers a TLS
                 * handshake); later ones wait under idle-timeout-ms until their first byte. */
                phase = c->n_requests == 0 ? HTTP_CONN_PHASE_HEADERS : HTTP_CONN_PHASE_NONE;
        else if (http_guard_check_framing(input->bytes, input->size, &reason) == -EAGAIN)
                phase = HTTP_CONN_PHASE_HEADERS;
        else
                phase = HTTP_CONN_PHASE_BODY;

        /* server_on_connection() starts the first request in HEADERS at the accept. */
        if (phase != c->phase) {
                c->phase_since_ms = now;
                c->phase = phase;
        }
        if (c->phase == HTTP_CONN_PHASE_HEADERS && s->header_timeout_ms > 0 &&
            now - c->phase_since_ms >= s->header_timeout_ms) {
                guard_log_timeout(s, c, "request headers", s->header_timeout_ms);
                guard_cut_http1(c, 408, "request-timeout",
                                "the request headers took too long (http.header-timeout-ms)",
                                /* has_retry_after= */ false);
        } else if (c->phase == HTTP_CONN_PHASE_BODY && s->body_timeout_ms > 0 &&
                   now - c->phase_since_ms >= s->body_timeout_ms) {
                guard_log_timeout(s, c, "a request body", s->body_timeout_ms);
                guard_cut_http1(c, 408, "request-timeout",
                                "the request body took too long (http.body-timeout-ms)",
                                /* has_retry_after= */ false);
        }
}

static void guard_on_timer(uv_timer_t *timer) {
        HttpServer *s = timer->data;
        uint64_t now = uv_now(s->loop);

        if (!s->has_context || s->is_closing)
                return;
        guard_timeouts_http2(s, now);
        for (HttpConn *c = s->conns; c; c = c->next)
                guard_timeouts_http1(s, c, now);
}

/* A quarter of the shortest timeout, within 50 ms..1 s: a request is cut at most that late. */
static uint64_t guard_interval_ms(const HttpServer *s) {
        uint64_t t = 4000;

        if (s->header_timeout_ms > 0 && s->header_timeout_ms < t)
                t = s->header_timeout_ms;
        if (s->body_timeout_ms > 0 && s->body_timeout_ms < t)
                t = s->body_timeout_ms;
        t /= 4;
        return t < 50 ? 50 : t;
}

void http_guard_start(HttpServer *s) {
        s->has_guard = true;
        s->has_guard_check = true;
        (void)uv_check_init(s->loop, &s->buffer_check);
        s->buffer_check.data = s;
        s->handles.n_open++;
        (void)uv_check_start(&s->buffer_check, guard_on_check);
        /* Neither keeps the loop alive: the listener and the connections do. */
        uv_unref((uv_handle_t *)&s->buffer_check);

        (void)uv_timer_init(s->loop, &s->guard_timer);
        s->guard_timer.data = s;
        s->handles.n_open++;
        (void)uv_timer_start(&s->guard_timer, guard_on_timer, guard_interval_ms(s),
                             guard_interval_ms(s));
        uv_unref((uv_handle_t *)&s->guard_timer);
}

static void guard_on_closed(uv_handle_t *handle) {
        HttpServer *s = handle->data;

        http_handles_closed(&s->handles);
}

void http_guard_stop_limits(HttpServer *s) {
        if (!s->has_guard)
                return;
        s->has_guard = false;
        uv_close((uv_handle_t *)&s->guard_timer, guard_on_closed);
}

void http_guard_stop(HttpServer *s) {
        http_guard_stop_limits(s);
        if (!s->has_guard_check)
                return;
        s->has_guard_check = false;
        uv_close((uv_handle_t *)&s->buffer_check, guard_on_closed);
}
