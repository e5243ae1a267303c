/* SPDX-License-Identifier: Apache-2.0 */
/* The entries of a committed manifest (any writer, format 1-3), read by field id with the
 * reader's inheritance rules applied: what a reader such as Iceberg Java sees for each data
 * file's snapshot id, sequence numbers and first_row_id. Pure: bytes in, structs out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_file.h"
#include "util/error.h"
#include "util/slice.h"

/* One manifest_entry (ids 0-4) with the parts of data_file r2 lineage needs, read through the
 * field table (manifest_fields.h). */
typedef struct ManifestEntry {
        int32_t status;       /* 0: MANIFEST_ENTRY_* */
        bool has_snapshot_id; /* 1 */
        int64_t snapshot_id;
        bool has_sequence_number; /* 3: the data sequence number */
        int64_t sequence_number;
        bool has_file_sequence_number; /* 4 */
        int64_t file_sequence_number;
        int32_t content;       /* 134: 0 data, 1 position deletes, 2 equality deletes */
        char *file_path;       /* 100, owned */
        int64_t record_count;  /* 103 */
        bool has_first_row_id; /* 142 */
        int64_t first_row_id;
        bool is_first_row_id_inherited; /* set by manifest_entries_inherit() */
        /* Delete files only (content 1 or 2), when set: 143, the data file a position delete
         * file or deletion vector applies to (owned, NULL when null); 144 and 145, where a
         * deletion vector's blob is in its Puffin file (v3). Never read for data files. */
        char *referenced_data_file;
        bool has_content_offset;
        int64_t content_offset;
        bool has_content_size_in_bytes;
        int64_t content_size_in_bytes;
} ManifestEntry;

/* Reads every entry of a manifest. More than max_entries entries is -E2BIG. On success
 * *ret_entries (owned; free with manifest_entries_free()) holds *ret_n entries in file order.
 * Returns 0, -EBADMSG for a file that is not a readable manifest (missing status, data_file,
 * file_path or record_count; a null or negative record_count), -EOPNOTSUPP (codec), -E2BIG,
 * -ENOMEM, with the entry index in *e. A delete file's fields 143-145 of another type than the
 * spec's are -EBADMSG too. */
int manifest_entries_read(Slice bytes, uint64_t max_entries, ManifestEntry **ret_entries,
                          size_t *ret_n, Error *e);
ManifestEntry *manifest_entries_free(ManifestEntry *entries, size_t n);

/* Applies the reader's inheritance for the manifest-list entry `m` (spec "Snapshot ID
 * Inheritance", "Sequence Number Inheritance", "First Row ID Inheritance"; Java's
 * InheritableMetadataFactory and ManifestReader): a null snapshot_id becomes m's
 * added_snapshot_id; null sequence numbers of ADDED entries (or of any entry when m's
 * sequence_number is 0) become m's sequence_number; when m has a first_row_id, each data entry
 * that is not DELETED and has none gets m.first_row_id plus the record counts of the earlier
 * such entries. Returns 0, or -EOVERFLOW past INT64_MAX with the entry in *e. */
int manifest_entries_inherit(ManifestEntry *entries, size_t n, const ManifestFile *m, Error *e);
