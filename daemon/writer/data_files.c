/* SPDX-License-Identifier: Apache-2.0 */
/* `data-files` parsing (see data_files.h). Names follow the REST spec's DataFile
 * (open-api/rest-catalog-open-api.yaml): file-path, file-format, spec-id, partition (a list in
 * spec order), record-count, file-size-in-bytes, CountMap/ValueMap statistics
 * ({"keys": [...], "values": [...]}), split-offsets, sort-order-id. The numeric rules are
 * Java's DataFiles.Builder and BaseFile: counts are never negative. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/utf8.h"
#include "writer/data_files.h"

static const char *const known_fields[] = {
        "content",      "file-path",    "location",          "file-format",
        "spec-id",      "partition",    "record-count",      "file-size-in-bytes",
        "column-sizes", "value-counts", "null-value-counts", "nan-value-counts",
        "lower-bounds", "upper-bounds", "split-offsets",     "sort-order-id",
        "first-row-id", "key-metadata",
};

DataFile *data_files_free(DataFile *files, size_t n) {
        for (size_t i = 0; files && i < n; i++)
                data_file_deinit(&files[i]);
        free(files);
        return NULL;
}

static bool is_known_field(const char *key) {
        for (size_t i = 0; i < sizeof(known_fields) / sizeof(known_fields[0]); i++)
                if (strcmp(key, known_fields[i]) == 0)
                        return true;
        return false;
}

/* An integer member within [min, max]: 1 when set, 0 when absent, -EINVAL otherwise. */
static int get_integer(const json_t *o, const char *key, int64_t min, int64_t max, int64_t *ret) {
        const json_t *v = json_object_get(o, key);

        if (!v)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
                return -EINVAL;
        *ret = json_integer_value(v);
        return 1;
}

/* The "keys" of a CountMap or ValueMap: field ids (positive ints), none twice. */
static int parse_map_keys(const json_t *map, const char *name, size_t *ret_n, int32_t **ret_ids,
                          Error *e) {
        const json_t *keys = json_object_get(map, "keys"), *values = json_object_get(map, "values"),
                     *k;
        int32_t *ids;
        size_t i, n;

        if (!json_is_object(map) || !json_is_array(keys) || !json_is_array(values) ||
            json_object_size(map) != 2)
                return error_set(
                        e, -EINVAL,
                        "'%s' must be an object {\"keys\": [field ids], \"values\": [...]}", name);
        n = json_array_size(keys);
        if (json_array_size(values) != n)
                return error_set(e, -EINVAL, "'%s' has %zu keys but %zu values", name, n,
                                 json_array_size(values));
        ids = calloc(n ? n : 1, sizeof(*ids));
        if (!ids)
                return error_set(e, -ENOMEM, "out of memory");
        json_array_foreach (keys, i, k) {
                if (!json_is_integer(k) || json_integer_value(k) < 1 ||
                    json_integer_value(k) > INT32_MAX) {
                        free(ids);
                        return error_set(e, -EINVAL,
                                         "'%s' key %zu must be a field id (a positive integer)",
                                         name, i);
                }
                ids[i] = (int32_t)json_integer_value(k);
                for (size_t j = 0; j < i; j++)
                        if (ids[j] == ids[i]) {
                                int32_t id = ids[i];

                                free(ids);
                                return error_set(e, -EINVAL, "'%s' lists field id %d twice", name,
                                                 id);
                        }
        }
        *ret_n = n;
        *ret_ids = ids;
        return 0;
}

static int parse_counts(const json_t *o, const char *name, DataFileCounts *c, Error *e) {
        const json_t *map = json_object_get(o, name), *v;
        size_t i;
        int r;

        if (!map || json_is_null(map))
                return 0;
        r = parse_map_keys(map, name, &c->n, &c->ids, e);
        if (r < 0)
                return r;
        c->is_present = true;
        c->values = calloc(c->n ? c->n : 1, sizeof(*c->values));
        if (!c->values)
                return error_set(e, -ENOMEM, "out of memory");
        json_array_foreach (json_object_get(map, "values"), i, v) {
                if (!json_is_integer(v))
                        return error_set(e, -EINVAL,
                                         "'%s' value %zu (field id %d) must be an integer", name, i,
                                         c->ids[i]);
                if (json_integer_value(v) < 0)
                        return error_set(
                                e, -EINVAL,
                                "'%s' value %zu (field id %d) is %lld, counts cannot be negative",
                                name, i, c->ids[i], (long long)json_integer_value(v));
                c->values[i] = json_integer_value(v);
        }
        return 0;
}

