/* SPDX-License-Identifier: Apache-2.0 */
/* storage/s3.c through storage.h against the scripted HTTP double (tests/lib/http-double.h) on
 * the same loop: the requests it sends (method, path-style target, SigV4 headers, the signature
 * recomputed), conditional creates and the read-back of a PUT whose answer was lost, retries
 * and their bound, the mapping of answers to statuses, S3 error documents, bodies kept as
 * stored, listings across pages, tails. tests/integration/test_s3.py covers a real store. */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>
#include <uv.h>

#include "http-double.h"
#include "storage/storage.h"
#include "test.h"

#define AKID "AKIDTEST"
#define SECRET "s3cr3t/key+x"
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define HELLO_SHA256 "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
#define SIGNED_AUTH                                                                                \
        "Authorization: AWS4-HMAC-SHA256 Credential=" AKID "/*/us-east-1/s3/aws4_request, "        \
        "SignedHeaders=*, Signature=*"

/* Every request is signed and says what its payload hashes to. */
static const char *const SIGNED_EMPTY[] = {
        SIGNED_AUTH,
        "x-amz-date: [0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z",
        "x-amz-content-sha256: " EMPTY_SHA256,
        "!If-None-Match",
        "!Accept-Encoding",
        NULL,
};
static const char *const PUT_HELLO[] = {
        SIGNED_AUTH,
        "x-amz-content-sha256: " HELLO_SHA256,
        "Content-Type: application/octet-stream",
        "!If-None-Match",
        NULL,
};
static const char *const CREATE_HELLO[] = {
        SIGNED_AUTH,
        "x-amz-content-sha256: " HELLO_SHA256,
        "If-None-Match: [*]",
        NULL,
};

typedef struct Fixture {
        uv_loop_t loop;
        HttpDouble *d;
        StorageConfig config;
        Storage *storage;
} Fixture;

/* What one operation answered (copied out of the callback). */
typedef struct Outcome {
        unsigned calls;
        int status;
        char data[4096];
        size_t data_len;
        uint64_t size;
        char names[2048]; /* names joined by '\n' */
        size_t n_names;
        bool is_truncated;
        unsigned n_requests;
        char message[1024];
} Outcome;

static void on_result(StorageResult *result, void *userdata) {
        Outcome *o = userdata;

        o->calls++;
        o->status = result->status;
        o->size = result->size;
        o->n_requests = result->n_requests;
        o->is_truncated = result->is_truncated;
        o->n_names = result->n_names;
        ASSERT_TRUE(result->data.len <= sizeof(o->data));
        if (result->data.len > 0)
                memcpy(o->data, result->data.data, result->data.len);
        o->data_len = result->data.len;
        for (size_t i = 0; i < result->n_names; i++) {
                size_t n = strlen(o->names);

                (void)snprintf(o->names + n, sizeof(o->names) - n, "%s%s", i ? "\n" : "",
                               result->names[i]);
        }
        (void)snprintf(o->message, sizeof(o->message), "%s", result->error.message);
}

static void fixture_init_with(Fixture *f, uint32_t max_attempts, uint32_t request_timeout_ms) {
        *f = (Fixture){ 0 };
        ASSERT_OK(uv_loop_init(&f->loop));
        f->d = http_double_new(&f->loop, /* max_body_bytes= */ 0, /* keep_alive= */ false);
        f->config.probe_interval_ms = 3600 * 1000;
        f->config.s3 = (S3Config){
                .endpoint = (char *)http_double_url(f->d),
                .path_style_access = true,
                .access_key_id = (char *)AKID,
                .secret_access_key = (char *)SECRET,
                .region = (char *)"us-east-1",
                .connect_timeout_ms = 2000,
                .request_timeout_ms = request_timeout_ms,
                .max_connections = 4,
                .max_attempts = max_attempts,
                .min_backoff_ms = 1,
                .max_backoff_ms = 4,
                .max_concurrent_requests = 4,
        };
        ASSERT_OK(storage_new(&f->loop, &f->config, /* metrics= */ NULL, &f->storage));
}

static void fixture_init(Fixture *f) {
        fixture_init_with(f, /* max_attempts= */ 3, /* request_timeout_ms= */ 5000);
}

static void on_closed(void *userdata) {
        (*(unsigned *)userdata)++;
}

static void fixture_done(Fixture *f) {
        unsigned closed = 0;

        http_double_assert_done(f->d);
        storage_close(f->storage, on_closed, &closed);
        http_double_close(f->d);
        (void)uv_run(&f->loop, UV_RUN_DEFAULT);
        ASSERT_EQ(closed, 1);
        f->storage = storage_free(f->storage);
        f->d = http_double_free(f->d);
        ASSERT_EQ(uv_loop_close(&f->loop), 0);
}

