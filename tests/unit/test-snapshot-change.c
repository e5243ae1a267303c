/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/snapshot_change.c: snapshots described by hand (an append of two requests, a merge,
 * a removal) and what is derived from them: the list's entries and bytes, the row ids, the
 * summary keys and the history record. For an append, the list and the summary are the bytes
 * and keys the engine wrote before the change existed: the list by manifest_list_append() over
 * the parent, the summary by snapshot_summary_build() over the counts of the staged manifests. */
#include <errno.h>
#include <jansson.h>

#include "iceberg/manifest_list.h"
#include "iceberg/manifest_list_append.h"
#include "iceberg/snapshot.h"
#include "iceberg/snapshot_change.h"
#include "iceberg-fixture.h"
#include "test.h"

#define PARENT_ID 42
#define SNAPSHOT_ID 77
#define SEQUENCE 8

static const char *parent_summary_text =
        "{\"operation\": \"append\", \"total-records\": \"100\", \"total-data-files\": \"4\","
        " \"total-files-size\": \"4000\", \"total-delete-files\": \"0\","
        " \"total-position-deletes\": \"0\", \"total-equality-deletes\": \"0\"}";

/* n v3 data manifests of the parent, each with its row-id range and 10 rows. */
static ManifestFile *parent_files(size_t n) {
        IcebergFixtureManifest specs[8];
        char paths[8][64];

        ASSERT_TRUE(n <= 8);
        for (size_t i = 0; i < n; i++) {
                (void)snprintf(paths[i], sizeof(paths[i]), "/wh/t/metadata/parent-%zu.avro", i);
                specs[i] = (IcebergFixtureManifest){
                        .path = paths[i],
                        .length = 4000 + (int64_t)i,
                        .sequence_number = (int64_t)i + 1,
                        .min_sequence_number = (int64_t)i + 1,
                        .added_snapshot_id = 1000 + (int64_t)i,
                        .file_counts = { 1, 0, 0 },
                        .row_counts = { 10, 0, 0 },
                        .has_partitions = true,
                        .has_first_row_id = true,
                        .first_row_id = 10 * (int64_t)i,
                };
        }
        return iceberg_fixture_manifest_files_new(specs, n);
}

/* A manifest a request adds: its list entry as the engine makes it (sequence number and snapshot
 * id inherited, no first_row_id yet). */
static ManifestFile added_file(const char *path, int32_t content, int32_t files, int64_t rows) {
        IcebergFixtureManifest spec = {
                .path = path,
                .length = 900,
                .content = content,
                .sequence_number = SEQUENCE,
                .min_sequence_number = SEQUENCE,
                .added_snapshot_id = SNAPSHOT_ID,
                .file_counts = { files, 0, 0 },
                .row_counts = { rows, 0, 0 },
                .has_partitions = true,
        };
        ManifestFile *one = iceberg_fixture_manifest_files_new(&spec, 1);
        ManifestFile f = *one;

        free(one);
        return f;
}

static ManifestListHeader header_v3(void) {
        return (ManifestListHeader){
                .format_version = 3,
                .snapshot_id = SNAPSHOT_ID,
                .has_parent_snapshot_id = true,
                .parent_snapshot_id = PARENT_ID,
                .sequence_number = SEQUENCE,
                .has_first_row_id = true,
                .first_row_id = 500,
        };
}

/* The parent's list as on storage. */
static void write_parent(Buf *out, size_t n) {
        ManifestFile *files = parent_files(n);
        ManifestListHeader h = header_v3();
        Error e;

        h.snapshot_id = PARENT_ID;
        h.has_parent_snapshot_id = false;
        h.first_row_id = 0;
        buf_init(out, 64u << 20);
        ASSERT_OK(manifest_list_write(&h, files, n, out, &e));
        manifest_list_files_free(files, n);
}

/* Whether two Avro files are the same bytes but for their sync markers, which every writer
 * draws at random (the last 16 bytes of a file are its marker). */
static bool same_but_sync(const Buf *a, const Buf *b) {
        const size_t n = 16;

        if (a->len != b->len || a->len < n)
                return false;
        for (size_t i = 0; i < a->len;) {
                if (i + n <= a->len && memcmp(a->data + i, a->data + a->len - n, n) == 0 &&
                    memcmp(b->data + i, b->data + b->len - n, n) == 0) {
                        i += n;
                        continue;
                }
                if (a->data[i] != b->data[i])
                        return false;
                i++;
        }
        return true;
}

