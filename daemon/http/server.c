/* SPDX-License-Identifier: Apache-2.0 */
/* HttpServer: libh2o (libuv build) on the daemon's loop. Owns the listening socket, every
 * accepted connection, h2o's configuration and context, the TLS context, and the request
 * limits (connections in all and per address, requests in flight per address, body size, bytes
 * held, header, body and idle time; guard.c does the ones h2o has no knob for). Cleartext
 * HTTP/1.1 and h2c, or, with a certificate configured, TLS only (HTTP/1.1 and h2 by ALPN). */
#define LOG_MODULE "http"
#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http/http-internal.h"
#include "util/address.h"
#include "util/log.h"

/* How the limits map onto h2o 2.2.5:
 *
 * - max_connections: libh2o has no connection limit (the h2o server binary counts connections
 *   itself) and libuv cannot pause a listener. So every connection is accepted, and one over the
 *   limit is closed at once, without a response: the client sees the connection closed (curl:
 *   "Empty reply from server") and can retry, while the kernel backlog never fills up with
 *   connections that would only time out. One warning per interval says how many were refused.
 * - idle_timeout_ms: becomes h2o's http1.req_timeout and http2.idle_timeout. For HTTP/2 it is
 *   a true idle timer, reset by every frame and paused while a stream waits for its reply. For
 *   HTTP/1.1 h2o arms it once when it starts waiting for a request and disarms it when the
 *   whole request (body included) is in: it bounds keep-alive idleness plus the time to send
 *   one request, and never runs while a handler works on the request.
 * - max_body_bytes: h2o's max_request_entity_size is set one byte higher and the exact check is
 *   ours (server_on_req), because h2o compares differently per framing (content-length: more
 *   than the limit; chunked: at least the limit). So h2o buffers at most limit + 1 bytes: a
 *   declared content-length beyond that is refused before any body byte is read, a chunked
 *   body as soon as it gets there (both answered by h2o, made JSON by the error filter in
 *   reply.c, connection closed); a body of exactly limit + 1 reaches server_on_req. Over
 *   HTTP/2, a body beyond limit + 1 makes h2o 2.2.5 reset the stream (RST_STREAM
 *   REFUSED_STREAM) instead of answering 413.
 * - max_buffered_bytes: h2o 2.2.5 has no total. An HTTP/1.1 request, body included, sits in
 *   its socket's input buffer until answered; an HTTP/2 body in its stream's _req_body, and
 *   h2o sends WINDOW_UPDATE as soon as DATA is buffered (update_input_window), so flow control
 *   bounds nothing: its SETTINGS are a compile-time constant (H2O_HTTP2_SETTINGS_HOST: 100
 *   concurrent streams, 16 MiB initial window), i.e. 100 x (max_body_bytes + 1) per
 *   connection. So guard.c sums the capacity of those buffers (sockets, streams, header
 *   blocks waiting for CONTINUATION) from a uv_check, once per loop turn after the reads, and
 *   over the cap refuses every body still arriving: HTTP/2 streams in RECV_BODY are reset with
 *   REFUSED_STREAM (which tells the client nothing was processed), an HTTP/1.1 connection
 *   still reading a request gets 503 server-busy with Retry-After written to its socket, then
 *   shutdown(2). Requests already complete are left to finish. It can be passed by what the
 *   connections read in one loop turn (libuv reads at most 32 buffers per stream per turn).
 * - header_timeout_ms, body_timeout_ms: h2o's only HTTP/1.1 request timer (req_timeout) spans
 *   waiting plus headers plus body, and HTTP/2 has only the idle timer, which every frame
 *   resets. So a guard.c timer (a quarter of the shorter timeout, 50 ms..1 s) looks at each
 *   HTTP/1.1 connection that h2o is reading: no complete header block in its input yet
 *   (picohttpparser, as h2o parses) is the header phase, which for a connection's first
 *   request starts at the accept (covering the TLS handshake) and for later ones at the first
 *   byte; a complete one is the body phase. Over time, 408 request-timeout and shutdown(2).
 *   HTTP/2 streams get the time the guard first saw them receiving stamped into their
 *   request's timestamps (unused by h2o 2.2.5 for HTTP/2); a body over time resets the stream
 *   (CANCEL), a header block over time (CONTINUATION trickled) closes the connection, and so
 *   does a connection that opens no stream within header_timeout_ms of its accept.
 * - max_connections_per_address: counted at accept (peers.c, IPv4-mapped IPv6 folded into
 *   IPv4) and refused like max_connections: closed at once.
 * - max_requests_per_address: counted from server_on_req until h2o disposes the request (the
 *   reply is out or the client left); over it, 429 too-many-requests with Retry-After. With
 *   HTTP/2 one connection carries up to 100 of them, h2o runs at most
 *   http2.max_concurrent_requests_per_connection (32) at once and queues the rest.
 * - RFC 9112 section 6.3: h2o's HTTP/1.1 parser takes Transfer-Encoding over Content-Length
 *   and the first of several Content-Lengths, and hides both from the request. The raw header
 *   block is still at the start of the socket's input buffer when server_on_req runs (h2o
 *   consumes it after the response), so it is parsed again there; both headers, or two
 *   different lengths, get 400 bad-request and the connection closes. HTTP/2 needs nothing:
 *   h2o refuses Transfer-Encoding and a body that does not match content-length there.
 * - TLS: accept_ctx.ssl_ctx (tls.c); h2o does the handshake (handshake_timeout, 10 s, and
 *   header_timeout_ms, whichever ends first) and picks HTTP/1.1 or h2 by ALPN. No h2c upgrade
 *   over TLS. */

