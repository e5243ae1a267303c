/* SPDX-License-Identifier: Apache-2.0 */
/* Described data files (see data_file.h): resolving them against the table. Partition values
 * are typed by the transform's result type (spec "Partition Transforms"), bounds by the column
 * type (spec "Manifests": lower_bounds/upper_bounds hold binary single values). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/data_file.h"

static void counts_deinit(DataFileCounts *c) {
        free(c->ids);
        free(c->values);
        *c = (DataFileCounts){ 0 };
}

static void bounds_deinit(DataFileBounds *b) {
        for (size_t i = 0; i < b->n; i++) {
                json_decref(b->json ? b->json[i] : NULL);
                if (b->bytes)
                        buf_deinit(&b->bytes[i]);
        }
        free(b->ids);
        free(b->json);
        free(b->bytes);
        *b = (DataFileBounds){ 0 };
}

void data_file_deinit(DataFile *f) {
        free(f->location);
        json_decref(f->partition);
        counts_deinit(&f->column_sizes);
        counts_deinit(&f->value_counts);
        counts_deinit(&f->null_value_counts);
        counts_deinit(&f->nan_value_counts);
        bounds_deinit(&f->lower_bounds);
        bounds_deinit(&f->upper_bounds);
        free(f->split_offsets);
        for (size_t i = 0; i < f->n_partition_values; i++)
                buf_deinit(&f->partition_values[i]);
        free(f->partition_values);
        free(f->partition_is_null);
        *f = (DataFile){ 0 };
}

int data_file_bounds_encoding_parse(const char *s, DataFileBoundsEncoding *ret) {
        if (strcmp(s, "typed") == 0)
                *ret = DATA_FILE_BOUNDS_TYPED;
        else if (strcmp(s, "binary") == 0)
                *ret = DATA_FILE_BOUNDS_BINARY;
        else
                return -EINVAL;
        return 0;
}

const char *data_file_format_name(DataFileFormat format) {
        switch (format) {
        case DATA_FILE_FORMAT_AVRO:
                return "AVRO";
        case DATA_FILE_FORMAT_ORC:
                return "ORC";
        default:
                return "PARQUET";
        }
}

static const json_t *schema_find_in_type(const json_t *type, int64_t field_id);

static const json_t *schema_find_in_struct(const json_t *st, int64_t field_id) {
        const json_t *field, *found;
        size_t i;

        json_array_foreach (json_object_get(st, "fields"), i, field) {
                json_t *type = json_object_get(field, "type");

                if (json_integer_value(json_object_get(field, "id")) == field_id &&
                    json_is_integer(json_object_get(field, "id")))
                        return type;
                found = schema_find_in_type(type, field_id);
                if (found)
                        return found;
        }
        return NULL;
}

static const json_t *schema_find_in_type(const json_t *type, int64_t field_id) {
        const char *kind = json_string_value(json_object_get(type, "type"));
        const json_t *found;

        if (!json_is_object(type) || !kind)
                return NULL;
        if (strcmp(kind, "struct") == 0)
                return schema_find_in_struct(type, field_id);
        if (strcmp(kind, "list") == 0) {
                if (json_integer_value(json_object_get(type, "element-id")) == field_id)
                        return json_object_get(type, "element");
                return schema_find_in_type(json_object_get(type, "element"), field_id);
        }
        if (strcmp(kind, "map") == 0) {
                if (json_integer_value(json_object_get(type, "key-id")) == field_id)
                        return json_object_get(type, "key");
                if (json_integer_value(json_object_get(type, "value-id")) == field_id)
                        return json_object_get(type, "value");
                found = schema_find_in_type(json_object_get(type, "key"), field_id);
                return found ? found
                             : schema_find_in_type(json_object_get(type, "value"), field_id);
        }
        return NULL;
}

const json_t *data_file_schema_find(const json_t *schema, int64_t field_id) {
        return schema_find_in_struct(schema, field_id);
}

int data_file_partition_type(const json_t *schema, const json_t *partition_field, IcebergType *ret,
                             Error *e) {
        const char *transform = json_string_value(json_object_get(partition_field, "transform"));
        json_t *source = json_object_get(partition_field, "source-id");
        const json_t *source_type;
        int r;

        if (!transform)
                return error_set(e, -EINVAL, "partition field has no transform");
        /* Transforms.java: bucket, year, month and hour give ints, day gives a date. */
        if (strncmp(transform, "bucket[", 7) == 0 || strcmp(transform, "year") == 0 ||
            strcmp(transform, "month") == 0 || strcmp(transform, "hour") == 0) {
                *ret = (IcebergType){ .id = ICEBERG_TYPE_INT };
                return 0;
        }
        if (strcmp(transform, "day") == 0) {
                *ret = (IcebergType){ .id = ICEBERG_TYPE_DATE };
                return 0;
        }
        if (strcmp(transform, "identity") != 0 && strcmp(transform, "void") != 0 &&
            strncmp(transform, "truncate[", 9) != 0)
                return error_set(e, -EOPNOTSUPP, "transform '%s' is not supported", transform);
        if (!json_is_integer(source))
                return error_set(e, -EOPNOTSUPP,
                                 "partition fields over several source columns are not supported");
        source_type = data_file_schema_find(schema, json_integer_value(source));
        if (!source_type)
                return error_set(e, -EINVAL, "source column %lld is not in the table schema",
                                 (long long)json_integer_value(source));
        r = iceberg_type_parse(source_type, ret, e);
        return r < 0 ? error_prefix(e, r, "source column %lld",
                                    (long long)json_integer_value(source))
                     : 0;
}

