/* SPDX-License-Identifier: Apache-2.0 */
/* The requirements of a commit request checked against table metadata, with the rules and
 * messages of Iceberg Java 1.11's UpdateRequirement (CommitFailedException → -ESTALE). Pure. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>

#include "iceberg/table.h"
#include "iceberg/table_requirement-internal.h"

/* The requirement's expected integer against the metadata's value (UpdateRequirement). */
static int requirement_int(const json_t *md, const json_t *req, const char *req_key,
                           const char *md_key, const char *what, Error *error) {
        int64_t expected, actual = -1;

        if (table_json_get_i64(req, req_key, &expected) < 0)
                return error_set(error, -EINVAL, "requirement %s: no integer %s",
                                 json_string_value(json_object_get(req, "type")), req_key);
        (void)table_json_get_i64(md, md_key, &actual);
        if (expected != actual)
                return error_set(error, -ESTALE,
                                 "Requirement failed: %s changed: expected id %" PRId64
                                 " != %" PRId64,
                                 what, expected, actual);
        return 0;
}

int table_requirement_check(const json_t *md, const json_t *req, Error *error) {
        const char *type = json_string_value(json_object_get(req, "type"));

        if (!type)
                return error_set(error, -EINVAL, "requirement without a type");
        if (strcmp(type, "assert-create") == 0)
                return error_set(error, -ESTALE, "Requirement failed: table already exists");
        if (strcmp(type, "assert-table-uuid") == 0) {
                const char *uuid = json_string_value(json_object_get(req, "uuid"));
                const char *actual = json_string_value(json_object_get(md, "table-uuid"));

                if (!uuid)
                        return error_set(
                                error, -EINVAL,
                                "requirement assert-table-uuid: Invalid required UUID: null");
                if (!actual || strcasecmp(uuid, actual) != 0)
                        return error_set(
                                error, -ESTALE,
                                "Requirement failed: UUID does not match: expected %s != %s",
                                actual ? actual : "(none)", uuid);
                return 0;
        }
        if (strcmp(type, "assert-ref-snapshot-id") == 0) {
                const char *name = json_string_value(json_object_get(req, "ref"));
                const json_t *want = json_object_get(req, "snapshot-id");
                const json_t *ref;
                int64_t have;

                if (!name)
                        return error_set(error, -EINVAL,
                                         "requirement assert-ref-snapshot-id: no ref");
                if (want && !json_is_null(want) && !json_is_integer(want))
                        return error_set(error, -EINVAL,
                                         "requirement assert-ref-snapshot-id: snapshot-id is not "
                                         "an integer or null");
                ref = json_object_get(json_object_get(md, "refs"), name);
                if (ref) {
                        const char *kind = json_string_value(json_object_get(ref, "type"));

                        if (!kind)
                                kind = "branch";
                        (void)table_json_get_i64(ref, "snapshot-id", &have);
                        if (!json_is_integer(want))
                                return error_set(
                                        error, -ESTALE,
                                        "Requirement failed: %s %s was created concurrently", kind,
                                        name);
                        if (json_integer_value(want) != have)
                                return error_set(error, -ESTALE,
                                                 "Requirement failed: %s %s has changed: expected "
                                                 "id %lld != %" PRId64,
                                                 kind, name, (long long)json_integer_value(want),
                                                 have);
                } else if (json_is_integer(want))
                        return error_set(
                                error, -ESTALE,
                                "Requirement failed: branch or tag %s is missing, expected %lld",
                                name, (long long)json_integer_value(want));
                return 0;
        }
        if (strcmp(type, "assert-last-assigned-field-id") == 0)
                return requirement_int(md, req, "last-assigned-field-id", "last-column-id",
                                       "last assigned field id", error);
        if (strcmp(type, "assert-current-schema-id") == 0)
                return requirement_int(md, req, "current-schema-id", "current-schema-id",
                                       "current schema", error);
        if (strcmp(type, "assert-last-assigned-partition-id") == 0)
                return requirement_int(md, req, "last-assigned-partition-id", "last-partition-id",
                                       "last assigned partition id", error);
        if (strcmp(type, "assert-default-spec-id") == 0)
                return requirement_int(md, req, "default-spec-id", "default-spec-id",
                                       "default partition spec", error);
        if (strcmp(type, "assert-default-sort-order-id") == 0)
                return requirement_int(md, req, "default-sort-order-id", "default-sort-order-id",
                                       "default sort order", error);
        return error_set(error, -EINVAL, "unknown requirement type '%s'", type);
}