#define SERVER_LISTEN_BACKLOG SOMAXCONN

/* How long http_server_close() leaves h2o to close the connections woken by shutdown(2) and
 * http_guard_wake() before it forces them (and again at each interval after that). Every
 * state known takes one loop turn; this is only the bound for the ones not known. */
#define SERVER_CLOSE_DEADLINE_MS 3000

/* h2o hands our close callback the uv handle, which is where the HttpConn starts. */
static_assert(offsetof(HttpConn, tcp) == 0, "HttpConn must start with its uv_tcp_t");

static void server_maybe_finish(HttpServer *s);

/* HttpHandles.on_closed: every close callback of ours, also those of guard.c and request.c,
 * ends here, after the count went down. */
static void server_on_handles_closed(void *userdata) {
        server_maybe_finish(userdata);
}

static void server_on_handle_closed(uv_handle_t *handle) {
        HttpServer *s = handle->data;

        http_handles_closed(&s->handles);
}

static void server_on_refused_closed(uv_handle_t *handle) {
        HttpConn *c = handle->data;
        HttpServer *s = c->server;

        free(c);
        http_handles_closed(&s->handles);
}

/* The close callback h2o calls (through its uv socket) once it is done with a connection. */
static void server_on_conn_closed(uv_handle_t *handle) {
        HttpConn *c = (HttpConn *)handle;
        HttpServer *s = c->server;

        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        assert(s->n_conns > 0);
        s->n_conns--;
        assert(c->peer && c->peer->n_conns > 0);
        c->peer->n_conns--;
        http_peers_release(&s->peers, c->peer);
        free(c);
        http_handles_closed(&s->handles);
}