static int resolve_partition(DataFile *f, const json_t *schema, const json_t *spec, Error *e) {
        const json_t *fields = json_object_get(spec, "fields");
        size_t n = json_array_size(fields);
        int64_t spec_id = json_integer_value(json_object_get(spec, "spec-id"));

        if (!f->partition && n > 0)
                return error_set(e, -EINVAL,
                                 "'partition' is missing: partition spec %lld has %zu fields, "
                                 "give a list of their values in spec order",
                                 (long long)spec_id, n);
        if (f->partition && json_array_size(f->partition) != n)
                return error_set(e, -EINVAL,
                                 "'partition' has %zu values, partition spec %lld has %zu fields",
                                 json_array_size(f->partition), (long long)spec_id, n);
        if (n == 0)
                return 0;
        f->partition_values = calloc(n, sizeof(*f->partition_values));
        f->partition_is_null = calloc(n, sizeof(*f->partition_is_null));
        if (!f->partition_values || !f->partition_is_null)
                return error_set(e, -ENOMEM, "out of memory");
        f->n_partition_values = n;
        for (size_t i = 0; i < n; i++) {
                const json_t *field = json_array_get(fields, i),
                             *value = json_array_get(f->partition, i);
                const char *name = json_string_value(json_object_get(field, "name"));
                const char *transform = json_string_value(json_object_get(field, "transform"));
                IcebergType type;
                int r;

                buf_init(&f->partition_values[i], 1u << 20);
                r = data_file_partition_type(schema, field, &type, e);
                if (r < 0)
                        return error_prefix(e, r, "'partition'[%zu] (field '%s')", i,
                                            name ? name : "?");
                if (json_is_null(value)) {
                        f->partition_is_null[i] = true;
                        continue;
                }
                if (transform && strcmp(transform, "void") == 0)
                        return error_set(
                                e, -EINVAL,
                                "'partition'[%zu] (field '%s') must be null: its transform is void",
                                i, name ? name : "?");
                r = single_value_from_json(&type, value, &f->partition_values[i], e);
                if (r < 0)
                        return error_prefix(e, r, "'partition'[%zu] (field '%s')", i,
                                            name ? name : "?");
        }
        return 0;
}

static int check_counts(const DataFileCounts *c, const char *name, const json_t *schema, Error *e) {
        for (size_t i = 0; i < c->n; i++)
                if (!data_file_schema_find(schema, c->ids[i]))
                        return error_set(
                                e, -EINVAL,
                                "'%s' has field id %d, which the table schema does not have", name,
                                c->ids[i]);
        return 0;
}

/* Bound i of b: its column's primitive type, checked against the schema. */
static int bound_type(const DataFileBounds *b, size_t i, const char *name, const json_t *schema,
                      IcebergType *ret, Error *e) {
        const json_t *type_json = data_file_schema_find(schema, b->ids[i]);

        if (!type_json)
                return error_set(e, -EINVAL,
                                 "'%s' has field id %d, which the table schema does not have", name,
                                 b->ids[i]);
        if (iceberg_type_parse(type_json, ret, NULL) < 0)
                return error_set(e, -EINVAL, "'%s' has field id %d, which has no primitive type",
                                 name, b->ids[i]);
        if (json_is_null(b->json[i]))
                return error_set(e, -EINVAL, "'%s' value for field id %d is null", name, b->ids[i]);
        return 0;
}

typedef enum BoundForm {
        BOUND_FORM_NEITHER,
        BOUND_FORM_TYPED,
        BOUND_FORM_BINARY,
        BOUND_FORM_BOTH_SAME,      /* binary and fixed: hex either way, the same bytes */
        BOUND_FORM_BOTH_DIFFERENT, /* "CAFE" for a string, "1234" for a decimal(9, 0) */
} BoundForm;

/* Which encodings a bound value reads in, and whether they agree on its bytes. */
static int bound_form(const IcebergType *t, const json_t *value, BoundForm *ret) {
        _cleanup_(buf_deinitp) Buf typed = { 0 };
        _cleanup_(buf_deinitp) Buf binary = { 0 };
        int r_typed, r_binary;

        buf_init(&typed, 1u << 20);
        buf_init(&binary, 1u << 20);
        r_typed = single_value_from_json(t, value, &typed, /* e= */ NULL);
        r_binary = single_value_from_hex(t, value, &binary, /* e= */ NULL);
        if (r_typed == -ENOMEM || r_binary == -ENOMEM)
                return -ENOMEM;
        if (r_typed == 0 && r_binary == 0)
                *ret = typed.len == binary.len && memcmp(typed.data, binary.data, typed.len) == 0
                               ? BOUND_FORM_BOTH_SAME
                               : BOUND_FORM_BOTH_DIFFERENT;
        else
                *ret = r_typed == 0    ? BOUND_FORM_TYPED
                       : r_binary == 0 ? BOUND_FORM_BINARY
                                       : BOUND_FORM_NEITHER;
        return 0;
}

