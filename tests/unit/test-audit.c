/* SPDX-License-Identifier: Apache-2.0 */
/* audit/table.c, audit/table_report.c: the lineage checks, gap explanations and row-id lookup
 * steps with exact numbers, on tables built in memory (no files, no loop).
 * iceberg/manifest_entries.c's inheritance with the spec's worked example. */
#include <errno.h>
#include <string.h>

#include "audit/table.h"
#include "audit/table_report.h"
#include "test.h"

static const AuditLimits limits = { .max_snapshots = 100,
                                    .max_manifests = 1000,
                                    .max_findings = 100 };

/* A snapshot object: first_row_id < 0 leaves the v3 fields out; parent 0 means none. */
static json_t *snap(int64_t id, int64_t parent, int64_t seq, int64_t first_row_id,
                    int64_t added_rows) {
        json_t *s = json_pack("{s:I, s:I, s:I, s:s, s:{s:s}}", "snapshot-id", (json_int_t)id,
                              "sequence-number", (json_int_t)seq, "timestamp-ms",
                              (json_int_t)(1000 + seq), "manifest-list",
                              "file:/t/metadata/snap.avro", "summary", "operation", "append");

        if (parent)
                json_object_set_new(s, "parent-snapshot-id", json_integer(parent));
        if (first_row_id >= 0) {
                json_object_set_new(s, "first-row-id", json_integer(first_row_id));
                json_object_set_new(s, "added-rows", json_integer(added_rows));
        }
        return s;
}

/* A v3 table; `snapshots` is stolen; main points at `main_id`. */
static AuditTable *table_new(int64_t next_row_id, int64_t last_seq, json_t *snapshots,
                             int64_t main_id, const AuditLimits *l, int expect) {
        json_t *md =
                json_pack("{s:i, s:s, s:s, s:I, s:I, s:o, s:{s:{s:s, s:I}}}", "format-version", 3,
                          "table-uuid", "9c12d441-03fe-4693-9a96-a0705ddf69c1", "location",
                          "file:/t", "last-sequence-number", (json_int_t)last_seq, "next-row-id",
                          (json_int_t)next_row_id, "snapshots", snapshots, "refs", "main", "type",
                          "branch", "snapshot-id", (json_int_t)main_id);
        TableMetadata *tm = NULL;
        AuditTable *t = NULL;
        Error e;

        ASSERT_OK(table_metadata_parse(md, &tm, &e));
        json_decref(md);
        ASSERT_EQ(audit_table_new(tm, l ? l : &limits, &t, &e), expect);
        return t;
}

static ManifestFile data_manifest(const char *path, int64_t first_row_id, int64_t added,
                                  int64_t existing) {
        ManifestFile m = { .path = strdup(path),
                           .content = MANIFEST_CONTENT_DATA,
                           .has_counts = true,
                           .added_rows_count = added,
                           .existing_rows_count = existing,
                           .has_added_snapshot_id = true,
                           .added_snapshot_id = 1,
                           .sequence_number = 1 };

        if (first_row_id >= 0) {
                m.has_first_row_id = true;
                m.first_row_id = first_row_id;
        }
        return m;
}

/* Hands snapshot `id` a v3 list of these manifests. */
static void set_list(AuditTable *t, int64_t id, const ManifestFile *files, size_t n) {
        ManifestFile *copy = calloc(n ? n : 1, sizeof(*copy));
        ssize_t i = audit_table_find_snapshot(t, id);
        Error e;

        ASSERT_TRUE(copy && i >= 0);
        memcpy(copy, files, n * sizeof(*copy));
        for (size_t k = 0; k < n; k++)
                copy[k].path = strdup(files[k].path);
        ASSERT_OK(audit_snapshot_take_manifests(t, (size_t)i, 3, true, t->snapshots[i].first_row_id,
                                                copy, n, &e));
}

static void manifests_free(ManifestFile *m, size_t n) {
        for (size_t k = 0; k < n; k++)
                free(m[k].path);
}

static json_t *check(json_t *report, const char *name) {
        size_t i;
        json_t *c;

        json_array_foreach (json_object_get(report, "checks"), i, c)
                if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
                        return c;
        TEST_FAIL("no check %s", name);
        return NULL;
}