static void server_on_connection(uv_stream_t *listener, int status) {
        HttpServer *s = listener->data;
        struct sockaddr_storage peer_addr;
        uint64_t n_suppressed;
        h2o_socket_t *sock;
        HttpConn *c;
        int k;

        if (status < 0) {
                /* EMFILE and friends: libuv retries on the next loop turn by itself. */
                if (http_ratelimit_test(&s->accept_ratelimit, s->loop, &n_suppressed))
                        log_warning("cannot accept a connection: %s (%" PRIu64
                                    " more suppressed), retrying",
                                    uv_strerror(status), n_suppressed);
                return;
        }

        c = calloc(1, sizeof(*c));
        if (!c) {
                if (http_ratelimit_test(&s->accept_ratelimit, s->loop, &n_suppressed))
                        log_warning("cannot accept a connection: %s (%" PRIu64
                                    " more suppressed), retrying",
                                    strerror(ENOMEM), n_suppressed);
                return;
        }
        c->server = s;
        (void)uv_tcp_init(s->loop, &c->tcp); /* cannot fail without a socket to create */
        c->tcp.data = c;
        s->handles.n_open++;

        k = uv_accept(listener, (uv_stream_t *)&c->tcp);
        if (k < 0) {
                if (http_ratelimit_test(&s->accept_ratelimit, s->loop, &n_suppressed))
                        log_warning("cannot accept a connection: %s (%" PRIu64
                                    " more suppressed), retrying",
                                    uv_strerror(k), n_suppressed);
                uv_close((uv_handle_t *)&c->tcp, server_on_refused_closed);
                return;
        }
        if (s->n_conns >= s->max_connections || s->is_closing) {
                if (http_ratelimit_test(&s->refuse_ratelimit, s->loop, &n_suppressed))
                        log_warning("refusing a connection: max-connections=%" PRIu32
                                    " reached (%" PRIu64 " more refused since the last "
                                    "warning), closing it",
                                    s->max_connections, n_suppressed);
                uv_close((uv_handle_t *)&c->tcp, server_on_refused_closed);
                return;
        }
        k = uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&peer_addr, &(int){ sizeof(peer_addr) });
        c->peer = k == 0 ? http_peers_get(&s->peers, (struct sockaddr *)&peer_addr) : NULL;
        if (!c->peer) {
                /* Gone already, or out of memory: either way nothing to serve. */
                uv_close((uv_handle_t *)&c->tcp, server_on_refused_closed);
                return;
        }
        if (s->max_connections_per_address > 0 &&
            c->peer->n_conns >= s->max_connections_per_address) {
                if (http_ratelimit_test(&s->peer_ratelimit, s->loop, &n_suppressed)) {
                        char addr[64];

                        http_peer_format(c->peer, addr, sizeof(addr));
                        log_warning("refusing a connection address=%s: "
                                    "max-connections-per-address=%" PRIu32 " reached (%" PRIu64
                                    " more refused since the last warning), closing it",
                                    addr, s->max_connections_per_address, n_suppressed);
                }
                http_peers_release(&s->peers, TAKE_PTR(c->peer));
                uv_close((uv_handle_t *)&c->tcp, server_on_refused_closed);
                return;
        }
        c->peer->n_conns++;

        /* Responses go out in one write each; Nagle would only delay HTTP/2's small frames. */
        (void)uv_tcp_nodelay(&c->tcp, 1);
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;

        /* From here h2o owns the handle (it rewrites tcp.data) until server_on_conn_closed(). */
        sock = h2o_uv_socket_create((uv_stream_t *)&c->tcp, server_on_conn_closed);
        c->sock = sock;
        /* guard.c finds the connection behind an h2o socket through its layout. */
        assert(http_guard_conn_of_sock(sock) == c);
        c->phase = HTTP_CONN_PHASE_HEADERS;
        c->accepted_ms = uv_now(s->loop);
        c->phase_since_ms = c->accepted_ms;
        h2o_accept(&s->accept_ctx, sock);
}

/* The handler of h2o's only path, "/": every request that reaches h2o's request processing
 * comes here, so the router, not h2o's prefix matching, decides. */
