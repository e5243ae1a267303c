/* SPDX-License-Identifier: Apache-2.0 */
/* S3 operations (see s3.h). Each operation owns its copies of the settings and its retry timer;
 * every HTTP round trip is one curl_uv transfer. What a store answers becomes one storage status
 * with the bucket, the key and the store's own code and message; no secret ever reaches a
 * message. libcurl 7.88's SigV4 needs help (docs/design.md section 7.2): we send
 * x-amz-content-sha256 ourselves and build canonical, sorted queries. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/curl_uv.h"
#include "storage/s3.h"
#include "storage/s3_xml.h"
#include "util/parse.h"
#include "util/time-util.h"

#define S3_LIST_PAGE_KEYS 1000

typedef struct S3Op S3Op;

struct S3Client {
        uv_loop_t *loop;
        const S3Config *config;
        Metrics *metrics;
        CurlUv *curl;
        S3Op *ops;
        unsigned n_open_handles; /* retry timers of ops, until closed */
        bool is_closing;
        bool curl_closed;
        uint64_t n_requests;
        void (*close_done)(void *userdata);
        void *close_userdata;
};

/* One storage operation. Owned by the client's list from submit until its timer's close
 * callback has run (or, without a timer, until its callback returned). */
struct S3Op {
        S3Client *client;
        S3OpKind kind;
        char *location, *bucket, *key, *list_scheme;
        char *endpoint, *region, *access_key_id, *secret_access_key, *session_token;
        bool path_style_access;
        Slice data;
        char payload_sha256[65];
        bool if_absent;
        uint64_t max_bytes;
        uint64_t deadline_ns;
        unsigned attempt;
        bool may_have_written; /* a PUT went out without a verdict */
        bool is_verifying;     /* GET after a 412 that may be our own earlier PUT */
        char *continuation;    /* LIST: the next page's token */
        StorageResult result;
        StorageCallback cb;
        void *userdata;
        uv_timer_t timer;
        bool has_timer;
        uint64_t sent_ns;
        S3Op *prev, *next;
};

static const char *const s3_op_names[] = {
        [S3_OP_GET] = "get",       [S3_OP_HEAD] = "head", [S3_OP_PUT] = "put",
        [S3_OP_DELETE] = "delete", [S3_OP_LIST] = "list", [S3_OP_GET_TAIL] = "get",
};

static char *s3_secret_free(char *s) {
        if (!s)
                return NULL;
        explicit_bzero(s, strlen(s));
        free(s);
        return NULL;
}

static S3Op *s3_op_free(S3Op *op) {
        if (!op)
                return NULL;
        free(op->location);
        free(op->bucket);
        free(op->key);
        free(op->list_scheme);
        free(op->endpoint);
        free(op->region);
        free(op->access_key_id);
        s3_secret_free(op->secret_access_key);
        s3_secret_free(op->session_token);
        free(op->continuation);
        buf_deinit(&op->result.data);
        for (size_t i = 0; i < op->result.n_names; i++)
                free(op->result.names[i]);
        free(op->result.names);
        free(op);
        return NULL;
}

DEFINE_CLEANUP_FUNC(S3Op, s3_op_free);

static void s3_client_maybe_freed(S3Client *c);

static void s3_op_unlink(S3Op *op) {
        S3Client *c = op->client;

        if (op->prev)
                op->prev->next = op->next;
        else
                c->ops = op->next;
        if (op->next)
                op->next->prev = op->prev;
        op->prev = op->next = NULL;
}

static void s3_op_on_timer_closed(uv_handle_t *handle) {
        S3Op *op = handle->data;
        S3Client *c = op->client;

        s3_op_free(op);
        c->n_open_handles--;
        s3_client_maybe_freed(c);
}

