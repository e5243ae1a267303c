/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest_entry and data_file fields (spec "Manifests"; Java's ManifestEntry and DataFile)
 * as one table: field id, name, Avro type, the format versions that have or require each, and its
 * slot in ManifestEntryFields. Every reader and writer of manifest entries goes through it (the
 * one reader: manifest_fields_read(); the one writer: manifest_fields_write()). Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "avro/fields.h"
#include "util/error.h"

/* Which format versions a field is in: always from a version on, except the v1-only ones. */
enum {
        MANIFEST_V1_ONLY = 1u << 0,
        MANIFEST_V1_UP = (1u << 0) | (1u << 1) | (1u << 2),
        MANIFEST_V2_UP = (1u << 1) | (1u << 2),
        MANIFEST_V3_UP = 1u << 2,
        MANIFEST_V_NONE = 0,
};
/* The bit of format version v (1-3) in those masks. */
#define MANIFEST_VERSION_BIT(v) (1u << ((v)-1))

/* The table. One row per field, in the order of the spec's tables (manifest_entry, then
 * data_file r2); adding a field is adding its row:
 *   X(ENUM, id, name, RECORD, Avro type, versions having it, versions requiring it)
 * ENUM gives MANIFEST_FIELD_<ENUM> = id; name is the spec's field name and the member of
 * ManifestEntryFields; RECORD is ENTRY (manifest_entry) or DATA_FILE (data_file r2); the Avro
 * type is that of the non-null branch (maps are arrays of key-value records in Iceberg's Avro);
 * a field not required in a version is a union with null there. */
#define MANIFEST_FIELDS(X)                                                                         \
        X(STATUS, 0, status, ENTRY, AVRO_INT32, MANIFEST_V1_UP, MANIFEST_V1_UP)                    \
        X(SNAPSHOT_ID, 1, snapshot_id, ENTRY, AVRO_INT64, MANIFEST_V1_UP, MANIFEST_V1_ONLY)        \
        X(SEQUENCE_NUMBER, 3, sequence_number, ENTRY, AVRO_INT64, MANIFEST_V2_UP, MANIFEST_V_NONE) \
        X(FILE_SEQUENCE_NUMBER, 4, file_sequence_number, ENTRY, AVRO_INT64, MANIFEST_V2_UP,        \
          MANIFEST_V_NONE)                                                                         \
        X(DATA_FILE, 2, data_file, ENTRY, AVRO_RECORD, MANIFEST_V1_UP, MANIFEST_V1_UP)             \
        X(CONTENT, 134, content, DATA_FILE, AVRO_INT32, MANIFEST_V2_UP, MANIFEST_V2_UP)            \
        X(FILE_PATH, 100, file_path, DATA_FILE, AVRO_STRING, MANIFEST_V1_UP, MANIFEST_V1_UP)       \
        X(FILE_FORMAT, 101, file_format, DATA_FILE, AVRO_STRING, MANIFEST_V1_UP, MANIFEST_V1_UP)   \
        X(PARTITION, 102, partition, DATA_FILE, AVRO_RECORD, MANIFEST_V1_UP, MANIFEST_V1_UP)       \
        X(RECORD_COUNT, 103, record_count, DATA_FILE, AVRO_INT64, MANIFEST_V1_UP, MANIFEST_V1_UP)  \
        X(FILE_SIZE, 104, file_size_in_bytes, DATA_FILE, AVRO_INT64, MANIFEST_V1_UP,               \
          MANIFEST_V1_UP)                                                                          \
        X(BLOCK_SIZE, 105, block_size_in_bytes, DATA_FILE, AVRO_INT64, MANIFEST_V1_ONLY,           \
          MANIFEST_V1_ONLY)                                                                        \
        X(FILE_ORDINAL, 106, file_ordinal, DATA_FILE, AVRO_INT32, MANIFEST_V1_ONLY,                \
          MANIFEST_V_NONE)                                                                         \
        X(SORT_COLUMNS, 107, sort_columns, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_ONLY,                \
          MANIFEST_V_NONE)                                                                         \
        X(COLUMN_SIZES, 108, column_sizes, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP, MANIFEST_V_NONE) \
        X(VALUE_COUNTS, 109, value_counts, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP, MANIFEST_V_NONE) \
        X(NULL_VALUE_COUNTS, 110, null_value_counts, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP,        \
          MANIFEST_V_NONE)                                                                         \
        X(NAN_VALUE_COUNTS, 137, nan_value_counts, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP,          \
          MANIFEST_V_NONE)                                                                         \
        X(LOWER_BOUNDS, 125, lower_bounds, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP, MANIFEST_V_NONE) \
        X(UPPER_BOUNDS, 128, upper_bounds, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP, MANIFEST_V_NONE) \
        X(KEY_METADATA, 131, key_metadata, DATA_FILE, AVRO_BYTES, MANIFEST_V1_UP, MANIFEST_V_NONE) \
        X(SPLIT_OFFSETS, 132, split_offsets, DATA_FILE, AVRO_ARRAY, MANIFEST_V1_UP,                \
          MANIFEST_V_NONE)                                                                         \
        X(EQUALITY_IDS, 135, equality_ids, DATA_FILE, AVRO_ARRAY, MANIFEST_V2_UP, MANIFEST_V_NONE) \
        X(SORT_ORDER_ID, 140, sort_order_id, DATA_FILE, AVRO_INT32, MANIFEST_V1_UP,                \
          MANIFEST_V_NONE)                                                                         \
        X(FIRST_ROW_ID, 142, first_row_id, DATA_FILE, AVRO_INT64, MANIFEST_V3_UP, MANIFEST_V_NONE) \
        X(REFERENCED_DATA_FILE, 143, referenced_data_file, DATA_FILE, AVRO_STRING, MANIFEST_V2_UP, \
          MANIFEST_V_NONE)                                                                         \
        X(CONTENT_OFFSET, 144, content_offset, DATA_FILE, AVRO_INT64, MANIFEST_V3_UP,              \
          MANIFEST_V_NONE)                                                                         \
        X(CONTENT_SIZE, 145, content_size_in_bytes, DATA_FILE, AVRO_INT64, MANIFEST_V3_UP,         \
          MANIFEST_V_NONE)

/* Field ids: MANIFEST_FIELD_STATUS = 0 ... MANIFEST_FIELD_CONTENT_SIZE = 145. */
#define MANIFEST_FIELD_ENUM_(upper, id, ...) MANIFEST_FIELD_##upper = id,
enum { MANIFEST_FIELDS(MANIFEST_FIELD_ENUM_) };
#undef MANIFEST_FIELD_ENUM_

/* Rows of the table: MANIFEST_ROW_STATUS = 0 ..., and their number MANIFEST_N_ROWS. */
#define MANIFEST_ROW_ENUM_(upper, ...) MANIFEST_ROW_##upper,
enum { MANIFEST_FIELDS(MANIFEST_ROW_ENUM_) MANIFEST_N_ROWS };
#undef MANIFEST_ROW_ENUM_

/* manifest_entry.status */
enum {
        MANIFEST_ENTRY_EXISTING = 0,
        MANIFEST_ENTRY_ADDED = 1,
        MANIFEST_ENTRY_DELETED = 2,
};

/* One field of an entry, read from a datum or to be written. The member in use follows the
 * row's Avro type; str and value are borrowed from the datum they were read from. */
typedef struct ManifestFieldValue {
        bool is_set;        /* the writer schema has the field and it holds a value, not null */
        int64_t number;     /* int, long */
        const char *str;    /* string (NUL-terminated, len without the NUL) or bytes */
        size_t len;         /* of str */
        avro_value_t value; /* record, array */
} ManifestFieldValue;

/* A decoded manifest entry: one ManifestFieldValue per row, named as the spec names the field
 * (status, snapshot_id, ..., file_path, ..., content_offset, content_size_in_bytes). A field not
 * read, null, or missing from the writer schema is not set ("absent"). */
#define MANIFEST_FIELD_MEMBER_(upper, id, name, ...) ManifestFieldValue name;
typedef struct ManifestEntryFields {
        MANIFEST_FIELDS(MANIFEST_FIELD_MEMBER_)
} ManifestEntryFields;
#undef MANIFEST_FIELD_MEMBER_

typedef enum ManifestFieldRecord {
        MANIFEST_RECORD_ENTRY,     /* manifest_entry */
        MANIFEST_RECORD_DATA_FILE, /* data_file r2, field 2 of manifest_entry */
} ManifestFieldRecord;

/* One row of the table. */
typedef struct ManifestFieldDef {
        int32_t id;
        const char *name;
        ManifestFieldRecord record;
        avro_type_t type;     /* AVRO_INT32, AVRO_INT64, AVRO_STRING, AVRO_BYTES, AVRO_RECORD
                               * or AVRO_ARRAY */
        unsigned versions;    /* MANIFEST_V*: the format versions whose schema has it */
        unsigned required_in; /* ... and those where it is required (no union with null) */
        size_t offset;        /* of its ManifestFieldValue in ManifestEntryFields */
} ManifestFieldDef;

/* The whole table (MANIFEST_N_ROWS rows, in MANIFEST_ROW_* order). */
const ManifestFieldDef *manifest_fields_table(void);
/* The row of field `id`, or NULL for an id the table lacks. */
const ManifestFieldDef *manifest_fields_def(int32_t id);
/* The slot of a row in a decoded entry. */
ManifestFieldValue *manifest_fields_slot(ManifestEntryFields *f, const ManifestFieldDef *def);

/* Where each field of the table is in one writer schema (the manifest's entry record). Borrows
 * the FieldsRecords' JSON and schemas from their OCF reader or writer. */
typedef struct ManifestFieldsLayout {
        FieldsRecord entry;
        FieldsRecord data_file; /* once manifest_fields_layout_nest() succeeded */
        bool has_data_file;
        int index[MANIFEST_N_ROWS]; /* position in its record, -1 when the schema lacks it */
} ManifestFieldsLayout;

/* Finds the manifest_entry fields of `entry` by field id; the data_file fields stay absent until
 * manifest_fields_layout_nest(). Never fails: which fields a reader needs is the reader's call. */
void manifest_fields_layout_init(const FieldsRecord *entry, ManifestFieldsLayout *ret);
/* Finds the data_file fields inside the entry's data_file record. Returns 0, or -EBADMSG when
 * the entry has no data_file field or it is no record (fields_record_nested()'s reason in *e). */
int manifest_fields_layout_nest(ManifestFieldsLayout *l, Error *e);
/* Position of field `id` in its record, or -1 when the writer schema lacks it (or the data_file
 * record is not resolved). `id` must be in the table. */
int manifest_fields_index(const ManifestFieldsLayout *l, int32_t id);

/* The one reader of manifest entries: reads the fields `ids` of one manifest_entry datum
 * (`entry`, of l's schema), in this order, into their slots of *f (each slot rewritten: set, or not
 * set for null or a field the schema lacks). A data_file field is read from f->data_file, so
 * MANIFEST_FIELD_DATA_FILE comes first (in this call or an earlier one on the same *f); while
 * data_file is not set its fields read as absent. Ints and longs go to number (a long accepts an
 * int), strings and bytes to str/len (strings checked to be UTF-8 without NUL), records and
 * arrays to value (their type is the caller's to check). Returns 0, or at the first field that
 * does not hold the table's type -EBADMSG with the reason in *e ("field 'content_offset' is a
 * string, expected long"); slots read before it stay filled. Every id must be in the table. */
int manifest_fields_read_ids(const ManifestFieldsLayout *l, avro_value_t *entry, const int32_t *ids,
                             size_t n_ids, ManifestEntryFields *f, Error *e);
#define manifest_fields_read(l, entry, f, e, ...)                                                  \
        manifest_fields_read_ids((l), (entry), (const int32_t[]){ __VA_ARGS__ },                   \
                                 sizeof((const int32_t[]){ __VA_ARGS__ }) / sizeof(int32_t), (f),  \
                                 (e))
/* Reads every field of the table the layout found, in table order (manifest_fields_read_ids()
 * over all rows): *f is then the whole entry, every absent field not set. */
int manifest_fields_read_all(const ManifestFieldsLayout *l, avro_value_t *entry,
                             ManifestEntryFields *f, Error *e);

/* A set slot, for writing. */
static inline ManifestFieldValue manifest_fields_number(int64_t v) {
        return (ManifestFieldValue){ .is_set = true, .number = v };
}
static inline ManifestFieldValue manifest_fields_string(const char *s) {
        return (ManifestFieldValue){ .is_set = true, .str = s };
}

/* Sets field `id` of `rec` (the entry datum, or its data_file for a data_file field) from v by
 * the table's type: int, long, string (v->str, NUL-terminated), bytes (str, len); null when v is
 * not set. Records and arrays are filled by the caller (fields_set_value()). Returns 0, -ENOENT
 * when the schema lacks the field, -EINVAL for a type the schema does not have, -ENOMEM. */
int manifest_fields_set(const ManifestFieldsLayout *l, avro_value_t *rec, int32_t id,
                        const ManifestFieldValue *v);
/* The one writer of manifest entries: fills the datum `entry` (of l's schema) from *f: every
 * optional field null, then each set int, long, string or bytes slot of the entry and its
 * data_file (in table order), so that only what is set is written. Records and arrays (partition,
 * metrics, split_offsets...) are the caller's to fill in *ret_data_file, the data_file record.
 * Returns 0, or as manifest_fields_set(). */
int manifest_fields_write(const ManifestFieldsLayout *l, avro_value_t *entry,
                          const ManifestEntryFields *f, avro_value_t *ret_data_file);
