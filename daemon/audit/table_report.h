/* SPDX-License-Identifier: Apache-2.0 */
/* The lineage audit's report, pure: the checks (overlaps, next-row-id, first_row_id presence,
 * gaps, readable lists) over an AuditTable (table.h) and the JSON the lineage route returns. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "audit/table.h"

/* The whole report (see GET .../lineage in proto/openapi.yaml), or NULL when out of memory.
 * Snapshots whose list was not set are reported with "manifest-list-read": false. */
json_t *audit_table_report(const AuditTable *t);

/* Names of the refs whose ancestry contains snapshot `i`, as a new JSON array (NULL: ENOMEM). */
json_t *audit_table_refs_containing(const AuditTable *t, size_t i);