static int64_t n_findings(json_t *report, const char *name) {
        return json_integer_value(json_object_get(check(report, name), "n-findings"));
}

static int64_t geti(json_t *o, const char *key) {
        ASSERT_TRUE(json_is_integer(json_object_get(o, key)));
        return json_integer_value(json_object_get(o, key));
}

/* Three appends: [0,10), [10,30) (M2 with 15 added + 5 existing), an empty one at 30. */
TEST(healthy_table_all_checks_ok) {
        ManifestFile m1 = data_manifest("file:/t/m1.avro", 0, 10, 0);
        ManifestFile m2 = data_manifest("file:/t/m2.avro", 10, 15, 5);
        ManifestFile del = { .path = strdup("file:/t/d.avro"),
                             .content = MANIFEST_CONTENT_DELETES,
                             .has_counts = true,
                             .added_rows_count = 4 };
        AuditTable *t = table_new(30, 3,
                                  json_pack("[o, o, o]", snap(1, 0, 1, 0, 10),
                                            snap(2, 1, 2, 10, 20), snap(3, 2, 3, 30, 0)),
                                  3, NULL, 0);
        json_t *report, *s2, *assigned;

        set_list(t, 1, (ManifestFile[]){ m1 }, 1);
        set_list(t, 2, (ManifestFile[]){ m2, m1 }, 2);
        set_list(t, 3, (ManifestFile[]){ del, m2, m1 }, 3);
        report = audit_table_report(t);
        ASSERT_TRUE(report);
        ASSERT_TRUE(json_is_true(json_object_get(report, "ok")));
        ASSERT_EQ(json_array_size(json_object_get(report, "gaps")), 0);
        ASSERT_EQ(json_array_size(json_object_get(report, "checks")), 5);
        s2 = json_array_get(json_object_get(report, "snapshots"), 1);
        ASSERT_EQ(geti(s2, "first-row-id"), 10);
        ASSERT_EQ(geti(s2, "last-row-id"), 29);
        ASSERT_EQ(geti(s2, "reserved-unused-rows"), 0);
        ASSERT_STREQ(json_string_value(json_array_get(json_object_get(s2, "refs"), 0)), "main");
        assigned = json_object_get(s2, "manifests-assigned");
        ASSERT_EQ(json_array_size(assigned), 1);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(assigned, 0), "path")),
                     "file:/t/m2.avro");
        ASSERT_EQ(geti(json_array_get(assigned, 0), "last-row-id"), 29);
        ASSERT_TRUE(json_is_null(
                json_object_get(json_array_get(json_object_get(report, "snapshots"), 2),
                                "last-row-id")));
        json_decref(report);
        manifests_free((ManifestFile[]){ m1, m2, del }, 3);
        audit_table_free(t);
}

/* Snapshot 3 lists a new manifest claiming 0..2 (the overlap the integration test commits with
 * Iceberg Java): it overlaps m1, and lies outside snapshot 3's own range. */
