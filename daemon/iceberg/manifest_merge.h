/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest merging (Java's MergeAppend / ManifestMergeManager) for the parent's manifests: the
 * table properties, the plan (group by content and spec, bin-pack from the end with lookback 1,
 * which bins to merge) and the rewrite of one bin into one manifest of EXISTING entries with
 * every inherited value written out. Pure: bytes in, bytes out; never touches a staged manifest. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "iceberg/single_value.h"
#include "iceberg/table.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* Java's TableProperties names and defaults. */
#define TABLE_PROPERTY_MANIFEST_MERGE_ENABLED "commit.manifest-merge.enabled"
#define TABLE_PROPERTY_MANIFEST_MIN_MERGE_COUNT "commit.manifest.min-count-to-merge"
#define TABLE_PROPERTY_MANIFEST_TARGET_SIZE_BYTES "commit.manifest.target-size-bytes"
#define MANIFEST_MERGE_DEFAULT_MIN_COUNT 100
#define MANIFEST_MERGE_DEFAULT_TARGET_SIZE_BYTES (8 * 1024 * 1024)

typedef struct ManifestMergePolicy {
        bool is_enabled;
        int32_t min_count_to_merge;
        int64_t target_size_bytes;
} ManifestMergePolicy;

/* The table's merge properties, read as Java's PropertyUtil does: enabled is true only for
 * "true" in any case (Boolean.parseBoolean), the count an int and the size a long in decimal
 * (an optional sign, as Integer.parseInt / Long.parseLong take it). Returns 0, or -EINVAL for
 * a count or size that is no such number (where Java's commit fails with
 * NumberFormatException), naming the property in *e. */
int manifest_merge_policy(const TableMetadata *t, ManifestMergePolicy *ret, Error *e);

/* One bin to merge: indices into the files handed to the plan, in list order. */
typedef struct ManifestMergeBin {
        size_t *inputs;
        size_t n_inputs;
} ManifestMergeBin;

/* The bins to merge, ordered by their first input; every other manifest is kept as it is. */
typedef struct ManifestMergePlan {
        ManifestMergeBin *bins;
        size_t n_bins;
        size_t n_inputs; /* over all bins */
} ManifestMergePlan;

/* Plans the merge of a parent's manifests (`files`, in manifest-list order: newest first).
 * Groups by (content, partition_spec_id) the manifests with known counts and an
 * added_snapshot_id; packs each group with ListPacker.packEnd(target_size_bytes, lookback 1)
 * by length; a bin of one is kept; the bin holding the group's first (newest) manifest is
 * merged only when it has at least min_count_to_merge manifests; every other bin is merged.
 * Nothing is planned when merging is off. Returns 0 or -ENOMEM (then *ret is empty). */
int manifest_merge_plan(const ManifestFile *files, size_t n, const ManifestMergePolicy *policy,
                        ManifestMergePlan *ret);
void manifest_merge_plan_deinit(ManifestMergePlan *p);

/* One manifest of a bin: its entry in the parent's list (where its entries inherit from) and
 * its bytes. Both borrowed. */
typedef struct ManifestMergeInput {
        const ManifestFile *file;
        Slice bytes;
} ManifestMergeInput;

/* What the merged manifest is for. */
typedef struct ManifestMergeTarget {
        int format_version; /* the table's */
        int64_t snapshot_id;
        int64_t sequence_number;
        const char *location;
        /* The result types of the spec's partition fields, to merge the inputs' summaries;
         * NULL: unknown, the merged manifest's list entry then has null partitions. */
        const IcebergType *partition_types;
        size_t n_partition_types;
        uint64_t max_entries; /* over the whole bin: -E2BIG past it */
        uint64_t max_bytes;   /* of the merged manifest: -E2BIG past it */
} ManifestMergeTarget;

enum {
        _MANIFEST_MERGE_E_SUCCESS,
        /* The bin cannot become one manifest without guessing: writer schemas or metadata
         * that differ, a schema lacking a field the rewrite must write (snapshot_id,
         * sequence numbers, first_row_id on v3 data), or no live entry. Keep it unmerged. */
        MANIFEST_MERGE_E_INCOMPATIBLE,
};

/* Statistics of one rewrite, for the snapshot summary. */
typedef struct ManifestMergeStats {
        uint64_t n_entries_read; /* every entry of the inputs (Java: entries-processed) */
        uint64_t n_entries_written;
} ManifestMergeStats;

/* Rewrites the bin into one manifest appended to *out: the first input's writer schema and
 * metadata; every entry that is not DELETED copied datum by datum (all fields, whatever the
 * schema holds) with status EXISTING and snapshot_id, sequence_number and file_sequence_number
 * written out as inherited, and on format 3 each data file's first_row_id as inherited
 * (ManifestReader: the manifest's first_row_id plus the record counts of the earlier live data
 * entries without one; an explicit one kept). DELETED entries are dropped (all are of earlier
 * snapshots). *ret_file is its list entry: location, length, content and spec of the bin,
 * added_snapshot_id and sequence_number the target's, min_sequence_number the least data
 * sequence number written, counts all EXISTING, partition summaries merged from the inputs'
 * (null when a type or an input's summary is unknown), no first_row_id (lineage_assign gives
 * it a new range). Returns 0, MANIFEST_MERGE_E_INCOMPATIBLE with the reason, -EBADMSG for an
 * unreadable input or an EXISTING entry without sequence numbers, -EOPNOTSUPP, -E2BIG,
 * -ENOMEM; on failure *out and *ret_file are unchanged. */
int manifest_merge_write(const ManifestMergeInput *inputs, size_t n,
                         const ManifestMergeTarget *target, Buf *out, ManifestFile *ret_file,
                         ManifestMergeStats *ret_stats, Error *e);

/* Merges partition field summaries `from` into `into` (both of the given types) as the union
 * of what they describe: contains_null/contains_nan or-ed (null when either is), bounds the
 * least lower and greatest upper by the type's order (Java's Comparators). Returns 0,
 * -EOPNOTSUPP for a type without a total order we share with Java (uuid), -EBADMSG for a
 * bound of the wrong size, -ENOMEM. Exposed for tests. */
int manifest_merge_summary(PartitionFieldSummary *into, const PartitionFieldSummary *from,
                           const IcebergType *type);
