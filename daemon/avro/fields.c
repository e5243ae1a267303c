/* SPDX-License-Identifier: Apache-2.0 */
/* Avro record fields by field id (see fields.h). Iceberg resolves columns by field id, never by
 * name (v1 manifest lists name field 504 added_data_files_count, later ones added_files_count),
 * so every read goes through the "field-id" attributes of the writer schema JSON. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "util/utf8.h"
#include "util/cleanup.h"

bool fields_json_is_null_type(const json_t *t) {
        const char *s = json_string_value(t);

        if (!s && json_is_object(t))
                s = json_string_value(json_object_get(t, "type"));
        return s && strcmp(s, "null") == 0;
}

static avro_schema_t fields_unlink(avro_schema_t s) {
        while (s && avro_typeof(s) == AVRO_LINK)
                s = avro_schema_link_target(s);
        return s;
}

int fields_record_init(const json_t *json, avro_schema_t schema, FieldsRecord *ret, Error *e) {
        const json_t *fields;
        size_t n;

        schema = fields_unlink(schema);
        if (!json_is_object(json) || !json_is_string(json_object_get(json, "type")) ||
            strcmp(json_string_value(json_object_get(json, "type")), "record") != 0)
                return error_set(e, -EBADMSG, "schema is not an inline Avro record");
        fields = json_object_get(json, "fields");
        if (!json_is_array(fields) || !schema || avro_typeof(schema) != AVRO_RECORD)
                return error_set(e, -EBADMSG, "schema record has no fields array");
        n = json_array_size(fields);
        if (n != avro_schema_record_size(schema))
                return error_set(e, -EBADMSG,
                                 "schema record fields differ between JSON and avro-c");

        for (size_t i = 0; i < n; i++) {
                const json_t *f = json_array_get(fields, i), *id = json_object_get(f, "field-id");
                const char *name = json_string_value(json_object_get(f, "name"));

                /* Both views come from the same text; this guards against the two parsers
                 * disagreeing (duplicate keys, unusual JSON) before positions are trusted. */
                if (!name || strcmp(name, avro_schema_record_field_name(schema, (int)i)) != 0)
                        return error_set(e, -EBADMSG, "schema field %zu has no matching name", i);
                if (id && !json_is_integer(id))
                        return error_set(e, -EBADMSG,
                                         "schema field '%s' has a non-integer field-id", name);
                for (size_t j = 0; id && j < i; j++) {
                        const json_t *other =
                                json_object_get(json_array_get(fields, j), "field-id");

                        if (other && json_integer_value(other) == json_integer_value(id))
                                return error_set(e, -EBADMSG,
                                                 "schema field id %" PRId64 " appears twice",
                                                 (int64_t)json_integer_value(id));
                }
        }

        *ret = (FieldsRecord){ .json = json, .schema = schema };
        return 0;
}

int fields_index(const FieldsRecord *rec, int64_t field_id) {
        const json_t *fields = json_object_get(rec->json, "fields");

        for (size_t i = 0; i < json_array_size(fields); i++) {
                const json_t *id = json_object_get(json_array_get(fields, i), "field-id");

                if (json_is_integer(id) && json_integer_value(id) == field_id)
                        return (int)i;
        }
        return -ENOENT;
}

const char *fields_name(const FieldsRecord *rec, int index) {
        const char *name = NULL;

        if (index >= 0)
                name = avro_schema_record_field_name(rec->schema, index);
        return name ? name : "?";
}

/* The field's type with a union of null and one other type unwrapped, in both views;
 * ret_optional may be NULL. */
