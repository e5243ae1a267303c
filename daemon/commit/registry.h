/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotency-key registry: what icecommitd knows about each key it has seen (pending, committed
 * with its receipt, failed with its error, or unknown), bounded by receipt-cache-size. Keys are
 * scoped by table: one key used on two tables is two requests. Memory only: the table's
 * snapshot summaries are the durable record (docs/design.md sections 3.2, 3.3). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/cleanup.h"
#include "writer/api.h"

typedef enum KeyState {
        KEY_PENDING,
        KEY_COMMITTED,
        KEY_FAILED,
        KEY_UNKNOWN,
} KeyState;

typedef struct KeyEntry KeyEntry;
typedef struct KeyRegistry KeyRegistry;

struct KeyEntry {
        char *scope; /* the table, and the principal when auth is on: request_key_scope() */
        char *key;
        char *fingerprint;
        KeyState state;
        int status;              /* HTTP status of the final answer */
        json_t *body;            /* receipt or error body, owned */
        WriterRequest **waiters; /* later callers with the same key while pending */
        size_t n_waiters;
        KeyEntry *hash_next;
        KeyEntry *done_prev, *done_next; /* finished entries, oldest first, for eviction */
};

int registry_new(size_t max_finished, KeyRegistry **ret);
KeyRegistry *registry_free(KeyRegistry *r);
DEFINE_CLEANUP_FUNC(KeyRegistry, registry_free);

/* The entry of `key` on the table `scope`, or NULL. */
KeyEntry *registry_get(KeyRegistry *r, const char *scope, const char *key);
/* The entries of `key` on any table that `accept` (NULL: every entry) lets through: the first
 * found, and how many there are. */
KeyEntry *registry_find_any(KeyRegistry *r, const char *key,
                            bool (*accept)(const KeyEntry *e, void *userdata), void *userdata,
                            size_t *ret_n);
/* Adds a pending entry for a key that has none on that table. */
int registry_add(KeyRegistry *r, const char *scope, const char *key, const char *fingerprint,
                 KeyEntry **ret);
/* Records the final answer (body stolen), answers every waiter with a copy, and makes the entry
 * evictable. A retryable failure (KEY_FAILED with a 5xx) or one an operator fixes (a 403)
 * removes the entry instead. The entry may be gone afterwards either way (eviction): do not use
 * it again. */
void registry_finish(KeyRegistry *r, KeyEntry *e, KeyState state, int status, json_t *body);
/* Drops an entry (a retryable failure: the writer may send the key again). Waiters must have
 * been answered. */
void registry_remove(KeyRegistry *r, KeyEntry *e);
/* Adds a waiter to a pending entry; takes ownership of w. */
int registry_wait(KeyEntry *e, WriterRequest *w);
/* The GET /v1/commits/{key} body for an entry (owned). */
json_t *registry_entry_status_json(const KeyEntry *e);
size_t registry_size(const KeyRegistry *r);
/* Entries in KEY_UNKNOWN: writers answered 504 that have not retried (or were evicted). */
size_t registry_count_unknown(const KeyRegistry *r);
