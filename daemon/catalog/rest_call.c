/* SPDX-License-Identifier: Apache-2.0 */
/* The calls of the REST catalog client (rest_call-internal.h): each held back until a token
 * (catalog/auth.c) and /v1/config are there, sent, its answer read (rest_answer.c, large bodies
 * on the thread pool) and mapped to an outcome, then finished once; /v1/config applied and
 * retried in the background after a failed start. Never resends a mutation except after a
 * 401/419 (the server did not act on it); logs at debug, and once at info when a failed start
 * recovers in the background (the start callback reported the failure). */
#define LOG_MODULE "catalog"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/rest.h"
#include "catalog/rest_answer-internal.h"
#include "catalog/rest_call-internal.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/queue.h"

/* A 2xx body parsed on the thread pool: a table's metadata runs to megabytes, and jansson
 * takes a CPU-second over that on the loop, which stalls every other request. Owned by the
 * client (on its `parses` list) from call_on_response until parse_on_done finished its call.
 * The worker touches only kind, body, json, r and error; the loop nothing of those meanwhile. */
typedef struct ParseJob {
        uv_work_t work;
        RestClient *client;
        CatalogCall *call;
        CallKind kind;
        long http_status;
        uint8_t *body; /* the response body, taken from the transfer; freed by the worker */
        size_t body_len;
        json_t *json; /* the worker's result, NULL when it failed */
        int r;
        Error error;
        struct ParseJob *prev, *next;
} ParseJob;

/* Background retries of /v1/config: 1 s, doubling, at most a minute apart. */
#define CATALOG_RETRY_MIN_MS 1000u
#define CATALOG_RETRY_MAX_MS 60000u

static void call_finish(CatalogCall *call, const CatalogResult *result);
static void call_on_response(const CurlUvResponse *response, void *userdata);

/* Empties the queue, returning its former head: callers walk a detached list, so calls they
 * requeue cannot make them loop. */
static CatalogCall *queue_take_all(CallQueue *q) {
        CatalogCall *head = q->head;

        *q = (CallQueue){ 0 };
        return head;
}

void rest_call_strv_free(char **v, size_t n) {
        for (size_t i = 0; v && i < n; i++)
                free(v[i]);
        free(v);
}

CatalogCall *rest_call_free(CatalogCall *call) {
        if (!call)
                return NULL;
        rest_call_strv_free(call->namespace, call->n_namespace);
        free(call->table);
        free(call->body);
        free(call->idempotency_key);
        free(call);
        return NULL;
}

static void queue_fail_all(CallQueue *q, const CatalogResult *result) {
        CatalogCall *call = queue_take_all(q);

        while (call) {
                CatalogCall *next = call->next;

                call_finish(call, result);
                call = next;
        }
}

static void fail_with_errno(CatalogCall *call, int r, const char *what) {
        CatalogResult result = { .status = r };

        catalog_result_set_message(&result, "%s: %s", what, strerror(-r));
        call_finish(call, &result);
}

/* Moves a wait queue on after what it waited for arrived. */
static void queue_resubmit_all(RestClient *c, CallQueue *q, bool has_fresh_token) {
        CatalogCall *call = queue_take_all(q);

        while (call) {
                CatalogCall *next = call->next;
                int r;

                r = c->is_closing ? -ECANCELED : rest_call_submit(call, has_fresh_token);
                if (r < 0)
                        fail_with_errno(call, r, r == -ECANCELED ? "cancelled" : "cannot send");
                call = next;
        }
}

/* Calls that waited for a /v1/config that failed cannot go out either; nothing was sent, so
 * a "table not found" from the config endpoint must not read as one for them. */
static void config_fail_waiting(RestClient *c, const CatalogResult *config_result) {
        CatalogResult result = { .status = config_result->status };

        if (result.status == CATALOG_E_NOT_FOUND || result.status == CATALOG_E_CONFLICT)
                result.status = CATALOG_E_REJECTED;
        else if (result.status == CATALOG_E_STATE_UNKNOWN)
                result.status = CATALOG_E_UNAVAILABLE;
        memcpy(result.error_type, config_result->error_type, sizeof(result.error_type));
        catalog_result_set_message(&result, "catalog configuration unavailable: %s",
                                   config_result->message);
        queue_fail_all(&c->waiting_config, &result);
}