static int fields_unwrap(const FieldsRecord *rec, int index, const json_t **ret_json,
                         avro_schema_t *ret_schema, bool *ret_optional, Error *e) {
        const json_t *t =
                json_object_get(json_array_get(json_object_get(rec->json, "fields"), (size_t)index),
                                "type");
        avro_schema_t s = fields_unlink(avro_schema_record_field_get_by_index(rec->schema, index));
        bool optional = false;

        if (!s || !t)
                return error_set(e, -EBADMSG, "field '%s' has no type", fields_name(rec, index));
        if (avro_typeof(s) == AVRO_UNION) {
                int branch = -1;

                if (!json_is_array(t) || json_array_size(t) != avro_schema_union_size(s))
                        return error_set(e, -EBADMSG, "field '%s' has an inconsistent union",
                                         fields_name(rec, index));
                for (size_t i = 0; i < json_array_size(t); i++) {
                        if (fields_json_is_null_type(json_array_get(t, i))) {
                                optional = true;
                                continue;
                        }
                        if (branch >= 0)
                                return error_set(e, -EBADMSG,
                                                 "field '%s' is a union of several types",
                                                 fields_name(rec, index));
                        branch = (int)i;
                }
                if (branch < 0)
                        return error_set(e, -EBADMSG, "field '%s' is always null",
                                         fields_name(rec, index));
                t = json_array_get(t, (size_t)branch);
                s = fields_unlink(avro_schema_union_branch(s, branch));
        }
        *ret_json = t;
        *ret_schema = s;
        if (ret_optional)
                *ret_optional = optional;
        return 0;
}

int fields_type(const FieldsRecord *rec, int index, FieldsType *ret, Error *e) {
        const json_t *t;
        avro_schema_t s;
        bool optional;
        int r;

        r = fields_unwrap(rec, index, &t, &s, &optional, e);
        if (r < 0)
                return r;
        *ret = (FieldsType){
                .type = avro_typeof(s),
                .logical_type = json_is_object(t)
                                        ? json_string_value(json_object_get(t, "logicalType"))
                                        : NULL,
                .is_optional = optional,
        };
        return 0;
}

int fields_record_nested(const FieldsRecord *rec, int index, FieldsRecord *ret, Error *e) {
        const json_t *t;
        avro_schema_t s;
        int r;

        r = fields_unwrap(rec, index, &t, &s, /* ret_optional= */ NULL, e);
        if (r < 0)
                return r;
        if (avro_typeof(s) == AVRO_ARRAY) {
                t = json_object_get(t, "items");
                s = fields_unlink(avro_schema_array_items(s));
        }
        r = fields_record_init(t, s, ret, e);
        if (r < 0)
                return error_prefix(e, r, "field '%s'", fields_name(rec, index));
        return 0;
}

static const char *fields_value_name(avro_value_t *rec, int index) {
        const char *name = avro_schema_record_field_name(avro_value_get_schema(rec), index);

        return name ? name : "?";
}

static const char *fields_type_name(avro_type_t t) {
        switch (t) {
        case AVRO_STRING:
                return "string";
        case AVRO_BYTES:
                return "bytes";
        case AVRO_INT32:
                return "int";
        case AVRO_INT64:
                return "long";
        case AVRO_FLOAT:
                return "float";
        case AVRO_DOUBLE:
                return "double";
        case AVRO_BOOLEAN:
                return "boolean";
        case AVRO_NULL:
                return "null";
        case AVRO_RECORD:
                return "record";
        case AVRO_ENUM:
                return "enum";
        case AVRO_FIXED:
                return "fixed";
        case AVRO_MAP:
                return "map";
        case AVRO_ARRAY:
                return "array";
        case AVRO_UNION:
                return "union";
        default:
                return "link";
        }
}

/* The field's value with its union branch resolved: 1 with a value, 0 absent or null. */
static int fields_child(avro_value_t *rec, int index, avro_value_t *ret, Error *e) {
        avro_value_t child;

        if (index < 0)
                return 0;
        if (avro_value_get_by_index(rec, (size_t)index, &child, NULL) != 0)
                return error_set(e, -EBADMSG, "record has no field %d", index);
        if (avro_value_get_type(&child) == AVRO_UNION) {
                avro_value_t branch;

                if (avro_value_get_current_branch(&child, &branch) != 0)
                        return error_set(e, -EBADMSG, "field '%s' has no union branch",
                                         fields_value_name(rec, index));
                child = branch;
        }
        if (avro_value_get_type(&child) == AVRO_NULL)
                return 0;
        *ret = child;
        return 1;
}

