/* SPDX-License-Identifier: Apache-2.0 */
/* Writer API handlers: parse, validate, hand over to the commit engine; health and metrics. */
#define LOG_MODULE "writer"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/log.h"
#include "writer/api.h"

struct WriterApi {
        Auth *auth;
        CommitRequestLimits limits;
        WriterHooks hooks;
        void *userdata;
};

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void writer_on_gone(HttpRequest *r, void *userdata) {
        writer_request_client_gone(userdata);
}

void writer_request_client_gone(WriterRequest *w) {
        /* A commit goes on (the writer can fetch the outcome with GET /v1/commits/{key}); its
         * owner decides what else goes with the client. */
        w->http = NULL;
        w->sink = NULL;
        if (w->gone)
                w->gone(w, w->gone_userdata);
}

static void writer_handle_commit(HttpRequest *r, void *userdata) {
        WriterApi *api = userdata;
        _cleanup_(request_freep) CommitRequest *request = NULL;
        const AuthToken *caller;
        WriterRequest *w;
        Error error = { 0 };
        int rr;

        if (auth_check(api->auth, r, AUTH_RIGHT_COMMIT, http_request_param(r, 0),
                       http_request_param(r, 1), &caller) < 0)
                return;
        rr = request_parse(http_request_param(r, 0), http_request_param(r, 1), http_request_body(r),
                           &api->limits, &request, &error);
        if (rr == 0 && caller)
                rr = request_set_principal(request, caller->principal);
        if (rr == -ENOMEM) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        /* A location longer than every reader should have to open: wrong for any table. */
        if (rr == -ENAMETOOLONG) {
                http_reply_error(r, 422,
                                 strstr(error.message, "'data-files'") ? "invalid-data-file"
                                                                       : "invalid-manifest",
                                 "%s", error.message);
                return;
        }
        if (rr == -E2BIG) {
                http_reply_error(r, 413,
                                 strstr(error.message, "'snapshot-properties'")
                                         ? "snapshot-properties-too-large"
                                 : strstr(error.message, "'data-files'") ? "too-many-data-files"
                                                                         : "too-many-manifests",
                                 "%s", error.message);
                return;
        }
        if (rr < 0) {
                http_reply_error(r, 400, "bad-request", "%s", error.message);
                return;
        }

        w = calloc(1, sizeof(*w));
        if (!w) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        w->http = r;
        w->request = TAKE_PTR(request);
        w->accepted_ns = now_ns();
        http_request_on_gone(r, writer_on_gone, w);
        api->hooks.submit(w, api->userdata);
}

/* A query value as a NUL-terminated string; NULL when absent, empty or holding a NUL. */
static char *writer_query_string(HttpRequest *r, const char *name) {
        Slice v = http_request_query(r, name);

        if (!v.ptr || v.len == 0 || memchr(v.ptr, 0, v.len))
                return NULL;
        return strndup((const char *)v.ptr, v.len);
}

