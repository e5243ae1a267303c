/* SPDX-License-Identifier: Apache-2.0 */
/* catalog/bucket.c through CatalogBackend, on a real S3 client (storage/s3.c) talking to the
 * scripted HTTP double (tests/lib/http-double.h) on the same loop: the requests each call makes
 * (version hint, listing, HEAD probes, the conditional create of v<N+1>, the hint), and how the
 * store's answers become catalog outcomes: 412 a conflict, a lost answer settled by reading the
 * version back, 503 retried and then unknown (commit) or unavailable (load). The race of real
 * daemons on a real store is tests/integration/test_bucket_catalog.py. */
#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <uv.h>

#include "catalog/bucket.h"
#include "http-double.h"
#include "iceberg/table_update.h"
#include "storage/storage.h"
#include "test.h"

#define T "/bkt/wh/db/t/metadata/"
#define HINT T "version-hint.text"
#define V1 T "v1.metadata.json"
#define V2 T "v2.metadata.json"
#define V3 T "v3.metadata.json"
#define LIST_VERSIONS "/bkt/?list-type=2&max-keys=1000&prefix=wh%2Fdb%2Ft%2Fmetadata%2Fv"

static const char *const NS[] = { "db" };

static const char *const CREATE_IF_ABSENT[] = {
        "If-None-Match: [*]",
        "Authorization: AWS4-HMAC-SHA256 *",
        NULL,
};
static const char *const PLAIN_PUT[] = { "!If-None-Match", NULL };

typedef struct Fixture {
        uv_loop_t loop;
        HttpDouble *d;
        StorageConfig storage_config;
        CatalogConfig config;
        Storage *storage;
        BucketCatalog *catalog;
        char *v1; /* the text of a v1 of db.t, as the catalog would have written it */
} Fixture;

typedef struct Outcome {
        unsigned calls;
        int status;
        char message[1024];
        char error_type[128];
        json_t *body; /* owned copy */
} Outcome;

static void on_result(const CatalogResult *result, void *userdata) {
        Outcome *o = userdata;

        o->calls++;
        o->status = result->status;
        (void)snprintf(o->message, sizeof(o->message), "%s", result->message);
        (void)snprintf(o->error_type, sizeof(o->error_type), "%s", result->error_type);
        json_decref(o->body);
        o->body = result->body ? json_deep_copy(result->body) : NULL;
}

static void outcome_reset(Outcome *o) {
        json_decref(o->body);
        *o = (Outcome){ 0 };
}

static const char *CREATE =
        "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"schema-id\": 0, \"fields\": ["
        "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}]},"
        " \"properties\": {\"format-version\": \"3\"}}";

static char *v1_text(void) {
        _cleanup_(json_decrefp) json_t *request = test_json(CREATE), *md = NULL;
        Error e = { 0 };
        char *text;

        ASSERT_OK(table_update_metadata_create(request, "s3://bkt/wh/db/t", 1700000000000,
                                               "6f0c5a44-2a3f-4e4e-9d8a-3c1d2b8e7f10", &md, &e));
        text = json_dumps(md, JSON_COMPACT);
        ASSERT_TRUE(text);
        return text;
}

static void fixture_init_with(Fixture *f, uint32_t cache_tables) {
        *f = (Fixture){ 0 };
        ASSERT_OK(uv_loop_init(&f->loop));
        f->d = http_double_new(&f->loop, /* max_body_bytes= */ 0, /* keep_alive= */ false);
        f->storage_config.probe_interval_ms = 3600 * 1000;
        f->storage_config.s3 = (S3Config){
                .endpoint = (char *)http_double_url(f->d),
                .path_style_access = true,
                .access_key_id = (char *)"AKIDTEST",
                .secret_access_key = (char *)"secret",
                .region = (char *)"us-east-1",
                .connect_timeout_ms = 2000,
                .request_timeout_ms = 5000,
                .max_connections = 4,
                .max_attempts = 3,
                .min_backoff_ms = 1,
                .max_backoff_ms = 4,
                .max_concurrent_requests = 4,
        };
        ASSERT_OK(storage_new(&f->loop, &f->storage_config, /* metrics= */ NULL, &f->storage));
        f->config.warehouse = (char *)"s3://bkt/wh/";
        f->config.max_response_bytes = 1 << 20;
        f->config.cache_tables = cache_tables;
        ASSERT_OK(bucket_catalog_new(&f->loop, &f->config, f->storage, &f->catalog));
        f->v1 = v1_text();
}

