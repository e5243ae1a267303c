/* SPDX-License-Identifier: Apache-2.0 */
/* Chained hash of idempotency keys with FIFO eviction of finished entries (see registry.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit/registry.h"

struct KeyRegistry {
        KeyEntry **buckets;
        size_t n_buckets;
        size_t n_entries;
        size_t n_finished;
        size_t max_finished;
        size_t n_unknown; /* entries in KEY_UNKNOWN */
        KeyEntry *done_head, *done_tail;
};

static uint64_t key_hash(const char *s) {
        uint64_t h = 1469598103934665603ull; /* FNV-1a: keys are short and not adversarial-sized */

        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= 1099511628211ull;
        }
        return h;
}

int registry_new(size_t max_finished, KeyRegistry **ret) {
        _cleanup_(freep) KeyRegistry *r = NULL;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->n_buckets = 1024;
        r->buckets = calloc(r->n_buckets, sizeof(*r->buckets));
        if (!r->buckets)
                return -ENOMEM;
        r->max_finished = max_finished;
        *ret = TAKE_PTR(r);
        return 0;
}

static KeyEntry *registry_entry_free(KeyEntry *e) {
        if (!e)
                return NULL;
        for (size_t i = 0; i < e->n_waiters; i++)
                writer_request_free(e->waiters[i]);
        free(e->waiters);
        json_decref(e->body);
        free(e->scope);
        free(e->key);
        free(e->fingerprint);
        free(e);
        return NULL;
}

DEFINE_CLEANUP_FUNC(KeyEntry, registry_entry_free);

KeyRegistry *registry_free(KeyRegistry *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_buckets; i++)
                for (KeyEntry *e = r->buckets[i], *next; e; e = next) {
                        next = e->hash_next;
                        registry_entry_free(e);
                }
        free(r->buckets);
        free(r);
        return NULL;
}

static void registry_grow(KeyRegistry *r) {
        size_t n = r->n_buckets * 2;
        KeyEntry **buckets = calloc(n, sizeof(*buckets));

        if (!buckets)
                return; /* longer chains, still correct */
        for (size_t i = 0; i < r->n_buckets; i++)
                for (KeyEntry *e = r->buckets[i], *next; e; e = next) {
                        size_t b = key_hash(e->key) & (n - 1);

                        next = e->hash_next;
                        e->hash_next = buckets[b];
                        buckets[b] = e;
                }
        free(r->buckets);
        r->buckets = buckets;
        r->n_buckets = n;
}

/* Hashed by the key alone, so that every table's entry of one key shares a chain. */
KeyEntry *registry_get(KeyRegistry *r, const char *scope, const char *key) {
        for (KeyEntry *e = r->buckets[key_hash(key) & (r->n_buckets - 1)]; e; e = e->hash_next)
                if (strcmp(e->key, key) == 0 && strcmp(e->scope, scope) == 0)
                        return e;
        return NULL;
}

KeyEntry *registry_find_any(KeyRegistry *r, const char *key,
                            bool (*accept)(const KeyEntry *e, void *userdata), void *userdata,
                            size_t *ret_n) {
        KeyEntry *first = NULL;
        size_t n = 0;

        for (KeyEntry *e = r->buckets[key_hash(key) & (r->n_buckets - 1)]; e; e = e->hash_next)
                if (strcmp(e->key, key) == 0 && (!accept || accept(e, userdata))) {
                        if (!first)
                                first = e;
                        n++;
                }
        *ret_n = n;
        return first;
}

int registry_add(KeyRegistry *r, const char *scope, const char *key, const char *fingerprint,
                 KeyEntry **ret) {
        _cleanup_(registry_entry_freep) KeyEntry *e = NULL;
        size_t b;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->scope = strdup(scope);
        e->key = strdup(key);
        e->fingerprint = strdup(fingerprint);
        if (!e->scope || !e->key || !e->fingerprint)
                return -ENOMEM;
        if (r->n_entries >= r->n_buckets)
                registry_grow(r);
        b = key_hash(key) & (r->n_buckets - 1);
        e->hash_next = r->buckets[b];
        r->buckets[b] = e;
        r->n_entries++;
        *ret = TAKE_PTR(e);
        return 0;
}

static void registry_unlink(KeyRegistry *r, KeyEntry *e) {
        KeyEntry **p = &r->buckets[key_hash(e->key) & (r->n_buckets - 1)];

        while (*p && *p != e)
                p = &(*p)->hash_next;
        if (*p)
                *p = e->hash_next;
        r->n_entries--;
        if (e->state == KEY_UNKNOWN)
                r->n_unknown--;
        if (e->state != KEY_PENDING) {
                if (e->done_prev)
                        e->done_prev->done_next = e->done_next;
                else
                        r->done_head = e->done_next;
                if (e->done_next)
                        e->done_next->done_prev = e->done_prev;
                else
                        r->done_tail = e->done_prev;
                r->n_finished--;
        }
}

void registry_remove(KeyRegistry *r, KeyEntry *e) {
        registry_unlink(r, e);
        registry_entry_free(e);
}

void registry_finish(KeyRegistry *r, KeyEntry *e, KeyState state, int status, json_t *body) {
        for (size_t i = 0; i < e->n_waiters; i++)
                writer_request_finish(e->waiters[i], status, json_deep_copy(body));
        free(e->waiters);
        e->waiters = NULL;
        e->n_waiters = 0;

        /* A retryable failure is forgotten: the writer's retry with the key is a new request.
         * So is a 403 (storage access denied, a table outside the storage roots): it rests on
         * what an operator configures, not on the request, and the same key must go through
         * once the operator acted. */
        if (state == KEY_FAILED && (status >= 500 || status == 403)) {
                json_decref(body);
                registry_remove(r, e);
                return;
        }

        json_decref(e->body);
        e->body = body;
        e->status = status;
        if (e->state == KEY_PENDING) {
                e->done_prev = r->done_tail;
                if (r->done_tail)
                        r->done_tail->done_next = e;
                else
                        r->done_head = e;
                r->done_tail = e;
                r->n_finished++;
        }
        r->n_unknown += (state == KEY_UNKNOWN) - (e->state == KEY_UNKNOWN);
        e->state = state;

        while (r->n_finished > r->max_finished && r->done_head) {
                KeyEntry *old = r->done_head;

                registry_unlink(r, old);
                registry_entry_free(old);
        }
}

int registry_wait(KeyEntry *e, WriterRequest *w) {
        WriterRequest **waiters = reallocarray(e->waiters, e->n_waiters + 1, sizeof(*waiters));

        if (!waiters)
                return -ENOMEM;
        e->waiters = waiters;
        e->waiters[e->n_waiters++] = w;
        return 0;
}

json_t *registry_entry_status_json(const KeyEntry *e) {
        static const char *const state_name[] = { "pending", "committed", "failed", "unknown" };
        json_t *o =
                json_pack("{s:s, s:s}", "idempotency-key", e->key, "status", state_name[e->state]);

        if (!o || e->state == KEY_PENDING)
                return o;
        if (json_object_set(o, e->state == KEY_COMMITTED ? "receipt" : "error",
                            e->state == KEY_COMMITTED ? e->body
                                                      : json_object_get(e->body, "error")) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

size_t registry_size(const KeyRegistry *r) {
        return r->n_entries;
}

size_t registry_count_unknown(const KeyRegistry *r) {
        return r->n_unknown;
}
