/* SPDX-License-Identifier: Apache-2.0 */
/* A data file a writer describes in JSON instead of a manifest (the writer API's `data-files`,
 * modelled on the REST spec's DataFile): what writer/ parsed, then resolved against the table's
 * schema and partition spec into the typed values a manifest entry holds. Pure. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/single_value.h"
#include "util/buf.h"
#include "util/error.h"

typedef enum DataFileFormat {
        DATA_FILE_FORMAT_PARQUET,
        DATA_FILE_FORMAT_AVRO,
        DATA_FILE_FORMAT_ORC,
} DataFileFormat;

/* How a file's lower-bounds and upper-bounds spell their values: JSON single values typed by
 * the column (the REST spec's ValueMap, our own form), or the base-16 text of the binary single
 * value, as Iceberg Java's ContentFileParser writes them (their Java type is map<int, binary>).
 * AUTO tells them apart by the values; see data_file_resolve(). */
typedef enum DataFileBoundsEncoding {
        DATA_FILE_BOUNDS_AUTO,
        DATA_FILE_BOUNDS_TYPED,
        DATA_FILE_BOUNDS_BINARY,
} DataFileBoundsEncoding;

/* A REST CountMap ({"keys": [field ids], "values": [longs]}): column_sizes and the counts. */
typedef struct DataFileCounts {
        bool is_present;
        int32_t *ids;
        int64_t *values;
        size_t n;
} DataFileCounts;

/* A REST ValueMap of bounds: JSON single values until resolved, then binary ones. */
typedef struct DataFileBounds {
        bool is_present;
        int32_t *ids;
        json_t **json; /* owned references */
        Buf *bytes;    /* filled by data_file_resolve(): binary single values (Appendix D) */
        size_t n;
} DataFileBounds;

/* One described data file; every pointer member is owned (data_file_deinit()). */
typedef struct DataFile {
        char *location;             /* 100 file_path, as the writer sent it */
        DataFileFormat format;      /* 101 */
        int64_t record_count;       /* 103, >= 0 */
        int64_t file_size_in_bytes; /* 104, > 0 */
        bool has_spec_id;           /* absent: the table's default spec */
        int32_t spec_id;
        json_t *partition;                /* owned JSON array in spec order, or NULL when absent */
        DataFileCounts column_sizes;      /* 108 */
        DataFileCounts value_counts;      /* 109 */
        DataFileCounts null_value_counts; /* 110 */
        DataFileCounts nan_value_counts;  /* 137 */
        DataFileBounds lower_bounds;      /* 125 */
        DataFileBounds upper_bounds;      /* 128 */
        DataFileBoundsEncoding bounds_encoding;
        bool has_split_offsets; /* 132 */
        int64_t *split_offsets;
        size_t n_split_offsets;
        bool has_sort_order_id; /* 140 */
        int32_t sort_order_id;

        /* Filled by data_file_resolve(): one binary single value per partition field. */
        Buf *partition_values;
        bool *partition_is_null;
        size_t n_partition_values;
} DataFile;

void data_file_deinit(DataFile *f);
/* "typed" or "binary" -> *ret (the writer API's bounds-encoding). Returns 0 or -EINVAL. */
int data_file_bounds_encoding_parse(const char *s, DataFileBoundsEncoding *ret);
/* "PARQUET", "AVRO", "ORC": what Java writes in file_format (FileFormat.name()). */
const char *data_file_format_name(DataFileFormat format);

/* Checks a described file against the table's current schema (schema object) and its
 * partition spec (spec object), and converts its partition values (typed by the transforms'
 * result types) and bounds (typed by the columns' types) into binary single values. With
 * DATA_FILE_BOUNDS_AUTO the bounds' encoding is the one every value can be read in: a value
 * that reads only as typed JSON (a number, "2024-01-31", "abc") or only as binary hex ("0A000000"
 * for an int) decides it for the whole file; values of both forms in one file, or only values
 * that read in both with different results ("CAFE" for a string column), are refused. Returns
 * 0, -EINVAL with the rule in *e (values missing, extra or of the wrong type; statistics for a
 * field id the schema lacks; bounds for a column without a primitive type; bounds of mixed or
 * undecidable encoding), -EOPNOTSUPP for a
 * transform or type we cannot write, -ENOMEM. On failure the file may be partly resolved;
 * data_file_deinit() still frees everything. */
int data_file_resolve(DataFile *f, const json_t *schema, const json_t *spec, Error *e);

/* The type (JSON, borrowed) of the field with this id anywhere in the schema (struct fields,
 * list elements, map keys and values), or NULL. */
const json_t *data_file_schema_find(const json_t *schema, int64_t field_id);
/* The result type of a partition field: the source column's type for identity, truncate and
 * void; int for bucket, year, month, hour; date for day. Returns 0, -EINVAL (source id not in
 * the schema) or -EOPNOTSUPP (unknown transform, or a source type without single values). */
int data_file_partition_type(const json_t *schema, const json_t *partition_field, IcebergType *ret,
                             Error *e);
