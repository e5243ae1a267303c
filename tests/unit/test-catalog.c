/* SPDX-License-Identifier: Apache-2.0 */
/* catalog/: pure tests of paths, encodings, parsers and the outcome table; a port nobody listens
 * on; and, with ICECOMMIT_TEST_CATALOG_URI set, the real Apache Iceberg REST catalog
 * (tests/peers/catalog-start.sh), plain and behind its fault injector (/__faults: lost answers,
 * 5xx, timeouts, resent commits). No imitation of a catalog. Every loop runs to the end. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "catalog/rest_client.h"
#include "catalog/rest.h"
#include "iceberg/table.h"
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
                .parse_off_loop_bytes = 64u << 10, /* the daemon's default */
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

        ASSERT_TRUE(!o->is_done); /* exactly once */
        o->is_done = true;
        o->status = result->status;
        o->http_status = result->http_status;
        o->body = result->body ? json_incref(result->body) : NULL;
        memcpy(o->message, result->message, sizeof(o->message));
        memcpy(o->error_type, result->error_type, sizeof(o->error_type));
}

static void outcome_reset(Outcome *o) {
        json_decref(o->body);
        *o = (Outcome){ 0 };
}

/* An Outcome's status, with the catalog's words when it is not the one wanted. */
#define ASSERT_OUTCOME(o, want)                                                                    \
        do {                                                                                       \
                const Outcome *_o = &(o);                                                          \
                int _want = (want);                                                                \
                if (_o->status != _want)                                                           \
                        TEST_FAIL("ASSERT_OUTCOME(%s, %s) failed: %s (%d) != %s (%d): "            \
                                  "HTTP %ld %s",                                                   \
                                  #o, #want, catalog_outcome_to_string(_o->status), _o->status,    \
                                  catalog_outcome_to_string(_want), _want, _o->http_status,        \
                                  _o->message);                                                    \
        } while (0)

static void run_until(uv_loop_t *loop, const bool *flag) {
        while (!*flag)
                ASSERT_TRUE(uv_run(loop, UV_RUN_ONCE) != 0 || *flag);
}

static void on_closed(void *userdata) {
        *(bool *)userdata = true;
}

/* Closes the client, runs the loop dry and checks that nothing was left open. */
static void client_finish(uv_loop_t *loop, RestClient *c) {
        bool is_closed = false;

        rest_catalog_backend.close(c, on_closed, &is_closed);
        run_until(loop, &is_closed);
        ASSERT_TRUE(rest_client_free(c) == NULL);
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

        rest_text_copy(small, sizeof(small),
                       "a\nb\x01"
                       "c",
                       5);
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
                                                  "\"code\":404}}"),
                                   &e));
        ASSERT_STREQ(e.message, "Table does not exist: ns.t");
        ASSERT_EQ(e.code, 404);

        /* RFC 6749's error shape from a token endpoint. */
        ASSERT_OK(rest_error_parse(slice_from_str("{\"error\":\"invalid_client\","
                                                  "\"error_description\":\"bad secret\"}"),
                                   &e));
        ASSERT_STREQ(e.type, "invalid_client");
        ASSERT_STREQ(e.message, "bad secret");

        /* Log-safe: control characters become spaces; odd codes drop. */
        ASSERT_OK(rest_error_parse(slice_from_str("{\"error\":{\"message\":\"a\\nb\\u0001c\","
                                                  "\"code\":200}}"),
                                   &e));
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
        "\"endpoints\":[\"GET v1/config\",\"GET "
        "/v1/{prefix}/namespaces/{namespace}/tables/{table}\","
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
        Error e = { 0 };

        ASSERT_OK(config_parse_str(fixture_config, NULL, &c, &e));
        ASSERT_TRUE(c.prefix == NULL);
        ASSERT_STREQ(c.namespace_separator, "%2E");
        ASSERT_TRUE(c.has_endpoints);
        ASSERT_EQ(c.n_endpoints, 3);
        ASSERT_TRUE(rest_config_has_endpoint(
                &c, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"));
        ASSERT_TRUE(!rest_config_has_endpoint(&c, "POST /v1/{prefix}/transactions/commit"));
        ASSERT_TRUE(!c.has_idempotency);
        rest_config_deinit(&c);

        /* defaults < client < overrides; no endpoints means the OpenAPI default set. */
        client = json_pack("{s:s, s:s}", "prefix", "client", "warehouse", "wh");
        ASSERT_TRUE(client);
        ASSERT_OK(
                config_parse_str("{\"defaults\":{\"prefix\":\"d\",\"warehouse\":\"d\",\"x\":\"d\"},"
                                 "\"overrides\":{\"warehouse\":\"o\"},"
                                 "\"idempotency-key-lifetime\":\"PT30M\"}",
                                 client, &c, &e));
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
                                   "\"idempotency-key-lifetime\":\"P1M\"}",
                                   NULL, &c, &e));
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
                { "P1M", -EINVAL, 0 }, /* a month has no fixed length */
                { "P1Y", -EINVAL, 0 },
                { "PT1M1H", -EINVAL, 0 }, /* out of order */
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
        Error e = { 0 };

        /* The fixture's /v1/oauth/tokens answer. */
        ASSERT_OK(rest_token_parse(slice_from_str("{\"access_token\":\"client-credentials-token:"
                                                  "sub=a\",\"token_type\":\"Bearer\"}"),
                                   &t, &e));
        ASSERT_STREQ(t.access_token, "client-credentials-token:sub=a");
        ASSERT_TRUE(!t.has_expires_in);
        rest_token_deinit(&t);
        ASSERT_TRUE(t.access_token == NULL);

        ASSERT_OK(
                rest_token_parse(slice_from_str("{\"access_token\":\"x\",\"token_type\":\"bearer\","
                                                "\"expires_in\":3600}"),
                                 &t, &e));
        ASSERT_TRUE(t.has_expires_in);
        ASSERT_EQ(t.expires_in_s, 3600);
        rest_token_deinit(&t);
        ASSERT_OK(rest_token_parse(slice_from_str("{\"access_token\":\"x\",\"expires_in\":\"60\","
                                                  "\"issued_token_type\":\"urn:x\"}"),
                                   &t, &e));
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
        Error e = { 0 };

        ASSERT_OK(rest_json_parse(slice_from_str("{\"next-row-id\":9223372036854775807}"), &j, &e));
        ASSERT_EQ(json_integer_value(json_object_get(j, "next-row-id")), INT64_MAX);
        json_decref(j);
        ASSERT_EQ(rest_json_parse(slice_from_str("{\"next-row-id\":9223372036854775808}"), &j, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "too big integer");
        ASSERT_EQ(rest_json_parse(slice_from_str("{\"a\":-9223372036854775809}"), &j, &e),
                  -EBADMSG);
        ASSERT_EQ(rest_json_parse(slice_from_str("{\"a\":1e999}"), &j, &e), -EBADMSG);
}

TEST(table_result_check) {
        static const struct {
                const char *json;
                int r;
        } cases[] = {
                { "{\"metadata-location\":\"/wh/t/m.json\",\"metadata\":{\"format-version\":3}}",
                  0 },
                { "{\"metadata-location\":null,\"metadata\":{}}", 0 },
                { "{\"metadata\":{},\"config\":{\"k\":\"v\"}}", 0 },
                { "{\"metadata-location\":\"x\"}", -EBADMSG },
                { "{\"metadata\":[]}", -EBADMSG },
                { "{\"metadata\":{},\"metadata-location\":5}", -EBADMSG },
                { "[]", -EBADMSG },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *j = NULL;
                Error e = { 0 };

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
                        TEST_FAIL("HTTP %ld: read %s (want %s), mutation %s (want %s)",
                                  cases[i].http, catalog_outcome_to_string(read),
                                  catalog_outcome_to_string(cases[i].read),
                                  catalog_outcome_to_string(mutation),
                                  catalog_outcome_to_string(cases[i].mutation));
        }
        ASSERT_STREQ(catalog_outcome_to_string(-ECANCELED), "error");
}

