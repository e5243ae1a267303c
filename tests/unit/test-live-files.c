/* SPDX-License-Identifier: Apache-2.0 */
/* commit/live_files.c: files added by manifest, found under any spelling, let go when their
 * last manifest goes; probe chains survive removals; the bounds refuse growth and change
 * nothing; the keyed hash matches SipHash-2-4's reference output. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commit/live_files.h"
#include "util/cleanup.h"
#include "util/siphash.h"
#include "test.h"

static const uint8_t key[SIPHASH_KEY_BYTES] = {
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15
};

static LiveFileHash hash_of(const LiveFiles *lf, const char *location) {
        LiveFileHash h = { 0 };

        if (live_files_hash(lf, location, &h) < 0)
                TEST_FAIL("cannot hash '%s'", location);
        return h;
}

TEST(siphash128_reference_vectors) {
        /* vectors_sip128 of the reference implementation: key 00..0f, messages 00..(n-1). */
        static const uint8_t empty[16] = { 0xa3, 0x81, 0x7f, 0x04, 0xba, 0x25, 0xa8, 0xe6,
                                           0x6d, 0xf6, 0x72, 0x14, 0xc7, 0x55, 0x02, 0x93 };
        static const uint8_t one[16] = { 0xda, 0x87, 0xc1, 0xd8, 0x6b, 0x99, 0xaf, 0x44,
                                         0x34, 0x76, 0x59, 0x11, 0x9b, 0x22, 0xfc, 0x45 };
        const uint8_t msg[1] = { 0 };
        uint64_t lo, hi;
        uint8_t out[16];

        siphash128(key, msg, 0, &lo, &hi);
        for (unsigned i = 0; i < 8; i++) {
                out[i] = (uint8_t)(lo >> (8 * i));
                out[8 + i] = (uint8_t)(hi >> (8 * i));
        }
        ASSERT_TRUE(memcmp(out, empty, 16) == 0);
        siphash128(key, msg, 1, &lo, &hi);
        for (unsigned i = 0; i < 8; i++) {
                out[i] = (uint8_t)(lo >> (8 * i));
                out[8 + i] = (uint8_t)(hi >> (8 * i));
        }
        ASSERT_TRUE(memcmp(out, one, 16) == 0);
}

TEST(add_lookup_and_remove_by_manifest) {
        _cleanup_(live_files_freep) LiveFiles *lf = NULL;
        LiveFileHash a[2], b[1];

        ASSERT_OK(live_files_new(key, 1u << 20, NULL, &lf));
        a[0] = hash_of(lf, "/wh/t/data/a.parquet");
        a[1] = hash_of(lf, "/wh/t/data/b.parquet");
        b[0] = hash_of(lf, "s3://bkt/t/data/c.parquet");
        ASSERT_OK(live_files_add_manifest(lf, "/wh/t/metadata/m1.avro", a, 2));
        ASSERT_OK(live_files_add_manifest(lf, "/wh/t/metadata/m2.avro", b, 1));
        ASSERT_EQ(live_files_add_manifest(lf, "/wh/t/metadata/m2.avro", b, 1), -EEXIST);
        ASSERT_EQ(live_files_n_files(lf), 3);
        ASSERT_EQ(live_files_n_manifests(lf), 2);

        /* Every spelling of a file is that file. */
        ASSERT_TRUE(live_files_contains(lf, hash_of(lf, "file:///wh/t//data/./a.parquet")));
        ASSERT_TRUE(live_files_contains(lf, hash_of(lf, "s3a://bkt/t/data/c.parquet")));
        ASSERT_TRUE(!live_files_contains(lf, hash_of(lf, "/wh/t/data/A.parquet")));
        ASSERT_TRUE(!live_files_contains(lf, hash_of(lf, "/wh/t/data/d.parquet")));
        ASSERT_STREQ(live_files_find_manifest(lf, a[1]), "/wh/t/metadata/m1.avro");
        ASSERT_STREQ(live_files_find_manifest(lf, b[0]), "/wh/t/metadata/m2.avro");

        ASSERT_TRUE(live_files_remove_manifest(lf, "/wh/t/metadata/m1.avro"));
        ASSERT_TRUE(!live_files_remove_manifest(lf, "/wh/t/metadata/m1.avro"));
        ASSERT_TRUE(!live_files_contains(lf, a[0]));
        ASSERT_TRUE(!live_files_contains(lf, a[1]));
        ASSERT_TRUE(live_files_contains(lf, b[0]));
        ASSERT_TRUE(live_files_find_manifest(lf, a[0]) == NULL);
        ASSERT_EQ(live_files_n_files(lf), 1);
        /* A manifest without live files (all DELETED) is known, and holds nothing. */
        ASSERT_OK(live_files_add_manifest(lf, "/wh/t/metadata/m3.avro", NULL, 0));
        ASSERT_TRUE(live_files_has_manifest(lf, "/wh/t/metadata/m3.avro"));
        ASSERT_EQ(live_files_n_files(lf), 1);
}

