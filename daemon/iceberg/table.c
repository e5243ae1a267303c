/* SPDX-License-Identifier: Apache-2.0 */
/* Table metadata accessors over jansson (see table.h). Numbers are read strictly: jansson keeps
 * integers as long long, which holds every Iceberg long; non-integers are errors, never 0. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "iceberg/table.h"

int table_json_get_i64(const json_t *object, const char *key, int64_t *ret) {
        json_t *v = json_object_get(object, key);

        if (!json_is_integer(v))
                return -EINVAL;
        *ret = (int64_t)json_integer_value(v);
        return 0;
}

static const char *json_get_str(const json_t *object, const char *key) {
        return json_string_value(json_object_get(object, key));
}

int table_metadata_parse(json_t *load_result, TableMetadata **ret_table, Error *error) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        json_t *metadata, *properties;
        const char *metadata_path;
        int64_t v;
        char *dir;

        metadata = json_object_get(load_result, "metadata");
        if (!metadata)
                metadata = load_result;
        if (!json_is_object(metadata))
                return error_set(error, -EINVAL, "table metadata is not a JSON object");

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        t->metadata = json_incref(metadata);

        if (table_json_get_i64(metadata, "format-version", &v) < 0 || v < 1 || v > 3)
                return error_set(error, -EINVAL,
                                 "table metadata has no supported format-version (1 to 3)");
        t->format_version = (int)v;
        t->uuid = json_get_str(metadata, "table-uuid");
        t->location = json_get_str(metadata, "location");
        if (!t->uuid || !t->location || t->location[0] == '\0')
                return error_set(error, -EINVAL, "table metadata lacks table-uuid or location");
        if (table_json_get_i64(metadata, "last-sequence-number", &t->last_sequence_number) < 0)
                t->last_sequence_number = 0; /* v1 metadata may omit it */
        if (t->last_sequence_number < 0)
                return error_set(error, -EINVAL,
                                 "table metadata has a negative last-sequence-number");
        if (t->format_version >= 3) {
                if (table_json_get_i64(metadata, "next-row-id", &t->next_row_id) < 0 ||
                    t->next_row_id < 0)
                        return error_set(error, -EINVAL,
                                         "v3 table metadata lacks a valid next-row-id");
        }
        if (table_json_get_i64(metadata, "current-schema-id", &v) == 0 && v >= INT32_MIN &&
            v <= INT32_MAX) {
                t->current_schema_id = (int32_t)v;
                t->has_current_schema_id = true;
        }

        properties = json_object_get(metadata, "properties");
        metadata_path = json_get_str(properties, "write.metadata.path");
        if (metadata_path && metadata_path[0])
                dir = strdup(metadata_path);
        else if (asprintf(&dir, "%s/metadata", t->location) < 0)
                dir = NULL;
        if (!dir)
                return -ENOMEM;
        /* A trailing slash would give "dir//file" names. */
        for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
                dir[n - 1] = 0;
        t->metadata_dir = dir;

        *ret_table = TAKE_PTR(t);
        return 0;
}

TableMetadata *table_metadata_free(TableMetadata *t) {
        if (!t)
                return NULL;
        json_decref(t->metadata);
        free((char *)t->metadata_dir);
        free(t);
        return NULL;
}

/* The element of an array of objects whose integer member `key` equals `id`, or NULL. */
static json_t *json_array_find_id(const json_t *array, const char *key, int64_t id) {
        size_t i;
        json_t *o;

        json_array_foreach ((json_t *)array, i, o) {
                int64_t v;

                if (table_json_get_i64(o, key, &v) == 0 && v == id)
                        return o;
        }
        return NULL;
}

json_t *table_snapshot(const TableMetadata *t, int64_t snapshot_id) {
        return json_array_find_id(json_object_get(t->metadata, "snapshots"), "snapshot-id",
                                  snapshot_id);
}

int table_branch(const TableMetadata *t, const char *branch, TableBranch *ret_branch,
                 Error *error) {
        json_t *refs = json_object_get(t->metadata, "refs");
        json_t *ref = json_object_get(refs, branch);
        const char *type;
        int64_t id;

        if (!ref && strcmp(branch, "main") == 0) {
                /* Old metadata without refs: main is current-snapshot-id (-1 or null = none). */
                if (table_json_get_i64(t->metadata, "current-snapshot-id", &id) == 0 && id >= 0) {
                        *ret_branch = (TableBranch){ .exists = true,
                                                     .snapshot_id = id,
                                                     .snapshot = table_snapshot(t, id) };
                        return 0;
                }
        }
        if (!ref) {
                *ret_branch = (TableBranch){ .exists = false };
                return 0;
        }
        type = json_string_value(json_object_get(ref, "type"));
        if (type && strcmp(type, "branch") != 0)
                return error_set(error, -EINVAL, "ref '%s' is a %s, not a branch", branch, type);
        if (table_json_get_i64(ref, "snapshot-id", &id) < 0)
                return error_set(error, -EINVAL, "ref '%s' has no snapshot-id", branch);
        *ret_branch = (TableBranch){
                .exists = true, .snapshot_id = id, .ref = ref, .snapshot = table_snapshot(t, id)
        };
        return 0;
}

bool table_has_partition_spec(const TableMetadata *t, int32_t spec_id) {
        json_t *specs = json_object_get(t->metadata, "partition-specs");

        /* v1 metadata may carry only "partition-spec" with default-spec-id 0. */
        if (!specs)
                return spec_id == 0;
        return json_array_find_id(specs, "spec-id", spec_id) != NULL;
}

json_t *table_current_schema(const TableMetadata *t) {
        json_t *schemas = json_object_get(t->metadata, "schemas");

        if (schemas && t->has_current_schema_id)
                return json_array_find_id(schemas, "schema-id", t->current_schema_id);
        return json_object_get(t->metadata, "schema");
}

const char *table_property(const TableMetadata *t, const char *key) {
        return json_get_str(json_object_get(t->metadata, "properties"), key);
}

int table_default_spec_id(const TableMetadata *t, int32_t *ret) {
        int64_t v;

        if (table_json_get_i64(t->metadata, "default-spec-id", &v) < 0) {
                if (json_object_get(t->metadata, "partition-specs"))
                        return -EINVAL;
                v = 0;
        }
        if (v < 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (int32_t)v;
        return 0;
}

json_t *table_partition_spec(const TableMetadata *t, int32_t spec_id) {
        return json_array_find_id(json_object_get(t->metadata, "partition-specs"), "spec-id",
                                  spec_id);
}

bool table_inherits_snapshot_ids(const TableMetadata *t) {
        const char *v = table_property(t, TABLE_PROPERTY_SNAPSHOT_ID_INHERITANCE);

        /* SnapshotProducer: formatVersion > 1 || propertyAsBoolean(...); Java parses the
         * boolean case-insensitively. */
        return t->format_version > 1 || (v && strcasecmp(v, "true") == 0);
}

int table_json_get_i32(const json_t *o, const char *key, int32_t *ret) {
        int64_t v;

        if (table_json_get_i64(o, key, &v) < 0 || v < INT32_MIN || v > INT32_MAX)
                return -EINVAL;
        *ret = (int32_t)v;
        return 0;
}

bool table_json_int_array_has(const json_t *array, int64_t v) {
        size_t i;
        json_t *x;

        json_array_foreach (array, i, x)
                if (json_is_integer(x) && json_integer_value(x) == v)
                        return true;
        return false;
}

int table_json_array_append_int(json_t *array, int64_t v) {
        return json_array_append_new(array, json_integer(v)) < 0 ? -ENOMEM : 0;
}