static void config_on_retry(uv_timer_t *timer) {
        RestClient *c = timer->data;
        int r;

        if (c->is_closing || c->is_ready || c->n_config_calls > 0)
                return;
        r = rest_call_config_start(c, /* cb= */ NULL, /* userdata= */ NULL);
        if (r < 0) {
                /* Could not even send (memory): try again later rather than never. */
                c->n_config_failures++;
                (void)uv_timer_start(&c->retry_timer, config_on_retry, CATALOG_RETRY_MAX_MS, 0);
        }
}

/* A started client that is not ready keeps asking, so that readiness (/readyz) does not wait
 * for the next writer request. */
static void config_schedule_retry(RestClient *c, const CatalogResult *result) {
        uint64_t delay_ms = CATALOG_RETRY_MIN_MS;

        if (!c->is_started || c->is_ready || c->is_closing || c->n_config_calls > 0 ||
            result->status == -ECANCELED)
                return;
        for (unsigned i = 0; i < c->n_config_failures && delay_ms < CATALOG_RETRY_MAX_MS; i++)
                delay_ms *= 2;
        if (delay_ms > CATALOG_RETRY_MAX_MS)
                delay_ms = CATALOG_RETRY_MAX_MS;
        c->n_config_failures++;
        log_debug("catalog config failed attempt=%u, retrying in %" PRIu64 " ms: %s",
                  c->n_config_failures, delay_ms, result->message);
        (void)uv_timer_start(&c->retry_timer, config_on_retry, delay_ms, 0);
}

static void call_finish(CatalogCall *call, const CatalogResult *result) {
        RestClient *c = call->client;
        bool is_config = call->kind == CALL_CONFIG;

        if (is_config) {
                assert(c->n_config_calls > 0);
                c->n_config_calls--;
                if (result->status == 0 && c->n_config_failures > 0) {
                        /* The start callback reported the first failure; this is the news. */
                        log_info("catalog configuration loaded after %u failed attempts",
                                 c->n_config_failures);
                        c->n_config_failures = 0;
                }
        }
        if (call->cb)
                call->cb(result, call->userdata);
        rest_call_free(call);
        /* The starter hears the first outcome and, after a failure, the success that follows
         * (the config is loaded once, then for good). */
        if (is_config && c->start_cb && (result->status == 0 || !c->has_told_start)) {
                CatalogCallback cb = c->start_cb;

                c->has_told_start = true;
                if (result->status == 0)
                        c->start_cb = NULL;
                cb(result, c->start_userdata);
        }

        if (is_config) {
                if (result->status == 0)
                        queue_resubmit_all(c, &c->waiting_config, /* has_fresh_token= */ false);
                else if (c->n_config_calls == 0) {
                        config_fail_waiting(c, result);
                        config_schedule_retry(c, result);
                }
        }
}

static int call_build_url(const CatalogCall *call, Buf *url) {
        RestClient *c = call->client;
        const char *const *ns = (const char *const *)call->namespace;
        int r;

        r = buf_append_str(url, c->base_uri);
        if (r < 0)
                return r;
        switch (call->kind) {
        case CALL_CONFIG:
                r = buf_append_str(url, "/v1/config");
                if (r >= 0 && c->warehouse) {
                        r = buf_append_str(url, "?warehouse=");
                        if (r >= 0)
                                r = rest_percent_encode(url, c->warehouse, strlen(c->warehouse));
                }
                return r;
        case CALL_CREATE_NAMESPACE:
                return rest_path_append(url, REST_RESOURCE_NAMESPACES, c->config.prefix,
                                        c->config.namespace_separator, NULL, 0, NULL);
        case CALL_CREATE_TABLE:
                return rest_path_append(url, REST_RESOURCE_TABLES, c->config.prefix,
                                        c->config.namespace_separator, ns, call->n_namespace, NULL);
        case CALL_LOAD_TABLE:
        case CALL_COMMIT_TABLE:
                r = rest_path_append(url, REST_RESOURCE_TABLE, c->config.prefix,
                                     c->config.namespace_separator, ns, call->n_namespace,
                                     call->table);
                /* yaml "snapshots" query parameter of loadTable: "all" (the default) or
                 * "refs", the snapshots branches and tags point at. */
                if (r >= 0 && call->is_refs_only)
                        r = buf_append_str(url, "?snapshots=refs");
                return r;
        }
        return -EINVAL;
}