/* Answers the operation once and releases it. */
static void s3_op_finish(S3Op *op) {
        S3Client *c = op->client;

        s3_op_unlink(op);
        op->cb(&op->result, op->userdata);
        if (op->has_timer) {
                uv_close((uv_handle_t *)&op->timer, s3_op_on_timer_closed);
                return;
        }
        s3_op_free(op);
        s3_client_maybe_freed(c);
}

_printf_(3, 4) static void s3_op_fail(S3Op *op, int status, const char *fmt, ...) {
        va_list ap;

        op->result.status = status;
        va_start(ap, fmt);
        (void)vsnprintf(op->result.error.message, sizeof(op->result.error.message), fmt, ap);
        va_end(ap);
        s3_op_finish(op);
}

static void s3_sha256_hex(Slice data, char hex[65]) {
        static const char digits[] = "0123456789abcdef";
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;

        if (EVP_Digest(data.ptr ? data.ptr : (const uint8_t *)"", data.len, md, &n, EVP_sha256(),
                       NULL) != 1 ||
            n != 32) {
                /* Cannot happen with a working libcrypto; an unsigned payload still verifies the
                 * headers, and the store checks the body against nothing. */
                (void)snprintf(hex, 65, "UNSIGNED-PAYLOAD");
                return;
        }
        for (unsigned i = 0; i < 32; i++) {
                hex[2 * i] = digits[md[i] >> 4];
                hex[2 * i + 1] = digits[md[i] & 15];
        }
        hex[64] = 0;
}

static void s3_op_on_response(const CurlUvResponse *response, void *userdata);

static const char *s3_op_method(const S3Op *op) {
        if (op->is_verifying)
                return "GET";
        switch (op->kind) {
        case S3_OP_HEAD:
                return "HEAD";
        case S3_OP_PUT:
                return "PUT";
        case S3_OP_DELETE:
                return "DELETE";
        default:
                return "GET";
        }
}

