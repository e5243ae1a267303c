/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/table.c and iceberg/snapshot.c: metadata reading, summary rules (Java SnapshotSummary)
 * and the CommitTableRequest shape (docs/design.md section 2.6). */
#include <errno.h>

#include "iceberg/snapshot.h"
#include "iceberg/table.h"
#include "test.h"

static const char *metadata_v3 =
        "{\"metadata-location\": \"/wh/ns/t/metadata/00002.metadata.json\", \"metadata\": {"
        "\"format-version\": 3, \"table-uuid\": \"b07f-uuid\", \"location\": \"/wh/ns/t\","
        "\"last-sequence-number\": 7, \"next-row-id\": 1000, \"current-schema-id\": 0,"
        "\"properties\": {}, \"partition-specs\": [{\"spec-id\": 0, \"fields\": []}, {\"spec-id\": "
        "3, \"fields\": []}],"
        "\"refs\": {\"main\": {\"snapshot-id\": 42, \"type\": \"branch\", \"max-ref-age-ms\": "
        "86400000,"
        "  \"min-snapshots-to-keep\": 3}, \"v1\": {\"snapshot-id\": 42, \"type\": \"tag\"}},"
        "\"snapshots\": [{\"snapshot-id\": 42, \"sequence-number\": 7, \"manifest-list\": "
        "\"/wh/ns/t/metadata/snap-42.avro\","
        "  \"summary\": {\"operation\": \"append\", \"total-records\": \"100\", "
        "\"total-data-files\": \"4\","
        "  \"total-files-size\": \"4000\", \"total-delete-files\": \"0\", "
        "\"total-position-deletes\": \"0\","
        "  \"total-equality-deletes\": \"0\"}}]}}";

static json_t *load(const char *text) {
        json_t *j = json_loads(text, 0, NULL);

        ASSERT_TRUE(j);
        return j;
}

TEST(table_metadata_and_branches) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        json_t *j = load(metadata_v3);
        TableBranch main_branch, other;
        Error e;

        ASSERT_OK(table_metadata_parse(j, &t, &e));
        json_decref(j);
        ASSERT_EQ(t->format_version, 3);
        ASSERT_STREQ(t->uuid, "b07f-uuid");
        ASSERT_EQ(t->last_sequence_number, 7);
        ASSERT_EQ(t->next_row_id, 1000);
        ASSERT_STREQ(t->metadata_dir, "/wh/ns/t/metadata");
        ASSERT_OK(table_branch(t, "main", &main_branch, &e));
        ASSERT_TRUE(main_branch.exists && main_branch.snapshot_id == 42 && main_branch.snapshot);
        ASSERT_OK(table_branch(t, "dev", &other, &e));
        ASSERT_TRUE(!other.exists);
        ASSERT_EQ(table_branch(t, "v1", &other, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "is a tag");
        ASSERT_TRUE(table_has_partition_spec(t, 3));
        ASSERT_TRUE(!table_has_partition_spec(t, 1));
}