TEST(client_new_rejects_bad_config) {
        uv_loop_t loop;
        RestClient *c = NULL;
        CatalogConfig config;
        ConfigHeader evil = { (char *)"X-Test", (char *)"a\r\nX-Injected: 1" };
        ConfigHeader bad_name = { (char *)"X Test", (char *)"a" };

        ASSERT_OK(uv_loop_init(&loop));
        config = test_config(NULL);
        ASSERT_EQ(rest_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("ftp://127.0.0.1/");
        ASSERT_EQ(rest_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("http://127.0.0.1:1");
        config.headers = &evil;
        config.n_headers = 1;
        ASSERT_EQ(rest_client_new(&loop, &config, &c), -EINVAL);
        config.headers = &bad_name;
        ASSERT_EQ(rest_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("http://127.0.0.1:1");
        config.token = (char *)"tok en";
        ASSERT_EQ(rest_client_new(&loop, &config, &c), -EINVAL);
        config = test_config("http://127.0.0.1:1");
        config.oauth2_server_uri = (char *)"idp.example.com/token";
        ASSERT_EQ(rest_client_new(&loop, &config, &c), -EINVAL);
        ASSERT_TRUE(c == NULL);
        /* Nothing was left on the loop by the failures. */
        loop_finish(&loop);
}

static json_t *commit_request_set(const char *uuid, const char *key, const char *value) {
        json_t *j = json_pack("{s:[{s:s,s:s}], s:[{s:s,s:{s:s}}]}", "requirements", "type",
                              "assert-table-uuid", "uuid", uuid, "updates", "action",
                              "set-properties", "updates", key, value);

        ASSERT_TRUE(j);
        return j;
}

static json_t *commit_request(const char *uuid) {
        return commit_request_set(uuid, "icecommit.test", "yes");
}

/* ---- no server at all: a port nobody listens on ------------------------------------------- */

TEST(closed_port_is_unavailable) {
        CatalogConfig config = test_config("http://127.0.0.1:1");
        json_t *request = commit_request("00000000-0000-0000-0000-000000000000");
        Outcome start = { 0 }, load = { 0 }, commit = { 0 };
        RestClient *c;
        uv_loop_t loop;

        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_OK(rest_client_new(&loop, &config, &c));
        /* The load and commit wait for the /v1/config that start sends: nothing is sent, so
         * even the commit is safe to retry. */
        ASSERT_OK(rest_catalog_backend.start(c, outcome_record, &start));
        ASSERT_OK(rest_catalog_backend.load_table(c, one_ns, 1, "t", outcome_record, &load));
        ASSERT_OK(rest_catalog_backend.commit_table(c, one_ns, 1, "t", request, "key-1",
                                                    outcome_record, &commit));
        run_until(&loop, &commit.is_done);
        ASSERT_TRUE(start.is_done && load.is_done);
        ASSERT_OUTCOME(start, CATALOG_E_UNAVAILABLE);
        ASSERT_EQ(start.http_status, 0);
        ASSERT_CONTAINS(start.message, "catalog unreachable");
        ASSERT_OUTCOME(load, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(load.message, "catalog configuration unavailable");
        ASSERT_OUTCOME(commit, CATALOG_E_UNAVAILABLE);
        ASSERT_TRUE(!rest_catalog_backend.is_ready(c));
        ASSERT_TRUE(!rest_catalog_backend.supports_idempotency(c));

        /* Without a start, a load fetches /v1/config on its own, with the same outcome. */
        outcome_reset(&load);
        ASSERT_OK(rest_catalog_backend.load_table(c, one_ns, 1, "t", outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_OUTCOME(load, CATALOG_E_UNAVAILABLE);

        /* The started client retries /v1/config in the background until closed. */
        client_finish(&loop, c);
        json_decref(request);
        outcome_reset(&start);
        outcome_reset(&load);
        outcome_reset(&commit);
        loop_finish(&loop);
}

/* ---- the real Apache Iceberg REST catalog ---------------------------------------------------- */

static const char *catalog_uri(void) {
        const char *uri = getenv("ICECOMMIT_TEST_CATALOG_URI");

        if (!uri || !*uri) {
                printf("skip: ICECOMMIT_TEST_CATALOG_URI is not set "
                       "(tests/peers/catalog-start.sh)\n");
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
        json_t *j = json_pack("{s:{s:s,s:i,s:[{s:i,s:s,s:b,s:s}]}, s:{s:s}}", "schema", "type",
                              "struct", "schema-id", 0, "fields", "id", 1, "name", "id", "required",
                              0, "type", "long", "properties", "format-version", "3");

        ASSERT_TRUE(j);
        return j;
}

static void start_client(uv_loop_t *loop, const CatalogConfig *config, RestClient **ret) {
        Outcome start = { 0 };

        ASSERT_OK(rest_client_new(loop, config, ret));
        ASSERT_OK(rest_catalog_backend.start(*ret, outcome_record, &start));
        run_until(loop, &start.is_done);
        ASSERT_OUTCOME(start, 0);
        ASSERT_TRUE(json_is_object(start.body));
        ASSERT_TRUE(rest_catalog_backend.is_ready(*ret));
        outcome_reset(&start);
}

/* The fault injector's control endpoint, {uri}/__faults (tests/peers/java/.../FaultInjector.java,
 * tests/integration/faults.py), and tables of their own for the cases that use it. */

static size_t faults_on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
        return buf_append(userdata, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
}

/* One blocking request to the injector's control endpoint (outside any loop); returns its
 * state: {"commit": [...], "load": [...], "table", "injected": {kind: n},
 * "matched": {"commit": n, "load": n}, "events": [...]}. Takes `body` (may be NULL). */
static json_t *faults_call(const char *uri, const char *method, json_t *body) {
        struct curl_slist *headers = NULL;
        Buf answer;
        char url[1024], *text = NULL;
        size_t uri_len = strlen(uri);
        json_error_t error;
        long http_status = 0;
        CURLcode code;
        json_t *state;
        CURL *easy;

        buf_init(&answer, 1 << 20);
        while (uri_len > 0 && uri[uri_len - 1] == '/')
                uri_len--;
        ASSERT_TRUE((size_t)snprintf(url, sizeof(url), "%.*s/__faults", (int)uri_len, uri) <
                    sizeof(url));
        ASSERT_EQ(curl_global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
        easy = curl_easy_init();
        ASSERT_TRUE(easy);
        ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_URL, url), CURLE_OK);
        ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method), CURLE_OK);
        ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L), CURLE_OK);
        ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, 30000L), CURLE_OK);
        ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, faults_on_body), CURLE_OK);
        ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_WRITEDATA, (void *)&answer), CURLE_OK);
        if (body) {
                text = json_dumps(body, JSON_COMPACT);
                ASSERT_TRUE(text);
                headers = curl_slist_append(headers, "Content-Type: application/json");
                ASSERT_TRUE(headers);
                ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers), CURLE_OK);
                ASSERT_EQ(curl_easy_setopt(easy, CURLOPT_POSTFIELDS, text), CURLE_OK);
        }
        code = curl_easy_perform(easy);
        if (code != CURLE_OK)
                TEST_FAIL("%s %s: %s", method, url, curl_easy_strerror(code));
        ASSERT_EQ(curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &http_status), CURLE_OK);
        if (http_status != 200)
                TEST_FAIL("%s %s: HTTP %ld: %s", method, url, http_status, buf_str(&answer));
        state = json_loadb(buf_str(&answer), answer.len, 0, &error);
        if (!state)
                TEST_FAIL("%s %s: not JSON: %s", method, url, buf_str(&answer));
        curl_easy_cleanup(easy);
        curl_slist_free_all(headers);
        curl_global_cleanup();
        buf_deinit(&answer);
        free(text);
        json_decref(body);
        return state;
}

static void faults_clear(const char *uri) {
        json_decref(faults_call(uri, "DELETE", NULL));
}

/* Replaces both queues with JSON arrays of fault kinds, for requests to `table` ("ns.t") only. */
static void faults_set(const char *uri, const char *table, const char *commit, const char *load) {
        json_t *body = json_pack("{s:o,s:o,s:s}", "commit", json_loads(commit, 0, NULL), "load",
                                 json_loads(load, 0, NULL), "table", table);

        ASSERT_TRUE(body);
        json_decref(faults_call(uri, "POST", body));
}

/* Requests to the filtered table that reached a queue ("commit" or "load") since the queues
 * were set, faulted or not. */
static json_int_t faults_matched(const char *uri, const char *queue) {
        json_t *state = faults_call(uri, "GET", NULL);
        json_int_t n;

        n = json_integer_value(json_object_get(json_object_get(state, "matched"), queue));

        json_decref(state);
        return n;
}

/* The faults injected on requests to `table` ("ns.t") since the last clear, oldest first (each
 * {"queue", "table", "kind", "hidden-status", "idempotency-key", "time-ms"}). Only that
 * table's: the counters are global, and a delayed request of an earlier case records its
 * event when its delay ends. */
static json_t *faults_events(const char *uri, const char *table) {
        json_t *state = faults_call(uri, "GET", NULL), *events = json_array(), *event;
        size_t i;

        ASSERT_TRUE(events);
        json_array_foreach (json_object_get(state, "events"), i, event) {
                const char *name = json_string_value(json_object_get(event, "table"));

                if (strcmp(name ? name : "", table) == 0)
                        ASSERT_OK(json_array_append(events, event));
        }
        json_decref(state);
        return events;
}

/* The same as "kind,kind,...", for ASSERT_STREQ. */
static void faults_injected(const char *uri, const char *table, char *buf, size_t size) {
        json_t *events = faults_events(uri, table), *event;
        size_t i, len = 0;

        buf[0] = '\0';
        json_array_foreach (events, i, event) {
                len += (size_t)snprintf(buf + len, size - len, "%s%s", i > 0 ? "," : "",
                                        json_string_value(json_object_get(event, "kind")));
                ASSERT_TRUE(len < size);
        }
        json_decref(events);
}