static int server_on_req(h2o_handler_t *self, h2o_req_t *req) {
        HttpServer *s = ((HttpRouteHandler *)self)->server;
        const char *reason = NULL;
        int framing = 0;
        HttpRequest *r;
        HttpConn *c;

        r = http_request_new(s, req);
        s->dispatching = r;
        c = http_guard_conn_of(req->conn);
        if (c)
                c->n_requests++;
        /* Only a definite verdict counts: h2o already parsed these bytes and took them. */
        if (c && req->version < 0x200)
                framing = http_guard_check_framing(c->sock->input->bytes, c->sock->input->size,
                                                   &reason);

        if (s->is_closing)
                http_reply_error(r, 503, "shutting-down", "the server is shutting down, retry");
        else if (framing == -EBADMSG) {
                /* Which body was meant is ambiguous (request smuggling): never reuse. */
                req->http1_is_persistent = 0;
                http_reply_error(r, 400, "bad-request",
                                 "request framing is ambiguous: %s (RFC 9112 section 6.3)", reason);
        } else if (c && s->max_requests_per_address > 0 &&
                   c->peer->n_requests >= s->max_requests_per_address) {
                uint64_t n_suppressed;

                if (http_ratelimit_test(&s->peer_ratelimit, s->loop, &n_suppressed)) {
                        char addr[64];

                        http_peer_format(c->peer, addr, sizeof(addr));
                        log_warning(
                                "refusing a request address=%s: max-requests-per-address=%" PRIu32
                                " in flight (%" PRIu64 " more refused since the last "
                                "warning), answering 429",
                                addr, s->max_requests_per_address, n_suppressed);
                }
                http_reply_add_header(r, "Retry-After", "1");
                http_reply_error(r, 429, "too-many-requests",
                                 "this address has %" PRIu32 " requests in flight "
                                 "(max-requests-per-address), retry",
                                 s->max_requests_per_address);
        } else if (req->entity.len > s->max_body_bytes)
                http_reply_error(r, 413, "body-too-large",
                                 "request body is larger than %" PRIu64 " bytes (max-body-bytes)",
                                 s->max_body_bytes);
        else {
                if (c)
                        http_request_count_peer(r, c->peer);
                http_router_dispatch(&s->router, r);
        }

        /* The request's dispose callback clears s->dispatching, so this also holds if h2o had
         * already freed the request, which it does not do today. */
        if (s->dispatching == r) {
                s->dispatching = NULL;
                if (!r->is_replied && !r->is_gone)
                        http_request_watch(r);
        }
        return 0;
}

int http_server_new(uv_loop_t *loop, const HttpConfig *config, HttpServer **ret) {
        _cleanup_(http_server_freep) HttpServer *s = NULL;
        h2o_hostconf_t *hostconf;
        h2o_pathconf_t *pathconf;
        HttpRouteHandler *handler;

        assert(loop && config && ret);
        if (config->port > UINT16_MAX || config->max_connections == 0 ||
            config->max_body_bytes >= SIZE_MAX || config->idle_timeout_ms == 0 ||
            !config->tls_certificate_file != !config->tls_key_file ||
            (config->tls_client_ca_file && !config->tls_certificate_file))
                return -EINVAL;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->loop = loop;
        s->handles = (HttpHandles){ .on_closed = server_on_handles_closed, .userdata = s };
        s->port = (uint16_t)config->port;
        s->max_body_bytes = config->max_body_bytes;
        s->max_connections = config->max_connections;
        s->idle_timeout_ms = config->idle_timeout_ms;
        s->max_buffered_bytes = config->max_buffered_bytes;
        s->max_connections_per_address = config->max_connections_per_address;
        s->max_requests_per_address = config->max_requests_per_address;
        s->header_timeout_ms = config->header_timeout_ms;
        s->body_timeout_ms = config->body_timeout_ms;
        if (config->tls_certificate_file) {
                Error error = { 0 };
                int k;

                k = http_tls_new(config, &s->ssl_ctx, &error);
                if (k < 0) {
                        log_error("cannot set up TLS: %s", error.message);
                        return k;
                }
        }
        s->listen_address = strdup(config->listen_address ? config->listen_address : "127.0.0.1");
        if (!s->listen_address)
                return -ENOMEM;

        /* h2o's configuration objects abort on allocation failure; nothing to check below. */
        h2o_config_init(&s->globalconf);
        s->globalconf.server_name = h2o_iovec_init("", 0); /* no Server: header */
        s->globalconf.max_request_entity_size = (size_t)config->max_body_bytes + 1;
        s->globalconf.http1.req_timeout = config->idle_timeout_ms;
        s->globalconf.http1.upgrade_to_http2 = 1;
        s->globalconf.http2.idle_timeout = config->idle_timeout_ms;

        hostconf = h2o_config_register_host(&s->globalconf, h2o_iovec_init(H2O_STRLIT("default")),
                                            65535);
        pathconf = h2o_config_register_path(hostconf, "/", 0);
        handler = (HttpRouteHandler *)h2o_create_handler(pathconf, sizeof(*handler));
        handler->server = s;
        handler->super.on_req = server_on_req;
        /* Only h2o's own errors end on the fallback path (a request target not starting with
         * "/", a body over the limit, a broken request): make them speak JSON too. */
        http_reply_filter_register(s, &hostconf->fallback_path);

        *ret = TAKE_PTR(s);
        return 0;
}

