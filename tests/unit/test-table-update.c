/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/table_update.c: CreateTableRequest → metadata, CommitTableRequest applied with Java's
 * rules (requirements → -ESTALE, invalid updates → -EINVAL), row lineage, logs. */
#include <errno.h>
#include <jansson.h>

#include "iceberg/metadata_text.h"
#include "iceberg/table_update.h"
#include "test.h"

#define UUID "9c12d441-03fe-4693-9a96-a0705ddf69c1"
#define SCHEMA                                                                                     \
        "{\"type\": \"struct\", \"schema-id\": 0, \"fields\": ["                                   \
        "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"                   \
        "{\"id\": 2, \"name\": \"data\", \"required\": false, \"type\": \"string\"}]}"

static int64_t I(const json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);

        if (!json_is_integer(v))
                TEST_FAIL("'%s' is not an integer", key);
        return json_integer_value(v);
}

static json_t *create_table(const char *format_version) {
        char text[2048];
        json_t *md = NULL;
        Error e;

        snprintf(text, sizeof(text),
                 "{\"name\": \"t\", \"schema\": " SCHEMA
                 ", \"partition-spec\": {\"spec-id\": 0, \"fields\": "
                 "[{\"name\": \"id_bucket\", \"transform\": \"bucket[16]\", \"source-id\": 1}]},"
                 " \"properties\": {\"format-version\": \"%s\", \"owner\": \"me\"}}",
                 format_version);
        _cleanup_(json_decrefp) json_t *req = test_json(text);
        ASSERT_OK(table_update_metadata_create(req, "/wh/db/t", 1000, UUID, &md, &e));
        return md;
}

/* Applies `request` (JSON text) to *md and replaces it; returns the result code. Every commit
 * of every case also proves the contract: the input metadata and request are left as they were
 * (the result shares their unchanged parts). */
static int commit(json_t **md, const char *request, int64_t now_ms, const char *previous,
                  Error *e) {
        _cleanup_(json_decrefp) json_t *req = test_json(request), *md_before = json_deep_copy(*md),
                                       *req_before = json_deep_copy(req);
        json_t *out = NULL;
        int r;

        r = table_update_apply(*md, req, now_ms, previous, &out, e);
        ASSERT_TRUE(json_equal(*md, md_before));
        ASSERT_TRUE(json_equal(req, req_before));
        if (r == 0) {
                json_decref(*md);
                *md = out;
        } else
                ASSERT_TRUE(out == NULL);
        return r;
}

static int append(json_t **md, int64_t snapshot_id, int64_t parent, int64_t seq,
                  int64_t first_row_id, int64_t added_rows, int64_t ts, const char *previous,
                  Error *e) {
        char text[2048], parent_text[64] = "", expect[64];

        if (parent >= 0)
                snprintf(parent_text, sizeof(parent_text), "\"parent-snapshot-id\": %" PRId64 ",",
                         parent);
        if (parent >= 0)
                snprintf(expect, sizeof(expect), "%" PRId64, parent);
        else
                snprintf(expect, sizeof(expect), "null");
        snprintf(text, sizeof(text),
                 "{\"requirements\": [{\"type\": \"assert-table-uuid\", \"uuid\": \"" UUID "\"},"
                 " {\"type\": \"assert-ref-snapshot-id\", \"ref\": \"main\", \"snapshot-id\": %s}],"
                 " \"updates\": [{\"action\": \"add-snapshot\", \"snapshot\": {\"snapshot-id\": "
                 "%" PRId64 ", %s"
                 " \"sequence-number\": %" PRId64 ", \"timestamp-ms\": %" PRId64
                 ", \"manifest-list\": \"/wh/db/t/metadata/l.avro\","
                 " \"summary\": {\"operation\": \"append\"}, \"first-row-id\": %" PRId64
                 ", \"added-rows\": %" PRId64 "}},"
                 " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"main\", \"type\": "
                 "\"branch\", \"snapshot-id\": %" PRId64 "}]}",
                 expect, snapshot_id, parent_text, seq, ts, first_row_id, added_rows, snapshot_id);
        return commit(md, text, ts + 1, previous, e);
}

TEST(create_v3) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        json_t *spec = json_array_get(json_object_get(md, "partition-specs"), 0);
        json_t *field = json_array_get(json_object_get(spec, "fields"), 0);

        ASSERT_EQ(I(md, "format-version"), 3);
        ASSERT_STREQ(json_string_value(json_object_get(md, "table-uuid")), UUID);
        ASSERT_STREQ(json_string_value(json_object_get(md, "location")), "/wh/db/t");
        ASSERT_EQ(I(md, "next-row-id"), 0);
        ASSERT_EQ(I(md, "last-sequence-number"), 0);
        ASSERT_EQ(I(md, "last-updated-ms"), 1000);
        ASSERT_EQ(I(md, "last-column-id"), 2);
        ASSERT_EQ(I(md, "current-schema-id"), 0);
        ASSERT_EQ(I(field, "field-id"), 1000);
        ASSERT_EQ(I(md, "last-partition-id"), 1000);
        ASSERT_EQ(I(md, "default-spec-id"), 0);
        ASSERT_EQ(I(md, "default-sort-order-id"), 0);
        ASSERT_TRUE(json_is_null(json_object_get(md, "current-snapshot-id")));
        ASSERT_EQ(json_object_size(json_object_get(md, "refs")), 0);
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshots")), 0);
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshot-log")), 0);
        ASSERT_EQ(json_array_size(json_object_get(md, "metadata-log")), 0);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(md, "properties"), "owner")),
                     "me");
        ASSERT_TRUE(!json_object_get(json_object_get(md, "properties"), "format-version"));
}

