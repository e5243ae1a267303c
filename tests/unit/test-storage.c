/* SPDX-License-Identifier: Apache-2.0 */
/* storage/: location parsing and containment (local and S3), bounded reads, no-replace writes,
 * the asynchronous interface on a real loop (local backend), S3 URLs and XML answers, and the
 * per-table settings from a catalog; reads beneath a root (symlinks out of it refused, by
 * openat2 and by the fallback walk) and tails. The S3 backend itself is tested against a scripted
 * HTTP double in test-s3.c and against a real store in tests/integration/test_s3.py. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "storage/local.h"
#include "storage/props.h"
#include "storage/roots.h"
#include "storage/s3.h"
#include "storage/s3_xml.h"
#include "storage/storage.h"
#include "test.h"

TEST(locations_map_to_normalized_paths) {
        static const struct {
                const char *location, *path;
        } ok[] = {
                { "/wh/t/m.avro", "/wh/t/m.avro" },
                { "file:/wh/t/m.avro", "/wh/t/m.avro" },
                { "file:///wh//t/./m.avro", "/wh/t/m.avro" },
        };
        Error e;

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
                _cleanup_(freep) char *p = NULL;

                ASSERT_OK(storage_path_from_location(ok[i].location, &p, &e));
                ASSERT_STREQ(p, ok[i].path);
        }
        {
                char *p = NULL;

                ASSERT_EQ(storage_path_from_location("s3://bucket/t/m.avro", &p, &e),
                          -EPROTONOSUPPORT);
                ASSERT_CONTAINS(e.message, "is not a local path");
                ASSERT_EQ(storage_path_from_location("gs://bucket/t/m.avro", &p, &e),
                          -EPROTONOSUPPORT);
                ASSERT_CONTAINS(e.message, "gs locations are not supported");
                ASSERT_CONTAINS(e.message, "s3://, s3a://, s3n://");
                ASSERT_EQ(storage_path_from_location("abfss://c@a.dfs.core.windows.net/t", &p, &e),
                          -EPROTONOSUPPORT);
                ASSERT_EQ(storage_path_from_location("hdfs://nn/t", &p, &e), -EPROTONOSUPPORT);
                ASSERT_EQ(storage_path_from_location("relative/m.avro", &p, &e), -EINVAL);
                ASSERT_EQ(storage_path_from_location("/wh/t/../../etc/passwd", &p, &e), -EINVAL);
                ASSERT_EQ(storage_path_from_location("file://host/wh", &p, &e), -EINVAL);
                ASSERT_TRUE(p == NULL);
        }
}

TEST(s3_locations_are_taken_apart_and_must_be_canonical) {
        static const struct {
                const char *location, *bucket, *key;
        } ok[] = {
                { "s3://bkt/wh/t/m.avro", "bkt", "wh/t/m.avro" },
                { "s3a://my-bucket.x/k", "my-bucket.x", "k" },
                { "s3n://bkt", "bkt", "" },
                { "s3://bkt/wh/t/", "bkt", "wh/t/" },
                { "s3://bkt/a b+c%", "bkt", "a b+c%" },
        };
        static const char *const bad[] = {
                "s3://bkt/wh//t/m.avro",
                "s3://bkt/wh/./m.avro",
                "s3://bkt/wh/../m.avro",
                "s3:///k",
                "s3://b@d/k",
                "s3://bkt/k\n",
        };
        Error e;

        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_(storage_location_deinit) StorageLocation l = { 0 };

                ASSERT_OK(storage_location_parse(ok[i].location, &l, &e));
                ASSERT_EQ(l.scheme, STORAGE_SCHEME_S3);
                ASSERT_STREQ(l.bucket, ok[i].bucket);
                ASSERT_STREQ(l.key, ok[i].key);
                ASSERT_TRUE(!storage_location_is_local(ok[i].location));
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                StorageLocation l = { 0 };

                ASSERT_EQ(storage_location_parse(bad[i], &l, &e), -EINVAL);
                ASSERT_TRUE(l.bucket == NULL);
        }
        ASSERT_TRUE(storage_location_is_local("/wh/t"));
        ASSERT_TRUE(storage_location_is_local("file:///wh/t"));
}

/* Issue 19 finding 11: in a path-style URL, libcurl folds the "/../k" of "s3://../k" into "/k",
 * which names bucket "k". */
TEST(bucket_names_follow_aws_rules) {
        static const struct {
                const char *location;
                const char *refusal; /* NULL: accepted */
        } cases[] = {
                { "s3://abc/k", NULL },
                { "s3://my.bucket-1/k", NULL },
                { "s3://a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s-t-u-v-w-x-y-z-0123456789abc/k",
                  NULL },
                /* legacy us-east-1 names (Ceph RGW's relaxed ones too), path-style only */
                { "s3://Legacy_Bucket/k", NULL },
                /* names AWS reserves for creating buckets because readers address its access
                 * point aliases, directory buckets and table buckets as buckets */
                { "s3://ap-abcdef-s3alias/k", NULL },
                { "s3://name--use1-az4--x-s3/k", NULL },
                { "s3://0a1b2c3d--table-s3/k", NULL },
                { "s3://./k", "must have 3 to 255 characters" },
                { "s3://../k", "must have 3 to 255 characters" },
                { "s3://ab/k", "must have 3 to 255 characters" },
                { "s3://.../k", "must not hold two adjacent periods" },
                { "s3://a..b/k", "must not hold two adjacent periods" },
                { "s3://.abc/k", "must begin and end with a letter or digit" },
                { "s3://abc./k", "must begin and end with a letter or digit" },
                { "s3://-abc/k", "must begin and end with a letter or digit" },
                { "s3://abc-/k", "must begin and end with a letter or digit" },
                { "s3://_abc/k", "must begin and end with a letter or digit" },
                { "s3://a%2e/k", "may hold only letters, digits, '.', '-' and '_'" },
                { "s3://b@d/k", "may hold only letters, digits, '.', '-' and '_'" },
                { "s3://192.168.5.4/k", "must not be formatted as an IP address" },
                { "s3://192.168.5.4.5/k", NULL },
                { "s3://xn--bcher-kva/k", "must not start with a prefix AWS reserves" },
                { "s3://sthree-abc/k", "must not start with a prefix AWS reserves" },
                { "s3://amzn-s3-demo-bucket/k", "must not start with a prefix AWS reserves" },
        };
        char long_name[300];

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
                Error e = { 0 };
                int r = storage_location_parse(cases[i].location, &l, &e);

                if (!cases[i].refusal) {
                        ASSERT_OK(r);
                        continue;
                }
                ASSERT_EQ(r, -EINVAL);
                ASSERT_CONTAINS(e.message, "the bucket name");
                ASSERT_CONTAINS(e.message, cases[i].refusal);
        }
        /* 255 characters, the legacy limit, and one more */
        memcpy(long_name, "s3://", 5);
        memset(long_name + 5, 'a', 256);
        (void)snprintf(long_name + 5 + 255, sizeof(long_name) - 5 - 255, "/k");
        {
                _cleanup_(storage_location_deinit) StorageLocation l = { 0 };

                ASSERT_OK(storage_location_parse(long_name, &l, NULL));
                ASSERT_EQ(strlen(l.bucket), 255);
        }
        (void)snprintf(long_name + 5 + 256, sizeof(long_name) - 5 - 256, "/k");
        ASSERT_EQ(storage_location_parse(long_name, &(StorageLocation){ 0 }, NULL), -EINVAL);
}

