/* SPDX-License-Identifier: Apache-2.0 */
/* Schema compatibility by field id (see schema_compat.h). Iceberg readers resolve columns by
 * id, so the written schema maps onto the current one when every written id still exists with
 * a type it can be read as, and every field the data lacks may be null or has a default.
 * Names matter only as a warning sign: a written name now held by another id means the writer
 * and the table disagree about what the column is. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/schema_compat.h"
#include "util/buf.h"

/* One field of a struct, or the element of a list, or the key or value of a map. */
typedef struct SchemaNode {
        int64_t id;
        const char *name;
        bool required;
        bool has_initial_default;
        const json_t *type;
} SchemaNode;

typedef struct SchemaEntry {
        SchemaNode node;
        char *path; /* dotted: "a.b", "list.element", "map.key" */
} SchemaEntry;

/* Every field of one schema, by id and by path. Small (a schema has at most a few thousand
 * fields), so lookups are linear. */
typedef struct SchemaIndex {
        SchemaEntry *entries;
        size_t n, cap;
} SchemaIndex;

typedef struct CompatState {
        SchemaIndex written, current;
        int format_version;
        Buf message;
        unsigned n_problems;
        Error *error;
} CompatState;

static void schema_index_deinit(SchemaIndex *x) {
        for (size_t i = 0; i < x->n; i++)
                free(x->entries[i].path);
        free(x->entries);
        *x = (SchemaIndex){ 0 };
}

static const SchemaEntry *schema_index_by_id(const SchemaIndex *x, int64_t id) {
        for (size_t i = 0; i < x->n; i++)
                if (x->entries[i].node.id == id)
                        return &x->entries[i];
        return NULL;
}

static const SchemaEntry *schema_index_by_path(const SchemaIndex *x, const char *path) {
        for (size_t i = 0; i < x->n; i++)
                if (strcmp(x->entries[i].path, path) == 0)
                        return &x->entries[i];
        return NULL;
}

typedef enum TypeKind {
        TYPE_KIND_INVALID,
        TYPE_KIND_PRIMITIVE,
        TYPE_KIND_STRUCT,
        TYPE_KIND_LIST,
        TYPE_KIND_MAP,
} TypeKind;

static TypeKind type_kind(const json_t *type) {
        const char *t;

        if (json_is_string(type))
                return TYPE_KIND_PRIMITIVE;
        t = json_string_value(json_object_get(type, "type"));
        if (!t)
                return TYPE_KIND_INVALID;
        if (strcmp(t, "struct") == 0)
                return TYPE_KIND_STRUCT;
        if (strcmp(t, "list") == 0)
                return TYPE_KIND_LIST;
        if (strcmp(t, "map") == 0)
                return TYPE_KIND_MAP;
        return TYPE_KIND_INVALID;
}

static const char *type_name(const json_t *type) {
        switch (type_kind(type)) {
        case TYPE_KIND_PRIMITIVE:
                return json_string_value(type);
        case TYPE_KIND_STRUCT:
                return "struct";
        case TYPE_KIND_LIST:
                return "list";
        case TYPE_KIND_MAP:
                return "map";
        default:
                return "invalid";
        }
}

static int json_id(const json_t *o, const char *key, int64_t *ret) {
        const json_t *v = json_object_get(o, key);

        if (!json_is_integer(v))
                return -EINVAL;
        *ret = (int64_t)json_integer_value(v);
        return 0;
}

/* The i-th child of a nested type (Appendix C: struct "fields", list "element-id", map
 * "key-id"/"value-id"). Returns 1 with the child, 0 past the last one, -EINVAL when malformed. */
static int type_child(const json_t *type, size_t i, SchemaNode *ret, Error *error) {
        const json_t *field, *required;

        switch (type_kind(type)) {
        case TYPE_KIND_STRUCT:
                field = json_array_get(json_object_get(type, "fields"), i);
                if (!field)
                        return json_is_array(json_object_get(type, "fields"))
                                       ? 0
                                       : error_set(error, -EINVAL, "struct without a fields array");
                required = json_object_get(field, "required");
                *ret = (SchemaNode){
                        .name = json_string_value(json_object_get(field, "name")),
                        .required = json_is_true(required),
                        .has_initial_default = json_object_get(field, "initial-default") != NULL,
                        .type = json_object_get(field, "type"),
                };
                if (json_id(field, "id", &ret->id) < 0 || !ret->name ||
                    !json_is_boolean(required) || !ret->type)
                        return error_set(error, -EINVAL,
                                         "struct field %zu lacks id, name, required or type", i);
                return 1;
        case TYPE_KIND_LIST:
                if (i > 0)
                        return 0;
                *ret = (SchemaNode){
                        .name = "element",
                        .required = json_is_true(json_object_get(type, "element-required")),
                        .type = json_object_get(type, "element"),
                };
                if (json_id(type, "element-id", &ret->id) < 0 || !ret->type)
                        return error_set(error, -EINVAL, "list lacks element-id or element");
                return 1;
        case TYPE_KIND_MAP:
                if (i > 1)
                        return 0;
                /* Map keys are always required. */
                *ret = (SchemaNode){
                        .name = i == 0 ? "key" : "value",
                        .required = i == 0 || json_is_true(json_object_get(type, "value-required")),
                        .type = json_object_get(type, i == 0 ? "key" : "value"),
                };
                if (json_id(type, i == 0 ? "key-id" : "value-id", &ret->id) < 0 || !ret->type)
                        return error_set(error, -EINVAL,
                                         "map lacks key-id, key, value-id or value");
                return 1;
        case TYPE_KIND_PRIMITIVE:
                return 0;
        default:
                return error_set(error, -EINVAL,
                                 "type is neither a primitive nor struct, list or map");
        }
}