TEST(create_default_v2_sorted) {
        _cleanup_(json_decrefp) json_t *req = test_json(
                "{\"name\": \"t\", \"location\": \"/elsewhere/t\", \"schema\": " SCHEMA ","
                " \"write-order\": {\"order-id\": 7, \"fields\": [{\"source-id\": 2, "
                "\"transform\": \"identity\","
                " \"direction\": \"asc\", \"null-order\": \"nulls-first\"}]}}");
        _cleanup_(json_decrefp) json_t *md = NULL;
        Error e;

        ASSERT_OK(table_update_metadata_create(req, "/wh/db/t", 5, UUID, &md, &e));
        ASSERT_EQ(I(md, "format-version"), 2);
        ASSERT_STREQ(json_string_value(json_object_get(md, "location")), "/elsewhere/t");
        ASSERT_EQ(I(md, "current-snapshot-id"), -1);
        ASSERT_TRUE(!json_object_get(md, "next-row-id"));
        ASSERT_EQ(I(md, "last-partition-id"), 999);
        ASSERT_EQ(I(md, "default-sort-order-id"), 1);
        ASSERT_EQ(I(json_array_get(json_object_get(md, "sort-orders"), 0), "order-id"), 1);
}

TEST(create_bad_inputs) {
        static const struct {
                const char *request, *message;
        } bad[] = {
                { "[]", "not an object" },
                { "{\"schema\": " SCHEMA "}", "no name" },
                { "{\"name\": \"t\"}", "no schema" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"list\"}}", "of type \"struct\"" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"format-version\": \"4\"}}",
                  "format-version '4' is not 1, 2 or 3" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"format-version\": \"x\"}}",
                  "format-version 'x'" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"properties\": {\"a\": 1}}",
                  "property 'a' is not a string" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"int\"}, {\"id\": 1, \"name\": \"b\", "
                  "\"required\": true, \"type\": \"int\"}]}}",
                  "field id 1 is used twice" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 0, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"int\"}]}}",
                  "field id 0 of 'a' must be between 1" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"\","
                  " \"required\": true, \"type\": \"int\"}]}}",
                  "has no name" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"int\"}, {\"id\": 2, \"name\": \"a\", "
                  "\"required\": true, \"type\": \"int\"}]}}",
                  "duplicate field name 'a'" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"integer\"}]}}",
                  "field 'a' has unknown type 'integer'" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"decimal(39, 2)\"}]}}",
                  "unknown type 'decimal(39, 2)'" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"fixed[0]\"}]}}",
                  "unknown type 'fixed[0]'" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"required\": true, \"type\": \"timestamp_ns\"}]}}",
                  "requires format version 3, the table has 2" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"a\","
                  " \"type\": \"int\"}]}}",
                  "no boolean \"required\"" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"l\","
                  " \"required\": true, \"type\": {\"type\": \"list\", \"element-id\": 1, "
                  "\"element\": \"int\","
                  " \"element-required\": true}}]}}",
                  "field id 1 is used twice" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"m\","
                  " \"required\": true, \"type\": {\"type\": \"map\", \"key-id\": 2, \"key\": "
                  "\"string\","
                  " \"value-id\": 3, \"value\": {\"type\": \"set\"}, \"value-required\": true}}]}}",
                  "field 'm.value' has unknown type 'set'" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"partition-spec\": {\"fields\": [{\"name\": \"p\","
                  " \"transform\": \"identity\", \"source-id\": 9}]}}",
                  "source-id 9, which is not a field of the current schema" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"m\","
                  " \"required\": true, \"type\": {\"type\": \"map\", \"key-id\": 2, \"key\": "
                  "\"string\","
                  " \"value-id\": 3, \"value\": \"int\", \"value-required\": true}}]},"
                  " \"partition-spec\": {\"fields\": [{\"name\": \"k\", \"transform\": "
                  "\"identity\", \"source-id\": 2}]}}",
                  "source-id 2, a field inside a list or map, which cannot be a partition source" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"s\","
                  " \"required\": true, \"type\": {\"type\": \"struct\", \"fields\": [{\"id\": 2, "
                  "\"name\": \"x\","
                  " \"required\": true, \"type\": \"int\"}]}}]},"
                  " \"partition-spec\": {\"fields\": [{\"name\": \"s\", \"transform\": "
                  "\"identity\", \"source-id\": 1}]}}",
                  "source-id 1, which is not a primitive field" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"partition-spec\": {\"fields\": [{\"name\": \"p\","
                  " \"transform\": \"bucket[0]\", \"source-id\": 1}]}}",
                  "unknown transform 'bucket[0]'" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"partition-spec\": {\"fields\": [{\"name\": \"p\","
                  " \"transform\": \"identity\", \"source-id\": 1}, {\"name\": \"p\", "
                  "\"transform\": \"day\", \"source-id\": 1}]}}",
                  "duplicate field name 'p'" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"write-order\": {\"fields\": [{\"source-id\": 1,"
                  " \"transform\": \"identity\", \"direction\": \"up\", \"null-order\": "
                  "\"nulls-first\"}]}}",
                  "direction 'up'" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(json_decrefp) json_t *req = test_json(bad[i].request);
                json_t *md = NULL;
                Error e = { 0 };

                ASSERT_EQ(table_update_metadata_create(req, "/wh/db/t", 1, UUID, &md, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, bad[i].message);
                ASSERT_TRUE(md == NULL);
        }
}

TEST(create_accepts_nested_and_v3_types) {
        _cleanup_(json_decrefp) json_t *req = test_json(
                "{\"name\": \"t\", \"properties\": {\"format-version\": \"3\"}, \"schema\": "
                "{\"type\": \"struct\", \"fields\": ["
                "{\"id\": 1, \"name\": \"d\", \"required\": false, \"type\": \"decimal(10, 2)\"},"
                "{\"id\": 2, \"name\": \"f\", \"required\": false, \"type\": \"fixed[16]\"},"
                "{\"id\": 3, \"name\": \"ts\", \"required\": false, \"type\": \"timestamptz_ns\"},"
                "{\"id\": 4, \"name\": \"v\", \"required\": false, \"type\": \"variant\"},"
                "{\"id\": 5, \"name\": \"m\", \"required\": false, \"type\": {\"type\": \"map\", "
                "\"key-id\": 6,"
                " \"key\": \"string\", \"value-id\": 7, \"value-required\": false, \"value\": "
                "{\"type\": \"list\","
                " \"element-id\": 8, \"element-required\": true, \"element\": {\"type\": "
                "\"struct\", \"fields\": ["
                "{\"id\": 9, \"name\": \"x\", \"required\": true, \"type\": \"int\"}]}}}}]}}");
        _cleanup_(json_decrefp) json_t *md = NULL;
        Error e;

        ASSERT_OK(table_update_metadata_create(req, "/wh/db/t", 1, UUID, &md, &e));
        ASSERT_EQ(I(md, "last-column-id"), 9);
}

TEST(appends_advance_row_lineage_and_logs) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        _cleanup_(freep) char *before = NULL;
        json_t *log, *snap, *entry;
        Error e;

        ASSERT_OK(append(&md, 101, -1, 1, 0, 10, 2000, "/wh/db/t/metadata/v1.metadata.json", &e));
        ASSERT_EQ(I(md, "next-row-id"), 10);
        ASSERT_EQ(I(md, "last-sequence-number"), 1);
        ASSERT_EQ(I(md, "current-snapshot-id"), 101);
        ASSERT_EQ(I(md, "last-updated-ms"), 2001);
        ASSERT_EQ(I(json_object_get(json_object_get(md, "refs"), "main"), "snapshot-id"), 101);
        log = json_object_get(md, "snapshot-log");
        ASSERT_EQ(json_array_size(log), 1);
        ASSERT_EQ(I(json_array_get(log, 0), "timestamp-ms"), 2000);
        ASSERT_EQ(I(json_array_get(log, 0), "snapshot-id"), 101);
        entry = json_array_get(json_object_get(md, "metadata-log"), 0);
        ASSERT_EQ(json_array_size(json_object_get(md, "metadata-log")), 1);
        ASSERT_EQ(I(entry, "timestamp-ms"), 1000);
        ASSERT_STREQ(json_string_value(json_object_get(entry, "metadata-file")),
                     "/wh/db/t/metadata/v1.metadata.json");

        /* The input is never modified, even by a failed commit. */
        before = json_dumps(md, JSON_SORT_KEYS);
        ASSERT_EQ(append(&md, 102, 101, 2, 9, 5, 3000, "/wh/db/t/metadata/v2.metadata.json", &e),
                  -ESTALE);
        ASSERT_STREQ(e.message, "add-snapshot: Cannot add a snapshot, first-row-id is behind table "
                                "next-row-id: 9 < 10");
        {
                _cleanup_(freep) char *after = json_dumps(md, JSON_SORT_KEYS);
                ASSERT_STREQ(after, before);
        }

        ASSERT_OK(append(&md, 102, 101, 2, 10, 5, 3000, "/wh/db/t/metadata/v2.metadata.json", &e));
        ASSERT_EQ(I(md, "next-row-id"), 15);
        ASSERT_EQ(I(md, "last-sequence-number"), 2);
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshots")), 2);
        snap = json_array_get(json_object_get(md, "snapshots"), 1);
        ASSERT_EQ(I(snap, "first-row-id"), 10);
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshot-log")), 2);
        ASSERT_EQ(I(json_array_get(json_object_get(md, "snapshot-log"), 1), "timestamp-ms"), 3000);
        ASSERT_EQ(json_array_size(json_object_get(md, "metadata-log")), 2);
        ASSERT_EQ(I(json_array_get(json_object_get(md, "metadata-log"), 1), "timestamp-ms"), 2001);

        /* A first-row-id ahead of next-row-id is allowed; next-row-id advances from the table's. */
        ASSERT_OK(append(&md, 103, 102, 3, 20, 1, 4000, NULL, &e));
        ASSERT_EQ(I(md, "next-row-id"), 16);
        ASSERT_EQ(json_array_size(json_object_get(md, "metadata-log")), 2);
}

TEST(stale_sequence_and_missing_lineage) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        Error e;

        ASSERT_OK(append(&md, 101, -1, 1, 0, 10, 2000, NULL, &e));
        ASSERT_EQ(append(&md, 102, 101, 1, 10, 1, 3000, NULL, &e), -ESTALE);
        ASSERT_STREQ(e.message, "add-snapshot: Cannot add snapshot with sequence number 1 older "
                                "than last sequence number 1");
        ASSERT_EQ(
                commit(&md,
                       "{\"updates\": [{\"action\": \"add-snapshot\", \"snapshot\": "
                       "{\"snapshot-id\": 5,"
                       " \"sequence-number\": 2, \"timestamp-ms\": 1, \"manifest-list\": \"l\"}}]}",
                       5000, NULL, &e),
                -EINVAL);
        ASSERT_STREQ(e.message, "add-snapshot: Cannot add a snapshot: first-row-id is null");
        ASSERT_EQ(append(&md, 102, 50, 2, 10, 1, 3000, NULL, &e), -ESTALE); /* main moved on */
        ASSERT_STREQ(e.message,
                     "Requirement failed: branch main has changed: expected id 50 != 101");
        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"add-snapshot\", \"snapshot\": "
                         "{\"snapshot-id\": 101,"
                         " \"sequence-number\": 2, \"timestamp-ms\": 1, \"manifest-list\": \"l\", "
                         "\"first-row-id\": 10,"
                         " \"added-rows\": 1}}]}",
                         5000, NULL, &e),
                  -EINVAL);
        ASSERT_STREQ(e.message, "add-snapshot: Snapshot already exists for id: 101");
}

