/* SPDX-License-Identifier: Apache-2.0 */
/* The appliers of a commit's updates, one per action (table_apply-internal.h), with the checks
 * and messages of Iceberg Java 1.11's TableMetadata.Builder (ValidationException → -EINVAL,
 * RetryableValidationException, which the REST server turns into a 409, → -ESTALE). Pure; each
 * changes only the TableApply it is given. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "iceberg/table.h"
#include "iceberg/table_apply-internal.h"
#include "iceberg/table_schema.h"
#include "util/checked.h"
#include "util/parse.h"

void table_apply_deinit(TableApply *a) {
        json_decref(a->md);
        json_decref(a->writable);
        json_decref(a->added_snapshots);
        json_decref(a->added_schemas);
        json_decref(a->added_specs);
        json_decref(a->added_orders);
}

/* md[key] as a container this commit may change: copied from the input's (a shallow copy) the
 * first time, created empty when absent or of another type. NULL when out of memory. */
json_t *table_apply_writable(TableApply *a, const char *key, json_type type) {
        json_t *v = json_object_get(a->md, key), *copy;

        if (v && json_typeof(v) == type && json_object_get(a->writable, key))
                return v;
        if (v && json_typeof(v) == type)
                copy = json_copy(v);
        else
                copy = type == JSON_ARRAY ? json_array() : json_object();
        if (!copy || json_object_set_new(a->md, key, copy) < 0 ||
            json_object_set_new(a->writable, key, json_true()) < 0)
                return NULL;
        return copy;
}

/* From the newest: a commit's refs name the snapshots it just added. */
static json_t *snapshot_by_id(const json_t *md, int64_t snapshot_id) {
        const json_t *snapshots = json_object_get(md, "snapshots");

        for (size_t i = json_array_size(snapshots); i > 0; i--) {
                json_t *s = json_array_get(snapshots, i - 1);
                int64_t id;

                if (table_json_get_i64(s, "snapshot-id", &id) == 0 && id == snapshot_id)
                        return s;
        }
        return NULL;
}

/* Java writes no current snapshot as null from v3 on, -1 before (TableMetadataParser). */
int table_apply_no_current_snapshot(json_t *md, int format_version) {
        return json_object_set_new(md, "current-snapshot-id",
                                   format_version >= 3 ? json_null() : json_integer(-1)) < 0
                       ? -ENOMEM
                       : 0;
}

static int update_assign_uuid(TableApply *a, const json_t *u) {
        const char *uuid = json_string_value(json_object_get(u, "uuid"));

        if (!uuid || uuid[0] == '\0')
                return error_set(a->error, -EINVAL, "assign-uuid: Cannot set uuid to null");
        return json_object_set_new(a->md, "table-uuid", json_string(uuid)) < 0 ? -ENOMEM : 0;
}

static int update_upgrade_format_version(TableApply *a, const json_t *u) {
        int64_t v;

        if (table_json_get_i64(u, "format-version", &v) < 0)
                return error_set(a->error, -EINVAL,
                                 "upgrade-format-version: no integer format-version");
        if (v > TABLE_FORMAT_VERSION_MAX)
                return error_set(a->error, -EINVAL,
                                 "upgrade-format-version: Cannot upgrade table to unsupported "
                                 "format version: v%" PRId64 " (supported: v%d)",
                                 v, TABLE_FORMAT_VERSION_MAX);
        if (v < a->format_version)
                return error_set(a->error, -EINVAL,
                                 "upgrade-format-version: Cannot downgrade v%d table to v%" PRId64,
                                 a->format_version, v);
        if (v == a->format_version)
                return 0;
        a->format_version = (int)v;
        if (json_object_set_new(a->md, "format-version", json_integer(v)) < 0)
                return -ENOMEM;
        /* v1 may omit last-sequence-number; v2+ requires it. Row lineage starts at 0 (v3). */
        if (!json_object_get(a->md, "last-sequence-number") &&
            json_object_set_new(a->md, "last-sequence-number", json_integer(0)) < 0)
                return -ENOMEM;
        if (v >= 3 && !json_object_get(a->md, "next-row-id") &&
            json_object_set_new(a->md, "next-row-id", json_integer(0)) < 0)
                return -ENOMEM;
        return 0;
}

