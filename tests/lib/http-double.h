/* SPDX-License-Identifier: Apache-2.0 */
/* A scripted HTTP/1.1 server for unit tests, on the test's own uv loop at 127.0.0.1 and a port
 * the kernel picks. It answers requests in the order of its script: each step names the request
 * it expects and what to do with it (answer, close without answering, answer late, cut the body
 * short), and every request it received is recorded for the test to inspect. Requests and
 * bodies are bounded; close it, run the loop dry, then free it (the loop then closes). A request
 * that does not match its step, or one past the script, is answered 418 and recorded as the
 * double's first failure: tests end with http_double_assert_done(). Test-only: aborts when out
 * of memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

/* What a step does once its request has arrived whole. */
typedef enum HttpDoubleFault {
        HTTP_DOUBLE_ANSWER,   /* the scripted answer (after delay_ms when set) */
        HTTP_DOUBLE_CLOSE,    /* close the connection without a byte of answer */
        HTTP_DOUBLE_TRUNCATE, /* the head with the full Content-Length, truncate_at bytes of the
                               * body, then close */
} HttpDoubleFault;

/* One expected request and its answer. Strings are borrowed until the step has been answered
 * (static strings in practice). */
typedef struct HttpDoubleStep {
        const char *method; /* "GET", "PUT", ...; NULL: any */
        /* fnmatch(3) pattern for the request target (path and query as sent), e.g.
         * "/bkt/wh/t/metadata/v2.metadata.json" or "/bkt/?list-type=2*"; NULL: any */
        const char *target;
        /* Header checks, NULL-terminated: "Name: pattern" (the value must match the fnmatch
         * pattern, e.g. "If-None-Match: [*]", "Authorization: AWS4-HMAC-SHA256 *"), "Name"
         * (present) or "!Name" (absent). Names are case-insensitive. */
        const char *const *headers;

        HttpDoubleFault fault;
        unsigned status;           /* 0: 200 */
        const char *extra_headers; /* "Name: value\r\n" lines added to the answer, or NULL */
        const char *body;          /* NULL: empty */
        size_t body_len;           /* 0 with a body: strlen(body) */
        /* The body is what the last PUT to the same target carried (an object store reading back
         * what was written); body and body_len are then ignored. */
        bool echo_last_put;
        uint64_t delay_ms;  /* ANSWER: answer this much later */
        size_t truncate_at; /* TRUNCATE: body bytes sent before the close */
} HttpDoubleStep;

typedef struct HttpDoubleHeader {
        char *name; /* as sent */
        char *value;
} HttpDoubleHeader;

/* One request as it arrived, owned by the double. */
typedef struct HttpDoubleRequest {
        char *method;
        char *target;
        HttpDoubleHeader *headers;
        size_t n_headers;
        uint8_t *body; /* NUL-terminated */
        size_t body_len;
        unsigned connection; /* 1 for the first connection accepted, 2 for the next... */
        size_t step;         /* the script step it was matched against */
} HttpDoubleRequest;

typedef struct HttpDouble HttpDouble;

/* Listens on 127.0.0.1 port 0 on `loop`. Limits: max_body_bytes per request body (0: 1 MiB);
 * request heads are at most 16 KiB. Answers carry "Connection: close" unless keep_alive, so
 * that libcurl never resends a request on a fresh connection behind the script's back. */
HttpDouble *http_double_new(uv_loop_t *loop, size_t max_body_bytes, bool keep_alive);
uint16_t http_double_port(const HttpDouble *d);
/* "http://127.0.0.1:<port>" (borrowed). */
const char *http_double_url(const HttpDouble *d);
/* Appends steps to the script (copied; their strings stay borrowed). */
void http_double_script(HttpDouble *d, const HttpDoubleStep *steps, size_t n_steps);
/* Requests received so far, in order. */
size_t http_double_n_requests(const HttpDouble *d);
const HttpDoubleRequest *http_double_request(const HttpDouble *d, size_t i);
/* The first value of a header of a recorded request (case-insensitive), or NULL. */
const char *http_double_request_header(const HttpDoubleRequest *req, const char *name);
/* Connections accepted so far. */
unsigned http_double_n_connections(const HttpDouble *d);
/* The first mismatch or protocol failure, or NULL. */
const char *http_double_failure(const HttpDouble *d);
/* Fails the test unless there was no mismatch and every step of the script was used. */
void http_double_assert_done(const HttpDouble *d);
/* Closes the listener, every connection and timer; run the loop afterwards. */
void http_double_close(HttpDouble *d);
/* Frees a closed double whose handles are all closed (or NULL). Returns NULL. */
HttpDouble *http_double_free(HttpDouble *d);