TEST(requirements_fail_with_estale) {
        static const struct {
                const char *requirement, *message;
        } failing[] = {
                { "{\"type\": \"assert-create\"}", "Requirement failed: table already exists" },
                { "{\"type\": \"assert-table-uuid\", \"uuid\": "
                  "\"00000000-0000-0000-0000-000000000000\"}",
                  "Requirement failed: UUID does not match: expected " UUID
                  " != 00000000-0000-0000-0000-000000000000" },
                { "{\"type\": \"assert-ref-snapshot-id\", \"ref\": \"main\", \"snapshot-id\": "
                  "null}",
                  "Requirement failed: branch main was created concurrently" },
                { "{\"type\": \"assert-ref-snapshot-id\", \"ref\": \"main\", \"snapshot-id\": 7}",
                  "Requirement failed: branch main has changed: expected id 7 != 101" },
                { "{\"type\": \"assert-ref-snapshot-id\", \"ref\": \"dev\", \"snapshot-id\": 7}",
                  "Requirement failed: branch or tag dev is missing, expected 7" },
                { "{\"type\": \"assert-last-assigned-field-id\", \"last-assigned-field-id\": 1}",
                  "Requirement failed: last assigned field id changed: expected id 1 != 2" },
                { "{\"type\": \"assert-current-schema-id\", \"current-schema-id\": 3}",
                  "Requirement failed: current schema changed: expected id 3 != 0" },
                { "{\"type\": \"assert-last-assigned-partition-id\", "
                  "\"last-assigned-partition-id\": 999}",
                  "Requirement failed: last assigned partition id changed: expected id 999 != "
                  "1000" },
                { "{\"type\": \"assert-default-spec-id\", \"default-spec-id\": 1}",
                  "Requirement failed: default partition spec changed: expected id 1 != 0" },
                { "{\"type\": \"assert-default-sort-order-id\", \"default-sort-order-id\": 1}",
                  "Requirement failed: default sort order changed: expected id 1 != 0" },
        };
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        Error e;

        ASSERT_OK(append(&md, 101, -1, 1, 0, 10, 2000, NULL, &e));
        for (size_t i = 0; i < ELEMENTSOF(failing); i++) {
                char text[1024];

                snprintf(text, sizeof(text),
                         "{\"requirements\": [%s], \"updates\": [{\"action\": \"set-properties\","
                         " \"updates\": {\"k\": \"v\"}}]}",
                         failing[i].requirement);
                ASSERT_EQ(commit(&md, text, 9000, NULL, &e), -ESTALE);
                ASSERT_STREQ(e.message, failing[i].message);
        }
        ASSERT_TRUE(!json_object_get(json_object_get(md, "properties"), "k"));

        /* The same requirements hold when their values match. */
        ASSERT_OK(commit(
                &md,
                "{\"requirements\": [{\"type\": \"assert-ref-snapshot-id\", \"ref\": \"dev\", "
                "\"snapshot-id\": null},"
                " {\"type\": \"assert-last-assigned-field-id\", \"last-assigned-field-id\": 2},"
                " {\"type\": \"assert-current-schema-id\", \"current-schema-id\": 0},"
                " {\"type\": \"assert-last-assigned-partition-id\", "
                "\"last-assigned-partition-id\": 1000},"
                " {\"type\": \"assert-default-spec-id\", \"default-spec-id\": 0},"
                " {\"type\": \"assert-default-sort-order-id\", \"default-sort-order-id\": 0}],"
                " \"updates\": [{\"action\": \"set-properties\", \"updates\": {\"k\": \"v\"}}]}",
                9000, NULL, &e));
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(md, "properties"), "k")),
                     "v");

        ASSERT_EQ(commit(&md,
                         "{\"requirements\": [{\"type\": \"assert-nothing\"}], \"updates\": []}",
                         9000, NULL, &e),
                  -EINVAL);
        ASSERT_STREQ(e.message, "unknown requirement type 'assert-nothing'");
        ASSERT_EQ(
                commit(&md,
                       "{\"updates\": [{\"action\": \"remove-snapshots\", \"snapshot-ids\": [1]}]}",
                       9000, NULL, &e),
                -EINVAL);
        ASSERT_STREQ(e.message, "updates[0]: unknown or unsupported action 'remove-snapshots'");
}

