/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/schema_compat.c: every compatible and incompatible change of a table schema against
 * the schema a staged manifest was written with, by field id (spec "Schema Evolution"). */
#include <errno.h>
#include <stdlib.h>

#include "iceberg/schema_compat.h"
#include "test.h"

/* The schema the data was written with: primitives, a struct, a list and a map. */
static const char *written_text =
        "{\"type\": \"struct\", \"schema-id\": 0, \"fields\": ["
        "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
        "{\"id\": 2, \"name\": \"data\", \"required\": false, \"type\": \"string\"},"
        "{\"id\": 3, \"name\": \"n\", \"required\": false, \"type\": \"int\"},"
        "{\"id\": 4, \"name\": \"f\", \"required\": false, \"type\": \"float\"},"
        "{\"id\": 5, \"name\": \"d\", \"required\": false, \"type\": \"decimal(9, 2)\"},"
        "{\"id\": 6, \"name\": \"s\", \"required\": false, \"type\": {\"type\": \"struct\", "
        "\"fields\": ["
        "  {\"id\": 7, \"name\": \"x\", \"required\": true, \"type\": \"int\"}]}},"
        "{\"id\": 8, \"name\": \"l\", \"required\": false, \"type\": {\"type\": \"list\", "
        "\"element-id\": 9,"
        "  \"element-required\": true, \"element\": \"int\"}},"
        "{\"id\": 10, \"name\": \"m\", \"required\": false, \"type\": {\"type\": \"map\", "
        "\"key-id\": 11,"
        "  \"key\": \"string\", \"value-id\": 12, \"value-required\": false, \"value\": "
        "\"float\"}},"
        "{\"id\": 13, \"name\": \"day\", \"required\": false, \"type\": \"date\"}"
        "]}";

/* The written schema with one text replaced (each `from` must occur), as the table's. */
static json_t *variant(const char *from1, const char *to1, const char *from2, const char *to2) {
        char text[8192];
        const char *froms[2] = { from1, from2 }, *tos[2] = { to1, to2 };
        json_t *j;

        ASSERT_TRUE(strlen(written_text) < sizeof(text));
        memcpy(text, written_text, strlen(written_text) + 1);
        for (size_t k = 0; k < 2 && froms[k]; k++) {
                char *at = strstr(text, froms[k]);
                size_t from_len = strlen(froms[k]), to_len = strlen(tos[k]), rest;

                ASSERT_TRUE(at);
                rest = strlen(at + from_len) + 1;
                ASSERT_TRUE((size_t)(at - text) + to_len + rest <= sizeof(text));
                memmove(at + to_len, at + from_len, rest);
                memcpy(at, tos[k], to_len);
        }
        j = json_loads(text, 0, NULL);
        ASSERT_TRUE(j);
        return j;
}

static int check(json_t *current, int format_version, Error *e) {
        json_t *written = json_loads(written_text, 0, NULL);
        int r;

        ASSERT_TRUE(written);
        e->message[0] = 0;
        r = schema_compat_check(written, current, format_version, e);
        json_decref(written);
        json_decref(current);
        return r;
}

#define COMPATIBLE(fv, ...)                                                                        \
        do {                                                                                       \
                Error _e;                                                                          \
                int _r = check(variant(__VA_ARGS__), (fv), &_e);                                   \
                if (_r != 0)                                                                       \
                        TEST_FAIL("expected compatible, got %d: %s", _r, _e.message);              \
        } while (0)

#define INCOMPATIBLE(e, fv, ...)                                                                   \
        ASSERT_EQ(check(variant(__VA_ARGS__), (fv), (e)), SCHEMA_COMPAT_E_INCOMPATIBLE)

