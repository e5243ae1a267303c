/* SPDX-License-Identifier: Apache-2.0 */
/* Schemas, partition specs and sort orders of table metadata, validated as Iceberg Java 1.11's
 * Schema, PartitionSpec and SortOrder builders do (see table_schema.h). Pure. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "iceberg/table.h"
#include "iceberg/table_schema.h"

#define PARTITION_FIELD_ID_START 1000 /* PartitionSpec.PARTITION_DATA_ID_START */

/* ---- schemas ---------------------------------------------------------------------------- */

void table_schema_field_ids_deinit(SchemaFieldIds *s) {
        free(s->ids);
        *s = (SchemaFieldIds){ 0 };
}

static int table_schema_field_ids_add(SchemaFieldIds *s, const json_t *v, const char *what,
                                      const char *path, Error *error) {
        json_int_t id;

        if (!json_is_integer(v))
                return error_set(error, -EINVAL, "schema: %s of '%s' is missing or not an integer",
                                 what, path);
        id = json_integer_value(v);
        if (id <= 0 || id > INT32_MAX)
                return error_set(error, -EINVAL, "schema: %s %lld of '%s' must be between 1 and %d",
                                 what, (long long)id, path, INT32_MAX);
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 64;
                int32_t *ids = reallocarray(s->ids, cap, sizeof(*ids));

                if (!ids)
                        return -ENOMEM;
                s->ids = ids;
                s->cap = cap;
        }
        s->ids[s->n++] = (int32_t)id;
        return 0;
}

static int compare_i32(const void *a, const void *b) {
        int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

        return (x > y) - (x < y);
}

bool table_schema_field_ids_has(const SchemaFieldIds *s, int64_t id) {
        int32_t key;

        if (id < INT32_MIN || id > INT32_MAX || s->n == 0)
                return false;
        key = (int32_t)id;
        return bsearch(&key, s->ids, s->n, sizeof(key), compare_i32) != NULL;
}

/* Digits only, no sign, at most 9 of them (the values here are small). */
static bool parse_small_uint(const char *s, size_t len, int64_t *ret) {
        int64_t v = 0;

        if (len == 0 || len > 9)
                return false;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return true;
}

/* "decimal(P, S)": Types.fromPrimitiveString accepts blanks after the comma. Indexes, not
 * pointers: gcc's overread analysis misreads pointer arithmetic after the prefix check. */
static bool primitive_is_decimal(const char *t) {
        size_t len = strlen(t), comma, i;
        int64_t precision, scale;

        if (len < 12 || strncasecmp(t, "decimal(", 8) != 0 || t[len - 1] != ')')
                return false;
        for (comma = 8; comma < len && t[comma] != ','; comma++)
                ;
        if (comma == len || !parse_small_uint(t + 8, comma - 8, &precision))
                return false;
        for (i = comma + 1; i < len && t[i] == ' '; i++)
                ;
        if (i >= len - 1 || !parse_small_uint(t + i, len - 1 - i, &scale))
                return false;
        return precision >= 1 && precision <= 38 && scale <= precision;
}

static bool primitive_is_fixed(const char *t) {
        size_t len = strlen(t);
        int64_t length;

        if (len < 8 || strncasecmp(t, "fixed[", 6) != 0 || t[len - 1] != ']')
                return false;
        return parse_small_uint(t + 6, len - 7, &length) && length > 0;
}

static bool primitive_with_args(const char *t, const char *name) {
        size_t n = strlen(name), len = strlen(t);

        return strncasecmp(t, name, n) == 0 && t[n] == '(' && len > n + 2 && t[len - 1] == ')';
}

