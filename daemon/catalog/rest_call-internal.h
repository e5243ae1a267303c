/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: the REST client's state (RestClient, made and closed by
 * rest_client.c, moved on by its calls) and one call of it and its way out and back
 * (rest_call.c), which rest_client.c creates for each operation and starts. Nothing outside
 * catalog/ includes this. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/auth.h"
#include "catalog/catalog.h"
#include "catalog/rest.h"
#include "catalog/rest_answer-internal.h"
#include "net/curl_uv.h"
#include "util/cleanup.h"

typedef struct RestClient RestClient;

/* One operation. Owned by the client from the public function that accepted it until its
 * callback returned; meanwhile it sits on one wait queue or is the userdata of one transfer. */
typedef struct CatalogCall {
        struct RestClient *client;
        CallKind kind;
        char **namespace;
        size_t n_namespace;
        char *table;
        char *body; /* serialized JSON for POST, NULL for GET */
        size_t body_len;
        char *idempotency_key;
        bool is_refs_only;         /* a load of the snapshots branches and tags reference */
        uint64_t token_generation; /* the token the last send carried */
        bool is_auth_retried;
        CatalogCallback cb; /* NULL for the client's own /v1/config fetch */
        void *userdata;
        struct CatalogCall *next;
} CatalogCall;

typedef struct CallQueue {
        CatalogCall *head;
        CatalogCall *tail;
} CallQueue;

/* Owned by the daemon. */
struct RestClient {
        uv_loop_t *loop;
        CurlUv *curl;
        uv_timer_t retry_timer;  /* /v1/config again after a failed start */
        unsigned n_open_handles; /* the timer and curl_uv, while closing */
        struct ParseJob *parses; /* bodies on the thread pool (rest_call.c); close waits for them */
        size_t n_parses;
        uint64_t n_parses_started;
        uint64_t parse_off_loop_bytes;
        bool is_closing;
        bool is_closed;
        void (*close_done)(void *userdata);
        void *close_userdata;

        char *base_uri; /* config uri without trailing '/' */
        char *warehouse;
        bool send_idempotency_key;
        char **headers; /* Accept and header.* lines, sent on every request */
        size_t n_headers;
        json_t *client_properties;      /* what we tell /v1/config merging about ourselves */
        char *access_delegation_header; /* "X-Iceberg-Access-Delegation: …", or NULL */

        CatalogAuth auth;
        CallQueue waiting_token; /* never non-empty while no token fetch is under way */

        RestConfig config;
        bool is_ready;
        bool is_started;          /* rest_client_start() was called */
        CatalogCallback start_cb; /* until it heard a success (catalog.h) */
        void *start_userdata;
        bool has_told_start;        /* start_cb heard the first outcome */
        unsigned n_config_calls;    /* /v1/config fetches in flight or waiting */
        unsigned n_config_failures; /* in a row, for the retry backoff */
        CallQueue waiting_config;   /* never non-empty while n_config_calls == 0 */
};

/* Frees an array of n strings (or NULL). */
void rest_call_strv_free(char **v, size_t n);

/* Frees a call and its copied arguments (or NULL). Returns NULL. */
CatalogCall *rest_call_free(CatalogCall *call);
DEFINE_CLEANUP_FUNC(CatalogCall, rest_call_free);

/* Sends the call now, or parks it until what it needs (a token, the configuration) arrives;
 * from then on the call is the client's and its callback runs once. Returns <0 only when the
 * call was neither sent nor parked (then it is still the caller's). */
int rest_call_submit(CatalogCall *call, bool has_fresh_token);

/* Starts a /v1/config fetch of the client's (cb may be NULL). Returns 0, or <0 when it could
 * not be sent or parked. */
int rest_call_config_start(struct RestClient *c, CatalogCallback cb, void *userdata);

/* The end of a token fetch (catalog_auth_init's on_token; userdata: the client): the calls that
 * waited for it go now, or fail as it did. */
void rest_call_on_token(const CatalogResult *result, void *userdata);

/* While closing: completes the close once both handles are closed and no body is on the
 * thread pool, failing any call still waiting. */
void rest_call_maybe_closed(struct RestClient *c);

/* While closing: cancels the bodies no thread has taken yet. */
void rest_call_cancel_parses(struct RestClient *c);
