/* SPDX-License-Identifier: Apache-2.0 */
/* Responses: JSON and text replies, response headers, and the one error shape
 * {"error":{"code":N,"type":"...","message":"..."}}, also for the errors h2o answers on its own
 * (rewritten by a filter). Each request gets exactly one reply; client errors log at debug. */
#define LOG_MODULE "http"
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/http-internal.h"
#include "util/log.h"

/* Sent when even building an error failed, so that the client still gets the one shape. */
static const char oom_body[] = "{\"error\":{\"code\":503,\"type\":\"out-of-memory\","
                               "\"message\":\"out of memory, retry later\"}}";

/* HTTP/1.1 reason phrases (HTTP/2 sends none). */
static const char *status_reason(int status) {
        switch (status) {
        /* clang-format off */
        case 200: return "OK";
        case 201: return "Created";
        case 202: return "Accepted";
        case 204: return "No Content";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 403: return "Forbidden";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 409: return "Conflict";
        case 411: return "Length Required";
        case 413: return "Content Too Large";
        case 415: return "Unsupported Media Type";
        case 417: return "Expectation Failed";
        case 422: return "Unprocessable Content";
        case 429: return "Too Many Requests";
        case 500: return "Internal Server Error";
        case 502: return "Bad Gateway";
        case 503: return "Service Unavailable";
        case 504: return "Gateway Timeout";
        default:  return status < 400 ? "OK" : status < 500 ? "Client Error" : "Server Error";
                /* clang-format on */
        }
}

/* The error types are the writer API's (ErrorBody.type in proto/openapi.yaml). Only statuses
 * this module answers by itself need one. */
const char *http_reply_status_type(int status) {
        switch (status) {
        /* clang-format off */
        case 404: return "not-found";
        case 405: return "method-not-allowed";
        case 413: return "body-too-large";
        default:  return status < 500 ? "bad-request" : "internal";
                /* clang-format on */
        }
}

/* jansson refuses strings that are not UTF-8, and messages may quote client bytes: those are
 * replaced by '?' rather than losing the whole message. */
static json_t *message_string(const char *msg, size_t len) {
        _cleanup_(freep) char *copy = NULL;
        json_t *j;

        j = json_stringn(msg, len);
        if (j)
                return j;
        copy = malloc(len + 1);
        if (!copy)
                return NULL;
        for (size_t i = 0; i < len; i++)
                copy[i] = (uint8_t)msg[i] >= 0x20 && (uint8_t)msg[i] < 0x7f ? msg[i] : '?';
        return json_stringn(copy, len);
}

json_t *http_error_body(int status, const char *type, const char *message, size_t message_len) {
        _cleanup_(json_decrefp) json_t *error = NULL;
        json_t *root;

        error = json_object();
        root = json_object();
        if (!error || !root || json_object_set_new(error, "code", json_integer(status)) < 0 ||
            json_object_set_new(error, "type", json_string(type)) < 0 ||
            json_object_set_new(error, "message", message_string(message, message_len)) < 0 ||
            json_object_set(root, "error", error) < 0) {
                json_decref(root);
                return NULL;
        }
        return root;
}

/* Returns the error document as a malloc'd string, or NULL when out of memory. */
static char *error_body(int status, const char *type, const char *msg, size_t msg_len,
                        size_t *ret_len) {
        _cleanup_(json_decrefp) json_t *root = http_error_body(status, type, msg, msg_len);
        char *s;

        if (!root)
                return NULL;
        s = json_dumps(root, JSON_COMPACT);
        if (s)
                *ret_len = strlen(s);
        return s;
}

/* The one way out for every reply. `body` must stay valid for the request's life: it is
 * either `owned` (freed with the request) or static. */
