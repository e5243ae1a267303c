/* SPDX-License-Identifier: Apache-2.0 */
/* The S3 backend of storage.h: GET, HEAD, PUT (optionally If-None-Match: *), DELETE and
 * ListObjectsV2 against any S3-compatible store, signed with SigV4 by libcurl, on the event loop
 * through its own net/curl_uv.c instance (connections reused). Retries 500, 503 SlowDown,
 * resets and timeouts with backoff inside the operation's deadline. Internal to storage/. */
#pragma once

#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "metrics/metrics.h"
#include "storage/storage.h"

typedef struct S3Client S3Client;

/* The settings one operation is signed and addressed with, resolved by storage.c from the
 * daemon's [s3] keys and the table's catalog properties. Borrowed by s3_client_submit(). */
typedef struct S3Settings {
        const char *endpoint; /* NULL: https://s3.<region>.amazonaws.com */
        const char *region;
        bool path_style_access;
        const char *access_key_id; /* NULL: unsigned requests */
        const char *secret_access_key;
        const char *session_token;
} S3Settings;

typedef enum S3OpKind {
        S3_OP_GET,
        S3_OP_HEAD,
        S3_OP_PUT,
        S3_OP_DELETE,
        S3_OP_LIST,
        S3_OP_GET_TAIL, /* GET with Range: bytes=-max_bytes */
} S3OpKind;

typedef struct S3Request {
        S3OpKind kind;
        const char *location; /* for messages and list results */
        const char *bucket;
        const char *key;         /* LIST: the prefix */
        Slice data;              /* PUT: borrowed until the callback */
        bool if_absent;          /* PUT: If-None-Match: * */
        uint64_t max_bytes;      /* GET: the limit; GET_TAIL: the tail's length; LIST: the
                                  * most keys */
        uint64_t deadline_ns;    /* 0: none */
        const char *list_scheme; /* LIST: "s3://", how result names are spelled */
} S3Request;

/* config is borrowed for the client's lifetime. */
int s3_client_new(uv_loop_t *loop, const S3Config *config, Metrics *metrics, S3Client **ret_client);
/* Fails every operation with -ECANCELED (from the loop), closes, calls done and frees. */
void s3_client_close(S3Client *c, void (*done)(void *userdata), void *userdata);
/* Starts one operation; <0 without calling cb, or 0 and cb exactly once, later. */
int s3_client_submit(S3Client *c, const S3Settings *settings, const S3Request *req,
                     StorageCallback cb, void *userdata, Error *error);
uint64_t s3_client_requests_sent(const S3Client *c);

/* Pure helpers, exported for the unit tests. */
/* The request URL of bucket/key (query appended as given; it must already be canonical). */
int s3_url_build(const S3Settings *settings, const char *bucket, const char *key, const char *query,
                 Buf *out);
/* RFC 3986 percent-encoding with upper-case hex; '/' kept when keep_slash. */
int s3_url_encode(const char *s, bool keep_slash, Buf *out);
/* The object size of a Content-Range value "bytes FIRST-LAST/SIZE", and the range; -EINVAL for
 * anything else (a "*" size, a range past the size). */
int s3_content_range_parse(const char *value, uint64_t *ret_first, uint64_t *ret_last,
                           uint64_t *ret_size);