static int call_send(CatalogCall *call) {
        RestClient *c = call->client;
        _cleanup_(buf_deinitp) Buf url = { 0 }, auth = { 0 }, key = { 0 };
        _cleanup_(freep) const char **lines = NULL;
        size_t n_lines = 0;
        CurlUvRequest req;
        int r;

        buf_init(&url, CATALOG_MAX_REQUEST_BYTES);
        buf_init(&auth, CATALOG_MAX_REQUEST_BYTES);
        buf_init(&key, CATALOG_MAX_REQUEST_BYTES);
        r = call_build_url(call, &url);
        if (r < 0)
                return r;

        lines = calloc(c->n_headers + 4, sizeof(*lines));
        if (!lines)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_headers; i++)
                lines[n_lines++] = c->headers[i];
        if (call->body)
                lines[n_lines++] = "Content-Type: application/json";
        if (c->access_delegation_header &&
            (call->kind == CALL_LOAD_TABLE || call->kind == CALL_CREATE_TABLE))
                lines[n_lines++] = c->access_delegation_header;
        if (c->auth.token) {
                r = buf_printf(&auth, "Authorization: Bearer %s", c->auth.token);
                if (r < 0)
                        return r;
                lines[n_lines++] = buf_str(&auth);
        }
        if (call->idempotency_key) {
                r = buf_printf(&key, "Idempotency-Key: %s", call->idempotency_key);
                if (r < 0)
                        return r;
                lines[n_lines++] = buf_str(&key);
        }

        req = (CurlUvRequest){
                .method = call->body ? "POST" : "GET",
                .url = buf_str(&url),
                .headers = lines,
                .n_headers = n_lines,
                .body = slice_make(call->body, call->body_len),
        };
        r = curl_uv_send(c->curl, &req, call_on_response, call);
        /* curl copied the header lines; ours held the token. */
        if (auth.data)
                explicit_bzero(auth.data, auth.len);
        if (r < 0)
                return r;
        call->token_generation = c->auth.token_generation;
        return 0;
}

/* The end of a token fetch: the calls that waited for it go now, or fail as it did. */
void rest_call_on_token(const CatalogResult *result, void *userdata) {
        RestClient *c = userdata;

        if (result->status == 0)
                queue_resubmit_all(c, &c->waiting_token, /* has_fresh_token= */ true);
        else
                queue_fail_all(&c->waiting_token, result);
}

/* Sends the call now, or parks it until what it needs (a token, the configuration) arrives.
 * Returns <0 only when the call was neither sent nor parked. */
int rest_call_submit(CatalogCall *call, bool has_fresh_token) {
        RestClient *c = call->client;
        int r;

        if (c->is_closing)
                return -ESHUTDOWN;

        if (!has_fresh_token) {
                r = catalog_auth_check(&c->auth, c->curl, (const char *const *)c->headers,
                                       c->n_headers);
                if (r < 0)
                        return r;
                if (r == CATALOG_AUTH_E_PENDING) {
                        QUEUE_PUSH(&c->waiting_token, call);
                        return 0;
                }
        }

        if (call->kind != CALL_CONFIG && !c->is_ready) {
                if (c->n_config_calls == 0) {
                        r = rest_call_config_start(c, /* cb= */ NULL, /* userdata= */ NULL);
                        if (r < 0)
                                return r;
                }
                QUEUE_PUSH(&c->waiting_config, call);
                return 0;
        }
        return call_send(call);
}