static int fields_type_error(avro_value_t *rec, int index, avro_value_t *v, const char *want,
                             Error *e) {
        return error_set(e, -EBADMSG, "field '%s' is a %s, expected %s",
                         fields_value_name(rec, index), fields_type_name(avro_value_get_type(v)),
                         want);
}

/* A scalar on its way into or out of a field; the member in use follows the Avro type. */
typedef struct FieldsScalar {
        int64_t l; /* a long, or an int read where a long was asked for */
        int32_t i;
        int b;
        const char *str;   /* read: NUL-terminated, `len` without the NUL */
        const void *bytes; /* never NULL when read */
        size_t len;
} FieldsScalar;

/* What every scalar getter does: resolve the field (fields_child()), check that it holds a
 * `want` (a long also accepts an int, Avro's type promotion) and read it; strings are also
 * checked to be text. Returns like the getters (fields.h). */
static int fields_get_scalar(avro_value_t *rec, int index, avro_type_t want, FieldsScalar *ret,
                             Error *e) {
        FieldsScalar s = { 0 };
        avro_type_t type;
        avro_value_t v = { 0 }; /* set by fields_child(); gcc -O3 cannot see it */
        int r;

        r = fields_child(rec, index, &v, e);
        if (r <= 0)
                return r;
        type = avro_value_get_type(&v);
        if (type != want && !(want == AVRO_INT64 && type == AVRO_INT32))
                return fields_type_error(rec, index, &v, fields_type_name(want), e);

        switch (type) {
        case AVRO_INT64:
                r = avro_value_get_long(&v, &s.l);
                break;
        case AVRO_INT32:
                r = avro_value_get_int(&v, &s.i);
                s.l = s.i;
                break;
        case AVRO_BOOLEAN:
                r = avro_value_get_boolean(&v, &s.b);
                break;
        case AVRO_STRING:
                r = avro_value_get_string(&v, &s.str, &s.len);
                /* avro-c counts the terminating NUL in the size. */
                if (r == 0 && s.str && s.len > 0)
                        s.len--;
                else
                        r = EINVAL;
                break;
        case AVRO_BYTES:
                r = avro_value_get_bytes(&v, &s.bytes, &s.len);
                if (!s.bytes)
                        s.bytes = "";
                break;
        default:
                assert(!"fields_get_scalar() is only called for scalar types");
                r = EINVAL;
        }
        if (r != 0)
                return error_set(e, -EBADMSG, "field '%s' unreadable",
                                 fields_value_name(rec, index));
        if (type == AVRO_STRING && memchr(s.str, 0, s.len))
                return error_set(e, -EBADMSG, "field '%s' contains a NUL byte",
                                 fields_value_name(rec, index));
        /* Avro strings are UTF-8; these end up in messages and JSON, so they must be. */
        if (type == AVRO_STRING && !utf8_is_valid(s.str, s.len))
                return error_set(e, -EBADMSG, "field '%s' is not valid UTF-8",
                                 fields_value_name(rec, index));
        *ret = s;
        return 1;
}

int fields_get_long(avro_value_t *rec, int index, int64_t *ret, Error *e) {
        FieldsScalar s;
        int r = fields_get_scalar(rec, index, AVRO_INT64, &s, e);

        if (r > 0)
                *ret = s.l;
        return r;
}

int fields_get_int(avro_value_t *rec, int index, int32_t *ret, Error *e) {
        FieldsScalar s;
        int r = fields_get_scalar(rec, index, AVRO_INT32, &s, e);

        if (r > 0)
                *ret = s.i;
        return r;
}

int fields_get_bool(avro_value_t *rec, int index, bool *ret, Error *e) {
        FieldsScalar s;
        int r = fields_get_scalar(rec, index, AVRO_BOOLEAN, &s, e);

        if (r > 0)
                *ret = s.b != 0;
        return r;
}

int fields_get_string(avro_value_t *rec, int index, const char **ret, size_t *ret_len, Error *e) {
        FieldsScalar s;
        int r = fields_get_scalar(rec, index, AVRO_STRING, &s, e);

        if (r > 0) {
                *ret = s.str;
                if (ret_len)
                        *ret_len = s.len;
        }
        return r;
}

