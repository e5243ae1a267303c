/* SPDX-License-Identifier: Apache-2.0 */
/* writer/request.c: every refusal names the field and the rule; the fingerprint decides what
 * "the same request" is for idempotency. */
#include <errno.h>

#include "test.h"
#include "writer/request.h"

static const CommitRequestLimits limits = {
        .max_manifests = 3,
        .max_data_files = 2,
        .max_path_bytes = 4096,
        .max_properties = 4,
        .max_properties_bytes = 64,
};

static int parse(const char *ns, const char *body, CommitRequest **ret, Error *e) {
        return request_parse(ns, "events", slice_from_str(body), &limits, ret, e);
}

TEST(valid_request) {
        _cleanup_(request_freep) CommitRequest *r = NULL;
        Error e;

        ASSERT_OK(parse("analytics\x1fweb",
                        "{\"idempotency-key\": \"job-1:part.2_x\", "
                        "\"staged-manifests\": [\"/wh/m1.avro\", \"file:///wh/m2.avro\"], "
                        "\"snapshot-properties\": {\"job\": \"1\"}}",
                        &r, &e));
        ASSERT_EQ(r->target.n_namespace, 2);
        ASSERT_STREQ(r->target.namespace[0], "analytics");
        ASSERT_STREQ(r->target.namespace[1], "web");
        ASSERT_STREQ(r->branch, "main");
        ASSERT_EQ(r->n_manifests, 2);
        ASSERT_STREQ(r->manifests[1], "file:///wh/m2.avro");
        ASSERT_STREQ(r->queue_name, "analytics\x1fweb\x1f"
                                    "events@main");
}

TEST(fingerprint_is_canonical) {
        _cleanup_(request_freep) CommitRequest *a = NULL, *b = NULL, *c = NULL;

        ASSERT_OK(parse("ns",
                        "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], "
                        "\"snapshot-properties\": {\"a\": \"1\", \"b\": \"2\"}}",
                        &a, NULL));
        ASSERT_OK(parse("ns",
                        "{\"snapshot-properties\": {\"b\": \"2\", \"a\": \"1\"}, "
                        "\"staged-manifests\": [\"/m\"], \"idempotency-key\": \"k\"}",
                        &b, NULL));
        ASSERT_OK(parse(
                "ns",
                "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"branch\": \"dev\"}",
                &c, NULL));
        ASSERT_STREQ(a->fingerprint, b->fingerprint);
        ASSERT_TRUE(strcmp(a->fingerprint, c->fingerprint) != 0);
}

TEST(refusals_name_field_and_rule) {
        static const struct {
                const char *body, *message;
                int code;
        } cases[] = {
                { "not json", "body is not valid JSON", -EINVAL },
                { "[]", "body must be a JSON object", -EINVAL },
                { "{\"staged-manifests\": [\"/m\"]}", "'idempotency-key' is required", -EINVAL },
                { "{\"idempotency-key\": \"a,b\", \"staged-manifests\": [\"/m\"]}",
                  "'idempotency-key' is required", -EINVAL },
                { "{\"idempotency-key\": \"k\"}", "nothing to commit: give 'staged-manifests'",
                  -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": 1}",
                  "'staged-manifests' must be an array", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": []}",
                  "'staged-manifests' is empty", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\", \"/m\"]}",
                  "names the same file as 'staged-manifests'[0] '/m'", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/w/m\", "
                  "\"file:///w//./m\"]}",
                  "'staged-manifests'[1] 'file:///w//./m' names the same file as "
                  "'staged-manifests'[0] '/w/m'",
                  -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"s3://bkt/w/m\", "
                  "\"s3a://bkt/w/m\"]}",
                  "names the same file", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], "
                  "\"snapshot-properties\": {\"a\": \"1\", \"b\": \"2\", \"c\": \"3\", \"d\": "
                  "\"4\", \"e\": \"5\"}}",
                  "5 properties, above the limit of 4", -E2BIG },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], "
                  "\"snapshot-properties\": {\"a\": "
                  "\"0123456789012345678901234567890123456789012345678901234567890123456789\"}}",
                  "71 bytes of keys and values, above the limit of 64", -E2BIG },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [1]}",
                  "'staged-manifests'[0] must be a location", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": "
                  "[\"/a\",\"/b\",\"/c\",\"/d\"]}",
                  "above the limit of 3", -E2BIG },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], "
                  "\"snapshot-properties\": {\"operation\": \"delete\"}}",
                  "'snapshot-properties'.'operation' is reserved", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], "
                  "\"snapshot-properties\": {\"n\": 1}}",
                  "'snapshot-properties'.'n' must be a string", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"branch\": \"\"}",
                  "'branch' must be", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"extra\": 1}",
                  "unknown field 'extra'", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"idempotency-key\": \"j\", \"staged-manifests\": "
                  "[\"/m\"]}",
                  "duplicate", -EINVAL },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                CommitRequest *r = NULL;
                Error e = { 0 };

                ASSERT_EQ(parse("ns", cases[i].body, &r, &e), cases[i].code);
                ASSERT_TRUE(r == NULL);
                ASSERT_CONTAINS(e.message, cases[i].message);
        }
}

