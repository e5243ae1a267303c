/* SPDX-License-Identifier: Apache-2.0 */
/* writer/request.c: every refusal names the field and the rule; the fingerprint decides what
 * "the same request" is for idempotency. */
#include <errno.h>

#include "test.h"
#include "writer/request.h"

static const CommitRequestLimits limits = { .max_manifests = 3 };

static int parse(const char *ns, const char *body, CommitRequest **ret, Error *e) {
        return commit_request_parse(ns, "events", slice_from_str(body), &limits, ret, e);
}

TEST(valid_request) {
        _cleanup_(commit_request_freep) CommitRequest *r = NULL;
        Error e;

        ASSERT_OK(parse("analytics\x1fweb", "{\"idempotency-key\": \"job-1:part.2_x\", "
                        "\"staged-manifests\": [\"/wh/m1.avro\", \"file:///wh/m2.avro\"], "
                        "\"snapshot-properties\": {\"job\": \"1\"}}", &r, &e));
        ASSERT_EQ(r->target.n_namespace, 2);
        ASSERT_STREQ(r->target.namespace[0], "analytics");
        ASSERT_STREQ(r->target.namespace[1], "web");
        ASSERT_STREQ(r->branch, "main");
        ASSERT_EQ(r->n_manifests, 2);
        ASSERT_STREQ(r->manifests[1], "file:///wh/m2.avro");
        ASSERT_STREQ(r->queue_name, "analytics\x1fweb\x1f" "events@main");
}

TEST(fingerprint_is_canonical) {
        _cleanup_(commit_request_freep) CommitRequest *a = NULL, *b = NULL, *c = NULL;

        ASSERT_OK(parse("ns", "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], "
                        "\"snapshot-properties\": {\"a\": \"1\", \"b\": \"2\"}}", &a, NULL));
        ASSERT_OK(parse("ns", "{\"snapshot-properties\": {\"b\": \"2\", \"a\": \"1\"}, "
                        "\"staged-manifests\": [\"/m\"], \"idempotency-key\": \"k\"}", &b, NULL));
        ASSERT_OK(parse("ns", "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"branch\": \"dev\"}",
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
                { "{\"idempotency-key\": \"a,b\", \"staged-manifests\": [\"/m\"]}", "'idempotency-key' is required", -EINVAL },
                { "{\"idempotency-key\": \"k\"}", "'staged-manifests' must be an array", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": []}", "'staged-manifests' is empty", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\", \"/m\"]}", "repeats '/m'", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [1]}", "'staged-manifests'[0] must be a location", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/a\",\"/b\",\"/c\",\"/d\"]}", "above the limit of 3", -E2BIG },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"snapshot-properties\": {\"operation\": \"delete\"}}",
                  "'snapshot-properties'.'operation' is reserved", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"snapshot-properties\": {\"n\": 1}}",
                  "'snapshot-properties'.'n' must be a string", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"branch\": \"\"}", "'branch' must be", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"], \"extra\": 1}", "unknown field 'extra'", -EINVAL },
                { "{\"idempotency-key\": \"k\", \"idempotency-key\": \"j\", \"staged-manifests\": [\"/m\"]}", "duplicate", -EINVAL },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                CommitRequest *r = NULL;
                Error e = {};

                ASSERT_EQ(parse("ns", cases[i].body, &r, &e), cases[i].code);
                ASSERT_TRUE(r == NULL);
                ASSERT_CONTAINS(e.message, cases[i].message);
        }
}

TEST(namespace_levels_are_checked) {
        CommitRequest *r = NULL;
        Error e;

        ASSERT_EQ(parse("a\x1f\x1f" "b", "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"]}", &r, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "namespace level 1 is empty");
        ASSERT_TRUE(commit_key_is_valid("A-z_0.9:x"));
        ASSERT_TRUE(!commit_key_is_valid(""));
        ASSERT_TRUE(!commit_key_is_valid("has space"));
}

TEST(locations_may_be_long_names_must_be_utf8) {
        _cleanup_(commit_request_freep) CommitRequest *r = NULL;
        char body[1024], location[301];
        CommitRequest *bad = NULL;
        Error e;

        memset(location, 'a', sizeof(location) - 1);
        location[0] = '/';
        location[sizeof(location) - 1] = 0;
        snprintf(body, sizeof(body), "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"%s\"]}", location);
        ASSERT_OK(parse("ns", body, &r, &e));
        ASSERT_STREQ(r->manifests[0], location);

        ASSERT_EQ(commit_request_parse("ns", "e\xba" "vents", slice_from_str("{}"), &limits, &bad, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "not UTF-8");
        ASSERT_EQ(parse("n\xc3", "{\"idempotency-key\": \"k\", \"staged-manifests\": [\"/m\"]}", &bad, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "namespace level 0 is not UTF-8");
}
