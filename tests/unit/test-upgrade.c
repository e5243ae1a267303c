/* SPDX-License-Identifier: Apache-2.0 */
/* tables/preflight.c: the upgrade request body and the pre-flight report (writers of the newest
 * snapshots, branches with their manifests, equality deletes, unknown row counts). */
#include <errno.h>
#include <string.h>

#include "iceberg/manifest_list.h"
#include "tables/preflight.h"
#include "test.h"

static Slice text(const char *s) {
        return (Slice){ .ptr = (const uint8_t *)s, .len = strlen(s) };
}

TEST(upgrade_request_parse_requires_both_fields) {
        static const struct {
                const char *body, *message;
        } bad[] = {
                { "{\"format-version\": 3}", "\"dry-run\" is required (true: report only)" },
                { "{\"dry-run\": false}", "\"format-version\" is required" },
                { "{\"format-version\": 4, \"dry-run\": true}",
                  "\"format-version\" must be 3 (an integer)" },
                { "{\"format-version\": \"3\", \"dry-run\": true}",
                  "\"format-version\" must be 3 (an integer)" },
                { "{\"format-version\": 3, \"dry-run\": 1}", "\"dry-run\" must be true or false" },
                { "{\"format-version\": 3, \"dry-run\": true, \"x\": 1}", "unknown field \"x\"" },
                { "[]", "body must be a JSON object" },
        };
        UpgradeRequest req;
        Error e = { 0 };

        ASSERT_OK(preflight_request_parse(text("{\"format-version\": 3, \"dry-run\": false}"), &req,
                                          &e));
        ASSERT_EQ(req.format_version, 3);
        ASSERT_TRUE(!req.dry_run);
        ASSERT_OK(preflight_request_parse(text("{\"dry-run\": true, \"format-version\": 2}"), &req,
                                          &e));
        ASSERT_EQ(req.format_version, 2);
        ASSERT_TRUE(req.dry_run);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ASSERT_EQ(preflight_request_parse(text(bad[i].body), &req, &e), -EINVAL);
                ASSERT_STREQ(e.message, bad[i].message);
        }
        ASSERT_EQ(preflight_request_parse(text("{"), &req, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "body is not JSON");
}

/* Four snapshots: Spark (two, one app), Java, icecommit; branches main (at 4), audit (at 2),
 * and a tag (left out). */
static const char *metadata_json =
        "{\"format-version\": 2, \"table-uuid\": \"u\", \"location\": \"/wh/t\", "
        "\"last-sequence-number\": 4,"
        " \"snapshots\": ["
        "  {\"snapshot-id\": 1, \"timestamp-ms\": 100, \"manifest-list\": "
        "\"/wh/t/metadata/l1.avro\","
        "   \"summary\": {\"operation\": \"append\", \"engine-name\": \"spark\", "
        "\"engine-version\": \"3.5.1\","
        "    \"iceberg-version\": \"Apache Iceberg 1.4.3\", \"spark.app.id\": \"app-1\"}},"
        "  {\"snapshot-id\": 2, \"timestamp-ms\": 200, \"manifest-list\": "
        "\"/wh/t/metadata/l2.avro\","
        "   \"summary\": {\"operation\": \"overwrite\", \"engine-name\": \"spark\", "
        "\"engine-version\": \"3.5.1\","
        "    \"iceberg-version\": \"Apache Iceberg 1.4.3\", \"spark.app.id\": \"app-1\","
        "    \"total-equality-deletes\": \"12\"}},"
        "  {\"snapshot-id\": 3, \"timestamp-ms\": 300, \"manifest-list\": "
        "\"/wh/t/metadata/l3.avro\","
        "   \"summary\": {\"operation\": \"append\", \"iceberg-version\": \"Apache Iceberg "
        "1.11.0\"}},"
        "  {\"snapshot-id\": 4, \"timestamp-ms\": 400, \"manifest-list\": "
        "\"/wh/t/metadata/l4.avro\","
        "   \"summary\": {\"operation\": \"append\", \"engine-name\": \"icecommit\", "
        "\"engine-version\": \"0.1\","
        "    \"total-equality-deletes\": \"0\"}}],"
        " \"refs\": {\"zz-tag\": {\"type\": \"tag\", \"snapshot-id\": 1},"
        "  \"audit\": {\"type\": \"branch\", \"snapshot-id\": 2},"
        "  \"main\": {\"type\": \"branch\", \"snapshot-id\": 4}}}";