/* A case against the real catalog: its loop, a client started on it, a namespace of its own with
 * one table "t" in it (created through the client under test, unless the case begins without),
 * and the outcomes of the latest commit to and load of that table. */
typedef struct RestCase {
        const char *uri;
        uv_loop_t loop;
        RestClient *c; /* NULL once the case closed it itself */
        char ns_name[128];
        const char *ns[1];
        const char *table;
        char filter[160]; /* "ns.t": the injector's table filter */
        char *uuid;
        Outcome commit, load;
} RestCase;

/* Each waits for its call to end, with the outcome in `o` (reset first). */
static void namespace_create_wait(RestCase *t, const char *const *ns, size_t n_ns, Outcome *o) {
        outcome_reset(o);
        ASSERT_OK(rest_catalog_backend.create_namespace(t->c, ns, n_ns, NULL, outcome_record, o));
        run_until(&t->loop, &o->is_done);
}

static void table_create_wait(RestCase *t, const char *const *ns, size_t n_ns, const char *name,
                              const json_t *request, Outcome *o) {
        outcome_reset(o);
        ASSERT_OK(rest_catalog_backend.create_table(t->c, ns, n_ns, name, request, outcome_record,
                                                    o));
        run_until(&t->loop, &o->is_done);
}

static void table_load_wait(RestCase *t, const char *const *ns, size_t n_ns, const char *table,
                            Outcome *o) {
        outcome_reset(o);
        ASSERT_OK(rest_catalog_backend.load_table(t->c, ns, n_ns, table, outcome_record, o));
        run_until(&t->loop, &o->is_done);
}

static void table_commit_wait(RestCase *t, const char *const *ns, size_t n_ns, const char *table,
                              const json_t *request, const char *idempotency_key, Outcome *o) {
        outcome_reset(o);
        ASSERT_OK(rest_catalog_backend.commit_table(t->c, ns, n_ns, table, request, idempotency_key,
                                                    outcome_record, o));
        run_until(&t->loop, &o->is_done);
}

/* The case's own table: a commit into t->commit, a load into t->load. */
static void commit_wait(RestCase *t, const json_t *request, const char *idempotency_key) {
        table_commit_wait(t, t->ns, 1, t->table, request, idempotency_key, &t->commit);
}

static void load_wait(RestCase *t) {
        table_load_wait(t, t->ns, 1, t->table, &t->load);
}

static void own_table_create(RestCase *t, const char *what) {
        json_t *create = create_table_request();
        Outcome o = { 0 };

        unique_name(t->ns_name, sizeof(t->ns_name), what);
        t->ns[0] = t->ns_name;
        t->table = "t";
        ASSERT_TRUE((size_t)snprintf(t->filter, sizeof(t->filter), "%s.%s", t->ns_name, t->table) <
                    sizeof(t->filter));
        namespace_create_wait(t, t->ns, 1, &o);
        ASSERT_OUTCOME(o, 0);
        table_create_wait(t, t->ns, 1, t->table, create, &o);
        ASSERT_OUTCOME(o, 0);
        t->uuid = strdup(json_string_value(
                json_object_get(json_object_get(o.body, "metadata"), "table-uuid")));
        ASSERT_TRUE(t->uuid);
        outcome_reset(&o);
        json_decref(create);
}

/* Begins a case with `config`, whose uri is NULL without a catalog (then returns false: skip).
 * Clears any fault an aborted case left queued, starts a client and, when `what` is set, creates
 * a table of its own in a namespace named after `what`. */
static bool rest_case_begin(RestCase *t, const CatalogConfig *config, const char *what) {
        *t = (RestCase){ .uri = config->uri };
        if (!t->uri)
                return false;
        faults_clear(t->uri);
        ASSERT_OK(uv_loop_init(&t->loop));
        start_client(&t->loop, config, &t->c);
        if (what)
                own_table_create(t, what);
        return true;
}

/* Clears the faults, closes the client unless the case did, and runs the loop to its end. */
static void rest_case_end(RestCase *t) {
        faults_clear(t->uri);
        if (t->c)
                client_finish(&t->loop, TAKE_PTR(t->c));
        loop_finish(&t->loop);
        outcome_reset(&t->commit);
        outcome_reset(&t->load);
        free(t->uuid);
}

/* The table's property `key` as the catalog has it now (a fault-free load), or NULL. */
static char *loaded_property(RestCase *t, const char *key) {
        const char *value;
        Outcome o = { 0 };
        char *copy;

        table_load_wait(t, t->ns, 1, t->table, &o);
        ASSERT_OUTCOME(o, 0);
        value = json_string_value(
                json_object_get(json_object_get(json_object_get(o.body, "metadata"), "properties"),
                                key));
        copy = value ? strdup(value) : NULL;
        ASSERT_TRUE(!value || copy);
        outcome_reset(&o);
        return copy;
}

static void assert_property(RestCase *t, const char *key, const char *want) {
        char *value = loaded_property(t, key);

        if (want)
                ASSERT_STREQ(value, want);
        else if (value)
                TEST_FAIL("property %s is \"%s\", want none", key, value);
        free(value);
}

TEST(rest_catalog_round_trip) {
        CatalogConfig config = test_config(catalog_uri());
        char ns_name[128], table[128];
        const char *ns2[2];
        json_t *create, *request, *metadata;
        const char *uuid;
        char *table_uuid;
        Outcome o = { 0 };
        RestCase t;

        if (!rest_case_begin(&t, &config, /* what= */ NULL))
                return;
        printf("catalog at %s: prefix='%s' separator='%s' idempotency=%s\n", t.uri,
               rest_client_prefix(t.c) ? rest_client_prefix(t.c) : "",
               rest_client_namespace_separator(t.c),
               rest_catalog_backend.supports_idempotency(t.c) ? "yes" : "no");
        ASSERT_TRUE(rest_client_supports_endpoint(
                t.c, "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"));

        /* A two-level namespace whose second level needs encoding, and an odd table name. */
        unique_name(ns_name, sizeof(ns_name), "ns");
        ns2[0] = ns_name;
        ns2[1] = "level two";
        namespace_create_wait(&t, ns2, 1, &o);
        ASSERT_OUTCOME(o, 0);
        namespace_create_wait(&t, ns2, 2, &o);
        ASSERT_OUTCOME(o, 0);
        /* Again: AlreadyExists is a 409. */
        namespace_create_wait(&t, ns2, 2, &o);
        ASSERT_OUTCOME(o, CATALOG_E_CONFLICT);
        ASSERT_EQ(o.http_status, 409);
        printf("namespace exists: HTTP 409 type='%s' message='%s'\n", o.error_type, o.message);

        unique_name(table, sizeof(table), "t+1 x");
        create = create_table_request();
        table_create_wait(&t, ns2, 2, table, create, &o);
        ASSERT_OUTCOME(o, 0);
        /* The caller's request is untouched. */
        ASSERT_TRUE(json_object_get(create, "name") == NULL);

        table_load_wait(&t, ns2, 2, table, &o);
        ASSERT_OUTCOME(o, 0);
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

        request = commit_request(table_uuid);
        table_commit_wait(&t, ns2, 2, table, request, NULL, &o);
        ASSERT_OUTCOME(o, 0);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(json_object_get(o.body, "metadata"),
                                                             "properties"),
                                             "icecommit.test")),
                     "yes");
        json_decref(request);

        request = commit_request("00000000-0000-0000-0000-000000000000");
        table_commit_wait(&t, ns2, 2, table, request, NULL, &o);
        ASSERT_OUTCOME(o, CATALOG_E_CONFLICT);
        ASSERT_EQ(o.http_status, 409);
        ASSERT_STREQ(o.error_type, "CommitFailedException");
        ASSERT_CONTAINS(o.message, "Requirement failed: UUID does not match");
        ASSERT_CONTAINS(o.message, table_uuid);
        printf("conflict: HTTP 409 type='%s' message='%s'\n", o.error_type, o.message);
        json_decref(request);

        table_load_wait(&t, ns2, 2, "no_such_table", &o);
        ASSERT_OUTCOME(o, CATALOG_E_NOT_FOUND);
        ASSERT_EQ(o.http_status, 404);
        ASSERT_STREQ(o.error_type, "NoSuchTableException");
        printf("missing table: HTTP 404 type='%s' message='%s'\n", o.error_type, o.message);
        ASSERT_EQ(rest_client_connections_opened(t.c), 1);

        outcome_reset(&o);
        json_decref(create);
        free(table_uuid);
        rest_case_end(&t);
}

/* The 1.11 server honours Idempotency-Key without advertising it: a second commit with the same
 * key is answered from the first one, even with a body that would conflict. */