/* The first bound (map name and field id) that reads in one way only, or in two ways. */
typedef struct BoundWitness {
        const char *name;
        int32_t id;
} BoundWitness;

/* Decides DATA_FILE_BOUNDS_AUTO for f: a writer uses one encoding for all of a file's bounds,
 * so one value that reads in one form only decides for all. Guessing is never an option: bounds
 * read in the wrong form would make readers skip the file for rows it holds. */
static int bounds_encoding_detect(const DataFile *f, const json_t *schema,
                                  DataFileBoundsEncoding *ret, Error *e) {
        const DataFileBounds *maps[] = { &f->lower_bounds, &f->upper_bounds };
        const char *names[] = { "lower-bounds", "upper-bounds" };
        BoundWitness typed = { 0 }, binary = { 0 }, both = { 0 };

        for (size_t m = 0; m < 2; m++)
                for (size_t i = 0; i < maps[m]->n; i++) {
                        BoundWitness *w = NULL;
                        IcebergType type;
                        BoundForm form;
                        int r;

                        r = bound_type(maps[m], i, names[m], schema, &type, e);
                        if (r < 0)
                                return r;
                        r = bound_form(&type, maps[m]->json[i], &form);
                        if (r < 0)
                                return error_set(e, r, "out of memory");
                        if (form == BOUND_FORM_TYPED)
                                w = &typed;
                        else if (form == BOUND_FORM_BINARY)
                                w = &binary;
                        else if (form == BOUND_FORM_BOTH_DIFFERENT)
                                w = &both;
                        if (w && !w->name)
                                *w = (BoundWitness){ .name = names[m], .id = maps[m]->ids[i] };
                }
        if (typed.name && binary.name)
                return error_set(e, -EINVAL,
                                 "'%s' value for field id %d is a typed JSON value but '%s' value "
                                 "for field id %d is binary hex (Iceberg Java's encoding): give "
                                 "all bounds of a file in one encoding",
                                 typed.name, typed.id, binary.name, binary.id);
        if (binary.name)
                *ret = DATA_FILE_BOUNDS_BINARY;
        else if (typed.name || !both.name)
                *ret = DATA_FILE_BOUNDS_TYPED;
        else
                return error_set(e, -EINVAL,
                                 "'%s' value for field id %d reads both as a typed JSON value and "
                                 "as binary hex (Iceberg Java's encoding), with different values, "
                                 "and no other bound of the file tells which: give the request "
                                 "\"bounds-encoding\": \"typed\" or \"binary\"",
                                 both.name, both.id);
        return 0;
}

static int resolve_bounds(DataFileBounds *b, const char *name, const json_t *schema,
                          DataFileBoundsEncoding encoding, Error *e) {
        if (b->n == 0)
                return 0;
        b->bytes = calloc(b->n, sizeof(*b->bytes));
        if (!b->bytes)
                return error_set(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < b->n; i++)
                buf_init(&b->bytes[i], 1u << 20);
        for (size_t i = 0; i < b->n; i++) {
                IcebergType type;
                int r;

                r = bound_type(b, i, name, schema, &type, e);
                if (r < 0)
                        return r;
                if (encoding == DATA_FILE_BOUNDS_BINARY)
                        r = single_value_from_hex(&type, b->json[i], &b->bytes[i], e);
                else
                        r = single_value_from_json(&type, b->json[i], &b->bytes[i], e);
                if (r < 0)
                        return error_prefix(e, r, "'%s' value for field id %d%s", name, b->ids[i],
                                            encoding == DATA_FILE_BOUNDS_BINARY
                                                    ? " (binary hex, Iceberg Java's encoding)"
                                                    : "");
        }
        return 0;
}

int data_file_resolve(DataFile *f, const json_t *schema, const json_t *spec, Error *e) {
        DataFileBoundsEncoding encoding = f->bounds_encoding;
        int r;

        r = resolve_partition(f, schema, spec, e);
        if (r >= 0)
                r = check_counts(&f->column_sizes, "column-sizes", schema, e);
        if (r >= 0)
                r = check_counts(&f->value_counts, "value-counts", schema, e);
        if (r >= 0)
                r = check_counts(&f->null_value_counts, "null-value-counts", schema, e);
        if (r >= 0)
                r = check_counts(&f->nan_value_counts, "nan-value-counts", schema, e);
        if (r >= 0 && encoding == DATA_FILE_BOUNDS_AUTO)
                r = bounds_encoding_detect(f, schema, &encoding, e);
        if (r >= 0)
                r = resolve_bounds(&f->lower_bounds, "lower-bounds", schema, encoding, e);
        if (r >= 0)
                r = resolve_bounds(&f->upper_bounds, "upper-bounds", schema, encoding, e);
        return r;
}