/* Returns the minimum format version of a primitive type, or 0 for an unknown type. */
static int primitive_min_format_version(const char *t) {
        static const char *const v1[] = { "boolean",     "int",    "long", "float",
                                          "double",      "date",   "time", "timestamp",
                                          "timestamptz", "string", "uuid", "binary" };
        static const char *const v3[] = { "timestamp_ns", "timestamptz_ns", "variant",
                                          "unknown",      "geometry",       "geography" };

        for (size_t i = 0; i < ELEMENTSOF(v1); i++)
                if (strcasecmp(t, v1[i]) == 0)
                        return 1;
        if (primitive_is_decimal(t) || primitive_is_fixed(t))
                return 1;
        for (size_t i = 0; i < ELEMENTSOF(v3); i++)
                if (strcasecmp(t, v3[i]) == 0)
                        return 3;
        if (primitive_with_args(t, "geometry") || primitive_with_args(t, "geography"))
                return 3;
        return 0;
}

static int schema_validate_type(const json_t *type, int format_version, SchemaFieldIds *ids,
                                const char *path, unsigned depth, Error *error);

static int schema_validate_struct(const json_t *type, int format_version, SchemaFieldIds *ids,
                                  const char *path, unsigned depth, Error *error) {
        const json_t *fields = json_object_get(type, "fields");
        size_t i;
        json_t *f;
        int r;

        if (!json_is_array(fields))
                return error_set(error, -EINVAL, "schema: struct '%s' has no \"fields\" array",
                                 path);
        json_array_foreach (fields, i, f) {
                const char *name = json_string_value(json_object_get(f, "name"));
                char child[512];

                if (!json_is_object(f))
                        return error_set(error, -EINVAL,
                                         "schema: field %zu of '%s' is not an object", i, path);
                if (!name || name[0] == '\0')
                        return error_set(error, -EINVAL, "schema: field %zu of '%s' has no name", i,
                                         path);
                snprintf(child, sizeof(child), "%s%s%s", path, path[0] ? "." : "", name);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(name,
                                   json_string_value(json_object_get(json_array_get(fields, j),
                                                                     "name"))) == 0)
                                return error_set(error, -EINVAL,
                                                 "schema: duplicate field name '%s'", child);
                r = table_schema_field_ids_add(ids, json_object_get(f, "id"), "field id", child,
                                               error);
                if (r < 0)
                        return r;
                if (!json_is_boolean(json_object_get(f, "required")))
                        return error_set(error, -EINVAL,
                                         "schema: field '%s' has no boolean \"required\"", child);
                r = schema_validate_type(json_object_get(f, "type"), format_version, ids, child,
                                         depth + 1, error);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int schema_validate_type(const json_t *type, int format_version, SchemaFieldIds *ids,
                                const char *path, unsigned depth, Error *error) {
        const char *kind;
        char child[512];
        int r;

        /* Nesting comes from input: bound the recursion. */
        if (depth > 64)
                return error_set(error, -EINVAL, "schema: '%s' is nested deeper than 64 levels",
                                 path);
        if (json_is_string(type)) {
                const char *t = json_string_value(type);
                int min = primitive_min_format_version(t);

                if (min == 0)
                        return error_set(error, -EINVAL, "schema: field '%s' has unknown type '%s'",
                                         path, t);
                if (min > format_version)
                        return error_set(error, -EINVAL,
                                         "schema: type '%s' of field '%s' requires format version "
                                         "%d, the table has %d",
                                         t, path, min, format_version);
                return 0;
        }
        kind = json_string_value(json_object_get(type, "type"));
        if (!kind)
                return error_set(error, -EINVAL, "schema: field '%s' has no type", path);
        if (strcmp(kind, "struct") == 0)
                return schema_validate_struct(type, format_version, ids, path, depth, error);
        if (strcmp(kind, "list") == 0) {
                snprintf(child, sizeof(child), "%s.element", path);
                r = table_schema_field_ids_add(ids, json_object_get(type, "element-id"),
                                               "element-id", path, error);
                if (r < 0)
                        return r;
                if (!json_is_boolean(json_object_get(type, "element-required")))
                        return error_set(error, -EINVAL,
                                         "schema: list '%s' has no boolean \"element-required\"",
                                         path);
                return schema_validate_type(json_object_get(type, "element"), format_version, ids,
                                            child, depth + 1, error);
        }
        if (strcmp(kind, "map") == 0) {
                r = table_schema_field_ids_add(ids, json_object_get(type, "key-id"), "key-id", path,
                                               error);
                if (r < 0)
                        return r;
                r = table_schema_field_ids_add(ids, json_object_get(type, "value-id"), "value-id",
                                               path, error);
                if (r < 0)
                        return r;
                if (!json_is_boolean(json_object_get(type, "value-required")))
                        return error_set(error, -EINVAL,
                                         "schema: map '%s' has no boolean \"value-required\"",
                                         path);
                snprintf(child, sizeof(child), "%s.key", path);
                r = schema_validate_type(json_object_get(type, "key"), format_version, ids, child,
                                         depth + 1, error);
                if (r < 0)
                        return r;
                snprintf(child, sizeof(child), "%s.value", path);
                return schema_validate_type(json_object_get(type, "value"), format_version, ids,
                                            child, depth + 1, error);
        }
        return error_set(error, -EINVAL, "schema: field '%s' has unknown type '%s'", path, kind);
}

/* Validates and returns the sorted field ids of `schema` (caller deinits ids). */
int table_schema_field_ids_collect(const json_t *schema, int format_version, SchemaFieldIds *ids,
                                   Error *error) {
        const char *type = json_string_value(json_object_get(schema, "type"));
        const json_t *identifiers;
        size_t i;
        json_t *v;
        int r;

        if (!json_is_object(schema) || !type || strcmp(type, "struct") != 0)
                return error_set(error, -EINVAL, "schema: must be an object of type \"struct\"");
        r = schema_validate_struct(schema, format_version, ids, "", 0, error);
        if (r < 0)
                return r;
        if (ids->n > 0)
                qsort(ids->ids, ids->n, sizeof(ids->ids[0]), compare_i32);
        for (i = 1; i < ids->n; i++)
                if (ids->ids[i] == ids->ids[i - 1])
                        return error_set(error, -EINVAL,
                                         "schema: field id %" PRId32 " is used twice", ids->ids[i]);
        identifiers = json_object_get(schema, "identifier-field-ids");
        if (identifiers && !json_is_array(identifiers))
                return error_set(error, -EINVAL, "schema: identifier-field-ids is not an array");
        json_array_foreach (identifiers, i, v)
                if (!json_is_integer(v) || !table_schema_field_ids_has(ids, json_integer_value(v)))
                        return error_set(
                                error, -EINVAL,
                                "schema: identifier-field-ids[%zu] is not a field id of the schema",
                                i);
        return 0;
}

int table_schema_validate(const json_t *schema, int format_version, int32_t *ret_highest_id,
                          Error *error) {
        _cleanup_(table_schema_field_ids_deinit) SchemaFieldIds ids = { 0 };
        int r;

        r = table_schema_field_ids_collect(schema, format_version, &ids, error);
        if (r < 0)
                return r;
        *ret_highest_id = ids.n > 0 ? ids.ids[ids.n - 1] : 0;
        return 0;
}

/* ---- partition specs and sort orders ---------------------------------------------------- */

static bool transform_is_known(const char *t) {
        static const char *const plain[] = { "identity", "year", "month", "day", "hour", "void" };
        int64_t n;
        size_t len;

        if (!t)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(plain); i++)
                if (strcmp(t, plain[i]) == 0)
                        return true;
        len = strlen(t);
        if (len > 0 && t[len - 1] == ']') {
                if (strncmp(t, "bucket[", 7) == 0)
                        return parse_small_uint(t + 7, len - 8, &n) && n > 0;
                if (strncmp(t, "truncate[", 9) == 0)
                        return parse_small_uint(t + 9, len - 10, &n) && n > 0;
        }
        return false;
}