static const char *summary_get(const json_t *summary, const char *key) {
        return json_string_value(json_object_get(summary, key));
}

/* Request "a" adds one data manifest (2 files, 10 rows, 2000 bytes); request "b" a data manifest
 * (1 file, 5 rows, 500 bytes) and an equality-delete manifest (1 file, 3 deletes, 300 bytes). */
static StagedManifest staged[3] = {
        { .content = MANIFEST_CONTENT_DATA,
          .added_files_count = 2,
          .added_rows_count = 10,
          .added_files_size = 2000 },
        { .content = MANIFEST_CONTENT_DATA,
          .added_files_count = 1,
          .added_rows_count = 5,
          .added_files_size = 500 },
        { .content = MANIFEST_CONTENT_DELETES,
          .added_files_count = 1,
          .added_rows_count = 3,
          .added_files_size = 300,
          .n_equality_delete_files = 1 },
};

static void build_append(SnapshotChange *c, json_t *props_a, json_t *props_b, size_t n_parent) {
        /* Borrowed by the change: they outlive it. */
        static const StagedManifest *const of_a[] = { &staged[0] };
        static const StagedManifest *const of_b[] = { &staged[1], &staged[2] };
        ManifestFile *parent = parent_files(n_parent);
        ManifestFile f;

        ASSERT_OK(snapshot_change_reserve(c, 2, 3 + n_parent));
        snapshot_change_begin_part(c, "alice/a", props_a, of_a);
        f = added_file("/wh/t/metadata/copy-a.avro", MANIFEST_CONTENT_DATA, 2, 10);
        snapshot_change_add(c, &f);
        snapshot_change_begin_part(c, "bob/b", props_b, of_b);
        f = added_file("/wh/t/metadata/copy-b1.avro", MANIFEST_CONTENT_DATA, 1, 5);
        snapshot_change_add(c, &f);
        f = added_file("/wh/t/metadata/copy-b2.avro", MANIFEST_CONTENT_DELETES, 1, 3);
        snapshot_change_add(c, &f);
        snapshot_change_keep_parent(c, true, PARENT_ID, 3, parent, n_parent);
        free(parent);
}

