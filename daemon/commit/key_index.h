/* SPDX-License-Identifier: Apache-2.0 */
/* The idempotency keys recorded in a table's recent snapshots, indexed (docs/design.md section
 * 12): a commit looks up each request's key in O(1) instead of scanning commit.history-lookback
 * snapshot summaries on the loop for every request. Built once per load, then kept current with
 * the keys of each commit adopted. A hit is verified against the table at hand (the snapshot is
 * there and its summary lists the key), so the index may hold more than the table: never less
 * than what it was built from. Not thread-safe: the loop's. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/table.h"
#include "util/siphash.h"

typedef struct KeyIndexSlot {
        uint64_t digest; /* 0: empty */
        int64_t snapshot_id;
} KeyIndexSlot;

typedef struct KeyIndex {
        uint8_t hash_key[SIPHASH_KEY_BYTES]; /* random: writers choose the keys */
        KeyIndexSlot *slots;
        size_t n_slots, n_used;
        bool is_valid; /* false: not built (lookups fall back to scanning) */
} KeyIndex;

/* Indexes the keys of the newest `lookback` snapshots of t (0: all), replacing what the index
 * held. Returns 0 or -ENOMEM (the index is then invalid). */
int key_index_rebuild(KeyIndex *ix, const TableMetadata *t, size_t lookback);
/* Adds one recorded key ("principal/key" or "key") of snapshot_id. -ENOMEM makes the index
 * invalid. */
int key_index_add(KeyIndex *ix, const char *key, int64_t snapshot_id);
/* The snapshot of t whose summary records `key` (borrowed), or NULL. Uses the index when it is
 * valid, else scans the newest `lookback` snapshots as snapshot_find_key() does. */
json_t *key_index_find(const KeyIndex *ix, const TableMetadata *t, const char *key,
                       size_t lookback);
void key_index_invalidate(KeyIndex *ix);
void key_index_deinit(KeyIndex *ix);