static int s3_op_send(S3Op *op) {
        S3Client *c = op->client;
        const S3Settings settings = {
                .endpoint = op->endpoint,
                .region = op->region,
                .path_style_access = op->path_style_access,
        };
        _cleanup_(buf_deinitp) Buf url, query, sha_line, token_line, sigv4, range_line;
        const char *lines[6];
        const bool is_put = op->kind == S3_OP_PUT && !op->is_verifying;
        size_t n_lines = 0;
        uint64_t now = now_monotonic_ns(), timeout_ms = c->config->request_timeout_ms;
        char empty_sha[65];
        int r;

        buf_init(&url, 64 * 1024);
        buf_init(&query, 16 * 1024);
        buf_init(&sha_line, 128);
        buf_init(&token_line, 64 * 1024);
        buf_init(&sigv4, 256);
        buf_init(&range_line, 64);

        if (op->kind == S3_OP_LIST) {
                /* Keys in byte order, '=' after every key, RFC 3986 values: libcurl 7.88 signs
                 * the query exactly as written. */
                r = 0;
                if (op->continuation) {
                        r = buf_append_str(&query, "continuation-token=");
                        if (r == 0)
                                r = s3_url_encode(op->continuation, false, &query);
                        if (r == 0)
                                r = buf_append_byte(&query, '&');
                }
                if (r == 0)
                        r = buf_printf(&query,
                                       "list-type=2&max-keys=%d&prefix=", S3_LIST_PAGE_KEYS);
                if (r == 0)
                        r = s3_url_encode(op->key, false, &query);
                if (r == 0)
                        r = s3_url_build(&settings, op->bucket, "", buf_str(&query), &url);
        } else
                r = s3_url_build(&settings, op->bucket, op->key, NULL, &url);
        if (r < 0)
                return r;

        if (is_put) {
                r = buf_printf(&sha_line, "x-amz-content-sha256: %s", op->payload_sha256);
        } else {
                s3_sha256_hex(slice_make("", 0), empty_sha);
                r = buf_printf(&sha_line, "x-amz-content-sha256: %s", empty_sha);
        }
        if (r < 0)
                return r;
        lines[n_lines++] = buf_str(&sha_line);
        if (op->session_token) {
                r = buf_printf(&token_line, "x-amz-security-token: %s", op->session_token);
                if (r < 0)
                        return r;
                lines[n_lines++] = buf_str(&token_line);
        }
        if (is_put) {
                lines[n_lines++] = "Content-Type: application/octet-stream";
                if (op->if_absent)
                        lines[n_lines++] = "If-None-Match: *";
        }
        if (op->kind == S3_OP_GET_TAIL && !op->is_verifying) {
                /* A suffix range (RFC 9110 14.1.2): the store answers 206 with the object's size
                 * in Content-Range, or 200 with all of it. */
                r = buf_printf(&range_line, "Range: bytes=-%" PRIu64, op->max_bytes);
                if (r < 0)
                        return r;
                lines[n_lines++] = buf_str(&range_line);
        }
        if (op->access_key_id) {
                r = buf_printf(&sigv4, "aws:amz:%s:s3", op->region ? op->region : "us-east-1");
                if (r < 0)
                        return r;
        }

        if (op->deadline_ns) {
                uint64_t left_ms = op->deadline_ns > now ? (op->deadline_ns - now) / 1000000 : 0;

                if (left_ms < 1)
                        return -ETIMEDOUT;
                if (left_ms < timeout_ms)
                        timeout_ms = left_ms;
        }
        r = curl_uv_send(c->curl,
                         &(CurlUvRequest){
                                 .method = s3_op_method(op),
                                 .url = buf_str(&url),
                                 .headers = lines,
                                 .n_headers = n_lines,
                                 .body = is_put ? op->data : slice_make(NULL, 0),
                                 .aws_sigv4 = op->access_key_id ? buf_str(&sigv4) : NULL,
                                 .username = op->access_key_id,
                                 .password = op->secret_access_key,
                                 .max_response_bytes =
                                         (op->kind == S3_OP_GET || op->kind == S3_OP_GET_TAIL) &&
                                                         !op->is_verifying
                                                 ? op->max_bytes + 1
                                         : op->is_verifying ? op->data.len + 1
                                                            : 1u << 20,
                                 .timeout_ms = (uint32_t)timeout_ms,
                         },
                         s3_op_on_response, op);
        if (token_line.data)
                explicit_bzero(token_line.data, token_line.len);
        if (r < 0)
                return r;
        op->sent_ns = now;
        op->result.n_requests++;
        c->n_requests++;
        return 0;
}

static void s3_op_on_timer(uv_timer_t *timer) {
        S3Op *op = timer->data;
        int r;

        r = s3_op_send(op);
        if (r < 0)
                s3_op_fail(op, r == -ETIMEDOUT ? -ETIMEDOUT : -EAGAIN,
                           "%s: cannot send the %s request: %s", op->location,
                           s3_op_names[op->kind], strerror(-r));
}

/* Another round trip after a transient failure, with exponential backoff and jitter, unless the
 * attempts or the deadline are used up. */
static void s3_op_retry(S3Op *op, const char *why) {
        S3Client *c = op->client;
        uint64_t backoff = c->config->min_backoff_ms, now = now_monotonic_ns();
        int r;

        for (unsigned i = 1; i < op->attempt && backoff < c->config->max_backoff_ms; i++)
                backoff *= 2;
        if (backoff > c->config->max_backoff_ms)
                backoff = c->config->max_backoff_ms;
        backoff = backoff / 2 + (uint64_t)random() % (backoff / 2 + 1);
        if (op->attempt >= c->config->max_attempts) {
                s3_op_fail(op, -EAGAIN, "%s: %s; gave up after %u attempts", op->location, why,
                           op->attempt);
                return;
        }
        if (op->deadline_ns && now + backoff * 1000000 >= op->deadline_ns) {
                s3_op_fail(op, -ETIMEDOUT,
                           "%s: %s; the deadline leaves no time for another attempt", op->location,
                           why);
                return;
        }
        if (!op->has_timer) {
                r = uv_timer_init(c->loop, &op->timer);
                if (r < 0) {
                        s3_op_fail(op, -EAGAIN, "%s: %s", op->location, why);
                        return;
                }
                op->timer.data = op;
                op->has_timer = true;
                c->n_open_handles++;
        }
        op->attempt++;
        (void)uv_timer_start(&op->timer, s3_op_on_timer, backoff, 0);
}