TEST(overlapping_manifest_is_flagged_with_both_names) {
        ManifestFile m1 = data_manifest("file:/t/m1.avro", 0, 5, 0);
        ManifestFile m2 = data_manifest("file:/t/m2.avro", 5, 10, 0);
        ManifestFile bad = data_manifest("file:/t/bad.avro", 0, 3, 0);
        AuditTable *t = table_new(15, 3,
                                  json_pack("[o, o, o]", snap(1, 0, 1, 0, 5), snap(2, 1, 2, 5, 10),
                                            snap(3, 2, 3, 15, 0)),
                                  3, NULL, 0);
        json_t *report, *findings, *f, *names;

        set_list(t, 1, (ManifestFile[]){ m1 }, 1);
        set_list(t, 2, (ManifestFile[]){ m2, m1 }, 2);
        set_list(t, 3, (ManifestFile[]){ bad, m2, m1 }, 3);
        report = audit_table_report(t);
        ASSERT_TRUE(json_is_false(json_object_get(report, "ok")));
        ASSERT_EQ(n_findings(report, "no-overlapping-ranges"), 2);
        ASSERT_EQ(n_findings(report, "next-row-id-above-assigned"), 0);
        ASSERT_EQ(n_findings(report, "gaps-explained"), 0);
        findings = json_object_get(check(report, "no-overlapping-ranges"), "findings");
        f = json_array_get(findings, 0);
        names = json_object_get(f, "manifests");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(names, 0), "path")),
                     "file:/t/bad.avro");
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(names, 1), "path")),
                     "file:/t/m1.avro");
        ASSERT_EQ(geti(json_array_get(names, 0), "first-listed-by-snapshot-id"), 3);
        ASSERT_EQ(geti(json_array_get(names, 1), "first-listed-by-snapshot-id"), 1);
        ASSERT_EQ(geti(f, "first-row-id"), 0);
        ASSERT_EQ(geti(f, "last-row-id"), 2);
        f = json_array_get(findings, 1);
        ASSERT_EQ(geti(f, "snapshot-id"), 3);
        ASSERT_STREQ(json_string_value(json_object_get(f, "manifest")), "file:/t/bad.avro");
        ASSERT_CONTAINS(json_string_value(json_object_get(f, "message")),
                        "outside the snapshot's range 15..14");
        json_decref(report);
        manifests_free((ManifestFile[]){ m1, m2, bad }, 3);
        audit_table_free(t);
}

/* Two snapshots claiming 5..9 (first-row-id behind), and the same manifest listed with two
 * different first_row_ids; findings beyond max-findings are counted, not listed. */
TEST(snapshot_ranges_overlap_and_findings_truncate) {
        AuditLimits one = limits;
        ManifestFile a = data_manifest("file:/t/a.avro", 0, 10, 0);
        ManifestFile a2 = data_manifest("file:/t/a.avro", 100, 10, 0);
        AuditTable *t;
        json_t *report, *c, *f;

        one.max_findings = 1;
        t = table_new(25, 2, json_pack("[o, o]", snap(1, 0, 1, 0, 10), snap(2, 1, 2, 5, 20)), 2,
                      &one, 0);
        set_list(t, 1, (ManifestFile[]){ a }, 1);
        set_list(t, 2, (ManifestFile[]){ a2 }, 1);
        report = audit_table_report(t);
        c = check(report, "no-overlapping-ranges");
        f = json_array_get(json_object_get(c, "findings"), 0);
        /* First the same path listed twice differently (found while gathering), then ranges. */
        ASSERT_CONTAINS(
                json_string_value(json_object_get(f, "message")),
                "manifest 'file:/t/a.avro' has ids 0..9 in snapshot 1 but 100..109 in snapshot 2");
        ASSERT_EQ(json_array_size(json_object_get(c, "findings")), 1);
        ASSERT_TRUE(json_is_true(json_object_get(c, "findings-truncated")));
        /* a.avro of snapshot 2 at 100..109 also lies outside 5..24 and past next-row-id 25. */
        ASSERT_EQ(n_findings(report, "no-overlapping-ranges"), 3);
        ASSERT_EQ(n_findings(report, "next-row-id-above-assigned"), 1);
        json_decref(report);

        audit_table_free(t);
        t = table_new(25, 2, json_pack("[o, o]", snap(1, 0, 1, 0, 10), snap(2, 1, 2, 5, 20)), 2,
                      NULL, 0);
        report = audit_table_report(t);
        f = json_array_get(json_object_get(check(report, "no-overlapping-ranges"), "findings"), 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(f, "message")),
                        "snapshots 1 (sequence 1) and 2 (sequence 2) both hold row ids 5..9");
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(f, "snapshot-ids"), 0)), 1);
        ASSERT_EQ(json_integer_value(json_array_get(json_object_get(f, "snapshot-ids"), 1)), 2);
        ASSERT_EQ(geti(f, "first-row-id"), 5);
        ASSERT_EQ(geti(f, "last-row-id"), 9);
        /* Lists never set: reported as unread, not as readable-check failures. */
        ASSERT_EQ(n_findings(report, "manifest-lists-readable"), 0);
        json_decref(report);
        manifests_free((ManifestFile[]){ a, a2 }, 2);
        audit_table_free(t);
}