static void reply_send(HttpRequest *r, int status, const char *content_type, const char *body,
                       size_t len, char *owned) {
        static h2o_generator_t generator = { /* proceed= */ NULL, /* stop= */ NULL };
        h2o_req_t *req = r->req;
        h2o_iovec_t buf = h2o_iovec_init(body, len);

        /* Replying twice, or after the gone callback, is a bug in the handler. */
        assert(!r->is_replied && !r->is_gone);
        assert(status >= 200 && status <= 599);

        http_request_end(r);
        http_stats_count_reply(&r->server->stats, status);
        http_stats_time_reply(&r->server->stats, r->route, r->started_ns, status);
        r->reply_body = owned;
        /* h2o decided keep-alive when the request arrived; once the server stops accepting,
         * every answer also ends its HTTP/1.1 connection. */
        if (r->server->is_stopping)
                req->http1_is_persistent = 0;

        req->res.status = status;
        req->res.reason = status_reason(status);
        req->res.content_length = len;
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE,
                       /* orig_name= */ NULL, content_type, strlen(content_type));
        h2o_start_response(req, &generator);
        /* A HEAD response announces the length but carries no body (h2o leaves that to us). */
        if (strcmp(r->method, "HEAD") == 0)
                h2o_send(req, /* bufs= */ NULL, 0, H2O_SEND_STATE_FINAL);
        else
                h2o_send(req, &buf, 1, H2O_SEND_STATE_FINAL);
}

static void reply_out_of_memory(HttpRequest *r) {
        uint64_t n_suppressed;

        if (http_ratelimit_test(&r->server->reply_ratelimit, r->server->loop, &n_suppressed))
                log_error("cannot build a reply: %s (%" PRIu64 " more suppressed), answering 503",
                          strerror(ENOMEM), n_suppressed);
        reply_send(r, 503, "application/json", oom_body, sizeof(oom_body) - 1,
                   /* owned= */ NULL);
}

void http_reply_json(HttpRequest *r, int status, json_t *body) {
        char *s;

        assert(body);
        s = json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(body);
        if (!s) {
                reply_out_of_memory(r);
                return;
        }
        reply_send(r, status, "application/json", s, strlen(s), s);
}

void http_reply_error(HttpRequest *r, int status, const char *type, const char *fmt, ...) {
        char msg[1024];
        size_t len;
        va_list ap;
        char *s;
        int n;

        assert(status >= 400 && status <= 599);
        va_start(ap, fmt);
        n = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* A cut message still helps more than none. */
        len = n < 0 ? 0 : (size_t)n >= sizeof(msg) ? sizeof(msg) - 1 : (size_t)n;

        log_debug("answering status=%d type=%s path='%.*s': %.*s", status, type,
                  (int)(r->path.len < 256 ? r->path.len : 256), (const char *)r->path.ptr, (int)len,
                  msg);
        s = error_body(status, type, msg, len, &len);
        if (!s) {
                reply_out_of_memory(r);
                return;
        }
        reply_send(r, status, "application/json", s, len, s);
}

void http_reply_text(HttpRequest *r, int status, const char *content_type, Slice body) {
        char *copy;

        copy = malloc(body.len + 1);
        if (!copy) {
                reply_out_of_memory(r);
                return;
        }
        if (body.len > 0)
                memcpy(copy, body.ptr, body.len);
        copy[body.len] = '\0';
        reply_send(r, status, h2o_strdup(&r->req->pool, content_type, SIZE_MAX).base, copy,
                   body.len, copy);
}

static bool header_text_is_valid(const char *s) {
        return s[strcspn(s, "\r\n")] == '\0';
}

void http_reply_add_header(HttpRequest *r, const char *name, const char *value) {
        h2o_mem_pool_t *pool = &r->req->pool;
        h2o_iovec_t lower;

        assert(!r->is_replied && !r->is_gone);
        /* A C string cannot hold NUL, so CR and LF are what could split the response. */
        if (!*name || !header_text_is_valid(name) || !header_text_is_valid(value)) {
                uint64_t n_suppressed;

                if (http_ratelimit_test(&r->server->reply_ratelimit, r->server->loop,
                                        &n_suppressed))
                        log_warning("refusing a response header with a line break name='%s' "
                                    "(%" PRIu64 " more suppressed), dropping it",
                                    name, n_suppressed);
                return;
        }

        /* HTTP/2 wants lower-case names; HTTP/1.1 gets the caller's spelling via orig_name. */
        lower = h2o_strdup(pool, name, SIZE_MAX);
        h2o_strtolower(lower.base, lower.len);
        h2o_add_header_by_str(pool, &r->req->res.headers, lower.base, lower.len,
                              /* maybe_token= */ 1, name, h2o_strdup(pool, value, SIZE_MAX).base,
                              strlen(value));
}