TEST(namespace_levels_are_checked) {
        CommitRequest *r = NULL;
        Error e;

        ASSERT_EQ(parse("a\x1f\x1f"
                        "b",
                        "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"]}", &r, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "namespace level 1 is empty");
        ASSERT_TRUE(request_key_is_valid("A-z_0.9:x"));
        ASSERT_TRUE(!request_key_is_valid(""));
        ASSERT_TRUE(!request_key_is_valid("has space"));
}

TEST(locations_may_be_long_names_must_be_utf8) {
        _cleanup_(request_freep) CommitRequest *r = NULL;
        char body[1024], location[301];
        CommitRequest *bad = NULL;
        Error e;

        memset(location, 'a', sizeof(location) - 1);
        location[0] = '/';
        location[sizeof(location) - 1] = 0;
        snprintf(body, sizeof(body), "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"%s\"]}",
                 location);
        ASSERT_OK(parse("ns", body, &r, &e));
        ASSERT_STREQ(r->manifests[0], location);

        ASSERT_EQ(request_parse("ns",
                                "e\xba"
                                "vents",
                                slice_from_str("{}"), &limits, &bad, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "not UTF-8");
        ASSERT_EQ(parse("n\xc3", "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"]}",
                        &bad, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "namespace level 0 is not UTF-8");
}

/* Locations longer than commit.max-path-bytes: -ENAMETOOLONG (a 422), naming which one and the
 * limit; at the limit they are taken. */
TEST(locations_are_bounded_by_max_path_bytes) {
        _cleanup_(request_freep) CommitRequest *r = NULL;
        _cleanup_(freep) char *body = NULL, *location = calloc(1, 4098);
        CommitRequest *bad = NULL;
        Error e;

        ASSERT_TRUE(location);
        memset(location, 'a', 4097);
        location[0] = '/';
        ASSERT_TRUE(asprintf(&body,
                             "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\", \"%s\"]}",
                             location) >= 0);
        ASSERT_EQ(parse("ns", body, &bad, &e), -ENAMETOOLONG);
        ASSERT_STREQ(e.message, "'staged-manifests'[1] is 4097 bytes, above the limit of 4096 "
                                "(commit.max-path-bytes)");
        free(body);
        ASSERT_TRUE(asprintf(&body,
                             "{\"idempotency-key\": \"k\", \"data-files\": [{\"file-path\": "
                             "\"%s\", \"file-format\": \"parquet\", \"record-count\": 1, "
                             "\"file-size-in-bytes\": 1}]}",
                             location) >= 0);
        ASSERT_EQ(parse("ns", body, &bad, &e), -ENAMETOOLONG);
        ASSERT_STREQ(e.message, "'data-files'[0]: 'file-path' is 4097 bytes, above the limit of "
                                "4096 (commit.max-path-bytes)");

        location[4096] = '\0';
        free(body);
        ASSERT_TRUE(asprintf(&body, "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"%s\"]}",
                             location) >= 0);
        ASSERT_OK(parse("ns", body, &r, &e));
}