TEST(table_metadata_refuses_what_it_cannot_commit_to) {
        TableMetadata *t = NULL;
        json_t *j;
        Error e;

        j = load("{\"format-version\": 3, \"table-uuid\": \"u\", \"location\": \"/x\"}");
        ASSERT_EQ(table_metadata_parse(j, &t, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "next-row-id");
        json_decref(j);
        j = load("{\"format-version\": 9, \"table-uuid\": \"u\", \"location\": \"/x\"}");
        ASSERT_EQ(table_metadata_parse(j, &t, &e), -EINVAL);
        json_decref(j);
        j = load("{\"format-version\": 2, \"location\": \"/x\"}");
        ASSERT_EQ(table_metadata_parse(j, &t, &e), -EINVAL);
        json_decref(j);
}

TEST(summary_follows_java_rules) {
        json_t *parent = load("{\"operation\": \"append\", \"total-records\": \"100\", "
                              "\"total-files-size\": \"4000\","
                              " \"total-data-files\": \"4\", \"total-delete-files\": \"1\"}");
        json_t *props = load("{\"job\": \"42\"}");
        SnapshotAdded added = { .data_files = 2,
                                .records = 20,
                                .files_size = 900,
                                .manifests_created = 1,
                                .manifests_kept = 3 };
        json_t *s = NULL;
        Error e;

        SnapshotRecord record = {
                .keys = "k1,k2", .manifest_counts = "2,1", .branch = "audit", .attempt = 3
        };

        ASSERT_OK(snapshot_summary_build(parent, &added, props, &record, &s, &e));
        ASSERT_STREQ(json_string_value(json_object_get(s, "operation")), "append");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-data-files")), "2");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-records")), "20");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-files-size")), "900");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-records")), "120");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-files-size")), "4900");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-data-files")), "6");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-delete-files")), "1");
        /* Left out when the parent summary lacks the total. */
        ASSERT_TRUE(!json_object_get(s, "total-position-deletes"));
        ASSERT_STREQ(json_string_value(json_object_get(s, "manifests-created")), "1");
        ASSERT_STREQ(json_string_value(json_object_get(s, "manifests-kept")), "3");
        ASSERT_STREQ(json_string_value(json_object_get(s, "manifests-replaced")), "0");
        ASSERT_STREQ(json_string_value(json_object_get(s, "job")), "42");
        ASSERT_STREQ(json_string_value(json_object_get(s, SNAPSHOT_SUMMARY_KEYS)), "k1,k2");
        ASSERT_STREQ(json_string_value(json_object_get(s, SNAPSHOT_SUMMARY_MANIFESTS)), "2,1");
        ASSERT_STREQ(json_string_value(json_object_get(s, SNAPSHOT_SUMMARY_BRANCH)), "audit");
        ASSERT_STREQ(json_string_value(json_object_get(s, SNAPSHOT_SUMMARY_ATTEMPT)), "3");
        /* Every value is a string (numbers fail SnapshotParser with a 400). */
        {
                const char *key;
                json_t *v;

                json_object_foreach (s, key, v)
                        ASSERT_TRUE(json_is_string(v));
        }
        json_decref(s);
        json_decref(parent);
        json_decref(props);
}

/* Equality delete files as Java's SnapshotSummary counts them (UpdateMetrics.addedFile: size
 * into added-files-size, the file into added-delete-files and added-equality-delete-files, its
 * rows into added-equality-deletes; none into added-records), operation as BaseRowDelta's. */
TEST(summary_counts_equality_deletes) {
        json_t *parent =
                load("{\"operation\": \"append\", \"total-records\": \"100\", "
                     "\"total-files-size\": \"4000\","
                     " \"total-data-files\": \"4\", \"total-delete-files\": \"1\","
                     " \"total-equality-deletes\": \"7\", \"total-position-deletes\": \"0\"}");
        json_t *props = json_object(), *s = NULL;
        SnapshotAdded added = { .files_size = 300,
                                .equality_delete_files = 2,
                                .equality_deletes = 5,
                                .manifests_created = 1,
                                .manifests_kept = 1 };

        ASSERT_OK(snapshot_summary_build(parent, &added, props, NULL, &s, NULL));
        ASSERT_STREQ(json_string_value(json_object_get(s, "operation")), "delete");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-delete-files")), "2");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-equality-delete-files")), "2");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-equality-deletes")), "5");
        ASSERT_STREQ(json_string_value(json_object_get(s, "added-files-size")), "300");
        ASSERT_TRUE(!json_object_get(s, "added-records") &&
                    !json_object_get(s, "added-data-files"));
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-delete-files")), "3");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-equality-deletes")), "12");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-position-deletes")), "0");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-records")), "100");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-data-files")), "4");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-files-size")), "4300");
        json_decref(s);

        added.data_files = 1;
        added.records = 10;
        ASSERT_OK(snapshot_summary_build(parent, &added, props, NULL, &s, NULL));
        ASSERT_STREQ(json_string_value(json_object_get(s, "operation")), "overwrite");
        json_decref(s);
        ASSERT_TRUE(snapshot_summary_key_is_reserved("added-equality-deletes"));
        json_decref(parent);
        json_decref(props);
}

TEST(summary_without_parent_starts_totals_at_zero_and_omits_zero_counters) {
        SnapshotAdded added = { .manifests_created = 1 };
        json_t *props = json_object(), *s = NULL;

        ASSERT_OK(snapshot_summary_build(NULL, &added, props, NULL, &s, NULL));
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-records")), "0");
        ASSERT_STREQ(json_string_value(json_object_get(s, "total-equality-deletes")), "0");
        ASSERT_TRUE(!json_object_get(s, "added-records"));
        ASSERT_TRUE(!json_object_get(s, SNAPSHOT_SUMMARY_KEYS));
        json_decref(s);
        json_decref(props);
}