TEST(metadata_log_is_trimmed) {
        _cleanup_(json_decrefp) json_t *md = create_table("2");
        json_t *log;
        Error e;

        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"set-properties\", \"updates\":"
                         " {\"write.metadata.previous-versions-max\": \"2\"}}]}",
                         2000, "v1", &e));
        ASSERT_OK(commit(&md, "{\"updates\": []}", 3000, "v2", &e));
        ASSERT_OK(commit(&md, "{\"updates\": []}", 4000, "v3", &e));
        ASSERT_OK(commit(&md, "{\"updates\": []}", 3500, "v4", &e));
        log = json_object_get(md, "metadata-log");
        ASSERT_EQ(json_array_size(log), 2);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(log, 0), "metadata-file")),
                     "v3");
        ASSERT_EQ(I(json_array_get(log, 0), "timestamp-ms"), 3000);
        ASSERT_STREQ(json_string_value(json_object_get(json_array_get(log, 1), "metadata-file")),
                     "v4");
        ASSERT_EQ(I(json_array_get(log, 1), "timestamp-ms"), 4000);
        /* now_ms 3500 is before the last update (4000): last-updated-ms never goes back. */
        ASSERT_EQ(I(md, "last-updated-ms"), 4000);
}

TEST(upgrade_format_version) {
        _cleanup_(json_decrefp) json_t *md = create_table("2");
        Error e;

        ASSERT_TRUE(!json_object_get(md, "next-row-id"));
        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"upgrade-format-version\", "
                         "\"format-version\": 4}]}",
                         2000, NULL, &e),
                  -EINVAL);
        ASSERT_STREQ(e.message, "upgrade-format-version: Cannot upgrade table to unsupported "
                                "format version: v4 (supported: v3)");
        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"upgrade-format-version\", "
                         "\"format-version\": 1}]}",
                         2000, NULL, &e),
                  -EINVAL);
        ASSERT_STREQ(e.message, "upgrade-format-version: Cannot downgrade v2 table to v1");
        ASSERT_OK(commit(
                &md,
                "{\"updates\": [{\"action\": \"upgrade-format-version\", \"format-version\": 3}]}",
                2000, NULL, &e));
        ASSERT_EQ(I(md, "format-version"), 3);
        ASSERT_EQ(I(md, "next-row-id"), 0);
        ASSERT_TRUE(json_is_null(json_object_get(md, "current-snapshot-id")));
        ASSERT_OK(append(&md, 7, -1, 1, 0, 3, 2500, NULL, &e));
        ASSERT_EQ(I(md, "next-row-id"), 3);
}