/* A request with a valid description, one field replaced or added by `change` (JSON members). */
static char *data_files_body(const char *change) {
        json_t *file =
                json_pack("{s:s, s:s, s:i, s:i}", "file-path", "/wh/t/data/a.parquet",
                          "file-format", "parquet", "record-count", 3, "file-size-in-bytes", 100);
        _cleanup_(freep) char *text = NULL;
        json_t *patch, *body;
        char *out;

        ASSERT_TRUE(asprintf(&text, "{%s}", change) >= 0);
        patch = json_loads(text, 0, NULL);
        ASSERT_TRUE(file && patch);
        ASSERT_OK(json_object_update(file, patch));
        json_decref(patch);
        body = json_pack("{s:s, s:[o]}", "idempotency-key", "k", "data-files", file);
        out = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        ASSERT_TRUE(out);
        return out;
}

TEST(data_files_are_parsed) {
        _cleanup_(request_freep) CommitRequest *r = NULL, *other = NULL;
        const DataFile *f;
        Error e = { 0 };

        ASSERT_OK(
                parse("ns",
                      "{\"idempotency-key\": \"k\", \"data-files\": [{\"content\": \"data\", "
                      "\"file-path\": \"/wh/t/data/a.parquet\", \"file-format\": \"PARQUET\", "
                      "\"spec-id\": 2, "
                      "\"partition\": [7, null], \"record-count\": 0, \"file-size-in-bytes\": 100, "
                      "\"value-counts\": {\"keys\": [1, 2], \"values\": [3, 4]}, "
                      "\"lower-bounds\": {\"keys\": [2], \"values\": [\"a\"]}, "
                      "\"split-offsets\": [4, 50], \"sort-order-id\": 1}, "
                      "{\"location\": \"file:///wh/t/data/b.orc\", \"file-format\": \"orc\", "
                      "\"record-count\": 5, \"file-size-in-bytes\": 9}]}",
                      &r, &e));
        ASSERT_EQ(r->n_manifests, 0);
        ASSERT_EQ(r->n_data_files, 2);
        f = &r->data_files[0];
        ASSERT_STREQ(f->location, "/wh/t/data/a.parquet");
        ASSERT_EQ(f->format, DATA_FILE_FORMAT_PARQUET);
        ASSERT_EQ(f->record_count, 0); /* Java's DataFiles.Builder allows empty files */
        ASSERT_EQ(f->file_size_in_bytes, 100);
        ASSERT_TRUE(f->has_spec_id && f->spec_id == 2);
        ASSERT_EQ(json_array_size(f->partition), 2);
        ASSERT_TRUE(f->value_counts.is_present && f->value_counts.n == 2);
        ASSERT_EQ(f->value_counts.ids[1], 2);
        ASSERT_EQ(f->value_counts.values[1], 4);
        ASSERT_TRUE(!f->null_value_counts.is_present);
        ASSERT_EQ(f->lower_bounds.n, 1);
        ASSERT_STREQ(json_string_value(f->lower_bounds.json[0]), "a");
        ASSERT_TRUE(f->has_split_offsets && f->n_split_offsets == 2 && f->split_offsets[1] == 50);
        ASSERT_TRUE(f->has_sort_order_id && f->sort_order_id == 1);
        f = &r->data_files[1];
        ASSERT_STREQ(f->location, "file:///wh/t/data/b.orc");
        ASSERT_EQ(f->format, DATA_FILE_FORMAT_ORC);
        ASSERT_TRUE(!f->has_spec_id && !f->partition);

        /* The descriptions are part of the body the idempotency key stands for. */
        ASSERT_OK(parse(
                "ns",
                "{\"idempotency-key\": \"k\", \"data-files\": [{\"file-path\": "
                "\"/wh/t/data/a.parquet\", "
                "\"file-format\": \"parquet\", \"record-count\": 4, \"file-size-in-bytes\": 100}]}",
                &other, &e));
        ASSERT_TRUE(strcmp(r->fingerprint, other->fingerprint) != 0);
        ASSERT_CONTAINS(other->fingerprint, "\"data-files\":[{");
}