TEST(an_append_yields_the_list_and_summary_the_engine_wrote_before) {
        _cleanup_(json_decrefp) json_t *props_a = json_pack("{s:s}", "app", "x");
        _cleanup_(json_decrefp) json_t *props_b = json_pack("{s:s}", "job", "y");
        _cleanup_(json_decrefp) json_t *parent_summary = json_loads(parent_summary_text, 0, NULL);
        _cleanup_(json_decrefp) json_t *summary = NULL, *expected = NULL, *both = json_object();
        _cleanup_(buf_deinitp) Buf parent = { 0 }, bytes = { 0 }, before = { 0 };
        ManifestListHeader h = header_v3();
        SnapshotChange c = { 0 };
        SnapshotAdded added = { 0 };
        SnapshotRecord record;
        bool incremental;
        int64_t next = 0;
        Error e;

        build_append(&c, props_a, props_b, 3);
        /* The list: each request's manifests in order, then the parent's, untouched. */
        ASSERT_EQ(c.n_list, 6);
        ASSERT_EQ(c.n_added, 3);
        ASSERT_EQ(c.n_parts, 2);
        ASSERT_EQ(c.parts[0].first, 0);
        ASSERT_EQ(c.parts[0].n, 1);
        ASSERT_EQ(c.parts[1].first, 1);
        ASSERT_EQ(c.parts[1].n, 2);
        ASSERT_STREQ(c.list[2].path, "/wh/t/metadata/copy-b2.avro");
        ASSERT_STREQ(c.list[3].path, "/wh/t/metadata/parent-0.avro");
        ASSERT_EQ(c.sources[2].origin, SNAPSHOT_CHANGE_ADDED);
        ASSERT_EQ(c.sources[2].part, 1);
        ASSERT_EQ(c.sources[5].origin, SNAPSHOT_CHANGE_KEPT);
        ASSERT_TRUE(c.is_parent_untouched && c.has_base && c.base_snapshot_id == PARENT_ID);

        /* Row ids: the added data manifests, in list order, from the table's next-row-id; the
         * delete manifest and the parent's (which have theirs) get none. */
        ASSERT_OK(snapshot_change_assign_row_ids(&c, 500, &next, &e));
        ASSERT_TRUE(c.list[0].has_first_row_id && c.list[0].first_row_id == 500);
        ASSERT_TRUE(c.list[1].has_first_row_id && c.list[1].first_row_id == 510);
        ASSERT_TRUE(!c.list[2].has_first_row_id);
        ASSERT_EQ(c.list[3].first_row_id, 0);
        ASSERT_EQ(next, 515);

        /* The bytes: the parent's blocks copied behind the new entries, as before. */
        write_parent(&parent, 3);
        buf_init(&bytes, 64u << 20);
        buf_init(&before, 64u << 20);
        ASSERT_OK(snapshot_change_write_list(&c, &h, buf_slice(&parent), &bytes, &incremental, &e));
        ASSERT_TRUE(incremental);
        ASSERT_OK(manifest_list_append(&h, c.list, 3, buf_slice(&parent), &before, &e));
        ASSERT_TRUE(same_but_sync(&bytes, &before));

        /* The summary: what snapshot_summary_build() made of the counts the engine added up. */
        ASSERT_OK(snapshot_change_summary(&c, parent_summary, "main", 2, &summary, &e));
        added = (SnapshotAdded){
                .data_files = 3,
                .records = 15,
                .files_size = 2800,
                .equality_delete_files = 1,
                .equality_deletes = 3,
                .manifests_created = 3,
                .manifests_kept = 3,
        };
        record = (SnapshotRecord){
                .keys = "alice/a,bob/b", .manifest_counts = "1,2", .branch = "main", .attempt = 2
        };
        ASSERT_OK(json_object_update(both, props_a));
        ASSERT_OK(json_object_update(both, props_b));
        ASSERT_OK(snapshot_summary_build(parent_summary, &added, both, &record, &expected, &e));
        ASSERT_TRUE(json_equal(summary, expected));
        ASSERT_STREQ(summary_get(summary, "operation"), "overwrite");
        ASSERT_STREQ(summary_get(summary, "added-data-files"), "3");
        ASSERT_STREQ(summary_get(summary, "added-records"), "15");
        ASSERT_STREQ(summary_get(summary, "total-records"), "115");
        ASSERT_STREQ(summary_get(summary, "manifests-created"), "3");
        ASSERT_STREQ(summary_get(summary, "manifests-kept"), "3");
        ASSERT_STREQ(summary_get(summary, "app"), "x");
        ASSERT_STREQ(summary_get(summary, SNAPSHOT_SUMMARY_KEYS), "alice/a,bob/b");
        ASSERT_STREQ(summary_get(summary, SNAPSHOT_SUMMARY_MANIFESTS), "1,2");
        ASSERT_TRUE(!json_object_get(summary, "deleted-data-files"));
        snapshot_change_deinit(&c);
}