int rest_call_config_start(RestClient *c, CatalogCallback cb, void *userdata) {
        _cleanup_(rest_call_freep) CatalogCall *call = NULL;
        int r;

        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        call->client = c;
        call->kind = CALL_CONFIG;
        call->cb = cb;
        call->userdata = userdata;
        c->n_config_calls++;
        r = rest_call_submit(call, /* has_fresh_token= */ false);
        if (r < 0) {
                c->n_config_calls--;
                return r;
        }
        TAKE_PTR(call);
        return 0;
}

/* The last step of every answer: a /v1/config body is applied, then the caller hears.
 * Takes body (NULL: none). */
static void call_complete(CatalogCall *call, CatalogResult *result, json_t *body) {
        RestClient *c = call->client;
        _cleanup_(json_decrefp) json_t *owned = body;
        RestConfig config;
        Error error = { 0 };
        int r;

        if (call->kind == CALL_CONFIG && result->status == 0) {
                r = rest_config_parse(owned, c->client_properties, &config, &error);
                if (r < 0) {
                        result->status = r;
                        catalog_result_set_message(result, "%s", error.message);
                } else {
                        rest_config_deinit(&c->config);
                        c->config = config;
                        c->is_ready = true;
                        log_debug("catalog config loaded prefix='%s' separator='%s' idempotency=%s",
                                  c->config.prefix ? c->config.prefix : "",
                                  c->config.namespace_separator,
                                  c->config.has_idempotency ? "advertised" : "no");
                }
        }

        result->body = owned;
        /* Storage settings a table's files are read with start from the catalog's own. */
        result->properties = c->is_ready ? c->config.properties : NULL;
        call_finish(call, result);
}

static ParseJob *parse_job_free(ParseJob *job) {
        if (!job)
                return NULL;
        free(job->body);
        json_decref(job->json);
        free(job);
        return NULL;
}

DEFINE_CLEANUP_FUNC(ParseJob, parse_job_free);

/* Thread pool: the parse, and the release of the bytes, which nothing needs afterwards. */
static void parse_work(uv_work_t *work) {
        ParseJob *job = work->data;

        job->r = rest_answer_parse(job->kind, slice_make(job->body, job->body_len), &job->json,
                                   &job->error);
        free(job->body);
        job->body = NULL;
}

/* Loop: ends the call as call_on_response would have with the same body. */
static void parse_on_done(uv_work_t *work, int status) {
        ParseJob *job = work->data;
        RestClient *c = job->client;
        CatalogCall *call = job->call;
        CatalogResult result = { .http_status = job->http_status };
        json_t *body = NULL;

        if (job->prev)
                job->prev->next = job->next;
        else
                c->parses = job->next;
        if (job->next)
                job->next->prev = job->prev;
        c->n_parses--;

        if (status == UV_ECANCELED) {
                /* The client closed before a thread took the job. A commit's 2xx stays its
                 * verdict without the body, as when a body cannot be read. */
                if (rest_answer_is_mutation(call->kind))
                        catalog_result_set_message(&result,
                                                   "%s: HTTP %ld, body not read: the catalog "
                                                   "client is closing",
                                                   rest_answer_describe(call->kind),
                                                   job->http_status);
                else {
                        result.status = -ECANCELED;
                        catalog_result_set_message(&result,
                                                   "cancelled: the catalog client is closing");
                }
        } else
                body = rest_answer_read_parsed(call->kind, job->http_status, job->r,
                                               TAKE_PTR(job->json), &job->error, &result);
        parse_job_free(job);
        call_complete(call, &result, body);
        rest_call_maybe_closed(c);
}

/* Hands a 2xx body of catalog.parse-off-loop-bytes or more to the thread pool; the call ends in
 * parse_on_done. Returns 0, or -ENOMEM (then nothing was taken and the caller parses it). */