static void wait_for(Fixture *f, Outcome *o) {
        ASSERT_EQ(o->calls, 0); /* never from inside the call */
        while (o->calls == 0)
                ASSERT_TRUE(uv_run(&f->loop, UV_RUN_ONCE) != 0 || o->calls > 0);
        ASSERT_EQ(o->calls, 1);
        /* A request off the script explains whatever the outcome was. */
        if (http_double_failure(f->d))
                TEST_FAIL("http-double: %s", http_double_failure(f->d));
}

static Outcome do_read(Fixture *f, const char *location, uint64_t max_bytes) {
        Outcome o = { 0 };
        Error e = { 0 };

        ASSERT_OK(storage_read(f->storage, NULL, location, max_bytes, on_result, &o, &e));
        wait_for(f, &o);
        return o;
}

static Outcome do_write(Fixture *f, const char *location, const char *data, unsigned flags) {
        Outcome o = { 0 };
        Error e = { 0 };

        ASSERT_OK(storage_write(f->storage, NULL, location, slice_make(data, strlen(data)), flags,
                                on_result, &o, &e));
        wait_for(f, &o);
        return o;
}

static Outcome do_size(Fixture *f, const char *location) {
        Outcome o = { 0 };
        Error e = { 0 };

        ASSERT_OK(storage_size(f->storage, NULL, location, on_result, &o, &e));
        wait_for(f, &o);
        return o;
}

static Outcome do_delete(Fixture *f, const char *location) {
        Outcome o = { 0 };
        Error e = { 0 };

        ASSERT_OK(storage_delete(f->storage, NULL, location, on_result, &o, &e));
        wait_for(f, &o);
        return o;
}

static Outcome do_list(Fixture *f, const char *prefix, size_t max_names) {
        Outcome o = { 0 };
        Error e = { 0 };

        ASSERT_OK(storage_list(f->storage, NULL, prefix, max_names, on_result, &o, &e));
        wait_for(f, &o);
        return o;
}

static Outcome do_tail(Fixture *f, const char *location, uint64_t n) {
        Outcome o = { 0 };
        Error e = { 0 };

        ASSERT_OK(storage_read_tail(f->storage, NULL, location, n, on_result, &o, &e));
        wait_for(f, &o);
        return o;
}

static const char *request_body(const Fixture *f, size_t i) {
        return (const char *)http_double_request(f->d, i)->body;
}

TEST(put_get_head_delete) {
        static const HttpDoubleStep steps[] = {
                { .method = "PUT", .target = "/bkt/wh/t/a%20b%2Bc.avro", .headers = PUT_HELLO },
                { .method = "GET",
                  .target = "/bkt/wh/t/a%20b%2Bc.avro",
                  .headers = SIGNED_EMPTY,
                  .body = "hello" },
                { .method = "HEAD",
                  .target = "/bkt/wh/t/a%20b%2Bc.avro",
                  .headers = SIGNED_EMPTY,
                  .body = "hello" },
                { .method = "DELETE",
                  .target = "/bkt/wh/t/a%20b%2Bc.avro",
                  .headers = SIGNED_EMPTY,
                  .status = 204 },
                /* Deleting what is not there is done too. */
                { .method = "DELETE",
                  .target = "/bkt/wh/t/gone",
                  .status = 404,
                  .body = "<Error><Code>NoSuchKey</Code></Error>" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));

        o = do_write(&f, "s3://bkt/wh/t/a b+c.avro", "hello", /* flags= */ 0);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_STREQ(request_body(&f, 0), "hello");
        ASSERT_EQ(http_double_request(f.d, 0)->body_len, 5);

        o = do_read(&f, "s3://bkt/wh/t/a b+c.avro", 100);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.data_len, 5);
        ASSERT_TRUE(memcmp(o.data, "hello", 5) == 0);
        ASSERT_EQ(http_double_request(f.d, 1)->body_len, 0);

        o = do_size(&f, "s3a://bkt/wh/t/a b+c.avro");
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.size, 5);

        ASSERT_EQ(do_delete(&f, "s3://bkt/wh/t/a b+c.avro").status, 0);
        ASSERT_EQ(do_delete(&f, "s3://bkt/wh/t/gone").status, 0);
        ASSERT_EQ(http_double_n_requests(f.d), 5);
        ASSERT_EQ(storage_requests_sent(f.storage), 5);
        fixture_done(&f);
}

/* ---- SigV4, recomputed ---------------------------------------------------------------------- */

static void hex_of(const unsigned char *md, size_t n, char *out) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                out[2 * i] = digits[md[i] >> 4];
                out[2 * i + 1] = digits[md[i] & 15];
        }
        out[2 * n] = 0;
}

static void sha256_hex(const void *data, size_t len, char out[65]) {
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned n = 0;

        ASSERT_TRUE(EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) == 1 && n == 32);
        hex_of(md, 32, out);
}

