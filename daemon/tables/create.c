/* SPDX-License-Identifier: Apache-2.0 */
/* Table and namespace creation requests (see create.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/table_schema.h"
#include "storage/storage.h"
#include "storage/roots.h"
#include "tables/create.h"
#include "util/utf8.h"

static bool name_is_valid(const char *s) {
        size_t len = strlen(s);

        if (len == 0 || len > 255 || !utf8_is_valid(s, len))
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '/')
                        return false;
        return strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

int create_table_request_parse(Slice body, json_t **ret_request, const char **ret_name,
                               Error *error) {
        _cleanup_(json_decrefp) json_t *in = NULL, *out = NULL, *properties = NULL;
        json_error_t jerr;
        const json_t *name, *schema, *v;
        json_int_t format_version = TABLE_CREATE_DEFAULT_FORMAT_VERSION;
        int32_t highest_id;
        const char *key;
        char text[8];
        int r;

        in = json_loadb((const char *)body.ptr, body.len, JSON_REJECT_DUPLICATES, &jerr);
        if (!in || !json_is_object(in))
                return error_set(error, -EINVAL, "body is not a JSON object%s%s", in ? "" : ": ",
                                 in ? "" : jerr.text);
        json_object_foreach (in, key, v)
                if (strcmp(key, "name") != 0 && strcmp(key, "schema") != 0 &&
                    strcmp(key, "partition-spec") != 0 && strcmp(key, "write-order") != 0 &&
                    strcmp(key, "location") != 0 && strcmp(key, "properties") != 0 &&
                    strcmp(key, "format-version") != 0)
                        return error_set(error, -EINVAL, "unknown member \"%s\"", key);
        name = json_object_get(in, "name");
        if (!json_is_string(name) || !name_is_valid(json_string_value(name)))
                return error_set(error, -EINVAL,
                                 "\"name\" must be 1 to 255 bytes of UTF-8 without '/' or control "
                                 "characters");
        schema = json_object_get(in, "schema");
        if (!schema)
                return error_set(error, -EINVAL, "\"schema\" is required");
        v = json_object_get(in, "partition-spec");
        if (v && (!json_is_object(v) || !json_is_array(json_object_get(v, "fields"))))
                return error_set(error, -EINVAL,
                                 "\"partition-spec\" must be an object with a \"fields\" array");
        v = json_object_get(in, "write-order");
        if (v && (!json_is_object(v) || !json_is_array(json_object_get(v, "fields"))))
                return error_set(error, -EINVAL,
                                 "\"write-order\" must be an object with a \"fields\" array");
        v = json_object_get(in, "location");
        if (v && (!json_is_string(v) || json_string_length(v) == 0))
                return error_set(error, -EINVAL, "\"location\" must be a non-empty string");
        if (v) {
                _cleanup_(storage_location_deinit) StorageLocation l = { 0 };

                /* A location no backend takes (a control character, another scheme) would
                 * make a table nothing can commit to. */
                r = storage_location_parse(json_string_value(v), &l, error);
                if (r < 0)
                        return error_prefix(error, r, "\"location\"");
        }
        v = json_object_get(in, "format-version");
        if (v) {
                if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 3)
                        return error_set(error, -EINVAL, "\"format-version\" must be 1, 2 or 3");
                format_version = json_integer_value(v);
        }
        /* The one schema validator the filesystem catalog uses too: types known (and allowed
         * in this format version), ids unique and positive, names present. A REST catalog
         * checks again; what it alone refuses comes back as its own message. */
        r = table_schema_validate(schema, (int)format_version, &highest_id, error);
        if (r < 0)
                return r;

        properties = json_object();
        if (!properties)
                return -ENOMEM;
        v = json_object_get(in, "properties");
        if (v) {
                const json_t *pv;

                if (!json_is_object(v))
                        return error_set(error, -EINVAL,
                                         "\"properties\" must be an object of strings");
                json_object_foreach ((json_t *)v, key, pv) {
                        if (!json_is_string(pv))
                                return error_set(error, -EINVAL, "property \"%s\" must be a string",
                                                 key);
                        if (strcmp(key, "format-version") == 0)
                                return error_set(error, -EINVAL,
                                                 "set the format version with \"format-version\", "
                                                 "not as a property");
                        if (json_object_set(properties, key, (json_t *)pv) < 0)
                                return -ENOMEM;
                }
        }
        (void)snprintf(text, sizeof(text), "%d", (int)format_version);
        if (json_object_set_new(properties, "format-version", json_string(text)) < 0)
                return -ENOMEM;

        out = json_deep_copy(in);
        if (!out)
                return -ENOMEM;
        (void)json_object_del(out, "format-version");
        /* Catalogs assign their own ids to the spec and the order but still insist on them. */
        v = json_object_get(out, "partition-spec");
        if (v && !json_object_get(v, "spec-id") &&
            json_object_set_new((json_t *)v, "spec-id", json_integer(0)) < 0)
                return -ENOMEM;
        v = json_object_get(out, "write-order");
        if (v && !json_object_get(v, "order-id") &&
            json_object_set_new((json_t *)v, "order-id",
                                json_integer(
                                        json_array_size(json_object_get(v, "fields")) ? 1 : 0)) < 0)
                return -ENOMEM;
        if (json_object_set(out, "properties", properties) < 0)
                return -ENOMEM;
        *ret_name = json_string_value(json_object_get(out, "name"));
        *ret_request = TAKE_PTR(out);
        return 0;
}