int fields_get_bytes(avro_value_t *rec, int index, const void **ret, size_t *ret_len, Error *e) {
        FieldsScalar s;
        int r = fields_get_scalar(rec, index, AVRO_BYTES, &s, e);

        if (r > 0) {
                *ret = s.bytes;
                *ret_len = s.len;
        }
        return r;
}

int fields_get_value(avro_value_t *rec, int index, avro_value_t *ret, Error *e) {
        return fields_child(rec, index, ret, e);
}

/* Picks the union branch (null or not) when the field is a union. */
static int fields_child_for_set(avro_value_t *rec, int index, bool want_null, avro_value_t *ret) {
        avro_value_t child;

        if (index < 0)
                return -ENOENT;
        if (avro_value_get_by_index(rec, (size_t)index, &child, NULL) != 0)
                return -EINVAL;
        if (avro_value_get_type(&child) == AVRO_UNION) {
                avro_schema_t u = avro_value_get_schema(&child);

                for (size_t i = 0; i < avro_schema_union_size(u); i++) {
                        bool is_null =
                                avro_typeof(avro_schema_union_branch(u, (int)i)) == AVRO_NULL;

                        if (is_null == want_null)
                                return avro_value_set_branch(&child, (int)i, ret) == 0 ? 0
                                                                                       : -ENOMEM;
                }
                return -EINVAL;
        }
        if (want_null && avro_value_get_type(&child) != AVRO_NULL)
                return -EINVAL;
        *ret = child;
        return 0;
}

/* What every scalar setter does: select the branch of `type` (AVRO_NULL: the null branch),
 * check that the field is of that type and store `s` there. Returns like the setters. */
static int fields_set_scalar(avro_value_t *rec, int index, avro_type_t type,
                             const FieldsScalar *s) {
        avro_value_t c;
        int r;

        r = fields_child_for_set(rec, index, /* want_null= */ type == AVRO_NULL, &c);
        if (r < 0)
                return r;
        if (avro_value_get_type(&c) != type)
                return -EINVAL;

        switch (type) {
        case AVRO_NULL:
                r = avro_value_set_null(&c);
                break;
        case AVRO_INT64:
                r = avro_value_set_long(&c, s->l);
                break;
        case AVRO_INT32:
                r = avro_value_set_int(&c, s->i);
                break;
        case AVRO_BOOLEAN:
                r = avro_value_set_boolean(&c, s->b);
                break;
        case AVRO_STRING:
                r = avro_value_set_string(&c, s->str);
                break;
        case AVRO_BYTES:
                /* avro-c copies the bytes but takes them as non-const. */
                r = avro_value_set_bytes(&c, (void *)(uintptr_t)(s->bytes ? s->bytes : ""), s->len);
                break;
        default:
                assert(!"fields_set_scalar() is only called for scalar types");
                return -EINVAL;
        }
        return r == 0 ? 0 : -ENOMEM;
}

int fields_set_long(avro_value_t *rec, int index, int64_t v) {
        return fields_set_scalar(rec, index, AVRO_INT64, &(FieldsScalar){ .l = v });
}

int fields_set_int(avro_value_t *rec, int index, int32_t v) {
        return fields_set_scalar(rec, index, AVRO_INT32, &(FieldsScalar){ .i = v });
}

int fields_set_bool(avro_value_t *rec, int index, bool v) {
        return fields_set_scalar(rec, index, AVRO_BOOLEAN, &(FieldsScalar){ .b = v });
}

int fields_set_string(avro_value_t *rec, int index, const char *s) {
        return fields_set_scalar(rec, index, AVRO_STRING, &(FieldsScalar){ .str = s });
}

int fields_set_bytes(avro_value_t *rec, int index, const void *p, size_t len) {
        return fields_set_scalar(rec, index, AVRO_BYTES, &(FieldsScalar){ .bytes = p, .len = len });
}

int fields_set_null(avro_value_t *rec, int index) {
        return fields_set_scalar(rec, index, AVRO_NULL, /* s= */ NULL);
}

int fields_set_value(avro_value_t *rec, int index, avro_value_t *ret_child) {
        return fields_child_for_set(rec, index, /* want_null= */ false, ret_child);
}
