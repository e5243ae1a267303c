/* SPDX-License-Identifier: Apache-2.0 */
/* commit/registry.c: idempotency-key states, waiters (counted, dropped when their client
 * leaves), retryable failures forgotten, answers kept as the bytes sent, bounded memory through
 * FIFO eviction of finished entries by count and bytes, keys hashed under a secret key. */
#include <errno.h>
#include <jansson.h>

#include "commit/registry.h"
#include "test.h"

static const uint8_t hash_key[SIPHASH_KEY_BYTES] = { 7, 1, 9 };

/* A finished answer as the engine hands it over: serialized (malloc'ed). */
static char *text(const char *s) {
        char *t = strdup(s);

        ASSERT_TRUE(t);
        return t;
}

static void finish(KeyRegistry *r, KeyEntry *e, KeyState state, int status, const char *body) {
        registry_finish(r, e, state, status, text(body), strlen(body));
}

/* A waiter's answer, captured through the sink seam. */
typedef struct Reply {
        bool done;
        int status;
        json_t *body;
} Reply;

static void reply_add_header(const char *name, const char *value, void *userdata) {
}

static void reply_reply(int status, json_t *body, void *userdata) {
        Reply *a = userdata;

        ASSERT_TRUE(!a->done);
        a->done = true;
        a->status = status;
        a->body = body;
}

static const WriterReplySink reply_sink = { .add_header = reply_add_header, .reply = reply_reply };

static WriterRequest *waiter(Reply *a) {
        WriterRequest *w = NULL;

        *a = (Reply){ 0 };
        ASSERT_OK(writer_request_new_take(/* request= */ NULL, &reply_sink, a, &w));
        return w;
}

static json_t *status_of(const KeyEntry *e) {
        _cleanup_(freep) char *s = NULL;
        json_t *j;
        size_t len = 0;

        s = registry_entry_status_text(e, &len);
        ASSERT_TRUE(s && len == strlen(s));
        j = json_loadb(s, len, 0, NULL);
        ASSERT_TRUE(j);
        return j;
}

TEST(pending_then_committed_with_waiters) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        static const char receipt[] = "{\"snapshot-id\":7,\"files\":[\"a\",\"b\"]}";
        Reply a, b;
        KeyEntry *e;
        json_t *status;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "k1", "fp", &e));
        ASSERT_TRUE(registry_get(r, "t", "k1") == e);
        ASSERT_TRUE(registry_get(r, "t", "k2") == NULL);
        ASSERT_OK(registry_wait(e, waiter(&a)));
        ASSERT_OK(registry_wait(e, waiter(&b)));
        ASSERT_EQ(registry_n_waiters(r), 2);
        status = status_of(e);
        ASSERT_STREQ(json_string_value(json_object_get(status, "status")), "pending");
        json_decref(status);

        finish(r, e, KEY_COMMITTED, 200, receipt);
        ASSERT_EQ(e->n_waiters, 0);
        ASSERT_EQ(registry_n_waiters(r), 0);
        /* Every waiter got the very answer. */
        ASSERT_TRUE(a.done && b.done && a.status == 200 && b.status == 200);
        ASSERT_EQ(json_integer_value(json_object_get(a.body, "snapshot-id")), 7);
        ASSERT_EQ(json_array_size(json_object_get(b.body, "files")), 2);
        json_decref(a.body);
        json_decref(b.body);

        /* The receipt is kept as the bytes sent, and spliced into the status as they are. */
        e = registry_get(r, "t", "k1");
        ASSERT_TRUE(e && e->body_len == strlen(receipt) &&
                    memcmp(e->body, receipt, e->body_len) == 0);
        status = status_of(e);
        ASSERT_STREQ(json_string_value(json_object_get(status, "idempotency-key")), "k1");
        ASSERT_STREQ(json_string_value(json_object_get(status, "status")), "committed");
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(status, "receipt"), "snapshot-id")),
                  7);
        json_decref(status);
}

/* A repeat whose client left is dropped at once with its memory (valgrind and ASan would see
 * it leak or be used after), stops counting, and the others still get their answer. */
TEST(a_waiter_whose_client_leaves_is_dropped_at_once) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        Reply a, b, c;
        WriterRequest *wb;
        KeyEntry *e;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "k", "fp", &e));
        ASSERT_OK(registry_wait(e, waiter(&a)));
        ASSERT_OK(registry_wait(e, wb = waiter(&b)));
        ASSERT_OK(registry_wait(e, waiter(&c)));
        ASSERT_EQ(registry_n_waiters(r), 3);

        writer_request_client_gone(wb); /* what the HTTP layer's gone callback does */
        ASSERT_EQ(e->n_waiters, 2);
        ASSERT_EQ(registry_n_waiters(r), 2);
        ASSERT_TRUE(!b.done); /* nobody to answer */

        finish(r, e, KEY_FAILED, 422, "{\"error\":{\"code\":422,\"type\":\"invalid-manifest\"}}");
        ASSERT_TRUE(a.done && c.done && !b.done);
        ASSERT_EQ(a.status, 422);
        ASSERT_EQ(registry_n_waiters(r), 0);
        json_decref(a.body);
        json_decref(c.body);
}