const json_t *table_schema_by_id(const json_t *md, int64_t schema_id) {
        size_t i;
        json_t *s;

        json_array_foreach (json_object_get(md, "schemas"), i, s) {
                int64_t id;

                if (table_json_get_i64(s, "schema-id", &id) == 0 && id == schema_id)
                        return s;
        }
        return NULL;
}

const json_t *table_schema_current(const json_t *md) {
        int64_t id;

        if (table_json_get_i64(md, "current-schema-id", &id) < 0)
                return NULL;
        return table_schema_by_id(md, id);
}

/* The field with this id when it is reachable from the top through structs only (never inside a
 * list or map), else NULL: only those can be partition sources (Java's PartitionSpec
 * checkCompatibility). */
static const json_t *struct_field_by_id(const json_t *type, int64_t id) {
        const json_t *fields = json_object_get(type, "fields");
        size_t i;
        json_t *f;

        json_array_foreach (fields, i, f) {
                const json_t *t = json_object_get(f, "type"), *found;
                json_int_t fid = json_integer_value(json_object_get(f, "id"));

                if (fid == id)
                        return f;
                if (json_is_object(t) && json_is_string(json_object_get(t, "type")) &&
                    strcmp(json_string_value(json_object_get(t, "type")), "struct") == 0) {
                        found = struct_field_by_id(t, id);
                        if (found)
                                return found;
                }
        }
        return NULL;
}

