/* SPDX-License-Identifier: Apache-2.0 */
/* catalog/: pure tests of paths, encodings, parsers and the outcome table; transport tests
 * against a scripted HTTP peer on loopback (lost answers, timeouts, 401, oversize bodies the
 * real server will not produce on demand); and, with ICECOMMIT_TEST_CATALOG_URI set, the real
 * Apache Iceberg REST catalog (tests/peers/catalog-start.sh). Every loop runs to the end. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

#include "catalog/client.h"
#include "catalog/rest.h"
#include "test.h"
#include "util/buf.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static CatalogConfig test_config(const char *uri) {
        return (CatalogConfig){
                .type = (char *)"rest",
                .uri = (char *)uri,
                .scope = (char *)"catalog",
                .tls_verify = true,
                .connect_timeout_ms = 2000,
                .request_timeout_ms = 20000,
                .max_connections = 4,
                .max_response_bytes = 64u << 20,
        };
}

/* What a callback saw, kept past the callback. */
typedef struct Outcome {
        bool is_done;
        int status;
        long http_status;
        json_t *body;
        char message[1024];
        char error_type[128];
} Outcome;

static void outcome_record(const CatalogResult *result, void *userdata) {
        Outcome *o = userdata;

        ASSERT_TRUE(!o->is_done);               /* exactly once */
        o->is_done = true;
        o->status = result->status;
        o->http_status = result->http_status;
        o->body = result->body ? json_incref(result->body) : NULL;
        memcpy(o->message, result->message, sizeof(o->message));
        memcpy(o->error_type, result->error_type, sizeof(o->error_type));
}

static void outcome_reset(Outcome *o) {
        json_decref(o->body);
        *o = (Outcome){};
}

static void run_until(uv_loop_t *loop, const bool *flag) {
        while (!*flag)
                ASSERT_TRUE(uv_run(loop, UV_RUN_ONCE) != 0 || *flag);
}

static void on_closed(void *userdata) {
        *(bool *)userdata = true;
}

/* Closes the client, runs the loop dry and checks that nothing was left open. */
static void client_finish(uv_loop_t *loop, CatalogClient *c) {
        bool is_closed = false;

        catalog_client_close(c, on_closed, &is_closed);
        run_until(loop, &is_closed);
        ASSERT_TRUE(catalog_client_free(c) == NULL);
}

static void loop_finish(uv_loop_t *loop) {
        (void)uv_run(loop, UV_RUN_DEFAULT);
        ASSERT_EQ(uv_loop_close(loop), 0);
}

static const char *const one_ns[] = { "db" };

/* ---- pure: encodings and paths ------------------------------------------------------------ */

static char *path(RestResource resource, const char *prefix, const char *separator,
                  const char *const *ns, size_t n_ns, const char *table, int *ret_r) {
        Buf b;

        buf_init(&b, 4096);
        *ret_r = rest_path_append(&b, resource, prefix, separator, ns, n_ns, table);
        return (char *)buf_steal(&b, NULL);
}

TEST(percent_encoding) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "plain", "plain" },
                { "A-Z_a.z~09", "A-Z_a.z~09" },
                { "a b", "a%20b" },
                { "a+b", "a%2Bb" },
                { "a/b?c#d", "a%2Fb%3Fc%23d" },
                { "100%", "100%25" },
                { "x\x1fy", "x%1Fy" },
                { "caf\xc3\xa9", "caf%C3%A9" },
                { "*'():;@&=$,!", "%2A%27%28%29%3A%3B%40%26%3D%24%2C%21" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Buf b;

                buf_init(&b, 1024);
                ASSERT_OK(rest_percent_encode(&b, cases[i].in, strlen(cases[i].in)));
                ASSERT_STREQ(buf_str(&b), cases[i].out);
                buf_deinit(&b);
        }
}

TEST(form_encoding) {
        Buf b;

        buf_init(&b, 1024);
        ASSERT_OK(rest_form_append(&b, "grant_type", "client_credentials"));
        ASSERT_OK(rest_form_append(&b, "client_secret", "s3cr&t=+ x"));
        ASSERT_OK(rest_form_append(&b, "scope", "catalog PRINCIPAL_ROLE:ALL"));
        ASSERT_STREQ(buf_str(&b), "grant_type=client_credentials&client_secret=s3cr%26t%3D%2B%20x"
                                  "&scope=catalog%20PRINCIPAL_ROLE%3AALL");
        buf_deinit(&b);
}

