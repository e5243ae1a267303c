/* SPDX-License-Identifier: Apache-2.0 */
/* tables/create.c: creation requests and the idempotence rule (an existing table answers 200
 * only when it is the table asked for). */
#include <errno.h>
#include <string.h>

#include "tables/create.h"
#include "test.h"

static Slice text(const char *s) {
        return (Slice){ .ptr = (const uint8_t *)s, .len = strlen(s) };
}

#define SCHEMA                                                                                     \
        "{\"type\": \"struct\", \"fields\": ["                                                     \
        " {\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"                  \
        " {\"id\": 2, \"name\": \"day\", \"required\": false, \"type\": \"date\"},"                \
        " {\"id\": 3, \"name\": \"tags\", \"required\": false, \"type\": {\"type\": \"list\","     \
        "   \"element-id\": 4, \"element\": \"string\", \"element-required\": false}}]}"

/* What a catalog stores for SCHEMA: its own ids, the same shape. */
static const char *existing_v3 =
        "{\"format-version\": 3, \"current-schema-id\": 0, \"default-spec-id\": 0,"
        " \"properties\": {\"owner\": \"etl\", \"write.parquet.compression-codec\": \"zstd\"},"
        " \"schemas\": [{\"schema-id\": 0, \"type\": \"struct\", \"fields\": ["
        "  {\"id\": 11, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
        "  {\"id\": 12, \"name\": \"day\", \"required\": false, \"type\": \"date\"},"
        "  {\"id\": 13, \"name\": \"tags\", \"required\": false, \"type\": {\"type\": \"list\","
        "    \"element-id\": 14, \"element\": \"string\", \"element-required\": false}}]}],"
        " \"partition-specs\": [{\"spec-id\": 0, \"fields\": [{\"source-id\": 12, \"field-id\": "
        "1000,"
        "   \"name\": \"day\", \"transform\": \"identity\"}]}]}";

TEST(create_request_defaults_to_v3_and_carries_the_version_as_a_property) {
        _cleanup_(json_decrefp) json_t *req = NULL;
        const char *name = NULL;
        Error e = { 0 };

        ASSERT_OK(create_table_request_parse(text("{\"name\": \"events\", \"schema\": " SCHEMA
                                                  ", \"properties\": {\"owner\": \"etl\"}}"),
                                             &req, &name, &e));
        ASSERT_STREQ(name, "events");
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(req, "properties"), "format-version")),
                     "3");
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(req, "properties"), "owner")),
                     "etl");
        ASSERT_TRUE(json_object_get(req, "format-version") == NULL);
        json_decref(TAKE_PTR(req));

        ASSERT_OK(create_table_request_parse(
                text("{\"name\": \"e2\", \"format-version\": 2, \"schema\": " SCHEMA "}"), &req,
                &name, &e));
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(req, "properties"), "format-version")),
                     "2");
        json_decref(TAKE_PTR(req));

        /* Every kind of type the spec names passes our shape check. */
        ASSERT_OK(create_table_request_parse(
                text("{\"name\": \"all\", \"partition-spec\": {\"fields\": []}, \"schema\": "
                     "{\"type\": \"struct\", \"fields\": ["
                     " {\"id\": 1, \"name\": \"d\", \"required\": true, \"type\": \"decimal(10, "
                     "2)\"},"
                     " {\"id\": 2, \"name\": \"f\", \"required\": true, \"type\": \"fixed[16]\"},"
                     " {\"id\": 3, \"name\": \"ts\", \"required\": false, \"type\": "
                     "\"timestamptz_ns\"},"
                     " {\"id\": 4, \"name\": \"m\", \"required\": false, \"type\": {\"type\": "
                     "\"map\", \"key-id\": 5,"
                     "   \"key\": \"string\", \"value-id\": 6, \"value-required\": false, "
                     "\"value\": {\"type\": \"struct\","
                     "   \"fields\": [{\"id\": 7, \"name\": \"u\", \"required\": false, \"type\": "
                     "\"uuid\"}]}}}]}}"),
                &req, &name, &e));
        /* Catalogs insist on a spec id even though they assign their own. */
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(req, "partition-spec"), "spec-id")),
                  0);
}

