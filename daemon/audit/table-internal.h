/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/audit/: the row-id ranges of the model that table.c owns, which the report
 * (table_report.c) checks. Ranges are half-open [first, end). Nothing outside audit/ includes
 * this. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "audit/table.h"
#include "iceberg/manifest_file.h"

/* A row-id range [first, end) and who holds it. */
typedef struct AuditRange {
        int64_t first, end;
        size_t owner; /* snapshot index, or manifest index in a DistinctManifest array */
} AuditRange;

static inline bool audit_snapshot_has_range(const AuditSnapshot *s) {
        return s->has_first_row_id && s->added_rows > 0;
}

static inline int64_t audit_snapshot_end(const AuditSnapshot *s) {
        return s->first_row_id + s->added_rows; /* checked at parse */
}

/* A data manifest's range [first_row_id, + added + existing); false when it has none or it
 * cannot be computed (unknown counts, overflow). */
bool audit_manifest_range(const ManifestFile *m, int64_t *ret_first, int64_t *ret_end);

/* The entry of snapshot s's list with this path (the first of several), or NULL. */
const ManifestFile *audit_snapshot_find_path(const AuditSnapshot *s, const char *path);

/* The parent of snapshot s, when it is in metadata; else NULL. */
const AuditSnapshot *audit_snapshot_parent(const AuditTable *t, const AuditSnapshot *s);

/* Whether manifest m of snapshot s got its ids in s: its ids lie at or above s's first-row-id
 * (older snapshots cannot have assigned those), or s's parent is known and does not list it. */
bool audit_manifest_is_new_in(const AuditTable *t, const AuditSnapshot *s, const ManifestFile *m);

/* The ranges of the snapshots that hold ids, by first id (owned array, *ret_n of them).
 * Returns 0 or -ENOMEM. */
int audit_table_ranges(const AuditTable *t, AuditRange **ret, size_t *ret_n);