int http_server_route(HttpServer *s, const char *method, const char *pattern, HttpHandler handler,
                      void *userdata) {
        if (s->is_started)
                return -EBUSY;
        return http_router_add(&s->router, method, pattern, handler, userdata);
}

int http_server_start(HttpServer *s) {
        _cleanup_(closep) int fd = -1;
        struct sockaddr_storage addr;
        socklen_t addr_len = sizeof(addr);
        int k, one = 1;

        assert(!s->is_started && !s->is_closing);

        /* Every step that can fail for a reason of the environment (address, port, permission)
         * runs on a plain socket first, so that a failure leaves nothing on the loop. */
        k = address_parse(s->listen_address, s->port, &addr);
        if (k < 0)
                return k;
        fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        /* A restarted daemon must not wait for the old connections' TIME_WAIT. */
        if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
                return -errno;
        if (bind(fd, (struct sockaddr *)&addr,
                 addr.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                           : sizeof(struct sockaddr_in6)) < 0)
                return -errno;
        if (listen(fd, SERVER_LISTEN_BACKLOG) < 0)
                return -errno;
        if (getsockname(fd, (struct sockaddr *)&addr, &addr_len) < 0)
                return -errno;
        s->bound_port =
                ntohs(addr.ss_family == AF_INET ? ((struct sockaddr_in *)&addr)->sin_port
                                                : ((struct sockaddr_in6 *)&addr)->sin6_port);

        /* From here on the loop holds our handles, and the owner must close the server. h2o's
         * context brings timers and an async handle; the async keeps the loop alive until
         * http_server_close() (like the listener would). */
        s->is_started = true;
        h2o_context_init(&s->context, s->loop, &s->globalconf);
        s->has_context = true;
        s->accept_ctx = (h2o_accept_ctx_t){
                .ctx = &s->context,
                .hosts = s->globalconf.hosts,
                .ssl_ctx = s->ssl_ctx,
        };
        http_guard_start(s);

        (void)uv_tcp_init(s->loop, &s->listener);
        s->listener.data = s;
        s->handles.n_open++;
        k = uv_tcp_open(&s->listener, fd);
        if (k < 0) {
                uv_close((uv_handle_t *)&s->listener, server_on_handle_closed);
                return k;
        }
        TAKE_FD(fd);
        /* listen(2) again on a listening socket only updates the backlog. */
        k = uv_listen((uv_stream_t *)&s->listener, SERVER_LISTEN_BACKLOG, server_on_connection);
        if (k < 0) {
                uv_close((uv_handle_t *)&s->listener, server_on_handle_closed);
                return k;
        }
        s->is_listening = true;

        log_info("listening address=%s port=%" PRIu16 " tls=%s mtls=%s max-connections=%" PRIu32
                 " max-body-bytes=%" PRIu64 " max-buffered-bytes=%" PRIu64
                 " idle-timeout-ms=%" PRIu32 " header-timeout-ms=%" PRIu32
                 " body-timeout-ms=%" PRIu32,
                 s->listen_address, s->bound_port, s->ssl_ctx ? "yes" : "no",
                 s->ssl_ctx && SSL_CTX_get_verify_mode(s->ssl_ctx) != SSL_VERIFY_NONE ? "yes"
                                                                                      : "no",
                 s->max_connections, s->max_body_bytes, s->max_buffered_bytes, s->idle_timeout_ms,
                 s->header_timeout_ms, s->body_timeout_ms);
        return 0;
}

