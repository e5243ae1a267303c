/* SPDX-License-Identifier: Apache-2.0 */
/* Open addressing with linear probing over 64-bit keyed digests; a digest seen twice (two
 * snapshots recording one key, or a collision) simply takes two slots, and every candidate is
 * verified against the table. */
#include "commit/key_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "iceberg/snapshot.h"

static uint64_t key_index_digest(const KeyIndex *ix, const char *key, size_t len) {
        uint64_t lo, hi;

        siphash128(ix->hash_key, key, len, &lo, &hi);
        return lo ? lo : 1; /* 0 marks an empty slot */
}

static void key_index_insert(KeyIndexSlot *slots, size_t n_slots, uint64_t digest, int64_t id) {
        size_t i = (size_t)(digest & (n_slots - 1));

        while (slots[i].digest != 0) {
                if (slots[i].digest == digest && slots[i].snapshot_id == id)
                        return;
                i = (i + 1) & (n_slots - 1);
        }
        slots[i] = (KeyIndexSlot){ digest, id };
}

/* Room for one more at a load factor of at most 1/2. */
static int key_index_reserve(KeyIndex *ix) {
        KeyIndexSlot *slots;
        size_t n;

        if ((ix->n_used + 1) * 2 <= ix->n_slots)
                return 0;
        n = ix->n_slots ? ix->n_slots * 2 : 64;
        slots = calloc(n, sizeof(*slots));
        if (!slots)
                return -ENOMEM;
        for (size_t i = 0; i < ix->n_slots; i++)
                if (ix->slots[i].digest)
                        key_index_insert(slots, n, ix->slots[i].digest, ix->slots[i].snapshot_id);
        free(ix->slots);
        ix->slots = slots;
        ix->n_slots = n;
        return 0;
}

static int key_index_add_len(KeyIndex *ix, const char *key, size_t len, int64_t snapshot_id) {
        if (key_index_reserve(ix) < 0) {
                key_index_invalidate(ix);
                return -ENOMEM;
        }
        key_index_insert(ix->slots, ix->n_slots, key_index_digest(ix, key, len), snapshot_id);
        ix->n_used++;
        return 0;
}

int key_index_add(KeyIndex *ix, const char *key, int64_t snapshot_id) {
        if (!ix->is_valid)
                return 0;
        return key_index_add_len(ix, key, strlen(key), snapshot_id);
}

void key_index_invalidate(KeyIndex *ix) {
        free(ix->slots);
        ix->slots = NULL;
        ix->n_slots = ix->n_used = 0;
        ix->is_valid = false;
}

void key_index_deinit(KeyIndex *ix) {
        key_index_invalidate(ix);
}

int key_index_rebuild(KeyIndex *ix, const TableMetadata *t, size_t lookback) {
        json_t *snapshots = json_object_get(t->metadata, "snapshots");
        size_t n = json_array_size(snapshots);

        key_index_invalidate(ix);
        /* A new hash key per build: the digests of one table's keys are not predictable. */
        if (getrandom(ix->hash_key, sizeof(ix->hash_key), 0) != (ssize_t)sizeof(ix->hash_key))
                return -EIO;
        ix->is_valid = true;
        for (size_t i = n; i > 0 && (lookback == 0 || n - i < lookback); i--) {
                json_t *s = json_array_get(snapshots, i - 1);
                const char *keys = json_string_value(
                        json_object_get(json_object_get(s, "summary"), SNAPSHOT_SUMMARY_KEYS));
                int64_t id;

                if (!keys || table_json_get_i64(s, "snapshot-id", &id) < 0)
                        continue;
                for (const char *p = keys; *p;) {
                        const char *end = strchr(p, ',');
                        size_t len = end ? (size_t)(end - p) : strlen(p);

                        if (len > 0 && key_index_add_len(ix, p, len, id) < 0)
                                return -ENOMEM;
                        p = end ? end + 1 : p + len;
                }
        }
        return 0;
}

json_t *key_index_find(const KeyIndex *ix, const TableMetadata *t, const char *key,
                       size_t lookback) {
        uint64_t digest;

        if (!ix->is_valid)
                return snapshot_find_key(t->metadata, key, lookback);
        if (ix->n_slots == 0)
                return NULL;
        digest = key_index_digest(ix, key, strlen(key));
        for (size_t i = (size_t)(digest & (ix->n_slots - 1)); ix->slots[i].digest != 0;
             i = (i + 1) & (ix->n_slots - 1)) {
                json_t *s;

                if (ix->slots[i].digest != digest)
                        continue;
                s = table_snapshot(t, ix->slots[i].snapshot_id);
                if (s && snapshot_records_key(s, key))
                        return s;
        }
        return NULL;
}