static void hmac(const unsigned char *key, size_t key_len, const char *data,
                 unsigned char out[32]) {
        unsigned n = 0;

        ASSERT_TRUE(HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)data, strlen(data),
                         out, &n) != NULL &&
                    n == 32);
}

/* The value of `field=` in an Authorization header, up to the next ',' (or its end). */
static void auth_field(const char *auth, const char *field, char *out, size_t size) {
        const char *p = strstr(auth, field), *end;

        ASSERT_TRUE(p);
        p += strlen(field);
        end = strchr(p, ',');
        if (!end)
                end = p + strlen(p);
        ASSERT_TRUE((size_t)(end - p) < size);
        memcpy(out, p, (size_t)(end - p));
        out[end - p] = 0;
}

/* Recomputes the AWS Signature V4 of a recorded request from its method, target, the headers
 * its SignedHeaders name, its body and the secret, as a store does, and compares. */
static void assert_sigv4_valid(const HttpDoubleRequest *req, const char *secret) {
        const char *auth = http_double_request_header(req, "Authorization");
        const char *amz_date = http_double_request_header(req, "x-amz-date");
        const char *query = strchr(req->target, '?');
        char credential[256], signed_headers[512], signature[128], scope[256], body_sha[65];
        char canonical_sha[65], expected[65];
        unsigned char k[32], k2[32];
        char key[128], *canonical = NULL, *to_sign = NULL;
        size_t canonical_len = 0, to_sign_len = 0;
        FILE *c;

        ASSERT_TRUE(auth && amz_date);
        auth_field(auth, "Credential=", credential, sizeof(credential));
        auth_field(auth, "SignedHeaders=", signed_headers, sizeof(signed_headers));
        auth_field(auth, "Signature=", signature, sizeof(signature));
        /* Credential = <key id>/<scope>, and the scope's date is x-amz-date's */
        ASSERT_TRUE(strncmp(credential, AKID "/", strlen(AKID) + 1) == 0);
        (void)snprintf(scope, sizeof(scope), "%s", credential + strlen(AKID) + 1);
        ASSERT_TRUE(strncmp(scope, amz_date, 8) == 0);
        ASSERT_CONTAINS(signed_headers, "host");
        ASSERT_CONTAINS(signed_headers, "x-amz-content-sha256");
        ASSERT_CONTAINS(signed_headers, "x-amz-date");

        /* The payload hash the header claims is the body's. */
        sha256_hex(req->body, req->body_len, body_sha);
        ASSERT_STREQ(http_double_request_header(req, "x-amz-content-sha256"), body_sha);

        c = open_memstream(&canonical, &canonical_len);
        ASSERT_TRUE(c);
        fprintf(c, "%s\n%.*s\n%s\n", req->method,
                (int)(query ? (size_t)(query - req->target) : strlen(req->target)), req->target,
                query ? query + 1 : "");
        for (const char *name = signed_headers; *name;) {
                const char *semi = strchr(name, ';');
                size_t n = semi ? (size_t)(semi - name) : strlen(name);
                char header[128];
                const char *value;

                ASSERT_TRUE(n < sizeof(header));
                memcpy(header, name, n);
                header[n] = 0;
                value = http_double_request_header(req, header);
                if (!value)
                        TEST_FAIL("signed header '%s' was not sent", header);
                fprintf(c, "%s:%s\n", header, value);
                name += n + (semi ? 1 : 0);
        }
        fprintf(c, "\n%s\n%s", signed_headers, body_sha);
        ASSERT_EQ(fclose(c), 0);
        sha256_hex(canonical, canonical_len, canonical_sha);

        c = open_memstream(&to_sign, &to_sign_len);
        ASSERT_TRUE(c);
        fprintf(c, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amz_date, scope, canonical_sha);
        ASSERT_EQ(fclose(c), 0);

        /* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" secret, date), region), "s3"), "aws4_request") */
        (void)snprintf(key, sizeof(key), "AWS4%s", secret);
        {
                char date[9];

                memcpy(date, amz_date, 8);
                date[8] = 0;
                hmac((const unsigned char *)key, strlen(key), date, k);
        }
        hmac(k, 32, "us-east-1", k2);
        hmac(k2, 32, "s3", k);
        hmac(k, 32, "aws4_request", k2);
        {
                unsigned char sig[32];

                hmac(k2, 32, to_sign, sig);
                hex_of(sig, 32, expected);
        }
        if (strcmp(expected, signature) != 0)
                TEST_FAIL("signature %s, recomputed %s over:\n%s", signature, expected, canonical);
        free(canonical);
        free(to_sign);
}

