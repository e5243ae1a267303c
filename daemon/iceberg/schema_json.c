/* SPDX-License-Identifier: Apache-2.0 */
/* The Iceberg schema of an Avro record (see schema_json.h): Avro types with their logical types
 * mapped to Iceberg's, ids from the field-id and element-id attributes, keys in the order of
 * Java's SchemaParser so that "iceberg.schema" reads as Java's does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "iceberg/schema_json.h"
#include "util/cleanup.h"

static json_t *schema_json_type(const json_t *t, bool *ret_optional);

static json_t *schema_json_struct(const json_t *record, bool top) {
        _cleanup_(json_decrefp) json_t *out = NULL, *fields = NULL;
        const json_t *avro_fields = json_object_get(record, "fields");

        if (!json_is_array(avro_fields))
                return NULL;
        fields = json_array();
        if (!fields)
                return NULL;
        for (size_t i = 0; i < json_array_size(avro_fields); i++) {
                const json_t *f = json_array_get(avro_fields, i);
                const json_t *id = json_object_get(f, "field-id"), *doc = json_object_get(f, "doc");
                const json_t *name = json_object_get(f, "name");
                _cleanup_(json_decrefp) json_t *field = NULL;
                bool optional = false;
                json_t *type;

                if (!json_is_integer(id) || !json_is_string(name))
                        return NULL;
                type = schema_json_type(json_object_get(f, "type"), &optional);
                if (!type)
                        return NULL;
                /* Key order as Java's SchemaParser writes it: id, name, required, type, doc. */
                field = json_pack("{s:I, s:O, s:b, s:o}", "id", (json_int_t)json_integer_value(id),
                                  "name", name, "required", !optional, "type", type);
                if (!field)
                        return NULL;
                if (json_is_string(doc) &&
                    json_object_set(field, "doc", (json_t *)(uintptr_t)doc) < 0)
                        return NULL;
                if (json_array_append(fields, field) < 0)
                        return NULL;
        }
        out = top ? json_pack("{s:s, s:i, s:O}", "type", "struct", "schema-id", 0, "fields", fields)
                  : json_pack("{s:s, s:O}", "type", "struct", "fields", fields);
        return TAKE_PTR(out);
}

static json_t *schema_json_type(const json_t *t, bool *ret_optional) {
        static const struct {
                const char *avro, *iceberg;
        } primitives[] = {
                { "string", "string" },   { "long", "long" },    { "int", "int" },
                { "boolean", "boolean" }, { "bytes", "binary" }, { "float", "float" },
                { "double", "double" },
        };
        const char *name, *logical;

        *ret_optional = false;
        if (json_is_array(t)) {
                const json_t *branch = NULL;
                bool inner_optional;

                if (json_array_size(t) != 2)
                        return NULL;
                for (size_t i = 0; i < 2; i++)
                        if (!fields_json_is_null_type(json_array_get(t, i)))
                                branch = json_array_get(t, i);
                if (!branch || fields_json_is_null_type(json_array_get(t, 0)) ==
                                       fields_json_is_null_type(json_array_get(t, 1)))
                        return NULL;
                *ret_optional = true;
                return schema_json_type(branch, &inner_optional);
        }

        name = json_is_string(t) ? json_string_value(t)
                                 : json_string_value(json_object_get(t, "type"));
        logical = json_is_object(t) ? json_string_value(json_object_get(t, "logicalType")) : NULL;
        if (!name)
                return NULL;

        if (strcmp(name, "record") == 0 && json_is_object(t))
                return schema_json_struct(t, /* top= */ false);
        if (strcmp(name, "array") == 0 && json_is_object(t)) {
                const json_t *element_id = json_object_get(t, "element-id");
                bool element_optional;
                json_t *element;

                /* Iceberg maps with non-string keys are arrays of key/value records (Avro
                 * logicalType "map"); SchemaParser writes them as map types. */
                if (logical && strcmp(logical, "map") == 0) {
                        const json_t *kv = json_object_get(json_object_get(t, "items"), "fields");
                        const json_t *k = json_array_get(kv, 0), *v = json_array_get(kv, 1);
                        bool key_optional, value_optional;
                        json_t *key, *value;

                        if (json_array_size(kv) != 2 ||
                            !json_is_integer(json_object_get(k, "field-id")) ||
                            !json_is_integer(json_object_get(v, "field-id")))
                                return NULL;
                        key = schema_json_type(json_object_get(k, "type"), &key_optional);
                        value = schema_json_type(json_object_get(v, "type"), &value_optional);
                        if (!key || !value) {
                                json_decref(key);
                                json_decref(value);
                                return NULL;
                        }
                        return json_pack("{s:s, s:O, s:o, s:O, s:o, s:b}", "type", "map", "key-id",
                                         json_object_get(k, "field-id"), "key", key, "value-id",
                                         json_object_get(v, "field-id"), "value", value,
                                         "value-required", !value_optional);
                }
                if (!json_is_integer(element_id))
                        return NULL;
                element = schema_json_type(json_object_get(t, "items"), &element_optional);
                if (!element)
                        return NULL;
                return json_pack("{s:s, s:I, s:o, s:b}", "type", "list", "element-id",
                                 (json_int_t)json_integer_value(element_id), "element", element,
                                 "element-required", !element_optional);
        }
        if (logical) {
                if (strcmp(name, "int") == 0 && strcmp(logical, "date") == 0)
                        return json_string("date");
                if (strcmp(name, "long") == 0 && strcmp(logical, "timestamp-micros") == 0)
                        return json_string(json_is_true(json_object_get(t, "adjust-to-utc"))
                                                   ? "timestamptz"
                                                   : "timestamp");
                if (strcmp(name, "long") == 0 && strcmp(logical, "timestamp-nanos") == 0)
                        return json_string(json_is_true(json_object_get(t, "adjust-to-utc"))
                                                   ? "timestamptz_ns"
                                                   : "timestamp_ns");
                if (strcmp(name, "long") == 0 && strcmp(logical, "time-micros") == 0)
                        return json_string("time");
                if (strcmp(name, "fixed") == 0 && strcmp(logical, "uuid") == 0)
                        return json_string("uuid");
                if (strcmp(name, "fixed") == 0 && strcmp(logical, "decimal") == 0) {
                        char text[32];

                        (void)snprintf(text, sizeof(text), "decimal(%lld, %lld)",
                                       (long long)json_integer_value(
                                               json_object_get(t, "precision")),
                                       (long long)json_integer_value(json_object_get(t, "scale")));
                        return json_string(text);
                }
                return NULL;
        }
        if (strcmp(name, "fixed") == 0 && json_is_integer(json_object_get(t, "size"))) {
                char text[32];

                (void)snprintf(text, sizeof(text), "fixed[%lld]",
                               (long long)json_integer_value(json_object_get(t, "size")));
                return json_string(text);
        }
        for (size_t i = 0; i < ELEMENTSOF(primitives); i++)
                if (strcmp(name, primitives[i].avro) == 0)
                        return json_string(primitives[i].iceberg);
        return NULL;
}

int schema_json_from_avro(const json_t *avro_record, char **ret_json) {
        _cleanup_(json_decrefp) json_t *schema = NULL;
        char *text;

        schema = schema_json_struct(avro_record, /* top= */ true);
        if (!schema)
                return -EINVAL;
        text = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return -ENOMEM;
        *ret_json = text;
        return 0;
}
