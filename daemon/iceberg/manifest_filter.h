/* SPDX-License-Identifier: Apache-2.0 */
/* Removing files from a committed manifest (Java's ManifestFilterManager rewrite,
 * filterManifestWithDeletedFiles): one manifest written again with the removed entries DELETED
 * by this snapshot and every other live entry EXISTING, each with its inherited snapshot id,
 * sequence numbers and (v3 data) first_row_id written out. Pure: bytes in, bytes out; what the
 * snapshot records of it goes to snapshot_change_rewrite() and snapshot_change_remove(). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* What the rewritten manifest is for. */
typedef struct ManifestFilterTarget {
        int format_version; /* the table's: 3 writes first_row_id out on data manifests */
        int64_t snapshot_id;
        int64_t sequence_number;
        const char *location;
        uint64_t max_entries; /* of the input: -E2BIG past it (the output's bytes: out->max) */
} ManifestFilterTarget;

/* The files to remove: canonical paths, compared byte for byte with each entry's file_path (a
 * delete file is matched by its path alone: every deletion vector of a Puffin file at once).
 * found[i] is set when paths[i] matched a live entry; it is only ever set, never cleared, so
 * one array carries over the manifests of one snapshot (Java's deletedPaths). Borrowed. */
typedef struct ManifestFilterPaths {
        const char *const *paths;
        size_t n_paths;
        bool *found;
} ManifestFilterPaths;

/* One entry written DELETED: what the summary counts (snapshot_change_remove()). */
typedef struct ManifestFilterRemoved {
        char *path; /* owned */
        int32_t content;
        int64_t record_count;
        int64_t file_size; /* file_size_in_bytes */
} ManifestFilterRemoved;

typedef struct ManifestFilterResult {
        /* The rewritten manifest's list entry (for snapshot_change_rewrite()): location and
         * length, the input's content, spec, partition summaries and key metadata;
         * added_snapshot_id and sequence_number the target's; min_sequence_number the least
         * data sequence number of the EXISTING entries (Java: live ones), the target's when
         * none; counts: existing and deleted, added 0; no first_row_id (lineage_assign() gives
         * a data manifest the range of its existing rows; delete manifests never get one). */
        ManifestFile file;
        ManifestFilterRemoved *removed; /* in entry order, each path once */
        size_t n_removed;
        /* Entries removed whose path was already found (earlier in this manifest, or in an
         * earlier one): written DELETED, counted only here (Java's deleted-duplicate-files). */
        uint64_t n_duplicates;
        uint64_t n_entries_read;
} ManifestFilterResult;

void manifest_filter_result_deinit(ManifestFilterResult *r);

enum {
        _MANIFEST_FILTER_E_SUCCESS,
        /* No requested path is a live entry of this manifest: nothing written, keep it. */
        MANIFEST_FILTER_E_UNTOUCHED,
        /* The manifest cannot be written again with its own writer schema: it lacks
         * snapshot_id or the sequence numbers (v1), or first_row_id on a format 3 data
         * manifest (written before an upgrade). Reason in *e. */
        MANIFEST_FILTER_E_INCOMPATIBLE,
};

/* Rewrites the committed manifest `bytes` (its list entry `file`, which its entries inherit
 * from) without the files `remove` names, appending the new manifest to *out: its writer schema
 * and metadata; each live entry whose path is named DELETED with snapshot_id = the target's,
 * every other live entry EXISTING with its inherited snapshot id; both sequence numbers, and on
 * format 3 a data file's first_row_id, written out as inherited (Java keeps the original ones);
 * entries already DELETED dropped. Returns 0 with *ret filled (deinit it), or
 * MANIFEST_FILTER_E_UNTOUCHED, MANIFEST_FILTER_E_INCOMPATIBLE, -EBADMSG (an unreadable
 * manifest, a live entry without sequence numbers), -EOVERFLOW, -E2BIG, -ENOMEM, with the
 * reason in *e; on anything but 0, *out, *ret and found[] are unchanged. */
int manifest_filter_write(Slice bytes, const ManifestFile *file, const ManifestFilterPaths *remove,
                          const ManifestFilterTarget *target, Buf *out, ManifestFilterResult *ret,
                          Error *e);
