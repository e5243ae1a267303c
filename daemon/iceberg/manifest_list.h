/* SPDX-License-Identifier: Apache-2.0 */
/* Iceberg manifest lists (Avro `manifest_file` records, field ids 500-520): reading v1-v3
 * lists written by any implementation, by field id; writing v1, v2 and v3 lists exactly as Java's
 * ManifestListWriter does (proto/manifest_list_v*.avsc, deflate, the same metadata keys).
 * Pure: bytes in, bytes out. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* The Avro file metadata of a manifest list (ManifestListWriter.java). */
typedef struct ManifestListHeader {
        int format_version;          /* "format-version": 1, 2 or 3 */
        int64_t snapshot_id;         /* "snapshot-id" */
        bool has_parent_snapshot_id; /* "parent-snapshot-id"; Java writes the string "null" */
        int64_t parent_snapshot_id;
        int64_t sequence_number; /* "sequence-number" (absent in v1: 0) */
        bool has_first_row_id;   /* "first-row-id", v3 only: the snapshot's first-row-id */
        int64_t first_row_id;
} ManifestListHeader;

/* Reads every entry of a manifest list, resolving fields by Iceberg field id in the file's
 * writer schema: v1 names differ, v1 lacks content (read as 0 = data) and sequence numbers
 * (read as 0), v1/v2 lack first_row_id. A null or absent count makes has_counts false.
 * On success *ret_files is an array of *ret_n entries owned by the caller (free it with
 * manifest_list_files_free()); it may be NULL when n is 0. Returns 0, -EBADMSG for a file
 * that is not a readable manifest list, -EOPNOTSUPP (codec), -E2BIG (limits), -ENOMEM,
 * with the reason (block, entry index, field) in *e. */
int manifest_list_read(Slice bytes, ManifestFile **ret_files, size_t *ret_n, Error *e);
/* The same for the first n entries only (fewer when the list has fewer): the blocks after
 * them are not decoded. */
int manifest_list_read_first(Slice bytes, size_t n, ManifestFile **ret_files, size_t *ret_n,
                             Error *e);
/* Reads only the metadata keys of a manifest list. A missing format-version means 1; a
 * missing sequence-number means 0. Returns 0 or -EBADMSG with the reason. */
int manifest_list_read_header(Slice bytes, ManifestListHeader *ret, Error *e);
/* Frees an array of n entries (each deinitialized, then the array); returns NULL. */
ManifestFile *manifest_list_files_free(ManifestFile *files, size_t n);

/* The checks manifest_list_write() makes of the header and of every entry before it writes
 * anything (listed there). Returns 0 or -EINVAL with the entry in *e. */
int manifest_list_check(const ManifestListHeader *h, const ManifestFile *files, size_t n, Error *e);
/* Writes a format 1, 2 or 3 manifest list with the deflate codec and Java's metadata keys
 * (snapshot-id, parent-snapshot-id, sequence-number (v2+), first-row-id (v3), format-version,
 * iceberg.schema), appending the file to *out. Format 1 is Java's V1Writer: field ids 500-514
 * and 519 only, no content, sequence numbers or first_row_id. Refuses, with -EINVAL and the
 * entry in *e: other formats, a v3 header without first_row_id, entries without a path, an
 * added_snapshot_id or known counts, content other than 0/1, a delete manifest in v1, in v3 a
 * data manifest without first_row_id or a delete manifest with one. v1/v2 ignore first_row_id.
 * On failure *out is unchanged. Also -E2BIG when *out would pass its maximum, -ENOMEM. */
int manifest_list_write(const ManifestListHeader *h, const ManifestFile *files, size_t n, Buf *out,
                        Error *e);