TEST(sigv4_signatures_verify) {
        static const char *const token[] = {
                "x-amz-security-token: session-token-1",
                NULL,
        };
        static const char list_page[] = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                        "</ListBucketResult>";
        static const HttpDoubleStep steps[] = {
                { .method = "PUT", .target = "/bkt/wh/t/m.avro", .headers = CREATE_HELLO },
                { .method = "GET",
                  .target = "/bkt/?list-type=2&max-keys=1000&prefix=wh%2Ft%2Fv",
                  .headers = token,
                  .body = list_page },
        };
        Fixture f;
        Outcome o, l = { 0 };
        Error e = { 0 };

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_write(&f, "s3://bkt/wh/t/m.avro", "hello", STORAGE_WRITE_IF_ABSENT);
        ASSERT_EQ(o.status, 0);
        assert_sigv4_valid(http_double_request(f.d, 0), SECRET);

        /* A listing's canonical query, signed with a session token too. */
        f.config.s3.session_token = (char *)"session-token-1";
        ASSERT_OK(storage_list(f.storage, NULL, "s3://bkt/wh/t/v", 10, on_result, &l, &e));
        wait_for(&f, &l);
        ASSERT_EQ(l.status, 0);
        assert_sigv4_valid(http_double_request(f.d, 1), SECRET);
        ASSERT_CONTAINS(http_double_request_header(http_double_request(f.d, 1), "Authorization"),
                        "x-amz-security-token");
        fixture_done(&f);
}

/* ---- conditional creates -------------------------------------------------------------------- */

TEST(conditional_create_of_an_existing_object_is_eexist) {
        static const HttpDoubleStep steps[] = {
                { .method = "PUT",
                  .target = "/bkt/wh/v2.json",
                  .headers = CREATE_HELLO,
                  .status = 412,
                  .body = "<Error><Code>PreconditionFailed</Code><Message>At least one of the "
                          "pre-conditions you specified did not hold</Message></Error>" },
                /* Some stores answer a race of two creates 409 ConditionalRequestConflict. */
                { .method = "PUT",
                  .target = "/bkt/wh/v3.json",
                  .headers = CREATE_HELLO,
                  .status = 409,
                  .body = "<Error><Code>ConditionalRequestConflict</Code></Error>" },
                /* Without the flag a 409 is the store refusing something else. */
                { .method = "PUT",
                  .target = "/bkt/wh/v4.json",
                  .headers = PUT_HELLO,
                  .status = 409,
                  .body = "<Error><Code>OperationAborted</Code></Error>" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_write(&f, "s3://bkt/wh/v2.json", "hello", STORAGE_WRITE_IF_ABSENT);
        ASSERT_EQ(o.status, -EEXIST);
        /* Nothing of ours went out before: no read-back, one round trip. */
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_CONTAINS(o.message, "already exists");
        ASSERT_CONTAINS(o.message, "PreconditionFailed: At least one of the pre-conditions");
        o = do_write(&f, "s3://bkt/wh/v3.json", "hello", STORAGE_WRITE_IF_ABSENT);
        ASSERT_EQ(o.status, -EEXIST);
        ASSERT_EQ(o.n_requests, 1);
        o = do_write(&f, "s3://bkt/wh/v4.json", "hello", /* flags= */ 0);
        ASSERT_EQ(o.status, -EREMOTEIO);
        ASSERT_CONTAINS(o.message, "OperationAborted");
        /* A failed write does not make the storage unwritable when the store refused it. */
        ASSERT_TRUE(storage_is_writable(f.storage, NULL));
        fixture_done(&f);
}

/* The answer to a conditional PUT is lost; the retry finds the object (412): it is read back,
 * and it is ours when it holds our bytes. */
static void lost_answer_case(HttpDoubleStep first, const HttpDoubleStep *read_back, int expected,
                             const char *expected_message) {
        static const char *const get_back[] = {
                SIGNED_AUTH, "x-amz-content-sha256: " EMPTY_SHA256, "!If-None-Match", "!Range",
                NULL,
        };
        HttpDoubleStep steps[] = {
                first,
                { .method = "PUT",
                  .target = "/bkt/wh/v2.json",
                  .headers = CREATE_HELLO,
                  .status = 412,
                  .body = "<Error><Code>PreconditionFailed</Code></Error>" },
                *read_back,
        };
        Fixture f;
        Outcome o;

        steps[2].method = "GET";
        steps[2].target = "/bkt/wh/v2.json";
        steps[2].headers = get_back;
        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_write(&f, "s3://bkt/wh/v2.json", "hello", STORAGE_WRITE_IF_ABSENT);
        ASSERT_EQ(o.status, expected);
        ASSERT_EQ(o.n_requests, 3);
        if (expected_message)
                ASSERT_CONTAINS(o.message, expected_message);
        /* The same bytes went out twice, each time as a create. */
        ASSERT_STREQ(request_body(&f, 0), "hello");
        ASSERT_STREQ(request_body(&f, 1), "hello");
        fixture_done(&f);
}

static const HttpDoubleStep PUT_DROPPED = { .method = "PUT",
                                            .target = "/bkt/wh/v2.json",
                                            .headers = CREATE_HELLO,
                                            .fault = HTTP_DOUBLE_CLOSE };

TEST(lost_put_answer_read_back_finds_our_bytes) {
        lost_answer_case(PUT_DROPPED, &(HttpDoubleStep){ .echo_last_put = true }, 0, NULL);
}

TEST(lost_put_answer_read_back_finds_other_bytes) {
        lost_answer_case(PUT_DROPPED, &(HttpDoubleStep){ .body = "hellO" }, -EEXIST,
                         "created by another writer");
}

TEST(lost_put_answer_read_back_finds_a_longer_object) {
        lost_answer_case(PUT_DROPPED, &(HttpDoubleStep){ .body = "hello, world" }, -EEXIST,
                         "created by another writer");
}

TEST(lost_put_answer_read_back_finds_nothing) {
        lost_answer_case(PUT_DROPPED,
                         &(HttpDoubleStep){ .status = 404,
                                            .body = "<Error><Code>NoSuchKey</Code></Error>" },
                         -EAGAIN, "is gone now");
}

/* A 5xx after the body went out may have landed too. */
TEST(put_answered_503_then_412_is_read_back) {
        lost_answer_case((HttpDoubleStep){ .method = "PUT",
                                           .target = "/bkt/wh/v2.json",
                                           .headers = CREATE_HELLO,
                                           .status = 503,
                                           .body = "<Error><Code>SlowDown</Code></Error>" },
                         &(HttpDoubleStep){ .echo_last_put = true }, 0, NULL);
}

/* ---- retries -------------------------------------------------------------------------------- */

TEST(transient_answers_are_retried) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET",
                  .target = "/bkt/k",
                  .status = 500,
                  .body = "<Error><Code>InternalError</Code></Error>" },
                { .method = "GET",
                  .target = "/bkt/k",
                  .status = 503,
                  .body = "<Error><Code>SlowDown</Code><Message>Reduce your request "
                          "rate.</Message></Error>" },
                /* S3 answers an idle upload 400 RequestTimeout: retried by its code, as
                 * SlowDown is whatever the status says. */
                { .method = "GET",
                  .target = "/bkt/k",
                  .status = 400,
                  .body = "<Error><Code>RequestTimeout</Code></Error>" },
                { .method = "GET",
                  .target = "/bkt/k",
                  .status = 400,
                  .body = "<Error><Code>SlowDown</Code></Error>" },
                { .method = "GET", .target = "/bkt/k", .headers = SIGNED_EMPTY, .body = "data" },
        };
        Fixture f;
        Outcome o;

        fixture_init_with(&f, /* max_attempts= */ 5, 5000);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/k", 100);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 5);
        ASSERT_EQ(o.data_len, 4);
        ASSERT_TRUE(memcmp(o.data, "data", 4) == 0);
        fixture_done(&f);
}