TEST(compatible_changes) {
        /* unchanged */
        COMPATIBLE(3, NULL, NULL, NULL, NULL);
        /* a new optional column */
        COMPATIBLE(3, "{\"id\": 13,",
                   "{\"id\": 14, \"name\": \"new\", \"required\": false, \"type\": \"string\"}, "
                   "{\"id\": 13,",
                   NULL, NULL);
        /* renames, top level and nested */
        COMPATIBLE(3, "\"name\": \"data\"", "\"name\": \"payload\"", "\"name\": \"x\"",
                   "\"name\": \"x2\"");
        /* int -> long, float -> double, wider decimal precision */
        COMPATIBLE(2, "\"name\": \"n\", \"required\": false, \"type\": \"int\"",
                   "\"name\": \"n\", \"required\": false, \"type\": \"long\"", NULL, NULL);
        COMPATIBLE(2, "\"name\": \"f\", \"required\": false, \"type\": \"float\"",
                   "\"name\": \"f\", \"required\": false, \"type\": \"double\"", NULL, NULL);
        COMPATIBLE(2, "decimal(9, 2)", "decimal(12,2)", NULL, NULL);
        COMPATIBLE(2, "decimal(9, 2)", "decimal(9,2)", NULL, NULL);
        /* promotions inside a struct, of a list element and of a map value */
        COMPATIBLE(3, "\"name\": \"x\", \"required\": true, \"type\": \"int\"",
                   "\"name\": \"x\", \"required\": true, \"type\": \"long\"",
                   "\"element\": \"int\"", "\"element\": \"long\"");
        COMPATIBLE(3, "\"value\": \"float\"", "\"value\": \"double\"", NULL, NULL);
        /* format 3 only: date -> timestamp / timestamp_ns */
        COMPATIBLE(3, "\"type\": \"date\"", "\"type\": \"timestamp\"", NULL, NULL);
        COMPATIBLE(3, "\"type\": \"date\"", "\"type\": \"timestamp_ns\"", NULL, NULL);
        /* a required field made optional */
        COMPATIBLE(3, "\"name\": \"id\", \"required\": true",
                   "\"name\": \"id\", \"required\": false", NULL, NULL);
        /* a new required field with an initial-default */
        COMPATIBLE(3, "{\"id\": 13,",
                   "{\"id\": 14, \"name\": \"must\", \"required\": true, \"type\": \"int\", "
                   "\"initial-default\": 5}, {\"id\": 13,",
                   NULL, NULL);
        /* a new optional struct whose own fields are required: null as a whole */
        COMPATIBLE(3, "{\"id\": 13,",
                   "{\"id\": 14, \"name\": \"o\", \"required\": false, \"type\": {\"type\": "
                   "\"struct\", \"fields\": ["
                   "{\"id\": 15, \"name\": \"r\", \"required\": true, \"type\": \"int\"}]}}, "
                   "{\"id\": 13,",
                   NULL, NULL);
}

