/* SPDX-License-Identifier: Apache-2.0 */
/* The parts of Iceberg table metadata (REST LoadTableResult) a commit needs, read from JSON
 * once per attempt. Pure: no I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/error.h"

typedef struct TableMetadata {
        json_t *metadata; /* owned reference to the "metadata" object */
        int format_version;
        const char *uuid; /* borrowed from metadata */
        const char *location;
        const char *metadata_dir; /* write.metadata.path, else <location>/metadata (owned) */
        int64_t last_sequence_number;
        int64_t next_row_id; /* 0 when absent (v1/v2) */
        int32_t current_schema_id;
        bool has_current_schema_id;
} TableMetadata;

typedef struct TableBranch {
        bool exists; /* false: the commit creates the branch */
        int64_t snapshot_id;
        json_t *ref;      /* borrowed ref object (retention fields), NULL if new */
        json_t *snapshot; /* borrowed head snapshot, NULL if new or not listed */
} TableBranch;

/* Parses a LoadTableResult (or a bare metadata object). Returns -EINVAL with the reason for
 * metadata we cannot commit to (missing uuid/location, bad numbers). */
int table_metadata_parse(json_t *load_result, TableMetadata **ret_table, Error *error);
TableMetadata *table_metadata_free(TableMetadata *t);
DEFINE_CLEANUP_FUNC(TableMetadata, table_metadata_free);

/* Looks up a branch head. A tag of that name is -EINVAL: tags cannot be committed to. */
int table_branch(const TableMetadata *t, const char *branch, TableBranch *ret_branch, Error *error);
/* Returns the snapshot object with that id (borrowed) or NULL. */
json_t *table_snapshot(const TableMetadata *t, int64_t snapshot_id);
/* Whether partition spec `spec_id` exists in the table. */
bool table_has_partition_spec(const TableMetadata *t, int32_t spec_id);

/* The table's current schema object (the "schemas" entry with current-schema-id, or the v1
 * "schema"), borrowed; NULL when the metadata has none. */
json_t *table_current_schema(const TableMetadata *t);
/* Table property with the table's equality-delete policy: "reject" or "allow". */
#define TABLE_PROPERTY_EQUALITY_DELETES "icecommit.equality-deletes"
/* Comma-separated locations outside the table location where its data files may also live. */
#define TABLE_PROPERTY_ALLOWED_PREFIXES "icecommit.allowed-prefixes"

/* A table property's value (borrowed), or NULL when unset or not a string. */
const char *table_property(const TableMetadata *t, const char *key);
/* The default partition spec id; -EINVAL when the metadata has specs but no valid default. */
int table_default_spec_id(const TableMetadata *t, int32_t *ret);
/* The partition spec object with that id ({"spec-id":..,"fields":[..]}), borrowed, or NULL. */
json_t *table_partition_spec(const TableMetadata *t, int32_t spec_id);
/* Table property that lets format 1 tables take manifests whose entries inherit their snapshot
 * id (TableProperties.SNAPSHOT_ID_INHERITANCE_ENABLED); always on since format 2. */
#define TABLE_PROPERTY_SNAPSHOT_ID_INHERITANCE "compatibility.snapshot-id-inheritance.enabled"

/* Whether staged manifests (entries with null snapshot ids) may be committed as they are:
 * format 2 and later, or format 1 with the inheritance property "true". */
bool table_inherits_snapshot_ids(const TableMetadata *t);

/* Reads an int64 member strictly; -EINVAL when absent or not an integer. */
int table_json_get_i64(const json_t *object, const char *key, int64_t *ret);
/* The same for an int32 member; -EINVAL when absent, not an integer or out of range. */
int table_json_get_i32(const json_t *object, const char *key, int32_t *ret);
/* Whether a JSON array holds the integer v. */
bool table_json_int_array_has(const json_t *array, int64_t v);
/* Appends an integer; -ENOMEM. */
int table_json_array_append_int(json_t *array, int64_t v);
