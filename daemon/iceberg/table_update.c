/* SPDX-License-Identifier: Apache-2.0 */
/* Table metadata updates as a catalog applies them (see table_update.h): the whole commit
 * (requirements from table_requirement.c, then each update by its applier in table_apply.c, then
 * the logs) and the metadata of a new table. The rules and the messages follow Iceberg Java
 * 1.11: UpdateRequirement (CommitFailedException → -ESTALE), TableMetadata.Builder
 * (ValidationException → -EINVAL, RetryableValidationException, which the REST server turns
 * into a 409, → -ESTALE) and TableMetadataParser's layout. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "iceberg/table.h"
#include "iceberg/table_apply-internal.h"
#include "iceberg/table_requirement-internal.h"
#include "iceberg/table_schema.h"
#include "iceberg/table_update.h"
#include "util/checked.h"
#include "util/parse.h"

#define TABLE_FORMAT_VERSION_DEFAULT 2 /* the REST server's default for create */

/* Fills in what older writers may omit, as TableMetadataParser does on read: refs (main from
 * current-snapshot-id when "refs" is absent), the logs, properties, snapshots. */
static int metadata_normalize(json_t *md) {
        static const char *const arrays[] = { "snapshots", "snapshot-log", "metadata-log" };
        int64_t current;

        for (size_t i = 0; i < ELEMENTSOF(arrays); i++)
                if (!json_is_array(json_object_get(md, arrays[i])) &&
                    json_object_set_new(md, arrays[i], json_array()) < 0)
                        return -ENOMEM;
        if (!json_is_object(json_object_get(md, "properties")) &&
            json_object_set_new(md, "properties", json_object()) < 0)
                return -ENOMEM;
        if (!json_is_object(json_object_get(md, "refs"))) {
                json_t *refs = json_object();

                if (!refs || json_object_set_new(md, "refs", refs) < 0)
                        return -ENOMEM;
                if (table_json_get_i64(md, "current-snapshot-id", &current) == 0 && current >= 0 &&
                    json_object_set_new(refs, "main",
                                        json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)current,
                                                  "type", "branch")) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Java's updateSnapshotLog: snapshots set as main and replaced within the same commit never
 * were current; their snapshot-log entries go. */
static int snapshot_log_drop_intermediate(TableApply *a) {
        json_t *log = json_object_get(a->md, "snapshot-log");
        int64_t current = -1;

        /* Only this commit's snapshots can go, and they are at the end of the log. */
        if (json_array_size(a->added_snapshots) == 0)
                return 0;
        (void)table_json_get_i64(a->md, "current-snapshot-id", &current);
        for (size_t i = json_array_size(log); i > 0; i--) {
                int64_t id;

                if (table_json_get_i64(json_array_get(log, i - 1), "snapshot-id", &id) < 0 ||
                    id == current || !table_json_int_array_has(a->added_snapshots, id))
                        continue;
                log = table_apply_writable(a, "snapshot-log", JSON_ARRAY);
                if (!log || json_array_remove(log, i - 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int metadata_log_append(TableApply *a, int64_t previous_updated_ms, const char *previous) {
        const char *max_text =
                json_string_value(json_object_get(json_object_get(a->md, "properties"),
                                                  TABLE_UPDATE_PROPERTY_PREVIOUS_VERSIONS_MAX));
        json_t *log = table_apply_writable(a, "metadata-log", JSON_ARRAY), *entry;
        int64_t max = TABLE_UPDATE_PREVIOUS_VERSIONS_MAX_DEFAULT;

        if (max_text && parse_i64(max_text, &max) < 0)
                max = TABLE_UPDATE_PREVIOUS_VERSIONS_MAX_DEFAULT;
        if (!log)
                return -ENOMEM;
        if (max < 1)
                max = 1;
        /* Keep max - 1 old entries, then add the previous file (TableMetadata.addPreviousFile). */
        while (json_array_size(log) > 0 && (int64_t)json_array_size(log) >= max)
                if (json_array_remove(log, 0) < 0)
                        return -ENOMEM;
        entry = json_pack("{s:I, s:s}", "timestamp-ms", (json_int_t)previous_updated_ms,
                          "metadata-file", previous);
        return !entry || json_array_append_new(log, entry) < 0 ? -ENOMEM : 0;
}

int table_update_apply(const json_t *metadata, const json_t *commit_request, int64_t now_ms,
                       const char *previous_metadata_location, json_t **ret_new_metadata,
                       Error *error) {
        _cleanup_(table_apply_deinit) TableApply a = {
                .last_added_schema = -1,
                .last_added_spec = -1,
                .last_added_order = -1,
                .error = error,
        };
        const json_t *requirements, *updates, *x;
        int64_t format_version, previous_updated_ms = 0;
        size_t i;
        int r;

        if (!json_is_object(metadata))
                return error_set(error, -EINVAL, "table metadata is not an object");
        if (!json_is_object(commit_request))
                return error_set(error, -EINVAL, "commit request is not an object");
        requirements = json_object_get(commit_request, "requirements");
        updates = json_object_get(commit_request, "updates");
        if ((requirements && !json_is_array(requirements)) || !json_is_array(updates))
                return error_set(error, -EINVAL,
                                 "commit request needs \"updates\" (and \"requirements\") arrays");
        if (table_json_get_i64(metadata, "format-version", &format_version) < 0 ||
            format_version < 1 || format_version > TABLE_FORMAT_VERSION_MAX)
                return error_set(error, -EINVAL,
                                 "table metadata has no supported format-version (1 to %d)",
                                 TABLE_FORMAT_VERSION_MAX);

        /* An unknown action makes the whole request unreadable (a 400 before any requirement). */
        json_array_foreach (updates, i, x) {
                const char *action = json_string_value(json_object_get(x, "action"));

                if (!table_apply_find(action))
                        return error_set(error, -EINVAL,
                                         "updates[%zu]: unknown or unsupported action '%s'", i,
                                         action ? action : "(none)");
        }

        a.md = json_copy((json_t *)metadata);
        a.writable = json_object();
        a.added_snapshots = json_array();
        a.added_schemas = json_array();
        a.added_specs = json_array();
        a.added_orders = json_array();
        if (!a.md || !a.writable || !a.added_snapshots || !a.added_schemas || !a.added_specs ||
            !a.added_orders)
                return -ENOMEM;
        r = metadata_normalize(a.md);
        if (r < 0)
                return r;
        a.format_version = (int)format_version;
        (void)table_json_get_i64(metadata, "last-updated-ms", &previous_updated_ms);
        a.last_updated_ms = now_ms > previous_updated_ms ? now_ms : previous_updated_ms;

        json_array_foreach (requirements, i, x) {
                r = table_requirement_check(a.md, x, error);
                if (r < 0)
                        return r;
        }
        json_array_foreach (updates, i, x) {
                TableApplyFn apply =
                        table_apply_find(json_string_value(json_object_get(x, "action")));

                r = apply ? apply(&a, x) : 0;
                if (r < 0)
                        return r;
        }

        r = snapshot_log_drop_intermediate(&a);
        if (r < 0)
                return r;
        if (json_is_null(json_object_get(a.md, "current-snapshot-id")) ||
            json_integer_value(json_object_get(a.md, "current-snapshot-id")) < 0) {
                r = table_apply_no_current_snapshot(a.md, a.format_version);
                if (r < 0)
                        return r;
        }
        if (json_object_set_new(a.md, "last-updated-ms", json_integer(a.last_updated_ms)) < 0)
                return -ENOMEM;
        if (previous_metadata_location) {
                r = metadata_log_append(&a, previous_updated_ms, previous_metadata_location);
                if (r < 0)
                        return r;
        }
        *ret_new_metadata = TAKE_PTR(a.md);
        return 0;
}

bool table_update_deletes_after_commit(const json_t *metadata) {
        const char *v =
                json_string_value(json_object_get(json_object_get(metadata, "properties"),
                                                  TABLE_UPDATE_PROPERTY_DELETE_AFTER_COMMIT));

        /* PropertyUtil.propertyAsBoolean: Boolean.parseBoolean, so anything but "true" (in any
         * case) is false. */
        return v && strcasecmp(v, "true") == 0;
}

int table_update_removed_metadata_files(const json_t *base, const json_t *updated,
                                        json_t **ret_files) {
        _cleanup_(json_decrefp) json_t *kept = json_object(), *files = json_array();
        const json_t *entry;
        size_t i;

        if (!kept || !files)
                return -ENOMEM;
        /* Java compares MetadataLogEntry values: the file and its timestamp. */
        json_array_foreach (json_object_get(updated, "metadata-log"), i, entry) {
                const char *file = json_string_value(json_object_get(entry, "metadata-file"));

                if (file && json_object_set(kept, file, json_object_get(entry, "timestamp-ms")) < 0)
                        return -ENOMEM;
        }
        json_array_foreach (json_object_get(base, "metadata-log"), i, entry) {
                const json_t *file = json_object_get(entry, "metadata-file");
                const json_t *kept_at;

                if (!json_is_string(file))
                        continue;
                kept_at = json_object_get(kept, json_string_value(file));
                if (kept_at && json_equal(kept_at, json_object_get(entry, "timestamp-ms")))
                        continue;
                if (json_array_append(files, (json_t *)file) < 0)
                        return -ENOMEM;
        }
        *ret_files = TAKE_PTR(files);
        return 0;
}

/* ---- create ------------------------------------------------------------------------------- */

int table_update_metadata_create(const json_t *create_request, const char *location, int64_t now_ms,
                                 const char *uuid, json_t **ret_metadata, Error *error) {
        _cleanup_(table_schema_field_ids_deinit) SchemaFieldIds ids = { 0 };
        _cleanup_(json_decrefp) json_t *md = NULL, *properties = NULL, *spec = NULL, *schema = NULL,
                                       *order = NULL;
        const json_t *req_schema, *req_spec, *req_order, *req_properties;
        json_t *v;
        const char *name, *key, *loc;
        int64_t format_version = TABLE_FORMAT_VERSION_DEFAULT;
        int32_t highest, last_partition_id = PARTITION_FIELD_ID_START - 1;
        int r;

        if (!json_is_object(create_request))
                return error_set(error, -EINVAL, "create table request is not an object");
        name = json_string_value(json_object_get(create_request, "name"));
        if (!name || name[0] == '\0')
                return error_set(error, -EINVAL, "create table request has no name");

        req_properties = json_object_get(create_request, "properties");
        if (req_properties && !json_is_object(req_properties) && !json_is_null(req_properties))
                return error_set(error, -EINVAL, "properties is not an object");
        properties = json_object();
        if (!properties)
                return -ENOMEM;
        json_object_foreach ((json_t *)req_properties, key, v) {
                if (!json_is_string(v))
                        return error_set(error, -EINVAL, "property '%s' is not a string", key);
                if (strcmp(key, "format-version") == 0) {
                        if (parse_i64(json_string_value(v), &format_version) < 0 ||
                            format_version < 1 || format_version > TABLE_FORMAT_VERSION_MAX)
                                return error_set(error, -EINVAL,
                                                 "property format-version '%s' is not 1, 2 or 3",
                                                 json_string_value(v));
                        continue; /* a table property, not stored (TableMetadata) */
                }
                if (json_object_set(properties, key, v) < 0)
                        return -ENOMEM;
        }

        loc = json_string_value(json_object_get(create_request, "location"));
        if (!loc)
                loc = location;
        if (!loc || loc[0] == '\0')
                return error_set(error, -EINVAL, "create table request has no location");

        req_schema = json_object_get(create_request, "schema");
        if (!req_schema)
                return error_set(error, -EINVAL, "create table request has no schema");
        r = table_schema_field_ids_collect(req_schema, (int)format_version, &ids, error);
        if (r < 0)
                return r;
        highest = ids.n > 0 ? ids.ids[ids.n - 1] : 0;
        schema = json_deep_copy(req_schema);
        if (!schema || json_object_set_new(schema, "schema-id", json_integer(0)) < 0)
                return -ENOMEM;

        req_spec = json_object_get(create_request, "partition-spec");
        if (req_spec && !json_is_null(req_spec)) {
                r = table_schema_partition_spec_fresh(req_spec, /* existing_specs= */ NULL,
                                                      (int)format_version, 0, &ids, req_schema,
                                                      &last_partition_id, &spec, error);
                if (r < 0)
                        return r;
        } else {
                spec = json_pack("{s:i, s:[]}", "spec-id", 0, "fields");
                if (!spec)
                        return -ENOMEM;
        }

        req_order = json_object_get(create_request, "write-order");
        if (req_order && !json_is_null(req_order)) {
                r = table_schema_sort_order_validate(req_order, &ids, error);
                if (r < 0)
                        return r;
        }
        if (req_order && json_array_size(json_object_get(req_order, "fields")) > 0)
                order = json_pack("{s:i, s:O}", "order-id", 1, "fields",
                                  json_object_get(req_order, "fields"));
        else
                order = json_pack("{s:i, s:[]}", "order-id", 0, "fields");
        if (!order)
                return -ENOMEM;

        md = json_pack(
                "{s:I, s:s, s:s, s:I, s:I, s:i, s:i, s:[O], s:i, s:[O], s:i, s:I, s:[O], s:O,"
                " s:{}, s:[], s:[], s:[], s:[], s:[]}",
                "format-version", (json_int_t)format_version, "table-uuid", uuid, "location", loc,
                "last-sequence-number", (json_int_t)0, "last-updated-ms", (json_int_t)now_ms,
                "last-column-id", highest, "current-schema-id", 0, "schemas", schema,
                "default-spec-id", 0, "partition-specs", spec, "last-partition-id",
                last_partition_id, "default-sort-order-id",
                json_integer_value(json_object_get(order, "order-id")), "sort-orders", order,
                "properties", properties, "refs", "snapshots", "statistics", "partition-statistics",
                "snapshot-log", "metadata-log");
        if (!md)
                return -ENOMEM;
        r = table_apply_no_current_snapshot(md, (int)format_version);
        if (r < 0)
                return r;
        if (format_version >= 3 && json_object_set_new(md, "next-row-id", json_integer(0)) < 0)
                return -ENOMEM;
        *ret_metadata = TAKE_PTR(md);
        return 0;
}