TEST(incompatible_changes) {
        Error e;

        /* a written field dropped */
        INCOMPATIBLE(&e, 3,
                     "{\"id\": 2, \"name\": \"data\", \"required\": false, \"type\": \"string\"},",
                     "", NULL, NULL);
        ASSERT_STREQ(
                e.message,
                "1 field no longer maps: field 'data' (id 2) was dropped from the table schema");

        /* a name reused under a new field id */
        INCOMPATIBLE(&e, 3, "{\"id\": 2, \"name\": \"data\"", "{\"id\": 14, \"name\": \"data\"",
                     NULL, NULL);
        ASSERT_STREQ(
                e.message,
                "2 fields no longer map: field 'data' (id 2) was dropped from the table schema; "
                "name 'data' now belongs to field id 14, the data wrote field id 2");

        /* the old id kept under a new name, its name given to a new id: still refused */
        INCOMPATIBLE(&e, 3, "{\"id\": 2, \"name\": \"data\"",
                     "{\"id\": 2, \"name\": \"old\", \"required\": false, \"type\": \"string\"}, "
                     "{\"id\": 14, \"name\": \"data\"",
                     NULL, NULL);
        ASSERT_STREQ(e.message, "1 field no longer maps: name 'data' now belongs to field id 14, "
                                "the data wrote field id 2");

        /* a required field added without initial-default */
        INCOMPATIBLE(&e, 3, "{\"id\": 13,",
                     "{\"id\": 14, \"name\": \"must\", \"required\": true, \"type\": \"int\"}, "
                     "{\"id\": 13,",
                     NULL, NULL);
        ASSERT_STREQ(e.message, "1 field no longer maps: required field 'must' (id 14) is not in "
                                "the data and has no initial-default");

        /* narrowing and other type changes */
        INCOMPATIBLE(&e, 3, "\"name\": \"id\", \"required\": true, \"type\": \"long\"",
                     "\"name\": \"id\", \"required\": true, \"type\": \"int\"", NULL, NULL);
        ASSERT_CONTAINS(e.message,
                        "field 'id' changed type from long to int, which is no allowed promotion");
        INCOMPATIBLE(&e, 3, "decimal(9, 2)", "decimal(8, 2)", NULL, NULL);
        ASSERT_CONTAINS(e.message, "field 'd' changed type from decimal(9, 2) to decimal(8, 2)");
        INCOMPATIBLE(&e, 3, "decimal(9, 2)", "decimal(12, 3)", NULL, NULL);
        ASSERT_CONTAINS(e.message, "field 'd' changed type");
        INCOMPATIBLE(&e, 3, "\"name\": \"data\", \"required\": false, \"type\": \"string\"",
                     "\"name\": \"data\", \"required\": false, \"type\": {\"type\": \"struct\", "
                     "\"fields\": []}",
                     NULL, NULL);
        ASSERT_CONTAINS(e.message, "field 'data' changed type from string to struct");
        /* date -> timestamp is a format 3 promotion; never to timestamptz */
        INCOMPATIBLE(&e, 2, "\"type\": \"date\"", "\"type\": \"timestamp\"", NULL, NULL);
        ASSERT_CONTAINS(e.message, "field 'day' changed type from date to timestamp");
        INCOMPATIBLE(&e, 3, "\"type\": \"date\"", "\"type\": \"timestamptz\"", NULL, NULL);
        ASSERT_CONTAINS(e.message, "field 'day' changed type from date to timestamptz");

        /* an optional field made required */
        INCOMPATIBLE(&e, 3, "\"name\": \"data\", \"required\": false",
                     "\"name\": \"data\", \"required\": true", NULL, NULL);
        ASSERT_CONTAINS(e.message,
                        "field 'data' (id 2) is required now, the data wrote it as optional");

        /* nested: a struct field dropped, a list element replaced, a map value narrowed */
        INCOMPATIBLE(&e, 3, "{\"id\": 7, \"name\": \"x\", \"required\": true, \"type\": \"int\"}",
                     "", NULL, NULL);
        ASSERT_STREQ(
                e.message,
                "1 field no longer maps: field 's.x' (id 7) was dropped from the table schema");
        INCOMPATIBLE(&e, 3, "\"element-id\": 9", "\"element-id\": 19", NULL, NULL);
        ASSERT_STREQ(
                e.message,
                "3 fields no longer map: field 'l.element' (id 9) was dropped from the table "
                "schema; "
                "name 'l.element' now belongs to field id 19, the data wrote field id 9; "
                "required field 'l.element' (id 19) is not in the data and has no initial-default");
        INCOMPATIBLE(&e, 3, "\"value\": \"float\"", "\"value\": \"int\"", NULL, NULL);
        ASSERT_CONTAINS(e.message, "field 'm.value' changed type from float to int");
        /* the renamed parent's path is the table's in messages about the current schema */
        INCOMPATIBLE(&e, 3, "\"name\": \"s\"", "\"name\": \"s2\"",
                     "\"name\": \"x\", \"required\": true, \"type\": \"int\"",
                     "\"name\": \"x\", \"required\": true, \"type\": \"string\"");
        ASSERT_CONTAINS(e.message, "field 's2.x' changed type from int to string");
}

TEST(every_offending_field_is_named) {
        Error e;

        INCOMPATIBLE(&e, 3,
                     "{\"id\": 2, \"name\": \"data\", \"required\": false, \"type\": \"string\"},",
                     "{\"id\": 14, \"name\": \"must\", \"required\": true, \"type\": \"int\"},",
                     "\"name\": \"n\", \"required\": false, \"type\": \"int\"",
                     "\"name\": \"n\", \"required\": false, \"type\": \"string\"");
        ASSERT_CONTAINS(e.message, "3 fields no longer map: ");
        ASSERT_CONTAINS(e.message, "field 'data' (id 2) was dropped");
        ASSERT_CONTAINS(e.message, "field 'n' changed type from int to string");
        ASSERT_CONTAINS(e.message, "required field 'must' (id 14)");
}

TEST(malformed_schemas) {
        json_t *good = json_loads(written_text, 0, NULL);
        json_t *bad;
        Error e;

        ASSERT_TRUE(good);
        bad = json_loads("{\"type\": \"struct\", \"fields\": [{\"name\": \"x\", \"required\": "
                         "true, \"type\": \"int\"}]}",
                         0, NULL);
        ASSERT_EQ(schema_compat_check(bad, good, 3, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "the written schema: struct field 0 lacks id");
        ASSERT_EQ(schema_compat_check(good, bad, 3, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "the table schema");
        json_decref(bad);
        bad = json_string("int");
        ASSERT_EQ(schema_compat_check(bad, good, 3, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "not a struct");
        json_decref(bad);
        json_decref(good);
}