TEST(rest_catalog_idempotency_key) {
        CatalogConfig config = test_config(catalog_uri());
        json_t *request;
        char key[64];
        RestCase t;

        config.send_idempotency_key = true;
        if (!rest_case_begin(&t, &config, "ik"))
                return;
        ASSERT_TRUE(rest_catalog_backend.supports_idempotency(t.c));

        unique_name(key, sizeof(key), "key");
        request = commit_request(t.uuid);
        commit_wait(&t, request, key);
        ASSERT_OUTCOME(t.commit, 0);
        json_decref(request);

        request = commit_request("00000000-0000-0000-0000-000000000000");
        commit_wait(&t, request, key);
        ASSERT_OUTCOME(t.commit, 0);
        /* Without the key the same body conflicts: the header did reach the server. */
        commit_wait(&t, request, NULL);
        ASSERT_OUTCOME(t.commit, CATALOG_E_CONFLICT);
        json_decref(request);

        rest_case_end(&t);
}

/* The fixture serves the (deprecated) /v1/oauth/tokens client_credentials grant. */
TEST(rest_catalog_oauth2_client_credentials) {
        CatalogConfig config = test_config(catalog_uri());
        Outcome o = { 0 };
        RestCase t;

        config.credential = (char *)"icecommit:not-a-real-secret";
        if (!rest_case_begin(&t, &config, /* what= */ NULL))
                return;
        table_load_wait(&t, one_ns, 1, "icecommit_no_such_table", &o);
        ASSERT_OUTCOME(o, CATALOG_E_NOT_FOUND);
        client_finish(&t.loop, TAKE_PTR(t.c));

        /* An unreachable token endpoint: nothing was sent to the catalog. */
        config.oauth2_server_uri = (char *)"http://127.0.0.1:1/token";
        ASSERT_OK(rest_client_new(&t.loop, &config, &t.c));
        outcome_reset(&o);
        ASSERT_OK(rest_catalog_backend.start(t.c, outcome_record, &o));
        run_until(&t.loop, &o.is_done);
        ASSERT_OUTCOME(o, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(o.message, "oauth2 token request to 'http://127.0.0.1:1/token'");

        outcome_reset(&o);
        rest_case_end(&t);
}

/* ---- the real catalog behind its fault injector ------------------------------------------------
 * tests/peers/java/.../FaultInjector.java sits in front of the unmodified catalog servlet: each
 * fault queued through {uri}/__faults applies to the next matching request to one table
 * ("commit" = POST, "load" = GET of /v1/namespaces/{ns}/tables/{t}) and either answers instead
 * of the catalog, or lets the catalog act and then loses or replaces its answer. Every case
 * clears the queues at its start and end and works on a table of its own.
 *
 * Dropped with the scripted peer these cases replace: the one resend after a 401/419 with a
 * fresh token (same Idempotency-Key). The real server never checks bearer tokens, so no real
 * peer refuses one here, and an imitation of a catalog is not a peer; Project Nessie does, in
 * tests/integration/test_catalog_nessie.py. The token fetch itself is covered by
 * rest_catalog_oauth2_client_credentials. Also dropped: /v1/config answering 503
 * while "starting" (the real server only listens once it is ready), and checks of the exact
 * request lines and headers on the wire (the real server does not report them; the injector
 * reports the Idempotency-Key, see rest_catalog_headers_keepalive). */

/* A commit applied by the catalog whose answer never came back (TCP RST): its fate is unknown
 * to us, though it did apply; a read without an answer is merely retryable. */
TEST(rest_catalog_lost_answer) {
        CatalogConfig config = test_config(catalog_uri());
        json_t *request, *events, *event;
        RestCase t;
        size_t i;

        if (!rest_case_begin(&t, &config, "lost"))
                return;

        /* The commit goes out on the connection that created the table. Should libcurl resend
         * it on a fresh one (it may, for a reused connection that died unanswered), that copy
         * is applied and reset as well. */
        faults_set(t.uri, t.filter, "[\"reset\", \"reset\"]", "[]");
        request = commit_request_set(t.uuid, "icecommit.lost", "applied");
        commit_wait(&t, request, NULL);
        ASSERT_OUTCOME(t.commit, CATALOG_E_STATE_UNKNOWN);
        ASSERT_EQ(t.commit.http_status, 0);
        ASSERT_CONTAINS(t.commit.message, "no answer from the catalog");
        ASSERT_TRUE(rest_catalog_backend.is_ready(t.c));
        events = faults_events(t.uri, t.filter);
        ASSERT_TRUE(json_array_size(events) >= 1);
        json_array_foreach (events, i, event) {
                ASSERT_STREQ(json_string_value(json_object_get(event, "kind")), "reset");
                ASSERT_EQ(json_integer_value(json_object_get(event, "hidden-status")), 200);
        }
        printf("lost answer: %s; catalog applied it %zu time(s)\n", t.commit.message,
               json_array_size(events));
        json_decref(events);

        /* And it did apply. */
        faults_clear(t.uri);
        assert_property(&t, "icecommit.lost", "applied");

        faults_set(t.uri, t.filter, "[]", "[\"reset\", \"reset\"]");
        load_wait(&t);
        ASSERT_OUTCOME(t.load, CATALOG_E_UNAVAILABLE);
        ASSERT_EQ(t.load.http_status, 0);
        ASSERT_CONTAINS(t.load.message, "no answer from the catalog");
        ASSERT_TRUE(rest_catalog_backend.is_ready(t.c));

        json_decref(request);
        rest_case_end(&t);
}

/* Every answer the injector can give instead of the catalog, on a commit and on a load. */
TEST(rest_catalog_error_statuses) {
        static const struct {
                const char *kind;
                long http;
                int commit, load;
                const char *commit_type, *load_type;
        } cases[] = {
                { "error-500", 500, CATALOG_E_STATE_UNKNOWN, CATALOG_E_UNAVAILABLE,
                  "CommitStateUnknownException", "ServiceFailureException" },
                { "error-502", 502, CATALOG_E_STATE_UNKNOWN, CATALOG_E_UNAVAILABLE,
                  "BadGatewayException", "BadGatewayException" },
                { "error-503", 503, CATALOG_E_STATE_UNKNOWN, CATALOG_E_UNAVAILABLE,
                  "ServiceUnavailableException", "ServiceUnavailableException" },
                { "error-504", 504, CATALOG_E_STATE_UNKNOWN, CATALOG_E_UNAVAILABLE,
                  "GatewayTimeoutException", "GatewayTimeoutException" },
                /* The pre-1.11 stale-lineage 400 is a conflict on a commit, a plain 400 on a read.
                 */
                { "stale-400", 400, CATALOG_E_CONFLICT, CATALOG_E_REJECTED, "ValidationException",
                  "ValidationException" },
                { "conflict", 409, CATALOG_E_CONFLICT, CATALOG_E_CONFLICT, "CommitFailedException",
                  "CommitFailedException" },
        };
        CatalogConfig config = test_config(catalog_uri());
        char queue[64], injected[64];
        json_t *request;
        RestCase t;

        if (!rest_case_begin(&t, &config, "errors"))
                return;
        request = commit_request_set(t.uuid, "icecommit.errors", "never");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ASSERT_TRUE((size_t)snprintf(queue, sizeof(queue), "[\"%s\"]", cases[i].kind) <
                            sizeof(queue));
                faults_set(t.uri, t.filter, queue, queue);
                commit_wait(&t, request, NULL);
                load_wait(&t);
                if (t.commit.status != cases[i].commit || t.load.status != cases[i].load)
                        TEST_FAIL("%s: commit %s (want %s: %s), load %s (want %s: %s)",
                                  cases[i].kind, catalog_outcome_to_string(t.commit.status),
                                  catalog_outcome_to_string(cases[i].commit), t.commit.message,
                                  catalog_outcome_to_string(t.load.status),
                                  catalog_outcome_to_string(cases[i].load), t.load.message);
                ASSERT_EQ(t.commit.http_status, cases[i].http);
                ASSERT_EQ(t.load.http_status, cases[i].http);
                ASSERT_STREQ(t.commit.error_type, cases[i].commit_type);
                ASSERT_STREQ(t.load.error_type, cases[i].load_type);
                ASSERT_TRUE(t.commit.message[0] != '\0' && t.load.message[0] != '\0');
                faults_injected(t.uri, t.filter, injected, sizeof(injected));
                ASSERT_TRUE((size_t)snprintf(queue, sizeof(queue), "%s,%s", cases[i].kind,
                                             cases[i].kind) < sizeof(queue));
                ASSERT_STREQ(injected, queue);
                faults_clear(t.uri);
        }
        /* None of them reached the catalog. */
        assert_property(&t, "icecommit.errors", NULL);

        /* lost-response: applied by the catalog, then a 500 CommitStateUnknownException. */
        json_decref(request);
        request = commit_request_set(t.uuid, "icecommit.errors", "applied");
        faults_set(t.uri, t.filter, "[\"lost-response\"]", "[]");
        commit_wait(&t, request, NULL);
        ASSERT_OUTCOME(t.commit, CATALOG_E_STATE_UNKNOWN);
        ASSERT_EQ(t.commit.http_status, 500);
        ASSERT_STREQ(t.commit.error_type, "CommitStateUnknownException");
        faults_clear(t.uri);
        assert_property(&t, "icecommit.errors", "applied");

        json_decref(request);
        rest_case_end(&t);
}