static int parse_bounds(const json_t *o, const char *name, DataFileBounds *b, Error *e) {
        const json_t *map = json_object_get(o, name), *v;
        size_t i;
        int r;

        if (!map || json_is_null(map))
                return 0;
        r = parse_map_keys(map, name, &b->n, &b->ids, e);
        if (r < 0)
                return r;
        b->is_present = true;
        b->json = calloc(b->n ? b->n : 1, sizeof(*b->json));
        if (!b->json)
                return error_set(e, -ENOMEM, "out of memory");
        json_array_foreach (json_object_get(map, "values"), i, v)
                b->json[i] = json_incref((json_t *)v);
        return 0;
}

static int parse_split_offsets(const json_t *o, DataFile *f, Error *e) {
        const json_t *array = json_object_get(o, "split-offsets"), *v;
        size_t i;

        if (!array || json_is_null(array))
                return 0;
        if (!json_is_array(array))
                return error_set(e, -EINVAL, "'split-offsets' must be an array of byte offsets");
        f->split_offsets = calloc(json_array_size(array) ? json_array_size(array) : 1,
                                  sizeof(*f->split_offsets));
        if (!f->split_offsets)
                return error_set(e, -ENOMEM, "out of memory");
        f->has_split_offsets = true;
        json_array_foreach (array, i, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                    json_integer_value(v) >= f->file_size_in_bytes)
                        return error_set(e, -EINVAL,
                                         "'split-offsets'[%zu] must be an integer from 0 to "
                                         "file-size-in-bytes - 1",
                                         i);
                f->split_offsets[i] = json_integer_value(v);
                f->n_split_offsets++;
        }
        return 0;
}