TEST(a_merge_rewrites_the_change_and_its_counts) {
        _cleanup_(json_decrefp) json_t *props = json_object();
        _cleanup_(json_decrefp) json_t *parent_summary = json_loads(parent_summary_text, 0, NULL);
        _cleanup_(json_decrefp) json_t *summary = NULL;
        _cleanup_(buf_deinitp) Buf parent = { 0 }, bytes = { 0 };
        ManifestListHeader h = header_v3();
        /* Parent entries 0 and 2 merge into one manifest; 1 and 3 stay. */
        const size_t owner[] = { 1, 0, 1, 0 };
        SnapshotChangeSource merged_source = { .n_replaced = 2, .n_entries_read = 7 };
        ManifestFile merged = added_file("/wh/t/metadata/merged.avro", MANIFEST_CONTENT_DATA, 0, 0);
        size_t indices[] = { 1, 4, 6 };
        SnapshotChange c = { 0 };
        bool incremental;
        int64_t next;
        Error e;

        merged.existing_files_count = 2;
        merged.existing_rows_count = 20;
        build_append(&c, props, props, 4);
        ASSERT_OK(snapshot_change_replace(&c, owner, &merged, &merged_source, 1, indices, 3));
        ASSERT_TRUE(merged.path == NULL); /* taken */
        ASSERT_EQ(c.n_list, 6);
        ASSERT_STREQ(c.list[3].path, "/wh/t/metadata/merged.avro");
        ASSERT_EQ(c.sources[3].origin, SNAPSHOT_CHANGE_MERGED);
        ASSERT_STREQ(c.list[4].path, "/wh/t/metadata/parent-1.avro");
        ASSERT_STREQ(c.list[5].path, "/wh/t/metadata/parent-3.avro");
        ASSERT_EQ(c.sources[5].origin, SNAPSHOT_CHANGE_KEPT);
        /* Indices follow their entries: an added one stays, the parent's 1 and 3 moved. */
        ASSERT_EQ(indices[0], 1);
        ASSERT_EQ(indices[1], 4);
        ASSERT_EQ(indices[2], 5);
        ASSERT_TRUE(!c.is_parent_untouched);

        /* The merged manifest has no first_row_id: its existing rows get a new range after the
         * added ones (the rules' and Java's lineage for rewritten manifests). */
        ASSERT_OK(snapshot_change_assign_row_ids(&c, 500, &next, &e));
        ASSERT_EQ(c.list[3].first_row_id, 515);
        ASSERT_EQ(next, 535);

        write_parent(&parent, 4);
        buf_init(&bytes, 64u << 20);
        ASSERT_OK(snapshot_change_write_list(&c, &h, buf_slice(&parent), &bytes, &incremental, &e));
        ASSERT_TRUE(!incremental); /* the parent's blocks no longer hold the list */
        {
                ManifestFile *read = NULL;
                size_t n_read = 0;

                ASSERT_OK(manifest_list_read(buf_slice(&bytes), &read, &n_read, &e));
                ASSERT_EQ(n_read, 6);
                ASSERT_STREQ(read[3].path, "/wh/t/metadata/merged.avro");
                manifest_list_files_free(read, n_read);
        }

        ASSERT_OK(snapshot_change_summary(&c, parent_summary, "main", 1, &summary, &e));
        ASSERT_STREQ(summary_get(summary, "manifests-created"), "4"); /* merged ones count */
        ASSERT_STREQ(summary_get(summary, "manifests-kept"), "2");
        ASSERT_STREQ(summary_get(summary, "manifests-replaced"), "2");
        ASSERT_STREQ(summary_get(summary, "entries-processed"), "7");
        snapshot_change_deinit(&c);
}

TEST(a_removal_is_described_and_summarized_as_java_does) {
        _cleanup_(json_decrefp) json_t *parent_summary = json_loads(parent_summary_text, 0, NULL);
        _cleanup_(json_decrefp) json_t *summary = NULL, *overwrite = NULL, *replace = NULL;
        _cleanup_(json_decrefp) json_t *props = json_object();
        ManifestFile *parent = parent_files(2);
        SnapshotChange c = { 0 }, both = { 0 };
        Error e;

        /* Only a removal: a delete (BaseOverwriteFiles, StreamingDelete). */
        ASSERT_OK(snapshot_change_reserve(&c, 0, 2));
        snapshot_change_keep_parent(&c, true, PARENT_ID, 3, parent, 2);
        free(parent);
        ASSERT_OK(snapshot_change_remove(&c, "/wh/t/data/f-1.parquet",
                                         "/wh/t/metadata/parent-1.avro", MANIFEST_CONTENT_DATA, 7,
                                         700));
        {
                /* parent-1 holds it: written again with its entry DELETED (the filter step). */
                ManifestFile rewritten = added_file("/wh/t/metadata/parent-1-filtered.avro",
                                                    MANIFEST_CONTENT_DATA, 0, 0);

                rewritten.deleted_files_count = 1;
                rewritten.deleted_rows_count = 7;
                ASSERT_EQ(snapshot_change_rewrite(&c, 5, &rewritten), -EINVAL);
                ASSERT_OK(snapshot_change_rewrite(&c, 1, &rewritten));
                ASSERT_TRUE(rewritten.path == NULL);
                ASSERT_EQ(snapshot_change_rewrite(&c, 1, &rewritten), -EINVAL); /* not kept */
                ASSERT_EQ(c.sources[1].origin, SNAPSHOT_CHANGE_REWRITTEN);
                ASSERT_STREQ(c.list[1].path, "/wh/t/metadata/parent-1-filtered.avro");
                ASSERT_TRUE(!c.is_parent_untouched);
        }
        ASSERT_EQ(c.n_removed, 1);
        ASSERT_STREQ(c.removed[0].path, "/wh/t/data/f-1.parquet");
        ASSERT_STREQ(c.removed[0].manifest, "/wh/t/metadata/parent-1.avro");
        ASSERT_STREQ(snapshot_change_operation(&c), "delete");
        ASSERT_OK(snapshot_change_summary(&c, parent_summary, "main", 1, &summary, &e));
        ASSERT_STREQ(summary_get(summary, "operation"), "delete");
        ASSERT_STREQ(summary_get(summary, "deleted-data-files"), "1");
        ASSERT_STREQ(summary_get(summary, "deleted-records"), "7");
        ASSERT_STREQ(summary_get(summary, "removed-files-size"), "700");
        ASSERT_STREQ(summary_get(summary, "total-records"), "93");
        ASSERT_STREQ(summary_get(summary, "total-data-files"), "3");
        ASSERT_STREQ(summary_get(summary, "total-files-size"), "3300");
        ASSERT_STREQ(summary_get(summary, "manifests-created"), "1"); /* the rewritten one */
        ASSERT_STREQ(summary_get(summary, "manifests-kept"), "1");
        ASSERT_STREQ(summary_get(summary, "manifests-replaced"), "1");
        ASSERT_TRUE(!json_object_get(summary, "added-records"));
        ASSERT_STREQ(summary_get(summary, SNAPSHOT_SUMMARY_KEYS), "");
        snapshot_change_deinit(&c);

        /* Added and removed: an overwrite; said otherwise by the producer, as it says. */
        build_append(&both, props, props, 2);
        ASSERT_OK(snapshot_change_remove(&both, "/wh/t/data/f-0.parquet", NULL,
                                         MANIFEST_CONTENT_DATA, 10, 1000));
        ASSERT_TRUE(both.removed[0].manifest == NULL);
        ASSERT_OK(snapshot_change_summary(&both, parent_summary, "main", 1, &overwrite, &e));
        ASSERT_STREQ(summary_get(overwrite, "operation"), "overwrite");
        ASSERT_STREQ(summary_get(overwrite, "total-records"), "105"); /* 100 + 15 - 10 */
        both.operation = SNAPSHOT_OPERATION_REPLACE;
        ASSERT_OK(snapshot_change_summary(&both, parent_summary, "main", 1, &replace, &e));
        ASSERT_STREQ(summary_get(replace, "operation"), "replace");
        snapshot_change_deinit(&both);
}