static int parse_start(CatalogCall *call, const CurlUvResponse *response) {
        RestClient *c = call->client;
        _cleanup_(parse_job_freep) ParseJob *job = NULL;
        int r;

        job = calloc(1, sizeof(*job));
        if (!job)
                return -ENOMEM;
        job->client = c;
        job->call = call;
        job->kind = call->kind;
        job->http_status = response->http_status;
        job->work.data = job;
        /* The transfer's own buffer, taken rather than copied. */
        job->body = buf_steal(response->body_buf, &job->body_len);
        if (!job->body)
                return -ENOMEM;

        job->next = c->parses;
        if (c->parses)
                c->parses->prev = job;
        c->parses = job;
        c->n_parses++;
        c->n_parses_started++;
        r = uv_queue_work(c->loop, &job->work, parse_work, parse_on_done);
        if (r < 0) {
                /* Only for a NULL work callback; the body is ours now, so parse it here. */
                parse_work(&job->work);
                parse_on_done(&TAKE_PTR(job)->work, 0);
                return 0;
        }
        TAKE_PTR(job);
        return 0;
}

static bool parse_is_off_loop(const RestClient *c, const CurlUvResponse *response) {
        /* Not while closing: close would wait for it, and the answer is not wanted any more. */
        return !c->is_closing && response->body_buf && response->body.len > 0 &&
               response->body.len >= c->parse_off_loop_bytes;
}

static void call_on_response(const CurlUvResponse *response, void *userdata) {
        CatalogCall *call = userdata;
        RestClient *c = call->client;
        json_t *body = NULL;
        CatalogResult result = { 0 };
        int r;

        if (response->status == 0 && catalog_auth_is_refusal(&c->auth, response->http_status) &&
            !call->is_auth_retried && !c->is_closing) {
                /* The token expired or was revoked; the server did not act on the request, so
                 * the same request (same Idempotency-Key) goes again, once, with a new token. */
                call->is_auth_retried = true;
                log_debug("catalog refused the token http_status=%ld call='%s' "
                          "token_generation=%" PRIu64 ", fetching a new one and resending",
                          response->http_status, rest_answer_describe(call->kind),
                          call->token_generation);
                catalog_auth_token_refused(&c->auth, call->token_generation);
                r = rest_call_submit(call, /* has_fresh_token= */ false);
                if (r >= 0)
                        return;
                fail_with_errno(call, r, "cannot resend after refreshing the token");
                return;
        }

        if (response->status < 0) {
                result.status = response->status;
                catalog_result_set_message(&result, "%s: %s", rest_answer_describe(call->kind),
                                           response->error);
        } else if (response->status == CURL_UV_E_NOT_SENT) {
                result.status = CATALOG_E_UNAVAILABLE;
                catalog_result_set_message(&result, "%s: catalog unreachable: %s",
                                           rest_answer_describe(call->kind), response->error);
        } else if (response->status == CURL_UV_E_NO_RESPONSE) {
                result.status = rest_answer_is_mutation(call->kind) ? CATALOG_E_STATE_UNKNOWN
                                                                    : CATALOG_E_UNAVAILABLE;
                catalog_result_set_message(&result, "%s: no answer from the catalog: %s",
                                           rest_answer_describe(call->kind), response->error);
        } else {
                result.http_status = response->http_status;
                if (response->http_status >= 200 && response->http_status <= 299) {
                        if (parse_is_off_loop(c, response) && parse_start(call, response) == 0)
                                return;
                        body = rest_answer_read_success(call->kind, response, &result);
                } else
                        rest_answer_read_error(call->kind, response, &result);
        }
        call_complete(call, &result, body);
}

/* The close completes once both handles are closed and no body is on the thread pool. */
void rest_call_maybe_closed(RestClient *c) {
        CatalogResult result = { .status = -ECANCELED };

        if (!c->is_closing || c->is_closed || c->n_open_handles > 0 || c->parses)
                return;
        /* Every waiting call waited for a token or config transfer, whose cancellation failed
         * it already; this only guards that invariant. */
        catalog_result_set_message(&result, "cancelled: the catalog client is closing");
        queue_fail_all(&c->waiting_token, &result);
        queue_fail_all(&c->waiting_config, &result);
        c->is_closed = true;
        if (c->close_done)
                c->close_done(c->close_userdata);
}

void rest_call_cancel_parses(RestClient *c) {
        /* A job no thread has taken yet ends with UV_ECANCELED; one under way runs out. */
        for (ParseJob *job = c->parses; job; job = job->next)
                (void)uv_cancel((uv_req_t *)&job->work);
}