/* A snapshot's record places each key's manifests in its list; anything that does not add up
 * is -ENODATA (the receipt then lists no manifests), a key it lacks -ENOENT. */
TEST(record_places_each_key_in_the_list) {
        json_t *s = load("{\"snapshot-id\": 9, \"sequence-number\": 4, \"first-row-id\": 100, "
                         "\"manifest-list\": \"/t/metadata/snap-9.avro\", \"summary\": {"
                         "\"icecommit.idempotency-keys\": \"p/a,p/b,p/c\", "
                         "\"icecommit.manifest-counts\": \"2,1,3\", "
                         "\"icecommit.branch\": \"main\", \"icecommit.attempt\": \"2\"}}");
        static const struct {
                const char *counts, *attempt;
                int expect;
        } broken[] = {
                { "2,1", "2", -ENODATA },     { "2,1,3,4", "2", -ENODATA },
                { "2,,3", "2", -ENODATA },    { "2,x,3", "2", -ENODATA },
                { "2,-1,3", "2", -ENODATA },  { "2,1,3", "0", -ENODATA },
                { "2,1,3", "two", -ENODATA }, { "2,99999999999,3", "2", -ENODATA },
        };
        json_t *summary = json_object_get(s, "summary");
        SnapshotRecordEntry e;

        ASSERT_OK(snapshot_record_find(s, "p/b", &e));
        ASSERT_EQ(e.n_requests, 3);
        ASSERT_EQ(e.list_offset, 2);
        ASSERT_EQ(e.n_manifests, 1);
        ASSERT_EQ(e.attempt, 2);
        ASSERT_STREQ(e.branch, "main");
        ASSERT_STREQ(e.manifest_list, "/t/metadata/snap-9.avro");
        ASSERT_EQ(e.snapshot_id, 9);
        ASSERT_EQ(e.sequence_number, 4);
        ASSERT_TRUE(e.has_first_row_id && e.first_row_id == 100);
        ASSERT_OK(snapshot_record_find(s, "p/c", &e));
        ASSERT_EQ(e.list_offset, 3);
        ASSERT_EQ(e.n_manifests, 3);
        ASSERT_OK(snapshot_record_find(s, "p/a", &e));
        ASSERT_EQ(e.list_offset, 0);
        ASSERT_EQ(e.n_manifests, 2);
        ASSERT_EQ(snapshot_record_find(s, "p/", &e), -ENOENT);
        ASSERT_EQ(snapshot_record_find(s, "a", &e), -ENOENT);
        for (size_t i = 0; i < sizeof(broken) / sizeof(broken[0]); i++) {
                json_object_set_new(summary, SNAPSHOT_SUMMARY_MANIFESTS,
                                    json_string(broken[i].counts));
                json_object_set_new(summary, SNAPSHOT_SUMMARY_ATTEMPT,
                                    json_string(broken[i].attempt));
                ASSERT_EQ(snapshot_record_find(s, "p/b", &e), broken[i].expect);
                ASSERT_EQ(e.n_requests, 3);
                ASSERT_EQ(e.snapshot_id, 9);
        }
        /* Recorded by an icecommitd before receipts could be rebuilt: keys only. */
        json_object_del(summary, SNAPSHOT_SUMMARY_MANIFESTS);
        ASSERT_EQ(snapshot_record_find(s, "p/b", &e), -ENODATA);
        json_decref(s);
}