uint16_t http_server_port(const HttpServer *s) {
        return s->bound_port;
}

void http_server_stop_accepting(HttpServer *s) {
        if (!s->is_listening)
                return;
        s->is_listening = false;
        s->is_stopping = true;
        uv_close((uv_handle_t *)&s->listener, server_on_handle_closed);
        /* HTTP/1.1 responses now say "Connection: close"; HTTP/2 connections get GOAWAY. */
        h2o_context_request_shutdown(&s->context);
}

/* h2o_context_dispose() ends with uv_run(loop, UV_RUN_NOWAIT) to finish its timers' closes: a
 * nested uv_run from inside a loop callback, which libuv forbids. This is its body without
 * that, with the timers closed through our own counted callback instead. Runs only after every
 * connection is gone, when no h2o timeout entry can be linked any more. */
static void server_context_dispose(HttpServer *s) {
        h2o_context_t *ctx = &s->context;
        h2o_timeout_t *timeouts[] = {
                &ctx->zero_timeout,
                &ctx->one_sec_timeout,
                &ctx->hundred_ms_timeout,
                &ctx->handshake_timeout,
                &ctx->http1.req_timeout,
                &ctx->http2.idle_timeout,
                &ctx->http2.graceful_shutdown_timeout,
                &ctx->proxy.io_timeout,
        };

        /* stop_accepting's second GOAWAY may still be scheduled. */
        if (h2o_timeout_is_linked(&ctx->http2._graceful_shutdown_timeout))
                h2o_timeout_unlink(&ctx->http2._graceful_shutdown_timeout);

        for (size_t i = 0; s->globalconf.hosts[i]; i++) {
                h2o_hostconf_t *hostconf = s->globalconf.hosts[i];

                for (size_t j = 0; j < hostconf->paths.size; j++)
                        h2o_context_dispose_pathconf_context(ctx, &hostconf->paths.entries[j]);
                h2o_context_dispose_pathconf_context(ctx, &hostconf->fallback_path);
        }
        free(ctx->_pathconfs_inited.entries);
        free(ctx->_module_configs);

        for (size_t i = 0; i < ELEMENTSOF(timeouts); i++) {
                assert(h2o_linklist_is_empty(&timeouts[i]->_entries));
                timeouts[i]->_backend.timer.data = s;
                uv_close((uv_handle_t *)&timeouts[i]->_backend.timer, server_on_handle_closed);
                s->handles.n_open++;
        }

        h2o_filecache_destroy(ctx->filecache);
        ctx->filecache = NULL;
        for (size_t i = 0; i < ctx->storage.size; i++)
                if (ctx->storage.entries[i].dispose)
                        ctx->storage.entries[i].dispose(ctx->storage.entries[i].data);
        free(ctx->storage.entries);
        h2o_multithread_unregister_receiver(ctx->queue, &ctx->receivers.hostinfo_getaddr);
        h2o_multithread_destroy_queue(ctx->queue);
        if (ctx->_timestamp_cache.value)
                h2o_mem_release_shared(ctx->_timestamp_cache.value);
}

static void server_on_close_idle_closed(uv_handle_t *handle) {
        HttpServer *s = handle->data;

        s->is_closed = true;
        if (s->close_done)
                s->close_done(s->close_userdata);
}