/* libcurl may resend a request whose reused connection died before any answer (a kept-alive
 * connection that the catalog or a proxy dropped just then). Here the catalog resets the
 * commit's reused connection without acting on it (reset-before). Either libcurl resends the
 * commit on a fresh connection, or the commit ends unanswered: libcurl resends after a reset
 * it reads itself, not after one reported as a poll error, which is how net/curl_uv.c
 * passes libuv's on. Both ways, a 409 (or no answer) must read as "state unknown", never as
 * "not committed": after a first copy that was applied, the copy's requirements would refuse
 * it. Only a 200 to the copy is a verdict. */
TEST(rest_catalog_resent_commit) {
        CatalogConfig config = test_config(catalog_uri());
        json_t *first, *second;
        char injected[128];
        json_int_t n_matched;
        RestCase t;

        if (!rest_case_begin(&t, &config, "resend"))
                return;
        ASSERT_EQ(rest_client_connections_opened(t.c), 1);

        faults_set(t.uri, t.filter, "[\"reset-before\", \"conflict\"]", "[]");
        first = commit_request_set(t.uuid, "icecommit.resend", "first");
        commit_wait(&t, first, NULL);
        faults_injected(t.uri, t.filter, injected, sizeof(injected));
        n_matched = faults_matched(t.uri, "commit");
        printf("reset-before, conflict: %s (%s) HTTP %ld: %s\n", injected,
               catalog_outcome_to_string(t.commit.status), t.commit.http_status, t.commit.message);
        /* Resent or not, never "not committed". */
        ASSERT_OUTCOME(t.commit, CATALOG_E_STATE_UNKNOWN);
        if (strcmp(injected, "reset-before,conflict") == 0) {
                /* Resent: the 409 answers the copy. */
                ASSERT_EQ(n_matched, 2);
                ASSERT_EQ(t.commit.http_status, 409);
                ASSERT_CONTAINS(t.commit.message, "sent 2 times");
                ASSERT_EQ(rest_client_connections_opened(t.c), 2);
        } else {
                ASSERT_STREQ(injected, "reset-before");
                ASSERT_EQ(n_matched, 1);
                ASSERT_EQ(t.commit.http_status, 0);
                ASSERT_CONTAINS(t.commit.message, "no answer from the catalog");
        }
        faults_clear(t.uri);
        /* Neither copy was applied. */
        assert_property(&t, "icecommit.resend", NULL);

        faults_set(t.uri, t.filter, "[\"reset-before\"]", "[]");
        second = commit_request_set(t.uuid, "icecommit.resend", "second");
        commit_wait(&t, second, NULL);
        n_matched = faults_matched(t.uri, "commit");
        faults_clear(t.uri);
        printf("reset-before: sent %d time(s): %s HTTP %ld: %s\n", (int)n_matched,
               catalog_outcome_to_string(t.commit.status), t.commit.http_status, t.commit.message);
        if (n_matched == 2) {
                /* The copy reached the catalog, which applied it: success. */
                ASSERT_OUTCOME(t.commit, 0);
                ASSERT_EQ(t.commit.http_status, 200);
                assert_property(&t, "icecommit.resend", "second");
        } else {
                ASSERT_EQ(n_matched, 1);
                ASSERT_OUTCOME(t.commit, CATALOG_E_STATE_UNKNOWN);
                ASSERT_EQ(t.commit.http_status, 0);
                assert_property(&t, "icecommit.resend", NULL);
        }

        json_decref(first);
        json_decref(second);
        rest_case_end(&t);
}

/* The catalog holds both requests past request_timeout_ms: the commit's fate is unknown (the
 * catalog will still apply it), the load is retryable. */
TEST(rest_catalog_timeout_after_send) {
        CatalogConfig config = test_config(catalog_uri());
        json_t *request;
        uint64_t t0;
        RestCase t;

        config.request_timeout_ms = 1000;
        if (!rest_case_begin(&t, &config, "timeout"))
                return;
        request = commit_request_set(t.uuid, "icecommit.timeout", "late");

        faults_set(t.uri, t.filter, "[\"delay-3000\"]", "[\"delay-3000\"]");
        uv_update_time(&t.loop);
        t0 = uv_now(&t.loop);
        ASSERT_OK(rest_catalog_backend.commit_table(t.c, t.ns, 1, t.table, request, "k",
                                                    outcome_record, &t.commit));
        ASSERT_OK(rest_catalog_backend.load_table(t.c, t.ns, 1, t.table, outcome_record, &t.load));
        run_until(&t.loop, &t.commit.is_done);
        run_until(&t.loop, &t.load.is_done);
        ASSERT_TRUE(uv_now(&t.loop) - t0 >= 900 && uv_now(&t.loop) - t0 < 2900);
        ASSERT_OUTCOME(t.commit, CATALOG_E_STATE_UNKNOWN);
        ASSERT_EQ(t.commit.http_status, 0);
        ASSERT_CONTAINS(t.commit.message, "imed out");
        ASSERT_OUTCOME(t.load, CATALOG_E_UNAVAILABLE);
        ASSERT_CONTAINS(t.load.message, "imed out");

        json_decref(request);
        rest_case_end(&t);
}

TEST(rest_catalog_close_cancels_in_flight) {
        CatalogConfig config = test_config(catalog_uri());
        bool is_closed = false;
        json_t *request;
        RestCase t;

        if (!rest_case_begin(&t, &config, "close"))
                return;
        request = commit_request_set(t.uuid, "icecommit.close", "maybe");

        faults_set(t.uri, t.filter, "[\"delay-2000\"]", "[\"delay-2000\"]");
        ASSERT_OK(rest_catalog_backend.load_table(t.c, t.ns, 1, t.table, outcome_record, &t.load));
        /* Until the load reached the catalog (which holds it for 2 s). */
        while (faults_matched(t.uri, "load") < 1) {
                (void)uv_run(&t.loop, UV_RUN_NOWAIT);
                ASSERT_TRUE(!t.load.is_done);
                (void)usleep(10000);
        }
        ASSERT_OK(rest_catalog_backend.commit_table(t.c, t.ns, 1, t.table, request, NULL,
                                                    outcome_record, &t.commit));

        rest_catalog_backend.close(t.c, on_closed, &is_closed);
        /* Never from inside the close call. */
        ASSERT_TRUE(!t.load.is_done && !t.commit.is_done && !is_closed);
        ASSERT_EQ(rest_catalog_backend.load_table(t.c, t.ns, 1, t.table, outcome_record, &t.load),
                  -ESHUTDOWN);
        run_until(&t.loop, &is_closed);
        ASSERT_TRUE(t.load.is_done && t.commit.is_done);
        ASSERT_OUTCOME(t.load, -ECANCELED);
        ASSERT_OUTCOME(t.commit, -ECANCELED);
        ASSERT_TRUE(rest_client_free(TAKE_PTR(t.c)) == NULL);

        json_decref(request);
        rest_case_end(&t);
}

/* ---- large tables: bodies parsed on the thread pool, loads of the referenced snapshots only -- */

/* One commit that adds n snapshots to main (v3: sequence numbers 1..n, 10 rows each, so that
 * next-row-id is 10 n), then points main at the last, tag "t1" at the 6th and branch "b1" at
 * the 21st. No manifest list exists: the catalog only records them. Snapshot ids are
 * 1000 + i. The table's metadata is then ~330 bytes a snapshot. */
static void history_commit(RestCase *t, unsigned n) {
        json_t *updates = json_array(), *request;
        char location[512];
        Outcome o = { 0 };

        ASSERT_TRUE(updates && n > 20);
        ASSERT_TRUE((size_t)snprintf(location, sizeof(location), "file:///nonexistent/%s",
                                     t->ns_name) < sizeof(location));
        for (unsigned i = 0; i < n; i++) {
                char manifest_list[600];
                json_t *snapshot;

                ASSERT_TRUE((size_t)snprintf(manifest_list, sizeof(manifest_list),
                                             "%s/metadata/snap-%u.avro", location,
                                             1000 + i) < sizeof(manifest_list));
                snapshot = json_pack("{s:I, s:I, s:I, s:s, s:{s:s, s:s, s:s}, s:i, s:I, s:i}",
                                     "snapshot-id", (json_int_t)(1000 + i), "sequence-number",
                                     (json_int_t)(i + 1), "timestamp-ms",
                                     (json_int_t)(1700000000000 + i), "manifest-list",
                                     manifest_list, "summary", "operation", "append",
                                     "added-records", "10", "icecommit.padding",
                                     "a summary property of some length, as writers add them",
                                     "schema-id", 0, "first-row-id", (json_int_t)(10 * i),
                                     "added-rows", 10);
                ASSERT_TRUE(snapshot);
                if (i > 0)
                        ASSERT_OK(json_object_set_new(snapshot, "parent-snapshot-id",
                                                      json_integer(1000 + i - 1)));
                ASSERT_OK(json_array_append_new(updates,
                                                json_pack("{s:s, s:o}", "action", "add-snapshot",
                                                          "snapshot", snapshot)));
        }
        ASSERT_OK(json_array_append_new(updates, json_pack("{s:s, s:s, s:s, s:I}", "action",
                                                           "set-snapshot-ref", "ref-name", "main",
                                                           "type", "branch", "snapshot-id",
                                                           (json_int_t)(1000 + n - 1))));
        ASSERT_OK(json_array_append_new(updates, json_pack("{s:s, s:s, s:s, s:i}", "action",
                                                           "set-snapshot-ref", "ref-name", "t1",
                                                           "type", "tag", "snapshot-id", 1005)));
        ASSERT_OK(json_array_append_new(updates, json_pack("{s:s, s:s, s:s, s:i}", "action",
                                                           "set-snapshot-ref", "ref-name", "b1",
                                                           "type", "branch", "snapshot-id", 1020)));
        request = json_pack("{s:[{s:s,s:s}], s:o}", "requirements", "type", "assert-table-uuid",
                            "uuid", t->uuid, "updates", updates);
        ASSERT_TRUE(request);
        table_commit_wait(t, t->ns, 1, t->table, request, NULL, &o);
        ASSERT_OUTCOME(o, 0);
        outcome_reset(&o);
        json_decref(request);
}