static void writer_handle_status(HttpRequest *r, void *userdata) {
        WriterApi *api = userdata;
        const char *key = http_request_param(r, 0);
        _cleanup_(freep) char *namespace = NULL, *table = NULL, *principal = NULL;
        const AuthToken *caller;
        WriterRequest *w;
        _cleanup_(freep) char *body = NULL;
        size_t len = 0;
        int status = 404;

        namespace = writer_query_string(r, "namespace");
        table = writer_query_string(r, "table");
        /* Naming a table the caller may not read is refused; without one, keys the caller may
         * not read are simply not found (same answer as an unknown key: no oracle). */
        if (auth_check(api->auth, r, AUTH_RIGHT_READ, namespace && table ? namespace : NULL,
                       namespace && table ? table : NULL, &caller) < 0)
                return;
        if (caller && !(principal = strdup(caller->principal))) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        if (!request_key_is_valid(key)) {
                http_reply_error(
                        r, 400, "bad-request",
                        "idempotency key must be 1 to 128 characters of A-Z a-z 0-9 . _ : -");
                return;
        }
        body = api->hooks.lookup(key, namespace && table ? namespace : NULL,
                                 namespace && table ? table : NULL, caller, &status, &len,
                                 api->userdata);
        if (!body) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        /* Not in memory (another daemon's commit, a restart, an eviction): with
         * ?namespace=&table= the table's history answers. */
        if (status != 404 || !namespace || !table) {
                http_reply_text(r, status, "application/json", slice_make(body, len));
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        w->http = r;
        http_request_on_gone(r, writer_on_gone, w);
        api->hooks.lookup_history(w, key, namespace, table, principal, api->userdata);
}

static void writer_handle_healthz(HttpRequest *r, void *userdata) {
        WriterApi *api = userdata;
        const AuthToken *caller;

        if (auth_check(api->auth, r, AUTH_RIGHT_HEALTH, /* namespace_param= */ NULL,
                       /* table= */ NULL, &caller) < 0)
                return;
        http_reply_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static void writer_handle_readyz(HttpRequest *r, void *userdata) {
        WriterApi *api = userdata;
        const char *reason = "not ready";
        const AuthToken *caller;

        if (auth_check(api->auth, r, AUTH_RIGHT_HEALTH, /* namespace_param= */ NULL,
                       /* table= */ NULL, &caller) < 0)
                return;
        /* With authentication on, an open /readyz (load balancers probe it without tokens)
         * says which condition failed but not a storage error's text, which names a table's
         * file; callers holding the right `health` get it. */
        if (api->hooks.is_ready(!auth_is_enabled(api->auth) || caller, &reason, api->userdata))
                http_reply_json(r, 200, json_pack("{s:s}", "status", "ready"));
        else
                http_reply_error(r, 503, "not-ready", "%s", reason);
}

static void writer_handle_metrics(HttpRequest *r, void *userdata) {
        WriterApi *api = userdata;
        const AuthToken *caller;

        if (auth_check(api->auth, r, AUTH_RIGHT_METRICS, /* namespace_param= */ NULL,
                       /* table= */ NULL, &caller) < 0)
                return;
        _cleanup_(buf_deinitp) Buf b;
        buf_init(&b, 16u << 20);
        if (api->hooks.metrics(&b, api->userdata) < 0) {
                http_reply_error(r, 500, "internal", "cannot render metrics");
                return;
        }
        http_reply_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", buf_slice(&b));
}

void writer_api_set_limits(WriterApi *api, const CommitRequestLimits *limits) {
        api->limits = *limits;
}

int writer_api_new(HttpServer *server, Auth *auth, const CommitRequestLimits *limits,
                   const WriterHooks *hooks, void *userdata, WriterApi **ret_api) {
        static const struct {
                const char *method, *pattern;
                HttpHandler handler;
        } routes[] = {
                { "POST", "/v1/namespaces/{}/tables/{}/commits", writer_handle_commit },
                { "GET", "/v1/commits/{}", writer_handle_status },
                { "GET", "/healthz", writer_handle_healthz },
                { "GET", "/readyz", writer_handle_readyz },
                { "GET", "/metrics", writer_handle_metrics },
        };
        _cleanup_(writer_api_freep) WriterApi *api = NULL;
        int r;

        api = calloc(1, sizeof(*api));
        if (!api)
                return -ENOMEM;
        *api = (WriterApi){
                .auth = auth, .limits = *limits, .hooks = *hooks, .userdata = userdata
        };
        for (size_t i = 0; i < ELEMENTSOF(routes); i++) {
                r = http_server_route(server, routes[i].method, routes[i].pattern,
                                      routes[i].handler, api);
                if (r < 0)
                        return r;
        }
        *ret_api = TAKE_PTR(api);
        return 0;
}

WriterApi *writer_api_free(WriterApi *api) {
        free(api);
        return NULL;
}

int writer_request_new_take(CommitRequest *request, const WriterReplySink *sink, void *userdata,
                            WriterRequest **ret) {
        WriterRequest *w;

        w = calloc(1, sizeof(*w));
        if (!w) {
                request_free(request);
                return -ENOMEM;
        }
        *w = (WriterRequest){
                .sink = sink, .sink_userdata = userdata, .request = request, .accepted_ns = now_ns()
        };
        *ret = w;
        return 0;
}

/* The error document http_reply_error() sends, for a sink. */
static void writer_sink_reply_error(WriterRequest *w, int status, const char *type,
                                    const char *message) {
        const WriterReplySink *sink = TAKE_PTR(w->sink);

        sink->reply(status, http_error_body(status, type, message, strlen(message)),
                    w->sink_userdata);
}

json_t *writer_error_body(int status, const char *type, const char *message) {
        return http_error_body(status, type, message, strlen(message));
}

void writer_request_reply(WriterRequest *w, int status, json_t *body) {
        if (w->sink) {
                TAKE_PTR(w->sink)->reply(status, body, w->sink_userdata);
                return;
        }
        if (!w->http) {
                json_decref(body);
                return;
        }
        http_reply_json(w->http, status, body);
        w->http = NULL;
}

void writer_request_reply_text(WriterRequest *w, int status, Slice json) {
        json_t *body;

        if (w->sink) {
                /* Sinks (the engine's tests) take documents: what a client would parse. */
                body = json_loadb((const char *)json.ptr, json.len, 0, NULL);
                TAKE_PTR(w->sink)->reply(status, body, w->sink_userdata);
                return;
        }
        if (!w->http)
                return;
        http_reply_text(w->http, status, "application/json", json);
        w->http = NULL;
}

static void writer_request_vreply_error(WriterRequest *w, int status, const char *type,
                                        const char *fmt, va_list ap) {
        char message[2048];

        if (!w->http && !w->sink)
                return;
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        if (w->sink) {
                writer_sink_reply_error(w, status, type, message);
                return;
        }
        http_reply_error(w->http, status, type, "%s", message);
        w->http = NULL;
}

void writer_request_reply_error(WriterRequest *w, int status, const char *type, const char *fmt,
                                ...) {
        va_list ap;

        va_start(ap, fmt);
        writer_request_vreply_error(w, status, type, fmt, ap);
        va_end(ap);
}

WriterRequest *writer_request_finish(WriterRequest *w, int status, json_t *body) {
        writer_request_reply(w, status, body);
        return writer_request_free(w);
}

WriterRequest *writer_request_finish_error(WriterRequest *w, int status, const char *type,
                                           const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        writer_request_vreply_error(w, status, type, fmt, ap);
        va_end(ap);
        return writer_request_free(w);
}

void writer_request_add_header(WriterRequest *w, const char *name, const char *value) {
        if (w->sink)
                w->sink->add_header(name, value, w->sink_userdata);
        else if (w->http)
                http_reply_add_header(w->http, name, value);
}

WriterRequest *writer_request_free(WriterRequest *w) {
        if (!w)
                return NULL;
        /* A request freed unanswered (shutdown) still gets a definite answer. */
        if (w->http) {
                http_reply_error(w->http, 503, "shutting-down",
                                 "icecommitd is stopping; retry with the same key");
                w->http = NULL;
        }
        if (w->sink)
                writer_sink_reply_error(w, 503, "shutting-down",
                                        "icecommitd is stopping; retry with the same key");
        request_free(w->request);
        free(w);
        return NULL;
}