static const char *s3_outcome_of(int status) {
        switch (status) {
        case 0:
                return "success";
        case -ENOENT:
                return "not-found";
        case -EEXIST:
                return "exists";
        case -EACCES:
        case -EKEYEXPIRED:
                return "denied";
        case -EAGAIN:
                return "retried";
        default:
                return "error";
        }
}

static void s3_op_count(S3Op *op, int status) {
        S3Client *c = op->client;
        char label[64];

        (void)snprintf(label, sizeof(label), "%s" METRICS_LABEL_SEP "%s",
                       op->is_verifying ? "get" : s3_op_names[op->kind], s3_outcome_of(status));
        metrics_add(c->metrics, METRIC_STORAGE_REQUESTS, label, 1);
        metrics_observe_label(c->metrics, METRIC_STORAGE_DURATION, label,
                              (double)(now_monotonic_ns() - op->sent_ns) / 1e9);
}

/* A LIST page: keep its keys (as full locations) and ask for the next one. */
static int s3_op_take_page(S3Op *op, Slice body) {
        _cleanup_(s3_xml_list_page_deinit) S3XmlListPage page = { 0 };
        size_t left = op->max_bytes > op->result.n_names
                              ? (size_t)(op->max_bytes - op->result.n_names)
                              : 0;
        char **grown;
        int r;

        r = s3_xml_list_parse(body, S3_LIST_PAGE_KEYS, &page);
        if (r < 0)
                return r;
        grown = reallocarray(op->result.names, op->result.n_names + page.n_keys + 1,
                             sizeof(*grown));
        if (!grown)
                return -ENOMEM;
        op->result.names = grown;
        if (page.n_keys > left || (page.n_keys == left && page.is_truncated)) {
                op->result.is_truncated = true;
                page.is_truncated = false; /* enough: ask for no further page */
                for (size_t k = left; k < page.n_keys; k++)
                        free(page.keys[k]);
                if (page.n_keys > left)
                        page.n_keys = left;
        }
        for (size_t i = 0; i < page.n_keys; i++) {
                char *name;

                if (asprintf(&name, "%s%s/%s", op->list_scheme, op->bucket, page.keys[i]) < 0)
                        return -ENOMEM;
                op->result.names[op->result.n_names++] = name;
        }
        free(op->continuation);
        op->continuation = TAKE_PTR(page.next_token);
        return page.is_truncated ? 1 : 0;
}

int s3_content_range_parse(const char *value, uint64_t *ret_first, uint64_t *ret_last,
                           uint64_t *ret_size) {
        uint64_t v[3];
        const char *p;

        if (!value || strncmp(value, "bytes ", 6) != 0)
                return -EINVAL;
        p = value + 6;
        for (int i = 0; i < 3; i++) {
                const char stop = i == 0 ? '-' : i == 1 ? '/' : 0;
                size_t n = 0;
                char digits[24];

                while (p[n] >= '0' && p[n] <= '9')
                        n++;
                if (n == 0 || n >= sizeof(digits) || p[n] != stop)
                        return -EINVAL;
                memcpy(digits, p, n);
                digits[n] = 0;
                if (parse_u64(digits, &v[i]) < 0)
                        return -EINVAL;
                p += n + (stop ? 1 : 0);
        }
        if (v[0] > v[1] || v[1] >= v[2])
                return -EINVAL;
        *ret_first = v[0];
        *ret_last = v[1];
        *ret_size = v[2];
        return 0;
}