TEST(locations_refuse_control_characters) {
        static const char *const bad[] = {
                "/wh/t/a\nb.parquet", "file:///wh/t/\r", "s3://bkt/t/a\tb",
                "s3://bkt/t/\x7f",    "s3://bkt\n/t",    "gs://b/\x1b[2J",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                StorageLocation l = { 0 };
                Error e = { 0 };

                ASSERT_EQ(storage_location_parse(bad[i], &l, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, "holds a control character");
                /* The message quotes only what comes before it. */
                for (const char *c = e.message; *c; c++)
                        ASSERT_TRUE((unsigned char)*c >= 0x20 && *c != 0x7f);
                ASSERT_TRUE(l.path == NULL && l.bucket == NULL);
                ASSERT_TRUE(!storage_location_is_within(bad[i], "/wh"));
                ASSERT_TRUE(!storage_location_is_within(bad[i], "s3://bkt"));
        }
}

TEST(s3_containment) {
        ASSERT_TRUE(storage_location_is_within("s3://bkt/wh/t/metadata/m.avro", "s3://bkt/wh/t"));
        ASSERT_TRUE(storage_location_is_within("s3a://bkt/wh/t/m.avro", "s3://bkt/wh/t/"));
        ASSERT_TRUE(!storage_location_is_within("s3://bkt/wh/t2/m.avro", "s3://bkt/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("s3://other/wh/t/m.avro", "s3://bkt/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("s3://bkt/wh/t", "s3://bkt/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("s3://bkt/wh/t/../u/m.avro", "s3://bkt/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("s3://bkt/wh/t//m.avro", "s3://bkt/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t/m.avro", "s3://bkt/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("s3://bkt/wh/t/m.avro", "/wh/t"));
        ASSERT_TRUE(storage_location_is_within("s3://bkt/t/m.avro", "s3://bkt"));
}

TEST(s3_urls_are_path_or_virtual_hosted_and_encoded) {
        _cleanup_(buf_deinitp) Buf u;
        S3Settings path = { .endpoint = "http://127.0.0.1:9000/",
                            .region = "us-east-1",
                            .path_style_access = true };
        S3Settings virt = { .endpoint = "https://s3.example.com", .region = "eu-west-1" };
        S3Settings aws = { .region = "eu-west-1" };

        buf_init(&u, 4096);
        ASSERT_OK(s3_url_build(&path, "b", "wh/t/a b+c~%.avro", NULL, &u));
        ASSERT_STREQ(buf_str(&u), "http://127.0.0.1:9000/b/wh/t/a%20b%2Bc~%25.avro");
        u.len = 0;
        ASSERT_OK(s3_url_build(&virt, "b", "k", NULL, &u));
        ASSERT_STREQ(buf_str(&u), "https://b.s3.example.com/k");
        u.len = 0;
        ASSERT_OK(s3_url_build(&aws, "b", "k", NULL, &u));
        ASSERT_STREQ(buf_str(&u), "https://b.s3.eu-west-1.amazonaws.com/k");
        u.len = 0;
        ASSERT_OK(s3_url_build(&path, "b", "", "list-type=2&prefix=wh%2F", &u));
        ASSERT_STREQ(buf_str(&u), "http://127.0.0.1:9000/b/?list-type=2&prefix=wh%2F");
        u.len = 0;
        ASSERT_OK(s3_url_encode("a/b=c&d", false, &u));
        ASSERT_STREQ(buf_str(&u), "a%2Fb%3Dc%26d");
}

TEST(s3_error_documents) {
        static const char doc[] = "<?xml version=\"1.0\" "
                                  "encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code>"
                                  "<Message>The request signature we calculated does not match "
                                  "&amp; &#34;x&#34;</Message>"
                                  "<Resource>/b/k</Resource></Error>";
        S3XmlError e;

        ASSERT_OK(s3_xml_error_parse(slice_make(doc, strlen(doc)), &e));
        ASSERT_STREQ(e.code, "SignatureDoesNotMatch");
        ASSERT_STREQ(e.message, "The request signature we calculated does not match & \"x\"");
        ASSERT_EQ(s3_xml_error_parse(slice_make("<html>", 6), &e), -EBADMSG);
        ASSERT_EQ(s3_xml_error_parse(slice_make("<Error><Message>m</Message></Error>", 35), &e),
                  -EBADMSG);
}

TEST(s3_list_pages) {
        static const char page1[] =
                "<ListBucketResult><Name>b</Name><Prefix>wh/</Prefix><IsTruncated>true</"
                "IsTruncated>"
                "<Contents><Key>wh/a&amp;b</Key><ETag>&#34;e&#34;</ETag><Size>3</Size></Contents>"
                "<Contents><Key>wh/c</Key></Contents>"
                "<NextContinuationToken>tok/1+</NextContinuationToken></ListBucketResult>";
        static const char page2[] =
                "<ListBucketResult><IsTruncated>false</IsTruncated><KeyCount>0</KeyCount>"
                "</ListBucketResult>";
        _cleanup_(s3_xml_list_page_deinit) S3XmlListPage p = { 0 };
        S3XmlListPage q = { 0 };

        ASSERT_OK(s3_xml_list_parse(slice_make(page1, strlen(page1)), 10, &p));
        ASSERT_EQ(p.n_keys, 2);
        ASSERT_STREQ(p.keys[0], "wh/a&b");
        ASSERT_STREQ(p.keys[1], "wh/c");
        ASSERT_TRUE(p.is_truncated);
        ASSERT_STREQ(p.next_token, "tok/1+");
        ASSERT_EQ(s3_xml_list_parse(slice_make(page1, strlen(page1)), 1, &q), -E2BIG);
        ASSERT_OK(s3_xml_list_parse(slice_make(page2, strlen(page2)), 10, &q));
        ASSERT_EQ(q.n_keys, 0);
        ASSERT_TRUE(!q.is_truncated);
        s3_xml_list_page_deinit(&q);
        ASSERT_EQ(s3_xml_list_parse(slice_make("<ListBucketResult><IsTruncated>true</IsTruncated></"
                                               "ListBucketResult>",
                                               68),
                                    10, &q),
                  -EBADMSG);
}

TEST(props_from_the_catalog_override_in_order) {
        _cleanup_(json_decrefp) json_t *catalog =
                json_pack("{s:s, s:s, s:s}", "s3.endpoint", "http://cat", "uri", "x",
                          "client.region", "r1");
        _cleanup_(json_decrefp) json_t *load =
                json_pack("{s:{s:s, s:s, s:s}, s:[{s:s, s:{s:s, s:s}}, {s:s, s:{s:s, s:s, s:s}}]}",
                          "config", "s3.endpoint", "http://table", "s3.access-key-id", "TABLEKEY",
                          "s3.session-token", "tabletoken", "storage-credentials", "prefix",
                          "s3://b/", "config", "s3.access-key-id", "BUCKETKEY",
                          "s3.secret-access-key", "bucketsecret", "prefix", "s3://b/wh/t", "config",
                          "s3.access-key-id", "TKEY", "s3.secret-access-key", "tsecret",
                          "s3.session-token-expires-at-ms", "1000");
        _cleanup_(storage_props_freep) StorageProps *p = NULL;
        Error e;

        ASSERT_OK(storage_props_new(catalog, load, &p, &e));
        ASSERT_STREQ(storage_props_get(p, "s3://b/wh/t/m.avro", "s3.endpoint"), "http://table");
        ASSERT_STREQ(storage_props_get(p, "s3://b/wh/t/m.avro", "client.region"), "r1");
        /* the longest prefix wins, also for the s3a spelling */
        ASSERT_STREQ(storage_props_get(p, "s3a://b/wh/t/m.avro", "s3.access-key-id"), "TKEY");
        ASSERT_STREQ(storage_props_get(p, "s3://b/other/m.avro", "s3.access-key-id"), "BUCKETKEY");
        /* a credential entry is a whole key set: no token from the table config */
        ASSERT_TRUE(storage_props_get(p, "s3://b/other/m.avro", "s3.session-token") == NULL);
        ASSERT_STREQ(storage_props_get(p, "s3://c/k", "s3.access-key-id"), "TABLEKEY");
        ASSERT_TRUE(storage_props_get(p, "s3://c/k", "uri") == NULL);
        ASSERT_TRUE(storage_props_expire_before(p, "s3://b/wh/t/m.avro", 5000));
        ASSERT_TRUE(!storage_props_expire_before(p, "s3://b/other/m.avro", 5000));
        ASSERT_TRUE(!storage_props_expire_before(NULL, "s3://b/other/m.avro", 5000));

        {
                _cleanup_(json_decrefp) json_t *bad =
                        json_pack("{s:{s:i}}", "config", "s3.endpoint", 1);
                StorageProps *q = NULL;

                ASSERT_EQ(storage_props_new(NULL, bad, &q, &e), -EBADMSG);
                ASSERT_TRUE(q == NULL);
        }
}

/* The asynchronous interface on a real loop, with the local backend. */
typedef struct AsyncState {
        int status;
        size_t n_calls;
        uint64_t size;
        char data[64];
        size_t n_names;
} AsyncState;

static void on_done(StorageResult *result, void *userdata) {
        AsyncState *st = userdata;

        st->n_calls++;
        st->status = result->status;
        st->size = result->size;
        st->n_names = result->n_names;
        if (result->status == 0 && result->data.len < sizeof(st->data))
                memcpy(st->data, buf_str(&result->data), result->data.len + 1);
}

static void run_op(uv_loop_t *loop, AsyncState *st) {
        ASSERT_TRUE(uv_run(loop, UV_RUN_DEFAULT) == 0);
        ASSERT_EQ(st->n_calls, 1);
        st->n_calls = 0;
}

static void on_closed(void *userdata) {
        (*(int *)userdata)++;
}

static StorageRoots *roots_of(const char *list) {
        StorageRoots *r = NULL;
        Error e = { 0 };

        if (storage_roots_parse(list, &r, &e) < 0)
                TEST_FAIL("roots '%s': %s", list, e.message);
        return r;
}

TEST(async_local_operations) {
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", path[128], prefix[128];
        StorageConfig config = { .s3 = { .region = (char *)"us-east-1",
                                         .max_attempts = 1,
                                         .min_backoff_ms = 1,
                                         .max_backoff_ms = 1,
                                         .max_connections = 1,
                                         .connect_timeout_ms = 100,
                                         .request_timeout_ms = 100 } };
        uv_loop_t loop;
        Storage *s = NULL;
        AsyncState st = { 0 };
        Error e;
        int closed = 0;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "file://%s/m.avro", dir);
        snprintf(prefix, sizeof(prefix), "%s/m", dir);
        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(storage_new(&loop, &config, NULL, &s));

        ASSERT_OK(storage_write(s, NULL, path, slice_make("hello", 5), STORAGE_WRITE_IF_ABSENT,
                                on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_OK(st.status);
        ASSERT_OK(storage_write(s, NULL, path, slice_make("again", 5), STORAGE_WRITE_IF_ABSENT,
                                on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.status, -EEXIST);
        /* replacing is the filesystem catalog's business (rename), never a plain write's */
        ASSERT_EQ(storage_write(s, NULL, path, slice_make("x", 1), 0, on_done, &st, &e), -EINVAL);
        ASSERT_OK(storage_read(s, NULL, path, 100, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_OK(st.status);
        ASSERT_STREQ(st.data, "hello");
        ASSERT_OK(storage_read(s, NULL, path, 4, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.status, -EFBIG);
        ASSERT_OK(storage_size(s, NULL, path, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.size, 5);
        ASSERT_OK(storage_list(s, NULL, prefix, 10, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.n_names, 1);
        ASSERT_OK(storage_delete(s, NULL, path, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_OK(st.status);
        ASSERT_OK(storage_read(s, NULL, path, 100, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.status, -ENOENT);
        ASSERT_EQ(storage_read(s, NULL, "gs://b/k", 100, on_done, &st, &e), -EPROTONOSUPPORT);
        /* S3 without credentials anywhere: refused before anything is sent, naming the keys */
        ASSERT_EQ(storage_read(s, NULL, "s3://bkt/k", 100, on_done, &st, &e), -EACCES);
        ASSERT_CONTAINS(e.message, "s3.access-key-id");

        storage_close(s, on_closed, &closed);
        ASSERT_EQ(storage_read(s, NULL, path, 100, on_done, &st, &e), -ESHUTDOWN);
        ASSERT_TRUE(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        ASSERT_EQ(closed, 1);
        ASSERT_EQ(storage_read(s, NULL, path, 100, on_done, &st, &e), -ESHUTDOWN);
        s = storage_free(s);
        ASSERT_EQ(uv_loop_close(&loop), 0);
        ASSERT_TRUE(rmdir(dir) == 0);
}

static void run_until_called(uv_loop_t *loop, AsyncState *st) {
        while (st->n_calls == 0)
                (void)uv_run(loop, UV_RUN_ONCE);
        ASSERT_EQ(st->n_calls, 1);
        st->n_calls = 0;
}

static void on_tick(uv_timer_t *t) {
        (*(int *)t->data)++;
}

/* Runs the loop for about ms milliseconds (the health timer keeps it alive). */
static void run_for(uv_loop_t *loop, uint64_t ms) {
        uv_timer_t t;
        int fired = 0;

        ASSERT_OK(uv_timer_init(loop, &t));
        t.data = &fired;
        ASSERT_OK(uv_timer_start(&t, on_tick, ms, 0));
        while (!fired)
                (void)uv_run(loop, UV_RUN_ONCE);
        uv_close((uv_handle_t *)&t, NULL);
        (void)uv_run(loop, UV_RUN_NOWAIT);
}

/* A write the storage refuses (sysfs takes no new files, not even from root) makes the storage
 * unwritable, naming the failure; the probe into the same place keeps failing; a write that
 * succeeds anywhere makes it writable again. A write refused for the caller's own reason (the
 * object exists) says nothing about the storage. */
TEST(write_health) {
        char dir[] = "/tmp/icecommit-test-health-XXXXXX", path[128];
        StorageConfig config = { .probe_interval_ms = 100,
                                 .s3 = { .region = (char *)"us-east-1",
                                         .max_attempts = 1,
                                         .min_backoff_ms = 1,
                                         .max_backoff_ms = 1,
                                         .max_connections = 1,
                                         .connect_timeout_ms = 100,
                                         .request_timeout_ms = 100 } };
        const char *reason = NULL;
        uv_loop_t loop;
        Storage *s = NULL;
        AsyncState st = { 0 };
        Error e;
        int closed = 0;

        ASSERT_TRUE(mkdtemp(dir) != NULL);
        snprintf(path, sizeof(path), "%s/list.avro", dir);
        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(storage_new(&loop, &config, NULL, &s));
        ASSERT_TRUE(storage_is_writable(s, &reason));

        ASSERT_OK(storage_write(s, NULL, "/sys/icecommit-health-test.avro", slice_make("x", 1),
                                STORAGE_WRITE_IF_ABSENT, on_done, &st, &e));
        run_until_called(&loop, &st);
        ASSERT_TRUE(st.status == -EACCES || st.status == -EPERM || st.status == -EROFS);
        ASSERT_TRUE(!storage_is_writable(s, &reason));
        ASSERT_CONTAINS(reason, "/sys/icecommit-health-test.avro");
        run_for(&loop, 350); /* three probes into /sys, all refused */
        ASSERT_TRUE(!storage_is_writable(s, NULL));

        ASSERT_OK(storage_write(s, NULL, path, slice_make("x", 1), STORAGE_WRITE_IF_ABSENT, on_done,
                                &st, &e));
        run_until_called(&loop, &st);
        ASSERT_OK(st.status);
        ASSERT_TRUE(storage_is_writable(s, NULL));
        ASSERT_OK(storage_write(s, NULL, path, slice_make("x", 1), STORAGE_WRITE_IF_ABSENT, on_done,
                                &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.status, -EEXIST);
        ASSERT_TRUE(storage_is_writable(s, NULL));

        storage_close(s, on_closed, &closed);
        ASSERT_TRUE(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        ASSERT_EQ(closed, 1);
        s = storage_free(s);
        ASSERT_EQ(uv_loop_close(&loop), 0);
        ASSERT_TRUE(unlink(path) == 0 && rmdir(dir) == 0);
}

/* An S3 store that cannot be reached: the retries are bounded and the answer is transient. */
TEST(unreachable_store_is_transient) {
        StorageConfig config = { .s3 = { .endpoint = (char *)"http://127.0.0.1:1",
                                         .path_style_access = true,
                                         .region = (char *)"us-east-1",
                                         .access_key_id = (char *)"AK",
                                         .secret_access_key = (char *)"SK",
                                         .max_attempts = 3,
                                         .min_backoff_ms = 1,
                                         .max_backoff_ms = 2,
                                         .max_connections = 2,
                                         .connect_timeout_ms = 200,
                                         .request_timeout_ms = 500,
                                         .max_concurrent_requests = 1 } };
        uv_loop_t loop;
        Storage *s = NULL;
        AsyncState st = { 0 };
        Error e;
        int closed = 0;

        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(storage_new(&loop, &config, NULL, &s));
        ASSERT_OK(storage_read(s, NULL, "s3://bkt/k", 100, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.status, -EAGAIN);
        ASSERT_TRUE(storage_status_is_transient(st.status));
        ASSERT_EQ(storage_requests_sent(s), 3);
        storage_close(s, on_closed, &closed);
        ASSERT_TRUE(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        ASSERT_EQ(closed, 1);
        s = storage_free(s);
        ASSERT_EQ(uv_loop_close(&loop), 0);
}

TEST(containment) {
        ASSERT_TRUE(storage_location_is_within("/wh/t/metadata/m.avro", "/wh/t"));
        ASSERT_TRUE(storage_location_is_within("file:///wh/t/m.avro", "/wh/t/"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t2/m.avro", "/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t", "/wh/t"));
        ASSERT_TRUE(!storage_location_is_within("/wh/t/../u/m.avro", "/wh/t"));
}

TEST(read_write_delete) {
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", path[128];
        _cleanup_(buf_deinitp) Buf b;
        Error e;

        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/f.avro", dir);
        buf_init(&b, 100);
        ASSERT_OK(storage_local_write_new_file(path, "hello", 5, &e));
        ASSERT_EQ(storage_local_write_new_file(path, "again", 5, &e), -EEXIST);
        ASSERT_OK(storage_local_read_file(path, 100, &b, &e));
        ASSERT_EQ(b.len, 5);
        {
                uint64_t size = 0;

                ASSERT_OK(storage_local_file_size(path, &size, &e));
                ASSERT_EQ(size, 5);
                ASSERT_EQ(storage_local_file_size(dir, &size, &e), -EISDIR);
                ASSERT_CONTAINS(e.message, "is a directory");
        }
        ASSERT_TRUE(memcmp(b.data, "hello", 5) == 0);
        ASSERT_EQ(storage_local_read_file(path, 4, &b, &e), -EFBIG);
        ASSERT_CONTAINS(e.message, "above the limit");
        ASSERT_OK(storage_local_delete_file(path));
        ASSERT_OK(storage_local_delete_file(path));
        ASSERT_EQ(storage_local_read_file(path, 100, &b, &e), -ENOENT);
        ASSERT_CONTAINS(e.message, "cannot open");
        {
                uint64_t size;

                ASSERT_EQ(storage_local_file_size(path, &size, &e), -ENOENT);
                ASSERT_CONTAINS(e.message, "does not exist");
        }
        ASSERT_TRUE(rmdir(dir) == 0);
}

/* A table directory t with a data file, symlinks out of it (relative, absolute, a linked
 * directory, one to a missing file), one inside it, a FIFO and a directory; and a file outside. */
static void make_tree(const char *dir) {
        char a[256], b[256];

        (void)snprintf(a, sizeof(a), "%s/t/data", dir);
        ASSERT_TRUE(mkdir(a, 0755) == 0);
        (void)snprintf(a, sizeof(a), "%s/other", dir);
        ASSERT_TRUE(mkdir(a, 0755) == 0);
        (void)snprintf(a, sizeof(a), "%s/other/secret", dir);
        ASSERT_OK(storage_local_write_new_file(a, "secret", 6, NULL));
        (void)snprintf(a, sizeof(a), "%s/t/data/a", dir);
        ASSERT_OK(storage_local_write_new_file(a, "hello world", 11, NULL));
        (void)snprintf(a, sizeof(a), "%s/t/data/empty", dir);
        ASSERT_OK(storage_local_write_new_file(a, "", 0, NULL));
        (void)snprintf(a, sizeof(a), "%s/t/data/rel", dir);
        ASSERT_TRUE(symlink("../../other/secret", a) == 0);
        (void)snprintf(a, sizeof(a), "%s/t/data/abs", dir);
        (void)snprintf(b, sizeof(b), "%s/other/secret", dir);
        ASSERT_TRUE(symlink(b, a) == 0);
        (void)snprintf(a, sizeof(a), "%s/t/data/gone", dir);
        ASSERT_TRUE(symlink("../../other/missing", a) == 0);
        (void)snprintf(a, sizeof(a), "%s/t/ldir", dir);
        ASSERT_TRUE(symlink("../other", a) == 0);
        (void)snprintf(a, sizeof(a), "%s/t/data/in", dir);
        ASSERT_TRUE(symlink("a", a) == 0);
        (void)snprintf(a, sizeof(a), "%s/t/data/fifo", dir);
        ASSERT_TRUE(mkfifo(a, 0644) == 0);
}

static void remove_tree(const char *dir) {
        static const char *const names[] = {
                "t/data/a",  "t/data/empty", "t/data/rel",   "t/data/abs", "t/data/gone", "t/ldir",
                "t/data/in", "t/data/fifo",  "other/secret", "t/data",     "t",           "other"
        };
        char a[256];

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                (void)snprintf(a, sizeof(a), "%s/%s", dir, names[i]);
                ASSERT_TRUE(remove(a) == 0);
        }
        ASSERT_TRUE(rmdir(dir) == 0);
}

TEST(reads_beneath_a_root) {
        static const struct {
                const char *name;
                int status;
        } cases[] = {
                { "t/data/a", 0 },
                { "t/data/in", 1 },
                { "t/data/rel", -EXDEV },
                { "t/data/abs", -EXDEV },
                { "t/data/gone", -EXDEV },
                { "t/ldir/secret", -EXDEV },
                { "t/data/missing", -ENOENT },
                { "t/data/fifo", -EINVAL },
                { "t/data", -EISDIR },
                { "other/secret", -EXDEV },
                { "t", -EXDEV },
        };
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", root[128], path[256];
        Error e;

        ASSERT_TRUE(mkdtemp(dir));
        (void)snprintf(root, sizeof(root), "%s/t", dir);
        ASSERT_TRUE(mkdir(root, 0755) == 0);
        make_tree(dir);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_(buf_deinitp) Buf b;
                uint64_t size = 0;

                buf_init(&b, 100);
                int r;

                (void)snprintf(path, sizeof(path), "%s/%s", dir, cases[i].name);
                r = storage_local_read_beneath(root, path, 100, &b, &e);
                ASSERT_EQ(storage_local_size_beneath(root, path, &size, &e), r);
                if (cases[i].status == 1)
                        /* A symlink that stays inside: followed by openat2, refused by the walk
                         * (valgrind does not know openat2, so the walk runs there). */
                        ASSERT_TRUE(r == 0 || r == -EXDEV);
                else
                        ASSERT_EQ(r, cases[i].status);
                if (r == 0) {
                        ASSERT_EQ(size, 11);
                        ASSERT_STREQ(buf_str(&b), "hello world");
                }
                /* An escape never says whether its target exists, nor its size. */
                if (cases[i].status == -EXDEV)
                        ASSERT_TRUE(!strstr(e.message, "does not exist") &&
                                    !strstr(e.message, "bytes"));
        }
        /* Without a root nothing is confined (the filesystem catalog's own files). */
        {
                uint64_t size = 0;

                (void)snprintf(path, sizeof(path), "%s/t/data/abs", dir);
                ASSERT_OK(storage_local_size_beneath(/* root= */ NULL, path, &size, &e));
                ASSERT_EQ(size, 6);
        }
        remove_tree(dir);
}

TEST(open_walk_refuses_every_symlink) {
        static const struct {
                const char *relative;
                int status;
        } cases[] = {
                { "data/a", 0 },
                { "data/in", -EXDEV },
                { "data/rel", -EXDEV },
                { "data/abs", -EXDEV },
                { "ldir/secret", -EXDEV },
                { "data/missing", -ENOENT },
                { "data/../data/a", -EXDEV },
                { "data//a", -EXDEV },
        };
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", root[128];
        int root_fd;

        ASSERT_TRUE(mkdtemp(dir));
        (void)snprintf(root, sizeof(root), "%s/t", dir);
        ASSERT_TRUE(mkdir(root, 0755) == 0);
        make_tree(dir);
        root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT_TRUE(root_fd >= 0);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int fd = -1;

                ASSERT_EQ(storage_local_open_walk(root_fd, cases[i].relative, O_RDONLY | O_NONBLOCK,
                                                  &fd),
                          cases[i].status);
                if (cases[i].status == 0) {
                        char text[16] = "";

                        ASSERT_EQ(read(fd, text, sizeof(text) - 1), 11);
                        ASSERT_STREQ(text, "hello world");
                        ASSERT_TRUE(close(fd) == 0);
                }
        }
        ASSERT_TRUE(close(root_fd) == 0);
        remove_tree(dir);
}

TEST(tails) {
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", root[128], path[256], location[300];
        StorageConfig config = { .s3 = { .region = (char *)"us-east-1",
                                         .max_attempts = 1,
                                         .min_backoff_ms = 1,
                                         .max_backoff_ms = 1,
                                         .max_connections = 1,
                                         .connect_timeout_ms = 100,
                                         .request_timeout_ms = 100 } };
        _cleanup_(buf_deinitp) Buf b;
        uv_loop_t loop;
        Storage *s = NULL;
        AsyncState st = { 0 };
        uint64_t size = 0;
        int closed = 0;
        Error e;

        ASSERT_TRUE(mkdtemp(dir));
        (void)snprintf(root, sizeof(root), "%s/t", dir);
        ASSERT_TRUE(mkdir(root, 0755) == 0);
        make_tree(dir);
        buf_init(&b, 0);
        (void)snprintf(path, sizeof(path), "%s/t/data/a", dir);
        ASSERT_OK(storage_local_read_tail(root, path, 5, &size, &b, &e));
        ASSERT_EQ(size, 11);
        ASSERT_STREQ(buf_str(&b), "world");
        ASSERT_OK(storage_local_read_tail(root, path, 100, &size, &b, &e));
        ASSERT_STREQ(buf_str(&b), "hello world");
        (void)snprintf(path, sizeof(path), "%s/t/data/empty", dir);
        ASSERT_OK(storage_local_read_tail(root, path, 5, &size, &b, &e));
        ASSERT_EQ(size, 0);
        ASSERT_EQ(b.len, 0);
        (void)snprintf(path, sizeof(path), "%s/t/data/rel", dir);
        ASSERT_EQ(storage_local_read_tail(root, path, 5, &size, &b, &e), -EXDEV);

        /* Through storage.h: file: URIs, the context's root, a root the location is not under. */
        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(storage_new(&loop, &config, NULL, &s));
        storage_set_roots(s, roots_of(dir));
        (void)snprintf(location, sizeof(location), "file://%s/t/data/a", dir);
        ASSERT_OK(storage_read_tail(s, &(StorageContext){ .root = root }, location, 3, on_done, &st,
                                    &e));
        run_op(&loop, &st);
        ASSERT_OK(st.status);
        ASSERT_EQ(st.size, 11);
        ASSERT_STREQ(st.data, "rld");
        (void)snprintf(location, sizeof(location), "%s/t/data/abs", dir);
        ASSERT_OK(storage_size(s, &(StorageContext){ .root = root }, location, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.status, -EXDEV);
        (void)snprintf(location, sizeof(location), "%s/other/secret", dir);
        ASSERT_EQ(storage_read(s, &(StorageContext){ .root = root }, location, 100, on_done, &st,
                               &e),
                  -EXDEV);
        ASSERT_EQ(storage_read_tail(s, NULL, location, 0, on_done, &st, &e), -EINVAL);
        storage_close(s, on_closed, &closed);
        ASSERT_TRUE(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        ASSERT_EQ(closed, 1);
        s = storage_free(s);
        ASSERT_EQ(uv_loop_close(&loop), 0);
        remove_tree(dir);
}

/* Whether the roots contain a location; one that does not parse is within none. */
static bool roots_contain(const StorageRoots *r, const char *location) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };

        return storage_location_parse(location, &l, NULL) == 0 &&
               storage_roots_contain_parsed(r, &l);
}

/* The storage roots: a root and what lies beneath it, segment by segment, compared canonically
 * (file: URIs and plain paths, s3/s3a/s3n, "//" and "."), never a sibling that shares a prefix,
 * never "..", never another store or bucket. */
TEST(roots_contain) {
        static const struct {
                const char *roots, *location;
                bool inside;
        } cases[] = {
                { "/wh", "/wh", true },
                { "/wh", "/wh/ns/t/data/f.parquet", true },
                { "/wh/", "/wh/ns", true },
                { "/wh", "/wh2/ns/t", false },
                { "/wh", "/w", false },
                { "/wh", "/", false },
                { "/wh", "/wh/../etc/passwd", false },
                { "/wh", "/wh/ns/../../etc", false },
                { "/wh", "/wh//ns/./t", true },
                { "/wh", "file:/wh/ns/t", true },
                { "/wh", "file:///wh/ns/t", true },
                { "file:///wh", "/wh/ns/t", true },
                { "file:/wh", "/wh2", false },
                { "/wh", "file://host/wh/ns", false },
                { "/wh", "relative/wh", false },
                { "/wh", "s3://wh/ns", false },
                { "/", "/etc/passwd", true },
                { "s3://bkt/wh", "s3://bkt/wh/ns/t", true },
                { "s3://bkt/wh", "s3a://bkt/wh/ns/t", true },
                { "s3a://bkt/wh/", "s3n://bkt/wh", true },
                { "s3://bkt/wh", "s3://bkt/wh2/ns", false },
                { "s3://bkt/wh", "s3://bkt2/wh/ns", false },
                { "s3://bkt/wh", "s3://bkt/wh/../x", false },
                { "s3://bkt/wh", "s3://bkt/wh//x", false },
                { "s3://bkt/wh", "/wh/ns", false },
                { "s3://bkt", "s3://bkt/anything/at/all", true },
                { "s3://bkt/", "s3://bkt2/x", false },
                { "s3://bkt/wh", "gs://b/wh/ns", false },
                { "/wh, s3://bkt/p", "s3://bkt/p/t", true },
                { " /wh ,s3://bkt/p ", "/wh/t", true },
                { "/wh,s3://bkt/p", "s3://bkt/q/t", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(storage_roots_freep) StorageRoots *r = roots_of(cases[i].roots);

                if (roots_contain(r, cases[i].location) != cases[i].inside)
                        TEST_FAIL("roots '%s', location '%s': expected %s", cases[i].roots,
                                  cases[i].location, cases[i].inside ? "inside" : "outside");
        }
        ASSERT_TRUE(!roots_contain(/* r= */ NULL, "/wh"));
}

TEST(roots_parse) {
        static const struct {
                const char *list, *error; /* error NULL: parses; text: what it names */
        } cases[] = {
                { "/wh", "'/wh'" },
                { "file:///wh/, s3a://bkt/p/", "'/wh', 's3://bkt/p/'" },
                { "", NULL },
                { "/wh,", NULL },
                { ",/wh", NULL },
                { "/wh,,/x", NULL },
                { "wh", NULL },
                { "/wh/../etc", NULL },
                { "gs://b/p", NULL },
                { "s3://bkt/a//c", NULL },
                { "s3://bkt/../c", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(storage_roots_freep) StorageRoots *r = NULL;
                Error e = { 0 };
                int rr = storage_roots_parse(cases[i].list, &r, &e);

                if (cases[i].error) {
                        ASSERT_OK(rr);
                        ASSERT_STREQ(r->text, cases[i].error);
                } else {
                        if (rr != -EINVAL)
                                TEST_FAIL("'%s' parsed (%d), expected -EINVAL", cases[i].list, rr);
                        ASSERT_TRUE(e.message[0]);
                }
        }
}

/* A table's location and every property naming a storage location must lie within the roots;
 * the refusal names what, its value and the roots. */
TEST(roots_check_table) {
        static const struct {
                const char *location, *properties, *error; /* error NULL: within */
        } cases[] = {
                { "/wh/ns/t", "{}", NULL },
                { NULL, "{}", NULL },
                { "/wh/ns/t", "{\"write.data.path\": \"/wh/data\", \"owner\": \"/etc\"}", NULL },
                { "/etc", "{}",
                  "the location '/etc' is outside the storage roots ('/wh', "
                  "'s3://bkt/p')" },
                { "/wh2/t", "{}", "the location '/wh2/t' is outside" },
                { "hdfs://nn/wh/t", "{}",
                  "the location 'hdfs://nn/wh/t' is not a location within "
                  "the storage roots" },
                { "/wh/t", "{\"write.metadata.path\": \"/tmp/m\"}",
                  "the property write.metadata.path '/tmp/m' is outside" },
                { "/wh/t", "{\"write.data.path\": \"s3://bkt/q\"}",
                  "the property write.data.path 's3://bkt/q' is outside" },
                { "/wh/t", "{\"write.folder-storage.path\": \"/wh/../etc\"}",
                  "write.folder-storage.path '/wh/../etc' is not a location within" },
                { "/wh/t", "{\"write.object-storage.path\": \"/\"}",
                  "write.object-storage.path '/' is outside" },
                { "/wh/t", "{\"icecommit.allowed-prefixes\": \"/wh/a,,s3://bkt/p/x\"}", NULL },
                { "/wh/t", "{\"write.metadata.path\": \"\"}", NULL },
                { "/wh/t", "{\"icecommit.allowed-prefixes\": \"/wh/a,/\"}",
                  "an entry of the property icecommit.allowed-prefixes '/' is outside" },
                { "/wh/t", "{\"icecommit.allowed-prefixes\": \"/wh/a, /wh/b\"}",
                  "icecommit.allowed-prefixes ' /wh/b' is not a location within" },
        };
        _cleanup_(storage_roots_freep) StorageRoots *r = roots_of("/wh, s3://bkt/p");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_decrefp) json_t *properties =
                        json_loads(cases[i].properties, 0, NULL);
                Error e = { 0 };
                int rr;

                ASSERT_TRUE(properties);
                rr = storage_roots_check_table(r, cases[i].location, properties, &e);
                if (!cases[i].error) {
                        if (rr != 0)
                                TEST_FAIL("case %zu refused: %s", i, e.message);
                        continue;
                }
                ASSERT_EQ(rr, -EPERM);
                ASSERT_CONTAINS(e.message, cases[i].error);
        }
        {
                const char *type = NULL;
                Error e = { 0 };

                ASSERT_EQ(storage_roots_check_table(/* r= */ NULL, "/wh/t", NULL, &e), -EAGAIN);
                ASSERT_EQ(storage_roots_refuse_table(/* r= */ NULL, "/wh/t", NULL, &type, &e), 503);
                ASSERT_OK(storage_roots_refuse_table(r, "/wh/t", NULL, &type, &e));
                ASSERT_EQ(storage_roots_refuse_table(r, "/etc", NULL, &type, &e), 403);
                ASSERT_STREQ(type, "table-outside-roots");
                ASSERT_CONTAINS(e.message, "[storage] allowed-roots");
        }
}

/* What needs the right admin at creation: a property that says where files lie. */
TEST(property_steers) {
        static const struct {
                const char *key;
                bool steers;
        } cases[] = {
                { "write.data.path", true },
                { "write.metadata.path", true },
                { "write.folder-storage.path", true },
                { "write.object-storage.path", true },
                { "write.some-future.path", true },
                { "icecommit.allowed-prefixes", true },
                { "write.path", false },
                { "write..path", false },
                { "write.format.default", false },
                { "owner", false },
                { "icecommit.equality-deletes", false },
                { "path", false },
                { "write.data.path.x", false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                if (storage_roots_property_steers(cases[i].key) != cases[i].steers)
                        TEST_FAIL("'%s': expected %s", cases[i].key,
                                  cases[i].steers ? "steers" : "does not steer");
}

/* Every operation with a context (a table's file) stays within the roots, refused before any
 * I/O, whether the file exists or not; before the roots are known, retryably. Operations
 * without one (the bucket catalog's own files) are not bounded by them. */
TEST(roots_bound_every_operation_with_a_context) {
        char dir[] = "/tmp/icecommit-test-storage-XXXXXX", inside[128], outside[128], list[160];
        StorageConfig config = { .s3 = { .region = (char *)"us-east-1",
                                         .max_attempts = 1,
                                         .min_backoff_ms = 1,
                                         .max_backoff_ms = 1,
                                         .max_connections = 1,
                                         .connect_timeout_ms = 100,
                                         .request_timeout_ms = 100 } };
        StorageContext ctx = { 0 };
        uv_loop_t loop;
        Storage *s = NULL;
        AsyncState st = { 0 };
        int closed = 0;
        Error e;

        ASSERT_TRUE(mkdtemp(dir));
        (void)snprintf(inside, sizeof(inside), "%s/wh/f", dir);
        (void)snprintf(outside, sizeof(outside), "%s/wh2", dir);
        (void)snprintf(list, sizeof(list), "%s/wh", dir);
        ASSERT_TRUE(mkdir(list, 0755) == 0);
        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(storage_new(&loop, &config, NULL, &s));

        ASSERT_EQ(storage_write(s, &ctx, inside, slice_make("x", 1), STORAGE_WRITE_IF_ABSENT,
                                on_done, &st, &e),
                  -EAGAIN);
        ASSERT_TRUE(storage_status_is_transient(-EAGAIN));
        storage_set_roots(s, roots_of(list));
        ASSERT_TRUE(storage_roots(s) && strstr(storage_roots(s)->text, "/wh'"));
        ASSERT_OK(storage_write(s, &ctx, inside, slice_make("x", 1), STORAGE_WRITE_IF_ABSENT,
                                on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_OK(st.status);
        ASSERT_EQ(storage_write(s, &ctx, outside, slice_make("x", 1), STORAGE_WRITE_IF_ABSENT,
                                on_done, &st, &e),
                  -EXDEV);
        ASSERT_EQ(storage_read(s, &ctx, "/etc/passwd", 100, on_done, &st, &e), -EXDEV);
        ASSERT_TRUE(!strstr(e.message, "bytes") && !strstr(e.message, "exist"));
        ASSERT_EQ(storage_size(s, &ctx, "/etc/no-such-file", on_done, &st, &e), -EXDEV);
        ASSERT_EQ(storage_delete(s, &ctx, outside, on_done, &st, &e), -EXDEV);
        ASSERT_EQ(storage_list(s, &ctx, outside, 10, on_done, &st, &e), -EXDEV);
        ASSERT_EQ(storage_read(s, &ctx, "s3://bkt/wh/f", 100, on_done, &st, &e), -EXDEV);
        ASSERT_EQ(st.n_calls, 0);
        /* Without a context: the embedded bucket catalog's own files. */
        ASSERT_OK(storage_write(s, NULL, outside, slice_make("y", 1), STORAGE_WRITE_IF_ABSENT,
                                on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_OK(st.status);
        /* A reload: new roots for every operation from then on. */
        (void)snprintf(list, sizeof(list), "%s/wh, %s/wh2", dir, dir);
        storage_set_roots(s, roots_of(list));
        ASSERT_OK(storage_size(s, &ctx, outside, on_done, &st, &e));
        run_op(&loop, &st);
        ASSERT_EQ(st.size, 1);

        storage_close(s, on_closed, &closed);
        ASSERT_TRUE(uv_run(&loop, UV_RUN_DEFAULT) == 0);
        s = storage_free(s);
        ASSERT_EQ(uv_loop_close(&loop), 0);
        ASSERT_TRUE(unlink(inside) == 0 && unlink(outside) == 0);
        (void)snprintf(list, sizeof(list), "%s/wh", dir);
        ASSERT_TRUE(rmdir(list) == 0 && rmdir(dir) == 0);
}

TEST(content_ranges) {
        uint64_t first, last, size;

        ASSERT_OK(s3_content_range_parse("bytes 10-19/20", &first, &last, &size));
        ASSERT_EQ(first, 10);
        ASSERT_EQ(last, 19);
        ASSERT_EQ(size, 20);
        ASSERT_EQ(s3_content_range_parse("bytes 0-19/*", &first, &last, &size), -EINVAL);
        ASSERT_EQ(s3_content_range_parse("bytes 10-20/20", &first, &last, &size), -EINVAL);
        ASSERT_EQ(s3_content_range_parse("bytes 11-10/20", &first, &last, &size), -EINVAL);
        ASSERT_EQ(s3_content_range_parse("items 0-1/2", &first, &last, &size), -EINVAL);
        ASSERT_EQ(s3_content_range_parse("bytes 0-1/2x", &first, &last, &size), -EINVAL);
        ASSERT_EQ(s3_content_range_parse(NULL, &first, &last, &size), -EINVAL);
}