static size_t json_text_size(const json_t *j) {
        char *text = json_dumps(j, JSON_COMPACT);
        size_t n;

        ASSERT_TRUE(text);
        n = strlen(text);
        free(text);
        return n;
}

static size_t metadata_snapshots(const Outcome *o) {
        return json_array_size(json_object_get(json_object_get(o->body, "metadata"), "snapshots"));
}

static pthread_t loop_thread;

/* outcome_record(), and the callback is on the loop's thread. */
static void outcome_record_on_loop(const CatalogResult *result, void *userdata) {
        ASSERT_TRUE(pthread_equal(pthread_self(), loop_thread));
        outcome_record(result, userdata);
}

/* A table of 300 snapshots (~100 KB of metadata): loaded and committed to by a client that
 * parses every body on the loop and one that parses bodies above 64 KiB on the thread pool.
 * Both see the same bodies, from the loop, and the small answers stay on the loop. */
TEST(rest_catalog_parse_off_loop) {
        CatalogConfig config = test_config(catalog_uri());
        Outcome on_loop = { 0 }, off_loop = { 0 }, small = { 0 };
        RestClient *inline_client;
        json_t *request;
        RestCase t;

        if (!rest_case_begin(&t, &config, "offloop"))
                return;
        loop_thread = pthread_self();
        config.parse_off_loop_bytes = UINT64_MAX;
        start_client(&t.loop, &config, &inline_client);

        /* The table as created is small: parsed on the loop. */
        ASSERT_OK(rest_catalog_backend.load_table(t.c, t.ns, 1, t.table, outcome_record_on_loop,
                                                  &small));
        run_until(&t.loop, &small.is_done);
        ASSERT_OUTCOME(small, 0);
        ASSERT_TRUE(json_text_size(small.body) < 64u << 10);
        ASSERT_EQ(rest_client_parses_started(t.c), 0);

        history_commit(&t, 300);
        ASSERT_EQ(rest_client_parses_started(t.c), 1); /* the commit's answer */

        ASSERT_OK(rest_catalog_backend.load_table(inline_client, t.ns, 1, t.table,
                                                  outcome_record_on_loop, &on_loop));
        ASSERT_OK(rest_catalog_backend.load_table(t.c, t.ns, 1, t.table, outcome_record_on_loop,
                                                  &off_loop));
        run_until(&t.loop, &on_loop.is_done);
        run_until(&t.loop, &off_loop.is_done);
        ASSERT_OUTCOME(on_loop, 0);
        ASSERT_OUTCOME(off_loop, 0);
        ASSERT_EQ(off_loop.http_status, 200);
        ASSERT_EQ(rest_client_parses_started(t.c), 2);
        ASSERT_EQ(rest_client_parses_in_flight(t.c), 0);
        ASSERT_EQ(rest_client_parses_started(inline_client), 0);
        ASSERT_TRUE(json_text_size(off_loop.body) > 64u << 10);
        ASSERT_EQ(metadata_snapshots(&off_loop), 300);
        ASSERT_TRUE(json_equal(on_loop.body, off_loop.body));
        ASSERT_TRUE(off_loop.message[0] == '\0');

        /* A commit's CommitTableResponse, parsed off the loop, holds the new metadata. */
        request = commit_request_set(t.uuid, "icecommit.offloop", "yes");
        ASSERT_OK(rest_catalog_backend.commit_table(t.c, t.ns, 1, t.table, request, NULL,
                                                    outcome_record_on_loop, &t.commit));
        run_until(&t.loop, &t.commit.is_done);
        ASSERT_OUTCOME(t.commit, 0);
        ASSERT_EQ(rest_client_parses_started(t.c), 3);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(json_object_get(t.commit.body,
                                                                             "metadata"),
                                                             "properties"),
                                             "icecommit.offloop")),
                     "yes");
        ASSERT_EQ(metadata_snapshots(&t.commit), 300);

        client_finish(&t.loop, inline_client);
        json_decref(request);
        outcome_reset(&on_loop);
        outcome_reset(&off_loop);
        outcome_reset(&small);
        rest_case_end(&t);
}

/* Holds the thread pool's threads until released, so that a parse job waits in its queue. */
static atomic_bool pool_is_held;

static void pool_hold(uv_work_t *work) {
        (void)work;
        while (atomic_load(&pool_is_held))
                (void)usleep(1000);
}

static void pool_after_hold(uv_work_t *work, int status) {
        ASSERT_EQ(status, 0);
        free(work);
}

static unsigned pool_size(void) {
        const char *v = getenv("UV_THREADPOOL_SIZE");
        unsigned long n = v ? strtoul(v, NULL, 10) : 0;

        /* libuv's default, and its cap. */
        return n == 0 ? 4 : n > 1024 ? 1024 : (unsigned)n;
}

typedef struct CloseWatch {
        Outcome outcome;
        const bool *is_closed;
} CloseWatch;

/* outcome_record(), and never after the close completed. */
static void outcome_record_before_close(const CatalogResult *result, void *userdata) {
        CloseWatch *w = userdata;

        ASSERT_TRUE(!*w->is_closed);
        outcome_record(result, &w->outcome);
}

/* Sends a load and a commit of the large table and runs the loop until both answers are on the
 * thread pool (whose threads are held: the jobs wait in its queue). */
static void parses_queue(RestCase *t, const json_t *request, CloseWatch *load, CloseWatch *commit) {
        atomic_store(&pool_is_held, true);
        for (unsigned i = 0; i < pool_size(); i++) {
                uv_work_t *work = calloc(1, sizeof(*work));

                ASSERT_TRUE(work);
                ASSERT_OK(uv_queue_work(&t->loop, work, pool_hold, pool_after_hold));
        }
        ASSERT_OK(rest_catalog_backend.load_table(t->c, t->ns, 1, t->table,
                                                  outcome_record_before_close, load));
        ASSERT_OK(rest_catalog_backend.commit_table(t->c, t->ns, 1, t->table, request, NULL,
                                                    outcome_record_before_close, commit));
        while (rest_client_parses_in_flight(t->c) < 2) {
                ASSERT_TRUE(!load->outcome.is_done && !commit->outcome.is_done);
                ASSERT_TRUE(uv_run(&t->loop, UV_RUN_ONCE) != 0);
        }
}

/* catalog_close while bodies are on the thread pool: a job no thread took yet is cancelled
 * (the load -ECANCELED, the commit's 200 still a success, without a body); one under way ends
 * with its answer. Either way each callback comes once, before the close completes, and
 * nothing is left on the loop. */
