/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/http/: the layouts of HttpServer and HttpRequest and the calls between
 * server.c (listener, connections, h2o context), request.c (HttpRequest, client-gone watch),
 * router.c (route table, dispatch) and reply.c (responses, the JSON error shape), and the
 * services they share below them: handles.c (the open handle count), stats.c (answers counted
 * and timed), ratelimit.c (repeated warnings) and percent.c (percent-decoding, pure).
 *
 * Calls go one way, down this list: server.c; guard.c; router.c; reply.c; request.c; peers.c,
 * tls.c, handles.c, stats.c, ratelimit.c, percent.c. */
#pragma once

#include <h2o.h>
#include <stdbool.h>
#include <uv.h>

#include "util/error.h"

#include "http/http.h"
#include "http/percent.h"
#include "http/router.h"
#include "metrics/metrics.h"

typedef struct HttpRoute {
        char *method;
        char *pattern;
        size_t n_params;
        HttpHandler handler;
        void *userdata;
} HttpRoute;

/* Embedded in HttpServer; owns the route strings. */
typedef struct HttpRouter {
        HttpRoute *routes;
        size_t n_routes;
} HttpRouter;

/* One client address and what it holds. Owned by the server's HttpPeers; freed when its last
 * connection and its last request are gone. */
typedef struct HttpPeer {
        struct HttpPeer *next; /* in its bucket */
        uint8_t addr[16];      /* IPv6, or IPv4 mapped into IPv6 */
        uint32_t n_conns;
        uint32_t n_requests; /* in flight */
} HttpPeer;

#define HTTP_PEERS_N_BUCKETS 1024

/* Embedded in HttpServer. */
typedef struct HttpPeers {
        HttpPeer *buckets[HTTP_PEERS_N_BUCKETS];
        size_t n_peers;
} HttpPeers;

/* Where an HTTP/1.1 connection is in receiving a request, as the guard (guard.c) last saw it. */
typedef enum HttpConnPhase {
        HTTP_CONN_PHASE_NONE,    /* kept alive between requests, or the request is handled */
        HTTP_CONN_PHASE_HEADERS, /* waiting for the rest of the headers */
        HTTP_CONN_PHASE_BODY,    /* headers in, waiting for the rest of the body */
} HttpConnPhase;

/* One accepted TCP connection. Owned by the server; the uv handle is handed to h2o, whose socket
 * close ends in server_on_conn_closed(), which frees it. */
typedef struct HttpConn {
        uv_tcp_t tcp;
        HttpServer *server;
        struct HttpConn *prev, *next;
        h2o_socket_t *sock;         /* h2o's, valid until server_on_conn_closed() */
        HttpPeer *peer;             /* counts this connection */
        uint64_t n_requests;        /* requests h2o handed us on it (server_on_req) */
        uint64_t accepted_ms;       /* loop time of the accept */
        uv_shutdown_t shutdown_req; /* http_guard_force_close() */
        bool is_shut_down;          /* shutdown_req is in use */
        /* guard.c's view, HTTP/1.1 only */
        uint64_t phase_n_requests;
        uint64_t phase_since_ms;
        HttpConnPhase phase;
        bool is_http2;
        bool is_cut; /* the guard cut it; h2o closes it soon */
} HttpConn;

/* Watches a connection h2o does not read while a request is out (HTTP/1.1). Owned by its request
 * until the request ends; then closing, and freed by its own close callback. */
typedef struct HttpGoneWatch {
        uv_poll_t poll;
        int fd; /* our dup of the connection's socket */
        HttpServer *server;
        HttpRequest *req; /* NULL once detached */
} HttpGoneWatch;

struct HttpRequest {
        HttpServer *server;
        h2o_req_t *req;
        struct HttpRequest *prev, *next; /* in server->requests while waiting for a reply */
        const char *method;              /* NUL-terminated copy in the request pool */
        Slice path;                      /* raw, without the query */
        Slice query;                     /* raw, after '?'; ptr NULL without one */
        const char **params;
        size_t n_params;
        HttpGoneCallback gone_cb;
        void *gone_userdata;
        HttpGoneWatch *watch;
        HttpPeer *peer; /* counts this request in flight until it is disposed; may be NULL */
        const HttpRoute *route; /* the route that took it (the router's), NULL if none did */
        uint64_t started_ns;    /* when it was dispatched, for its duration metric */
        char *reply_body;       /* malloc'd, freed with the request */
        bool is_linked;
        bool is_replied;
        bool is_gone;
};