static int parse_one(const json_t *o, size_t max_path_bytes, DataFile *f, Error *e) {
        const char *key, *s;
        const json_t *v, *path, *alias;
        int64_t n;
        int r;

        if (!json_is_object(o))
                return error_set(e, -EINVAL, "must be an object describing a data file");
        json_object_foreach ((json_t *)o, key, v)
                if (!is_known_field(key))
                        return error_set(e, -EINVAL, "unknown field '%s'", key);

        v = json_object_get(o, "content");
        if (v && !(json_is_string(v) && strcmp(json_string_value(v), "data") == 0))
                return error_set(e, -EINVAL,
                                 "'content' must be \"data\": delete files cannot be described");
        if (json_object_get(o, "key-metadata"))
                return error_set(
                        e, -EINVAL,
                        "'key-metadata' is not supported: encrypted files cannot be described");
        v = json_object_get(o, "first-row-id");
        if (v && !json_is_null(v))
                return error_set(
                        e, -EINVAL,
                        "'first-row-id' must be absent: row ids are assigned by the commit");

        /* The REST name is file-path; location is accepted for writers that think in URIs. */
        path = json_object_get(o, "file-path");
        alias = json_object_get(o, "location");
        if (path && alias)
                return error_set(e, -EINVAL, "give 'file-path' or 'location', not both");
        if (!path)
                path = alias;
        s = json_string_value(path);
        if (!s || json_string_length(path) == 0 || strlen(s) != json_string_length(path) ||
            !utf8_is_valid(s, strlen(s)))
                return error_set(
                        e, -EINVAL,
                        "'file-path' is required: the data file's location, a UTF-8 string");
        if (strlen(s) > max_path_bytes)
                return error_set(e, -ENAMETOOLONG,
                                 "'file-path' is %zu bytes, above the limit of %zu "
                                 "(commit.max-path-bytes)",
                                 strlen(s), max_path_bytes);
        f->location = strdup(s);
        if (!f->location)
                return error_set(e, -ENOMEM, "out of memory");

        s = json_string_value(json_object_get(o, "file-format"));
        if (!s)
                return error_set(e, -EINVAL, "'file-format' is required: parquet, avro or orc");
        if (strcasecmp(s, "parquet") == 0)
                f->format = DATA_FILE_FORMAT_PARQUET;
        else if (strcasecmp(s, "avro") == 0)
                f->format = DATA_FILE_FORMAT_AVRO;
        else if (strcasecmp(s, "orc") == 0)
                f->format = DATA_FILE_FORMAT_ORC;
        else
                return error_set(
                        e, -EINVAL,
                        "'file-format' '%s' is not a data file format (parquet, avro or orc)", s);

        r = get_integer(o, "record-count", 0, INT64_MAX, &f->record_count);
        if (r <= 0)
                return error_set(e, -EINVAL, "'record-count' is required: an integer >= 0");
        r = get_integer(o, "file-size-in-bytes", 1, INT64_MAX, &f->file_size_in_bytes);
        if (r <= 0)
                return error_set(e, -EINVAL, "'file-size-in-bytes' is required: an integer > 0");
        r = get_integer(o, "spec-id", 0, INT32_MAX, &n);
        if (r < 0)
                return error_set(e, -EINVAL, "'spec-id' must be an integer >= 0");
        f->has_spec_id = r > 0;
        f->spec_id = (int32_t)n;
        r = get_integer(o, "sort-order-id", 0, INT32_MAX, &n);
        if (r < 0)
                return error_set(e, -EINVAL, "'sort-order-id' must be an integer >= 0");
        f->has_sort_order_id = r > 0;
        f->sort_order_id = (int32_t)n;

        v = json_object_get(o, "partition");
        if (v && !json_is_null(v) && !json_is_array(v))
                return error_set(e, -EINVAL,
                                 "'partition' must be a list of partition values in the order of "
                                 "the spec's fields");
        if (v && json_is_array(v))
                f->partition = json_incref((json_t *)v);

        r = parse_counts(o, "column-sizes", &f->column_sizes, e);
        if (r >= 0)
                r = parse_counts(o, "value-counts", &f->value_counts, e);
        if (r >= 0)
                r = parse_counts(o, "null-value-counts", &f->null_value_counts, e);
        if (r >= 0)
                r = parse_counts(o, "nan-value-counts", &f->nan_value_counts, e);
        if (r >= 0)
                r = parse_bounds(o, "lower-bounds", &f->lower_bounds, e);
        if (r >= 0)
                r = parse_bounds(o, "upper-bounds", &f->upper_bounds, e);
        if (r >= 0)
                r = parse_split_offsets(o, f, e);
        return r;
}

int data_files_parse(const json_t *array, size_t max_files, size_t max_path_bytes,
                     DataFile **ret_files, size_t *ret_n, Error *e) {
        DataFile *files;
        size_t n, i;
        const json_t *o;

        if (!json_is_array(array))
                return error_set(e, -EINVAL,
                                 "'data-files' must be an array of data file descriptions");
        n = json_array_size(array);
        if (n == 0)
                return error_set(e, -EINVAL, "'data-files' is empty: nothing to commit");
        if (n > max_files)
                return error_set(e, -E2BIG,
                                 "'data-files' lists %zu files, above the limit of %zu "
                                 "(commit.max-data-files-per-request)",
                                 n, max_files);
        files = calloc(n, sizeof(*files));
        if (!files)
                return error_set(e, -ENOMEM, "out of memory");
        json_array_foreach (array, i, o) {
                int r = parse_one(o, max_path_bytes, &files[i], e);

                /* A path may appear once per snapshot: twice would count its rows twice. */
                for (size_t j = 0; r >= 0 && j < i; j++)
                        if (strcmp(files[j].location, files[i].location) == 0)
                                r = error_set(e, -EINVAL,
                                              "repeats the file-path of 'data-files'[%zu] '%s'", j,
                                              files[i].location);
                if (r < 0) {
                        data_files_free(files, n);
                        return error_prefix(e, r, "'data-files'[%zu]", i);
                }
        }
        *ret_files = files;
        *ret_n = n;
        return 0;
}
