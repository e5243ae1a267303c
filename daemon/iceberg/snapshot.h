/* SPDX-License-Identifier: Apache-2.0 */
/* The snapshot an append creates: its summary (Java SnapshotSummary rules) and the REST
 * CommitTableRequest carrying it. Pure JSON building, no I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "iceberg/table.h"
#include "util/error.h"

/* Summary keys recording the requests a snapshot committed (docs/design.md 3.3): their
 * idempotency keys, comma-separated; per key, in the same order, how many entries its manifests
 * take in the snapshot's manifest list (the batch's come first, in key order); the branch; the
 * attempt that built the snapshot. With them any daemon rebuilds a request's receipt. */
#define SNAPSHOT_SUMMARY_KEYS "icecommit.idempotency-keys"
#define SNAPSHOT_SUMMARY_MANIFESTS "icecommit.manifest-counts"
#define SNAPSHOT_SUMMARY_BRANCH "icecommit.branch"
#define SNAPSHOT_SUMMARY_ATTEMPT "icecommit.attempt"

/* What a snapshot records of the requests it commits (the keys above). */
typedef struct SnapshotRecord {
        const char *keys;            /* "principal/key" (or "key") per request, comma-separated */
        const char *manifest_counts; /* per request its number of manifests, comma-separated */
        const char *branch;
        unsigned attempt;
} SnapshotRecord;

/* Where one request stands in a snapshot's record (snapshot_record_find). */
typedef struct SnapshotRecordEntry {
        size_t n_requests;  /* keys in the record */
        size_t list_offset; /* its first manifest's index in the snapshot's manifest list */
        size_t n_manifests; /* its manifests there */
        unsigned attempt;   /* the attempt that built the snapshot */
        const char *branch; /* borrowed from the snapshot */
        int64_t snapshot_id;
        int64_t sequence_number;
        bool has_first_row_id; /* v3 */
        int64_t first_row_id;
        const char *manifest_list; /* borrowed */
} SnapshotRecordEntry;

typedef struct SnapshotAdded {
        int64_t data_files;
        int64_t records;
        int64_t files_size;            /* data and delete files (Java: addedSize) */
        int64_t equality_delete_files; /* the only delete files icecommitd commits */
        int64_t equality_deletes;      /* their record counts */
        int64_t manifests_created;     /* list entries added by this snapshot */
        int64_t manifests_kept;        /* inherited from the parent */
        int64_t manifests_replaced;    /* parent's manifests merged into created ones */
        int64_t entries_processed;     /* entries read to merge them */
        int64_t removed_data_files;    /* data files the snapshot marks DELETED */
        int64_t removed_records;       /* their record counts */
        int64_t removed_files_size;    /* their sizes */
        const char *operation;         /* NULL: as Java's RowDelta chooses it (below) */
} SnapshotAdded;

typedef struct SnapshotSpec {
        int64_t snapshot_id;
        bool has_parent;
        int64_t parent_snapshot_id;
        int64_t sequence_number;
        bool is_v1; /* format 1: no sequence-number (SnapshotParser reads 0) */
        int64_t timestamp_ms;
        bool has_schema_id;
        int32_t schema_id;
        const char *manifest_list;
        bool has_first_row_id; /* v3 only */
        int64_t first_row_id;
        int64_t added_rows;
        json_t *summary; /* borrowed; string values only */
} SnapshotSpec;

/* Whether a writer's snapshot property would clash with a key icecommitd computes. */
bool snapshot_summary_key_is_reserved(const char *key);

/* Builds the summary: writer properties, then operation (added->operation, else Java's RowDelta:
 * "append" with data only, "delete" with deletes only, "overwrite" with both), added-* counters
 * (only when > 0; equality delete files count as added-delete-files and
 * added-equality-delete-files, their rows as added-equality-deletes), deleted-data-files,
 * deleted-records and removed-files-size of removed data files (only when > 0), totals =
 * parent's + added - removed (left out when the parent's summary lacks one or it would be
 * negative; "0" based without a parent), manifests-created/kept/replaced, engine
 * keys, and the record of the requests (record may be NULL). Every value a string. */
int snapshot_summary_build(const json_t *parent_summary, const SnapshotAdded *added,
                           const json_t *writer_properties, const SnapshotRecord *record,
                           json_t **ret_summary, Error *error);

/* Builds the CommitTableRequest: requirements assert-table-uuid, assert-ref-snapshot-id (null
 * for a new branch) and assert-current-schema-id (when the table has one); updates add-snapshot
 * and set-snapshot-ref, the latter keeping the ref's retention fields. */
int snapshot_commit_request_build(const TableMetadata *table, const char *branch,
                                  const TableBranch *head, const SnapshotSpec *snapshot,
                                  json_t **ret_request);

/* Finds the snapshot whose summary records idempotency key `key` among the newest `lookback`
 * snapshots of table metadata (0: all). Returns it (borrowed) or NULL. */
json_t *snapshot_find_key(const json_t *metadata, const char *key, size_t lookback);
/* Whether snapshot s's summary records `key` (a whole entry of its comma-separated list). */
bool snapshot_records_key(const json_t *s, const char *key);
/* Where `key` stands in snapshot s's record: 0; -ENOENT when s does not record the key;
 * -ENODATA when s records it without the rest a receipt needs (committed by an icecommitd
 * before 0.13, or a record that does not add up), *ret then holds what s has: n_requests,
 * snapshot id, sequence number, first-row-id. */
int snapshot_record_find(const json_t *s, const char *key, SnapshotRecordEntry *ret);

/* Generates a positive, random snapshot id (Appendix F: not time based). */
int64_t snapshot_id_generate(void);
