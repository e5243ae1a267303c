/* SPDX-License-Identifier: Apache-2.0 */
/* One snapshot, described before it is written: what it was planned against, what it adds (and
 * for whom), what it removes, which of the parent's manifests it keeps and which it replaces, in
 * the shape of Iceberg Java's MergingSnapshotProducer.apply() (filter, add, merge). Producers
 * build it (an append: the batch's manifests, then the parent's; the merge step rewrites it);
 * everything a commit derives comes from it and only from it: the manifest list (incremental
 * when the parent's entries are untouched, whole otherwise), the row-id assignment, the snapshot
 * summary (Java's keys), the history record and the receipts' list entries. Pure: no I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest.h"
#include "iceberg/manifest_file.h"
#include "iceberg/manifest_list.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* summary.operation (spec: append | overwrite | delete | replace). DERIVED: as Iceberg Java's
 * RowDelta and OverwriteFiles choose it from what is added and removed. */
typedef enum SnapshotOperation {
        SNAPSHOT_OPERATION_DERIVED,
        SNAPSHOT_OPERATION_APPEND,
        SNAPSHOT_OPERATION_OVERWRITE,
        SNAPSHOT_OPERATION_DELETE,
        SNAPSHOT_OPERATION_REPLACE,
} SnapshotOperation;

/* Where an entry of the new list comes from. */
typedef enum SnapshotChangeOrigin {
        SNAPSHOT_CHANGE_ADDED,     /* written for a part of the change (a request), added by it */
        SNAPSHOT_CHANGE_KEPT,      /* the parent's, carried over */
        SNAPSHOT_CHANGE_MERGED,    /* written in place of parent manifests it replaces (merging) */
        SNAPSHOT_CHANGE_REWRITTEN, /* a parent manifest written again without what the change
                                    * removes (its entries DELETED): Java's filter step */
} SnapshotChangeOrigin;

typedef struct SnapshotChangeSource {
        SnapshotChangeOrigin origin;
        size_t part;            /* ADDED: the part it belongs to */
        int64_t n_replaced;     /* MERGED, REWRITTEN: the parent's manifests it replaces */
        int64_t n_entries_read; /* MERGED: the entries read to write it */
} SnapshotChangeSource;

/* One request's share of the snapshot. Borrowed pointers: they outlive the change. */
typedef struct SnapshotChangePart {
        const char *recorded_key;            /* the idempotency key as the history records it */
        const json_t *properties;            /* its snapshot properties (strings) */
        const StagedManifest *const *staged; /* its added manifests' entries, in list order */
        size_t first, n;                     /* its added manifests: list[first, first + n) */
} SnapshotChangePart;

/* A data or delete file the snapshot removes (an entry the filter step marks DELETED). */
typedef struct SnapshotChangeRemoval {
        char *path;     /* canonical */
        char *manifest; /* the manifest it was read from; NULL when not known */
        int32_t content;
        int64_t record_count;
        int64_t file_size;
} SnapshotChangeRemoval;

typedef struct SnapshotChange {
        SnapshotOperation operation;
        bool has_base;            /* planned against a snapshot (the parent) */
        int64_t base_snapshot_id; /* ... this one */
        /* The new list, in order: the added manifests (n_added, part by part), then the kept and
         * merged ones. sources[i] says where list[i] comes from. Owned. */
        ManifestFile *list;
        SnapshotChangeSource *sources;
        size_t n_list, n_added, cap;
        SnapshotChangePart *parts; /* owned array, borrowed contents */
        size_t n_parts;
        SnapshotChangeRemoval *removed; /* owned */
        size_t n_removed;
        /* The kept entries are the parent's list, whole, in order and unchanged: the new list
         * may copy the parent's encoded blocks (manifest_list_append). */
        bool is_parent_untouched;
} SnapshotChange;

/* Room for n_parts parts and n_list entries; the change must be empty. Returns 0 or -ENOMEM. */
int snapshot_change_reserve(SnapshotChange *c, size_t n_parts, size_t n_list);
/* Starts the next part (a request), whose manifests are added next. */
void snapshot_change_begin_part(SnapshotChange *c, const char *recorded_key,
                                const json_t *properties, const StagedManifest *const *staged);
/* Adds a manifest for the current part: its list entry (taken). Before any kept entry. */
void snapshot_change_add(SnapshotChange *c, ManifestFile *file);
/* Carries the parent's list over (entries taken, parent emptied): the base. Entries that lack
 * counts, or (v3) a data manifest's first_row_id, will be filled in: the parent is then not
 * untouched. has_parent: the branch had a snapshot (parent_snapshot_id). */
void snapshot_change_keep_parent(SnapshotChange *c, bool has_parent, int64_t parent_snapshot_id,
                                 int format_version, ManifestFile *parent, size_t n_parent);
/* Replaces kept entries by merged ones: owner[i] (per entry after the added ones) is 0 to leave
 * entry n_added + i as it is, or 1 + k to have it replaced by merged[k] (taken, with
 * merged_sources[k]), which takes the place of its first input. `indices` (n_indices list
 * indices that outlive this) follow their entries. Returns 0 or -ENOMEM (nothing changed). */
int snapshot_change_replace(SnapshotChange *c, const size_t *owner, ManifestFile *merged,
                            const SnapshotChangeSource *merged_sources, size_t n_merged,
                            size_t *indices, size_t n_indices);
/* Replaces kept entry `index` (a parent manifest holding removed files) by `rewritten` (taken):
 * the same manifest written again with those entries DELETED. Returns 0, or -EINVAL when the
 * entry is not a kept one (nothing changed). */
int snapshot_change_rewrite(SnapshotChange *c, size_t index, ManifestFile *rewritten);
/* Records a removed file (path and manifest copied). Returns 0 or -ENOMEM. */
int snapshot_change_remove(SnapshotChange *c, const char *path, const char *manifest,
                           int32_t content, int64_t record_count, int64_t file_size);
void snapshot_change_deinit(SnapshotChange *c);

/* v3: first_row_id for every data manifest without one, from first_row_id on (lineage_assign).
 * Writes the table's next next-row-id. */
int snapshot_change_assign_row_ids(SnapshotChange *c, int64_t first_row_id,
                                   int64_t *ret_next_row_id, Error *e);
/* Serializes the new list into *out: the added entries in front of the parent's blocks, copied
 * as they are, when the parent is untouched and its entries are what manifest_list_write()
 * takes (*ret_incremental true; parent_bytes: the parent's list as read), else whole. */
int snapshot_change_write_list(const SnapshotChange *c, const ManifestListHeader *h,
                               Slice parent_bytes, Buf *out, bool *ret_incremental, Error *e);
/* summary.operation of the change. */
const char *snapshot_change_operation(const SnapshotChange *c);
/* The snapshot summary (snapshot_summary_build: the parts' properties, Java's counters and
 * totals over parent_summary, manifest counts) with the history record of the parts' keys and
 * manifest counts, branch and attempt. Returns 0, -EINVAL (a property, reason in e) or
 * -ENOMEM. */
int snapshot_change_summary(const SnapshotChange *c, const json_t *parent_summary,
                            const char *branch, unsigned attempt, json_t **ret_summary, Error *e);