/* Waiters left when the registry goes (shutdown) are answered 503, not leaked. */
TEST(waiters_are_answered_when_the_registry_is_freed) {
        KeyRegistry *r = NULL;
        KeyEntry *e;
        Reply a;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "k", "fp", &e));
        ASSERT_OK(registry_wait(e, waiter(&a)));
        r = registry_free(r);
        ASSERT_TRUE(a.done && a.status == 503);
        json_decref(a.body);
}

TEST(retryable_failures_are_forgotten_definite_ones_kept) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        json_t *status;
        KeyEntry *e;
        Reply a;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "busy", "fp", &e));
        ASSERT_OK(registry_wait(e, waiter(&a)));
        finish(r, e, KEY_FAILED, 503, "{}");
        ASSERT_TRUE(registry_get(r, "t", "busy") == NULL);
        ASSERT_TRUE(a.done && a.status == 503);
        json_decref(a.body);

        ASSERT_OK(registry_add(r, "t", "bad", "fp", &e));
        finish(r, e, KEY_FAILED, 422, "{\"error\":{\"message\":\"entry 0: EXISTING\"}}");
        e = registry_get(r, "t", "bad");
        ASSERT_TRUE(e && e->status == 422 && e->state == KEY_FAILED);
        status = status_of(e);
        ASSERT_STREQ(json_string_value(json_object_get(status, "status")), "failed");
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(status, "error"), "message")),
                     "entry 0: EXISTING");
        json_decref(status);

        /* An answer that could not be serialized is not kept: a retry is a fresh request. */
        ASSERT_OK(registry_add(r, "t", "lost", "fp", &e));
        ASSERT_OK(registry_wait(e, waiter(&a)));
        registry_finish(r, e, KEY_COMMITTED, 200, /* body= */ NULL, 0);
        ASSERT_TRUE(registry_get(r, "t", "lost") == NULL);
        ASSERT_TRUE(a.done && a.status == 503);
        json_decref(a.body);
}

TEST(finished_entries_are_evicted_oldest_first) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *pending, *e;
        char key[16];

        ASSERT_OK(registry_new(3, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "pending", "fp", &pending));
        for (int i = 0; i < 2000; i++) { /* also grows the hash table */
                snprintf(key, sizeof(key), "k%d", i);
                ASSERT_OK(registry_add(r, "t", key, "fp", &e));
                finish(r, e, KEY_COMMITTED, 200, "{}");
        }
        ASSERT_EQ(registry_size(r), 4);
        ASSERT_TRUE(registry_get(r, "t", "pending") == pending);
        ASSERT_TRUE(registry_get(r, "t", "k1996") == NULL);
        ASSERT_TRUE(registry_get(r, "t", "k1997") != NULL);
        ASSERT_TRUE(registry_get(r, "t", "k1999") != NULL);
}

/* A receipt lists every file of its request: the cache is bounded by what its entries weigh,
 * not only by how many there are. */
TEST(finished_entries_are_evicted_by_bytes) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        _cleanup_(freep) char *big = malloc(40001);
        uint64_t one, max;
        KeyEntry *e;
        char key[16];

        ASSERT_TRUE(big);
        memset(big, 'x', 40000);
        big[0] = '"';
        big[39999] = '"';
        big[40000] = '\0';
        ASSERT_OK(registry_new(1000, 100000, hash_key, &r));
        for (int i = 0; i < 10; i++) {
                snprintf(key, sizeof(key), "k%d", i);
                ASSERT_OK(registry_add(r, "t", key, "fp", &e));
                one = registry_entry_bytes(e) + strlen(big) + 1;
                finish(r, e, KEY_COMMITTED, 200, big);
                ASSERT_EQ(registry_entry_bytes(registry_get(r, "t", key)), one);
        }
        /* Two fit in 100000 bytes, the third would not: the oldest went first. */
        max = 100000;
        ASSERT_EQ(registry_n_finished(r), max / one);
        ASSERT_EQ(registry_finished_bytes(r), (max / one) * one);
        ASSERT_TRUE(registry_get(r, "t", "k9") && registry_get(r, "t", "k8"));
        ASSERT_TRUE(!registry_get(r, "t", "k7"));

        /* One answer larger than the whole cache is not kept at all. */
        r = registry_free(r);
        ASSERT_OK(registry_new(1000, 1000, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "huge", "fp", &e));
        finish(r, e, KEY_COMMITTED, 200, big);
        ASSERT_TRUE(!registry_get(r, "t", "huge"));
        ASSERT_EQ(registry_finished_bytes(r), 0);
}