/* Lets a warning that can repeat for every connection through once per interval (ratelimit.c).
 * Embedded in its owner, one per kind of warning. */
typedef struct HttpRateLimit {
        uint64_t next_ms;
        uint64_t n_suppressed;
} HttpRateLimit;

#define HTTP_RATELIMIT_INTERVAL_MS 10000

/* The server's uv handles not yet through their close callback (handles.c). Embedded in
 * HttpServer. */
typedef struct HttpHandles {
        size_t n_open;
        /* Called after each close callback: the server's close waits for the count to reach 0
         * and decides what to close next (server.c). A function pointer because the files that
         * close handles lie below server.c and must not call up into it. */
        void (*on_closed)(void *userdata);
        void *userdata;
} HttpHandles;

/* Where answers are counted (stats.c). Embedded in HttpServer. */
typedef struct HttpStats {
        Metrics *metrics; /* borrowed, may be NULL: answers counted by status code */
} HttpStats;

typedef struct HttpErrorFilter {
        h2o_filter_t super;
        HttpServer *server;
} HttpErrorFilter;

typedef struct HttpRouteHandler {
        h2o_handler_t super;
        HttpServer *server;
} HttpRouteHandler;

struct HttpServer {
        uv_loop_t *loop;
        HttpStats stats;
        char *listen_address;
        uint16_t port; /* as configured */
        uint16_t bound_port;
        uint64_t max_body_bytes;
        uint32_t max_connections;
        uint32_t idle_timeout_ms;
        uint64_t max_buffered_bytes;          /* 0: no cap */
        uint32_t max_connections_per_address; /* 0: no limit */
        uint32_t max_requests_per_address;    /* 0: no limit */
        uint32_t header_timeout_ms;           /* 0: none but h2o's */
        uint32_t body_timeout_ms;             /* 0: none but h2o's */
        SSL_CTX *ssl_ctx;                     /* owned; NULL: cleartext */

        HttpRouter router;
        HttpPeers peers;

        h2o_globalconf_t globalconf;
        h2o_context_t context;
        h2o_accept_ctx_t accept_ctx;

        uv_tcp_t listener;
        uv_idle_t close_idle; /* closed at once by a close that has nothing else to wait for */
        HttpConn *conns;
        size_t n_conns;
        HttpRequest *requests;     /* waiting for a reply */
        HttpRequest *dispatching;  /* the request inside its handler right now, or NULL */
        HttpHandles handles;       /* uv handles of ours not yet through their close callback */
        uv_check_t buffer_check;   /* refused I/O and the total buffered bytes, once per loop
                                    * turn (guard.c) */
        uv_timer_t guard_timer;    /* header and body timeouts (guard.c) */
        uv_timer_t close_timer;    /* the close deadline: forces connections still open shut */
        uint64_t n_buffered_bytes; /* as of the last check */

        HttpRateLimit refuse_ratelimit;
        HttpRateLimit accept_ratelimit;
        HttpRateLimit watch_ratelimit;
        HttpRateLimit reply_ratelimit;
        HttpRateLimit peer_ratelimit;
        HttpRateLimit buffer_ratelimit;
        HttpRateLimit timeout_ratelimit;

        bool is_started;
        bool has_context;
        bool has_guard;       /* guard_timer open, limits enforced */
        bool has_guard_check; /* buffer_check open */
        bool has_close_timer;
        bool is_listening;
        bool is_stopping; /* stop_accepting() was called */
        bool is_closing;
        bool is_closed;
        bool is_close_idle_closing;
        void (*close_done)(void *userdata);
        void *close_userdata;
};

/* router.c */
void http_router_deinit(HttpRouter *router);
int http_router_add(HttpRouter *router, const char *method, const char *pattern,
                    HttpHandler handler, void *userdata);
/* Finds the route and calls its handler, or replies 400/404/405 itself. */
void http_router_dispatch(const HttpRouter *router, HttpRequest *r);