TEST(schema_spec_order_updates) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        json_t *specs;
        Error e;

        ASSERT_OK(commit(
                &md,
                "{\"updates\": [{\"action\": \"add-schema\", \"schema\": {\"type\": \"struct\", "
                "\"fields\": ["
                "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
                "{\"id\": 2, \"name\": \"data\", \"required\": false, \"type\": \"string\"},"
                "{\"id\": 3, \"name\": \"ts\", \"required\": false, \"type\": \"timestamptz\"}]}},"
                " {\"action\": \"set-current-schema\", \"schema-id\": -1},"
                " {\"action\": \"add-spec\", \"spec\": {\"fields\": [{\"name\": \"id_bucket\","
                " \"transform\": \"bucket[16]\", \"source-id\": 1}, {\"name\": \"ts_day\", "
                "\"transform\": \"day\","
                " \"source-id\": 3}]}},"
                " {\"action\": \"set-default-spec\", \"spec-id\": -1},"
                " {\"action\": \"add-sort-order\", \"sort-order\": {\"order-id\": 1, \"fields\": "
                "[{\"source-id\": 3,"
                " \"transform\": \"identity\", \"direction\": \"desc\", \"null-order\": "
                "\"nulls-last\"}]}},"
                " {\"action\": \"set-default-sort-order\", \"sort-order-id\": -1},"
                " {\"action\": \"set-location\", \"location\": \"/wh/db/t2\"},"
                " {\"action\": \"remove-properties\", \"removals\": [\"owner\"]}]}",
                2000, NULL, &e));
        ASSERT_EQ(I(md, "current-schema-id"), 1);
        ASSERT_EQ(I(md, "last-column-id"), 3);
        ASSERT_EQ(json_array_size(json_object_get(md, "schemas")), 2);
        ASSERT_EQ(I(md, "default-spec-id"), 1);
        specs = json_object_get(md, "partition-specs");
        /* id_bucket keeps the field id 1000 of the first spec; ts_day gets the next one. */
        ASSERT_EQ(I(json_array_get(json_object_get(json_array_get(specs, 1), "fields"), 0),
                    "field-id"),
                  1000);
        ASSERT_EQ(I(json_array_get(json_object_get(json_array_get(specs, 1), "fields"), 1),
                    "field-id"),
                  1001);
        ASSERT_EQ(I(md, "last-partition-id"), 1001);
        ASSERT_EQ(I(md, "default-sort-order-id"), 1);
        ASSERT_STREQ(json_string_value(json_object_get(md, "location")), "/wh/db/t2");
        ASSERT_TRUE(!json_object_get(json_object_get(md, "properties"), "owner"));

        /* Adding an existing schema again reuses its id. */
        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"add-schema\", \"schema\": " SCHEMA "},"
                         " {\"action\": \"set-current-schema\", \"schema-id\": 0}]}",
                         3000, NULL, &e));
        ASSERT_EQ(json_array_size(json_object_get(md, "schemas")), 2);
        ASSERT_EQ(I(md, "current-schema-id"), 0);

        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"set-current-schema\", \"schema-id\": -1}]}",
                         3000, NULL, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "no schema has been added");
        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"set-current-schema\", \"schema-id\": 9}]}",
                         3000, NULL, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "Cannot set current schema to unknown schema: 9");
        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"add-spec\", \"spec\": {\"fields\": "
                         "[{\"name\": \"x\","
                         " \"transform\": \"identity\", \"source-id\": 3}]}}]}",
                         3000, NULL, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "add-spec: partition spec: field 'x' has source-id 3");
}

