/* SPDX-License-Identifier: Apache-2.0 */
/* commit/registry.c: idempotency-key states, waiters, retryable failures forgotten, bounded
 * memory through FIFO eviction of finished entries. */
#include <errno.h>

#include "commit/registry.h"
#include "test.h"

static WriterRequest *waiter(void) {
        WriterRequest *w = calloc(1, sizeof(*w));

        ASSERT_TRUE(w);
        return w; /* http NULL: answers are dropped, as for a writer that left */
}

TEST(pending_then_committed_with_waiters) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *e;
        json_t *status;

        ASSERT_OK(registry_new(10, &r));
        ASSERT_OK(registry_add(r, "t", "k1", "fp", &e));
        ASSERT_TRUE(registry_get(r, "t", "k1") == e);
        ASSERT_TRUE(registry_get(r, "t", "k2") == NULL);
        ASSERT_OK(registry_wait(e, waiter()));
        ASSERT_OK(registry_wait(e, waiter()));
        status = registry_entry_status_json(e);
        ASSERT_STREQ(json_string_value(json_object_get(status, "status")), "pending");
        json_decref(status);

        registry_finish(r, e, KEY_COMMITTED, 200, json_pack("{s:I}", "snapshot-id", (json_int_t)7));
        ASSERT_EQ(e->n_waiters, 0);
        status = registry_entry_status_json(registry_get(r, "t", "k1"));
        ASSERT_STREQ(json_string_value(json_object_get(status, "status")), "committed");
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(status, "receipt"), "snapshot-id")),
                  7);
        json_decref(status);
}

TEST(retryable_failures_are_forgotten_definite_ones_kept) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *e;

        ASSERT_OK(registry_new(10, &r));
        ASSERT_OK(registry_add(r, "t", "busy", "fp", &e));
        ASSERT_OK(registry_wait(e, waiter()));
        registry_finish(r, e, KEY_FAILED, 503, json_object());
        ASSERT_TRUE(registry_get(r, "t", "busy") == NULL);

        ASSERT_OK(registry_add(r, "t", "bad", "fp", &e));
        registry_finish(r, e, KEY_FAILED, 422,
                        json_pack("{s:{s:s}}", "error", "message", "entry 0: EXISTING"));
        e = registry_get(r, "t", "bad");
        ASSERT_TRUE(e && e->status == 422 && e->state == KEY_FAILED);
}

TEST(finished_entries_are_evicted_oldest_first) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *pending, *e;
        char key[16];

        ASSERT_OK(registry_new(3, &r));
        ASSERT_OK(registry_add(r, "t", "pending", "fp", &pending));
        for (int i = 0; i < 2000; i++) { /* also grows the hash table */
                snprintf(key, sizeof(key), "k%d", i);
                ASSERT_OK(registry_add(r, "t", key, "fp", &e));
                registry_finish(r, e, KEY_COMMITTED, 200, json_object());
        }
        ASSERT_EQ(registry_size(r), 4);
        ASSERT_TRUE(registry_get(r, "t", "pending") == pending);
        ASSERT_TRUE(registry_get(r, "t", "k1996") == NULL);
        ASSERT_TRUE(registry_get(r, "t", "k1997") != NULL);
        ASSERT_TRUE(registry_get(r, "t", "k1999") != NULL);
}

TEST(zero_cache_keeps_nothing_finished) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *e;

        ASSERT_OK(registry_new(0, &r));
        ASSERT_OK(registry_add(r, "t", "k", "fp", &e));
        registry_finish(r, e, KEY_COMMITTED, 200, json_object());
        ASSERT_EQ(registry_size(r), 0);
}

/* One key on two tables is two requests; a lookup without a table sees both. */
TEST(keys_are_scoped_by_table) {
        _cleanup_(registry_freep) KeyRegistry *r = NULL;
        KeyEntry *a, *b;
        size_t n;

        ASSERT_OK(registry_new(10, &r));
        ASSERT_OK(registry_add(r, "ns\x1et1", "k", "fp-1", &a));
        ASSERT_TRUE(registry_get(r, "ns\x1et2", "k") == NULL);
        ASSERT_OK(registry_add(r, "ns\x1et2", "k", "fp-2", &b));
        ASSERT_TRUE(registry_get(r, "ns\x1et1", "k") == a);
        ASSERT_TRUE(registry_get(r, "ns\x1et2", "k") == b);
        ASSERT_TRUE(registry_find_any(r, "k", /* accept= */ NULL, /* userdata= */ NULL, &n) !=
                    NULL);
        ASSERT_EQ(n, 2);
        registry_finish(r, a, KEY_FAILED, 422, json_object());
        ASSERT_TRUE(registry_get(r, "ns\x1et2", "k") == b);
        ASSERT_TRUE(registry_find_any(r, "other", /* accept= */ NULL, /* userdata= */ NULL, &n) ==
                    NULL);
        ASSERT_EQ(n, 0);
        registry_finish(r, b, KEY_COMMITTED, 200, json_object());
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

        ASSERT_OK(registry_new(10, &r));
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
        registry_finish(r, a, KEY_COMMITTED, 200, json_object());
        registry_finish(r, b, KEY_COMMITTED, 200, json_object());
}
