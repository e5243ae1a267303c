/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: the kinds of REST catalog calls and what their answers mean
 * (rest_answer.c), for the calls of rest_call.c. Pure. Nothing outside catalog/ includes this. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "catalog/catalog.h"
#include "net/curl_uv.h"
#include "util/error.h"
#include "util/slice.h"

typedef enum CallKind {
        CALL_CONFIG,
        CALL_LOAD_TABLE,
        CALL_COMMIT_TABLE,
        CALL_CREATE_NAMESPACE,
        CALL_CREATE_TABLE,
} CallKind;

/* Whether a call of this kind changes the catalog: its verdict is its status line. */
bool rest_answer_is_mutation(CallKind kind);

/* "load table", "commit table", ...: the call in messages. */
const char *rest_answer_describe(CallKind kind);

/* Parses a 2xx body and checks the envelope the call expects (a LoadTableResult for loads).
 * Returns 0 with the JSON (owned), or <0 with the reason in error. Pure and loop-free: the
 * thread pool runs it for large bodies, so it must stay O(size) work on its inputs only. */
int rest_answer_parse(CallKind kind, Slice body, json_t **ret_json, Error *error);

/* Fills result from what rest_answer_parse() gave (r, and json, which it takes); returns the
 * body (owned) or NULL. A mutation's unreadable body leaves its status a success. */
json_t *rest_answer_read_parsed(CallKind kind, long http_status, int r, json_t *json,
                                const Error *error, CatalogResult *result);

/* Fills result from a 2xx answer; returns the parsed body (owned) or NULL. */
json_t *rest_answer_read_success(CallKind kind, const CurlUvResponse *response,
                                 CatalogResult *result);

/* Fills result from a non-2xx answer: the IcebergErrorResponse's message and type (else the
 * body's first bytes) and the outcome of the status; a mutation libcurl sent more than once is
 * CATALOG_E_STATE_UNKNOWN. */
void rest_answer_read_error(CallKind kind, const CurlUvResponse *response, CatalogResult *result);