static void server_maybe_finish(HttpServer *s) {
        if (!s->is_closing || s->is_closed || s->is_close_idle_closing)
                return;
        if (s->n_conns == 0) {
                /* Nothing left to wake or to force. */
                http_guard_stop(s);
                if (s->has_close_timer) {
                        s->has_close_timer = false;
                        uv_close((uv_handle_t *)&s->close_timer, server_on_handle_closed);
                }
        }
        /* Connections, refused connections, watches and the listener go first. */
        if (s->handles.n_open > 0)
                return;
        if (s->has_context) {
                /* No connection is left, so no h2o object can still use the context. */
                s->has_context = false;
                server_context_dispose(s);
                return;
        }

        /* h2o closes its queue's async handle without a callback we could count. A handle
         * closed from inside a close callback completes only in the next loop turn, after the
         * whole current batch, which includes that async handle. */
        s->is_close_idle_closing = true;
        (void)uv_idle_init(s->loop, &s->close_idle);
        s->close_idle.data = s;
        uv_close((uv_handle_t *)&s->close_idle, server_on_close_idle_closed);
}

/* A connection still open at the deadline waits for something neither shutdown(2) nor
 * http_guard_wake() reaches. What is always safe is what a reset peer does to it, which h2o
 * must handle in any state: libuv refusing writes and the read failing. h2o then closes it
 * through its own path; nothing of h2o's is freed behind its back. */
static void server_on_close_deadline(uv_timer_t *timer) {
        HttpServer *s = timer->data;
        HttpConn *next;

        log_warning("connections=%zu still open %u ms after the server began to close, "
                    "forcing them shut",
                    s->n_conns, (unsigned)SERVER_CLOSE_DEADLINE_MS);
        for (HttpConn *c = s->conns; c; c = next) {
                next = c->next;
                http_guard_force_close(c);
        }
}

void http_server_close(HttpServer *s, void (*done)(void *userdata), void *userdata) {
        assert(!s->is_closing);

        s->is_closing = true;
        s->close_done = done;
        s->close_userdata = userdata;

        http_guard_stop_limits(s);
        if (s->has_context) {
                http_server_stop_accepting(s);

                /* Answer (for nobody) every request still out, after its gone callback: h2o frees
                 * a request only once a response is on its way. */
                while (s->requests)
                        http_request_abandon(s->requests, /* is_shutdown= */ true);

                /* shutdown(2) wakes whatever h2o waits for on each connection (a read gets EOF,
                 * a write EPIPE), and h2o then closes it through server_on_conn_closed(). */
                for (HttpConn *c = s->conns; c; c = c->next) {
                        uv_os_fd_t fd;

                        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0)
                                (void)shutdown(fd, SHUT_RDWR);
                }
                /* Those h2o can no longer hear it on (see guard.c). */
                http_guard_wake(s);

                (void)uv_timer_init(s->loop, &s->close_timer);
                s->close_timer.data = s;
                s->handles.n_open++;
                s->has_close_timer = true;
                (void)uv_timer_start(&s->close_timer, server_on_close_deadline,
                                     SERVER_CLOSE_DEADLINE_MS, SERVER_CLOSE_DEADLINE_MS);
        }

        server_maybe_finish(s);
}

HttpServer *http_server_free(HttpServer *s) {
        if (!s)
                return NULL;
        /* A started server still has handles on the loop until its close completed. */
        assert(!s->is_started || s->is_closed);

        http_router_deinit(&s->router);
        http_peers_deinit(&s->peers);
        SSL_CTX_free(s->ssl_ctx);
        if (s->globalconf.hosts)
                h2o_config_dispose(&s->globalconf);
        free(s->listen_address);
        free(s);
        return NULL;
}

void http_server_set_metrics(HttpServer *s, Metrics *metrics) {
        s->stats.metrics = metrics;
}