TEST(data_file_refusals_name_index_and_rule) {
        static const struct {
                const char *change, *message;
                int code;
        } cases[] = {
                { "\"record-count\": -1",
                  "'data-files'[0]: 'record-count' is required: an integer >= 0", -EINVAL },
                { "\"file-size-in-bytes\": 0",
                  "'data-files'[0]: 'file-size-in-bytes' is required: an integer > 0", -EINVAL },
                { "\"file-format\": \"csv\"",
                  "'data-files'[0]: 'file-format' 'csv' is not a data file format (parquet, avro "
                  "or orc)",
                  -EINVAL },
                { "\"content\": \"position-deletes\"",
                  "'data-files'[0]: 'content' must be \"data\"", -EINVAL },
                { "\"location\": \"/x\"",
                  "'data-files'[0]: give 'file-path' or 'location', not both", -EINVAL },
                { "\"spec-id\": \"0\"", "'data-files'[0]: 'spec-id' must be an integer >= 0",
                  -EINVAL },
                { "\"partition\": {\"b\": 1}",
                  "'data-files'[0]: 'partition' must be a list of partition values", -EINVAL },
                { "\"null-value-counts\": {\"keys\": [1], \"values\": [-2]}",
                  "'data-files'[0]: 'null-value-counts' value 0 (field id 1) is -2, counts cannot "
                  "be negative",
                  -EINVAL },
                { "\"value-counts\": {\"keys\": [1, 2], \"values\": [1]}",
                  "'data-files'[0]: 'value-counts' has 2 keys but 1 values", -EINVAL },
                { "\"column-sizes\": {\"keys\": [0], \"values\": [1]}",
                  "'data-files'[0]: 'column-sizes' key 0 must be a field id (a positive integer)",
                  -EINVAL },
                { "\"upper-bounds\": {\"keys\": [3, 3], \"values\": [1, 2]}",
                  "'data-files'[0]: 'upper-bounds' lists field id 3 twice", -EINVAL },
                { "\"lower-bounds\": [1]",
                  "'data-files'[0]: 'lower-bounds' must be an object {\"keys\"", -EINVAL },
                { "\"split-offsets\": [100]",
                  "'data-files'[0]: 'split-offsets'[0] must be an integer from 0", -EINVAL },
                { "\"first-row-id\": 5", "'data-files'[0]: 'first-row-id' must be absent",
                  -EINVAL },
                { "\"key-metadata\": \"AA\"", "'data-files'[0]: 'key-metadata' is not supported",
                  -EINVAL },
                { "\"size\": 1", "'data-files'[0]: unknown field 'size'", -EINVAL },
        };
        static const struct {
                const char *body, *message;
                int code;
        } bodies[] = {
                { "{\"idempotency-key\": \"k\", \"data-files\": []}", "'data-files' is empty",
                  -EINVAL },
                { "{\"idempotency-key\": \"k\", \"data-files\": {}}",
                  "'data-files' must be an array", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"data-files\": [1]}",
                  "'data-files'[0]: must be an object", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"data-files\": [{\"file-format\": \"avro\"}]}",
                  "'data-files'[0]: 'file-path' is required", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"data-files\": [{}, {}, {}]}",
                  "'data-files' lists 3 files, above the limit of 2 "
                  "(commit.max-data-files-per-request)",
                  -E2BIG },
                { "{\"idempotency-key\": \"k\", \"data-files\": ["
                  "{\"file-path\": \"/a\", \"file-format\": \"avro\", \"record-count\": 1, "
                  "\"file-size-in-bytes\": 1},"
                  "{\"file-path\": \"/a\", \"file-format\": \"avro\", \"record-count\": 1, "
                  "\"file-size-in-bytes\": 1}]}",
                  "'data-files'[1]: repeats the file-path of 'data-files'[0] '/a'", -EINVAL },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_(freep) char *body = data_files_body(cases[i].change);
                CommitRequest *r = NULL;
                Error e = { 0 };

                ASSERT_EQ(parse("ns", body, &r, &e), cases[i].code);
                ASSERT_TRUE(r == NULL);
                ASSERT_CONTAINS(e.message, cases[i].message);
        }
        for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
                CommitRequest *r = NULL;
                Error e = { 0 };

                ASSERT_EQ(parse("ns", bodies[i].body, &r, &e), bodies[i].code);
                ASSERT_TRUE(r == NULL);
                ASSERT_CONTAINS(e.message, bodies[i].message);
        }
}