int create_namespace_request_parse(Slice body, char ***ret_levels, size_t *ret_n_levels,
                                   json_t **ret_properties, Error *error) {
        _cleanup_(json_decrefp) json_t *in = NULL;
        json_error_t jerr;
        const json_t *levels, *properties, *v;
        const char *key;
        char **out;
        size_t i, n;

        in = json_loadb((const char *)body.ptr, body.len, JSON_REJECT_DUPLICATES, &jerr);
        if (!in || !json_is_object(in))
                return error_set(error, -EINVAL, "body is not a JSON object%s%s", in ? "" : ": ",
                                 in ? "" : jerr.text);
        json_object_foreach (in, key, v)
                if (strcmp(key, "namespace") != 0 && strcmp(key, "properties") != 0)
                        return error_set(error, -EINVAL, "unknown member \"%s\"", key);
        levels = json_object_get(in, "namespace");
        n = json_array_size(levels);
        if (!json_is_array(levels) || n == 0 || n > 16)
                return error_set(error, -EINVAL, "\"namespace\" must be an array of 1 to 16 names");
        json_array_foreach (levels, i, v)
                if (!json_is_string(v) || !name_is_valid(json_string_value(v)) ||
                    strchr(json_string_value(v), 0x1f))
                        return error_set(error, -EINVAL,
                                         "namespace level %zu must be 1 to 255 bytes of UTF-8 "
                                         "without '/' or control characters",
                                         i);
        properties = json_object_get(in, "properties");
        if (properties) {
                if (!json_is_object(properties))
                        return error_set(error, -EINVAL,
                                         "\"properties\" must be an object of strings");
                json_object_foreach ((json_t *)properties, key, v)
                        if (!json_is_string(v))
                                return error_set(error, -EINVAL, "property \"%s\" must be a string",
                                                 key);
        }
        out = calloc(n + 1, sizeof(*out));
        if (!out)
                return -ENOMEM;
        for (i = 0; i < n; i++) {
                out[i] = strdup(json_string_value(json_array_get(levels, i)));
                if (!out[i]) {
                        for (size_t j = 0; j < i; j++)
                                free(out[j]);
                        free(out);
                        return -ENOMEM;
                }
        }
        *ret_levels = out;
        *ret_n_levels = n;
        *ret_properties = json_incref((json_t *)properties);
        return 0;
}

/* The first property of an object of strings that steers storage, or NULL. In the object's
 * order, so that the answer names what the request names first. */
static const char *properties_steer(const json_t *properties, bool has_location) {
        const char *key;
        json_t *v;

        json_object_foreach ((json_t *)properties, key, v)
                if ((has_location && strcmp(key, "location") == 0) ||
                    storage_roots_property_steers(key))
                        return key;
        return NULL;
}

const char *create_table_request_steers(const json_t *request) {
        if (json_object_get(request, "location"))
                return "location";
        return properties_steer(json_object_get(request, "properties"),
                                /* has_location= */ false);
}

const char *create_namespace_properties_steer(const json_t *properties) {
        return properties_steer(properties, /* has_location= */ true);
}

