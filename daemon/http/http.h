/* SPDX-License-Identifier: Apache-2.0 */
/* The HTTP server of the writer API: HTTP/1.1 and cleartext HTTP/2 (h2c: prior knowledge and
 * "Upgrade: h2c") on libh2o, or with a certificate configured TLS only (HTTP/1.1 and h2 by
 * ALPN, optionally requiring client certificates), driven by the daemon's own uv_loop_t.
 * Routes requests by method and path pattern to handlers, which answer with JSON. Knows
 * nothing about Iceberg. Everything here runs on the loop thread. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "metrics/metrics.h"
#include "util/cleanup.h"
#include "util/slice.h"

/* Owned by the daemon; owns its listener, every client connection and every h2o handle. */
typedef struct HttpServer HttpServer;
/* Owned by the server (it lives in h2o's per-request memory). Valid until a reply was sent or
 * the gone callback returned; a handler keeps it at most that long. */
typedef struct HttpRequest HttpRequest;

/* Called once per matched request. The handler replies before returning or later, from any loop
 * callback, with exactly one http_reply_*() call. */
typedef void (*HttpHandler)(HttpRequest *req, void *userdata);
/* The client went away (or the server is closing) before the reply: the request is freed when
 * the callback returns, so the handler must forget it and never reply to it. */
typedef void (*HttpGoneCallback)(HttpRequest *req, void *userdata);

/* Creates a server bound to `loop` that is neither listening nor touching the loop yet. Copies
 * what it needs from `config`: max_body_bytes (larger bodies get 413), max_connections and
 * max_connections_per_address (more are accepted and closed at once, see server.c),
 * max_requests_per_address (more in flight get 429), max_buffered_bytes (bodies still arriving
 * over it are refused), header_timeout_ms and body_timeout_ms (slower requests are cut),
 * idle_timeout_ms (an idle connection is closed; for HTTP/1.1 it also bounds the time to
 * receive one whole request); a 0 in the new limits means none (as for tests). With
 * tls_certificate_file and tls_key_file it loads them now (and tls_client_ca_file): a bad one
 * is logged and gives -EINVAL. The process must ignore SIGPIPE, as for any libuv socket code.
 * Returns 0, -EINVAL or -ENOMEM. */
int http_server_new(uv_loop_t *loop, const HttpConfig *config, HttpServer **ret);
/* Counts every answer, by status code, in `metrics` (borrowed; must outlive the server). */
void http_server_set_metrics(HttpServer *s, Metrics *metrics);
/* Adds a route. `method` is an exact, case-sensitive token ("GET", "POST"); `pattern` is "/" or
 * "/"-separated segments, each a literal or "{}" for one path parameter, e.g.
 * "/v1/namespaces/{}/tables/{}/commits" (at most 8 parameters). A "{}" matches one non-empty
 * segment; the request path is matched before its query, literals after percent-decoding.
 * Routes are tried in the order added. Only before http_server_start(). Returns 0, -EINVAL (bad
 * method or pattern), -EEXIST (same method and pattern again), -EBUSY (started) or -ENOMEM. */
int http_server_route(HttpServer *s, const char *method, const char *pattern, HttpHandler handler,
                      void *userdata);
/* Binds config->listen_address (an IPv4 or IPv6 literal) and config->port (0 picks a free port)
 * and starts accepting. Returns 0 or -errno (-EADDRINUSE, -EINVAL for an address that is not a
 * literal, ...). Once called, whatever it returned, the server is released with
 * http_server_close() and only then http_server_free(). */
int http_server_start(HttpServer *s);
/* The port actually bound; 0 before a successful start. */
uint16_t http_server_port(const HttpServer *s);
/* For graceful shutdown: closes the listening socket (new connections are refused by the
 * kernel), asks HTTP/1.1 clients to close after their current response and sends HTTP/2 GOAWAY.
 * Requests already received can still be answered. Idempotent. */
void http_server_stop_accepting(HttpServer *s);
/* Closes the listener and every connection; each request still waiting for its reply gets its
 * gone callback. `done` is called once, from a later loop callback, when no handle of the server
 * is left on the loop. Call once. */
void http_server_close(HttpServer *s, void (*done)(void *userdata), void *userdata);
/* Frees a server that was never started, or whose close has completed. Accepts NULL; returns
 * NULL. */
HttpServer *http_server_free(HttpServer *s);
DEFINE_CLEANUP_FUNC(HttpServer, http_server_free);

/* The request method, e.g. "POST". */
const char *http_request_method(const HttpRequest *r);
/* The path as sent, still percent-encoded, without the query. */
Slice http_request_path(const HttpRequest *r);
/* The number of "{}" in the matched pattern, and the i-th parameter: percent-decoded (a '+'
 * stays a '+') and NUL-terminated. A parameter with a malformed escape or a %00 never reaches a
 * handler: the router answers 400. */
size_t http_request_n_params(const HttpRequest *r);
const char *http_request_param(const HttpRequest *r, size_t i);
/* The whole request body (received before the handler runs); len 0 when there is none. */
Slice http_request_body(const HttpRequest *r);
/* The first header with this name (case-insensitive); ptr NULL when absent. h2o consumes Host,
 * Content-Length, Transfer-Encoding, Expect and Upgrade of HTTP/1.1 requests: they are absent. */
Slice http_request_header(const HttpRequest *r, const char *name);
/* The first query parameter with this name, percent-decoded with '+' as a space (form
 * encoding); "?a" gives an empty value. ptr NULL when absent or malformed. The value may hold
 * NUL bytes: use len. Valid as long as the request. */
Slice http_request_query(const HttpRequest *r, const char *name);
/* Registers the callback for a client that goes away before the reply (replaces an earlier
 * one). Without one, such a request is dropped silently. */
void http_request_on_gone(HttpRequest *r, HttpGoneCallback cb, void *userdata);

/* Replies end the request: exactly one per request, never after the gone callback. */

/* Sends `body` (stolen, may not be NULL) as application/json. */
void http_reply_json(HttpRequest *r, int status, json_t *body);
/* Sends the one error shape {"error":{"code":status,"type":type,"message":"..."}}, also
 * application/json. `type` is one of the writer API's error types (ErrorBody.type in
 * proto/openapi.yaml, e.g. "queue-full"): a program switches on it, a person reads the message.
 * The router itself answers "bad-request" (400), "not-found" (404), "method-not-allowed" (405),
 * "body-too-large" (413) and, while closing, "shutting-down" (503). */
void http_reply_error(HttpRequest *r, int status, const char *type, const char *fmt, ...)
        _printf_(4, 5);
/* The error document http_reply_error() sends, for answers built before they are sent (the
 * commit engine's, which also go to every waiter on the key): message bytes that are not
 * UTF-8 become '?'. New reference; NULL when out of memory. */
json_t *http_error_body(int status, const char *type, const char *message, size_t message_len);
/* Sends `body` (copied) with the given Content-Type. */
void http_reply_text(HttpRequest *r, int status, const char *content_type, Slice body);
/* Adds a response header (copied), before the reply, e.g. Retry-After. A name or value holding
 * CR, LF or NUL is refused with a warning. */
void http_reply_add_header(HttpRequest *r, const char *name, const char *value);