static int update_add_schema(TableApply *a, const json_t *u) {
        const json_t *schema = json_object_get(u, "schema");
        _cleanup_(table_schema_field_ids_deinit) SchemaFieldIds ids = { 0 };
        json_t *schemas, *s, *copy;
        int64_t last_column_id = 0, current_id = 0, new_id;
        int32_t highest;
        bool found = false;
        size_t i;
        int r;

        r = table_schema_field_ids_collect(schema, a->format_version, &ids, a->error);
        if (r < 0)
                return error_prefix(a->error, r, "add-schema");
        highest = ids.n > 0 ? ids.ids[ids.n - 1] : 0;
        (void)table_json_get_i64(a->md, "last-column-id", &last_column_id);
        (void)table_json_get_i64(a->md, "current-schema-id", &current_id);

        /* Reuse the id of an identical schema, else one above the highest (Java's
         * reuseOrCreateNewSchemaId). */
        schemas = json_object_get(a->md, "schemas");
        new_id = current_id;
        json_array_foreach (schemas, i, s) {
                int64_t id;
                json_t *a_ids = json_object_get(s, "identifier-field-ids"),
                       *b_ids = json_object_get(schema, "identifier-field-ids");

                if (table_json_get_i64(s, "schema-id", &id) < 0)
                        continue;
                if (json_equal(json_object_get(s, "fields"), json_object_get(schema, "fields")) &&
                    (json_array_size(a_ids) == 0 ? json_array_size(b_ids) == 0
                                                 : json_equal(a_ids, b_ids))) {
                        new_id = id;
                        found = true;
                        break;
                }
                if (id >= new_id)
                        new_id = id + 1;
        }
        if (found && highest <= last_column_id) {
                a->last_added_schema =
                        table_json_int_array_has(a->added_schemas, new_id) ? new_id : -1;
                return 0;
        }
        if (highest > last_column_id &&
            json_object_set_new(a->md, "last-column-id", json_integer(highest)) < 0)
                return -ENOMEM;
        if (!found) {
                schemas = table_apply_writable(a, "schemas", JSON_ARRAY);
                copy = json_deep_copy(schema);
                if (!schemas || !copy ||
                    json_object_set_new(copy, "schema-id", json_integer(new_id)) < 0 ||
                    json_array_append_new(schemas, copy) < 0)
                        return -ENOMEM;
        }
        a->last_added_schema = new_id;
        return table_json_array_append_int(a->added_schemas, new_id);
}

static int update_set_current_schema(TableApply *a, const json_t *u) {
        int64_t id;

        if (table_json_get_i64(u, "schema-id", &id) < 0)
                return error_set(a->error, -EINVAL, "set-current-schema: no integer schema-id");
        if (id == -1) {
                if (a->last_added_schema < 0)
                        return error_set(a->error, -EINVAL,
                                         "set-current-schema: Cannot set last added schema: no "
                                         "schema has been added");
                id = a->last_added_schema;
        }
        if (!table_schema_by_id(a->md, id))
                return error_set(
                        a->error, -EINVAL,
                        "set-current-schema: Cannot set current schema to unknown schema: %" PRId64,
                        id);
        return json_object_set_new(a->md, "current-schema-id", json_integer(id)) < 0 ? -ENOMEM : 0;
}

/* PartitionSpec.compatibleWith: same fields by source, transform and name, in order. */
static bool spec_compatible(const json_t *a, const json_t *b) {
        const json_t *fa = json_object_get(a, "fields"), *fb = json_object_get(b, "fields");

        if (json_array_size(fa) != json_array_size(fb))
                return false;
        for (size_t i = 0; i < json_array_size(fa); i++) {
                const json_t *x = json_array_get(fa, i), *y = json_array_get(fb, i);

                if (!json_equal(json_object_get(x, "source-id"), json_object_get(y, "source-id")) ||
                    !json_equal(json_object_get(x, "transform"), json_object_get(y, "transform")) ||
                    !json_equal(json_object_get(x, "name"), json_object_get(y, "name")))
                        return false;
        }
        return true;
}