TEST(a_first_snapshot_has_no_parent_list) {
        _cleanup_(json_decrefp) json_t *props = json_object();
        _cleanup_(json_decrefp) json_t *summary = NULL;
        static const StagedManifest *const of_one[] = { &staged[0] };
        SnapshotChange c = { 0 };
        ManifestFile f = added_file("/wh/t/metadata/copy-first.avro", MANIFEST_CONTENT_DATA, 2, 10);
        Error e;

        ASSERT_OK(snapshot_change_reserve(&c, 1, 1));
        snapshot_change_begin_part(&c, "k", props, of_one);
        snapshot_change_add(&c, &f);
        snapshot_change_keep_parent(&c, false, 0, 3, NULL, 0);
        ASSERT_TRUE(!c.has_base && !c.is_parent_untouched);
        ASSERT_EQ(c.n_list, 1);
        ASSERT_OK(snapshot_change_summary(&c, NULL, "main", 1, &summary, &e));
        ASSERT_STREQ(summary_get(summary, "total-records"), "10");
        ASSERT_STREQ(summary_get(summary, "manifests-kept"), "0");
        snapshot_change_deinit(&c);
}

TEST(a_parent_entry_without_counts_or_row_ids_is_not_copied) {
        _cleanup_(json_decrefp) json_t *props = json_object();
        SnapshotChange c = { 0 };
        ManifestFile *parent = parent_files(2);

        parent[1].has_first_row_id = false; /* written before the table was v3 */
        ASSERT_OK(snapshot_change_reserve(&c, 0, 2));
        snapshot_change_keep_parent(&c, true, PARENT_ID, 3, parent, 2);
        free(parent);
        ASSERT_TRUE(!c.is_parent_untouched);
        snapshot_change_deinit(&c);

        parent = parent_files(2);
        parent[0].has_counts = false; /* a v1 list's unknown counts */
        ASSERT_OK(snapshot_change_reserve(&c, 0, 2));
        snapshot_change_keep_parent(&c, true, PARENT_ID, 2, parent, 2);
        free(parent);
        ASSERT_TRUE(!c.is_parent_untouched);
        snapshot_change_deinit(&c);
        (void)props;
}