TEST(create_request_errors_say_what_is_wrong) {
        static const struct {
                const char *body, *message;
        } cases[] = {
                { "[]", "body is not a JSON object" },
                { "{\"schema\": " SCHEMA "}", "\"name\" must be 1 to 255 bytes" },
                { "{\"name\": \"a/b\", \"schema\": " SCHEMA "}", "without '/'" },
                { "{\"name\": \"t\"}", "\"schema\" is required" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"list\"}}",
                  "schema: must be an object of type \"struct\"" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 0, "
                  "\"name\": \"x\", \"required\": true, \"type\": \"int\"}]}}",
                  "field id" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"x\", \"type\": \"int\"}]}}",
                  "schema: field 'x' has no boolean \"required\"" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"x\", \"required\": true, \"type\": \"decimal(39,1)\"}]}}",
                  "schema: field 'x' has unknown type 'decimal(39,1)'" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": [{\"id\": 1, "
                  "\"name\": \"m\", \"required\": true, \"type\": {\"type\": \"map\", \"key-id\": "
                  "2, \"key\": \"string\", \"value-id\": 3, \"value-required\": true, \"value\": "
                  "\"strin\"}}]}}",
                  "schema: field 'm.value' has unknown type 'strin'" },
                { "{\"name\": \"t\", \"format-version\": 2, \"schema\": {\"type\": \"struct\", "
                  "\"fields\": [{\"id\": 1, \"name\": \"ts\", \"required\": true, \"type\": "
                  "\"timestamp_ns\"}]}}",
                  "type 'timestamp_ns' of field 'ts' requires format version 3, the table has 2" },
                { "{\"name\": \"t\", \"format-version\": 4, \"schema\": " SCHEMA "}",
                  "\"format-version\" must be 1, 2 or 3" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"format-version\": \"2\"}}",
                  "set the format version with \"format-version\"" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"properties\": {\"a\": 1}}",
                  "property \"a\" must be a string" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"partition-spec\": []}",
                  "\"partition-spec\" must be an object" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"extra\": 1}",
                  "unknown member \"extra\"" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"location\": \"/wh/t\\n<6>x\"}",
                  "\"location\": '/wh/t...' holds a control character (0x0a at byte 5)" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"location\": \"s3://../t\"}",
                  "\"location\": 's3://../t': the bucket name '..'" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                json_t *req = NULL;
                const char *name = NULL;
                Error e = { 0 };

                ASSERT_EQ(create_table_request_parse(text(cases[i].body), &req, &name, &e),
                          -EINVAL);
                ASSERT_CONTAINS(e.message, cases[i].message);
                ASSERT_TRUE(req == NULL);
        }
}

TEST(an_existing_table_matches_only_when_it_is_the_one_asked_for) {
        _cleanup_(json_decrefp) json_t *metadata = json_loads(existing_v3, 0, NULL);
        static const struct {
                const char *body, *difference; /* NULL: matches */
        } cases[] = {
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"properties\": {\"owner\": \"etl\"},"
                  " \"partition-spec\": {\"fields\": [{\"source-id\": 2, \"name\": \"day\", "
                  "\"transform\": \"identity\"}]}}",
                  NULL },
                { "{\"name\": \"t\", \"format-version\": 2, \"schema\": " SCHEMA ","
                  " \"partition-spec\": {\"fields\": [{\"source-id\": 2, \"transform\": "
                  "\"identity\"}]}}",
                  "the table has format version 3, the request asks for 2" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA "}",
                  "the table has 1 partition fields, the request 0" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ","
                  " \"partition-spec\": {\"fields\": [{\"source-id\": 2, \"transform\": "
                  "\"month\"}]}}",
                  "partition field 0 is identity(day) named 'day', the request asks for "
                  "month(day)" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": ["
                  " {\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"int\"},"
                  " {\"id\": 2, \"name\": \"day\", \"required\": false, \"type\": \"date\"},"
                  " {\"id\": 3, \"name\": \"tags\", \"required\": false, \"type\": {\"type\": "
                  "\"list\","
                  "   \"element-id\": 4, \"element\": \"string\", \"element-required\": false}}]},"
                  " \"partition-spec\": {\"fields\": [{\"source-id\": 2, \"transform\": "
                  "\"identity\"}]}}",
                  "the schema.id has another type" },
                { "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"fields\": ["
                  " {\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
                  " {\"id\": 2, \"name\": \"day\", \"required\": false, \"type\": \"date\"},"
                  " {\"id\": 3, \"name\": \"tags\", \"required\": false, \"type\": {\"type\": "
                  "\"list\","
                  "   \"element-id\": 4, \"element\": \"string\", \"element-required\": true}}]},"
                  " \"partition-spec\": {\"fields\": [{\"source-id\": 2, \"transform\": "
                  "\"identity\"}]}}",
                  "the schema.tags.element differs in nullability" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"properties\": {\"owner\": \"bi\"},"
                  " \"partition-spec\": {\"fields\": [{\"source-id\": 2, \"transform\": "
                  "\"identity\"}]}}",
                  "property 'owner' is 'etl', the request sets 'bi'" },
        };

        ASSERT_TRUE(metadata);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_decrefp) json_t *req = NULL;
                const char *name = NULL;
                Error e = { 0 };

                ASSERT_OK(create_table_request_parse(text(cases[i].body), &req, &name, &e));
                if (!cases[i].difference) {
                        ASSERT_OK(create_table_request_matches(req, metadata, &e));
                        continue;
                }
                ASSERT_EQ(create_table_request_matches(req, metadata, &e), -EEXIST);
                ASSERT_CONTAINS(e.message, cases[i].difference);
        }
}