/* Returns a copy of `spec` with "spec-id" set and every field's "field-id" assigned (kept when
 * given; else the id an existing spec uses for the same source and transform, as Java's
 * freshSpec does in v2+; else *last_partition_id + 1), validated against `ids` and `schema`
 * (sources are primitive fields outside lists and maps). */
int table_schema_partition_spec_fresh(const json_t *spec, const json_t *existing_specs,
                                      int format_version, int32_t spec_id,
                                      const SchemaFieldIds *ids, const json_t *schema,
                                      int32_t *last_partition_id, json_t **ret_spec, Error *error) {
        _cleanup_(json_decrefp) json_t *out = NULL;
        const json_t *fields;
        json_t *f, *new_fields;
        int32_t last = *last_partition_id;
        size_t i;

        if (!json_is_object(spec))
                return error_set(error, -EINVAL, "partition spec: not an object");
        fields = json_object_get(spec, "fields");
        if (!json_is_array(fields))
                return error_set(error, -EINVAL, "partition spec: no \"fields\" array");
        out = json_pack("{s:i, s:[]}", "spec-id", spec_id, "fields");
        if (!out)
                return -ENOMEM;
        new_fields = json_object_get(out, "fields");
        json_array_foreach (fields, i, f) {
                const char *name = json_string_value(json_object_get(f, "name"));
                const char *transform = json_string_value(json_object_get(f, "transform"));
                int64_t source_id;
                int32_t field_id;
                json_t *copy;

                if (!name || name[0] == '\0')
                        return error_set(error, -EINVAL, "partition spec: field %zu has no name",
                                         i);
                for (size_t j = 0; j < i; j++)
                        if (strcmp(name,
                                   json_string_value(json_object_get(json_array_get(fields, j),
                                                                     "name"))) == 0)
                                return error_set(error, -EINVAL,
                                                 "partition spec: duplicate field name '%s'", name);
                if (table_json_get_i64(f, "source-id", &source_id) < 0)
                        return error_set(error, -EINVAL,
                                         "partition spec: field '%s' has no integer source-id",
                                         name);
                if (!table_schema_field_ids_has(ids, source_id))
                        return error_set(error, -EINVAL,
                                         "partition spec: field '%s' has source-id %" PRId64
                                         ", which is not a field of the current schema",
                                         name, source_id);
                if (schema) {
                        const json_t *source = struct_field_by_id(schema, source_id);

                        if (!source)
                                return error_set(error, -EINVAL,
                                                 "partition spec: field '%s' has source-id %" PRId64
                                                 ", a field inside a list or map, which cannot be "
                                                 "a partition source",
                                                 name, source_id);
                        if (!json_is_string(json_object_get(source, "type")))
                                return error_set(error, -EINVAL,
                                                 "partition spec: field '%s' has source-id %" PRId64
                                                 ", which is not a primitive field",
                                                 name, source_id);
                }
                if (!transform_is_known(transform))
                        return error_set(error, -EINVAL,
                                         "partition spec: field '%s' has unknown transform '%s'",
                                         name, transform ? transform : "(none)");
                if (json_object_get(f, "field-id")) {
                        if (table_json_get_i32(f, "field-id", &field_id) < 0 ||
                            field_id < PARTITION_FIELD_ID_START)
                                return error_set(
                                        error, -EINVAL,
                                        "partition spec: field '%s' has a field-id below %d", name,
                                        PARTITION_FIELD_ID_START);
                } else {
                        size_t k, m;
                        json_t *s, *g;
                        bool found = false;

                        if (format_version > 1)
                                json_array_foreach (existing_specs, k, s) {
                                        json_array_foreach (json_object_get(s, "fields"), m, g) {
                                                int64_t sid;

                                                if (table_json_get_i64(g, "source-id", &sid) == 0 &&
                                                    sid == source_id &&
                                                    json_equal(json_object_get(g, "transform"),
                                                               json_object_get(f, "transform")) &&
                                                    table_json_get_i32(g, "field-id", &field_id) ==
                                                            0) {
                                                        found = true;
                                                        break;
                                                }
                                        }
                                        if (found)
                                                break;
                                }
                        if (!found) {
                                if (last == INT32_MAX)
                                        return error_set(error, -EINVAL,
                                                         "partition spec: field ids exhausted");
                                field_id = ++last;
                        }
                }
                if (field_id > last)
                        last = field_id;
                copy = json_pack("{s:s, s:s, s:I, s:i}", "name", name, "transform", transform,
                                 "source-id", (json_int_t)source_id, "field-id", field_id);
                if (!copy || json_array_append_new(new_fields, copy) < 0)
                        return -ENOMEM;
        }
        *last_partition_id = last;
        *ret_spec = TAKE_PTR(out);
        return 0;
}