TEST(upgrade_report_lists_writers_branches_deletes_and_unknown_counts) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL, *report = NULL, *want = NULL;
        UpgradeBranch *branches = NULL;
        size_t n = 0;
        Error e = { 0 };

        root = json_loads(metadata_json, 0, NULL);
        ASSERT_TRUE(root);
        ASSERT_OK(table_metadata_parse(root, &t, &e));
        ASSERT_OK(preflight_branches_collect(t, &branches, &n, &e));
        ASSERT_EQ(n, 2);
        ASSERT_STREQ(branches[0].name, "main");
        ASSERT_STREQ(branches[0].list_location, "/wh/t/metadata/l4.avro");
        ASSERT_STREQ(branches[1].name, "audit");
        ASSERT_EQ(branches[1].snapshot_id, 2);

        /* main: two data manifests (3 + 4 rows, 5 existing) and a delete manifest; audit: a data
         * manifest whose counts are unknown, and one with 2 rows. */
        branches[0].n_files = 3;
        branches[0].files = calloc(3, sizeof(ManifestFile));
        branches[0].files[0] =
                (ManifestFile){ .path = strdup("/m/a"), .has_counts = true, .added_rows_count = 3 };
        branches[0].files[1] = (ManifestFile){ .path = strdup("/m/b"),
                                               .has_counts = true,
                                               .added_rows_count = 4,
                                               .existing_rows_count = 5,
                                               .deleted_rows_count = 100 };
        branches[0].files[2] = (ManifestFile){
                .path = strdup("/m/d"), .has_counts = true, .content = 1, .added_rows_count = 9
        };
        branches[1].n_files = 2;
        branches[1].files = calloc(2, sizeof(ManifestFile));
        branches[1].files[0] = (ManifestFile){ .path = strdup("/m/old") };
        branches[1].files[1] =
                (ManifestFile){ .path = strdup("/m/c"), .has_counts = true, .added_rows_count = 2 };

        /* lookback 3: snapshots 4, 3, 2; snapshot 1 is not inspected. */
        report = preflight_report_build(t, branches, n, 3, 3);
        ASSERT_TRUE(report);
        want = json_loads(
                "{\"format-version\": 2, \"target-format-version\": 3, \"next-row-id\": 0,"
                " \"snapshots\": {\"total\": 4, \"inspected\": 3},"
                " \"writers\": ["
                "  {\"writer\": {\"engine-name\": \"icecommit\", \"engine-version\": \"0.1\"}, "
                "\"snapshots\": 1,"
                "   \"last-snapshot-id\": 4, \"last-timestamp-ms\": 400},"
                "  {\"writer\": {\"iceberg-version\": \"Apache Iceberg 1.11.0\"}, \"snapshots\": 1,"
                "   \"last-snapshot-id\": 3, \"last-timestamp-ms\": 300},"
                "  {\"writer\": {\"engine-name\": \"spark\", \"engine-version\": \"3.5.1\","
                "    \"iceberg-version\": \"Apache Iceberg 1.4.3\", \"spark.app.id\": \"app-1\"}, "
                "\"snapshots\": 1,"
                "   \"last-snapshot-id\": 2, \"last-timestamp-ms\": 200}],"
                " \"branches\": ["
                "  {\"name\": \"main\", \"snapshot-id\": 4, \"data-manifests\": 2, "
                "\"delete-manifests\": 1,"
                "   \"rows-to-assign\": 12, \"total-equality-deletes\": 0, \"unknown-row-counts\": "
                "[]},"
                "  {\"name\": \"audit\", \"snapshot-id\": 2, \"data-manifests\": 2, "
                "\"delete-manifests\": 0,"
                "   \"rows-to-assign\": null, \"total-equality-deletes\": 12, "
                "\"unknown-row-counts\": [\"/m/old\"]}],"
                " \"equality-deletes\": [{\"branch\": \"audit\", \"snapshot-id\": 2, "
                "\"total-equality-deletes\": 12}],"
                " \"unknown-row-counts\": [\"/m/old\"]}",
                0, NULL);
        ASSERT_TRUE(want);
        {
                json_t *warnings = json_object_get(report, "warnings");

                ASSERT_EQ(json_array_size(warnings), 4);
                ASSERT_STREQ(json_string_value(json_array_get(warnings, 0)),
                             "branch 'audit' holds 12 equality deletes: rows updated through "
                             "equality deletes "
                             "get new row ids, their lineage is not kept (spec: row lineage)");
                ASSERT_STREQ(json_string_value(json_array_get(warnings, 1)),
                             "writer {\"iceberg-version\":\"Apache Iceberg 1.11.0\"} committed 1 "
                             "of the 3 newest "
                             "snapshots: it must support format version 3 with row lineage, or "
                             "stop before the "
                             "upgrade");
                ASSERT_CONTAINS(json_string_value(json_array_get(warnings, 2)),
                                "\"spark.app.id\":\"app-1\"");
                ASSERT_STREQ(json_string_value(json_array_get(warnings, 3)),
                             "1 manifests have unknown (null) row counts: the first commit after "
                             "the upgrade "
                             "counts their rows from their entries");
                ASSERT_OK(json_object_del(report, "warnings"));
        }
        if (!json_equal(report, want)) {
                char *got = json_dumps(report, JSON_SORT_KEYS);

                TEST_FAIL("report differs: %s", got);
        }
        preflight_branches_free(branches, n);
}

TEST(upgrade_branches_collect_refuses_a_branch_without_its_snapshot) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL;
        UpgradeBranch *branches = NULL;
        size_t n = 0;
        Error e = { 0 };

        root = json_loads("{\"format-version\": 2, \"table-uuid\": \"u\", \"location\": \"/wh/t\","
                          " \"snapshots\": [], \"refs\": {\"main\": {\"type\": \"branch\", "
                          "\"snapshot-id\": 9}}}",
                          0, NULL);
        ASSERT_OK(table_metadata_parse(root, &t, &e));
        ASSERT_EQ(preflight_branches_collect(t, &branches, &n, &e), -EINVAL);
        ASSERT_STREQ(e.message, "branch 'main': snapshot 9 is missing or has no manifest-list");
}
