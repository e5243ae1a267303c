/* SPDX-License-Identifier: Apache-2.0 */
/* v3 row lineage assignment (spec "First Row ID Assignment"; Java ManifestListWriter.V3Writer).
 * Pure: no I/O, no allocation; on failure the input is left as it was. */
#include <errno.h>
#include <inttypes.h>

#include "iceberg/lineage.h"
#include "util/checked.h"

static bool lineage_needs_id(const ManifestFile *m) {
        return m->content == MANIFEST_CONTENT_DATA && !m->has_first_row_id;
}

int lineage_assign(ManifestFile *files, size_t n_files, int64_t first_row_id,
                   int64_t *ret_next_row_id, Error *error) {
        int64_t next = first_row_id;

        if (first_row_id < 0)
                return error_set(error, -EINVAL, "first-row-id %" PRId64 " is negative",
                                 first_row_id);

        /* Pass 1: prove every assignment is possible before changing anything. */
        for (size_t i = 0; i < n_files; i++) {
                const ManifestFile *m = &files[i];

                if (!lineage_needs_id(m))
                        continue;
                /* A null count means "unknown, assume non-zero" (spec): never treat it as 0,
                 * or two manifests would share a range (iceberg-go #1627). */
                if (!m->has_counts)
                        return error_set(error, -EINVAL,
                                         "manifest '%s' has unknown row counts and no first_row_id",
                                         m->path);
                if (m->added_rows_count < 0 || m->existing_rows_count < 0)
                        return error_set(error, -EINVAL, "manifest '%s' has negative row counts",
                                         m->path);
                if (checked_add_i64(&next, next, m->added_rows_count) ||
                    checked_add_i64(&next, next, m->existing_rows_count))
                        return error_set(error, -EOVERFLOW,
                                         "row ids overflow int64 at manifest '%s'", m->path);
        }

        /* Pass 2: assign. The value is written before the cursor moves (iceberg-go #741).
         * DELETED entries are not part of added + existing, so they consume no ids. */
        next = first_row_id;
        for (size_t i = 0; i < n_files; i++) {
                ManifestFile *m = &files[i];

                if (m->content != MANIFEST_CONTENT_DATA) {
                        m->has_first_row_id = false; /* delete manifests: always null */
                        m->first_row_id = 0;
                        continue;
                }
                if (m->has_first_row_id)
                        continue;
                m->first_row_id = next;
                m->has_first_row_id = true;
                next += m->added_rows_count + m->existing_rows_count;
        }

        *ret_next_row_id = next;
        return 0;
}