static char *path_join(const char *parent, const char *name) {
        char *p;

        if (!parent)
                return strdup(name);
        if (asprintf(&p, "%s.%s", parent, name) < 0)
                return NULL;
        return p;
}

static int schema_index_add(SchemaIndex *x, const json_t *type, const char *parent, unsigned depth,
                            Error *error) {
        SchemaNode child;
        int r;

        /* Nesting this deep is no schema a writer produces; it also bounds the recursion. */
        if (depth > 64)
                return error_set(error, -EINVAL, "schema nests deeper than 64 levels");
        for (size_t i = 0; (r = type_child(type, i, &child, error)) > 0; i++) {
                SchemaEntry *e;

                if (x->n == x->cap) {
                        size_t cap = x->cap ? x->cap * 2 : 16;
                        SchemaEntry *p = reallocarray(x->entries, cap, sizeof(*p));

                        if (!p)
                                return -ENOMEM;
                        x->entries = p;
                        x->cap = cap;
                }
                e = &x->entries[x->n];
                e->node = child;
                e->path = path_join(parent, child.name);
                if (!e->path)
                        return -ENOMEM;
                x->n++;
                r = schema_index_add(x, child.type, e->path, depth + 1, error);
                if (r < 0)
                        return r;
        }
        return r;
}

static int compat_problem(CompatState *s, const char *fmt, ...) _printf_(2, 3);
static int compat_problem(CompatState *s, const char *fmt, ...) {
        va_list ap;
        int r = 0;

        if (s->n_problems > 0)
                r = buf_append_str(&s->message, "; ");
        va_start(ap, fmt);
        if (r >= 0)
                r = buf_vprintf(&s->message, fmt, ap);
        va_end(ap);
        s->n_problems++;
        /* The message is bounded: past it, problems are only counted. */
        return r == -E2BIG ? 0 : r;
}

/* "decimal(P, S)" -> P and S; false when `t` is not a decimal. */
static bool decimal_parse(const char *t, unsigned *ret_precision, unsigned *ret_scale) {
        unsigned v[2] = { 0 };
        const char *p;

        if (strncmp(t, "decimal(", 8) != 0)
                return false;
        p = t + 8;
        for (size_t k = 0; k < 2; k++) {
                bool any = false;

                while (*p == ' ')
                        p++;
                for (; *p >= '0' && *p <= '9' && v[k] < 1000; p++, any = true)
                        v[k] = v[k] * 10 + (unsigned)(*p - '0');
                while (*p == ' ')
                        p++;
                if (!any || *p != (k == 0 ? ',' : ')'))
                        return false;
                p++;
        }
        if (*p)
                return false;
        *ret_precision = v[0];
        *ret_scale = v[1];
        return true;
}

/* Spec "Schema Evolution", valid type promotions. */
static bool primitive_promotes(const char *from, const char *to, int format_version) {
        unsigned p1, s1, p2, s2;

        if (strcmp(from, to) == 0)
                return true;
        if (strcmp(from, "int") == 0 && strcmp(to, "long") == 0)
                return true;
        if (strcmp(from, "float") == 0 && strcmp(to, "double") == 0)
                return true;
        if (decimal_parse(from, &p1, &s1) && decimal_parse(to, &p2, &s2))
                return s1 == s2 && p2 >= p1;
        if (format_version >= 3) {
                if (strcmp(from, "unknown") == 0)
                        return true;
                /* Not to timestamptz: a date has no zone to convert from. */
                if (strcmp(from, "date") == 0 &&
                    (strcmp(to, "timestamp") == 0 || strcmp(to, "timestamp_ns") == 0))
                        return true;
        }
        return false;
}

/* Fields of the current nested type that the data lacks: fine when optional (read as null)
 * or defaulted (spec: initial-default), not when required. */