TEST(path_building) {
        static const char *const two[] = { "accounting", "tax" };
        static const char *const odd[] = { "a.b", "sp ace", "sl/ash", "\xe2\x82\xac" };
        static const char *const empty_level[] = { "a", "" };
        char *p;
        int r;

        p = path(REST_RESOURCE_TABLE, NULL, NULL, one_ns, 1, "t", &r);
        ASSERT_OK(r);
        ASSERT_STREQ(p, "/v1/namespaces/db/tables/t");
        free(p);

        /* Default separator %1F; "" prefix is no prefix. */
        p = path(REST_RESOURCE_TABLE, "", "%1F", two, 2, "paid", &r);
        ASSERT_OK(r);
        ASSERT_STREQ(p, "/v1/namespaces/accounting%1Ftax/tables/paid");
        free(p);

        /* The fixture's override "%2E"; levels keep '.', which the server does not split on
         * because it splits the raw path on the encoded separator. */
        p = path(REST_RESOURCE_TABLE, "warehouse-1", "%2E", odd, 4, "my table+1/x?y#z%", &r);
        ASSERT_OK(r);
        ASSERT_STREQ(p, "/v1/warehouse-1/namespaces/a.b%2Esp%20ace%2Esl%2Fash%2E%E2%82%AC"
                        "/tables/my%20table%2B1%2Fx%3Fy%23z%25");
        free(p);

        /* Prefixes come encoded (an S3 Tables ARN) and may hold '/'; bytes that would change
         * the URL's structure are still encoded. */
        p = path(REST_RESOURCE_TABLES, "arn%3Aaws%3As3tables/b", NULL, one_ns, 1, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(p, "/v1/arn%3Aaws%3As3tables/b/namespaces/db/tables");
        free(p);
        p = path(REST_RESOURCE_NAMESPACES, "p q?#%zz", NULL, NULL, 0, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(p, "/v1/p%20q%3F%23%25zz/namespaces");
        free(p);
        /* A separator with a '/' must not add a path segment. */
        p = path(REST_RESOURCE_TABLES, NULL, "/", two, 2, NULL, &r);
        ASSERT_OK(r);
        ASSERT_STREQ(p, "/v1/namespaces/accounting%2Ftax/tables");
        free(p);

        p = path(REST_RESOURCE_TABLE, NULL, NULL, one_ns, 0, "t", &r);
        ASSERT_EQ(r, -EINVAL);
        free(p);
        p = path(REST_RESOURCE_TABLE, NULL, NULL, empty_level, 2, "t", &r);
        ASSERT_EQ(r, -EINVAL);
        free(p);
        p = path(REST_RESOURCE_TABLE, NULL, NULL, one_ns, 1, "", &r);
        ASSERT_EQ(r, -EINVAL);
        free(p);
        p = path(REST_RESOURCE_TABLE, NULL, NULL, one_ns, 1, NULL, &r);
        ASSERT_EQ(r, -EINVAL);
        free(p);

        /* The hard maximum of the buffer holds. */
        {
                Buf b;

                buf_init(&b, 16);
                ASSERT_EQ(rest_path_append(&b, REST_RESOURCE_TABLE, NULL, NULL, two, 2, "paid"),
                          -E2BIG);
                buf_deinit(&b);
        }
}

TEST(text_copy) {
        char small[6];

        rest_text_copy(small, sizeof(small), "a\nb\x01" "c", 5);
        ASSERT_STREQ(small, "a b c");
        /* "ab€" is 5 bytes; 5 fit, but "abc€" must cut before the euro sign, not inside. */
        rest_text_copy(small, sizeof(small), "abc\xe2\x82\xac", 6);
        ASSERT_STREQ(small, "abc");
        rest_text_copy(small, sizeof(small), "", 0);
        ASSERT_STREQ(small, "");
}

/* ---- pure: parsers ------------------------------------------------------------------------ */

/* The real server's answer to a wrong assert-table-uuid (Iceberg 1.11.0), stack shortened. */
static const char conflict_body[] =
        "{\"error\":{\"message\":\"Requirement failed: UUID does not match: expected "
        "c8016338-146e-44de-9854-db9e166b4b59 != 00000000-0000-0000-0000-000000000000\","
        "\"type\":\"CommitFailedException\",\"code\":409,\"stack\":[\"org.apache.iceberg."
        "exceptions.CommitFailedException: Requirement failed\",\"\\tat x\"]}}";

TEST(error_body_parsing) {
        RestError e;
        char big[4096];

        ASSERT_OK(rest_error_parse(slice_from_str(conflict_body), &e));
        ASSERT_STREQ(e.type, "CommitFailedException");
        ASSERT_EQ(e.code, 409);
        ASSERT_STREQ(e.message, "Requirement failed: UUID does not match: expected "
                                "c8016338-146e-44de-9854-db9e166b4b59 != "
                                "00000000-0000-0000-0000-000000000000");

        ASSERT_OK(rest_error_parse(slice_from_str("{\"error\":{\"message\":\"Table does not exist: "
                                                  "ns.t\",\"type\":\"NoSuchTableException\","
                                                  "\"code\":404}}"), &e));
        ASSERT_STREQ(e.message, "Table does not exist: ns.t");
        ASSERT_EQ(e.code, 404);

        /* RFC 6749's error shape from a token endpoint. */
        ASSERT_OK(rest_error_parse(slice_from_str("{\"error\":\"invalid_client\","
                                                  "\"error_description\":\"bad secret\"}"), &e));
        ASSERT_STREQ(e.type, "invalid_client");
        ASSERT_STREQ(e.message, "bad secret");

        /* Log-safe: control characters become spaces; odd codes drop. */
        ASSERT_OK(rest_error_parse(slice_from_str("{\"error\":{\"message\":\"a\\nb\\u0001c\","
                                                  "\"code\":200}}"), &e));
        ASSERT_STREQ(e.message, "a b c");
        ASSERT_EQ(e.code, 0);
        ASSERT_STREQ(e.type, "");

        /* Long messages are cut to the fixed field. */
        memset(big, 'x', sizeof(big));
        memcpy(big, "{\"error\":{\"message\":\"", 21);
        memcpy(big + sizeof(big) - 4, "\"}}", 4);
        ASSERT_OK(rest_error_parse(slice_from_str(big), &e));
        ASSERT_EQ(strlen(e.message), sizeof(e.message) - 1);

        /* jansson refuses \u0000 unless asked: such a body is no error response to us. */
        ASSERT_EQ(rest_error_parse(slice_from_str("{\"error\":{\"message\":\"a\\u0000\"}}"), &e),
                  -EBADMSG);
        ASSERT_EQ(rest_error_parse(slice_from_str("<html>Error 500</html>"), &e), -EBADMSG);
        ASSERT_EQ(rest_error_parse(slice_from_str("{\"message\":\"flat\"}"), &e), -EBADMSG);
        ASSERT_EQ(rest_error_parse(slice_from_str("{\"error\":[1]}"), &e), -EBADMSG);
        ASSERT_EQ(rest_error_parse(slice_from_str(""), &e), -EBADMSG);
        ASSERT_EQ(rest_error_parse(SLICE_NULL, &e), -EBADMSG);
}

/* The fixture's /v1/config, endpoints shortened. */
static const char fixture_config[] =
        "{\"defaults\":{},\"overrides\":{\"namespace-separator\":\"%2E\"},"
        "\"endpoints\":[\"GET v1/config\",\"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}\","
        "\"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}\"]}";

static int config_parse_str(const char *text, const json_t *client, RestConfig *ret, Error *e) {
        json_t *j = NULL;
        int r;

        r = rest_json_parse(slice_from_str(text), &j, e);
        if (r < 0)
                return r;
        r = rest_config_parse(j, client, ret, e);
        json_decref(j);
        return r;
}

TEST(config_parsing) {
        RestConfig c;
        json_t *client;
        Error e = {};

        ASSERT_OK(config_parse_str(fixture_config, NULL, &c, &e));
        ASSERT_TRUE(c.prefix == NULL);
        ASSERT_STREQ(c.namespace_separator, "%2E");
        ASSERT_TRUE(c.has_endpoints);
        ASSERT_EQ(c.n_endpoints, 3);
        ASSERT_TRUE(rest_config_has_endpoint(&c, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"));
        ASSERT_TRUE(!rest_config_has_endpoint(&c, "POST /v1/{prefix}/transactions/commit"));
        ASSERT_TRUE(!c.has_idempotency);
        rest_config_deinit(&c);

        /* defaults < client < overrides; no endpoints means the OpenAPI default set. */
        client = json_pack("{s:s, s:s}", "prefix", "client", "warehouse", "wh");
        ASSERT_TRUE(client);
        ASSERT_OK(config_parse_str("{\"defaults\":{\"prefix\":\"d\",\"warehouse\":\"d\",\"x\":\"d\"},"
                                   "\"overrides\":{\"warehouse\":\"o\"},"
                                   "\"idempotency-key-lifetime\":\"PT30M\"}", client, &c, &e));
        ASSERT_STREQ(c.prefix, "client");
        ASSERT_STREQ(json_string_value(json_object_get(c.properties, "warehouse")), "o");
        ASSERT_STREQ(json_string_value(json_object_get(c.properties, "x")), "d");
        ASSERT_STREQ(c.namespace_separator, REST_DEFAULT_NAMESPACE_SEPARATOR);
        ASSERT_TRUE(!c.has_endpoints);
        ASSERT_TRUE(rest_config_has_endpoint(&c, "POST /v1/{prefix}/transactions/commit"));
        ASSERT_TRUE(!rest_config_has_endpoint(&c, "GET /v1/{prefix}/namespaces/{namespace}/views"));
        ASSERT_TRUE(c.has_idempotency);
        ASSERT_EQ(c.idempotency_lifetime_ms, 30 * 60 * 1000);
        rest_config_deinit(&c);
        json_decref(client);

        /* An advertised lifetime we cannot read still means "supported". */
        ASSERT_OK(config_parse_str("{\"defaults\":{},\"overrides\":{},"
                                   "\"idempotency-key-lifetime\":\"P1M\"}", NULL, &c, &e));
        ASSERT_TRUE(c.has_idempotency);
        ASSERT_EQ(c.idempotency_lifetime_ms, 0);
        rest_config_deinit(&c);

        ASSERT_OK(config_parse_str("{}", NULL, &c, &e));
        ASSERT_STREQ(c.namespace_separator, "%1F");
        rest_config_deinit(&c);

        ASSERT_EQ(config_parse_str("[]", NULL, &c, &e), -EBADMSG);
        ASSERT_EQ(config_parse_str("{\"defaults\":{\"prefix\":7}}", NULL, &c, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "prefix");
        ASSERT_EQ(config_parse_str("{\"overrides\":[]}", NULL, &c, &e), -EBADMSG);
        ASSERT_EQ(config_parse_str("{\"overrides\":{\"namespace-separator\":\"\"}}", NULL, &c, &e),
                  -EBADMSG);
        ASSERT_EQ(config_parse_str("{\"endpoints\":[\"GET x\", 1]}", NULL, &c, &e), -EBADMSG);
        ASSERT_EQ(config_parse_str("{\"idempotency-key-lifetime\":30}", NULL, &c, &e), -EBADMSG);
        ASSERT_EQ(config_parse_str("{\"overrides\":{\"prefix\":\"a\\u0000b\"}}", NULL, &c, &e),
                  -EBADMSG);
        ASSERT_EQ(config_parse_str("{\"defaults\":", NULL, &c, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "invalid JSON");
}

TEST(duration_parsing) {
        static const struct {
                const char *s;
                int r;
                uint64_t ms;
        } cases[] = {
                { "PT30M", 0, 1800000 },
                { "PT1H30M", 0, 5400000 },
                { "P1DT2H", 0, 93600000 },
                { "P1D", 0, 86400000 },
                { "P2W", 0, 1209600000 },
                { "PT0.5S", 0, 500 },
                { "PT1.25S", 0, 1250 },
                { "pt10s", 0, 10000 },
                { "PT0S", 0, 0 },
                { "P", -EINVAL, 0 },
                { "PT", -EINVAL, 0 },
                { "P1DT", -EINVAL, 0 },
                { "P1M", -EINVAL, 0 },          /* a month has no fixed length */
                { "P1Y", -EINVAL, 0 },
                { "PT1M1H", -EINVAL, 0 },       /* out of order */
                { "PT1H1H", -EINVAL, 0 },
                { "PT1.5M", -EINVAL, 0 },
                { "PT30", -EINVAL, 0 },
                { "30M", -EINVAL, 0 },
                { "PTM", -EINVAL, 0 },
                { "", -EINVAL, 0 },
                { "P99999999999999999999D", -ERANGE, 0 },
                { "P9999999999999999D", -ERANGE, 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                uint64_t ms = 12345;
                int r = rest_duration_parse(cases[i].s, &ms);

                if (r != cases[i].r)
                        TEST_FAIL("duration '%s': got %d, want %d", cases[i].s, r, cases[i].r);
                if (r == 0 && ms != cases[i].ms)
                        TEST_FAIL("duration '%s': got %" PRIu64 " ms", cases[i].s, ms);
        }
}

TEST(token_parsing) {
        RestToken t;
        Error e = {};

        /* The fixture's /v1/oauth/tokens answer. */
        ASSERT_OK(rest_token_parse(slice_from_str("{\"access_token\":\"client-credentials-token:"
                                                  "sub=a\",\"token_type\":\"Bearer\"}"), &t, &e));
        ASSERT_STREQ(t.access_token, "client-credentials-token:sub=a");
        ASSERT_TRUE(!t.has_expires_in);
        rest_token_deinit(&t);
        ASSERT_TRUE(t.access_token == NULL);

        ASSERT_OK(rest_token_parse(slice_from_str("{\"access_token\":\"x\",\"token_type\":\"bearer\","
                                                  "\"expires_in\":3600}"), &t, &e));
        ASSERT_TRUE(t.has_expires_in);
        ASSERT_EQ(t.expires_in_s, 3600);
        rest_token_deinit(&t);
        ASSERT_OK(rest_token_parse(slice_from_str("{\"access_token\":\"x\",\"expires_in\":\"60\","
                                                  "\"issued_token_type\":\"urn:x\"}"), &t, &e));
        ASSERT_EQ(t.expires_in_s, 60);
        rest_token_deinit(&t);

        static const char *const bad[] = {
                "{}",
                "{\"access_token\":\"\"}",
                "{\"access_token\":\"a b\"}",
                "{\"access_token\":\"a\\r\\nX-Evil: 1\"}",
                "{\"access_token\":\"a\\u0000b\"}",
                "{\"access_token\":7}",
                "{\"access_token\":\"x\",\"token_type\":\"mac\"}",
                "{\"access_token\":\"x\",\"expires_in\":0}",
                "{\"access_token\":\"x\",\"expires_in\":-5}",
                "{\"access_token\":\"x\",\"expires_in\":4294967296}",
                "{\"access_token\":\"x\",\"expires_in\":1.5}",
                "{\"access_token\":\"x\",\"expires_in\":\"soon\"}",
                "[\"access_token\"]",
                "access_token=x",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (rest_token_parse(slice_from_str(bad[i]), &t, &e) != -EBADMSG)
                        TEST_FAIL("token response accepted: %s", bad[i]);
}

TEST(json_integers_that_do_not_fit) {
        json_t *j = NULL;
        Error e = {};

        ASSERT_OK(rest_json_parse(slice_from_str("{\"next-row-id\":9223372036854775807}"), &j, &e));
        ASSERT_EQ(json_integer_value(json_object_get(j, "next-row-id")), INT64_MAX);
        json_decref(j);
        ASSERT_EQ(rest_json_parse(slice_from_str("{\"next-row-id\":9223372036854775808}"), &j, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "too big integer");
        ASSERT_EQ(rest_json_parse(slice_from_str("{\"a\":-9223372036854775809}"), &j, &e), -EBADMSG);
        ASSERT_EQ(rest_json_parse(slice_from_str("{\"a\":1e999}"), &j, &e), -EBADMSG);
}

TEST(table_result_check) {
        static const struct {
                const char *json;
                int r;
        } cases[] = {
                { "{\"metadata-location\":\"/wh/t/m.json\",\"metadata\":{\"format-version\":3}}", 0 },
                { "{\"metadata-location\":null,\"metadata\":{}}", 0 },
                { "{\"metadata\":{},\"config\":{\"k\":\"v\"}}", 0 },
                { "{\"metadata-location\":\"x\"}", -EBADMSG },
                { "{\"metadata\":[]}", -EBADMSG },
                { "{\"metadata\":{},\"metadata-location\":5}", -EBADMSG },
                { "[]", -EBADMSG },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *j = NULL;
                Error e = {};

                ASSERT_OK(rest_json_parse(slice_from_str(cases[i].json), &j, &e));
                ASSERT_EQ(rest_table_result_check(j, &e), cases[i].r);
                json_decref(j);
        }
}

TEST(outcome_mapping) {
        static const char stale_seq[] =
                "Cannot add snapshot with sequence number 5 older than last sequence number 5";
        static const char stale_row[] =
                "Cannot add a snapshot, first-row-id is behind table next-row-id: 10 < 20";
        static const struct {
                long http;
                const char *message;
                int read, mutation;
        } cases[] = {
                { 200, NULL, 0, 0 },
                { 204, NULL, 0, 0 },
                { 304, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 307, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 400, "bad", CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 400, stale_seq, CATALOG_E_REJECTED, CATALOG_E_CONFLICT },
                { 400, stale_row, CATALOG_E_REJECTED, CATALOG_E_CONFLICT },
                { 400, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 401, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 403, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 404, NULL, CATALOG_E_NOT_FOUND, CATALOG_E_NOT_FOUND },
                { 406, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 408, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 409, NULL, CATALOG_E_CONFLICT, CATALOG_E_CONFLICT },
                { 419, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 422, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 429, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_UNAVAILABLE },
                { 500, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 501, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 502, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 503, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 504, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 507, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 599, NULL, CATALOG_E_UNAVAILABLE, CATALOG_E_STATE_UNKNOWN },
                { 600, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 100, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
                { 0, NULL, CATALOG_E_REJECTED, CATALOG_E_REJECTED },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int read = catalog_outcome_from_http(false, cases[i].http, cases[i].message);
                int mutation = catalog_outcome_from_http(true, cases[i].http, cases[i].message);

                if (read != cases[i].read || mutation != cases[i].mutation)
                        TEST_FAIL("HTTP %ld: read %s (want %s), mutation %s (want %s)", cases[i].http,
                                  catalog_outcome_to_string(read),
                                  catalog_outcome_to_string(cases[i].read),
                                  catalog_outcome_to_string(mutation),
                                  catalog_outcome_to_string(cases[i].mutation));
        }
        ASSERT_STREQ(catalog_outcome_to_string(-ECANCELED), "error");
}

TEST(client_new_rejects_bad_config) {
        uv_loop_t loop;
        CatalogClient *c = NULL;
        CatalogConfig config;
        ConfigHeader evil = { (char *)"X-Test", (char *)"a\r\nX-Injected: 1" };
        ConfigHeader bad_name = { (char *)"X Test", (char *)"a" };

        ASSERT_OK(uv_loop_init(&loop));
        config = test_config(NULL);
        ASSERT_EQ(catalog_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("ftp://127.0.0.1/");
        ASSERT_EQ(catalog_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("http://127.0.0.1:1");
        config.headers = &evil;
        config.n_headers = 1;
        ASSERT_EQ(catalog_client_new(&loop, &config, &c), -EINVAL);
        config.headers = &bad_name;
        ASSERT_EQ(catalog_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("http://127.0.0.1:1");
        config.token = (char *)"tok en";
        ASSERT_EQ(catalog_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("http://127.0.0.1:1");
        config.oauth2_server_uri = (char *)"idp.example.com/token";
        ASSERT_EQ(catalog_client_new(&loop, &config, &c), -EINVAL);
        ASSERT_TRUE(c == NULL);
        /* Nothing was left on the loop by the failures. */
        loop_finish(&loop);
}

/* ---- loopback: a scripted HTTP peer --------------------------------------------------------- */

typedef enum PeerAction {
        PEER_RESPOND,
        PEER_CLOSE,             /* read the request, then drop the connection: a lost answer */
        PEER_HANG,              /* read the request, never answer */
} PeerAction;

typedef struct PeerReply {
        PeerAction action;
        int status;
        const char *body;
        size_t body_len;        /* 0: strlen(body) */
} PeerReply;

typedef struct Peer Peer;
typedef PeerReply (*PeerHandler)(Peer *p, const char *method, const char *target, const char *head);

typedef struct PeerConn {
        uv_tcp_t tcp;
        Peer *peer;
        char buf[1 << 16];
        size_t len;
        struct PeerConn *next;
} PeerConn;

struct Peer {
        uv_tcp_t listener;
        int port;
        PeerHandler handler;
        PeerConn *conns;
        unsigned n_accepted;
        unsigned n_requests;
        unsigned n_token_requests;
        Buf heads;              /* every request head seen, for header assertions */
        char *big_body;
};

typedef struct PeerWrite {
        uv_write_t req;
        char *data;
} PeerWrite;

static void peer_on_conn_closed(uv_handle_t *h) {
        PeerConn *conn = h->data;
        Peer *p = conn->peer;

        for (PeerConn **pp = &p->conns; *pp; pp = &(*pp)->next)
                if (*pp == conn) {
                        *pp = conn->next;
                        break;
                }
        free(conn);
}

static void peer_conn_close(PeerConn *conn) {
        if (!uv_is_closing((uv_handle_t *)&conn->tcp))
                uv_close((uv_handle_t *)&conn->tcp, peer_on_conn_closed);
}

static void peer_on_written(uv_write_t *req, int status) {
        PeerWrite *w = (PeerWrite *)req;

        free(w->data);
        free(w);
}

static void peer_respond(PeerConn *conn, const PeerReply *reply) {
        const char *body = reply->body ? reply->body : "";
        size_t n = reply->body_len ? reply->body_len : strlen(body);
        PeerWrite *w = calloc(1, sizeof(*w));
        uv_buf_t b;
        Buf out;

        ASSERT_TRUE(w);
        buf_init(&out, SIZE_MAX);
        ASSERT_OK(buf_printf(&out, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                                   "Content-Length: %zu\r\n\r\n", reply->status, n));
        ASSERT_OK(buf_append(&out, body, n));
        b = uv_buf_init((char *)out.data, (unsigned)out.len);
        w->data = (char *)buf_steal(&out, NULL);
        ASSERT_OK(uv_write(&w->req, (uv_stream_t *)&conn->tcp, &b, 1, peer_on_written));
}

static size_t head_content_length(const char *head) {
        const char *s = strcasestr(head, "\r\ncontent-length:");
        size_t n = 0;

        if (!s)
                return 0;
        for (s += 17; *s == ' '; s++)
                ;
        for (; *s >= '0' && *s <= '9'; s++)
                n = n * 10 + (size_t)(*s - '0');
        return n;
}

static void peer_on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
        PeerConn *conn = h->data;

        *b = uv_buf_init(conn->buf + conn->len, (unsigned)(sizeof(conn->buf) - conn->len - 1));
}

static void peer_on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b) {
        PeerConn *conn = s->data;
        Peer *p = conn->peer;

        if (nread < 0) {
                peer_conn_close(conn);
                return;
        }
        conn->len += (size_t)nread;
        conn->buf[conn->len] = 0;
        for (;;) {
                char *end = strstr(conn->buf, "\r\n\r\n");
                char method[16] = "", target[2048] = "";
                size_t head_len, total, i, j;
                PeerReply reply;

                if (!end)
                        return;
                head_len = (size_t)(end - conn->buf) + 4;
                total = head_len + head_content_length(conn->buf);
                if (conn->len < total)
                        return;
                for (i = 0; i < sizeof(method) - 1 && conn->buf[i] != ' '; i++)
                        method[i] = conn->buf[i];
                for (i++, j = 0; j < sizeof(target) - 1 && conn->buf[i] != ' '; i++, j++)
                        target[j] = conn->buf[i];
                ASSERT_OK(buf_append(&p->heads, conn->buf, head_len));
                p->n_requests++;
                if (strcmp(target, "/v1/oauth/tokens") == 0)
                        p->n_token_requests++;
                conn->buf[head_len - 2] = 0;
                reply = p->handler(p, method, target, conn->buf);
                memmove(conn->buf, conn->buf + total, conn->len - total);
                conn->len -= total;
                conn->buf[conn->len] = 0;
                if (reply.action == PEER_CLOSE) {
                        peer_conn_close(conn);
                        return;
                }
                if (reply.action == PEER_RESPOND)
                        peer_respond(conn, &reply);
        }
}

static void peer_on_connection(uv_stream_t *server, int status) {
        Peer *p = server->data;
        PeerConn *conn;

        ASSERT_OK(status);
        conn = calloc(1, sizeof(*conn));
        ASSERT_TRUE(conn);
        conn->peer = p;
        ASSERT_OK(uv_tcp_init(server->loop, &conn->tcp));
        conn->tcp.data = conn;
        conn->next = p->conns;
        p->conns = conn;
        ASSERT_OK(uv_accept(server, (uv_stream_t *)&conn->tcp));
        p->n_accepted++;
        ASSERT_OK(uv_read_start((uv_stream_t *)&conn->tcp, peer_on_alloc, peer_on_read));
}

static void peer_start(uv_loop_t *loop, Peer *p, PeerHandler handler, char *uri, size_t uri_size) {
        struct sockaddr_in addr;
        struct sockaddr_storage bound;
        int len = sizeof(bound);

        *p = (Peer){ .handler = handler };
        buf_init(&p->heads, 1 << 20);
        ASSERT_OK(uv_tcp_init(loop, &p->listener));
        p->listener.data = p;
        ASSERT_OK(uv_ip4_addr("127.0.0.1", 0, &addr));
        ASSERT_OK(uv_tcp_bind(&p->listener, (const struct sockaddr *)&addr, 0));
        ASSERT_OK(uv_listen((uv_stream_t *)&p->listener, 16, peer_on_connection));
        ASSERT_OK(uv_tcp_getsockname(&p->listener, (struct sockaddr *)&bound, &len));
        p->port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
        ASSERT_TRUE((size_t)snprintf(uri, uri_size, "http://127.0.0.1:%d/", p->port) < uri_size);
}

static void peer_stop(Peer *p) {
        uv_close((uv_handle_t *)&p->listener, NULL);
        for (PeerConn *conn = p->conns; conn; conn = conn->next)
                peer_conn_close(conn);
}

static void peer_deinit(Peer *p) {
        buf_deinit(&p->heads);
        free(p->big_body);
}

static const PeerReply reply_config = { PEER_RESPOND, 200, "{\"defaults\":{},\"overrides\":{}}", 0 };
static const PeerReply reply_table = { PEER_RESPOND, 200,
                                       "{\"metadata-location\":\"/wh/db/t/m.json\","
                                       "\"metadata\":{\"format-version\":3,\"next-row-id\":0}}", 0 };
static const PeerReply reply_committed = { PEER_RESPOND, 200, "{\"metadata\":{}}", 0 };

/* Answers config and token requests; `table` for everything else. */
static PeerReply peer_route(const char *target, PeerReply table) {
        if (strncmp(target, "/v1/config", 10) == 0)
                return reply_config;
        return table;
}

static PeerReply handler_lost_answer(Peer *p, const char *method, const char *target, const char *head) {
        return peer_route(target, (PeerReply){ .action = PEER_CLOSE });
}

static PeerReply handler_hang(Peer *p, const char *method, const char *target, const char *head) {
        return peer_route(target, (PeerReply){ .action = PEER_HANG });
}

static PeerReply handler_ok(Peer *p, const char *method, const char *target, const char *head) {
        return peer_route(target, strcmp(method, "POST") == 0 ? reply_committed : reply_table);
}

/* The first commit is read and then dropped on the floor (on a kept-alive connection): curl
 * resends it on a fresh one, which gets `status`. */
static int resend_status;
static unsigned resend_n_posts;

static PeerReply handler_drop_first_post(Peer *p, const char *method, const char *target,
                                         const char *head) {
        if (strcmp(method, "POST") != 0)
                return handler_ok(p, method, target, head);
        if (++resend_n_posts == 1)
                return (PeerReply){ .action = PEER_CLOSE };
        return (PeerReply){ PEER_RESPOND, resend_status,
                            resend_status == 200 ? "{\"metadata\":{}}" :
                            "{\"error\":{\"message\":\"Requirement failed: branch main has changed\","
                            "\"type\":\"CommitFailedException\",\"code\":409}}", 0 };
}

/* /v1/config fails twice (a catalog still starting), then works. */
static unsigned flaky_n_configs;

static PeerReply handler_flaky_config(Peer *p, const char *method, const char *target,
                                      const char *head) {
        if (strncmp(target, "/v1/config", 10) == 0 && ++flaky_n_configs <= 2)
                return (PeerReply){ PEER_RESPOND, 503,
                                    "{\"error\":{\"message\":\"starting\",\"type\":"
                                    "\"ServiceUnavailableException\",\"code\":503}}", 0 };
        return handler_ok(p, method, target, head);
}

static PeerReply handler_big(Peer *p, const char *method, const char *target, const char *head) {
        if (!p->big_body) {
                p->big_body = malloc(10000 + 1);
                ASSERT_TRUE(p->big_body);
                memset(p->big_body, ' ', 10000);
                memcpy(p->big_body, "{\"metadata\":{}}", 15);
                p->big_body[10000] = 0;
        }
        return peer_route(target, (PeerReply){ PEER_RESPOND, 200, p->big_body, 10000 });
}

/* A 401 for any request whose bearer is not the newest token, like a catalog after expiry. */
static PeerReply handler_oauth(Peer *p, const char *method, const char *target, const char *head) {
        static const char *const tokens[] = { "{\"access_token\":\"tok-1\",\"token_type\":\"bearer\"}",
                                              "{\"access_token\":\"tok-2\",\"token_type\":\"bearer\","
                                              "\"expires_in\":3600}" };

        if (strcmp(target, "/v1/oauth/tokens") == 0) {
                ASSERT_TRUE(p->n_token_requests <= ELEMENTSOF(tokens));
                return (PeerReply){ PEER_RESPOND, 200, tokens[p->n_token_requests - 1], 0 };
        }
        if (!strstr(head, "\r\nAuthorization: Bearer tok-2"))
                return (PeerReply){ PEER_RESPOND, 401,
                                    "{\"error\":{\"message\":\"token expired\","
                                    "\"type\":\"NotAuthorizedException\",\"code\":401}}", 0 };
        return handler_ok(p, method, target, head);
}

static PeerReply handler_html_500(Peer *p, const char *method, const char *target, const char *head) {
        return peer_route(target, (PeerReply){ PEER_RESPOND, 500,
                                               "<html><title>Error 500 java.lang.Unsupported"
                                               "OperationException: Unrecognized update "
                                               "requirement</title></html>", 0 });
}

static json_t *commit_request(const char *uuid) {
        json_t *j = json_pack("{s:[{s:s,s:s}], s:[{s:s,s:{s:s}}]}",
                              "requirements", "type", "assert-table-uuid", "uuid", uuid,
                              "updates", "action", "set-properties", "updates",
                              "icecommit.test", "yes");

        ASSERT_TRUE(j);
        return j;
}

TEST(loopback_closed_port_is_unavailable) {
        CatalogConfig config = test_config("http://127.0.0.1:1");
        json_t *request = commit_request("00000000-0000-0000-0000-000000000000");
        Outcome start = {}, load = {}, commit = {};
        CatalogClient *c;
        uv_loop_t loop;

        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(catalog_client_new(&loop, &config, &c));
        /* The load and commit wait for the /v1/config that start sends: nothing is sent, so
         * even the commit is safe to retry. */
        ASSERT_OK(catalog_client_start(c, outcome_record, &start));
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, "key-1", outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_TRUE(start.is_done && load.is_done);
        ASSERT_EQ(start.status, CATALOG_E_UNAVAILABLE);
        ASSERT_EQ(start.http_status, 0);
        ASSERT_CONTAINS(start.message, "catalog unreachable");
        ASSERT_EQ(load.status, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(load.message, "catalog configuration unavailable");
        ASSERT_EQ(commit.status, CATALOG_E_UNAVAILABLE);
        ASSERT_TRUE(!catalog_client_is_ready(c));
        ASSERT_TRUE(!catalog_client_supports_idempotency(c));

        /* Without a start, a load fetches /v1/config on its own, with the same outcome. */
        outcome_reset(&load);
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_EQ(load.status, CATALOG_E_UNAVAILABLE);

        /* The started client retries /v1/config in the background until closed. */
        client_finish(&loop, c);
        json_decref(request);
        outcome_reset(&start);
        outcome_reset(&load);
        outcome_reset(&commit);
        loop_finish(&loop);
}

TEST(loopback_lost_answer) {
        json_t *request = commit_request("u");
        Outcome load = {}, commit = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_lost_answer, uri, sizeof(uri));
        config = test_config(uri);
        ASSERT_OK(catalog_client_new(&loop, &config, &c));

        /* Sent, then the connection died: a commit's fate is unknown, a read is retryable. */
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, NULL, outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_EQ(commit.status, CATALOG_E_STATE_UNKNOWN);
        ASSERT_CONTAINS(commit.message, "no answer from the catalog");
        ASSERT_TRUE(catalog_client_is_ready(c));
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_EQ(load.status, CATALOG_E_UNAVAILABLE);

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
        outcome_reset(&load);
        outcome_reset(&commit);
}

static void check_resend(int status, int want) {
        json_t *request = commit_request("u");
        Outcome load = {}, commit = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        resend_status = status;
        resend_n_posts = 0;
        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_drop_first_post, uri, sizeof(uri));
        config = test_config(uri);
        ASSERT_OK(catalog_client_new(&loop, &config, &c));
        /* A load first, so that the commit goes out on a reused connection. */
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_EQ(load.status, 0);
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, NULL, outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_EQ(peer.n_accepted, 2);
        ASSERT_EQ(resend_n_posts, 2);
        ASSERT_EQ(commit.http_status, status);
        if (commit.status != want)
                TEST_FAIL("resent commit answered %d: %s (%s)", status,
                          catalog_outcome_to_string(commit.status), commit.message);

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
        outcome_reset(&load);
        outcome_reset(&commit);
}

/* libcurl resends a POST whose reused connection died without an answer; a 409 to the copy
 * must not read as "not committed", a 200 is still a success. */
TEST(loopback_resent_commit) {
        check_resend(409, CATALOG_E_STATE_UNKNOWN);
        check_resend(200, 0);
}

/* A started client that could not load /v1/config keeps trying (1 s, then 2 s) until it is
 * ready, so that /readyz turns green without a writer request. */
TEST(loopback_start_retries_in_background) {
        Outcome start = {}, load = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        uint64_t t0;
        Peer peer;

        flaky_n_configs = 0;
        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_flaky_config, uri, sizeof(uri));
        config = test_config(uri);
        ASSERT_OK(catalog_client_new(&loop, &config, &c));
        ASSERT_OK(catalog_client_start(c, outcome_record, &start));
        run_until(&loop, &start.is_done);
        /* A read that got 503: retryable, with the catalog's words. */
        ASSERT_EQ(start.status, CATALOG_E_UNAVAILABLE);
        ASSERT_EQ(start.http_status, 503);
        ASSERT_STREQ(start.message, "starting");
        ASSERT_STREQ(start.error_type, "ServiceUnavailableException");
        ASSERT_TRUE(!catalog_client_is_ready(c));

        t0 = uv_now(&loop);
        while (!catalog_client_is_ready(c))
                ASSERT_TRUE(uv_run(&loop, UV_RUN_ONCE) != 0);
        ASSERT_EQ(flaky_n_configs, 3);
        ASSERT_TRUE(uv_now(&loop) - t0 >= 2900);
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_EQ(load.status, 0);

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        outcome_reset(&start);
        outcome_reset(&load);
}

TEST(loopback_timeout_after_send) {
        json_t *request = commit_request("u");
        Outcome commit = {}, load = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_hang, uri, sizeof(uri));
        config = test_config(uri);
        config.request_timeout_ms = 300;
        ASSERT_OK(catalog_client_new(&loop, &config, &c));

        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, "k", outcome_record, &commit));
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &commit.is_done);
        run_until(&loop, &load.is_done);
        ASSERT_EQ(commit.status, CATALOG_E_STATE_UNKNOWN);
        ASSERT_CONTAINS(commit.message, "imed out");
        ASSERT_EQ(load.status, CATALOG_E_UNAVAILABLE);

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
        outcome_reset(&load);
        outcome_reset(&commit);
}

TEST(loopback_close_cancels_in_flight) {
        Outcome load = {}, commit = {};
        json_t *request = commit_request("u");
        bool is_closed = false;
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_hang, uri, sizeof(uri));
        config = test_config(uri);
        ASSERT_OK(catalog_client_new(&loop, &config, &c));
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        /* Let the config go through and the load reach the peer. */
        while (peer.n_requests < 2)
                ASSERT_TRUE(uv_run(&loop, UV_RUN_ONCE) != 0);
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, NULL, outcome_record, &commit));

        catalog_client_close(c, on_closed, &is_closed);
        /* Never from inside the close call. */
        ASSERT_TRUE(!load.is_done && !commit.is_done && !is_closed);
        ASSERT_EQ(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load), -ESHUTDOWN);
        run_until(&loop, &is_closed);
        ASSERT_TRUE(load.is_done && commit.is_done);
        ASSERT_EQ(load.status, -ECANCELED);
        ASSERT_EQ(commit.status, -ECANCELED);
        ASSERT_TRUE(catalog_client_free(c) == NULL);

        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
}

TEST(loopback_response_too_big) {
        json_t *request = commit_request("u");
        Outcome load = {}, commit = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_big, uri, sizeof(uri));
        config = test_config(uri);
        config.max_response_bytes = 4096;
        ASSERT_OK(catalog_client_new(&loop, &config, &c));

        ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_EQ(load.status, -E2BIG);
        ASSERT_EQ(load.http_status, 200);
        ASSERT_TRUE(load.body == NULL);

        /* The commit's 200 is the verdict, even without the body. */
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, NULL, outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_EQ(commit.status, 0);
        ASSERT_TRUE(commit.body == NULL);
        ASSERT_CONTAINS(commit.message, "body dropped");

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
        outcome_reset(&load);
        outcome_reset(&commit);
}

TEST(loopback_non_json_error) {
        json_t *request = commit_request("u");
        Outcome commit = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_html_500, uri, sizeof(uri));
        config = test_config(uri);
        ASSERT_OK(catalog_client_new(&loop, &config, &c));
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, NULL, outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_EQ(commit.status, CATALOG_E_STATE_UNKNOWN);
        ASSERT_EQ(commit.http_status, 500);
        ASSERT_CONTAINS(commit.message, "HTTP 500: <html><title>Error 500 java.lang.");

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
        outcome_reset(&commit);
}