TEST(retries_stop_at_max_attempts) {
        static const HttpDoubleStep slow = {
                .method = "PUT",
                .target = "/bkt/k",
                .status = 503,
                .body = "<Error><Code>SlowDown</Code><Message>Please reduce your request "
                        "rate.</Message></Error>"
        };
        const HttpDoubleStep steps[] = { slow, slow, slow };
        Fixture f;
        Outcome o;
        const char *reason = NULL;

        fixture_init_with(&f, /* max_attempts= */ 3, 5000);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_write(&f, "s3://bkt/k", "hello", /* flags= */ 0);
        ASSERT_EQ(o.status, -EAGAIN);
        ASSERT_EQ(o.n_requests, 3);
        ASSERT_CONTAINS(o.message, "gave up after 3 attempts");
        ASSERT_CONTAINS(o.message, "HTTP 503 SlowDown: Please reduce your request rate.");
        /* An unavailable store makes the storage unwritable (readiness says so). */
        ASSERT_TRUE(!storage_is_writable(f.storage, &reason));
        ASSERT_CONTAINS(reason, "SlowDown");
        /* The script's end: a fourth attempt would have been a failure of the double. */
        ASSERT_EQ(http_double_n_requests(f.d), 3);
        fixture_done(&f);
}

TEST(dropped_and_truncated_answers_are_retried) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET", .target = "/bkt/k", .fault = HTTP_DOUBLE_CLOSE },
                { .method = "GET",
                  .target = "/bkt/k",
                  .fault = HTTP_DOUBLE_TRUNCATE,
                  .body = "0123456789",
                  .truncate_at = 4 },
                { .method = "GET", .target = "/bkt/k", .body = "0123456789" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/k", 100);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 3);
        ASSERT_EQ(o.data_len, 10);
        ASSERT_TRUE(memcmp(o.data, "0123456789", 10) == 0);
        ASSERT_EQ(http_double_n_connections(f.d), 3);
        fixture_done(&f);
}

