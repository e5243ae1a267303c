/* SPDX-License-Identifier: Apache-2.0 */
/* What a REST catalog's answer means (rest_answer-internal.h): the outcome of an HTTP status
 * (catalog_outcome_from_http, declared in rest_client.h where the client's users find it), a
 * 2xx body parsed and checked against what the call expects, an error body read into the
 * CatalogResult. Pure and loop-free: the thread pool parses large bodies with it. */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "catalog/rest.h"
#include "catalog/rest_answer-internal.h"
#include "catalog/rest_answer.h"

static_assert(sizeof(((CatalogResult *)0)->message) == sizeof(((RestError *)0)->message),
              "error messages are copied whole");
static_assert(sizeof(((CatalogResult *)0)->error_type) == sizeof(((RestError *)0)->type),
              "error types are copied whole");

bool rest_answer_is_mutation(CallKind kind) {
        return kind == CALL_COMMIT_TABLE || kind == CALL_CREATE_NAMESPACE ||
               kind == CALL_CREATE_TABLE;
}

int catalog_outcome_from_http(bool is_mutation, long http_status, const char *message) {
        if (http_status >= 200 && http_status <= 299)
                return _CATALOG_E_SUCCESS;
        switch (http_status) {
        case 404:
                return CATALOG_E_NOT_FOUND;
        case 409:
                return CATALOG_E_CONFLICT;
        case 429:
                /* Too Many Requests: not acted upon; Java retries it even for POST. */
                return CATALOG_E_UNAVAILABLE;
        case 400:
                /* Servers before 1.11.0 raise a plain ValidationException for a stale sequence
                 * number or first-row-id (PR #15126): a conflict, not our mistake. */
                if (is_mutation && message &&
                    (strstr(message, "first-row-id is behind") ||
                     strstr(message, "Cannot add snapshot with sequence number")))
                        return CATALOG_E_CONFLICT;
                return CATALOG_E_REJECTED;
        case 501:
                /* Not Implemented: nothing was done, and doing it again will not help. */
                return CATALOG_E_REJECTED;
        case 408:
                return is_mutation ? CATALOG_E_STATE_UNKNOWN : CATALOG_E_UNAVAILABLE;
        default:
                /* ErrorHandlers.java:119-139 makes 500/502/503/504 CommitStateUnknown (503 too,
                 * although the OpenAPI calls it unavailable); any other 5xx may equally come
                 * from behind a server that acted, so a mutation stays unknown. */
                if (http_status >= 500 && http_status <= 599)
                        return is_mutation ? CATALOG_E_STATE_UNKNOWN : CATALOG_E_UNAVAILABLE;
                return CATALOG_E_REJECTED;
        }
}

const char *rest_answer_describe(CallKind kind) {
        switch (kind) {
        case CALL_CONFIG:
                return "load catalog config";
        case CALL_LOAD_TABLE:
                return "load table";
        case CALL_COMMIT_TABLE:
                return "commit table";
        case CALL_CREATE_NAMESPACE:
                return "create namespace";
        case CALL_CREATE_TABLE:
                return "create table";
        }
        return "call";
}

/* Parses a 2xx body and checks the envelope the call expects. Pure and loop-free: the thread
 * pool runs it for large bodies, so it must stay O(size) work on its inputs only. */
int rest_answer_parse(CallKind kind, Slice body, json_t **ret_json, Error *error) {
        _cleanup_(json_decrefp) json_t *json = NULL;
        int r;

        r = rest_json_parse(body, &json, error);
        if (r < 0)
                return r;
        if (kind == CALL_LOAD_TABLE) {
                r = rest_table_result_check(json, error);
                if (r < 0)
                        return r;
        }
        *ret_json = TAKE_PTR(json);
        return 0;
}

/* Fills result from what rest_answer_parse() gave (r, and json, which it takes); returns the body
 * (owned) or NULL. The same on the loop and after the thread pool. */
json_t *rest_answer_read_parsed(CallKind kind, long http_status, int r, json_t *json,
                                const Error *error, CatalogResult *result) {
        if (r < 0) {
                json_decref(json);
                /* A mutation's verdict is its status line, whatever the body. */
                result->status = rest_answer_is_mutation(kind) ? 0 : r;
                catalog_result_set_message(result, "%s: HTTP %ld with an unreadable body: %s",
                                           rest_answer_describe(kind), http_status, error->message);
                return NULL;
        }
        return json;
}

/* Fills result from a 2xx answer; returns the parsed body (owned) or NULL. */
json_t *rest_answer_read_success(CallKind kind, const CurlUvResponse *response,
                                 CatalogResult *result) {
        bool is_mutation = rest_answer_is_mutation(kind);
        Error error = { 0 };
        json_t *body = NULL;
        int r;

        /* A mutation's verdict is its status line: a body we cannot read does not undo the
         * commit, so it stays a success and says why the body is missing. */
        if (response->body_error < 0) {
                result->status = is_mutation ? 0 : response->body_error;
                catalog_result_set_message(result, "%s: HTTP %ld response body dropped: %s",
                                           rest_answer_describe(kind), response->http_status,
                                           strerror(-response->body_error));
                return NULL;
        }
        if (response->body.len == 0) {
                if (!is_mutation) {
                        result->status = -EBADMSG;
                        catalog_result_set_message(result, "%s: HTTP %ld with an empty body",
                                                   rest_answer_describe(kind),
                                                   response->http_status);
                }
                return NULL;
        }
        r = rest_answer_parse(kind, response->body, &body, &error);
        return rest_answer_read_parsed(kind, response->http_status, r, body, &error, result);
}

void rest_answer_read_error(CallKind kind, const CurlUvResponse *response, CatalogResult *result) {
        RestError rest_error;
        char snippet[201];

        if (response->body_error == 0 && rest_error_parse(response->body, &rest_error) == 0) {
                memcpy(result->message, rest_error.message, sizeof(result->message));
                memcpy(result->error_type, rest_error.type, sizeof(result->error_type));
                if (result->message[0] == '\0')
                        catalog_result_set_message(result, "%s: HTTP %ld",
                                                   rest_answer_describe(kind),
                                                   response->http_status);
        } else {
                /* Not an IcebergErrorResponse (a proxy's or servlet container's HTML page):
                 * its first bytes are still the best clue. */
                rest_text_copy(snippet, sizeof(snippet), (const char *)response->body.ptr,
                               response->body.len);
                catalog_result_set_message(result, "%s: HTTP %ld%s%s", rest_answer_describe(kind),
                                           response->http_status, snippet[0] ? ": " : "", snippet);
        }
        result->status = catalog_outcome_from_http(rest_answer_is_mutation(kind),
                                                   response->http_status, result->message);

        /* libcurl resent the request after a reused connection died unanswered. The first copy
         * may have been applied; a commit's requirements then refuse the second (409), which
         * would read as "not committed" (redpanda-data/connect #4591). Only a success is a
         * verdict here. */
        if (rest_answer_is_mutation(kind) && response->n_sends > 1) {
                char original[sizeof(result->message)];

                memcpy(original, result->message, sizeof(original));
                result->status = CATALOG_E_STATE_UNKNOWN;
                catalog_result_set_message(result,
                                           "%s: sent %u times after connections died, the "
                                           "answer to the last copy says nothing about the "
                                           "first: %s",
                                           rest_answer_describe(kind), response->n_sends, original);
        }
}