TEST(refs_branches_and_tags) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        json_t *dev;
        Error e;

        ASSERT_OK(append(&md, 101, -1, 1, 0, 10, 2000, NULL, &e));
        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"set-snapshot-ref\", \"ref-name\": \"dev\", "
                         "\"type\": \"branch\","
                         " \"snapshot-id\": 101, \"max-ref-age-ms\": 86400000, "
                         "\"min-snapshots-to-keep\": 3},"
                         " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"v1\", \"type\": "
                         "\"tag\", \"snapshot-id\": 101}]}",
                         3000, NULL, &e));
        dev = json_object_get(json_object_get(md, "refs"), "dev");
        ASSERT_EQ(I(dev, "snapshot-id"), 101);
        ASSERT_EQ(I(dev, "max-ref-age-ms"), 86400000);
        ASSERT_EQ(I(dev, "min-snapshots-to-keep"), 3);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(json_object_get(md, "refs"), "v1"),
                                             "type")),
                     "tag");
        /* Only main changes the snapshot log. */
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshot-log")), 1);

        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"set-snapshot-ref\", \"ref-name\": \"dev\","
                         " \"type\": \"branch\", \"snapshot-id\": 55}]}",
                         3000, NULL, &e),
                  -EINVAL);
        ASSERT_STREQ(e.message, "set-snapshot-ref: Cannot set dev to unknown snapshot: 55");
        ASSERT_EQ(commit(&md,
                         "{\"updates\": [{\"action\": \"set-snapshot-ref\", \"ref-name\": \"main\","
                         " \"type\": \"tag\", \"snapshot-id\": 101}]}",
                         3000, NULL, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "Cannot set main to a tag");
        ASSERT_EQ(
                commit(&md,
                       "{\"updates\": [{\"action\": \"set-snapshot-ref\", \"ref-name\": \"t2\","
                       " \"type\": \"tag\", \"snapshot-id\": 101, \"min-snapshots-to-keep\": 1}]}",
                       3000, NULL, &e),
                -EINVAL);
        ASSERT_CONTAINS(e.message, "Tags do not support setting min-snapshots-to-keep");

        /* A commit on a branch does not move main, but advances the table's row ids. */
        ASSERT_OK(commit(
                &md,
                "{\"requirements\": [{\"type\": \"assert-ref-snapshot-id\", \"ref\": \"dev\", "
                "\"snapshot-id\": 101}],"
                " \"updates\": [{\"action\": \"add-snapshot\", \"snapshot\": {\"snapshot-id\": 102,"
                " \"parent-snapshot-id\": 101, \"sequence-number\": 2, \"timestamp-ms\": 3500,"
                " \"manifest-list\": \"l\", \"first-row-id\": 10, \"added-rows\": 4}},"
                " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"dev\", \"type\": \"branch\","
                " \"snapshot-id\": 102, \"max-ref-age-ms\": 86400000, \"min-snapshots-to-keep\": "
                "3}]}",
                4000, NULL, &e));
        ASSERT_EQ(I(md, "current-snapshot-id"), 101);
        ASSERT_EQ(I(md, "next-row-id"), 14);
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshot-log")), 1);

        /* Rolling main back to an existing snapshot logs the time of the change. */
        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"set-snapshot-ref\", \"ref-name\": \"main\","
                         " \"type\": \"branch\", \"snapshot-id\": 102}]}",
                         5000, NULL, &e));
        ASSERT_EQ(I(json_array_get(json_object_get(md, "snapshot-log"), 1), "timestamp-ms"), 5000);

        ASSERT_OK(commit(
                &md,
                "{\"updates\": [{\"action\": \"remove-snapshot-ref\", \"ref-name\": \"main\"},"
                " {\"action\": \"remove-snapshot-ref\", \"ref-name\": \"v1\"}]}",
                6000, NULL, &e));
        ASSERT_TRUE(json_is_null(json_object_get(md, "current-snapshot-id")));
        ASSERT_TRUE(!json_object_get(json_object_get(md, "refs"), "main"));
        ASSERT_TRUE(!json_object_get(json_object_get(md, "refs"), "v1"));
        ASSERT_TRUE(json_object_get(json_object_get(md, "refs"), "dev") != NULL);
}