TEST(dropped_answers_give_up_at_max_attempts) {
        static const HttpDoubleStep drop = { .method = "HEAD",
                                             .target = "/bkt/k",
                                             .fault = HTTP_DOUBLE_CLOSE };
        const HttpDoubleStep steps[] = { drop, drop };
        Fixture f;
        Outcome o;

        fixture_init_with(&f, /* max_attempts= */ 2, 5000);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_size(&f, "s3://bkt/k");
        ASSERT_EQ(o.status, -EAGAIN);
        ASSERT_EQ(o.n_requests, 2);
        ASSERT_CONTAINS(o.message, "gave up after 2 attempts");
        fixture_done(&f);
}

/* An answer later than s3.request-timeout-ms is a failed attempt; the next one answers. */
TEST(slow_answer_times_out_and_is_retried) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET", .target = "/bkt/k", .body = "late", .delay_ms = 2000 },
                { .method = "GET", .target = "/bkt/k", .body = "soon", .delay_ms = 20 },
        };
        Fixture f;
        Outcome o;

        fixture_init_with(&f, /* max_attempts= */ 2, /* request_timeout_ms= */ 300);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/k", 100);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 2);
        ASSERT_TRUE(memcmp(o.data, "soon", 4) == 0);
        fixture_done(&f);
}

/* ---- answers mapped to statuses ------------------------------------------------------------- */

TEST(refusals_map_to_statuses) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET",
                  .target = "/bkt/missing",
                  .status = 404,
                  .body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</"
                          "Code><Message>The specified key does not exist.</Message>"
                          "<Key>missing</Key></Error>" },
                /* HEAD answers have no body: the status says it all. */
                { .method = "HEAD", .target = "/bkt/missing", .status = 404 },
                { .method = "GET",
                  .target = "/bkt/secret",
                  .status = 403,
                  .body = "<Error><Code>AccessDenied</Code><Message>Access &amp; &#34;denied&#34;"
                          "</Message></Error>" },
                { .method = "HEAD", .target = "/bkt/secret", .status = 403 },
                { .method = "GET",
                  .target = "/bkt/skewed",
                  .status = 403,
                  .body = "<Error><Code>RequestTimeTooSkewed</Code></Error>" },
                { .method = "GET",
                  .target = "/bkt/expired",
                  .status = 400,
                  .body = "<Error><Code>ExpiredToken</Code><Message>The provided token has "
                          "expired.</Message></Error>" },
                { .method = "GET",
                  .target = "/bkt/elsewhere",
                  .status = 400,
                  .body = "<Error><Code>AuthorizationHeaderMalformed</Code><Message>wrong "
                          "region</Message><Region>eu-west-1</Region></Error>" },
                /* Not XML at all: the status is all there is. */
                { .method = "GET",
                  .target = "/bkt/html",
                  .status = 400,
                  .body = "<html>bad request</html>" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/missing", 4096);
        ASSERT_EQ(o.status, -ENOENT);
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_CONTAINS(o.message, "s3://bkt/missing does not exist");
        ASSERT_CONTAINS(o.message, "GET of bucket 'bkt' key 'missing' answered HTTP 404 NoSuchKey: "
                                   "The specified key does not exist.");
        o = do_size(&f, "s3://bkt/missing");
        ASSERT_EQ(o.status, -ENOENT);
        ASSERT_CONTAINS(o.message,
                        "HEAD of bucket 'bkt' key 'missing' answered HTTP 404 NoSuchKey");
        o = do_read(&f, "s3://bkt/secret", 4096);
        ASSERT_EQ(o.status, -EACCES);
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_CONTAINS(o.message, "access denied");
        ASSERT_CONTAINS(o.message, "HTTP 403 AccessDenied: Access & \"denied\"");
        o = do_size(&f, "s3://bkt/secret");
        ASSERT_EQ(o.status, -EACCES);
        ASSERT_CONTAINS(o.message, "HTTP 403 AccessDenied");
        o = do_read(&f, "s3://bkt/skewed", 4096);
        ASSERT_EQ(o.status, -EACCES);
        ASSERT_CONTAINS(o.message, "check this machine's clock");
        o = do_read(&f, "s3://bkt/expired", 4096);
        ASSERT_EQ(o.status, -EKEYEXPIRED);
        ASSERT_CONTAINS(o.message, "the credentials expired");
        ASSERT_CONTAINS(o.message, "The provided token has expired.");
        o = do_read(&f, "s3://bkt/elsewhere", 4096);
        ASSERT_EQ(o.status, -EREMOTEIO);
        ASSERT_CONTAINS(o.message, "the bucket is in region eu-west-1");
        o = do_read(&f, "s3://bkt/html", 4096);
        ASSERT_EQ(o.status, -EREMOTEIO);
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_CONTAINS(o.message, "answered HTTP 400");
        /* No secret ever reaches a message. */
        ASSERT_TRUE(!strstr(o.message, SECRET));
        fixture_done(&f);
}

