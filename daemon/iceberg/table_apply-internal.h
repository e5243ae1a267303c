/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/iceberg/: the state of one commit being applied and the appliers of its
 * updates (table_apply.c), which table_update.c runs in request order. Nothing outside iceberg/
 * includes this. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/error.h"

#define TABLE_FORMAT_VERSION_MAX 3

/* Copy-on-write: the result starts as a shallow copy of the input's top-level object, so its
 * members are still the input's (shared, never changed). An update that changes a container
 * (the snapshots array, refs, a log, properties, ...) first replaces it with a copy of its own,
 * once per commit, by table_apply_writable(): pointers only, never the snapshots themselves. */
typedef struct TableApply {
        json_t *md;       /* the new top-level object, owned by table_update_apply */
        json_t *writable; /* keys of md whose container table_apply_writable() made md's own */
        int format_version;
        int64_t last_updated_ms; /* the new value, for snapshot-log entries of rollbacks */
        json_t *added_snapshots; /* ids added by this request */
        json_t *added_schemas, *added_specs, *added_orders;
        int64_t last_added_schema, last_added_spec, last_added_order; /* -1: none */
        Error *error;
} TableApply;

/* Drops what the TableApply holds (md included, unless taken); for _cleanup_. */
void table_apply_deinit(TableApply *a);

/* md[key] as a container this commit may change: copied from the input's (a shallow copy) the
 * first time, created empty when absent or of another type. NULL when out of memory. */
json_t *table_apply_writable(TableApply *a, const char *key, json_type type);

/* Sets md's current-snapshot-id to "none" as Java writes it for this format version: null from
 * v3 on, -1 before (TableMetadataParser). Returns 0 or -ENOMEM. */
int table_apply_no_current_snapshot(json_t *md, int format_version);

/* One update applied to a->md: 0, -ESTALE or -EINVAL with the reason in a->error, -ENOMEM. */
typedef int (*TableApplyFn)(TableApply *a, const json_t *update);

/* The applier of an update's "action" (may be NULL), or NULL for an unknown action. */
TableApplyFn table_apply_find(const char *action);
