/* SPDX-License-Identifier: Apache-2.0 */
/* Chained hash of idempotency keys (SipHash under a secret key, the table doubling as entries
 * come) with FIFO eviction of finished entries by count and bytes (see registry.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "commit/registry.h"
#include "util/buf.h"

struct KeyRegistry {
        KeyEntry **buckets;
        size_t n_buckets; /* a power of two */
        size_t n_entries;
        size_t n_finished;
        size_t max_finished;
        uint64_t finished_bytes;
        uint64_t max_finished_bytes;
        size_t n_unknown; /* entries in KEY_UNKNOWN */
        size_t n_waiters;
        KeyEntry *done_head, *done_tail;
        uint8_t hash_key[SIPHASH_KEY_BYTES];
};

/* Keys are the writers' choice: unkeyed, they could all be chosen into one chain, and every
 * lookup would walk it (issue 19, finding 10). */
static size_t registry_bucket(const KeyRegistry *r, const char *key) {
        uint64_t lo, hi;

        siphash128(r->hash_key, key, strlen(key), &lo, &hi);
        return (size_t)(lo & (r->n_buckets - 1));
}

int registry_new(size_t max_finished, uint64_t max_finished_bytes,
                 const uint8_t hash_key[SIPHASH_KEY_BYTES], KeyRegistry **ret) {
        _cleanup_(freep) KeyRegistry *r = NULL;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->n_buckets = 1024;
        r->buckets = calloc(r->n_buckets, sizeof(*r->buckets));
        if (!r->buckets)
                return -ENOMEM;
        r->max_finished = max_finished;
        r->max_finished_bytes = max_finished_bytes;
        memcpy(r->hash_key, hash_key, SIPHASH_KEY_BYTES);
        *ret = TAKE_PTR(r);
        return 0;
}