static int update_add_spec(TableApply *a, const json_t *u) {
        const json_t *spec = json_object_get(u, "spec");
        _cleanup_(table_schema_field_ids_deinit) SchemaFieldIds ids = { 0 };
        _cleanup_(json_decrefp) json_t *fresh = NULL;
        json_t *specs, *s;
        int64_t new_id = 0;
        int32_t last_partition_id = PARTITION_FIELD_ID_START - 1;
        size_t i;
        int r;

        if (!json_is_object(spec) || !json_is_array(json_object_get(spec, "fields")))
                return error_set(a->error, -EINVAL,
                                 "add-spec: no spec object with a \"fields\" array");
        specs = json_object_get(a->md, "partition-specs");
        json_array_foreach (specs, i, s) {
                int64_t id;

                if (table_json_get_i64(s, "spec-id", &id) < 0)
                        continue;
                if (spec_compatible(spec, s)) {
                        a->last_added_spec = table_json_int_array_has(a->added_specs, id) ? id : -1;
                        return 0;
                }
                if (id >= new_id)
                        new_id = id + 1;
        }
        r = table_schema_current_ids(a->md, a->format_version, &ids, "add-spec", a->error);
        if (r < 0)
                return r;
        (void)table_json_get_i32(a->md, "last-partition-id", &last_partition_id);
        r = table_schema_partition_spec_fresh(spec, specs, a->format_version, (int32_t)new_id, &ids,
                                              table_schema_current(a->md), &last_partition_id,
                                              &fresh, a->error);
        if (r < 0)
                return error_prefix(a->error, r, "add-spec");
        specs = table_apply_writable(a, "partition-specs", JSON_ARRAY);
        if (!specs || json_array_append(specs, fresh) < 0 ||
            json_object_set_new(a->md, "last-partition-id", json_integer(last_partition_id)) < 0)
                return -ENOMEM;
        a->last_added_spec = new_id;
        return table_json_array_append_int(a->added_specs, new_id);
}

static int update_set_default_spec(TableApply *a, const json_t *u) {
        int64_t id;
        bool found = false;
        size_t i;
        json_t *s;

        if (table_json_get_i64(u, "spec-id", &id) < 0)
                return error_set(a->error, -EINVAL, "set-default-spec: no integer spec-id");
        if (id == -1) {
                if (a->last_added_spec < 0)
                        return error_set(a->error, -EINVAL,
                                         "set-default-spec: Cannot set last added spec: no spec "
                                         "has been added");
                id = a->last_added_spec;
        }
        json_array_foreach (json_object_get(a->md, "partition-specs"), i, s) {
                int64_t sid;

                if (table_json_get_i64(s, "spec-id", &sid) == 0 && sid == id)
                        found = true;
        }
        if (!found)
                return error_set(a->error, -EINVAL,
                                 "set-default-spec: unknown partition spec %" PRId64, id);
        return json_object_set_new(a->md, "default-spec-id", json_integer(id)) < 0 ? -ENOMEM : 0;
}

static int update_add_sort_order(TableApply *a, const json_t *u) {
        const json_t *order = json_object_get(u, "sort-order");
        _cleanup_(table_schema_field_ids_deinit) SchemaFieldIds ids = { 0 };
        json_t *orders, *o, *copy;
        int64_t new_id = 1; /* SortOrder.INITIAL_SORT_ORDER_ID; 0 is unsorted */
        size_t i;
        int r;

        orders = json_object_get(a->md, "sort-orders");
        r = table_schema_current_ids(a->md, a->format_version, &ids, "add-sort-order", a->error);
        if (r < 0)
                return r;
        r = table_schema_sort_order_validate(order, &ids, a->error);
        if (r < 0)
                return error_prefix(a->error, r, "add-sort-order");
        if (json_array_size(json_object_get(order, "fields")) == 0)
                new_id = 0;
        json_array_foreach (orders, i, o) {
                int64_t id;

                if (table_json_get_i64(o, "order-id", &id) < 0)
                        continue;
                if (json_equal(json_object_get(o, "fields"), json_object_get(order, "fields"))) {
                        a->last_added_order =
                                table_json_int_array_has(a->added_orders, id) ? id : -1;
                        return 0;
                }
                if (new_id != 0 && id >= new_id)
                        new_id = id + 1;
        }
        orders = table_apply_writable(a, "sort-orders", JSON_ARRAY);
        copy = json_pack("{s:I, s:O}", "order-id", (json_int_t)new_id, "fields",
                         json_object_get(order, "fields"));
        if (!orders || !copy) {
                json_decref(copy);
                return -ENOMEM;
        }
        if (json_array_append_new(orders, copy) < 0)
                return -ENOMEM;
        a->last_added_order = new_id;
        return table_json_array_append_int(a->added_orders, new_id);
}