/* ---- bodies --------------------------------------------------------------------------------- */

/* gzip of "hello\n": an object stored with Content-Encoding: gzip is those bytes to every
 * Iceberg reader, so they are what we read too. */
static const char GZIP_HELLO[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xcb\x48\xcd\xc9\xc9"
                                 "\xe7\x02\x00\x20\x30\x3a\x36\x06\x00\x00\x00";

TEST(gzip_objects_are_kept_verbatim) {
        static const char *const no_decoding[] = { "!Accept-Encoding", NULL };
        static const HttpDoubleStep steps[] = {
                { .method = "GET",
                  .target = "/bkt/m.gz",
                  .headers = no_decoding,
                  .extra_headers = "Content-Encoding: gzip\r\nContent-Type: text/plain\r\n",
                  .body = GZIP_HELLO,
                  .body_len = sizeof(GZIP_HELLO) - 1 },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/m.gz", 100);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.data_len, sizeof(GZIP_HELLO) - 1);
        ASSERT_TRUE(memcmp(o.data, GZIP_HELLO, sizeof(GZIP_HELLO) - 1) == 0);
        fixture_done(&f);
}

TEST(reads_above_the_limit_fail) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET", .target = "/bkt/big", .body = "0123456789" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/big", 9);
        ASSERT_EQ(o.status, -EFBIG);
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_CONTAINS(o.message, "above the limit of 9 bytes");
        fixture_done(&f);
}

/* An error's document is read whatever the read's own limit (CURL_UV_ERROR_BODY_BYTES): a
 * read of a few bytes (a version hint, a read-back) still learns ExpiredToken or SlowDown. */
TEST(error_documents_pass_a_small_read_limit) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET",
                  .target = "/bkt/hint",
                  .status = 400,
                  .body = "<Error><Code>ExpiredToken</Code><Message>The provided token has "
                          "expired.</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>" },
                { .method = "GET",
                  .target = "/bkt/hint",
                  .status = 400,
                  .body = "<Error><Code>SlowDown</Code><Message>Please reduce your request "
                          "rate.</Message><RequestId>4442587FB7D0A2FA</RequestId></Error>" },
                { .method = "GET", .target = "/bkt/hint", .body = "12" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_read(&f, "s3://bkt/hint", 8);
        ASSERT_EQ(o.status, -EKEYEXPIRED);
        ASSERT_CONTAINS(o.message, "ExpiredToken");
        /* A 400 SlowDown is transient by its code: retried, then the object. */
        o = do_read(&f, "s3://bkt/hint", 8);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 2);
        ASSERT_EQ(o.data_len, 2);
        fixture_done(&f);
}

TEST(tails_are_suffix_ranges) {
        static const char *const range4[] = { "Range: bytes=-4", NULL };
        static const HttpDoubleStep steps[] = {
                { .method = "GET",
                  .target = "/bkt/f.parquet",
                  .headers = range4,
                  .status = 206,
                  .extra_headers = "Content-Range: bytes 6-9/10\r\n",
                  .body = "6789" },
                /* A store that ignores Range answers the whole (small) object. */
                { .method = "GET", .target = "/bkt/small", .headers = range4, .body = "ab" },
                /* An empty object has no suffix to answer with. */
                { .method = "GET", .target = "/bkt/empty", .headers = range4, .status = 416 },
                /* A 206 whose range is not the tail asked for is refused. */
                { .method = "GET",
                  .target = "/bkt/odd",
                  .headers = range4,
                  .status = 206,
                  .extra_headers = "Content-Range: bytes 2-5/10\r\n",
                  .body = "2345" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_tail(&f, "s3://bkt/f.parquet", 4);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.size, 10);
        ASSERT_EQ(o.data_len, 4);
        ASSERT_TRUE(memcmp(o.data, "6789", 4) == 0);
        o = do_tail(&f, "s3://bkt/small", 4);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.size, 2);
        ASSERT_EQ(o.data_len, 2);
        o = do_tail(&f, "s3://bkt/empty", 4);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.size, 0);
        ASSERT_EQ(o.data_len, 0);
        o = do_tail(&f, "s3://bkt/odd", 4);
        ASSERT_EQ(o.status, -EREMOTEIO);
        ASSERT_CONTAINS(o.message, "Content-Range 'bytes 2-5/10'");
        fixture_done(&f);
}