TEST(intermediate_snapshots_leave_the_log) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        Error e;

        ASSERT_OK(commit(
                &md,
                "{\"updates\": [{\"action\": \"add-snapshot\", \"snapshot\": {\"snapshot-id\": 1,"
                " \"sequence-number\": 1, \"timestamp-ms\": 10, \"manifest-list\": \"l\", "
                "\"first-row-id\": 0,"
                " \"added-rows\": 2}},"
                " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"main\", \"type\": \"branch\", "
                "\"snapshot-id\": 1},"
                " {\"action\": \"add-snapshot\", \"snapshot\": {\"snapshot-id\": 2, "
                "\"parent-snapshot-id\": 1,"
                " \"sequence-number\": 2, \"timestamp-ms\": 20, \"manifest-list\": \"l\", "
                "\"first-row-id\": 2,"
                " \"added-rows\": 3}},"
                " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"main\", \"type\": \"branch\", "
                "\"snapshot-id\": 2}]}",
                100, NULL, &e));
        ASSERT_EQ(I(md, "next-row-id"), 5);
        ASSERT_EQ(json_array_size(json_object_get(md, "snapshot-log")), 1);
        ASSERT_EQ(I(json_array_get(json_object_get(md, "snapshot-log"), 0), "snapshot-id"), 2);
}

/* Copy-on-write: the result shares what the commit left alone (the old snapshots themselves,
 * the schemas), the containers it changed are its own, and the input is untouched. */
TEST(apply_shares_unchanged_parts_and_never_changes_its_input) {
        _cleanup_(json_decrefp) json_t *md = create_table("3"), *base = NULL, *before = NULL,
                                       *req = NULL, *out = NULL;
        const json_t *a, *b;
        Error e;

        for (int64_t i = 0; i < 5; i++)
                ASSERT_OK(append(&md, 100 + i, i ? 100 + i - 1 : -1, i + 1, i * 10, 10, 2000 + i,
                                 "prev", &e));
        base = json_incref(md);
        before = json_deep_copy(base);
        req = test_json(
                "{\"updates\": [{\"action\": \"add-snapshot\", \"snapshot\": {\"snapshot-id\": 7,"
                " \"parent-snapshot-id\": 104, \"sequence-number\": 6, \"timestamp-ms\": 3000,"
                " \"manifest-list\": \"l\", \"first-row-id\": 50, \"added-rows\": 1}},"
                " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"main\", \"type\": \"branch\","
                " \"snapshot-id\": 7},"
                " {\"action\": \"set-snapshot-ref\", \"ref-name\": \"t1\", \"type\": \"tag\","
                " \"snapshot-id\": 100},"
                " {\"action\": \"remove-snapshot-ref\", \"ref-name\": \"t1\"},"
                " {\"action\": \"set-properties\", \"updates\": {\"k\": \"v\"}},"
                " {\"action\": \"remove-properties\", \"removals\": [\"owner\"]},"
                " {\"action\": \"add-sort-order\", \"sort-order\": {\"order-id\": 1, \"fields\":"
                " [{\"transform\": \"identity\", \"source-id\": 1, \"direction\": \"asc\","
                " \"null-order\": \"nulls-first\"}]}}]}");
        ASSERT_OK(table_update_apply(base, req, 5000, "v6", &out, &e));
        ASSERT_TRUE(json_equal(base, before));

        a = json_object_get(base, "snapshots");
        b = json_object_get(out, "snapshots");
        ASSERT_TRUE(a != b);
        ASSERT_EQ(json_array_size(a), 5);
        ASSERT_EQ(json_array_size(b), 6);
        for (size_t i = 0; i < 5; i++)
                ASSERT_TRUE(json_array_get(a, i) == json_array_get(b, i));
        ASSERT_TRUE(json_object_get(base, "schemas") == json_object_get(out, "schemas"));
        ASSERT_TRUE(json_object_get(base, "partition-specs") ==
                    json_object_get(out, "partition-specs"));
        ASSERT_TRUE(json_object_get(base, "refs") != json_object_get(out, "refs"));
        ASSERT_TRUE(json_object_get(base, "properties") != json_object_get(out, "properties"));
        ASSERT_TRUE(json_object_get(base, "sort-orders") != json_object_get(out, "sort-orders"));
        ASSERT_EQ(I(json_object_get(json_object_get(out, "refs"), "main"), "snapshot-id"), 7);
        ASSERT_TRUE(!json_object_get(json_object_get(out, "refs"), "t1"));
        ASSERT_TRUE(!json_object_get(json_object_get(out, "properties"), "owner"));
        ASSERT_EQ(json_array_size(json_object_get(out, "sort-orders")), 2);
        ASSERT_EQ(json_array_size(json_object_get(out, "snapshot-log")), 6);
        ASSERT_EQ(json_array_size(json_object_get(base, "snapshot-log")), 5);
        ASSERT_EQ(json_array_size(json_object_get(out, "metadata-log")), 6);
        ASSERT_EQ(json_array_size(json_object_get(base, "metadata-log")), 5);

        /* A failing commit leaves the input as it was, too. */
        {
                _cleanup_(json_decrefp) json_t *bad = test_json(
                        "{\"updates\": [{\"action\": \"set-properties\", \"updates\": {\"x\": "
                        "\"y\"}},"
                        " {\"action\": \"set-current-schema\", \"schema-id\": 9}]}");
                json_t *none = NULL;

                ASSERT_EQ(table_update_apply(base, bad, 6000, "v7", &none, &e), -EINVAL);
                ASSERT_TRUE(none == NULL);
                ASSERT_TRUE(json_equal(base, before));
        }
}

