/* SPDX-License-Identifier: Apache-2.0 */
/* HttpRequest: a view of one h2o request for handlers (method, path, parameters, headers,
 * query, body) and the watch that tells a handler its client went away. Lives in the h2o
 * request's memory pool; never outlives it and never touches h2o's socket buffers. */
#define LOG_MODULE "http"
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http-internal.h"
#include "http/percent.h"
#include "util/log.h"
#include "util/time-util.h"

static void request_unlink(HttpRequest *r) {
        HttpServer *s = r->server;

        if (!r->is_linked)
                return;
        if (r->prev)
                r->prev->next = r->next;
        else
                s->requests = r->next;
        if (r->next)
                r->next->prev = r->prev;
        r->prev = r->next = NULL;
        r->is_linked = false;
}

static void watch_on_closed(uv_handle_t *handle) {
        HttpGoneWatch *w = handle->data;
        HttpServer *s = w->server;

        (void)close(w->fd);
        free(w);
        http_handles_closed(&s->handles);
}

static void request_watch_stop(HttpRequest *r) {
        HttpGoneWatch *w = r->watch;

        if (!w)
                return;
        r->watch = NULL;
        w->req = NULL;
        uv_close((uv_handle_t *)&w->poll, watch_on_closed);
}

void http_request_end(HttpRequest *r) {
        r->is_replied = true;
        request_watch_stop(r);
        request_unlink(r);
}

/* Runs when h2o clears the request's pool: after the response went out, or when the
 * connection or stream closed first. Pool memory is still readable here. */
static void request_on_dispose(void *p) {
        HttpRequest *r = p;

        if (r->server->dispatching == r)
                r->server->dispatching = NULL;
        request_watch_stop(r);
        request_unlink(r);
        if (r->peer) {
                assert(r->peer->n_requests > 0);
                r->peer->n_requests--;
                http_peers_release(&r->server->peers, TAKE_PTR(r->peer));
        }
        if (!r->is_replied && !r->is_gone) {
                r->is_gone = true;
                log_debug("client went away before the reply method=%s", r->method);
                if (r->gone_cb)
                        r->gone_cb(r, r->gone_userdata);
        }
        free(r->reply_body);
}

HttpRequest *http_request_new(HttpServer *s, h2o_req_t *req) {
        HttpRequest *r;
        size_t path_len;

        /* A shared allocation linked to the pool: its dispose callback is how h2o tells us the
         * request is over (docs/design.md section 10). h2o aborts on allocation failure. */
        r = h2o_mem_alloc_shared(&req->pool, sizeof(*r), request_on_dispose);
        *r = (HttpRequest){
                .server = s,
                .req = req,
                .method = h2o_strdup(&req->pool, req->method.base, req->method.len).base,
                .started_ns = now_monotonic_ns(),
        };

        path_len = req->query_at != SIZE_MAX ? req->query_at : req->path.len;
        r->path = slice_make(req->path.base, path_len);
        if (req->query_at != SIZE_MAX)
                r->query = slice_make(req->path.base + req->query_at + 1,
                                      req->path.len - req->query_at - 1);

        r->next = s->requests;
        if (s->requests)
                s->requests->prev = r;
        s->requests = r;
        r->is_linked = true;
        return r;
}

void http_request_count_peer(HttpRequest *r, HttpPeer *peer) {
        assert(!r->peer);
        r->peer = peer;
        peer->n_requests++;
}