/* Without a cache every call finds the latest version anew: the requests are the same each time.
 */
static void fixture_init(Fixture *f) {
        fixture_init_with(f, /* cache_tables= */ 0);
}

static void on_closed(void *userdata) {
        (*(unsigned *)userdata)++;
}

static void fixture_done(Fixture *f) {
        unsigned closed = 0;

        http_double_assert_done(f->d);
        bucket_catalog_backend.close(f->catalog, on_closed, &closed);
        storage_close(f->storage, on_closed, &closed);
        http_double_close(f->d);
        (void)uv_run(&f->loop, UV_RUN_DEFAULT);
        ASSERT_EQ(closed, 2);
        bucket_catalog_backend.free(f->catalog);
        f->storage = storage_free(f->storage);
        f->d = http_double_free(f->d);
        free(f->v1);
        ASSERT_EQ(uv_loop_close(&f->loop), 0);
}

static void wait_for(Fixture *f, Outcome *o) {
        ASSERT_EQ(o->calls, 0); /* never from inside the call */
        while (o->calls == 0)
                ASSERT_TRUE(uv_run(&f->loop, UV_RUN_ONCE) != 0 || o->calls > 0);
        ASSERT_EQ(o->calls, 1);
        if (http_double_failure(f->d))
                TEST_FAIL("http-double: %s (outcome %d: %s)", http_double_failure(f->d), o->status,
                          o->message);
}

static void load(Fixture *f, Outcome *o) {
        ASSERT_OK(bucket_catalog_backend.load_table(f->catalog, NS, 1, "t", on_result, o));
        wait_for(f, o);
}

/* An append of one snapshot to main on the metadata of `md`. */
static json_t *append_request(const json_t *md, int64_t snapshot_id, int64_t added_rows) {
        json_t *req =
                json_pack("{s:[{s:s, s:s}, {s:s, s:s, s:n}], s:[{s:s, s:{s:I, s:I, s:I, s:s, s:I, "
                          "s:I, s:{s:s}}}, {s:s, s:s, s:s, s:I}]}",
                          "requirements", "type", "assert-table-uuid", "uuid",
                          json_string_value(json_object_get(md, "table-uuid")), "type",
                          "assert-ref-snapshot-id", "ref", "main", "snapshot-id", "updates",
                          "action", "add-snapshot", "snapshot", "snapshot-id",
                          (json_int_t)snapshot_id, "sequence-number",
                          json_integer_value(json_object_get(md, "last-sequence-number")) + 1,
                          "timestamp-ms", (json_int_t)1700000001000, "manifest-list",
                          "s3://bkt/wh/db/t/metadata/snap-1.avro", "first-row-id",
                          json_integer_value(json_object_get(md, "next-row-id")), "added-rows",
                          (json_int_t)added_rows, "summary", "operation", "append", "action",
                          "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id",
                          (json_int_t)snapshot_id);

        ASSERT_TRUE(req);
        return req;
}

static void commit(Fixture *f, Outcome *o) {
        _cleanup_(json_decrefp) json_t *md = test_json(f->v1), *req = append_request(md, 11, 25);

        ASSERT_OK(bucket_catalog_backend.commit_table(f->catalog, NS, 1, "t", req,
                                                      /* idempotency_key= */ NULL, on_result, o));
        wait_for(f, o);
}

