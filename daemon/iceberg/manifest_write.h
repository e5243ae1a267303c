/* SPDX-License-Identifier: Apache-2.0 */
/* Writing a data manifest for described data files (the writer API's `data-files`), laid out as
 * Java's ManifestWriter V2Writer/V3Writer does: proto/manifest_entry_v{2,3}.avsc with the
 * spec's partition record, deflate, the same metadata keys; every entry ADDED with snapshot id,
 * sequence numbers and first_row_id null, so that they are inherited at commit. Pure. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "iceberg/data_file.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct ManifestWriteSpec {
        int format_version;           /* 2 or 3: the table's */
        const json_t *schema;         /* the table's current schema object, metadata "schema" */
        const json_t *partition_spec; /* the files' spec object ({"spec-id", "fields"}) */
} ManifestWriteSpec;

/* Appends a manifest of the n files (each data_file_resolve()d against spec->schema and
 * spec->partition_spec, in this order) to *out. Returns 0, -EINVAL (format version, n == 0),
 * -EOPNOTSUPP (a partition type we cannot write), -E2BIG, -ENOMEM, with the reason in *e; on
 * failure *out is unchanged. */
int manifest_write(const ManifestWriteSpec *spec, const DataFile *files, size_t n, Buf *out,
                   Error *e);

/* The Avro schema JSON of the manifest entries for this spec (a new reference), as written to
 * "avro.schema": the version's entry schema with the partition record r102 filled in. */
int manifest_write_schema(const ManifestWriteSpec *spec, json_t **ret_schema, Error *e);