/* A tail's answer: 206 with the range asked for, or 200 with the whole object (a store that
 * ignores Range, or answers a suffix longer than the object so). On failure answers the op
 * and returns <0. */
static int s3_op_take_tail(S3Op *op, const CurlUvResponse *response) {
        uint64_t first = 0, last = 0, size;
        int r;

        if (response->body_error == -E2BIG || response->body.len > op->max_bytes) {
                s3_op_fail(op, -EREMOTEIO,
                           "%s: the store answered more than the %" PRIu64 " bytes asked for",
                           op->location, op->max_bytes);
                return -EREMOTEIO;
        }
        if (response->body_error < 0) {
                s3_op_fail(op, response->body_error, "%s: cannot keep the body: %s", op->location,
                           strerror(-response->body_error));
                return response->body_error;
        }
        if (response->http_status == 206) {
                if (s3_content_range_parse(response->content_range, &first, &last, &size) < 0 ||
                    last - first + 1 != response->body.len || last != size - 1) {
                        s3_op_fail(op, -EREMOTEIO,
                                   "%s: a 206 answer with Content-Range '%s' and %zu bytes",
                                   op->location,
                                   response->content_range ? response->content_range : "",
                                   response->body.len);
                        return -EREMOTEIO;
                }
        } else
                size = response->body.len;
        buf_init(&op->result.data, response->body.len + 1);
        r = buf_append(&op->result.data, response->body.ptr, response->body.len);
        if (r < 0) {
                s3_op_fail(op, r, "%s: out of memory", op->location);
                return r;
        }
        op->result.size = size;
        metrics_add(op->client->metrics, METRIC_STORAGE_BYTES, "read", (double)response->body.len);
        return 0;
}

/* The 2xx of the read-back that follows a 412 to a create whose earlier attempt may have
 * landed: ours if byte for byte what we wrote. */
static void s3_op_on_read_back(S3Op *op, const CurlUvResponse *response) {
        bool same =
                response->body_error == 0 && response->body.len == op->data.len &&
                (op->data.len == 0 || memcmp(response->body.ptr, op->data.ptr, op->data.len) == 0);

        if (same) {
                op->result.status = 0;
                s3_op_finish(op);
        } else
                s3_op_fail(op, -EEXIST, "%s already exists (created by another writer)",
                           op->location);
}

/* A GET's whole object, within its limit. On failure answers the op and returns <0. */
static int s3_op_take_object(S3Op *op, const CurlUvResponse *response) {
        int r;

        if (response->body_error == -E2BIG || response->body.len > op->max_bytes) {
                s3_op_fail(op, -EFBIG, "%s is above the limit of %" PRIu64 " bytes", op->location,
                           op->max_bytes);
                return -EFBIG;
        }
        if (response->body_error < 0) {
                s3_op_fail(op, response->body_error, "%s: cannot keep the body: %s", op->location,
                           strerror(-response->body_error));
                return response->body_error;
        }
        buf_init(&op->result.data, (size_t)op->max_bytes + 1);
        r = buf_append(&op->result.data, response->body.ptr, response->body.len);
        if (r < 0) {
                s3_op_fail(op, r, "%s: out of memory", op->location);
                return r;
        }
        metrics_add(op->client->metrics, METRIC_STORAGE_BYTES, "read", (double)response->body.len);
        return 0;
}

/* A LIST page's answer: its keys kept, and the next page asked for while there is one. Returns
 * 0 when the listing is complete; otherwise the op is answered or sent again. */
static int s3_op_on_page(S3Op *op, Slice body) {
        int r;

        r = s3_op_take_page(op, body);
        if (r < 0) {
                s3_op_fail(op,
                           r == -E2BIG    ? -E2BIG
                           : r == -ENOMEM ? r
                                          : -EREMOTEIO,
                           "%s: %s", op->location,
                           r == -E2BIG ? "more objects than the listing limit"
                                       : "unreadable ListObjectsV2 answer");
                return r;
        }
        if (r > 0) {
                r = s3_op_send(op);
                if (r < 0)
                        s3_op_fail(op, -EAGAIN, "%s: cannot ask for the next page: %s",
                                   op->location, strerror(-r));
                return 1;
        }
        return 0;
}