/* How every call without a cache finds v1 as the latest: the hint, no v2, v1 itself. */
static void script_find_v1(Fixture *f) {
        const HttpDoubleStep steps[] = {
                { .method = "GET", .target = HINT, .body = "1\n" },
                { .method = "HEAD", .target = V2, .status = 404 },
                { .method = "GET", .target = V1, .body = f->v1 },
        };

        http_double_script(f->d, steps, ELEMENTSOF(steps));
}

static const char *metadata_location(const Outcome *o) {
        return json_string_value(json_object_get(o->body, "metadata-location"));
}

static json_int_t metadata_integer(const Outcome *o, const char *key) {
        return json_integer_value(json_object_get(json_object_get(o->body, "metadata"), key));
}

/* ---- finding the latest version ------------------------------------------------------------- */

TEST(load_reads_the_version_the_hint_names) {
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        script_find_v1(&f);
        load(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v1.metadata.json");
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(o.body, "metadata"), "table-uuid")),
                     "6f0c5a44-2a3f-4e4e-9d8a-3c1d2b8e7f10");
        /* The catalog's own requests are signed with the daemon's keys. */
        ASSERT_CONTAINS(http_double_request_header(http_double_request(f.d, 0), "Authorization"),
                        "Credential=AKIDTEST/");
        outcome_reset(&o);
        fixture_done(&f);
}

