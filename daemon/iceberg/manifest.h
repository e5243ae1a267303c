/* SPDX-License-Identifier: Apache-2.0 */
/* A writer's staged manifest (an Iceberg v1/v2/v3 Avro manifest of ADDED entries with null
 * snapshot id, sequence numbers and first_row_id): parsed, validated against the staging
 * rules, and summarized into what its manifest-list entry needs. Pure; never rewrites it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "util/budget.h"
#include "util/cleanup.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* data_file content (field 134). */
enum {
        DATA_FILE_CONTENT_DATA = 0,
        DATA_FILE_CONTENT_POSITION_DELETES = 1,
        DATA_FILE_CONTENT_EQUALITY_DELETES = 2,
};

/* One file of a staged manifest (data_file r2: 100, 101, 103, 104, 134). */
typedef struct DataFileInfo {
        int32_t content;            /* 134 DATA_FILE_CONTENT_* */
        char *path;                 /* 100 file_path */
        char *format;               /* 101 file_format, as written ("PARQUET", "parquet"...) */
        int64_t record_count;       /* 103 */
        int64_t file_size_in_bytes; /* 104 */
} DataFileInfo;

/* What one parse may take. Every bound is the caller's configuration (named in messages). */
typedef struct ManifestLimits {
        uint64_t max_entries;   /* more entries than this: -E2BIG */
        size_t max_path_bytes;  /* a longer file_path: -E2BIG (commit.max-path-bytes); 0: none */
        size_t max_entry_bytes; /* an entry of more encoded bytes: -E2BIG, before it is decoded
                                 * (storage.max-manifest-entry-bytes); 0: none */
        /* The data files the request may still name, across its manifests: each entry takes
         * one, and an entry finding none left is -EDQUOT, before any of it is kept. NULL: no
         * such budget. Decremented also when the parse fails. */
        uint64_t *entries_left;
        /* Charged with the bytes the parsed manifest keeps (budget_take(): -EFBIG, -EBUSY), as
         * they are kept: per entry its DataFileInfo, file_path and file_format; per manifest
         * the StagedManifest, its schema and partition-spec JSON, staged location and partition
         * summaries. Held by the caller once the parse succeeded; given back on failure. NULL:
         * not counted. */
        BudgetHold *hold;
} ManifestLimits;

/* Owned by the caller of manifest_staged_parse(); every pointer member is owned. */
typedef struct StagedManifest {
        int format_version;        /* metadata "format-version": 1, 2 or 3 */
        int32_t content;           /* metadata "content": MANIFEST_CONTENT_DATA or _DELETES */
        int32_t partition_spec_id; /* metadata "partition-spec-id" */
        char *schema_json;         /* metadata "schema" (the writer's table schema), may be NULL */
        /* metadata MANIFEST_META_STAGED_LOCATION: where the writer staged the manifest this one
         * is icecommitd's copy of (manifest_staged_copy()); NULL for any other manifest */
        char *staged_location;
        char *partition_spec_json; /* metadata "partition-spec", may be NULL */
        int32_t added_files_count;
        int64_t added_rows_count; /* sum of record_count (deleted rows in a delete manifest) */
        int64_t added_files_size; /* sum of file_size_in_bytes */
        int32_t n_equality_delete_files; /* entries of content 2: the rest of a delete manifest */
        /* Per partition field, like Java's PartitionSummary. has_partitions is false when a
         * partition type is one we do not summarize (the list then writes null partitions,
         * which readers treat as "may match"); true with n_partitions 0 when unpartitioned. */
        bool has_partitions;
        PartitionFieldSummary *partitions;
        size_t n_partitions;
        DataFileInfo *files; /* in entry order */
        size_t n_files;
} StagedManifest;

/* Parses and validates a staged manifest. `location` (may be NULL) names it in messages.
 * Rejects, with -EINVAL and a message naming the entry index, the file path and the rule:
 * format-version missing or not 1/2/3, content neither data nor deletes, partition-spec-id
 * missing, no entries, entries that are not ADDED, a set snapshot_id, sequence_number,
 * file_sequence_number or first_row_id, a file whose content does not match the manifest's
 * (data files in data manifests; equality deletes with equality_ids in delete manifests;
 * position deletes and deletion vectors are refused), null or negative record_count or
 * file_size_in_bytes. Whether a delete manifest may be committed to a table is the caller's
 * decision (guardrails). Also -EBADMSG (not a readable Avro manifest),
 * -EOPNOTSUPP (codec), -E2BIG (more than limits->max_entries, a path or entry too long, or
 * other limits), -EDQUOT, -EFBIG and -EBUSY (the request's budgets in limits), -ENOMEM.
 * limits may be NULL for the defaults (MANIFEST_DEFAULT_MAX_ENTRIES, nothing else bounded). */
int manifest_staged_parse(Slice bytes, const char *location, const ManifestLimits *limits,
                          StagedManifest **ret_manifest, Error *e);
StagedManifest *manifest_staged_free(StagedManifest *m);
DEFINE_CLEANUP_FUNC(StagedManifest, manifest_staged_free);

/* The header metadata key of icecommitd's copy of a staged manifest that names where the
 * writer staged it (docs/design.md section 2.1, step 11), and the prefix of the keys only
 * icecommitd writes: a writer's manifest carrying one is refused. */
#define MANIFEST_META_STAGED_LOCATION "icecommit.staged-location"
#define MANIFEST_META_RESERVED_PREFIX "icecommit."

/* Appends to *out icecommitd's copy of a writer's staged manifest (bytes): the same file, byte
 * for byte, with MANIFEST_META_STAGED_LOCATION = staged_location added to its header, so that
 * the table references a file no writer can change and a receipt rebuilt from the table still
 * names where it was staged. Only the container is read (the caller parses the copy with
 * manifest_staged_parse(), so that what is checked is what is written). Returns 0, -EBADMSG
 * (not an Avro container), -EOPNOTSUPP (codec), -EINVAL (a header key under
 * MANIFEST_META_RESERVED_PREFIX), -E2BIG (past out's maximum), -ENOMEM, the reason in *e. */
int manifest_staged_copy(Slice bytes, const char *staged_location, Buf *out, Error *e);

/* What a committed manifest holds, by entry status: the file and row counts of its
 * manifest-list entry (field ids 504-506, 512-514). */
typedef struct ManifestCounts {
        int32_t added_files, existing_files, deleted_files;
        int64_t added_rows, existing_rows, deleted_rows;
} ManifestCounts;

/* Counts the entries of a committed manifest of any format version (v1 manifest lists may
 * leave these counts null: "unknown, assume non-zero", never 0). Sums record_count per status.
 * Returns 0, -EBADMSG (unreadable manifest, null status or record_count, overflow), -E2BIG
 * (more entries than limits->max_entries; limits may be NULL), -EOPNOTSUPP (codec), -ENOMEM,
 * with the reason in *e. */
int manifest_count_entries(Slice bytes, const ManifestLimits *limits, ManifestCounts *ret,
                           Error *e);
/* Sets the six counts of a manifest-list entry from `counts` and marks them known. */
void manifest_counts_apply(const ManifestCounts *counts, ManifestFile *m);

/* Default entry limit when no ManifestLimits are given. */
#define MANIFEST_DEFAULT_MAX_ENTRIES 1000000u