/* Headers, keep-alive, and the one 401 retry with a fresh token, same Idempotency-Key. */
TEST(loopback_headers_keepalive_oauth) {
        ConfigHeader headers[] = { { (char *)"X-Iceberg-Access-Delegation", (char *)"vended-credentials" } };
        json_t *request = commit_request("u");
        Outcome start = {}, load = {}, commit = {};
        char uri[64];
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        Peer peer;

        ASSERT_OK(uv_loop_init(&loop));
        peer_start(&loop, &peer, handler_oauth, uri, sizeof(uri));
        config = test_config(uri);
        config.credential = (char *)"icecommit:s3cr&t";
        config.warehouse = (char *)"my wh";
        config.headers = headers;
        config.n_headers = 1;
        config.send_idempotency_key = true;
        ASSERT_OK(catalog_client_new(&loop, &config, &c));

        ASSERT_OK(catalog_client_start(c, outcome_record, &start));
        run_until(&loop, &start.is_done);
        /* tok-1 was refused, tok-2 fetched, /v1/config resent once. */
        ASSERT_EQ(start.status, 0);
        ASSERT_EQ(peer.n_token_requests, 2);
        ASSERT_TRUE(catalog_client_supports_idempotency(c));
        ASSERT_EQ(catalog_client_idempotency_lifetime_ms(c), 0);
        ASSERT_STREQ(catalog_client_namespace_separator(c), "%1F");
        ASSERT_TRUE(catalog_client_prefix(c) == NULL);
        ASSERT_TRUE(catalog_client_supports_endpoint(c, "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"));

        for (int i = 0; i < 5; i++) {
                outcome_reset(&load);
                ASSERT_OK(catalog_load_table(c, one_ns, 1, "t", outcome_record, &load));
                run_until(&loop, &load.is_done);
                ASSERT_EQ(load.status, 0);
                ASSERT_EQ(json_integer_value(json_object_get(json_object_get(load.body, "metadata"),
                                                             "format-version")), 3);
        }
        ASSERT_OK(catalog_commit_table(c, one_ns, 1, "t", request, "0190-key", outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_EQ(commit.status, 0);
        /* One connection for everything: keep-alive. */
        ASSERT_EQ(peer.n_accepted, 1);
        ASSERT_EQ(catalog_client_connections_opened(c), 1);

        ASSERT_CONTAINS(buf_str(&peer.heads), "POST /v1/oauth/tokens HTTP/1.1");
        ASSERT_CONTAINS(buf_str(&peer.heads), "GET /v1/config?warehouse=my%20wh HTTP/1.1");
        ASSERT_CONTAINS(buf_str(&peer.heads), "GET /v1/namespaces/db/tables/t HTTP/1.1");
        ASSERT_CONTAINS(buf_str(&peer.heads), "\r\nUser-Agent: icecommitd/" ICECOMMIT_VERSION "\r\n");
        ASSERT_CONTAINS(buf_str(&peer.heads), "\r\nX-Iceberg-Access-Delegation: vended-credentials\r\n");
        ASSERT_CONTAINS(buf_str(&peer.heads), "\r\nIdempotency-Key: 0190-key\r\n");
        ASSERT_CONTAINS(buf_str(&peer.heads), "\r\nContent-Type: application/json\r\n");
        ASSERT_CONTAINS(buf_str(&peer.heads), "\r\nContent-Type: application/x-www-form-urlencoded\r\n");
        ASSERT_TRUE(!strstr(buf_str(&peer.heads), "Expect:"));

        client_finish(&loop, c);
        peer_stop(&peer);
        loop_finish(&loop);
        peer_deinit(&peer);
        json_decref(request);
        outcome_reset(&start);
        outcome_reset(&load);
        outcome_reset(&commit);
}

/* ---- the real Apache Iceberg REST catalog ---------------------------------------------------- */

static const char *catalog_uri(void) {
        const char *uri = getenv("ICECOMMIT_TEST_CATALOG_URI");

        if (!uri || !*uri) {
                printf("skip: ICECOMMIT_TEST_CATALOG_URI is not set (tests/peers/catalog-start.sh)\n");
                return NULL;
        }
        return uri;
}

static void unique_name(char *buf, size_t size, const char *what) {
        struct timeval tv;

        (void)gettimeofday(&tv, NULL);
        ASSERT_TRUE((size_t)snprintf(buf, size, "icecommit_%s_%d_%ld%06ld", what, (int)getpid(),
                                     (long)tv.tv_sec, (long)tv.tv_usec) < size);
}

static json_t *create_table_request(void) {
        json_t *j = json_pack("{s:{s:s,s:i,s:[{s:i,s:s,s:b,s:s}]}, s:{s:s}}",
                              "schema", "type", "struct", "schema-id", 0, "fields",
                              "id", 1, "name", "id", "required", 0, "type", "long",
                              "properties", "format-version", "3");

        ASSERT_TRUE(j);
        return j;
}

static void start_client(uv_loop_t *loop, const CatalogConfig *config, CatalogClient **ret) {
        Outcome start = {};

        ASSERT_OK(catalog_client_new(loop, config, ret));
        ASSERT_OK(catalog_client_start(*ret, outcome_record, &start));
        run_until(loop, &start.is_done);
        if (start.status != 0)
                TEST_FAIL("start: %s (%s)", catalog_outcome_to_string(start.status), start.message);
        ASSERT_TRUE(json_is_object(start.body));
        ASSERT_TRUE(catalog_client_is_ready(*ret));
        outcome_reset(&start);
}

TEST(rest_catalog_round_trip) {
        const char *uri = catalog_uri();
        char ns_name[128], table[128];
        const char *ns2[2];
        json_t *create, *request, *metadata;
        Outcome o = {};
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        const char *uuid;
        char *table_uuid;

        if (!uri)
                return;
        ASSERT_OK(uv_loop_init(&loop));
        config = test_config(uri);
        start_client(&loop, &config, &c);
        printf("catalog at %s: prefix='%s' separator='%s' idempotency=%s\n", uri,
               catalog_client_prefix(c) ? catalog_client_prefix(c) : "",
               catalog_client_namespace_separator(c),
               catalog_client_supports_idempotency(c) ? "yes" : "no");
        ASSERT_TRUE(catalog_client_supports_endpoint(c, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"));

        /* A two-level namespace whose second level needs encoding, and an odd table name. */
        unique_name(ns_name, sizeof(ns_name), "ns");
        ns2[0] = ns_name;
        ns2[1] = "level two";
        ASSERT_OK(catalog_create_namespace(c, ns2, 1, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        ASSERT_OK(catalog_create_namespace(c, ns2, 2, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        if (o.status != 0)
                TEST_FAIL("create namespace: %s HTTP %ld %s", catalog_outcome_to_string(o.status),
                          o.http_status, o.message);
        outcome_reset(&o);
        /* Again: AlreadyExists is a 409. */
        ASSERT_OK(catalog_create_namespace(c, ns2, 2, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_EQ(o.http_status, 409);
        printf("namespace exists: HTTP 409 type='%s' message='%s'\n", o.error_type, o.message);
        outcome_reset(&o);

        unique_name(table, sizeof(table), "t+1 x");
        create = create_table_request();
        ASSERT_OK(catalog_create_table(c, ns2, 2, table, create, outcome_record, &o));
        run_until(&loop, &o.is_done);
        if (o.status != 0)
                TEST_FAIL("create table: %s HTTP %ld %s", catalog_outcome_to_string(o.status),
                          o.http_status, o.message);
        /* The caller's request is untouched. */
        ASSERT_TRUE(json_object_get(create, "name") == NULL);
        outcome_reset(&o);

        ASSERT_OK(catalog_load_table(c, ns2, 2, table, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.http_status, 200);
        metadata = json_object_get(o.body, "metadata");
        ASSERT_EQ(json_integer_value(json_object_get(metadata, "format-version")), 3);
        ASSERT_TRUE(json_is_integer(json_object_get(metadata, "next-row-id")));
        ASSERT_EQ(json_integer_value(json_object_get(metadata, "next-row-id")), 0);
        ASSERT_TRUE(json_is_string(json_object_get(o.body, "metadata-location")));
        uuid = json_string_value(json_object_get(metadata, "table-uuid"));
        ASSERT_TRUE(uuid);
        table_uuid = strdup(uuid);
        ASSERT_TRUE(table_uuid);
        outcome_reset(&o);

        request = commit_request(table_uuid);
        ASSERT_OK(catalog_commit_table(c, ns2, 2, table, request, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        if (o.status != 0)
                TEST_FAIL("commit: %s HTTP %ld %s", catalog_outcome_to_string(o.status),
                          o.http_status, o.message);
        ASSERT_STREQ(json_string_value(json_object_get(json_object_get(json_object_get(o.body, "metadata"),
                                                                       "properties"), "icecommit.test")),
                     "yes");
        outcome_reset(&o);
        json_decref(request);

        request = commit_request("00000000-0000-0000-0000-000000000000");
        ASSERT_OK(catalog_commit_table(c, ns2, 2, table, request, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_EQ(o.http_status, 409);
        ASSERT_STREQ(o.error_type, "CommitFailedException");
        ASSERT_CONTAINS(o.message, "Requirement failed: UUID does not match");
        ASSERT_CONTAINS(o.message, table_uuid);
        printf("conflict: HTTP 409 type='%s' message='%s'\n", o.error_type, o.message);
        outcome_reset(&o);
        json_decref(request);

        ASSERT_OK(catalog_load_table(c, ns2, 2, "no_such_table", outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, CATALOG_E_NOT_FOUND);
        ASSERT_EQ(o.http_status, 404);
        ASSERT_STREQ(o.error_type, "NoSuchTableException");
        printf("missing table: HTTP 404 type='%s' message='%s'\n", o.error_type, o.message);
        outcome_reset(&o);
        ASSERT_EQ(catalog_client_connections_opened(c), 1);

        client_finish(&loop, c);
        loop_finish(&loop);
        json_decref(create);
        free(table_uuid);
}

/* The 1.11 server honours Idempotency-Key without advertising it: a second commit with the same
 * key is answered from the first one, even with a body that would conflict. */
TEST(rest_catalog_idempotency_key) {
        const char *uri = catalog_uri();
        char ns_name[128], table[128], key[64];
        const char *ns[1];
        json_t *create, *request;
        Outcome o = {};
        CatalogConfig config;
        CatalogClient *c;
        uv_loop_t loop;
        char *uuid;

        if (!uri)
                return;
        ASSERT_OK(uv_loop_init(&loop));
        config = test_config(uri);
        config.send_idempotency_key = true;
        start_client(&loop, &config, &c);
        ASSERT_TRUE(catalog_client_supports_idempotency(c));

        unique_name(ns_name, sizeof(ns_name), "ik");
        ns[0] = ns_name;
        ASSERT_OK(catalog_create_namespace(c, ns, 1, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        create = create_table_request();
        unique_name(table, sizeof(table), "t");
        ASSERT_OK(catalog_create_table(c, ns, 1, table, create, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, 0);
        uuid = strdup(json_string_value(json_object_get(json_object_get(o.body, "metadata"), "table-uuid")));
        ASSERT_TRUE(uuid);
        outcome_reset(&o);

        unique_name(key, sizeof(key), "key");
        request = commit_request(uuid);
        ASSERT_OK(catalog_commit_table(c, ns, 1, table, request, key, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        json_decref(request);

        request = commit_request("00000000-0000-0000-0000-000000000000");
        ASSERT_OK(catalog_commit_table(c, ns, 1, table, request, key, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        /* Without the key the same body conflicts: the header did reach the server. */
        ASSERT_OK(catalog_commit_table(c, ns, 1, table, request, NULL, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        outcome_reset(&o);
        json_decref(request);

        client_finish(&loop, c);
        loop_finish(&loop);
        json_decref(create);
        free(uuid);
}

/* The fixture serves the (deprecated) /v1/oauth/tokens client_credentials grant. */
TEST(rest_catalog_oauth2_client_credentials) {
        const char *uri = catalog_uri();
        CatalogConfig config;
        CatalogClient *c;
        Outcome o = {};
        uv_loop_t loop;

        if (!uri)
                return;
        ASSERT_OK(uv_loop_init(&loop));
        config = test_config(uri);
        config.credential = (char *)"icecommit:not-a-real-secret";
        start_client(&loop, &config, &c);
        ASSERT_OK(catalog_load_table(c, one_ns, 1, "icecommit_no_such_table", outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, CATALOG_E_NOT_FOUND);
        outcome_reset(&o);
        client_finish(&loop, c);

        /* An unreachable token endpoint: nothing was sent to the catalog. */
        config.oauth2_server_uri = (char *)"http://127.0.0.1:1/token";
        ASSERT_OK(catalog_client_new(&loop, &config, &c));
        ASSERT_OK(catalog_client_start(c, outcome_record, &o));
        run_until(&loop, &o.is_done);
        ASSERT_EQ(o.status, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(o.message, "oauth2 token request to 'http://127.0.0.1:1/token'");
        outcome_reset(&o);
        client_finish(&loop, c);
        loop_finish(&loop);
}
