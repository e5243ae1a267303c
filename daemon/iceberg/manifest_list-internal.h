/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/iceberg/: what manifest_list.c (whole lists) and manifest_list_append.c
 * (lists that copy their parent's blocks) share to write one: the writer with Java's metadata
 * keys and the encoding of entries. Nothing outside iceberg/ includes this. */
#pragma once

#include "avro/fields.h"
#include "avro/ocf.h"
#include "iceberg/manifest_list.h"

/* Positions of the fields in one file's writer schema; -ENOENT (< 0) when absent. */
typedef struct ListFields {
        int path, length, spec_id, content, sequence_number, min_sequence_number, snapshot_id;
        int counts[6]; /* 504 505 506 512 513 514 */
        int partitions, key_metadata, first_row_id;
        bool has_summary;
        int contains_null, contains_nan, lower_bound, upper_bound;
} ListFields;

/* Creates the writer of a list of h's format version in `codec` (the embedded proto schema) with
 * every metadata key manifest_list_write() writes, and resolves its fields into *ret_fields.
 * Checks nothing of h (manifest_list_check() does). Returns 0 or <0 with the reason in *e. */
int manifest_list_writer_open(const ManifestListHeader *h, OcfCodec codec, OcfWriter **ret_writer,
                              ListFields *ret_fields, Error *e);
/* Encodes n entries (checked already) into the writer, in order. Returns 0 or <0 with the
 * entry in *e. */
int manifest_list_encode(OcfWriter *w, const ListFields *lf, int version, const ManifestFile *files,
                         size_t n, Error *e);