TEST(a_file_in_two_manifests_stays_until_both_go) {
        _cleanup_(live_files_freep) LiveFiles *lf = NULL;
        LiveFileHash h;

        ASSERT_OK(live_files_new(key, 1u << 20, NULL, &lf));
        h = hash_of(lf, "/wh/t/data/a.parquet");
        ASSERT_OK(live_files_add_manifest(lf, "m1", &h, 1));
        ASSERT_OK(live_files_add_manifest(lf, "m2", &h, 1));
        ASSERT_EQ(live_files_n_files(lf), 1);
        ASSERT_TRUE(live_files_remove_manifest(lf, "m1"));
        ASSERT_TRUE(live_files_contains(lf, h));
        ASSERT_TRUE(live_files_remove_manifest(lf, "m2"));
        ASSERT_TRUE(!live_files_contains(lf, h));
}

TEST(retain_keeps_only_the_named_manifests) {
        _cleanup_(live_files_freep) LiveFiles *lf = NULL;
        const char *keep[] = { "m3", "m1", "m9" };
        LiveFileHash h[4];
        char name[8];

        ASSERT_OK(live_files_new(key, 1u << 20, NULL, &lf));
        for (unsigned i = 0; i < 4; i++) {
                (void)snprintf(name, sizeof(name), "m%u", i);
                h[i] = hash_of(lf, name); /* any string is a location */
                ASSERT_OK(live_files_add_manifest(lf, name, &h[i], 1));
        }
        ASSERT_EQ(live_files_retain(lf, keep, 3), 2);
        ASSERT_EQ(live_files_n_manifests(lf), 2);
        ASSERT_TRUE(live_files_has_manifest(lf, "m1"));
        ASSERT_TRUE(live_files_has_manifest(lf, "m3"));
        ASSERT_TRUE(!live_files_contains(lf, h[0]));
        ASSERT_TRUE(live_files_contains(lf, h[1]));
        ASSERT_TRUE(!live_files_contains(lf, h[2]));
        ASSERT_TRUE(live_files_contains(lf, h[3]));
        ASSERT_EQ(live_files_retain(lf, NULL, 0), 2);
        ASSERT_EQ(live_files_n_files(lf), 0);
}

/* Hashes chosen to share their home slot (and to wrap around the table's end), so that
 * removals must shift the rest of each probe chain back, and equal low halves do not make
 * two files one. */
TEST(probe_collisions_survive_removals) {
        _cleanup_(live_files_freep) LiveFiles *lf = NULL;
        LiveFileHash h[40];
        char name[16];

        ASSERT_OK(live_files_new(key, 1u << 20, NULL, &lf));
        for (unsigned i = 0; i < 40; i++) {
                /* 64 slots at first: homes 62 and 63, then 0 (wrapping), by the low bits. */
                h[i] = (LiveFileHash){ .lo = (uint64_t)(i < 20   ? 62
                                                        : i < 30 ? 63
                                                                 : 0) |
                                             ((uint64_t)i << 32),
                                       .hi = i % 3 };
                (void)snprintf(name, sizeof(name), "m%u", i);
                ASSERT_OK(live_files_add_manifest(lf, name, &h[i], 1));
        }
        /* Same low half, other high half: another file. */
        ASSERT_TRUE(!live_files_contains(lf, (LiveFileHash){ .lo = h[5].lo, .hi = 7 }));
        ASSERT_EQ(live_files_n_files(lf), 40);
        for (unsigned i = 0; i < 40; i += 2) {
                (void)snprintf(name, sizeof(name), "m%u", i);
                ASSERT_TRUE(live_files_remove_manifest(lf, name));
        }
        for (unsigned i = 0; i < 40; i++)
                ASSERT_EQ(live_files_contains(lf, h[i]), i % 2 == 1);
        ASSERT_EQ(live_files_n_files(lf), 20);
}