/* A 2xx: the operation's result (or the next page of a listing). */
static void s3_op_on_success(S3Op *op, const CurlUvResponse *response) {
        S3Client *c = op->client;

        s3_op_count(op, 0);
        if (op->is_verifying) {
                s3_op_on_read_back(op, response);
                return;
        }
        switch (op->kind) {
        case S3_OP_GET:
                if (s3_op_take_object(op, response) < 0)
                        return;
                break;
        case S3_OP_GET_TAIL:
                if (s3_op_take_tail(op, response) < 0)
                        return;
                break;
        case S3_OP_HEAD:
                if (response->content_length < 0) {
                        s3_op_fail(op, -EREMOTEIO, "%s: HEAD answered without a Content-Length",
                                   op->location);
                        return;
                }
                op->result.size = (uint64_t)response->content_length;
                break;
        case S3_OP_PUT:
                metrics_add(c->metrics, METRIC_STORAGE_BYTES, "written", (double)op->data.len);
                break;
        case S3_OP_LIST:
                if (s3_op_on_page(op, response->body) != 0)
                        return;
                break;
        case S3_OP_DELETE:
                break;
        }
        op->result.status = 0;
        s3_op_finish(op);
}

/* Answers worth another attempt: server errors, throttling and timeouts, by status or code. */
static bool s3_answer_is_transient(long http, const char *code) {
        return http == 500 || http == 502 || http == 503 || http == 504 || http == 429 ||
               http == 408 || strcmp(code, "SlowDown") == 0 ||
               strcmp(code, "RequestTimeout") == 0 || strcmp(code, "InternalError") == 0;
}

/* A conditional create found the object: when an earlier attempt of ours may have written it,
 * read it back (s3_op_on_read_back decides); otherwise it is somebody else's. */
static void s3_op_on_exists(S3Op *op, const char *detail) {
        int r;

        s3_op_count(op, -EEXIST);
        if (op->may_have_written) {
                op->is_verifying = true;
                r = s3_op_send(op);
                if (r < 0)
                        s3_op_fail(op, -EAGAIN, "%s: cannot read back an earlier attempt: %s",
                                   op->location, strerror(-r));
                return;
        }
        s3_op_fail(op, -EEXIST, "%s already exists (%s)", op->location, detail);
}

/* Any answer but a 2xx: the store's status, code and message become the operation's status and
 * error, or another attempt. */