TEST(removed_metadata_files_and_the_delete_property) {
        _cleanup_(json_decrefp) json_t *md = create_table("2"), *prev = NULL, *files = NULL;
        Error e;

        ASSERT_TRUE(!table_update_deletes_after_commit(md));
        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"set-properties\", \"updates\":"
                         " {\"write.metadata.previous-versions-max\": \"2\","
                         " \"write.metadata.delete-after-commit.enabled\": \"TRUE\"}}]}",
                         2000, "v1", &e));
        ASSERT_TRUE(table_update_deletes_after_commit(md));
        ASSERT_OK(commit(&md, "{\"updates\": []}", 3000, "v2", &e));
        prev = json_incref(md);
        ASSERT_OK(commit(&md, "{\"updates\": []}", 4000, "v3", &e));
        /* v1 dropped out of the log (max 2 kept: v2, v3). */
        ASSERT_OK(table_update_removed_metadata_files(prev, md, &files));
        ASSERT_EQ(json_array_size(files), 1);
        ASSERT_STREQ(json_string_value(json_array_get(files, 0)), "v1");
        json_decref(files);
        /* Nothing dropped: nothing to delete. */
        ASSERT_OK(table_update_removed_metadata_files(md, md, &files));
        ASSERT_EQ(json_array_size(files), 0);

        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"set-properties\", \"updates\":"
                         " {\"write.metadata.delete-after-commit.enabled\": \"yes\"}}]}",
                         5000, "v4", &e));
        ASSERT_TRUE(!table_update_deletes_after_commit(md));
}

static void text_is_compact_dump(const json_t *md, MetadataTextMemo *memo) {
        _cleanup_(freep) char *expected = json_dumps(md, JSON_COMPACT);
        _cleanup_(buf_deinitp) Buf b;

        buf_init(&b, 1 << 24);
        ASSERT_OK(metadata_text_dump(md, memo, &b));
        ASSERT_STREQ(buf_str(&b), expected);
}

/* metadata_text_dump writes exactly json_dumps(JSON_COMPACT), with or without a memo, through
 * appends, an intermediate snapshot dropped from the log, a rollback and an expiry (an old
 * snapshot removed) that break the shared prefix. */
TEST(metadata_text_is_json_compact_with_and_without_memo) {
        _cleanup_(json_decrefp) json_t *md = create_table("3");
        _cleanup_(metadata_text_memo_freep) MetadataTextMemo *memo = metadata_text_memo_new();
        Error e;

        ASSERT_TRUE(memo);
        text_is_compact_dump(md, memo);
        for (int64_t i = 0; i < 8; i++) {
                ASSERT_OK(append(&md, 100 + i, i ? 100 + i - 1 : -1, i + 1, i * 10, 10, 2000 + i,
                                 "prev", &e));
                text_is_compact_dump(md, memo);
                text_is_compact_dump(md, /* memo= */ NULL);
        }
        ASSERT_TRUE(metadata_text_memo_bytes(memo) > 0);
        ASSERT_OK(commit(&md,
                         "{\"updates\": [{\"action\": \"set-snapshot-ref\", \"ref-name\": "
                         "\"main\", \"type\": \"branch\", \"snapshot-id\": 102}]}",
                         9000, "v9", &e));
        text_is_compact_dump(md, memo);
        /* Another writer expired snapshot 101: a new array without it. */
        {
                json_t *copy = json_deep_copy(md);

                ASSERT_OK(json_array_remove(json_object_get(copy, "snapshots"), 1));
                text_is_compact_dump(copy, memo);
                json_decref(copy);
        }
        text_is_compact_dump(md, memo);
        {
                _cleanup_(json_decrefp) json_t *s = json_string("x");
                _cleanup_(buf_deinitp) Buf b;

                buf_init(&b, 64);
                ASSERT_EQ(metadata_text_dump(s, memo, &b), -EINVAL);
        }
}