static int update_set_default_sort_order(TableApply *a, const json_t *u) {
        int64_t id;
        bool found = false;
        size_t i;
        json_t *o;

        if (table_json_get_i64(u, "sort-order-id", &id) < 0)
                return error_set(a->error, -EINVAL,
                                 "set-default-sort-order: no integer sort-order-id");
        if (id == -1) {
                if (a->last_added_order < 0)
                        return error_set(a->error, -EINVAL,
                                         "set-default-sort-order: Cannot set last added sort "
                                         "order: no sort order has been added");
                id = a->last_added_order;
        }
        json_array_foreach (json_object_get(a->md, "sort-orders"), i, o) {
                int64_t oid;

                if (table_json_get_i64(o, "order-id", &oid) == 0 && oid == id)
                        found = true;
        }
        if (!found)
                return error_set(a->error, -EINVAL,
                                 "set-default-sort-order: unknown sort order %" PRId64, id);
        return json_object_set_new(a->md, "default-sort-order-id", json_integer(id)) < 0 ? -ENOMEM
                                                                                         : 0;
}

static int update_add_snapshot(TableApply *a, const json_t *u) {
        const json_t *snap = json_object_get(u, "snapshot");
        int64_t id, seq = 0, last_seq = 0, first_row_id, added_rows, next_row_id = 0, next;
        json_t *snapshots;

        if (!json_is_object(snap) || table_json_get_i64(snap, "snapshot-id", &id) < 0)
                return error_set(a->error, -EINVAL,
                                 "add-snapshot: no snapshot with an integer snapshot-id");
        if (!json_is_integer(json_object_get(snap, "timestamp-ms")))
                return error_set(a->error, -EINVAL,
                                 "add-snapshot: snapshot %" PRId64 " has no timestamp-ms", id);
        if (json_array_size(json_object_get(a->md, "schemas")) == 0)
                return error_set(
                        a->error, -EINVAL,
                        "add-snapshot: Attempting to add a snapshot before a schema is added");
        if (json_array_size(json_object_get(a->md, "partition-specs")) == 0)
                return error_set(a->error, -EINVAL,
                                 "add-snapshot: Attempting to add a snapshot before a partition "
                                 "spec is added");
        if (json_array_size(json_object_get(a->md, "sort-orders")) == 0)
                return error_set(
                        a->error, -EINVAL,
                        "add-snapshot: Attempting to add a snapshot before a sort order is added");
        if (snapshot_by_id(a->md, id))
                return error_set(a->error, -EINVAL,
                                 "add-snapshot: Snapshot already exists for id: %" PRId64, id);
        if (json_object_get(snap, "sequence-number") &&
            table_json_get_i64(snap, "sequence-number", &seq) < 0)
                return error_set(a->error, -EINVAL,
                                 "add-snapshot: sequence-number is not an integer");
        (void)table_json_get_i64(a->md, "last-sequence-number", &last_seq);

        /* A stale sequence number means the writer built on an older table: retryable. */
        if (a->format_version > 1 && seq <= last_seq &&
            json_is_integer(json_object_get(snap, "parent-snapshot-id")))
                return error_set(a->error, -ESTALE,
                                 "add-snapshot: Cannot add snapshot with sequence number %" PRId64
                                 " older than last sequence number %" PRId64,
                                 seq, last_seq);

        if (a->format_version >= 3) {
                if (table_json_get_i64(snap, "first-row-id", &first_row_id) < 0)
                        return error_set(
                                a->error, -EINVAL,
                                "add-snapshot: Cannot add a snapshot: first-row-id is null");
                if (table_json_get_i64(snap, "added-rows", &added_rows) < 0 || added_rows < 0)
                        return error_set(a->error, -EINVAL,
                                         "add-snapshot: snapshot %" PRId64
                                         " has first-row-id but no added-rows",
                                         id);
                (void)table_json_get_i64(a->md, "next-row-id", &next_row_id);
                if (first_row_id < next_row_id)
                        return error_set(a->error, -ESTALE,
                                         "add-snapshot: Cannot add a snapshot, first-row-id is "
                                         "behind table next-row-id: %" PRId64 " < %" PRId64,
                                         first_row_id, next_row_id);
                if (checked_add_i64(&next, next_row_id, added_rows))
                        return error_set(a->error, -EINVAL, "add-snapshot: next-row-id overflows");
                if (json_object_set_new(a->md, "next-row-id", json_integer(next)) < 0)
                        return -ENOMEM;
        }
        if (json_object_set_new(a->md, "last-sequence-number", json_integer(seq)) < 0)
                return -ENOMEM;
        snapshots = table_apply_writable(a, "snapshots", JSON_ARRAY);
        if (!snapshots || json_array_append_new(snapshots, json_deep_copy(snap)) < 0)
                return -ENOMEM;
        return table_json_array_append_int(a->added_snapshots, id);
}

