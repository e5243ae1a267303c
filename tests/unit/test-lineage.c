/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/lineage.c with the exact numbers of the spec and of Java's tests
 * (docs/design.md sections 4.2, 4.3). */
#include <errno.h>

#include "iceberg/lineage.h"
#include "test.h"

static ManifestFile data_manifest(const char *path, int64_t added, int64_t existing) {
        return (ManifestFile){ .path = (char *)path,
                               .content = MANIFEST_CONTENT_DATA,
                               .has_counts = true,
                               .added_rows_count = added,
                               .existing_rows_count = existing };
}

/* spec.md "Row Lineage" worked example: next-row-id 1000, an existing manifest at 925,
 * added1 (100 added, 25 existing), added2 (0, 100), added3 (125, 25) -> 1000, 1125, 1225;
 * next-row-id 1375 and added-rows 375 (not the stale "100 (50 + 50)" text). */
TEST(spec_worked_example) {
        ManifestFile files[4] = {
                data_manifest("added1", 100, 25),
                data_manifest("added2", 0, 100),
                data_manifest("added3", 125, 25),
                data_manifest("existing", 75, 0),
        };
        int64_t next = -1;
        Error e;

        files[3].has_first_row_id = true;
        files[3].first_row_id = 925;
        ASSERT_OK(lineage_assign(files, 4, 1000, &next, &e));
        ASSERT_EQ(files[0].first_row_id, 1000);
        ASSERT_EQ(files[1].first_row_id, 1125);
        ASSERT_EQ(files[2].first_row_id, 1225);
        ASSERT_EQ(files[3].first_row_id, 925);
        ASSERT_EQ(next, 1375);
        ASSERT_EQ(next - 1000, 375);
}

/* TestManifestListVersions.testV3WriteMixedRowIdAssignment: [null, 100, null] at 130. */
TEST(java_mixed_assignment) {
        ManifestFile files[3] = {
                data_manifest("a", 5292, 857273),
                data_manifest("b", 5292, 857273),
                data_manifest("c", 5292, 857273),
        };
        int64_t next;

        files[1].has_first_row_id = true;
        files[1].first_row_id = 100;
        ASSERT_OK(lineage_assign(files, 3, 130, &next, NULL));
        ASSERT_EQ(files[0].first_row_id, 130);
        ASSERT_EQ(files[1].first_row_id, 100);
        ASSERT_EQ(files[2].first_row_id, 862695);
        ASSERT_EQ(next, 1725260);
}

TEST(delete_manifests_get_null_and_consume_nothing) {
        ManifestFile files[3] = {
                data_manifest("d1", 10, 0),
                { .path = "deletes",
                  .content = MANIFEST_CONTENT_DELETES,
                  .has_counts = true,
                  .added_rows_count = 50,
                  .has_first_row_id = true,
                  .first_row_id = 7 },
                data_manifest("d2", 5, 0),
        };
        int64_t next;

        ASSERT_OK(lineage_assign(files, 3, 0, &next, NULL));
        ASSERT_EQ(files[0].first_row_id, 0);
        ASSERT_TRUE(!files[1].has_first_row_id);
        ASSERT_EQ(files[2].first_row_id, 10);
        ASSERT_EQ(next, 15);
}

/* DELETED entries are counted in deleted_rows_count only: they never move the cursor
 * (Java ManifestReader skips them; iceberg-go #1295). T15: a manifest holding only a deleted
 * file takes 0 rows, so the next manifest starts at the same id. */
TEST(deleted_entries_consume_no_ids) {
        ManifestFile files[2] = {
                data_manifest("only-deleted", 0, 0),
                data_manifest("a", 0, 125),
        };
        int64_t next;

        files[0].deleted_rows_count = 90;
        ASSERT_OK(lineage_assign(files, 2, 0, &next, NULL));
        ASSERT_EQ(files[0].first_row_id, 0);
        ASSERT_EQ(files[1].first_row_id, 0);
        ASSERT_EQ(next, 125);
}

TEST(empty_list_and_no_assignment_keep_next_row_id) {
        ManifestFile kept = data_manifest("k", 10, 0);
        int64_t next;

        ASSERT_OK(lineage_assign(NULL, 0, 42, &next, NULL));
        ASSERT_EQ(next, 42);
        kept.has_first_row_id = true;
        kept.first_row_id = 3;
        ASSERT_OK(lineage_assign(&kept, 1, 42, &next, NULL));
        ASSERT_EQ(next, 42);
        ASSERT_EQ(kept.first_row_id, 3);
}

TEST(overflow_is_rejected_and_nothing_changes) {
        ManifestFile files[2] = {
                data_manifest("a", 10, 0),
                data_manifest("b", INT64_MAX - 5, 0),
        };
        int64_t next = 77;
        Error e;

        ASSERT_EQ(lineage_assign(files, 2, 0, &next, &e), -EOVERFLOW);
        ASSERT_CONTAINS(e.message, "'b'");
        ASSERT_TRUE(!files[0].has_first_row_id);
        ASSERT_EQ(next, 77);
}

TEST(unknown_counts_are_never_zero) {
        ManifestFile files[1] = { data_manifest("v1-era", 0, 0) };
        int64_t next;
        Error e;

        files[0].has_counts = false;
        ASSERT_EQ(lineage_assign(files, 1, 0, &next, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "unknown row counts");
        ASSERT_TRUE(!files[0].has_first_row_id);
}
