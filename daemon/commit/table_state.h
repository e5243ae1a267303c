/* SPDX-License-Identifier: Apache-2.0 */
/* What the engine keeps of one table between commits (table_state.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "commit/core.h"
#include "commit/key_index.h"
#include "iceberg/table.h"
#include "storage/storage.h"

struct TableState {
        CommitEngine *engine;
        char *name;              /* the table: "ns\x1ftable" */
        json_t *result;          /* the newest LoadTableResult-shaped object; NULL: load first */
        StorageProps *props;     /* the storage settings of the last load */
        uint64_t loaded_ns;      /* when that load answered */
        const char *drop_reason; /* why result is NULL: the reason of the next load */
        KeyIndex keys;           /* the idempotency keys of result's recent snapshots */
        unsigned n_refs;         /* queues (and intakes) holding it */
        TableState *next;
};

/* The table's state, made empty if new; held until table_state_put(). NULL: out of memory. */
TableState *table_state_get(CommitEngine *e, const char *name);
/* The table's state if the engine has one (not held), else NULL. */
TableState *table_state_find(CommitEngine *e, const char *name);
void table_state_put(TableState *s);
/* Whether a commit may use the state instead of loading: there is one, younger than
 * commit.table-state-max-age-ms, and its vended credentials outlast a commit. */
bool table_state_is_fresh(const TableState *s);
/* Forgets the table (after a 409, an attempt without a verdict, a failure): the next attempt
 * loads it; reason names that load in metrics and logs. s may be NULL. */
void table_state_drop(TableState *s, const char *reason);
/* Why the next attempt loads: "first", "conflict", "unknown", ..., or "age". */
const char *table_state_load_reason(const TableState *s);
/* A load answered: result (a LoadTableResult, referenced; t is it parsed) and its settings
 * (copied) become the state. Returns 0 or -ENOMEM (the state is dropped). */
int table_state_loaded(TableState *s, json_t *result, const TableMetadata *t,
                       const StorageProps *props);
/* A commit landed: the catalog's response (referenced) becomes the state when it shows the
 * table with snapshot_id at the head of branch; else the state is dropped. */
void table_state_adopt(TableState *s, json_t *response, const char *branch, int64_t snapshot_id);
/* Records a key the commit of snapshot_id carried, after table_state_adopt(). */
void table_state_add_key(TableState *s, const char *key, int64_t snapshot_id);
/* The state as a table and storage settings of the caller's own. Returns 0, -EINVAL (the
 * reason in error) or -ENOMEM. */
int table_state_use(const TableState *s, TableMetadata **ret_table, StorageProps **ret_props,
                    Error *error);
