/* SPDX-License-Identifier: Apache-2.0 */
/* Incremental manifest lists: a new list written as its own header, a block of the new entries
 * and the parent list's blocks copied byte for byte, so that the cost of an append follows the
 * new entries, not the table's manifests. Pure: bytes in, bytes out; never decodes the parent's
 * entries. */
#pragma once

#include <stddef.h>

#include "avro/ocf.h"
#include "iceberg/manifest_list.h"

enum {
        _MANIFEST_LIST_APPEND_E_SUCCESS,
        MANIFEST_LIST_APPEND_E_WHOLE, /* the parent's blocks cannot be copied: write it whole */
};

/* The new block absorbs the parent's leading blocks only up to this many encoded bytes: the
 * size at which our whole writer and Java's DataFileWriter end their blocks, which every Avro
 * reader accepts, and small enough that inflating and deflating it again costs ~1 ms. */
#define MANIFEST_LIST_APPEND_BLOCK_BYTES OCF_WRITER_BLOCK_BYTES

/* Writes the manifest list of a snapshot that adds new_files (n of them, first) to the parent
 * snapshot's list `parent` (its bytes, borrowed), appending the file to *out. The result holds
 * exactly what manifest_list_write(h, new_files + the parent's entries) would hold: the same
 * metadata keys for h, the same writer schema, the new entries then the parent's in order;
 * its sync marker is its own and its codec the parent's (deflate or null).
 *
 * It copies the parent's blocks unread: their framing, sync markers and sizes are checked,
 * their datums are not (the caller has read the parent; the next reader checks them), and a
 * parent entry is never validated or changed: a caller that fills in counts or first_row_id of
 * parent entries must write the list whole. The new block absorbs the parent's leading blocks
 * while it holds at least half as many entries as the next one and stays within
 * MANIFEST_LIST_APPEND_BLOCK_BYTES, which keeps a list's blocks logarithmic in its entries
 * (docs/design.md, "Manifest-list build").
 *
 * Returns 0; MANIFEST_LIST_APPEND_E_WHOLE with the reason in *e when the parent cannot be copied
 * (another format-version or writer schema, a codec other than null and deflate): the caller
 * writes the list whole with manifest_list_write(); -EINVAL for entries or a header
 * manifest_list_write() refuses; -EBADMSG for a parent that is no valid container file (bad
 * magic, truncation, a sync marker or block size that does not match), -E2BIG (a parent past
 * the container limits, or *out past its maximum), -ENOMEM, with the reason in *e. On failure
 * *out is unchanged. */
int manifest_list_append(const ManifestListHeader *h, const ManifestFile *new_files, size_t n,
                         Slice parent, Buf *out, Error *e);