TEST(writer_properties_cannot_override_computed_keys) {
        json_t *props = load("{\"total-records\": \"1\"}"), *s = NULL;
        SnapshotAdded added = { 0 };
        Error e;

        ASSERT_EQ(snapshot_summary_build(NULL, &added, props, NULL, &s, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "'total-records' is computed");
        ASSERT_TRUE(snapshot_summary_key_is_reserved("icecommit.anything"));
        ASSERT_TRUE(!snapshot_summary_key_is_reserved("spark.app.id"));
        json_decref(props);
}

TEST(commit_request_has_requirements_updates_and_keeps_retention) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        json_t *j = load(metadata_v3), *summary = load("{\"operation\": \"append\"}"), *req = NULL;
        json_t *reqs, *updates, *snap, *ref;
        TableBranch head;
        SnapshotSpec spec;

        ASSERT_OK(table_metadata_parse(j, &t, NULL));
        json_decref(j);
        ASSERT_OK(table_branch(t, "main", &head, NULL));
        spec = (SnapshotSpec){ .snapshot_id = 77,
                               .has_parent = true,
                               .parent_snapshot_id = 42,
                               .sequence_number = 8,
                               .timestamp_ms = 1700000000000,
                               .has_schema_id = true,
                               .manifest_list = "/wh/ns/t/metadata/snap-77-1-u.avro",
                               .has_first_row_id = true,
                               .first_row_id = 1000,
                               .added_rows = 375,
                               .summary = summary };
        ASSERT_OK(snapshot_commit_request_build(t, "main", &head, &spec, &req));

        reqs = json_object_get(req, "requirements");
        ASSERT_EQ(json_array_size(reqs), 3);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(reqs, 0), "type")),
                     "assert-table-uuid");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(reqs, 0), "uuid")),
                     "b07f-uuid");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(reqs, 1), "type")),
                     "assert-ref-snapshot-id");
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(reqs, 1), "snapshot-id")), 42);
        /* The schema the requests were checked against is still the table's. */
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(reqs, 2), "type")),
                     "assert-current-schema-id");
        ASSERT_EQ(json_integer_value(json_object_get(json_array_get(reqs, 2), "current-schema-id")),
                  t->current_schema_id);

        updates = json_object_get(req, "updates");
        snap = json_object_get(json_array_get(updates, 0), "snapshot");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(updates, 0), "action")),
                     "add-snapshot");
        ASSERT_EQ(json_integer_value(json_object_get(snap, "first-row-id")), 1000);
        ASSERT_EQ(json_integer_value(json_object_get(snap, "added-rows")), 375);
        ASSERT_EQ(json_integer_value(json_object_get(snap, "sequence-number")), 8);
        ASSERT_EQ(json_integer_value(json_object_get(snap, "parent-snapshot-id")), 42);
        ASSERT_EQ(json_integer_value(json_object_get(snap, "schema-id")), 0);
        ref = json_array_get(updates, 1);
        ASSERT_STREQ(json_string_value(json_object_get(ref, "action")), "set-snapshot-ref");
        ASSERT_STREQ(json_string_value(json_object_get(ref, "type")), "branch");
        ASSERT_EQ(json_integer_value(json_object_get(ref, "snapshot-id")), 77);
        ASSERT_EQ(json_integer_value(json_object_get(ref, "max-ref-age-ms")), 86400000);
        ASSERT_EQ(json_integer_value(json_object_get(ref, "min-snapshots-to-keep")), 3);
        ASSERT_TRUE(!json_object_get(ref, "max-snapshot-age-ms"));
        json_decref(req);
        json_decref(summary);
}

TEST(new_branch_asserts_null_and_omits_parent) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        json_t *j = load(metadata_v3), *summary = json_object(), *req = NULL, *snap;
        TableBranch head;
        SnapshotSpec spec = {
                .snapshot_id = 5, .sequence_number = 8, .manifest_list = "x", .summary = summary
        };

        ASSERT_OK(table_metadata_parse(j, &t, NULL));
        json_decref(j);
        ASSERT_OK(table_branch(t, "dev", &head, NULL));
        ASSERT_OK(snapshot_commit_request_build(t, "dev", &head, &spec, &req));
        ASSERT_TRUE(json_is_null(
                json_object_get(json_array_get(json_object_get(req, "requirements"), 1),
                                "snapshot-id")));
        snap = json_object_get(json_array_get(json_object_get(req, "updates"), 0), "snapshot");
        ASSERT_TRUE(!json_object_get(snap, "parent-snapshot-id"));
        ASSERT_TRUE(!json_object_get(snap, "first-row-id"));
        json_decref(req);
        json_decref(summary);
}

TEST(snapshot_ids_are_positive_and_distinct) {
        int64_t a = snapshot_id_generate(), b = snapshot_id_generate();

        ASSERT_TRUE(a > 0 && b > 0 && a != b);
}