static KeyEntry *registry_entry_free(KeyEntry *e) {
        if (!e)
                return NULL;
        for (size_t i = 0; i < e->n_waiters; i++)
                writer_request_free(e->waiters[i]);
        if (e->registry)
                e->registry->n_waiters -= e->n_waiters;
        free(e->waiters);
        free(e->body);
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

/* At one entry per bucket on average the table doubles, so that chains stay short. */
static void registry_grow(KeyRegistry *r) {
        size_t old_n = r->n_buckets;
        KeyEntry **old = r->buckets, **buckets = calloc(old_n * 2, sizeof(*buckets));

        if (!buckets)
                return; /* longer chains, still correct */
        r->buckets = buckets;
        r->n_buckets = old_n * 2;
        for (size_t i = 0; i < old_n; i++)
                for (KeyEntry *e = old[i], *next; e; e = next) {
                        size_t b = registry_bucket(r, e->key);

                        next = e->hash_next;
                        e->hash_next = buckets[b];
                        buckets[b] = e;
                }
        free(old);
}

/* Hashed by the key alone, so that every table's entry of one key shares a chain. */
KeyEntry *registry_get(KeyRegistry *r, const char *scope, const char *key) {
        for (KeyEntry *e = r->buckets[registry_bucket(r, key)]; e; e = e->hash_next)
                if (strcmp(e->key, key) == 0 && strcmp(e->scope, scope) == 0)
                        return e;
        return NULL;
}

KeyEntry *registry_find_any(KeyRegistry *r, const char *key,
                            bool (*accept)(const KeyEntry *e, void *userdata), void *userdata,
                            size_t *ret_n) {
        KeyEntry *first = NULL;
        size_t n = 0;

        for (KeyEntry *e = r->buckets[registry_bucket(r, key)]; e; e = e->hash_next)
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
        b = registry_bucket(r, key);
        e->registry = r;
        e->hash_next = r->buckets[b];
        r->buckets[b] = e;
        r->n_entries++;
        *ret = TAKE_PTR(e);
        return 0;
}

uint64_t registry_entry_bytes(const KeyEntry *e) {
        return sizeof(*e) + strlen(e->scope) + 1 + strlen(e->key) + 1 + strlen(e->fingerprint) + 1 +
               (e->body ? e->body_len + 1 : 0);
}

/* Takes a finished entry out of the eviction order, with its bytes. */
static void registry_unlink_finished(KeyRegistry *r, KeyEntry *e) {
        if (e->done_prev)
                e->done_prev->done_next = e->done_next;
        else
                r->done_head = e->done_next;
        if (e->done_next)
                e->done_next->done_prev = e->done_prev;
        else
                r->done_tail = e->done_prev;
        e->done_prev = e->done_next = NULL;
        r->n_finished--;
        r->finished_bytes -= registry_entry_bytes(e);
}

static void registry_unlink(KeyRegistry *r, KeyEntry *e) {
        KeyEntry **p = &r->buckets[registry_bucket(r, e->key)];

        while (*p && *p != e)
                p = &(*p)->hash_next;
        if (*p)
                *p = e->hash_next;
        r->n_entries--;
        if (e->state == KEY_UNKNOWN)
                r->n_unknown--;
        if (e->state != KEY_PENDING)
                registry_unlink_finished(r, e);
}

void registry_remove(KeyRegistry *r, KeyEntry *e) {
        registry_unlink(r, e);
        registry_entry_free(e);
}

void registry_finish(KeyRegistry *r, KeyEntry *e, KeyState state, int status, char *body,
                     size_t body_len) {
        _cleanup_(freep) char *text = body;

        /* Every waiter gets the same bytes, copied into its reply: never a tree rebuilt. */
        for (size_t i = 0; i < e->n_waiters; i++) {
                WriterRequest *w = e->waiters[i];

                if (text)
                        writer_request_reply_text(w, status, slice_make(text, body_len));
                else
                        writer_request_reply_error(w, 503, "out-of-memory",
                                                   "out of memory, retry with the same key");
                writer_request_free(w);
        }
        r->n_waiters -= e->n_waiters;
        free(e->waiters);
        e->waiters = NULL;
        e->n_waiters = 0;

        /* A retryable failure is forgotten: the writer's retry with the key is a new request.
         * So is a 403 (storage access denied, a table outside the storage roots): it rests on
         * what an operator configures, not on the request, and the same key must go through
         * once the operator acted. An answer that could not be kept is forgotten too: a retry
         * finds a commit in history. */
        if ((state == KEY_FAILED && (status >= 500 || status == 403)) || !text) {
                registry_remove(r, e);
                return;
        }

        if (e->state != KEY_PENDING)
                registry_unlink_finished(r, e);
        free(e->body);
        e->body = TAKE_PTR(text);
        e->body_len = body_len;
        e->status = status;
        r->n_unknown += (state == KEY_UNKNOWN) - (e->state == KEY_UNKNOWN);
        e->state = state;
        e->done_prev = r->done_tail;
        e->done_next = NULL;
        if (r->done_tail)
                r->done_tail->done_next = e;
        else
                r->done_head = e;
        r->done_tail = e;
        r->n_finished++;
        r->finished_bytes += registry_entry_bytes(e);

        while ((r->n_finished > r->max_finished || r->finished_bytes > r->max_finished_bytes) &&
               r->done_head) {
                KeyEntry *old = r->done_head;

                registry_unlink(r, old);
                registry_entry_free(old);
        }
}

/* A waiter's client left: it goes now, with its memory, and stops counting as waiting. */
static void registry_on_waiter_gone(WriterRequest *w, void *userdata) {
        KeyEntry *e = userdata;

        for (size_t i = 0; i < e->n_waiters; i++)
                if (e->waiters[i] == w) {
                        memmove(&e->waiters[i], &e->waiters[i + 1],
                                (e->n_waiters - i - 1) * sizeof(*e->waiters));
                        e->n_waiters--;
                        e->registry->n_waiters--;
                        break;
                }
        writer_request_free(w);
}

int registry_wait(KeyEntry *e, WriterRequest *w) {
        WriterRequest **waiters = reallocarray(e->waiters, e->n_waiters + 1, sizeof(*waiters));

        if (!waiters)
                return -ENOMEM;
        e->waiters = waiters;
        e->waiters[e->n_waiters++] = w;
        e->registry->n_waiters++;
        /* Same key, same body (the fingerprint matched): nothing of it is needed any more. */
        w->request = request_free(w->request);
        w->gone = registry_on_waiter_gone;
        w->gone_userdata = e;
        return 0;
}

char *registry_entry_status_text(const KeyEntry *e, size_t *ret_len) {
        static const char *const state_name[] = { "pending", "committed", "failed", "unknown" };
        _cleanup_(json_decrefp) json_t *o = NULL, *error = NULL;
        _cleanup_(freep) char *head = NULL;
        _cleanup_(buf_deinitp) Buf out;
        size_t len;

        buf_init(&out, SIZE_MAX);
        o = json_pack("{s:s, s:s}", "idempotency-key", e->key, "status", state_name[e->state]);
        if (!o)
                return NULL;
        /* An error document is small: read back, its "error" goes beside the status. */
        if (e->state == KEY_FAILED || e->state == KEY_UNKNOWN) {
                error = json_loadb(e->body, e->body_len, 0, NULL);
                if (!error || json_object_set(o, "error", json_object_get(error, "error")) < 0)
                        return NULL;
        }
        head = json_dumps(o, JSON_COMPACT);
        if (!head)
                return NULL;
        len = strlen(head);
        if (e->state != KEY_COMMITTED) {
                *ret_len = len;
                return TAKE_PTR(head);
        }
        /* A receipt may list every file of a large request: its bytes go in as they are, never
         * parsed again. The head is an object: its closing brace makes way for them. */
        if (buf_append(&out, head, len - 1) < 0 || buf_append_str(&out, ",\"receipt\":") < 0 ||
            buf_append(&out, e->body, e->body_len) < 0 || buf_append_byte(&out, '}') < 0)
                return NULL;
        return (char *)buf_steal(&out, ret_len);
}

size_t registry_size(const KeyRegistry *r) {
        return r->n_entries;
}

size_t registry_n_finished(const KeyRegistry *r) {
        return r->n_finished;
}

uint64_t registry_finished_bytes(const KeyRegistry *r) {
        return r->finished_bytes;
}

size_t registry_n_waiters(const KeyRegistry *r) {
        return r->n_waiters;
}

size_t registry_count_unknown(const KeyRegistry *r) {
        return r->n_unknown;
}

size_t registry_longest_chain(const KeyRegistry *r) {
        size_t longest = 0;

        for (size_t i = 0; i < r->n_buckets; i++) {
                size_t n = 0;

                for (const KeyEntry *e = r->buckets[i]; e; e = e->hash_next)
                        n++;
                if (n > longest)
                        longest = n;
        }
        return longest;
}