/* ---- listings ------------------------------------------------------------------------------- */

TEST(listings_follow_continuation_tokens) {
        static const char page1[] =
                "<ListBucketResult><IsTruncated>true</IsTruncated>"
                "<Contents><Key>wh/t/metadata/v1.metadata.json</Key></Contents>"
                "<Contents><Key>wh/t/metadata/v2.metadata.json</Key></Contents>"
                "<NextContinuationToken>tok/1+=</NextContinuationToken></ListBucketResult>";
        static const char page2[] =
                "<ListBucketResult><IsTruncated>false</IsTruncated>"
                "<Contents><Key>wh/t/metadata/v3.metadata.json</Key></Contents>"
                "<Contents><Key>wh/t/metadata/v4 &amp; more.json</Key></Contents>"
                "</ListBucketResult>";
        static const HttpDoubleStep steps[] = {
                /* Keys in byte order, RFC 3986 values: what libcurl 7.88 signs as written. */
                { .method = "GET",
                  .target = "/bkt/?list-type=2&max-keys=1000&prefix=wh%2Ft%2Fmetadata%2Fv",
                  .headers = SIGNED_EMPTY,
                  .body = page1 },
                { .method = "GET",
                  .target = "/bkt/?continuation-token=tok%2F1%2B%3D&list-type=2&max-keys=1000&"
                            "prefix=wh%2Ft%2Fmetadata%2Fv",
                  .headers = SIGNED_EMPTY,
                  .body = page2 },
                /* At most max_names: the page that passes it is the last asked for. */
                { .method = "GET", .body = page1 },
                /* An empty prefix is fine. */
                { .method = "GET",
                  .target = "/bkt/?list-type=2&max-keys=1000&prefix=nothing",
                  .body = "<ListBucketResult><IsTruncated>false</IsTruncated></"
                          "ListBucketResult>" },
                { .method = "GET", .status = 200, .body = "<html>not a listing</html>" },
        };
        Fixture f;
        Outcome o;

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        o = do_list(&f, "s3a://bkt/wh/t/metadata/v", 100);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 2);
        ASSERT_EQ(o.n_names, 4);
        ASSERT_TRUE(!o.is_truncated);
        ASSERT_STREQ(o.names, "s3a://bkt/wh/t/metadata/v1.metadata.json\n"
                              "s3a://bkt/wh/t/metadata/v2.metadata.json\n"
                              "s3a://bkt/wh/t/metadata/v3.metadata.json\n"
                              "s3a://bkt/wh/t/metadata/v4 & more.json");
        assert_sigv4_valid(http_double_request(f.d, 1), SECRET);

        o = do_list(&f, "s3://bkt/wh/t/metadata/v", 2);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_requests, 1);
        ASSERT_EQ(o.n_names, 2);
        ASSERT_TRUE(o.is_truncated);

        o = do_list(&f, "s3://bkt/nothing", 10);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.n_names, 0);

        o = do_list(&f, "s3://bkt/x", 10);
        ASSERT_EQ(o.status, -EREMOTEIO);
        ASSERT_CONTAINS(o.message, "unreadable ListObjectsV2 answer");
        fixture_done(&f);
}

/* ---- closing -------------------------------------------------------------------------------- */

TEST(close_cancels_operations_in_flight) {
        static const HttpDoubleStep steps[] = {
                { .method = "GET", .target = "/bkt/k", .body = "late", .delay_ms = 5000 },
        };
        Fixture f;
        Outcome o = { 0 };
        Error e = { 0 };
        unsigned closed = 0;
        uint64_t started = uv_hrtime();

        fixture_init(&f);
        http_double_script(f.d, steps, ELEMENTSOF(steps));
        ASSERT_OK(storage_read(f.storage, NULL, "s3://bkt/k", 100, on_result, &o, &e));
        while (http_double_n_requests(f.d) == 0)
                ASSERT_TRUE(uv_run(&f.loop, UV_RUN_ONCE) != 0);
        storage_close(f.storage, on_closed, &closed);
        http_double_close(f.d);
        (void)uv_run(&f.loop, UV_RUN_DEFAULT);
        ASSERT_EQ(o.calls, 1);
        ASSERT_EQ(o.status, -ECANCELED);
        ASSERT_EQ(closed, 1);
        /* Nobody waited for the slow answer. */
        ASSERT_TRUE(uv_hrtime() - started < 4000ull * 1000 * 1000);
        ASSERT_EQ(storage_read(f.storage, NULL, "s3://bkt/k", 100, on_result, &o, &e), -ESHUTDOWN);
        http_double_assert_done(f.d);
        f.storage = storage_free(f.storage);
        f.d = http_double_free(f.d);
        ASSERT_EQ(uv_loop_close(&f.loop), 0);
}