TEST(many_files_grow_the_set) {
        _cleanup_(live_files_freep) LiveFiles *lf = NULL;
        LiveFileHash h[3000];
        char path[64];

        ASSERT_OK(live_files_new(key, 1u << 20, NULL, &lf));
        for (unsigned i = 0; i < 3000; i++) {
                (void)snprintf(path, sizeof(path), "/wh/t/data/%u.parquet", i);
                h[i] = hash_of(lf, path);
        }
        ASSERT_OK(live_files_add_manifest(lf, "big", h, 2000));
        ASSERT_OK(live_files_add_manifest(lf, "more", h + 2000, 1000));
        ASSERT_EQ(live_files_n_files(lf), 3000);
        for (unsigned i = 0; i < 3000; i++)
                ASSERT_TRUE(live_files_contains(lf, h[i]));
        /* About 60 bytes a file, never more than 80 (operations.md says so). */
        ASSERT_TRUE(live_files_bytes(lf) < 3000u * 80u);
        ASSERT_TRUE(live_files_remove_manifest(lf, "big"));
        ASSERT_TRUE(!live_files_contains(lf, h[0]));
        ASSERT_TRUE(live_files_contains(lf, h[2999]));
}

TEST(bounds_refuse_growth_and_change_nothing) {
        _cleanup_(live_files_freep) LiveFiles *small = NULL, *one = NULL, *two = NULL;
        Budget budget = { .max_bytes = 12000 };
        LiveFileHash h[200];
        uint64_t before;
        char path[64];

        /* Its own bound. */
        ASSERT_OK(live_files_new(key, 4096, NULL, &small));
        for (unsigned i = 0; i < 200; i++) {
                (void)snprintf(path, sizeof(path), "/wh/t/data/%u.parquet", i);
                h[i] = hash_of(small, path);
        }
        ASSERT_OK(live_files_add_manifest(small, "m1", h, 10));
        before = live_files_bytes(small);
        ASSERT_EQ(live_files_add_manifest(small, "m2", h + 10, 190), -E2BIG);
        ASSERT_EQ(live_files_bytes(small), before);
        ASSERT_TRUE(!live_files_has_manifest(small, "m2"));
        ASSERT_TRUE(!live_files_contains(small, h[10]));
        ASSERT_TRUE(live_files_contains(small, h[9]));

        /* The shared budget: what one index holds, another cannot take; freeing gives it back. */
        ASSERT_OK(live_files_new(key, 1u << 20, &budget, &one));
        ASSERT_OK(live_files_new(key, 1u << 20, &budget, &two));
        ASSERT_OK(live_files_add_manifest(one, "m1", h, 150));
        ASSERT_EQ(live_files_add_manifest(two, "m1", h + 150, 50), -E2BIG);
        ASSERT_EQ(budget_used(&budget), live_files_bytes(one) + live_files_bytes(two));
        one = live_files_free(one);
        ASSERT_OK(live_files_add_manifest(two, "m1", h + 150, 50));
        two = live_files_free(two);
        ASSERT_EQ(budget_used(&budget), 0);
}

TEST(other_keys_hash_otherwise) {
        _cleanup_(live_files_freep) LiveFiles *a = NULL, *b = NULL;
        uint8_t other[SIPHASH_KEY_BYTES] = { 1 };
        LiveFileHash x, y;

        ASSERT_OK(live_files_new(key, 4096, NULL, &a));
        ASSERT_OK(live_files_new(other, 4096, NULL, &b));
        x = hash_of(a, "/wh/t/data/a.parquet");
        y = hash_of(b, "/wh/t/data/a.parquet");
        ASSERT_TRUE(x.lo != y.lo || x.hi != y.hi);
}
