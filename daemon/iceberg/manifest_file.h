/* SPDX-License-Identifier: Apache-2.0 */
/* One manifest-list entry (Iceberg `manifest_file`, field ids 500-520) in memory: what
 * manifest_list_read() returns for the parent and what manifest_list_write() writes. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct PartitionFieldSummary { /* r508 */
        bool contains_null;            /* 509 */
        bool has_contains_nan;
        bool contains_nan; /* 518 */
        bool has_lower_bound;
        Buf lower_bound; /* 510, single-value binary serialization */
        bool has_upper_bound;
        Buf upper_bound; /* 511 */
} PartitionFieldSummary;

enum {
        MANIFEST_CONTENT_DATA = 0,
        MANIFEST_CONTENT_DELETES = 1,
};

typedef struct ManifestFile {
        char *path;                  /* 500 */
        int64_t length;              /* 501 */
        int32_t partition_spec_id;   /* 502 */
        int32_t content;             /* 517: MANIFEST_CONTENT_* */
        int64_t sequence_number;     /* 515 */
        int64_t min_sequence_number; /* 516 */
        bool has_added_snapshot_id;  /* 503 is nullable only in v1 lists */
        int64_t added_snapshot_id;
        bool has_counts;           /* false when any count is null (v1 lists): unknown, never 0 */
        int32_t added_files_count; /* 504 */
        int32_t existing_files_count; /* 505 */
        int32_t deleted_files_count;  /* 506 */
        int64_t added_rows_count;     /* 512 */
        int64_t existing_rows_count;  /* 513 */
        int64_t deleted_rows_count;   /* 514 */
        bool has_partitions;          /* 507 */
        PartitionFieldSummary *partitions;
        size_t n_partitions;
        bool has_key_metadata; /* 519 */
        Buf key_metadata;
        bool has_first_row_id; /* 520 */
        int64_t first_row_id;
} ManifestFile;

/* Frees the members a ManifestFile owns; the struct itself is the caller's. */
void manifest_file_deinit(ManifestFile *m);
/* A deep copy of `from` into *ret (path, summaries and key metadata copied). Returns 0 or
 * -ENOMEM (then *ret is unchanged). */
int manifest_file_copy(const ManifestFile *from, ManifestFile *ret);
