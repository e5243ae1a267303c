/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/http/: the layouts of HttpServer and HttpRequest and the calls between
 * server.c (listener, connections, h2o context), request.c (HttpRequest, client-gone watch),
 * router.c (route table, dispatch) and reply.c (responses, the JSON error shape). */
#pragma once

#include <h2o.h>
#include <stdbool.h>
#include <uv.h>

#include "http/http.h"
#include "metrics/metrics.h"
#include "http/router.h"

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

/* One accepted TCP connection. Owned by the server; the uv handle is handed to h2o, whose socket
 * close ends in server_on_conn_closed(), which frees it. */
typedef struct HttpConn {
        uv_tcp_t tcp;
        HttpServer *server;
        struct HttpConn *prev, *next;
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
        char *reply_body; /* malloc'd, freed with the request */
        bool is_linked;
        bool is_replied;
        bool is_gone;
};

/* Lets a warning that can repeat for every connection through once per interval. */
typedef struct HttpRateLimit {
        uint64_t next_ms;
        uint64_t n_suppressed;
} HttpRateLimit;

#define HTTP_RATELIMIT_INTERVAL_MS 10000

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
        Metrics *metrics;           /* borrowed, may be NULL: answers counted by status code */
        char *listen_address;
        uint16_t port;     /* as configured */
        uint16_t bound_port;
        uint64_t max_body_bytes;
        uint32_t max_connections;
        uint32_t idle_timeout_ms;

        HttpRouter router;

        h2o_globalconf_t globalconf;
        h2o_context_t context;
        h2o_accept_ctx_t accept_ctx;

        uv_tcp_t listener;
        uv_idle_t close_idle; /* closed at once by a close that has nothing else to wait for */
        HttpConn *conns;
        size_t n_conns;
        HttpRequest *requests;      /* waiting for a reply */
        HttpRequest *dispatching;   /* the request inside its handler right now, or NULL */
        size_t n_handles;           /* uv handles of ours not yet through their close callback */

        HttpRateLimit refuse_ratelimit;
        HttpRateLimit accept_ratelimit;
        HttpRateLimit watch_ratelimit;
        HttpRateLimit reply_ratelimit;

        bool is_started;
        bool has_context;
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
/* Marks the request answered: stops the watch and leaves server->requests. */
void http_request_end(HttpRequest *r);
/* The client is gone or (is_shutdown) the server closes: calls the gone callback, then makes
 * h2o release the request. */
void http_request_abandon(HttpRequest *r, bool is_shutdown);

/* server.c */
/* Called when a watch's uv handle is closed, for the server's handle count. */
void http_server_handle_closed(HttpServer *s);
/* True when a rate-limited message may be logged now; then *ret_n_suppressed holds how many
 * were dropped since the last one. */
bool http_server_ratelimit_test(HttpRateLimit *rl, uv_loop_t *loop, uint64_t *ret_n_suppressed);

/* reply.c */
/* Registers the filter that rewrites the errors h2o answers on its own (413 while reading a
 * body, 404 outside every path, 400, 417) into the JSON error shape. */
void http_reply_filter_register(HttpServer *s, h2o_pathconf_t *pathconf);
/* The response that makes h2o release an abandoned request and close its connection: a JSON
 * 503 when the server shuts down (the client may still read it), else empty. */
void http_reply_abandoned(HttpRequest *r, bool is_shutdown);
/* The "type" of the JSON error h2o's own errors get, e.g. "not-found" for 404. */
const char *http_reply_status_type(int status);

/* Counts one answer in icecommit_http_requests_total{code}. */
void http_server_count_reply(HttpServer *s, int status);