TEST(rest_catalog_close_during_parse) {
        CatalogConfig config = test_config(catalog_uri());
        bool is_closed = false;
        uint64_t base;
        CloseWatch load = { .is_closed = &is_closed }, commit = { .is_closed = &is_closed };
        json_t *request;
        RestCase t;

        config.parse_off_loop_bytes = 0;
        if (!rest_case_begin(&t, &config, "closeparse"))
                return;
        history_commit(&t, 300);

        /* Queued behind held threads: cancelled. */
        request = commit_request_set(t.uuid, "icecommit.closeparse", "1");
        parses_queue(&t, request, &load, &commit);
        rest_catalog_backend.close(t.c, on_closed, &is_closed);
        ASSERT_TRUE(!load.outcome.is_done && !commit.outcome.is_done && !is_closed);
        atomic_store(&pool_is_held, false);
        run_until(&t.loop, &is_closed);
        ASSERT_TRUE(load.outcome.is_done && commit.outcome.is_done);
        ASSERT_EQ(rest_client_parses_in_flight(t.c), 0);
        ASSERT_OUTCOME(load.outcome, -ECANCELED);
        ASSERT_TRUE(load.outcome.body == NULL);
        ASSERT_OUTCOME(commit.outcome, 0);
        ASSERT_EQ(commit.outcome.http_status, 200);
        ASSERT_TRUE(commit.outcome.body == NULL);
        ASSERT_CONTAINS(commit.outcome.message, "body not read");
        ASSERT_TRUE(rest_client_free(TAKE_PTR(t.c)) == NULL);
        /* The commit did land. */
        outcome_reset(&load.outcome);
        outcome_reset(&commit.outcome);
        is_closed = false;
        start_client(&t.loop, &config, &t.c);
        assert_property(&t, "icecommit.closeparse", "1");

        /* Closed at once after the answers arrived, threads free: cancelled or parsed, the
         * callbacks still come once and before the close completes. */
        json_decref(request);
        request = commit_request_set(t.uuid, "icecommit.closeparse", "2");
        base = rest_client_parses_started(t.c);
        ASSERT_OK(rest_catalog_backend.load_table(t.c, t.ns, 1, t.table,
                                                  outcome_record_before_close, &load));
        ASSERT_OK(rest_catalog_backend.commit_table(t.c, t.ns, 1, t.table, request, NULL,
                                                    outcome_record_before_close, &commit));
        while (rest_client_parses_started(t.c) < base + 2 &&
               !(load.outcome.is_done && commit.outcome.is_done))
                ASSERT_TRUE(uv_run(&t.loop, UV_RUN_ONCE) != 0);
        rest_catalog_backend.close(t.c, on_closed, &is_closed);
        run_until(&t.loop, &is_closed);
        ASSERT_TRUE(load.outcome.is_done && commit.outcome.is_done);
        if (load.outcome.status != -ECANCELED) {
                ASSERT_OUTCOME(load.outcome, 0);
                ASSERT_EQ(metadata_snapshots(&load.outcome), 300);
        }
        ASSERT_OUTCOME(commit.outcome, 0);
        printf("close right after the answers: load %s, commit body %s\n",
               catalog_outcome_to_string(load.outcome.status),
               commit.outcome.body ? "parsed" : "not read");
        ASSERT_TRUE(rest_client_free(TAKE_PTR(t.c)) == NULL);

        outcome_reset(&load.outcome);
        outcome_reset(&commit.outcome);
        json_decref(request);
        rest_case_end(&t);
}

/* ?snapshots=refs on Apache Iceberg's 1.11 server (CatalogHandlers.loadTable with
 * SnapshotMode.REFS: suppressHistoricalSnapshots): only the snapshots of main, tag t1 and branch
 * b1 come, with the same refs, heads, sequence number and next-row-id as the full load, and the
 * engine's parser takes the metadata. Through the catalog interface, as the engine calls it. */
TEST(rest_catalog_load_refs) {
        CatalogConfig config = test_config(catalog_uri());
        Outcome full = { 0 }, refs = { 0 };
        const json_t *full_md, *refs_md;
        _cleanup_(table_metadata_freep) TableMetadata *full_table = NULL, *refs_table = NULL;
        TableBranch main_branch, b1;
        int64_t sequence_number = 0;
        Error error = { 0 };
        Catalog *catalog;
        RestCase t;

        if (!rest_case_begin(&t, &config, "refs"))
                return;
        history_commit(&t, 300);
        ASSERT_OK(catalog_new_backend(&rest_catalog_backend, TAKE_PTR(t.c), &catalog));

        ASSERT_OK(catalog_load_table(catalog, t.ns, 1, t.table, outcome_record, &full));
        ASSERT_OK(catalog_load_table_refs(catalog, t.ns, 1, t.table, outcome_record, &refs));
        run_until(&t.loop, &full.is_done);
        run_until(&t.loop, &refs.is_done);
        ASSERT_OUTCOME(full, 0);
        ASSERT_OUTCOME(refs, 0);
        full_md = json_object_get(full.body, "metadata");
        refs_md = json_object_get(refs.body, "metadata");
        ASSERT_EQ(metadata_snapshots(&full), 300);
        ASSERT_EQ(metadata_snapshots(&refs), 3);
        printf("load: %zu bytes, with snapshots=refs: %zu bytes\n", json_text_size(full.body),
               json_text_size(refs.body));
        ASSERT_TRUE(json_equal(json_object_get(full_md, "refs"), json_object_get(refs_md, "refs")));
        ASSERT_STREQ(json_string_value(json_object_get(refs.body, "metadata-location")),
                     json_string_value(json_object_get(full.body, "metadata-location")));
        ASSERT_EQ(json_integer_value(json_object_get(refs_md, "current-snapshot-id")), 1299);

        ASSERT_OK(table_metadata_parse(full.body, &full_table, &error));
        ASSERT_OK(table_metadata_parse(refs.body, &refs_table, &error));
        ASSERT_EQ(refs_table->format_version, 3);
        ASSERT_STREQ(refs_table->uuid, t.uuid);
        ASSERT_STREQ(refs_table->location, full_table->location);
        ASSERT_EQ(refs_table->last_sequence_number, 300);
        ASSERT_EQ(refs_table->last_sequence_number, full_table->last_sequence_number);
        ASSERT_EQ(refs_table->next_row_id, 3000);
        ASSERT_EQ(refs_table->next_row_id, full_table->next_row_id);
        ASSERT_TRUE(json_equal(table_current_schema(refs_table), table_current_schema(full_table)));
        ASSERT_OK(table_branch(refs_table, "main", &main_branch, &error));
        ASSERT_TRUE(main_branch.exists && main_branch.snapshot);
        ASSERT_EQ(main_branch.snapshot_id, 1299);
        ASSERT_TRUE(json_equal(main_branch.snapshot, table_snapshot(full_table, 1299)));
        ASSERT_OK(table_branch(refs_table, "b1", &b1, &error));
        ASSERT_TRUE(b1.exists && b1.snapshot);
        ASSERT_EQ(b1.snapshot_id, 1020);
        ASSERT_OK(table_json_get_i64(b1.snapshot, "sequence-number", &sequence_number));
        ASSERT_EQ(sequence_number, 21);
        ASSERT_TRUE(table_snapshot(refs_table, 1005) != NULL); /* tag t1 */
        ASSERT_TRUE(table_snapshot(refs_table, 1100) == NULL); /* history */
        ASSERT_TRUE(table_snapshot(full_table, 1100) != NULL);

        /* A missing table is one with refs too. */
        outcome_reset(&refs);
        ASSERT_OK(
                catalog_load_table_refs(catalog, t.ns, 1, "no_such_table", outcome_record, &refs));
        run_until(&t.loop, &refs.is_done);
        ASSERT_OUTCOME(refs, CATALOG_E_NOT_FOUND);

        {
                bool is_closed = false;

                catalog_close(catalog, on_closed, &is_closed);
                run_until(&t.loop, &is_closed);
                catalog = catalog_free(catalog);
        }
        outcome_reset(&full);
        outcome_reset(&refs);
        rest_case_end(&t);
}

/* A table whose metadata outgrows max_response_bytes: a load fails, a commit's 200 is still
 * the verdict without its body. */
TEST(rest_catalog_response_too_big) {
        CatalogConfig config = test_config(catalog_uri());
        char big[6001];
        json_t *request;
        RestCase t;

        config.max_response_bytes = 4096;
        if (!rest_case_begin(&t, &config, "big"))
                return;
        load_wait(&t);
        ASSERT_OUTCOME(t.load, 0);

        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        request = commit_request_set(t.uuid, "icecommit.big", big);
        commit_wait(&t, request, NULL);
        ASSERT_OUTCOME(t.commit, 0);
        ASSERT_EQ(t.commit.http_status, 200);
        ASSERT_TRUE(t.commit.body == NULL);
        ASSERT_CONTAINS(t.commit.message, "body dropped");

        load_wait(&t);
        ASSERT_OUTCOME(t.load, -E2BIG);
        ASSERT_EQ(t.load.http_status, 200);
        ASSERT_TRUE(t.load.body == NULL);
        ASSERT_CONTAINS(t.load.message, "body dropped");

        json_decref(request);
        rest_case_end(&t);
}

/* An unknown requirement type fails inside the catalog's servlet before Iceberg's error
 * handling: the servlet container answers 500 with its own error page, no IcebergErrorResponse
 * (JSON {"message", "url", "status"} for our Accept: application/json, HTML for a browser).
 * The page's first bytes become the message. */