/* request.c */
/* Wraps an h2o request in an HttpRequest living in its pool (freed with it). */
HttpRequest *http_request_new(HttpServer *s, h2o_req_t *req);
/* Starts watching for the client going away when h2o itself is not reading the connection. */
void http_request_watch(HttpRequest *r);
/* Counts the request in flight for `peer` until h2o disposes it. */
void http_request_count_peer(HttpRequest *r, HttpPeer *peer);
/* Marks the request answered: stops the watch and leaves server->requests. */
void http_request_end(HttpRequest *r);
/* The client is gone or (is_shutdown) the server closes: calls the gone callback, then makes
 * h2o release the request. */
void http_request_abandon(HttpRequest *r, bool is_shutdown);

/* handles.c */
/* Called from each close callback of a counted handle: one fewer open, then on_closed. */
void http_handles_closed(HttpHandles *h);

/* stats.c */
/* Counts one answer in icecommit_http_requests_total{code}. */
void http_stats_count_reply(HttpStats *st, int status);
/* Times one answer in icecommit_http_request_duration_seconds{method,route,code}: the route's
 * pattern, never the raw path or method (bounded labels); "other" outside the routes (route
 * NULL). started_ns is the request's now_monotonic_ns() at dispatch. */
void http_stats_time_reply(HttpStats *st, const HttpRoute *route, uint64_t started_ns, int status);

/* ratelimit.c */
/* True when a rate-limited message may be logged now; then *ret_n_suppressed holds how many
 * were dropped since the last one. */
bool http_ratelimit_test(HttpRateLimit *rl, uv_loop_t *loop, uint64_t *ret_n_suppressed);

/* peers.c */
/* The peer of a socket address (AF_INET or AF_INET6), created with no counts. NULL: out of
 * memory or another family (e.g. a socket without a peer). */
HttpPeer *http_peers_get(HttpPeers *peers, const struct sockaddr *addr);
/* Frees `peer` once it counts nothing. */
void http_peers_release(HttpPeers *peers, HttpPeer *peer);
/* Frees every peer (the server is gone). */
void http_peers_deinit(HttpPeers *peers);
/* The address as text, for messages. */
void http_peer_format(const HttpPeer *peer, char *buf, size_t len);

/* guard.c: the limits h2o 2.2.5 has no knob for (see server.c) */
/* Starts the buffer check and the timeout timer (their handles count in s->handles). */
void http_guard_start(HttpServer *s);
/* Stops enforcing the limits and closes the timer; the check goes on waking refused I/O. */
void http_guard_stop_limits(HttpServer *s);
/* Closes both handles (no connection is left to wake). */
void http_guard_stop(HttpServer *s);
/* Gives every connection whose h2o socket waits for a write or read libuv refused (h2o 2.2.5
 * ignores the refusal; libuv refuses both after a failed read) the error libuv gives a failed
 * request, so that h2o closes it. Also runs from the check, once per loop turn. */
void http_guard_wake(HttpServer *s);
/* The close deadline's last resort: makes libuv refuse further writes (uv_shutdown()) and
 * gives h2o a failed read if it reads, as a reset peer would: h2o closes the connection
 * through its own path, whatever it was doing. */
void http_guard_force_close(HttpConn *c);
/* The RFC 9112 section 6.3 check on a raw HTTP/1.1 header block: 0, or -EBADMSG when it has
 * both Content-Length and Transfer-Encoding or two different Content-Length values (then
 * *ret_reason says which), -EAGAIN when the block is not complete, -EINVAL when it does not
 * parse. */
int http_guard_check_framing(const char *buf, size_t len, const char **ret_reason);
/* The connection a request came on, or NULL (h2o's own requests). */
HttpConn *http_guard_conn_of(h2o_conn_t *conn);
HttpConn *http_guard_conn_of_sock(h2o_socket_t *sock);

/* tls.c */
/* Builds the server's TLS context: certificate chain and key (checked to match), TLS 1.2 at
 * least, ALPN h2 and http/1.1, and with a client CA file a required client certificate.
 * -EINVAL with *error naming the file and OpenSSL's reason. */
int http_tls_new(const HttpConfig *config, SSL_CTX **ret_ctx, Error *error);

/* reply.c */
/* Registers the filter that rewrites the errors h2o answers on its own (413 while reading a
 * body, 404 outside every path, 400, 417) into the JSON error shape. */
void http_reply_filter_register(HttpServer *s, h2o_pathconf_t *pathconf);
/* The "type" of the JSON error h2o's own errors get, e.g. "not-found" for 404. */
const char *http_reply_status_type(int status);