/* Two types equal up to field ids: primitives by name, nested types member by member. */
static bool type_same(const json_t *a, const json_t *b, const char *path, Error *error);

static bool struct_same(const json_t *a, const json_t *b, const char *path, Error *error) {
        const json_t *fa = json_object_get(a, "fields"), *fb = json_object_get(b, "fields");
        char sub[512];

        if (json_array_size(fa) != json_array_size(fb)) {
                error_set(error, -EEXIST, "%s has %zu fields, the request %zu", path,
                          json_array_size(fb), json_array_size(fa));
                return false;
        }
        for (size_t i = 0; i < json_array_size(fa); i++) {
                const json_t *x = json_array_get(fa, i), *y = json_array_get(fb, i);
                const char *nx = json_string_value(json_object_get(x, "name"));
                const char *ny = json_string_value(json_object_get(y, "name"));

                if (!nx || !ny || strcmp(nx, ny) != 0) {
                        error_set(error, -EEXIST, "%s field %zu is '%s', the request names '%s'",
                                  path, i, ny ? ny : "?", nx ? nx : "?");
                        return false;
                }
                (void)snprintf(sub, sizeof(sub), "%s.%s", path, nx);
                if (json_is_true(json_object_get(x, "required")) !=
                    json_is_true(json_object_get(y, "required"))) {
                        error_set(error, -EEXIST, "%s is %s, the request makes it %s", sub,
                                  json_is_true(json_object_get(y, "required")) ? "required"
                                                                               : "optional",
                                  json_is_true(json_object_get(x, "required")) ? "required"
                                                                               : "optional");
                        return false;
                }
                if (!type_same(json_object_get(x, "type"), json_object_get(y, "type"), sub, error))
                        return false;
        }
        return true;
}

static bool type_same(const json_t *a, const json_t *b, const char *path, Error *error) {
        const char *ka, *kb;
        char sub[512];

        if (json_is_string(a) || json_is_string(b)) {
                if (json_is_string(a) && json_is_string(b) &&
                    strcmp(json_string_value(a), json_string_value(b)) == 0)
                        return true;
                error_set(error, -EEXIST, "%s has another type than the request asks for", path);
                return false;
        }
        ka = json_string_value(json_object_get(a, "type"));
        kb = json_string_value(json_object_get(b, "type"));
        if (!ka || !kb || strcmp(ka, kb) != 0) {
                error_set(error, -EEXIST, "%s is a %s, the request asks for a %s", path,
                          kb ? kb : "?", ka ? ka : "?");
                return false;
        }
        if (strcmp(ka, "struct") == 0)
                return struct_same(a, b, path, error);
        if (strcmp(ka, "list") == 0) {
                (void)snprintf(sub, sizeof(sub), "%s.element", path);
                if (json_is_true(json_object_get(a, "element-required")) !=
                    json_is_true(json_object_get(b, "element-required"))) {
                        error_set(error, -EEXIST, "%s differs in nullability", sub);
                        return false;
                }
                return type_same(json_object_get(a, "element"), json_object_get(b, "element"), sub,
                                 error);
        }
        if (strcmp(ka, "map") == 0) {
                (void)snprintf(sub, sizeof(sub), "%s.key", path);
                if (!type_same(json_object_get(a, "key"), json_object_get(b, "key"), sub, error))
                        return false;
                (void)snprintf(sub, sizeof(sub), "%s.value", path);
                if (json_is_true(json_object_get(a, "value-required")) !=
                    json_is_true(json_object_get(b, "value-required"))) {
                        error_set(error, -EEXIST, "%s differs in nullability", sub);
                        return false;
                }
                return type_same(json_object_get(a, "value"), json_object_get(b, "value"), sub,
                                 error);
        }
        error_set(error, -EEXIST, "%s has an unknown type '%s'", path, ka);
        return false;
}

/* The name of the top-level or nested column with this id in a schema, or NULL. */
static const char *schema_column_name(const json_t *type, json_int_t id) {
        const json_t *fields = json_object_get(type, "fields");
        size_t i;
        json_t *f;

        json_array_foreach (fields, i, f) {
                const char *name;

                if (json_integer_value(json_object_get(f, "id")) == id)
                        return json_string_value(json_object_get(f, "name"));
                name = schema_column_name(json_object_get(f, "type"), id);
                if (name)
                        return name;
        }
        return NULL;
}

