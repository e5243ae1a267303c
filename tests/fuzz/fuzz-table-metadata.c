/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a vN.metadata.json as the embedded filesystem catalog reads it from a warehouse
 * (any engine may have written it): parsed for a commit (iceberg/table.c) and extended by a
 * typical commit request (iceberg/table_update.c), as every commit does, and each snapshot's
 * request record read (iceberg/snapshot.c). Any input ends in
 * success or an Error, never a crash or a leak; an accepted commit advances next-row-id by the
 * snapshot's added-rows on v3 tables. */
#include <stdint.h>
#include <stdlib.h>

#include "iceberg/snapshot.h"
#include "iceberg/table.h"
#include "iceberg/table_update.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *metadata, *request, *updated = NULL;
        TableMetadata *t = NULL;
        json_error_t jerr;
        Error e = { 0 };

        metadata = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
        if (!metadata)
                return 0;
        if (table_metadata_parse(metadata, &t, &e) == 0) {
                TableBranch head;

                (void)table_branch(t, "main", &head, &e);
                (void)table_current_schema(t);
                /* Each snapshot's request record, as a retry or GET /v1/commits reads it. */
                for (size_t i = 0; i < json_array_size(json_object_get(metadata, "snapshots"));
                     i++) {
                        const json_t *s = json_array_get(json_object_get(metadata, "snapshots"), i);
                        static const char *const keys[] = { "a", "p/a", "job-1", "" };
                        SnapshotRecordEntry r;

                        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
                                if (snapshot_record_find(s, keys[k], &r) == 0 &&
                                    (r.n_manifests > INT32_MAX || r.attempt == 0 || !r.branch ||
                                     !r.manifest_list))
                                        abort();
                }
                t = table_metadata_free(t);
        }
        request =
                json_pack("{s:[{s:s, s:s}, {s:s, s:s, s:n}], s:[{s:s, s:{s:I, s:I, s:I, s:s, "
                          "s:{s:s}, s:I, s:I}},"
                          " {s:s, s:s, s:s, s:I}]}",
                          "requirements", "type", "assert-table-uuid", "uuid",
                          "00000000-0000-4000-8000-000000000000", "type", "assert-ref-snapshot-id",
                          "ref", "main", "snapshot-id", "updates", "action", "add-snapshot",
                          "snapshot", "snapshot-id", (json_int_t)77, "sequence-number",
                          (json_int_t)1, "timestamp-ms", (json_int_t)1700000000000, "manifest-list",
                          "/warehouse/ns/t/metadata/snap-77.avro", "summary", "operation", "append",
                          "first-row-id", (json_int_t)0, "added-rows", (json_int_t)5, "action",
                          "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id",
                          (json_int_t)77);
        if (request &&
            table_update_apply(metadata, request, 1700000000001,
                               "/warehouse/ns/t/metadata/v1.metadata.json", &updated, &e) == 0) {
                json_t *before = json_object_get(metadata, "next-row-id"),
                       *after = json_object_get(updated, "next-row-id");

                if (json_is_integer(before) &&
                    json_integer_value(json_object_get(updated, "format-version")) >= 3 &&
                    (!json_is_integer(after) ||
                     json_integer_value(after) != json_integer_value(before) + 5))
                        abort();
                json_decref(updated);
        }
        json_decref(request);
        json_decref(metadata);
        return 0;
}