static void s3_op_on_refusal(S3Op *op, const CurlUvResponse *response) {
        S3XmlError xml = { 0 };
        char detail[900];
        long http = response->http_status;

        if (response->body_error == 0)
                (void)s3_xml_error_parse(response->body, &xml);
        /* HEAD answers carry no body: the status is all there is. */
        if (!xml.code[0])
                (void)snprintf(xml.code, sizeof(xml.code), "%s",
                               http == 404   ? "NoSuchKey"
                               : http == 403 ? "AccessDenied"
                               : http == 412 ? "PreconditionFailed"
                                             : "");
        (void)snprintf(detail, sizeof(detail),
                       "%s of bucket '%s' key '%s' answered HTTP %ld%s%s%s%s", s3_op_method(op),
                       op->bucket, op->key, http, xml.code[0] ? " " : "", xml.code,
                       xml.message[0] ? ": " : "", xml.message);

        if (s3_answer_is_transient(http, xml.code)) {
                s3_op_count(op, -EAGAIN);
                if (op->kind == S3_OP_PUT && !op->is_verifying)
                        op->may_have_written =
                                true; /* a 5xx after the body may still have landed */
                s3_op_retry(op, detail);
                return;
        }
        if (op->kind == S3_OP_PUT && !op->is_verifying && op->if_absent &&
            (http == 412 || (http == 409 && strcmp(xml.code, "ConditionalRequestConflict") == 0))) {
                s3_op_on_exists(op, detail);
                return;
        }
        if (http == 416 && op->kind == S3_OP_GET_TAIL) {
                /* No byte to answer a suffix range with: the object is empty. */
                s3_op_count(op, 0);
                buf_init(&op->result.data, 1);
                op->result.size = 0;
                op->result.status = 0;
                s3_op_finish(op);
                return;
        }
        if (http == 404 && op->kind == S3_OP_DELETE) {
                s3_op_count(op, 0);
                op->result.status = 0;
                s3_op_finish(op);
                return;
        }
        if (http == 404) {
                s3_op_count(op, -ENOENT);
                if (op->is_verifying) {
                        /* 412, then gone: whoever created it deleted it; say so plainly. */
                        s3_op_fail(op, -EAGAIN, "%s existed a moment ago and is gone now",
                                   op->location);
                        return;
                }
                s3_op_fail(op, -ENOENT, "%s does not exist (%s)", op->location, detail);
                return;
        }
        if (strcmp(xml.code, "ExpiredToken") == 0 ||
            strcmp(xml.code, "TokenRefreshRequired") == 0) {
                s3_op_count(op, -EKEYEXPIRED);
                s3_op_fail(op, -EKEYEXPIRED, "%s: the credentials expired (%s)", op->location,
                           detail);
                return;
        }
        if (http == 401 || http == 403) {
                s3_op_count(op, -EACCES);
                s3_op_fail(op, -EACCES, "%s: access denied (%s)%s", op->location, detail,
                           strcmp(xml.code, "RequestTimeTooSkewed") == 0
                                   ? "; check this machine's clock"
                                   : "");
                return;
        }
        s3_op_count(op, -EREMOTEIO);
        s3_op_fail(op, -EREMOTEIO, "%s: %s%s%s", op->location, detail,
                   xml.region[0] ? "; the bucket is in region " : "", xml.region);
}

static void s3_op_on_response(const CurlUvResponse *response, void *userdata) {
        S3Op *op = userdata;
        char detail[900];

        if (response->status == -ECANCELED) {
                s3_op_fail(op, -ECANCELED, "%s: cancelled: icecommitd is stopping", op->location);
                return;
        }
        if (response->status != 0) {
                s3_op_count(op, -EAGAIN);
                if (op->kind == S3_OP_PUT && !op->is_verifying &&
                    response->status == CURL_UV_E_NO_RESPONSE)
                        op->may_have_written = true;
                (void)snprintf(detail, sizeof(detail), "%s failed: %s", s3_op_method(op),
                               response->error);
                s3_op_retry(op, detail);
                return;
        }
        if (response->http_status >= 200 && response->http_status < 300)
                s3_op_on_success(op, response);
        else
                s3_op_on_refusal(op, response);
}

static int s3_strdup_opt(char **dst, const char *src) {
        if (!src)
                return 0;
        *dst = strdup(src);
        return *dst ? 0 : -ENOMEM;
}