static void watch_on_event(uv_poll_t *poll, int status, int events) {
        HttpGoneWatch *w = poll->data;
        HttpRequest *r = w->req;

        assert(r);
        if (status >= 0) {
                ssize_t n;
                char c;

                n = recv(w->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
                if (n > 0) {
                        /* Pipelined bytes: only reading them could tell whether the client also
                         * left, and they belong to h2o. Stop watching rather than spin. */
                        uv_poll_stop(poll);
                        return;
                }
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                        return;
        }

        log_debug("client went away before the reply method=%s", r->method);
        http_request_abandon(r, /* is_shutdown= */ false);
}

/* Out of fds or memory this repeats for every request: one line per interval. */
static void request_watch_failed(HttpServer *s, int error) {
        uint64_t n_suppressed;

        if (http_ratelimit_test(&s->watch_ratelimit, s->loop, &n_suppressed))
                log_warning("cannot watch a connection: %s (%" PRIu64 " more suppressed), "
                            "clients leaving early go unnoticed",
                            strerror(-error), n_suppressed);
}

/* h2o 2.2.5 stops reading an HTTP/1.1 connection while its request is out (it would
 * otherwise buffer pipelined requests) and so never learns that the client left: the request
 * would hang on until we reply. We watch a dup of the socket (epoll keys on the fd, so the
 * dup can be registered next to libuv's own entry) for EOF or an error instead. HTTP/2
 * connections are always read by h2o, which closes the stream and clears its pool. */
void http_request_watch(HttpRequest *r) {
        h2o_conn_t *conn = r->req->conn;
        h2o_socket_t *sock;
        HttpGoneWatch *w;
        int fd, k;

        assert(!r->watch && !r->is_replied);
        sock = conn->callbacks->get_socket ? conn->callbacks->get_socket(conn) : NULL;
        if (!sock || h2o_socket_is_reading(sock))
                return;
        fd = h2o_socket_get_fd(sock);
        if (fd < 0)
                return;

        w = calloc(1, sizeof(*w));
        if (!w) {
                request_watch_failed(r->server, -ENOMEM);
                return;
        }
        w->server = r->server;
        w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (w->fd < 0) {
                request_watch_failed(r->server, -errno);
                free(w);
                return;
        }
        k = uv_poll_init(r->server->loop, &w->poll, w->fd);
        if (k < 0) {
                request_watch_failed(r->server, k);
                (void)close(w->fd);
                free(w);
                return;
        }
        w->poll.data = w;
        w->req = r;
        r->watch = w;
        r->server->handles.n_open++;

        k = uv_poll_start(&w->poll, UV_READABLE | UV_DISCONNECT, watch_on_event);
        if (k < 0) {
                request_watch_failed(r->server, k);
                request_watch_stop(r);
        }
}

/* The response that makes h2o release an abandoned request and close its connection: a JSON
 * 503 when the server shuts down (the client may still read it), else empty. Not a reply
 * (reply.c): the handler never sees it, and it is the end of the request's own life. */
static void request_release(HttpRequest *r, bool is_shutdown) {
        static const char shutdown_body[] = "{\"error\":{\"code\":503,\"type\":\"shutting-down\","
                                            "\"message\":\"the server is shutting down, retry\"}}";
        static h2o_generator_t generator = { /* proceed= */ NULL, /* stop= */ NULL };
        h2o_req_t *req = r->req;
        h2o_iovec_t buf = h2o_iovec_init(shutdown_body, sizeof(shutdown_body) - 1);

        /* This response exists because h2o frees a request only once its response is out; it
         * also closes the HTTP/1.1 connection behind it. A client that left reads nothing, one
         * cut off by shutdown may still read the error. */
        req->http1_is_persistent = 0;
        req->res.status = 503;
        req->res.reason = "Service Unavailable";
        if (is_shutdown) {
                req->res.content_length = buf.len;
                h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE,
                               /* orig_name= */ NULL, H2O_STRLIT("application/json"));
        } else
                req->res.content_length = 0;
        h2o_start_response(req, &generator);
        if (is_shutdown && strcmp(r->method, "HEAD") != 0)
                h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
        else
                h2o_send(req, /* bufs= */ NULL, 0, H2O_SEND_STATE_FINAL);
}

void http_request_abandon(HttpRequest *r, bool is_shutdown) {
        assert(!r->is_replied && !r->is_gone);

        r->is_gone = true;
        request_watch_stop(r);
        request_unlink(r);
        if (r->gone_cb)
                r->gone_cb(r, r->gone_userdata);
        request_release(r, is_shutdown);
}

const char *http_request_method(const HttpRequest *r) {
        return r->method;
}

Slice http_request_path(const HttpRequest *r) {
        return r->path;
}

size_t http_request_n_params(const HttpRequest *r) {
        return r->n_params;
}

const char *http_request_param(const HttpRequest *r, size_t i) {
        assert(i < r->n_params);
        return r->params[i];
}

Slice http_request_body(const HttpRequest *r) {
        return r->req->entity.base ? slice_make(r->req->entity.base, r->req->entity.len)
                                   : slice_make("", 0);
}

Slice http_request_header(const HttpRequest *r, const char *name) {
        const h2o_headers_t *headers = &r->req->headers;
        size_t name_len = strlen(name);

        /* h2o lower-cases names of both protocols; strncasecmp keeps the caller's case free.
         * Names never hold NUL bytes (h2o rejects them), so strncasecmp sees all of them. */
        for (size_t i = 0; i < headers->size; i++) {
                const h2o_header_t *h = &headers->entries[i];

                if (h->name->len == name_len && strncasecmp(h->name->base, name, name_len) == 0)
                        return slice_make(h->value.base, h->value.len);
        }
        return SLICE_NULL;
}

Slice http_request_query(const HttpRequest *r, const char *name) {
        Slice rest = r->query;
        size_t name_len = strlen(name);

        while (rest.ptr && rest.len > 0) {
                const uint8_t *amp = memchr(rest.ptr, '&', rest.len);
                size_t pair_len = amp ? (size_t)(amp - rest.ptr) : rest.len;
                const uint8_t *eq = memchr(rest.ptr, '=', pair_len);
                Slice key = slice_make(rest.ptr, eq ? (size_t)(eq - rest.ptr) : pair_len);
                Slice value = eq ? slice_make(eq + 1, pair_len - key.len - 1) : slice_make("", 0);
                char *key_buf, *value_buf;
                size_t len;

                rest = amp ? slice_make(amp + 1, rest.len - pair_len - 1) : slice_make("", 0);

                /* Keys are compared decoded, as a client may escape any byte; decoding never
                 * grows, so a shorter raw key cannot match. */
                if (key.len < name_len)
                        continue;
                key_buf = h2o_mem_alloc_pool(&r->req->pool, key.len + 1);
                if (http_percent_decode(key, /* plus_is_space= */ true, key_buf, &len) < 0 ||
                    len != name_len || memcmp(key_buf, name, len) != 0)
                        continue;

                value_buf = h2o_mem_alloc_pool(&r->req->pool, value.len + 1);
                if (http_percent_decode(value, /* plus_is_space= */ true, value_buf, &len) < 0)
                        return SLICE_NULL;
                value_buf[len] = '\0';
                return slice_make(value_buf, len);
        }
        return SLICE_NULL;
}

void http_request_on_gone(HttpRequest *r, HttpGoneCallback cb, void *userdata) {
        assert(!r->is_replied && !r->is_gone);
        r->gone_cb = cb;
        r->gone_userdata = userdata;
}