static int optional_positive(TableApply *a, const json_t *u, const char *key, json_t *ref,
                             bool is_tag) {
        const json_t *v = json_object_get(u, key);

        if (!v || json_is_null(v))
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
                return error_set(a->error, -EINVAL,
                                 "set-snapshot-ref: %s must be a positive integer", key);
        if (is_tag && strcmp(key, "max-ref-age-ms") != 0)
                return error_set(a->error, -EINVAL,
                                 "set-snapshot-ref: Tags do not support setting %s", key);
        return json_object_set_new(ref, key, json_integer(json_integer_value(v))) < 0 ? -ENOMEM : 0;
}

static int update_set_snapshot_ref(TableApply *a, const json_t *u) {
        static const char *const retention[] = { "min-snapshots-to-keep", "max-snapshot-age-ms",
                                                 "max-ref-age-ms" };
        const char *name = json_string_value(json_object_get(u, "ref-name"));
        const char *type = json_string_value(json_object_get(u, "type"));
        _cleanup_(json_decrefp) json_t *ref = NULL;
        json_t *refs, *snap, *log, *entry;
        int64_t id, time_of_change;
        bool is_tag;
        int r;

        if (!name || name[0] == '\0')
                return error_set(a->error, -EINVAL, "set-snapshot-ref: no ref-name");
        if (table_json_get_i64(u, "snapshot-id", &id) < 0)
                return error_set(a->error, -EINVAL,
                                 "set-snapshot-ref: no integer snapshot-id for '%s'", name);
        if (!type || (strcasecmp(type, "branch") != 0 && strcasecmp(type, "tag") != 0))
                return error_set(a->error, -EINVAL,
                                 "set-snapshot-ref: type of '%s' is not \"branch\" or \"tag\"",
                                 name);
        is_tag = strcasecmp(type, "tag") == 0;
        ref = json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)id, "type",
                        is_tag ? "tag" : "branch");
        if (!ref)
                return -ENOMEM;
        for (size_t i = 0; i < ELEMENTSOF(retention); i++) {
                r = optional_positive(a, u, retention[i], ref, is_tag);
                if (r < 0)
                        return r;
        }

        refs = json_object_get(a->md, "refs");
        if (json_equal(json_object_get(refs, name), ref))
                return 0;
        snap = snapshot_by_id(a->md, id);
        if (!snap)
                return error_set(a->error, -EINVAL,
                                 "set-snapshot-ref: Cannot set %s to unknown snapshot: %" PRId64,
                                 name, id);
        if (strcmp(name, "main") == 0 && is_tag)
                return error_set(a->error, -EINVAL,
                                 "set-snapshot-ref: Cannot set main to a tag, it must be a branch");

        if (strcmp(name, "main") == 0) {
                if (json_object_set_new(a->md, "current-snapshot-id", json_integer(id)) < 0)
                        return -ENOMEM;
                /* A rollback to an older snapshot is logged at the time of the change. */
                if (!table_json_int_array_has(a->added_snapshots, id) ||
                    table_json_get_i64(snap, "timestamp-ms", &time_of_change) < 0)
                        time_of_change = a->last_updated_ms;
                log = table_apply_writable(a, "snapshot-log", JSON_ARRAY);
                entry = json_pack("{s:I, s:I}", "timestamp-ms", (json_int_t)time_of_change,
                                  "snapshot-id", (json_int_t)id);
                if (!log || !entry) {
                        json_decref(entry);
                        return -ENOMEM;
                }
                if (json_array_append_new(log, entry) < 0)
                        return -ENOMEM;
        }
        refs = table_apply_writable(a, "refs", JSON_OBJECT);
        return !refs || json_object_set(refs, name, ref) < 0 ? -ENOMEM : 0;
}