static const json_t *metadata_current_schema(const json_t *metadata) {
        const json_t *schemas = json_object_get(metadata, "schemas");
        json_int_t id = json_integer_value(json_object_get(metadata, "current-schema-id"));
        size_t i;
        json_t *s;

        json_array_foreach (schemas, i, s)
                if (json_integer_value(json_object_get(s, "schema-id")) == id)
                        return s;
        return json_object_get(metadata, "schema"); /* v1 metadata */
}

static const json_t *metadata_default_spec(const json_t *metadata) {
        const json_t *specs = json_object_get(metadata, "partition-specs");
        json_int_t id = json_integer_value(json_object_get(metadata, "default-spec-id"));
        size_t i;
        json_t *s;

        json_array_foreach (specs, i, s)
                if (json_integer_value(json_object_get(s, "spec-id")) == id)
                        return s;
        return NULL;
}

int create_table_request_matches(const json_t *request, const json_t *metadata, Error *error) {
        const json_t *schema = metadata_current_schema(metadata),
                     *spec = metadata_default_spec(metadata);
        const json_t *want_spec = json_object_get(request, "partition-spec");
        const json_t *want_fields = json_object_get(want_spec, "fields"),
                     *have_fields = json_object_get(spec, "fields");
        const json_t *properties = json_object_get(request, "properties");
        const json_t *have_properties = json_object_get(metadata, "properties");
        const char *key, *want_version;
        json_t *v;
        char have_version[8];

        if (!json_is_object(schema) ||
            !json_is_integer(json_object_get(metadata, "format-version")))
                return error_set(
                        error, -EINVAL,
                        "the existing table's metadata has no current schema or format version");
        want_version = json_string_value(json_object_get(properties, "format-version"));
        (void)snprintf(have_version, sizeof(have_version), "%d",
                       (int)json_integer_value(json_object_get(metadata, "format-version")));
        if (!want_version || strcmp(want_version, have_version) != 0)
                return error_set(error, -EEXIST,
                                 "the table has format version %s, the request asks for %s",
                                 have_version, want_version ? want_version : "?");
        if (!struct_same(json_object_get(request, "schema"), schema, "the schema", error))
                return -EEXIST;
        if (json_array_size(want_fields) != json_array_size(have_fields))
                return error_set(error, -EEXIST,
                                 "the table has %zu partition fields, the request %zu",
                                 json_array_size(have_fields), json_array_size(want_fields));
        for (size_t i = 0; i < json_array_size(want_fields); i++) {
                const json_t *w = json_array_get(want_fields, i),
                             *h = json_array_get(have_fields, i);
                const char *wsrc =
                        schema_column_name(json_object_get(request, "schema"),
                                           json_integer_value(json_object_get(w, "source-id")));
                const char *hsrc =
                        schema_column_name(schema,
                                           json_integer_value(json_object_get(h, "source-id")));
                const char *wt = json_string_value(json_object_get(w, "transform"));
                const char *ht = json_string_value(json_object_get(h, "transform"));
                const char *wn = json_string_value(json_object_get(w, "name"));
                const char *hn = json_string_value(json_object_get(h, "name"));

                if (!wsrc || !hsrc || strcmp(wsrc, hsrc) != 0 || !wt || !ht ||
                    strcmp(wt, ht) != 0 || (wn && (!hn || strcmp(wn, hn) != 0)))
                        return error_set(error, -EEXIST,
                                         "partition field %zu is %s(%s) named '%s', the request "
                                         "asks for %s(%s)",
                                         i, ht ? ht : "?", hsrc ? hsrc : "?", hn ? hn : "?",
                                         wt ? wt : "?", wsrc ? wsrc : "?");
        }
        json_object_foreach ((json_t *)properties, key, v) {
                const char *have = json_string_value(json_object_get(have_properties, key));

                if (strcmp(key, "format-version") == 0)
                        continue;
                if (!have || strcmp(have, json_string_value(v)) != 0)
                        return error_set(error, -EEXIST,
                                         "property '%s' is %s%s%s, the request sets '%s'", key,
                                         have ? "'" : "", have ? have : "not set", have ? "'" : "",
                                         json_string_value(v));
        }
        return 0;
}