int s3_client_submit(S3Client *c, const S3Settings *settings, const S3Request *req,
                     StorageCallback cb, void *userdata, Error *error) {
        _cleanup_(s3_op_freep) S3Op *op = NULL;
        int r;

        assert(c && settings && req && cb);
        if (c->is_closing)
                return error_set(error, -ESHUTDOWN, "icecommitd is stopping");
        if (req->kind == S3_OP_PUT && req->data.len > (size_t)5 * 1024 * 1024 * 1024)
                /* One PUT takes at most 5 GiB; manifests and lists are far below. */
                return error_set(error, -EFBIG, "%s: %zu bytes are more than one S3 PUT takes",
                                 req->location, req->data.len);
        op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        op->client = c;
        op->kind = req->kind;
        op->data = req->data;
        op->if_absent = req->if_absent;
        op->max_bytes = req->max_bytes;
        op->deadline_ns = req->deadline_ns;
        op->path_style_access = settings->path_style_access;
        op->attempt = 1;
        op->cb = cb;
        op->userdata = userdata;
        if (s3_strdup_opt(&op->location, req->location) < 0 ||
            s3_strdup_opt(&op->bucket, req->bucket) < 0 || s3_strdup_opt(&op->key, req->key) < 0 ||
            s3_strdup_opt(&op->list_scheme, req->list_scheme ? req->list_scheme : "s3://") < 0 ||
            s3_strdup_opt(&op->endpoint, settings->endpoint) < 0 ||
            s3_strdup_opt(&op->region, settings->region) < 0 ||
            s3_strdup_opt(&op->access_key_id, settings->access_key_id) < 0 ||
            s3_strdup_opt(&op->secret_access_key, settings->secret_access_key) < 0 ||
            s3_strdup_opt(&op->session_token, settings->session_token) < 0)
                return -ENOMEM;
        if (op->kind == S3_OP_PUT)
                s3_sha256_hex(op->data, op->payload_sha256);

        r = s3_op_send(op);
        if (r < 0)
                return error_set(error, r, "%s: cannot send the %s request: %s", req->location,
                                 s3_op_names[req->kind], strerror(-r));
        op->next = c->ops;
        if (c->ops)
                c->ops->prev = op;
        c->ops = TAKE_PTR(op);
        return 0;
}

uint64_t s3_client_requests_sent(const S3Client *c) {
        return c->n_requests;
}

static void s3_client_maybe_freed(S3Client *c) {
        void (*done)(void *userdata);
        void *userdata;

        if (!c->is_closing || !c->curl_closed || c->n_open_handles > 0 || c->ops)
                return;
        done = c->close_done;
        userdata = c->close_userdata;
        free(c);
        if (done)
                done(userdata);
}

static void s3_client_on_curl_closed(void *userdata) {
        S3Client *c = userdata;

        c->curl = NULL;
        c->curl_closed = true;
        /* Ops waiting on a retry timer (never sent again) are failed now. */
        while (c->ops) {
                S3Op *op = c->ops;

                if (op->has_timer)
                        (void)uv_timer_stop(&op->timer);
                s3_op_fail(op, -ECANCELED, "%s: cancelled: icecommitd is stopping", op->location);
        }
        s3_client_maybe_freed(c);
}

void s3_client_close(S3Client *c, void (*done)(void *userdata), void *userdata) {
        assert(c && !c->is_closing);
        c->is_closing = true;
        c->close_done = done;
        c->close_userdata = userdata;
        /* Transfers in flight complete with -ECANCELED from curl_uv's close. */
        curl_uv_close(c->curl, s3_client_on_curl_closed, c);
}

int s3_client_new(uv_loop_t *loop, const S3Config *config, Metrics *metrics,
                  S3Client **ret_client) {
        _cleanup_(freep) S3Client *c = NULL;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->loop = loop;
        c->config = config;
        c->metrics = metrics;
        r = curl_uv_new(loop,
                        &(CurlUvOptions){
                                .ca_file = config->ca_file,
                                .tls_verify = config->tls_verify,
                                .connect_timeout_ms = config->connect_timeout_ms,
                                .request_timeout_ms = config->request_timeout_ms,
                                .max_connections = config->max_connections,
                                .max_response_bytes = 1u << 20,
                                .max_error_body_bytes = config->max_error_body_bytes,
                                .user_agent = "icecommitd/" ICECOMMIT_VERSION,
                                /* What intake checks must be the bytes every other reader
                                 * gets: an object stored with Content-Encoding: gzip is its
                                 * gzip bytes to Iceberg Java and PyIceberg, which decode
                                 * nothing (docs/design.md section 7.2). */
                                .decode_content = false,
                        },
                        &c->curl);
        if (r < 0)
                return r;
        *ret_client = TAKE_PTR(c);
        return 0;
}