int table_schema_sort_order_validate(const json_t *order, const SchemaFieldIds *ids, Error *error) {
        const json_t *fields = json_object_get(order, "fields");
        size_t i;
        json_t *f;

        if (!json_is_object(order) || !json_is_array(fields))
                return error_set(error, -EINVAL,
                                 "sort order: not an object with a \"fields\" array");
        json_array_foreach (fields, i, f) {
                const char *transform = json_string_value(json_object_get(f, "transform"));
                const char *direction = json_string_value(json_object_get(f, "direction"));
                const char *null_order = json_string_value(json_object_get(f, "null-order"));
                int64_t source_id;

                if (table_json_get_i64(f, "source-id", &source_id) < 0 ||
                    !table_schema_field_ids_has(ids, source_id))
                        return error_set(error, -EINVAL,
                                         "sort order: field %zu has a source-id that is not a "
                                         "field of the current schema",
                                         i);
                if (!transform_is_known(transform))
                        return error_set(error, -EINVAL,
                                         "sort order: field %zu has unknown transform '%s'", i,
                                         transform ? transform : "(none)");
                if (!direction || (strcmp(direction, "asc") != 0 && strcmp(direction, "desc") != 0))
                        return error_set(
                                error, -EINVAL,
                                "sort order: field %zu has direction '%s', not \"asc\" or \"desc\"",
                                i, direction ? direction : "(none)");
                if (!null_order || (strcmp(null_order, "nulls-first") != 0 &&
                                    strcmp(null_order, "nulls-last") != 0))
                        return error_set(error, -EINVAL,
                                         "sort order: field %zu has null-order '%s', not "
                                         "\"nulls-first\" or \"nulls-last\"",
                                         i, null_order ? null_order : "(none)");
        }
        return 0;
}

int table_schema_current_ids(const json_t *md, int format_version, SchemaFieldIds *ids,
                             const char *what, Error *error) {
        const json_t *schema = table_schema_current(md);

        if (!schema)
                return error_set(error, -EINVAL, "%s: the table has no current schema", what);
        return table_schema_field_ids_collect(schema, format_version, ids, error);
}
