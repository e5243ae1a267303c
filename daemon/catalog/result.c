/* SPDX-License-Identifier: Apache-2.0 */
/* The outcome of a catalog call, as every backend reports it and the engine reads it
 * (catalog.h): its name, its writer-API status, its message. */
#include <stdarg.h>
#include <stdio.h>

#include "catalog/catalog.h"
#include "catalog/rest.h"

const char *catalog_outcome_to_string(int status) {
        switch (status) {
        case _CATALOG_E_SUCCESS:
                return "success";
        case CATALOG_E_CONFLICT:
                return "conflict";
        case CATALOG_E_STATE_UNKNOWN:
                return "state-unknown";
        case CATALOG_E_REJECTED:
                return "rejected";
        case CATALOG_E_NOT_FOUND:
                return "not-found";
        case CATALOG_E_UNAVAILABLE:
                return "unavailable";
        default:
                return "error";
        }
}

int catalog_outcome_http_status(int status, const char **ret_type) {
        static const struct {
                int http_status;
                const char *type;
        } answers[] = {
                [_CATALOG_E_SUCCESS] = { 200, "success" },
                [CATALOG_E_CONFLICT] = { 409, "commit-conflict" },
                [CATALOG_E_STATE_UNKNOWN] = { 504, "commit-state-unknown" },
                [CATALOG_E_REJECTED] = { 502, "catalog-rejected" },
                [CATALOG_E_NOT_FOUND] = { 404, "no-such-table" },
                [CATALOG_E_UNAVAILABLE] = { 503, "catalog-unavailable" },
        };

        if (status < 0 || (size_t)status >= ELEMENTSOF(answers))
                status = CATALOG_E_UNAVAILABLE;
        *ret_type = answers[status].type;
        return answers[status].http_status;
}

void catalog_result_set_message(CatalogResult *result, const char *fmt, ...) {
        char text[2 * sizeof(result->message)];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        if (n < 0)
                n = 0;
        rest_text_copy(result->message, sizeof(result->message), text,
                       (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
}