TEST(zero_cache_keeps_nothing_finished) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *e;

        ASSERT_OK(registry_new(0, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "t", "k", "fp", &e));
        finish(r, e, KEY_COMMITTED, 200, "{}");
        ASSERT_EQ(registry_size(r), 0);
}

/* FNV-1a, as the registry hashed keys before: unkeyed, so anyone can compute it. */
static uint64_t fnv1a(const char *s) {
        uint64_t h = 1469598103934665603ull;

        for (; *s; s++) {
                h ^= (unsigned char)*s;
                h *= 1099511628211ull;
        }
        return h;
}

/* Keys chosen to share one of the first 1024 buckets under an unkeyed hash spread over the
 * buckets under the registry's keyed one; and many keys are all found again. */
TEST(keys_are_hashed_under_a_secret_key) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL, *many = NULL;
        KeyEntry *e;
        char key[32];
        unsigned n = 0;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        for (unsigned i = 0; n < 300; i++) {
                snprintf(key, sizeof(key), "job-%u", i);
                if ((fnv1a(key) & 1023) != 0)
                        continue;
                ASSERT_OK(registry_add(r, "t", key, "fp", &e));
                n++;
        }
        /* Under FNV-1a all 300 would be one chain; 300 keys in 1024 buckets rarely share 6. */
        ASSERT_TRUE(registry_longest_chain(r) <= 6);

        ASSERT_OK(registry_new(0, 0, hash_key, &many));
        for (unsigned i = 0; i < 20000; i++) {
                snprintf(key, sizeof(key), "key-%u", i);
                ASSERT_OK(registry_add(many, "t", key, "fp", &e));
        }
        for (unsigned i = 0; i < 20000; i++) {
                snprintf(key, sizeof(key), "key-%u", i);
                e = registry_get(many, "t", key);
                ASSERT_TRUE(e && strcmp(e->key, key) == 0);
        }
        ASSERT_TRUE(registry_get(many, "t", "key-20000") == NULL);
        /* The table grew with the entries: chains stay short. */
        ASSERT_TRUE(registry_longest_chain(many) <= 12);
}

/* One key on two tables is two requests; a lookup without a table sees both. */
TEST(keys_are_scoped_by_table) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *a, *b;
        size_t n;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "ns\x1et1", "k", "fp-1", &a));
        ASSERT_TRUE(registry_get(r, "ns\x1et2", "k") == NULL);
        ASSERT_OK(registry_add(r, "ns\x1et2", "k", "fp-2", &b));
        ASSERT_TRUE(registry_get(r, "ns\x1et1", "k") == a);
        ASSERT_TRUE(registry_get(r, "ns\x1et2", "k") == b);
        ASSERT_TRUE(registry_find_any(r, "k", /* accept= */ NULL, /* userdata= */ NULL, &n) !=
                    NULL);
        ASSERT_EQ(n, 2);
        finish(r, a, KEY_FAILED, 422, "{\"error\":{}}");
        ASSERT_TRUE(registry_get(r, "ns\x1et2", "k") == b);
        ASSERT_TRUE(registry_find_any(r, "other", /* accept= */ NULL, /* userdata= */ NULL, &n) ==
                    NULL);
        ASSERT_EQ(n, 0);
        finish(r, b, KEY_COMMITTED, 200, "{}");
}

static bool accept_principal(const KeyEntry *e, void *userdata) {
        const char *prefix = userdata;

        return strncmp(e->scope, prefix, strlen(prefix)) == 0;
}

/* With authentication on the scope starts with the principal: one key of two principals on
 * one table is two entries, and a lookup without a table sees only what `accept` lets by. */
TEST(keys_are_scoped_by_principal) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *a, *b;
        size_t n;

        ASSERT_OK(registry_new(10, 1 << 20, hash_key, &r));
        ASSERT_OK(registry_add(r, "alice\x1dns\x1et", "k", "fp-1", &a));
        ASSERT_TRUE(registry_get(r, "bob\x1dns\x1et", "k") == NULL);
        ASSERT_OK(registry_add(r, "bob\x1dns\x1et", "k", "fp-2", &b));
        ASSERT_TRUE(registry_find_any(r, "k", accept_principal, "bob\x1d", &n) == b);
        ASSERT_EQ(n, 1);
        ASSERT_TRUE(registry_find_any(r, "k", accept_principal, "carol\x1d", &n) == NULL);
        ASSERT_EQ(n, 0);
        ASSERT_TRUE(registry_find_any(r, "k", /* accept= */ NULL, /* userdata= */ NULL, &n) !=
                    NULL);
        ASSERT_EQ(n, 2);
        finish(r, a, KEY_COMMITTED, 200, "{}");
        finish(r, b, KEY_COMMITTED, 200, "{}");
}
