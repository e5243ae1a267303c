/* SPDX-License-Identifier: Apache-2.0 */
/* The lineage audit of one table, pure: snapshots and refs from table metadata, the manifest
 * lists the caller read for them, the checks (overlaps, next-row-id, first_row_id presence,
 * gaps) as a JSON report (table_report.h), and the steps of a row-id lookup. No I/O, no loop:
 * the caller (audit/api.c) reads the files on the thread pool and hands the bytes in. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_file.h"
#include "iceberg/table.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/slice.h"

typedef struct AuditLimits {
        uint64_t max_snapshots; /* more snapshots in metadata: -E2BIG */
        uint64_t max_manifests; /* more manifest-list entries over all lists: -E2BIG */
        uint64_t max_findings;  /* findings listed per check (all are counted) */
} AuditLimits;

/* A snapshot of the metadata; strings are borrowed from the table's metadata JSON. */
typedef struct AuditSnapshot {
        int64_t snapshot_id;
        bool has_parent_id;
        int64_t parent_id;
        int64_t sequence_number;
        int64_t timestamp_ms;
        const char *operation;     /* summary.operation, may be NULL */
        const char *manifest_list; /* may be NULL (v1 manifests field) */
        bool has_first_row_id;     /* v3 fields: a snapshot made with row lineage */
        int64_t first_row_id;
        int64_t added_rows; /* 0 when absent */
        /* Set by audit_snapshot_set_list() or audit_snapshot_set_list_error(). */
        bool is_list_read;
        char *list_error; /* owned; why the list is unreadable, NULL if fine */
        int list_format_version;
        bool list_has_first_row_id; /* the list header's "first-row-id" */
        int64_t list_first_row_id;
        ManifestFile *manifests; /* owned, list order */
        size_t n_manifests;
        const ManifestFile **sorted; /* owned array of borrowed entries, by path: lookups */
} AuditSnapshot;

typedef struct AuditRef {
        const char *name; /* borrowed */
        bool is_branch;
        int64_t snapshot_id;
} AuditRef;

/* Owned by its creator; owns a reference to the metadata it borrows strings from. */
typedef struct AuditTable {
        TableMetadata *table;     /* owned */
        AuditSnapshot *snapshots; /* by sequence number, then snapshot id */
        size_t n_snapshots;
        AuditRef *refs; /* in metadata order */
        size_t n_refs;
        AuditLimits limits;
        uint64_t n_manifests_read; /* entries over every list set so far */
} AuditTable;

/* Takes `table` (owned from then on, also on failure) and collects its snapshots and refs.
 * Returns 0, -E2BIG when it has more than limits->max_snapshots snapshots, -EINVAL for a
 * snapshot without a valid snapshot-id or sequence number, -ENOMEM; the reason in *e. */
int audit_table_new(TableMetadata *table, const AuditLimits *limits, AuditTable **ret, Error *e);
AuditTable *audit_table_free(AuditTable *t);
DEFINE_CLEANUP_FUNC(AuditTable, audit_table_free);

/* Index of the snapshot with this id, or -ENOENT. */
ssize_t audit_table_find_snapshot(const AuditTable *t, int64_t snapshot_id);

/* Parses the manifest list of snapshot `i` from `bytes`. A list that cannot be parsed is
 * recorded as unreadable (a finding), not an error. Returns 0, -E2BIG when the table's
 * entries would pass limits.max_manifests, -ENOMEM. */
int audit_snapshot_set_list(AuditTable *t, size_t i, Slice bytes, Error *e);
/* Records that the list of snapshot `i` could not be read, with the reason (copied). */
int audit_snapshot_set_list_error(AuditTable *t, size_t i, const char *reason);
/* Hands the entries of snapshot `i`'s list (owned, n of them) to the audit, as read. */
int audit_snapshot_take_manifests(AuditTable *t, size_t i, int list_format_version,
                                  bool has_first_row_id, int64_t first_row_id,
                                  ManifestFile *manifests, size_t n, Error *e);

/* A range of row ids [first, end) not covered by any snapshot in metadata. */
typedef struct AuditGap {
        int64_t first, end;
        bool is_explained;
        char explanation[512];
} AuditGap;

/* The uncovered ranges of [0, next-row-id) in ascending order (owned array). Needs no list.
 * Returns 0 or -ENOMEM. */
int audit_table_gaps(const AuditTable *t, AuditGap **ret_gaps, size_t *ret_n);

/* Row-id lookup, step 1, from metadata alone. */
enum {
        AUDIT_ROW_IN_SNAPSHOT,      /* *ret_index: the earliest snapshot whose range holds it */
        AUDIT_ROW_AT_OR_ABOVE_NEXT, /* >= next-row-id: never assigned */
        AUDIT_ROW_IN_GAP,           /* *ret_gap describes the gap */
};
int audit_table_locate_snapshot(const AuditTable *t, int64_t row_id, size_t *ret_index,
                                AuditGap *ret_gap);
/* Step 2: the data manifest of snapshot `i` (list set) whose range holds the id, preferring
 * one assigned inside the snapshot's range; -ENOENT when none does. */
ssize_t audit_snapshot_find_manifest(const AuditSnapshot *s, int64_t row_id);
/* Step 3: among entries after manifest_entries_inherit(), the live data entry whose
 * [first_row_id, first_row_id + record_count) holds the id, preferring inherited ids over
 * materialized ones; -ENOENT when none does. */
ssize_t audit_entries_find_row(const ManifestEntry *entries, size_t n, int64_t row_id);