typedef struct ErrorOstream {
        h2o_ostream_t super;
        HttpServer *server;
} ErrorOstream;

/* h2o's own errors all go through h2o_send_inline(): one final send of a short text. Rebuild
 * it as the JSON shape, keeping h2o's text as the message. Headers are still unsent here (the
 * protocol's final ostream writes them on its first send), so length and type can change. */
static void error_ostream_do_send(h2o_ostream_t *self, h2o_req_t *req, h2o_iovec_t *bufs,
                                  size_t n_bufs, h2o_send_state_t state) {
        ErrorOstream *o = (ErrorOstream *)self;
        char msg[256];
        size_t msg_len = 0, len;
        h2o_iovec_t body;
        ssize_t i;
        char *s;

        if (h2o_send_state_is_in_progress(state)) {
                h2o_ostream_send_next(self, req, bufs, n_bufs, state);
                return;
        }

        if (req->res.status == 413) {
                int n = snprintf(msg, sizeof(msg),
                                 "request body is larger than %" PRIu64 " bytes (max-body-bytes)",
                                 o->server->max_body_bytes);
                msg_len = n < 0 ? 0 : (size_t)n;
        } else
                for (size_t b = 0; b < n_bufs; b++) {
                        size_t k = bufs[b].len < sizeof(msg) - msg_len ? bufs[b].len
                                                                       : sizeof(msg) - msg_len;
                        memcpy(msg + msg_len, bufs[b].base, k);
                        msg_len += k;
                }
        if (msg_len == 0) {
                const char *reason = status_reason(req->res.status);

                msg_len = strlen(reason);
                memcpy(msg, reason, msg_len);
        }

        log_debug("answering status=%d for h2o: %.*s", req->res.status, (int)msg_len, msg);
        http_stats_count_reply(&o->server->stats, req->res.status);
        s = error_body(req->res.status, http_reply_status_type(req->res.status), msg, msg_len,
                       &len);
        if (!s) {
                log_error("cannot build a reply: %s, sending h2o's text", strerror(ENOMEM));
                h2o_ostream_send_next(self, req, bufs, n_bufs, state);
                return;
        }
        body = h2o_strdup(&req->pool, s, len);
        free(s);

        req->res.content_length = body.len;
        i = h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_TYPE, -1);
        if (i >= 0)
                req->res.headers.entries[i].value = h2o_iovec_init(H2O_STRLIT("application/json"));
        else
                h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE,
                               /* orig_name= */ NULL, H2O_STRLIT("application/json"));
        /* h2o_send_inline() already left the body out of a HEAD response. */
        h2o_ostream_send_next(self, req, &body, n_bufs > 0 ? 1 : 0, state);
}

static void error_filter_on_setup_ostream(h2o_filter_t *self, h2o_req_t *req,
                                          h2o_ostream_t **slot) {
        HttpErrorFilter *f = (HttpErrorFilter *)self;

        if (req->res.status >= 400) {
                ErrorOstream *o = (ErrorOstream *)h2o_add_ostream(req, sizeof(*o), slot);

                o->super.do_send = error_ostream_do_send;
                o->server = f->server;
                slot = &o->super.next;
        }
        h2o_setup_next_ostream(req, slot);
}

void http_reply_filter_register(HttpServer *s, h2o_pathconf_t *pathconf) {
        HttpErrorFilter *f = (HttpErrorFilter *)h2o_create_filter(pathconf, sizeof(*f));

        f->server = s;
        f->super.on_setup_ostream = error_filter_on_setup_ostream;
}
