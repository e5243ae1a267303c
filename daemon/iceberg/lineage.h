/* SPDX-License-Identifier: Apache-2.0 */
/* v3 row lineage: first_row_id assignment in a manifest list (manifest list field 520). Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "util/error.h"

/* Assigns first_row_id, in list order, to every data manifest that has none, starting at the
 * snapshot's first-row-id (= the table's next-row-id); the cursor advances by added + existing
 * rows of each manifest assigned. Delete manifests get none; assigned ids are never changed.
 * On success writes the new table next-row-id (the snapshot's added-rows is that minus
 * first_row_id). Returns -EINVAL for a data manifest whose row counts are unknown and
 * -EOVERFLOW past INT64_MAX, with the reason in *error; on failure nothing is changed. */
int lineage_assign(ManifestFile *files, size_t n_files, int64_t first_row_id,
                   int64_t *ret_next_row_id, Error *error);
