/* SPDX-License-Identifier: Apache-2.0 */
/* libcurl's multi interface driven by a uv loop: one uv_poll_t per socket curl asks for, one
 * uv_timer_t for curl's timeouts, one connection cache kept alive between requests. The only
 * file that sees a CURLcode: each finished transfer becomes an HTTP response or a transport
 * outcome here. Shared by the catalog client and the S3 storage backend, each with its own
 * instance; knows nothing of REST, S3 or JSON; loop thread only. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "util/buf.h"
#include "util/slice.h"

/* Owned by its creator (the catalog client, the S3 backend); freed by curl_uv_close(). */
typedef struct CurlUv CurlUv;

/* What every transfer of one CurlUv shares. */
typedef struct CurlUvOptions {
        const char *ca_file; /* NULL: the system's CA store */
        bool tls_verify;
        uint32_t connect_timeout_ms;
        uint32_t request_timeout_ms; /* whole transfer, unless the request sets its own */
        uint32_t max_connections;    /* parallel and cached connections per host */
        uint64_t max_response_bytes; /* body limit, unless the request sets its own */
        /* An answer that is not 2xx may carry this much body whatever the request's own limit
         * (0: CURL_UV_ERROR_BODY_BYTES): its error document says why (an S3 error code such as
         * ExpiredToken or SlowDown), and a read limited to a few bytes (a version hint, a
         * read-back) must not lose it. */
        uint32_t max_error_body_bytes;
        const char *user_agent;
        /* true: ask for compressed answers (Accept-Encoding) and hand back the decoded body;
         * false: no Accept-Encoding, and a body is handed back as its bytes came, whatever its
         * Content-Encoding says (an object store's stored bytes) */
        bool decode_content;
} CurlUvOptions;

/* Transport outcomes of a transfer (CurlUvResponse.status), as outcome codes (docs/design.md
 * section 11). */
enum {
        _CURL_UV_E_SUCCESS,
        CURL_UV_E_NOT_SENT,    /* failed before the request could leave: DNS, connect, TLS */
        CURL_UV_E_NO_RESPONSE, /* the request may have reached the server, no full response came */
};

/* CurlUvOptions.max_error_body_bytes when 0. */
#define CURL_UV_ERROR_BODY_BYTES (64u << 10)

typedef struct CurlUvRequest {
        const char *method; /* "GET", "HEAD", "POST", "PUT" or "DELETE" */
        const char *url;
        const char *const *headers; /* "Name: value" lines, sent as given */
        size_t n_headers;
        Slice body; /* POST/PUT body, copied before curl_uv_send() returns */
        /* AWS Signature V4 by libcurl (CURLOPT_AWS_SIGV4), e.g. "aws:amz:us-east-1:s3", with
         * the key pair below; NULL: unsigned. libcurl 7.88 signs the query as given and adds
         * no x-amz-content-sha256: the caller sends a canonical query and that header. */
        const char *aws_sigv4;
        const char *username;        /* the access key id */
        const char *password;        /* the secret key; copied by curl, never kept here */
        uint64_t max_response_bytes; /* 0: the CurlUv's limit (a 2xx body's; an error's body
                                      * may have max_error_body_bytes when that is more) */
        uint32_t timeout_ms;         /* 0: the CurlUv's request timeout */
} CurlUvRequest;

/* Everything in it is borrowed for the duration of the callback. */
typedef struct CurlUvResponse {
        int status;             /* 0: a complete HTTP response; CURL_UV_E_*; -ECANCELED; -errno */
        long http_status;       /* valid when status == 0 */
        Slice body;             /* the response body (NUL-terminated), empty when body_error < 0 */
        int body_error;         /* -E2BIG past max_response_bytes, -ENOMEM; the head still counts */
        unsigned n_sends;       /* times the request may have left: libcurl resends it (a POST
                                 * too) on a fresh connection when a reused one died without a
                                 * byte of answer, so the answer may be to a second copy */
        const char *error;      /* the transport failure in words, "" on success */
        int64_t content_length; /* the Content-Length header, -1 when there was none */
        const char *content_range; /* the Content-Range header's value, or NULL */
        /* The buffer behind body when body_error is 0, else NULL: a callback that keeps the
         * body past its return takes the storage with buf_steal() instead of copying it (body
         * then points at storage it owns); whatever is left is freed after the callback. */
        Buf *body_buf;
} CurlUvResponse;

typedef void (*CurlUvCallback)(const CurlUvResponse *response, void *userdata);

/* Creates the multi handle on `loop` with the timeouts, TLS settings, connection limit and
 * response limit of `options` (copied; they may go away). Returns 0, -ENOMEM or -EINVAL. */
int curl_uv_new(uv_loop_t *loop, const CurlUvOptions *options, CurlUv **ret_curl_uv);

/* Starts one transfer. Returns <0 (then cb is never called): -ESHUTDOWN after curl_uv_close(),
 * -EINVAL for an unsupported method, -ENOMEM; or 0, and cb is called exactly once, later, from
 * the loop. Redirects are not followed: a 3xx is handed back as it came. */
int curl_uv_send(CurlUv *cu, const CurlUvRequest *req, CurlUvCallback cb, void *userdata);

/* Stops all network activity: every transfer in flight completes with -ECANCELED (called from
 * the loop, not from within this call), every uv handle is closed, then done(userdata) is
 * called and the object freed. After this call curl_uv_send() fails. */
void curl_uv_close(CurlUv *cu, void (*done)(void *userdata), void *userdata);

/* Number of connections opened so far (not reused ones), for tests of keep-alive. */
uint64_t curl_uv_connections_opened(const CurlUv *cu);
