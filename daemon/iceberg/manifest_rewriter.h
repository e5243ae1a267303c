/* SPDX-License-Identifier: Apache-2.0 */
/* Writing committed manifests again, entry by entry (merging: manifest_merge.h; filtering:
 * manifest_filter.h): each datum copied whole with the input's writer schema and metadata, and
 * the fields a rewrite must write out set explicitly: status, snapshot id, both sequence numbers
 * and, on format 3 data, first_row_id (null there would be misread as the new commit's). Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "avro/ocf.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "util/buf.h"
#include "util/error.h"

enum {
        _MANIFEST_REWRITER_E_SUCCESS,
        /* The writer schema lacks a field the rewrite must write out: status, snapshot_id,
         * sequence_number, file_sequence_number (a v1 schema), or data_file.first_row_id when
         * first_row_id is wanted (a v2 schema under format 3). */
        MANIFEST_REWRITER_E_INCOMPATIBLE,
};

/* One manifest being written. Owned by its caller, embedded (init/deinit). */
typedef struct ManifestRewriter {
        OcfWriter *writer;
        avro_value_t value;
        bool has_value;
        ManifestFieldsLayout layout; /* of the writer schema, data_file nested */
        /* What was written, for the list entry (ManifestWriter.addEntry). */
        int32_t existing_files, deleted_files;
        int64_t existing_rows, deleted_rows;
        int64_t min_sequence_number; /* least data sequence number of the EXISTING entries
                                      * written (Java: live entries); INT64_MAX while none */
        uint64_t n_read, n_written;
} ManifestRewriter;

/* Opens a rewriter writing with like's writer schema and every metadata key but avro.* (Java's
 * schema, partition-spec, format-version, content...). wants_first_row_id: format 3 data.
 * Returns 0, MANIFEST_REWRITER_E_INCOMPATIBLE (reason in *e), -EBADMSG (data_file no record),
 * -EINVAL (avro-c refused the schema), -ENOMEM; deinit in every case. */
int manifest_rewriter_init(ManifestRewriter *w, OcfReader *like, bool wants_first_row_id, Error *e);
void manifest_rewriter_deinit(ManifestRewriter *w);

/* What becomes of one entry: dropped, or written with this status; a DELETED entry is written
 * with snapshot_id = deleting_snapshot_id, every other one with its inherited snapshot id. */
typedef struct ManifestRewriteAction {
        bool is_written;
        int32_t status; /* MANIFEST_ENTRY_EXISTING or MANIFEST_ENTRY_DELETED */
        int64_t deleting_snapshot_id;
} ManifestRewriteAction;

/* Decides for entry x (inheritance applied) whose datum (borrowed, of l's schema) is next.
 * Returns 0 or a negative errno with the reason in *e. */
typedef int (*ManifestRewriteDecide)(void *userdata, const ManifestFieldsLayout *l,
                                     avro_value_t *datum, const ManifestEntry *x, size_t index,
                                     ManifestRewriteAction *ret, Error *e);

/* Copies the entries of one input: `reader` yields the datums of the manifest `entries` were
 * read from (manifest_entries_read + manifest_entries_inherit), in the same order; each is
 * written as decide() says, its sequence numbers (and first_row_id when the layout has it and x
 * is a data file that has one) written out as inherited. Returns 0, -EBADMSG for an input that
 * changed between the passes or an entry written without snapshot id or sequence numbers,
 * -EIO (avro-c, with avro_strerror()), -ENOMEM, or decide()'s error; the reason names the
 * entry in *e. */
int manifest_rewriter_copy(ManifestRewriter *w, OcfReader *reader, const ManifestEntry *entries,
                           size_t n_entries, ManifestRewriteDecide decide, void *userdata,
                           Error *e);

/* Encodes the manifest written so far into *out (its max is the bound). Returns 0, -E2BIG,
 * -ENOMEM; *out unchanged on failure. */
int manifest_rewriter_finish(ManifestRewriter *w, Buf *out, Error *e);
