/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: writer API commit requests (writer/request.c): the namespace and table from the
 * path and the JSON body, all from writers. Input: "NAMESPACE\nTABLE\nBODY". A refusal must say
 * why; an accepted request must have a key, a branch, manifests and a fingerprint. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "writer/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const CommitRequestLimits limits = { .max_manifests = 16,
                                                    .max_data_files = 16,
                                                    .max_path_bytes = 4096,
                                                    .max_properties = 16,
                                                    .max_properties_bytes = 4096 };
        const uint8_t *nl1, *nl2;
        char *ns, *table;
        CommitRequest *r = NULL;
        Error e = { 0 };

        nl1 = memchr(data, '\n', size);
        if (!nl1)
                return 0;
        nl2 = memchr(nl1 + 1, '\n', size - (size_t)(nl1 + 1 - data));
        if (!nl2)
                return 0;
        ns = strndup((const char *)data, (size_t)(nl1 - data));
        table = strndup((const char *)nl1 + 1, (size_t)(nl2 - nl1 - 1));
        if (!ns || !table)
                abort();
        if (request_parse(ns, table, slice_make(nl2 + 1, size - (size_t)(nl2 + 1 - data)), &limits,
                          &r, &e) == 0) {
                if (!r->idempotency_key || !r->branch || r->n_manifests == 0 || !r->fingerprint ||
                    !request_key_is_valid(r->idempotency_key))
                        abort();
                request_free(r);
        } else if (e.message[0] == 0)
                abort();
        free(ns);
        free(table);
        return 0;
}
