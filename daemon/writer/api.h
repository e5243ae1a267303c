/* SPDX-License-Identifier: Apache-2.0 */
/* The writer API routes (proto/openapi.yaml): HTTP in, CommitRequest out to the commit engine
 * through WriterHooks; the engine answers through writer_request_reply*(). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "auth/auth.h"
#include "http/http.h"
#include "util/buf.h"
#include "writer/request.h"

/* Where the answer to a request that did not come over HTTP goes (the engine's unit tests):
 * the same headers, status and body an HTTP writer would get. */
typedef struct WriterReplySink {
        void (*add_header)(const char *name, const char *value, void *userdata);
        /* Called at most once; the body (NULL when out of memory) is the sink's. */
        void (*reply)(int status, json_t *body, void *userdata);
} WriterReplySink;

/* One writer call waiting for its commit. Owned by the commit engine once submitted. */
typedef struct WriterRequest {
        HttpRequest *http;           /* NULL once answered or once the client went away */
        const WriterReplySink *sink; /* instead of http: NULL once answered or gone */
        void *sink_userdata;
        CommitRequest *request;
        uint64_t accepted_ns; /* CLOCK_MONOTONIC when the request arrived */
        /* Called once when the client goes away before its answer (http is NULL by then),
         * with gone_userdata; it may free w. NULL: w stays until answered. Set by its owner. */
        void (*gone)(struct WriterRequest *w, void *userdata);
        void *gone_userdata;
} WriterRequest;

typedef struct WriterHooks {
        /* Takes ownership of w; must eventually answer it with writer_request_reply*(). */
        void (*submit)(WriterRequest *w, void *userdata);
        /* Answers GET /v1/commits/{key} from memory: sets *ret_status and returns the body,
         * serialized JSON (owned, malloc'ed; its length in *ret_len), NULL when out of memory.
         * Keys are scoped by table: namespace_param and table (both NULL when the query names
         * none) pick the table; without them a key used on several tables is ambiguous (409).
         * With authentication on, `caller` (borrowed for the call) is who asks: only its own
         * keys, on tables it may read, are found; others are unknown. */
        char *(*lookup)(const char *key, const char *namespace_param, const char *table,
                        const AuthToken *caller, int *ret_status, size_t *ret_len, void *userdata);
        /* The same from the history of table `table` in `namespace_param` (0x1F-separated
         * levels), for a key the daemon does not remember: takes ownership of w and answers it.
         * `principal` (NULL when auth is off) is whose key it is. */
        void (*lookup_history)(WriterRequest *w, const char *key, const char *namespace_param,
                               const char *table, const char *principal, void *userdata);
        /* Whether commits can be served (GET /readyz): the catalog configuration is loaded,
         * storage takes writes, the daemon is not stopping. When not, *ret_reason says why
         * (borrowed until the handler returns); with `with_details` false, without the text of
         * a storage error (it names a table's file). */
        bool (*is_ready)(bool with_details, const char **ret_reason, void *userdata);
        /* Appends the Prometheus exposition (GET /metrics). */
        int (*metrics)(Buf *out, void *userdata);
} WriterHooks;

/* The writer API's routes; owned by the daemon, which frees it after the HTTP server. */
typedef struct WriterApi WriterApi;

/* Registers the routes on `server` (before it starts). `auth` (borrowed; NULL: no
 * authentication) checks each request first. Returns 0, -ENOMEM or the router's error. */
int writer_api_new(HttpServer *server, Auth *auth, const CommitRequestLimits *limits,
                   const WriterHooks *hooks, void *userdata, WriterApi **ret_api);
/* Replaces the request limits (a configuration reload); requests already parsed keep theirs. */
void writer_api_set_limits(WriterApi *api, const CommitRequestLimits *limits);
WriterApi *writer_api_free(WriterApi *api);
DEFINE_CLEANUP_FUNC(WriterApi, writer_api_free);

/* A request that answers through `sink` (static) instead of HTTP, accepted now: takes
 * `request` (freed on failure too). Returns 0 or -ENOMEM. */
int writer_request_new_take(CommitRequest *request, const WriterReplySink *sink, void *userdata,
                            WriterRequest **ret);
/* Answers the writer (when still connected). The body is stolen. Safe to call once. */
void writer_request_reply(WriterRequest *w, int status, json_t *body);
/* The writer API's error document (proto/openapi.yaml, Error) for an answer the engine gives
 * and keeps (replays of a key send the same bytes): the engine never builds HTTP itself. NULL
 * when out of memory. */
json_t *writer_error_body(int status, const char *type, const char *message);
/* The same with a body serialized already (copied): what the engine sends every writer of a
 * key, built once. */
void writer_request_reply_text(WriterRequest *w, int status, Slice json);
void writer_request_reply_error(WriterRequest *w, int status, const char *type, const char *fmt,
                                ...) _printf_(4, 5);
/* The client went away: forgets its HTTP request, then calls w->gone (which may free w). How
 * the handlers learn it from the HTTP layer, and how a test makes a sink's client leave. */
void writer_request_client_gone(WriterRequest *w);
/* Adds a header (e.g. Retry-After) to the pending answer. */
void writer_request_add_header(WriterRequest *w, const char *name, const char *value);
WriterRequest *writer_request_free(WriterRequest *w);
/* Answers the writer as writer_request_reply*() do, then frees w: the end of a request the
 * engine does not keep. Return NULL. */
WriterRequest *writer_request_finish(WriterRequest *w, int status, json_t *body);
WriterRequest *writer_request_finish_error(WriterRequest *w, int status, const char *type,
                                           const char *fmt, ...) _printf_(4, 5);
DEFINE_CLEANUP_FUNC(WriterRequest, writer_request_free);