/* Upgraded to v3 with a branch forked before the upgrade (what Iceberg Java does too): M was
 * written in v2 and has no first_row_id; the first v3 snapshot of main gives it 5..14 and the
 * first v3 snapshot of the branch, also a child of the v2 snapshot, gives it 18..27 (rules 1.5,
 * 1.9). Two disjoint ranges for one path on two branches are valid: no finding. */
TEST(pre_upgrade_manifest_ranged_per_branch_is_valid) {
        ManifestFile m = data_manifest("file:/t/m.avro", -1, 10, 0);
        ManifestFile n = data_manifest("file:/t/n.avro", 0, 5, 0);
        ManifestFile m_main = data_manifest("file:/t/m.avro", 5, 10, 0);
        ManifestFile p = data_manifest("file:/t/p.avro", 15, 3, 0);
        ManifestFile m_branch = data_manifest("file:/t/m.avro", 18, 10, 0);
        ManifestFile m_main_again = data_manifest("file:/t/m.avro", 40, 10, 0);
        ManifestFile *v2 = calloc(1, sizeof(*v2));
        AuditTable *t = table_new(28, 3,
                                  json_pack("[o, o, o]", snap(1, 0, 1, -1, 0), snap(2, 1, 2, 0, 15),
                                            snap(3, 1, 3, 15, 13)),
                                  2, NULL, 0);
        json_t *report;
        Error e;

        ASSERT_TRUE(v2);
        *v2 = m;
        v2->path = strdup(m.path);
        ASSERT_OK(audit_snapshot_take_manifests(t, (size_t)audit_table_find_snapshot(t, 1), 2,
                                                false, 0, v2, 1, &e));
        set_list(t, 2, (ManifestFile[]){ n, m_main }, 2);
        set_list(t, 3, (ManifestFile[]){ p, m_branch }, 2);
        report = audit_table_report(t);
        ASSERT_EQ(n_findings(report, "no-overlapping-ranges"), 0);
        ASSERT_EQ(n_findings(report, "next-row-id-above-assigned"), 0);
        ASSERT_EQ(n_findings(report, "gaps-explained"), 0);
        ASSERT_TRUE(json_is_true(json_object_get(report, "ok")));
        json_decref(report);
        audit_table_free(t);

        /* Along main, though, M keeps 5..14: a child of snapshot 2 listing it at 40..49 gave
         * its rows new ids, and that snapshot 4 range 40..49 overlaps nothing else. */
        t = table_new(50, 4,
                      json_pack("[o, o, o, o]", snap(1, 0, 1, -1, 0), snap(2, 1, 2, 0, 15),
                                snap(3, 1, 3, 15, 13), snap(4, 2, 4, 40, 10)),
                      4, NULL, 0);
        v2 = calloc(1, sizeof(*v2));
        ASSERT_TRUE(v2);
        *v2 = m;
        v2->path = strdup(m.path);
        ASSERT_OK(audit_snapshot_take_manifests(t, (size_t)audit_table_find_snapshot(t, 1), 2,
                                                false, 0, v2, 1, &e));
        set_list(t, 2, (ManifestFile[]){ n, m_main }, 2);
        set_list(t, 3, (ManifestFile[]){ p, m_branch }, 2);
        set_list(t, 4, (ManifestFile[]){ n, m_main_again }, 2);
        report = audit_table_report(t);
        ASSERT_EQ(n_findings(report, "no-overlapping-ranges"), 1);
        ASSERT_CONTAINS(json_string_value(json_object_get(
                                json_array_get(json_object_get(check(report,
                                                                     "no-overlapping-ranges"),
                                                               "findings"),
                                               0),
                                "message")),
                        "has ids 5..14 in snapshot 2 but 40..49 in snapshot 4, its child");
        json_decref(report);
        audit_table_free(t);
        manifests_free((ManifestFile[]){ m, n, m_main, p, m_branch, m_main_again }, 6);
}

/* Sequence numbers 2, 3 and 5 are gone (expired): the gaps they leave are explained. With 5
 * not missing (last-sequence-number 4), the ids after sequence 4 are a finding. */