TEST(namespace_requests) {
        char **levels = NULL;
        size_t n = 0;
        json_t *properties = NULL;
        Error e = { 0 };

        ASSERT_OK(create_namespace_request_parse(
                text("{\"namespace\": [\"a\", \"b\"], \"properties\": {\"k\": \"v\"}}"), &levels,
                &n, &properties, &e));
        ASSERT_EQ(n, 2);
        ASSERT_STREQ(levels[0], "a");
        ASSERT_STREQ(levels[1], "b");
        ASSERT_STREQ(json_string_value(json_object_get(properties, "k")), "v");
        for (size_t i = 0; i < n; i++)
                free(levels[i]);
        free(levels);
        json_decref(properties);

        ASSERT_EQ(create_namespace_request_parse(text("{\"namespace\": []}"), &levels, &n,
                                                 &properties, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "\"namespace\" must be an array of 1 to 16 names");
        ASSERT_EQ(create_namespace_request_parse(text("{\"namespace\": [\"..\"]}"), &levels, &n,
                                                 &properties, &e),
                  -EINVAL);
        ASSERT_CONTAINS(e.message, "namespace level 0 must be");
}

/* The admin decision: a create names where files lie (a table's location, a write.*.path,
 * icecommit.allowed-prefixes; a namespace's location too) or leaves it to the catalog. */
TEST(what_needs_the_right_admin) {
        static const struct {
                const char *body, *steers; /* steers NULL: create is enough */
        } tables[] = {
                { "{\"name\": \"t\", \"schema\": " SCHEMA "}", NULL },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"properties\": {\"owner\": \"x\", "
                  "\"write.format.default\": \"parquet\"}}",
                  NULL },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"location\": \"/wh/other\"}",
                  "location" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA ", \"properties\": {\"owner\": \"x\", "
                  "\"write.data.path\": \"/wh/x\"}}",
                  "write.data.path" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"write.metadata.path\": \"/m\"}}",
                  "write.metadata.path" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"write.folder-storage.path\": \"/m\"}}",
                  "write.folder-storage.path" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"write.object-storage.path\": \"/m\"}}",
                  "write.object-storage.path" },
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"icecommit.allowed-prefixes\": \"/\"}}",
                  "icecommit.allowed-prefixes" },
                /* A property named location means nothing to a table: its member does. */
                { "{\"name\": \"t\", \"schema\": " SCHEMA
                  ", \"properties\": {\"location\": \"/x\"}}",
                  NULL },
        };
        static const struct {
                const char *properties, *steers;
        } namespaces[] = {
                { "{}", NULL },
                { "{\"owner\": \"x\"}", NULL },
                { "{\"location\": \"/wh/prod\"}", "location" },
                { "{\"owner\": \"x\", \"write.data.path\": \"/x\"}", "write.data.path" },
                { "{\"icecommit.allowed-prefixes\": \"/\"}", "icecommit.allowed-prefixes" },
        };

        for (size_t i = 0; i < ELEMENTSOF(tables); i++) {
                _cleanup_(json_decrefp) json_t *request = NULL;
                const char *name, *steers;
                Error e = { 0 };

                if (create_table_request_parse(text(tables[i].body), &request, &name, &e) < 0)
                        TEST_FAIL("table case %zu: %s", i, e.message);
                steers = create_table_request_steers(request);
                if (!tables[i].steers != !steers ||
                    (steers && strcmp(steers, tables[i].steers) != 0))
                        TEST_FAIL("table case %zu: '%s', expected '%s'", i, steers ? steers : "",
                                  tables[i].steers ? tables[i].steers : "");
        }
        for (size_t i = 0; i < ELEMENTSOF(namespaces); i++) {
                _cleanup_(json_decrefp) json_t *properties =
                        json_loads(namespaces[i].properties, 0, NULL);
                const char *steers = create_namespace_properties_steer(properties);

                if (!namespaces[i].steers != !steers ||
                    (steers && strcmp(steers, namespaces[i].steers) != 0))
                        TEST_FAIL("namespace case %zu: '%s', expected '%s'", i,
                                  steers ? steers : "",
                                  namespaces[i].steers ? namespaces[i].steers : "");
        }
        ASSERT_TRUE(!create_namespace_properties_steer(/* properties= */ NULL));
}
