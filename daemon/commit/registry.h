/* SPDX-License-Identifier: Apache-2.0 */
/* Idempotency-key registry: what icecommitd knows about each key it has seen (pending, committed
 * with its receipt, failed with its error, or unknown), the finished ones bounded in number and
 * bytes. Keys are scoped by table: one key used on two tables is two requests. Memory only: the
 * table's snapshot summaries are the durable record (docs/design.md sections 3.2, 3.3). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/siphash.h"
#include "writer/api.h"

typedef enum KeyState {
        KEY_PENDING,
        KEY_COMMITTED,
        KEY_FAILED,
        KEY_UNKNOWN,
} KeyState;

typedef struct KeyEntry KeyEntry;
typedef struct KeyRegistry KeyRegistry;

/* Owned by its registry. */
struct KeyEntry {
        KeyRegistry *registry;
        char *scope; /* the table, and the principal when auth is on: request_key_scope() */
        char *key;
        char *fingerprint;
        KeyState state;
        int status; /* HTTP status of the final answer */
        /* The final answer (a receipt or an error document), serialized once and sent as it
         * is to every writer of the key: never parsed or copied as a tree again. NULL while
         * pending. */
        char *body;
        size_t body_len;
        WriterRequest **waiters; /* later callers with the same key while pending */
        size_t n_waiters;
        KeyEntry *hash_next;
        KeyEntry *done_prev, *done_next; /* finished entries, oldest first, for eviction */
};

/* A registry keeping at most max_finished finished entries of at most max_finished_bytes
 * (registry_entry_bytes()) together, oldest evicted first; keys are hashed with SipHash under
 * hash_key (copied: random and secret in the daemon, so that no writer can choose keys that
 * share a chain). Returns 0 or -ENOMEM. */
int registry_new(size_t max_finished, uint64_t max_finished_bytes,
                 const uint8_t hash_key[SIPHASH_KEY_BYTES], KeyRegistry **ret);
/* Frees every entry; waiters still there are answered as writer_request_free() does. */
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
/* Records the final answer (body: serialized JSON, stolen; NULL when it could not be built,
 * which answers every waiter 503 out-of-memory and forgets the key), answers every waiter with
 * its bytes, and makes the entry evictable. A retryable failure (KEY_FAILED with a 5xx) or one
 * an operator fixes (a 403) removes the entry instead. The entry may be gone afterwards either
 * way (eviction): do not use it again. */
void registry_finish(KeyRegistry *r, KeyEntry *e, KeyState state, int status, char *body,
                     size_t body_len);
/* Drops an entry (a retryable failure: the writer may send the key again). Waiters must have
 * been answered. */
void registry_remove(KeyRegistry *r, KeyEntry *e);
/* Adds a waiter to a pending entry; takes ownership of w. Its parsed request is freed at once
 * (its answer is the entry's), and when its client goes away it is dropped and freed at once
 * (w->gone), not kept until the entry finishes. Returns 0 or -ENOMEM (w not taken). */
int registry_wait(KeyEntry *e, WriterRequest *w);
/* The GET /v1/commits/{key} body for an entry: serialized JSON (malloc'ed, its length in
 * *ret_len), a receipt spliced in as its bytes; NULL when out of memory. */
char *registry_entry_status_text(const KeyEntry *e, size_t *ret_len);
/* What a finished entry counts against max_finished_bytes: the entry, its key, scope,
 * fingerprint and body. */
uint64_t registry_entry_bytes(const KeyEntry *e);
size_t registry_size(const KeyRegistry *r);
/* Finished entries kept, and their bytes. */
size_t registry_n_finished(const KeyRegistry *r);
uint64_t registry_finished_bytes(const KeyRegistry *r);
/* Waiters of every pending entry: repeats of a key whose first request is not answered. */
size_t registry_n_waiters(const KeyRegistry *r);
/* Entries in KEY_UNKNOWN: writers answered 504 that have not retried (or were evicted). */
size_t registry_count_unknown(const KeyRegistry *r);
/* The most entries one hash chain holds (for tests: chains stay short whatever the keys). */
size_t registry_longest_chain(const KeyRegistry *r);