TEST(gaps_explained_by_missing_sequence_numbers) {
        AuditTable *t =
                table_new(40, 5, json_pack("[o, o]", snap(1, 0, 1, 0, 10), snap(4, 0, 4, 25, 5)), 4,
                          NULL, 0);
        AuditGap *gaps = NULL, gap;
        json_t *report;
        size_t n, idx = 99;

        ASSERT_OK(audit_table_gaps(t, &gaps, &n));
        ASSERT_EQ(n, 2);
        ASSERT_EQ(gaps[0].first, 10);
        ASSERT_EQ(gaps[0].end, 25);
        ASSERT_TRUE(gaps[0].is_explained);
        ASSERT_CONTAINS(gaps[0].explanation,
                        "assigned by 2 snapshot(s) with sequence numbers between 1 and 4");
        ASSERT_EQ(gaps[1].first, 30);
        ASSERT_EQ(gaps[1].end, 40);
        ASSERT_TRUE(gaps[1].is_explained);
        ASSERT_CONTAINS(gaps[1].explanation,
                        "assigned by 1 snapshot(s) with sequence numbers between 4 and 6");
        free(gaps);

        ASSERT_EQ(audit_table_locate_snapshot(t, 12, &idx, &gap), AUDIT_ROW_IN_GAP);
        ASSERT_EQ(gap.first, 10);
        ASSERT_EQ(audit_table_locate_snapshot(t, 27, &idx, &gap), AUDIT_ROW_IN_SNAPSHOT);
        ASSERT_EQ(t->snapshots[idx].snapshot_id, 4);
        ASSERT_EQ(audit_table_locate_snapshot(t, 40, &idx, &gap), AUDIT_ROW_AT_OR_ABOVE_NEXT);
        audit_table_free(t);

        t = table_new(40, 4, json_pack("[o, o]", snap(1, 0, 1, 0, 10), snap(4, 0, 4, 25, 5)), 4,
                      NULL, 0);
        report = audit_table_report(t);
        ASSERT_EQ(n_findings(report, "gaps-explained"), 1);
        ASSERT_CONTAINS(json_string_value(json_object_get(
                                json_array_get(json_object_get(check(report, "gaps-explained"),
                                                               "findings"),
                                               0),
                                "message")),
                        "ids 30..39: no snapshot is missing between sequence numbers 4 and 5: "
                        "next-row-id advanced by 10");
        ASSERT_EQ(json_array_size(json_object_get(report, "gaps")), 2);
        json_decref(report);
        audit_table_free(t);
}

/* A v2 snapshot before the upgrade assigns nothing and leaves no gap; after the upgrade a
 * snapshot without first-row-id, a data manifest without first_row_id and a v2 list are
 * findings; next-row-id below an assigned id is one too. */
TEST(upgrade_missing_first_row_ids_and_next_row_id) {
        ManifestFile old = data_manifest("file:/t/old.avro", -1, 7, 0);
        ManifestFile m = data_manifest("file:/t/m.avro", 0, 7, 0);
        AuditTable *t = table_new(6, 3,
                                  json_pack("[o, o, o]", snap(1, 0, 1, -1, 0), snap(2, 1, 2, 0, 7),
                                            snap(3, 2, 3, -1, 0)),
                                  3, NULL, 0);
        json_t *report;

        set_list(t, 2, (ManifestFile[]){ m, old }, 2);
        report = audit_table_report(t);
        ASSERT_EQ(n_findings(report, "data-manifests-have-first-row-id"), 2);
        ASSERT_EQ(n_findings(report, "next-row-id-above-assigned"), 2); /* snapshot 2 and m.avro */
        ASSERT_EQ(n_findings(report, "gaps-explained"), 0);
        ASSERT_EQ(n_findings(report, "no-overlapping-ranges"), 0);
        json_decref(report);
        manifests_free((ManifestFile[]){ old, m }, 2);
        audit_table_free(t);
}