TEST(load_steps_past_a_lagging_hint) {
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        {
                const HttpDoubleStep steps[] = {
                        { .method = "GET", .target = HINT, .body = "1" },
                        { .method = "HEAD", .target = V2, .body = f.v1 },
                        { .method = "HEAD", .target = V3, .status = 404 },
                        { .method = "GET", .target = V2, .body = f.v1 },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        load(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v2.metadata.json");
        outcome_reset(&o);
        fixture_done(&f);
}

/* No usable hint: the version files are listed, the highest is read (after a HEAD of the next). */
TEST(load_lists_versions_without_a_hint) {
        static const char page[] =
                "<ListBucketResult><IsTruncated>false</IsTruncated>"
                "<Contents><Key>wh/db/t/metadata/v1.metadata.json</Key></Contents>"
                "<Contents><Key>wh/db/t/metadata/v10.metadata.json</Key></Contents>"
                "<Contents><Key>wh/db/t/metadata/v2.metadata.json</Key></Contents>"
                "<Contents><Key>wh/db/t/metadata/v3.metadata.json.tmp</Key></Contents>"
                "<Contents><Key>wh/db/t/metadata/version-hint.text</Key></Contents>"
                "</ListBucketResult>";
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        {
                const HttpDoubleStep steps[] = {
                        { .method = "GET",
                          .target = HINT,
                          .status = 404,
                          .body = "<Error><Code>NoSuchKey</Code></Error>" },
                        { .method = "GET", .target = LIST_VERSIONS, .body = page },
                        { .method = "HEAD", .target = T "v11.metadata.json", .status = 404 },
                        { .method = "GET", .target = T "v10.metadata.json", .body = f.v1 },
                        /* A hint that is no version number is no hint either. */
                        { .method = "GET", .target = HINT, .body = "latest" },
                        { .method = "GET",
                          .target = LIST_VERSIONS,
                          .body = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                  "</ListBucketResult>" },
                        { .method = "HEAD", .target = V1, .status = 404 },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        load(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v10.metadata.json");
        outcome_reset(&o);

        /* Nothing listed, no v1: no such table. */
        load(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_NOT_FOUND);
        ASSERT_STREQ(o.error_type, "NoSuchTableException");
        ASSERT_CONTAINS(o.message, "Table does not exist: db.t");
        outcome_reset(&o);
        fixture_done(&f);
}

/* A read the store keeps failing is unavailable (safe to retry), not a missing table. */
TEST(load_on_an_unavailable_store_is_unavailable) {
        static const HttpDoubleStep slow = { .method = "GET",
                                             .target = HINT,
                                             .status = 503,
                                             .body = "<Error><Code>SlowDown</Code></Error>" };
        const HttpDoubleStep steps[] = {
                slow,
                slow,
                slow,
                { .method = "GET",
                  .target = HINT,
                  .status = 403,
                  .body = "<Error><Code>AccessDenied</Code></Error>" },
        };
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        load(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(o.message, "gave up after 3 attempts");
        outcome_reset(&o);
        load(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(o.message, "access denied");
        outcome_reset(&o);
        fixture_done(&f);
}

/* ---- commits -------------------------------------------------------------------------------- */

/* The commit's new version as it was sent: the body of request i, parsed. */
static json_t *sent_metadata(const Fixture *f, size_t i) {
        const HttpDoubleRequest *req = http_double_request(f->d, i);
        json_error_t e;
        json_t *md = json_loadb((const char *)req->body, req->body_len, 0, &e);

        if (!md)
                TEST_FAIL("request %zu is not JSON: %s", i, e.text);
        return md;
}

TEST(commit_creates_the_next_version_if_absent) {
        _cleanup_(json_decrefp) json_t *sent = NULL;
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        script_find_v1(&f);
        {
                const HttpDoubleStep steps[] = {
                        { .method = "PUT", .target = V2, .headers = CREATE_IF_ABSENT },
                        /* The hint is replaced, never created conditionally. */
                        { .method = "PUT", .target = HINT, .headers = PLAIN_PUT },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v2.metadata.json");
        ASSERT_EQ(metadata_integer(&o, "next-row-id"), 25);
        ASSERT_EQ(metadata_integer(&o, "current-snapshot-id"), 11);

        /* What was stored is what was answered, and it logs v1. */
        sent = sent_metadata(&f, 3);
        ASSERT_EQ(json_integer_value(json_object_get(sent, "next-row-id")), 25);
        ASSERT_EQ(json_integer_value(json_object_get(sent, "last-sequence-number")), 1);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_array_get(json_object_get(sent, "metadata-log"),
                                                            0),
                                             "metadata-file")),
                     "s3://bkt/wh/db/t/metadata/v1.metadata.json");
        ASSERT_STREQ((const char *)http_double_request(f.d, 4)->body, "2");
        outcome_reset(&o);
        fixture_done(&f);
}

TEST(commit_losing_the_conditional_create_is_a_conflict) {
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        script_find_v1(&f);
        {
                const HttpDoubleStep steps[] = {
                        { .method = "PUT",
                          .target = V2,
                          .headers = CREATE_IF_ABSENT,
                          .status = 412,
                          .body = "<Error><Code>PreconditionFailed</Code></Error>" },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_STREQ(o.error_type, "CommitFailedException");
        ASSERT_CONTAINS(o.message, "Version 2 already exists");
        ASSERT_TRUE(!o.body);
        /* No hint written for a version that is not ours. */
        ASSERT_EQ(http_double_n_requests(f.d), 4);
        outcome_reset(&o);
        fixture_done(&f);
}

/* The PUT of v2 went out and its answer was lost; the retried create finds v2 and reads it back:
 * our bytes make the commit ours, anybody else's a conflict. */
static void lost_answer_case(const HttpDoubleStep *read_back, int expected) {
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        script_find_v1(&f);
        {
                HttpDoubleStep steps[] = {
                        { .method = "PUT",
                          .target = V2,
                          .headers = CREATE_IF_ABSENT,
                          .fault = HTTP_DOUBLE_CLOSE },
                        { .method = "PUT",
                          .target = V2,
                          .headers = CREATE_IF_ABSENT,
                          .status = 412,
                          .body = "<Error><Code>PreconditionFailed</Code></Error>" },
                        *read_back,
                };

                steps[2].method = "GET";
                steps[2].target = V2;
                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        if (expected == 0) {
                const HttpDoubleStep hint = { .method = "PUT", .target = HINT, .body = NULL };

                http_double_script(f.d, &hint, 1);
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, expected);
        if (expected == 0) {
                ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v2.metadata.json");
                ASSERT_EQ(metadata_integer(&o, "next-row-id"), 25);
                ASSERT_STREQ((const char *)http_double_request(f.d, 6)->body, "2");
        } else {
                ASSERT_STREQ(o.error_type, "CommitFailedException");
                ASSERT_CONTAINS(o.message, "Version 2 already exists");
        }
        /* The retry sent the very same bytes. */
        ASSERT_EQ(http_double_request(f.d, 3)->body_len, http_double_request(f.d, 4)->body_len);
        ASSERT_TRUE(memcmp(http_double_request(f.d, 3)->body, http_double_request(f.d, 4)->body,
                           http_double_request(f.d, 3)->body_len) == 0);
        outcome_reset(&o);
        fixture_done(&f);
}

TEST(lost_answer_with_our_bytes_is_a_success) {
        lost_answer_case(&(HttpDoubleStep){ .echo_last_put = true }, 0);
}

TEST(lost_answer_with_other_bytes_is_a_conflict) {
        lost_answer_case(&(HttpDoubleStep){ .body = "{\"format-version\": 3}" },
                         CATALOG_E_CONFLICT);
}

/* 503 on the create: retried by the storage; once the retries are spent the commit may or may
 * not have landed (STATE_UNKNOWN: verify, never a permanent failure). */
TEST(commit_on_503_is_retried_then_unknown) {
        static const HttpDoubleStep slow = { .method = "PUT",
                                             .target = V2,
                                             .headers = CREATE_IF_ABSENT,
                                             .status = 503,
                                             .body = "<Error><Code>SlowDown</Code></Error>" };
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        /* One 503, then the create lands. */
        script_find_v1(&f);
        {
                const HttpDoubleStep steps[] = {
                        slow,
                        { .method = "PUT", .target = V2, .headers = CREATE_IF_ABSENT },
                        { .method = "PUT", .target = HINT, .headers = PLAIN_PUT },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v2.metadata.json");
        outcome_reset(&o);

        /* 503 on every attempt. */
        script_find_v1(&f);
        {
                const HttpDoubleStep steps[] = { slow, slow, slow };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_STATE_UNKNOWN);
        ASSERT_CONTAINS(o.message, "gave up after 3 attempts");
        ASSERT_TRUE(catalog_outcome_http_status(o.status, &(const char *){ NULL }) == 504);
        outcome_reset(&o);

        /* A refused create wrote nothing: safe to retry. */
        script_find_v1(&f);
        {
                const HttpDoubleStep steps[] = {
                        { .method = "PUT",
                          .target = V2,
                          .status = 403,
                          .body = "<Error><Code>AccessDenied</Code></Error>" },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(o.message, "access denied");
        outcome_reset(&o);
        fixture_done(&f);
}

/* With the table cached, a commit builds on the cached version after one HEAD; losing the create
 * then costs one read of the latest, not a conflict, when the request still applies. */
TEST(cached_commit_rereads_after_losing_the_create) {
        Fixture f;
        Outcome o = { 0 };

        fixture_init_with(&f, /* cache_tables= */ 8);
        script_find_v1(&f);
        load(&f, &o);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        {
                const HttpDoubleStep steps[] = {
                        /* the cached v1 is still the object it was (its size) */
                        { .method = "HEAD", .target = V1, .body = f.v1 },
                        { .method = "PUT",
                          .target = V2,
                          .headers = CREATE_IF_ABSENT,
                          .status = 412 },
                        /* another writer's v2 (here: a copy of v1) */
                        { .method = "GET", .target = HINT, .body = "2" },
                        { .method = "HEAD", .target = V3, .status = 404 },
                        { .method = "GET", .target = V2, .body = f.v1 },
                        { .method = "PUT", .target = V3, .headers = CREATE_IF_ABSENT },
                        { .method = "PUT", .target = HINT, .headers = PLAIN_PUT },
                };

                http_double_script(f.d, steps, ELEMENTSOF(steps));
        }
        commit(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v3.metadata.json");
        ASSERT_STREQ((const char *)http_double_request(f.d, 9)->body, "3");
        outcome_reset(&o);
        fixture_done(&f);
}

/* ---- namespaces and tables ------------------------------------------------------------------ */

TEST(start_namespace_and_table_creation) {
        static const char empty[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                    "</ListBucketResult>";
        static const char marker[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                     "<Contents><Key>wh/db/</Key></Contents></ListBucketResult>";
        static const char versions[] =
                "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>wh/db/t/"
                "metadata/v1.metadata.json</Key></Contents></ListBucketResult>";
        static const HttpDoubleStep steps[] = {
                /* start: one listing proves endpoint, bucket and keys */
                { .method = "GET",
                  .target = "/bkt/?list-type=2&max-keys=1000&prefix=wh%2F",
                  .body = empty },
                /* the namespace is an empty marker object, created if absent */
                { .method = "PUT", .target = "/bkt/wh/db/", .headers = CREATE_IF_ABSENT },
                { .method = "PUT",
                  .target = "/bkt/wh/db/",
                  .headers = CREATE_IF_ABSENT,
                  .status = 412 },
                /* the table: its namespace exists, it has no version yet, v1 then the hint */
                { .method = "GET",
                  .target = "/bkt/?list-type=2&max-keys=1000&prefix=wh%2Fdb%2F",
                  .body = marker },
                { .method = "GET", .target = LIST_VERSIONS, .body = empty },
                { .method = "PUT", .target = V1, .headers = CREATE_IF_ABSENT },
                { .method = "PUT", .target = HINT, .headers = PLAIN_PUT },
                /* again: v1 is there now */
                { .method = "GET",
                  .target = "/bkt/?list-type=2&max-keys=1000&prefix=wh%2Fdb%2F",
                  .body = marker },
                { .method = "GET", .target = LIST_VERSIONS, .body = versions },
        };
        _cleanup_(json_decrefp) json_t *create = test_json(CREATE), *sent = NULL;
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        ASSERT_TRUE(!bucket_catalog_backend.is_ready(f.catalog));
        ASSERT_OK(bucket_catalog_backend.start(f.catalog, on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_TRUE(bucket_catalog_backend.is_ready(f.catalog));
        outcome_reset(&o);

        ASSERT_OK(bucket_catalog_backend.create_namespace(f.catalog, NS, 1, /* properties= */ NULL,
                                                          on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(http_double_request(f.d, 1)->body_len, 0);
        outcome_reset(&o);
        ASSERT_OK(bucket_catalog_backend.create_namespace(f.catalog, NS, 1, /* properties= */ NULL,
                                                          on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_STREQ(o.error_type, "AlreadyExistsException");
        outcome_reset(&o);

        ASSERT_OK(
                bucket_catalog_backend.create_table(f.catalog, NS, 1, "t", create, on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_STREQ(metadata_location(&o), "s3://bkt/wh/db/t/metadata/v1.metadata.json");
        sent = sent_metadata(&f, 5);
        ASSERT_STREQ(json_string_value(json_object_get(sent, "location")), "s3://bkt/wh/db/t");
        ASSERT_EQ(json_integer_value(json_object_get(sent, "format-version")), 3);
        ASSERT_STREQ((const char *)http_double_request(f.d, 6)->body, "1");
        outcome_reset(&o);

        /* A version file listed: the table exists, and nothing is written. */
        ASSERT_OK(
                bucket_catalog_backend.create_table(f.catalog, NS, 1, "t", create, on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_STREQ(o.error_type, "AlreadyExistsException");
        ASSERT_CONTAINS(o.message, "Table already exists: db.t");
        outcome_reset(&o);
        fixture_done(&f);
}