TEST(rest_catalog_foreign_error_body) {
        CatalogConfig config = test_config(catalog_uri());
        json_t *request;
        RestCase t;

        if (!rest_case_begin(&t, &config, "html"))
                return;

        request = json_pack("{s:[{s:s}], s:[]}", "requirements", "type", "assert-bogus", "updates");
        ASSERT_TRUE(request);
        commit_wait(&t, request, NULL);
        ASSERT_OUTCOME(t.commit, CATALOG_E_STATE_UNKNOWN);
        ASSERT_EQ(t.commit.http_status, 500);
        ASSERT_STREQ(t.commit.error_type, "");
        ASSERT_CONTAINS(t.commit.message, "commit table: HTTP 500: ");
        ASSERT_CONTAINS(t.commit.message, "java.lang.UnsupportedOperationException: Unrecognized "
                                          "update requirement");
        ASSERT_TRUE(!strchr(t.commit.message, '\n'));
        printf("error page: %s\n", t.commit.message);

        json_decref(request);
        rest_case_end(&t);
}

/* header.* headers, a warehouse and an Idempotency-Key go out (the real server ignores the
 * first two), and everything shares one kept-alive connection. */
TEST(rest_catalog_headers_keepalive) {
        ConfigHeader headers[] = {
                { (char *)"X-Iceberg-Access-Delegation", (char *)"vended-credentials" },
                { (char *)"X-Icecommit-Test", (char *)"a b;c=d" },
        };
        CatalogConfig config = test_config(catalog_uri());
        json_t *request, *events;
        char key1[64], key2[64];
        RestCase t;

        config.warehouse = (char *)"my wh";
        config.headers = headers;
        config.n_headers = ELEMENTSOF(headers);
        config.send_idempotency_key = true;
        if (!rest_case_begin(&t, &config, "keepalive"))
                return;
        ASSERT_TRUE(rest_catalog_backend.supports_idempotency(t.c));
        ASSERT_STREQ(rest_client_namespace_separator(t.c), "%2E");
        ASSERT_TRUE(rest_client_prefix(t.c) == NULL);
        ASSERT_TRUE(rest_client_supports_endpoint(
                t.c, "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}"));

        for (int i = 0; i < 5; i++) {
                load_wait(&t);
                ASSERT_OUTCOME(t.load, 0);
                ASSERT_EQ(json_integer_value(
                                  json_object_get(json_object_get(t.load.body, "metadata"),
                                                  "format-version")),
                          3);
        }
        /* The keys reach the catalog: the injector records them with the requests. They are
         * unique: the catalog answers a key it has seen from its store, whatever the table. */
        unique_name(key1, sizeof(key1), "key1");
        unique_name(key2, sizeof(key2), "key2");
        faults_set(t.uri, t.filter, "[\"delay-0\", \"delay-0\"]", "[]");
        request = commit_request_set(t.uuid, "icecommit.keepalive", "1");
        commit_wait(&t, request, key1);
        ASSERT_OUTCOME(t.commit, 0);
        json_decref(request);
        request = commit_request_set(t.uuid, "icecommit.keepalive", "2");
        commit_wait(&t, request, key2);
        ASSERT_OUTCOME(t.commit, 0);
        events = faults_events(t.uri, t.filter);
        ASSERT_EQ(json_array_size(events), 2);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_array_get(events, 0), "idempotency-key")),
                     key1);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_array_get(events, 1), "idempotency-key")),
                     key2);
        json_decref(events);
        faults_clear(t.uri);
        assert_property(&t, "icecommit.keepalive", "2");

        /* One connection for everything: keep-alive. */
        ASSERT_EQ(rest_client_connections_opened(t.c), 1);

        json_decref(request);
        rest_case_end(&t);
}

/* ---- a catalog that comes up after the client started ---------------------------------------- */

static char started_catalog_dir[256];

/* tests/peers/NAME under the source tree. */
static void peer_script(char *buf, size_t size, const char *name) {
        ASSERT_TRUE((size_t)snprintf(buf, size, "%s/tests/peers/%s",
                                     getenv("ICECOMMIT_SOURCE_ROOT"), name) < size);
}

static int spawn_wait(char *const argv[]) {
        int status;
        pid_t pid;

        ASSERT_EQ(posix_spawn(&pid, argv[0], NULL, NULL, argv, environ), 0);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Stops the catalog we started and deletes its state; with is_checked, each step must succeed
 * (not so from the abort handler, which must not abort again). */
static void started_catalog_remove(bool is_checked) {
        char script[4096];
        int status;

        peer_script(script, sizeof(script), "catalog-stop.sh");
        status = spawn_wait((char *const[]){ script, started_catalog_dir, NULL });
        if (is_checked)
                ASSERT_EQ(status, 0);
        status = spawn_wait(
                (char *const[]){ (char *)"/bin/rm", (char *)"-rf", started_catalog_dir, NULL });
        if (is_checked)
                ASSERT_EQ(status, 0);
}

static void started_catalog_stop(void) {
        if (!started_catalog_dir[0])
                return;
        started_catalog_remove(/* is_checked= */ true);
        started_catalog_dir[0] = '\0';
}

/* A failed assertion aborts: take the catalog we started down with us. */
static void started_catalog_on_abort(int sig) {
        (void)signal(SIGABRT, SIG_DFL);
        if (started_catalog_dir[0])
                started_catalog_remove(/* is_checked= */ false);
        (void)raise(sig);
}

static int free_port(void) {
        struct sockaddr_in addr = { .sin_family = AF_INET,
                                    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(addr);
        int fd, port;

        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
        ASSERT_EQ(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
        port = ntohs(addr.sin_port);
        ASSERT_EQ(close(fd), 0);
        return port;
}

/* A started client that could not load /v1/config keeps trying (1 s, then 2 s, ...) until it
 * is ready, so that /readyz turns green without a writer request: here the real catalog only
 * starts listening (tests/peers/catalog-start.sh, ~1.5 s) after the client gave up once. The
 * start callback hears the failure, then the success. */
TEST(rest_catalog_start_retries_in_background) {
        const char *root = getenv("ICECOMMIT_SOURCE_ROOT");
        char uri[64], script[4096], port_text[16];
        Outcome start = { 0 }, load = { 0 };
        CatalogConfig config;
        RestClient *c;
        uv_loop_t loop;
        uint64_t t0;
        pid_t pid;
        int port, status;

        /* Only where a catalog can be started: the runs that have one already. */
        if (!catalog_uri())
                return;
        if (!root) {
                printf("skip: ICECOMMIT_SOURCE_ROOT is not set (tests/peers/catalog-start.sh)\n");
                return;
        }
        port = free_port();
        ASSERT_TRUE((size_t)snprintf(uri, sizeof(uri), "http://127.0.0.1:%d", port) < sizeof(uri));
        ASSERT_TRUE((size_t)snprintf(port_text, sizeof(port_text), "%d", port) < sizeof(port_text));
        peer_script(script, sizeof(script), "catalog-start.sh");
        ASSERT_TRUE((size_t)snprintf(started_catalog_dir, sizeof(started_catalog_dir), "%s",
                                     "/tmp/icecommit-test-catalog-XXXXXX") <
                    sizeof(started_catalog_dir));
        ASSERT_TRUE(mkdtemp(started_catalog_dir));
        (void)signal(SIGABRT, started_catalog_on_abort);

        ASSERT_OK(uv_loop_init(&loop));
        config = test_config(uri);
        ASSERT_OK(rest_client_new(&loop, &config, &c));
        ASSERT_OK(rest_catalog_backend.start(c, outcome_record, &start));
        run_until(&loop, &start.is_done);
        ASSERT_OUTCOME(start, CATALOG_E_UNAVAILABLE);
        ASSERT_EQ(start.http_status, 0);
        ASSERT_CONTAINS(start.message, "catalog unreachable");
        ASSERT_TRUE(!rest_catalog_backend.is_ready(c));
        /* The start callback hears the success that follows too (the daemon learns the
         * catalog's properties from it): ready for a second call. */
        outcome_reset(&start);

        /* The catalog starts while the loop runs; nobody calls the client meanwhile. */
        ASSERT_EQ(posix_spawn(&pid, script, NULL, NULL,
                              (char *const[]){ script, started_catalog_dir, port_text, NULL },
                              environ),
                  0);
        uv_update_time(&loop);
        t0 = uv_now(&loop);
        while (!rest_catalog_backend.is_ready(c)) {
                ASSERT_TRUE(uv_run(&loop, UV_RUN_ONCE) != 0 || rest_catalog_backend.is_ready(c));
                if (uv_now(&loop) - t0 > 120000)
                        TEST_FAIL("client not ready 120 s after the catalog was started at %s",
                                  uri);
        }
        printf("ready %" PRIu64 " ms after the catalog was started\n", uv_now(&loop) - t0);
        ASSERT_TRUE(start.is_done);
        ASSERT_OUTCOME(start, 0);
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

        ASSERT_OK(rest_catalog_backend.load_table(c, one_ns, 1, "icecommit_no_such_table",
                                                  outcome_record, &load));
        run_until(&loop, &load.is_done);
        ASSERT_OUTCOME(load, CATALOG_E_NOT_FOUND);
        ASSERT_EQ(load.http_status, 404);

        client_finish(&loop, c);
        loop_finish(&loop);
        started_catalog_stop();
        (void)signal(SIGABRT, SIG_DFL);
        outcome_reset(&start);
        outcome_reset(&load);
}