TEST(limits) {
        AuditLimits l = limits;
        ManifestFile *two = calloc(2, sizeof(*two));
        AuditTable *t;
        Error e;

        l.max_snapshots = 1;
        ASSERT_TRUE(!table_new(10, 2, json_pack("[o, o]", snap(1, 0, 1, 0, 5), snap(2, 1, 2, 5, 5)),
                               2, &l, -E2BIG));
        l = limits;
        l.max_manifests = 1;
        t = table_new(10, 1, json_pack("[o]", snap(1, 0, 1, 0, 10)), 1, &l, 0);
        two[0] = data_manifest("file:/t/x.avro", 0, 5, 0);
        two[1] = data_manifest("file:/t/y.avro", 5, 5, 0);
        ASSERT_EQ(audit_snapshot_take_manifests(t, 0, 3, true, 0, two, 2, &e), -E2BIG);
        ASSERT_CONTAINS(e.message, "audit.max-manifests=1");
        audit_table_free(t);
}

/* Step 2 prefers the manifest assigned inside the snapshot's range. */
TEST(find_manifest) {
        ManifestFile files[] = { data_manifest("file:/t/old.avro", 0, 5, 0),
                                 data_manifest("file:/t/new.avro", 5, 10, 0),
                                 data_manifest("file:/t/late.avro", 2, 3, 0) };
        AuditSnapshot s = { .has_first_row_id = true,
                            .first_row_id = 5,
                            .added_rows = 10,
                            .manifests = files,
                            .n_manifests = 3 };

        ASSERT_EQ(audit_snapshot_find_manifest(&s, 7), 1);
        ASSERT_EQ(audit_snapshot_find_manifest(&s, 3), 0);
        ASSERT_EQ(audit_snapshot_find_manifest(&s, 15), -ENOENT);
        manifests_free(files, 3);
}

/* spec.md "Row Lineage" example, manifest added1 at 1000: data1 EXISTING with a materialized
 * 800, data2 and data3 ADDED (1000, 1050); a DELETED entry between them takes no ids. */
TEST(entries_inherit_and_find_row) {
        ManifestEntry e[] = {
                { .status = MANIFEST_ENTRY_EXISTING,
                  .file_path = "data1",
                  .record_count = 25,
                  .has_first_row_id = true,
                  .first_row_id = 800,
                  .has_sequence_number = true,
                  .sequence_number = 3,
                  .has_file_sequence_number = true,
                  .file_sequence_number = 3 },
                { .status = MANIFEST_ENTRY_ADDED, .file_path = "data2", .record_count = 50 },
                { .status = MANIFEST_ENTRY_DELETED,
                  .file_path = "gone",
                  .record_count = 10,
                  .has_sequence_number = true,
                  .sequence_number = 2 },
                { .status = MANIFEST_ENTRY_ADDED, .file_path = "data3", .record_count = 50 },
        };
        ManifestFile m = { .content = MANIFEST_CONTENT_DATA,
                           .has_first_row_id = true,
                           .first_row_id = 1000,
                           .sequence_number = 7,
                           .has_added_snapshot_id = true,
                           .added_snapshot_id = 42 };
        Error err;

        ASSERT_OK(manifest_entries_inherit(e, 4, &m, &err));
        ASSERT_EQ(e[0].first_row_id, 800);
        ASSERT_TRUE(!e[0].is_first_row_id_inherited);
        ASSERT_EQ(e[0].sequence_number, 3);
        ASSERT_EQ(e[1].first_row_id, 1000);
        ASSERT_EQ(e[1].sequence_number, 7);
        ASSERT_EQ(e[1].file_sequence_number, 7);
        ASSERT_EQ(e[1].snapshot_id, 42);
        ASSERT_TRUE(!e[2].has_first_row_id);
        ASSERT_EQ(e[3].first_row_id, 1050);
        ASSERT_EQ(audit_entries_find_row(e, 4, 1007), 1);
        ASSERT_EQ(audit_entries_find_row(e, 4, 1099), 3);
        ASSERT_EQ(audit_entries_find_row(e, 4, 1099) >= 0 ? 1099 - e[3].first_row_id : -1, 49);
        ASSERT_EQ(audit_entries_find_row(e, 4, 810), 0);
        ASSERT_EQ(audit_entries_find_row(e, 4, 1100), -ENOENT);
        ASSERT_EQ(audit_entries_find_row(e, 4, 999), -ENOENT);
}