static int update_remove_snapshot_ref(TableApply *a, const json_t *u) {
        const char *name = json_string_value(json_object_get(u, "ref-name"));

        if (!name)
                return error_set(a->error, -EINVAL, "remove-snapshot-ref: no ref-name");
        if (strcmp(name, "main") == 0) {
                int r = table_apply_no_current_snapshot(a->md, a->format_version);

                if (r < 0)
                        return r;
        }
        if (!json_object_get(json_object_get(a->md, "refs"), name))
                return 0;
        return json_object_del(table_apply_writable(a, "refs", JSON_OBJECT), name) < 0 ? -ENOMEM
                                                                                       : 0;
}

static int update_set_properties(TableApply *a, const json_t *u) {
        const json_t *updates = json_object_get(u, "updates");
        json_t *properties;
        const char *key;
        json_t *v;

        if (!json_is_object(updates))
                return error_set(a->error, -EINVAL, "set-properties: no \"updates\" object");
        json_object_foreach ((json_t *)updates, key, v)
                if (!json_is_string(v))
                        return error_set(a->error, -EINVAL,
                                         "set-properties: value of '%s' is not a string", key);
        properties = table_apply_writable(a, "properties", JSON_OBJECT);
        if (!properties)
                return -ENOMEM;
        json_object_foreach ((json_t *)updates, key, v)
                if (json_object_set(properties, key, v) < 0)
                        return -ENOMEM;
        return 0;
}

static int update_remove_properties(TableApply *a, const json_t *u) {
        const json_t *removals = json_object_get(u, "removals");
        json_t *properties;
        size_t i;
        json_t *v;

        if (!json_is_array(removals))
                return error_set(a->error, -EINVAL, "remove-properties: no \"removals\" array");
        json_array_foreach (removals, i, v)
                if (!json_is_string(v))
                        return error_set(a->error, -EINVAL,
                                         "remove-properties: removals[%zu] is not a string", i);
        properties = table_apply_writable(a, "properties", JSON_OBJECT);
        if (!properties)
                return -ENOMEM;
        json_array_foreach (removals, i, v)
                (void)json_object_del(properties, json_string_value(v));
        return 0;
}

static int update_set_location(TableApply *a, const json_t *u) {
        const char *location = json_string_value(json_object_get(u, "location"));

        if (!location || location[0] == '\0')
                return error_set(a->error, -EINVAL, "set-location: no location");
        return json_object_set_new(a->md, "location", json_string(location)) < 0 ? -ENOMEM : 0;
}

static const struct {
        const char *action;
        TableApplyFn apply;
} updates_table[] = {
        { "assign-uuid", update_assign_uuid },
        { "upgrade-format-version", update_upgrade_format_version },
        { "add-schema", update_add_schema },
        { "set-current-schema", update_set_current_schema },
        { "add-spec", update_add_spec },
        { "set-default-spec", update_set_default_spec },
        { "add-sort-order", update_add_sort_order },
        { "set-default-sort-order", update_set_default_sort_order },
        { "add-snapshot", update_add_snapshot },
        { "set-snapshot-ref", update_set_snapshot_ref },
        { "remove-snapshot-ref", update_remove_snapshot_ref },
        { "set-properties", update_set_properties },
        { "remove-properties", update_remove_properties },
        { "set-location", update_set_location },
};

TableApplyFn table_apply_find(const char *action) {
        for (size_t k = 0; action && k < ELEMENTSOF(updates_table); k++)
                if (strcmp(action, updates_table[k].action) == 0)
                        return updates_table[k].apply;
        return NULL;
}