static int compat_check_missing(CompatState *s, const json_t *current_type, const char *path) {
        SchemaNode child;
        int r;

        for (size_t i = 0; (r = type_child(current_type, i, &child, s->error)) > 0; i++) {
                _cleanup_(freep) char *child_path = NULL;

                if (schema_index_by_id(&s->written, child.id) || !child.required ||
                    child.has_initial_default)
                        continue;
                child_path = path_join(path, child.name);
                if (!child_path)
                        return -ENOMEM;
                r = compat_problem(s,
                                   "required field '%s' (id %" PRId64
                                   ") is not in the data and has "
                                   "no initial-default",
                                   child_path, child.id);
                if (r < 0)
                        return r;
        }
        return r;
}

static int compat_check_type(CompatState *s, const json_t *written_type, const char *written_path,
                             const json_t *current_type, const char *current_path);

/* Every child of a written nested type against the current schema. */
static int compat_check_children(CompatState *s, const json_t *written_type, const char *path) {
        SchemaNode w;
        int r;

        for (size_t i = 0; (r = type_child(written_type, i, &w, s->error)) > 0; i++) {
                _cleanup_(freep) char *w_path = path_join(path, w.name);
                const SchemaEntry *c, *by_name;

                if (!w_path)
                        return -ENOMEM;
                c = schema_index_by_id(&s->current, w.id);
                by_name = schema_index_by_path(&s->current, w_path);
                if (!c)
                        r = compat_problem(s,
                                           "field '%s' (id %" PRId64
                                           ") was dropped from the table schema",
                                           w_path, w.id);
                if (r >= 0 && by_name && by_name->node.id != w.id)
                        r = compat_problem(s,
                                           "name '%s' now belongs to field id %" PRId64
                                           ", the data wrote field id %" PRId64,
                                           w_path, by_name->node.id, w.id);
                if (r >= 0 && c && c->node.required && !w.required)
                        r = compat_problem(s,
                                           "field '%s' (id %" PRId64 ") is required now, the data "
                                           "wrote it as optional",
                                           c->path, w.id);
                if (r >= 0 && c)
                        r = compat_check_type(s, w.type, w_path, c->node.type, c->path);
                if (r < 0)
                        return r;
        }
        return r;
}

static int compat_check_type(CompatState *s, const json_t *written_type, const char *written_path,
                             const json_t *current_type, const char *current_path) {
        TypeKind wk = type_kind(written_type), ck = type_kind(current_type);
        int r;

        if (wk == TYPE_KIND_INVALID || ck == TYPE_KIND_INVALID)
                return error_set(s->error, -EINVAL, "field '%s' has an invalid type", written_path);
        if (wk == TYPE_KIND_PRIMITIVE && ck == TYPE_KIND_PRIMITIVE) {
                if (primitive_promotes(json_string_value(written_type),
                                       json_string_value(current_type), s->format_version))
                        return 0;
        } else if (wk == ck) {
                r = compat_check_children(s, written_type, written_path);
                if (r >= 0)
                        r = compat_check_missing(s, current_type, current_path);
                return r;
        }
        return compat_problem(
                s, "field '%s' changed type from %s to %s, which is no allowed promotion",
                current_path, type_name(written_type), type_name(current_type));
}

int schema_compat_check(const json_t *written, const json_t *current, int format_version,
                        Error *error) {
        CompatState s = { .format_version = format_version, .error = error };
        int r;

        if (type_kind(written) != TYPE_KIND_STRUCT)
                return error_set(error, -EINVAL, "the written schema is not a struct");
        if (type_kind(current) != TYPE_KIND_STRUCT)
                return error_set(error, -EINVAL, "the table schema is not a struct");
        buf_init(&s.message, 64 * 1024);

        r = schema_index_add(&s.written, written, NULL, 0, error);
        if (r < 0)
                r = error_prefix(error, r, "the written schema");
        if (r >= 0) {
                r = schema_index_add(&s.current, current, NULL, 0, error);
                if (r < 0)
                        r = error_prefix(error, r, "the table schema");
        }
        if (r >= 0)
                r = compat_check_children(&s, written, NULL);
        if (r >= 0)
                r = compat_check_missing(&s, current, NULL);
        if (r >= 0 && s.n_problems > 0)
                r = error_set(error, SCHEMA_COMPAT_E_INCOMPATIBLE, "%u field%s no longer map%s: %s",
                              s.n_problems, s.n_problems == 1 ? "" : "s",
                              s.n_problems == 1 ? "s" : "", buf_str(&s.message));
        if (r == -ENOMEM)
                (void)error_set(error, r, "out of memory");
        schema_index_deinit(&s.written);
        schema_index_deinit(&s.current);
        buf_deinit(&s.message);
        return r;
}
