/* SPDX-License-Identifier: Apache-2.0 */
/* Writer API request parsing (see request.h and proto/openapi.yaml). */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/snapshot.h"
#include "storage/storage.h"
#include "util/utf8.h"
#include "writer/data_files.h"
#include "writer/request.h"

bool request_key_is_valid(const char *key) {
        size_t n = 0;

        for (const char *p = key; *p; p++, n++) {
                char c = *p;

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == ':' || c == '-'))
                        return false;
        }
        return n >= 1 && n <= COMMIT_KEY_MAX;
}

/* Names come from the URL path and the body: they must be UTF-8 (they go into JSON, which
 * jansson refuses otherwise) without control characters. */
static bool text_is_valid(const char *s, size_t len, size_t max) {
        if (len == 0 || len > max || strlen(s) != len || !utf8_is_valid(s, len))
                return false;
        for (size_t i = 0; i < len; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
                        return false;
        return true;
}

int request_target_parse(const char *namespace_param, const char *table, CommitTarget *ret,
                         Error *error) {
        const char *p = namespace_param;
        CommitTarget t = { 0 };
        int r;

        for (;;) {
                const char *end = strchr(p, 0x1f);
                size_t len = end ? (size_t)(end - p) : strlen(p);
                char **levels;

                if (len == 0 || len > 255) {
                        r = error_set(error, -EINVAL, "namespace level %zu is empty or too long",
                                      t.n_namespace);
                        goto fail;
                }
                levels = reallocarray(t.namespace, t.n_namespace + 1, sizeof(*levels));
                if (!levels) {
                        r = -ENOMEM;
                        goto fail;
                }
                t.namespace = levels;
                t.namespace[t.n_namespace] = strndup(p, len);
                if (!t.namespace[t.n_namespace]) {
                        r = -ENOMEM;
                        goto fail;
                }
                t.n_namespace++;
                if (!text_is_valid(t.namespace[t.n_namespace - 1], len, 255)) {
                        r = error_set(
                                error, -EINVAL,
                                "namespace level %zu is not UTF-8 or contains control characters",
                                t.n_namespace - 1);
                        goto fail;
                }
                if (!end)
                        break;
                p = end + 1;
        }
        if (!text_is_valid(table, strlen(table), 255)) {
                r = error_set(error, -EINVAL,
                              "table name is empty, longer than 255 bytes, not UTF-8 or has "
                              "control characters");
                goto fail;
        }
        t.table = strdup(table);
        if (!t.table) {
                r = -ENOMEM;
                goto fail;
        }
        *ret = t;
        return 0;
fail:
        request_target_deinit(&t);
        return r;
}

void request_target_deinit(CommitTarget *t) {
        for (size_t i = 0; i < t->n_namespace; i++)
                free(t->namespace[i]);
        free(t->namespace);
        free(t->table);
        *t = (CommitTarget){ 0 };
}

json_t *request_target_namespace_json(const CommitTarget *t) {
        json_t *levels = json_array();

        for (size_t i = 0; levels && i < t->n_namespace; i++)
                if (json_array_append_new(levels, json_string(t->namespace[i])) < 0)
                        levels = (json_decref(levels), NULL);
        return levels;
}

/* Whether two locations name one file: local paths normalized, S3 by bucket and key whatever
 * the scheme's spelling. Unparsable ones compare as written (refused later, with the reason). */
static bool request_same_file(const char *a, const char *b) {
        _cleanup_(storage_location_deinit) StorageLocation la = { 0 }, lb = { 0 };

        if (strcmp(a, b) == 0)
                return true;
        if (storage_location_parse(a, &la, NULL) < 0 || storage_location_parse(b, &lb, NULL) < 0 ||
            la.scheme != lb.scheme)
                return false;
        if (la.scheme == STORAGE_SCHEME_LOCAL)
                return strcmp(la.path, lb.path) == 0;
        return strcmp(la.bucket, lb.bucket) == 0 && strcmp(la.key, lb.key) == 0;
}

static int request_parse_manifests(CommitRequest *r, json_t *array,
                                   const CommitRequestLimits *limits, Error *error) {
        size_t i, n;
        json_t *v;

        if (!json_is_array(array))
                return error_set(error, -EINVAL,
                                 "'staged-manifests' must be an array of manifest locations");
        n = json_array_size(array);
        if (n == 0)
                return error_set(error, -EINVAL, "'staged-manifests' is empty: nothing to commit");
        if (n > limits->max_manifests)
                return error_set(error, -E2BIG,
                                 "'staged-manifests' lists %zu manifests, above the limit of %zu",
                                 n, limits->max_manifests);
        r->manifests = calloc(n, sizeof(char *));
        if (!r->manifests)
                return -ENOMEM;
        json_array_foreach (array, i, v) {
                const char *s = json_string_value(v);

                if (s && json_string_length(v) > limits->max_path_bytes)
                        return error_set(error, -ENAMETOOLONG,
                                         "'staged-manifests'[%zu] is %zu bytes, above the limit "
                                         "of %zu (commit.max-path-bytes)",
                                         i, json_string_length(v), limits->max_path_bytes);
                /* Control characters are refused at intake by the location parser, with
                 * every other rule a location must meet (422, as all of them). */
                if (!s || json_string_length(v) == 0 || strlen(s) != json_string_length(v))
                        return error_set(error, -EINVAL,
                                         "'staged-manifests'[%zu] must be a location string, not "
                                         "empty",
                                         i);
                /* The same file twice would register its data files twice (spec: a path may
                 * appear once per snapshot), also when spelled twice ("m", "./m", "//m",
                 * "file:m"; s3a:// for s3://): compared as the one file they name. */
                for (size_t j = 0; j < r->n_manifests; j++)
                        if (request_same_file(r->manifests[j], s))
                                return error_set(
                                        error, -EINVAL,
                                        "'staged-manifests'[%zu] '%s' names the same file as "
                                        "'staged-manifests'[%zu] '%s'",
                                        i, s, j, r->manifests[j]);
                r->manifests[r->n_manifests] = strdup(s);
                if (!r->manifests[r->n_manifests])
                        return -ENOMEM;
                r->n_manifests++;
        }
        return 0;
}

static int request_parse_properties(CommitRequest *r, json_t *object,
                                    const CommitRequestLimits *limits, Error *error) {
        size_t n_bytes = 0;
        const char *key;
        json_t *v;

        if (!object) {
                r->snapshot_properties = json_object();
                return r->snapshot_properties ? 0 : -ENOMEM;
        }
        if (!json_is_object(object))
                return error_set(error, -EINVAL,
                                 "'snapshot-properties' must be an object of strings");
        /* Every property is kept in the table's metadata for good: without a bound, a writer
         * grows every later commit's metadata (and its cost) without end. */
        if (json_object_size(object) > limits->max_properties)
                return error_set(error, -E2BIG,
                                 "'snapshot-properties' has %zu properties, above the limit of %zu "
                                 "(commit.max-snapshot-properties)",
                                 json_object_size(object), limits->max_properties);
        json_object_foreach (object, key, v) {
                n_bytes += strlen(key) + (json_is_string(v) ? json_string_length(v) : 0);
                if (!json_is_string(v))
                        return error_set(error, -EINVAL,
                                         "'snapshot-properties'.'%s' must be a string", key);
                if (snapshot_summary_key_is_reserved(key))
                        return error_set(
                                error, -EINVAL,
                                "'snapshot-properties'.'%s' is reserved: icecommitd computes it",
                                key);
        }
        if (n_bytes > limits->max_properties_bytes)
                return error_set(error, -E2BIG,
                                 "'snapshot-properties' hold %zu bytes of keys and values, above "
                                 "the limit of %zu "
                                 "(commit.max-snapshot-properties-bytes)",
                                 n_bytes, limits->max_properties_bytes);
        r->snapshot_properties = json_incref(object);
        return 0;
}

static int request_fingerprint(CommitRequest *r) {
        _cleanup_(json_decrefp) json_t *ns = request_target_namespace_json(&r->target);
        _cleanup_(json_decrefp) json_t *manifests = json_array(), *canonical = NULL;
        int rr = 0;

        if (!ns || !manifests)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_manifests && rr == 0; i++)
                rr = json_array_append_new(manifests, json_string(r->manifests[i]));
        canonical = json_pack("{s:o, s:s, s:s, s:o, s:O}", "namespace", TAKE_PTR(ns), "table",
                              r->target.table, "branch", r->branch, "staged-manifests",
                              TAKE_PTR(manifests), "snapshot-properties", r->snapshot_properties);
        /* Described files are part of "the same body": the same key with other files is a reuse. */
        if (canonical && r->data_files_json &&
            json_object_set(canonical, "data-files", r->data_files_json) < 0)
                rr = -ENOMEM;
        /* The encoding changes what the bounds mean: part of the body, too. */
        if (canonical && r->bounds_encoding &&
            json_object_set_new(canonical, "bounds-encoding", json_string(r->bounds_encoding)) < 0)
                rr = -ENOMEM;
        if (rr < 0 || !canonical)
                return -ENOMEM;
        r->fingerprint = json_dumps(canonical, JSON_COMPACT | JSON_SORT_KEYS);
        return r->fingerprint ? 0 : -ENOMEM;
}

char *request_key_scope(const char *principal, const char *namespace_param, const char *table) {
        char *scope;

        /* Levels and names hold no control characters (request_target_parse), principals none
         * at all: 0x1D and 0x1E separate. */
        if (principal)
                return asprintf(&scope, "%s\x1d%s\x1e%s", principal, namespace_param, table) < 0
                               ? NULL
                               : scope;
        return asprintf(&scope, "%s\x1e%s", namespace_param, table) < 0 ? NULL : scope;
}

char *request_key_recorded(const char *principal, const char *key) {
        char *recorded;

        if (!principal)
                return strdup(key);
        return asprintf(&recorded, "%s/%s", principal, key) < 0 ? NULL : recorded;
}

int request_set_principal(CommitRequest *r, const char *principal) {
        _cleanup_(freep) char *p = NULL, *scope = NULL, *recorded = NULL;

        assert(!r->principal);
        p = strdup(principal);
        recorded = request_key_recorded(principal, r->idempotency_key);
        if (!p || !recorded)
                return -ENOMEM;
        if (asprintf(&scope, "%s\x1d%s", principal, r->key_scope) < 0) {
                scope = NULL; /* asprintf leaves it undefined on failure */
                return -ENOMEM;
        }
        free(r->key_scope);
        free(r->recorded_key);
        r->key_scope = TAKE_PTR(scope);
        r->recorded_key = TAKE_PTR(recorded);
        r->principal = TAKE_PTR(p);
        return 0;
}

int request_parse(const char *namespace_param, const char *table, Slice body,
                  const CommitRequestLimits *limits, CommitRequest **ret, Error *error) {
        _cleanup_(request_freep) CommitRequest *r = NULL;
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_error_t json_error;
        json_t *v;
        const char *key, *branch;
        int rr;

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        rr = request_target_parse(namespace_param, table, &r->target, error);
        if (rr < 0)
                return rr;

        root = json_loadb((const char *)body.ptr, body.len, JSON_REJECT_DUPLICATES, &json_error);
        if (!root)
                return error_set(error, -EINVAL, "body is not valid JSON: %s at line %d column %d",
                                 json_error.text, json_error.line, json_error.column);
        if (!json_is_object(root))
                return error_set(error, -EINVAL, "body must be a JSON object");

        rr = 0;
        json_object_foreach (root, key, v)
                if (strcmp(key, "idempotency-key") != 0 && strcmp(key, "branch") != 0 &&
                    strcmp(key, "staged-manifests") != 0 &&
                    strcmp(key, "snapshot-properties") != 0 && strcmp(key, "data-files") != 0 &&
                    strcmp(key, "bounds-encoding") != 0) {
                        rr = error_set(error, -EINVAL, "unknown field '%s'", key);
                        break;
                }
        if (rr == 0) {
                key = json_string_value(json_object_get(root, "idempotency-key"));
                if (!key || !request_key_is_valid(key))
                        rr = error_set(error, -EINVAL,
                                       "'idempotency-key' is required: 1 to 128 characters of A-Z "
                                       "a-z 0-9 . _ : -");
                else if (!(r->idempotency_key = strdup(key)))
                        rr = -ENOMEM;
        }
        if (rr == 0) {
                v = json_object_get(root, "branch");
                branch = v ? json_string_value(v) : "main";
                if (!branch || !text_is_valid(branch, strlen(branch), 255) ||
                    (v && json_string_length(v) != strlen(branch)))
                        rr = error_set(
                                error, -EINVAL,
                                "'branch' must be a non-empty string without control characters");
                else if (!(r->branch = strdup(branch)))
                        rr = -ENOMEM;
        }
        if (rr == 0 && !json_object_get(root, "staged-manifests") &&
            !json_object_get(root, "data-files"))
                rr = error_set(error, -EINVAL,
                               "nothing to commit: give 'staged-manifests' (manifest locations), "
                               "'data-files' (data file descriptions) or both");
        /* An empty staged-manifests list is fine beside data-files. */
        v = json_object_get(root, "staged-manifests");
        if (rr == 0 && v &&
            !(json_is_array(v) && json_array_size(v) == 0 && json_object_get(root, "data-files")))
                rr = request_parse_manifests(r, v, limits, error);
        v = json_object_get(root, "data-files");
        if (rr == 0 && v) {
                rr = data_files_parse(v, limits->max_data_files, limits->max_path_bytes,
                                      &r->data_files, &r->n_data_files, error);
                if (rr == 0)
                        r->data_files_json = json_incref(v);
        }
        v = json_object_get(root, "bounds-encoding");
        if (rr == 0 && v) {
                DataFileBoundsEncoding encoding = DATA_FILE_BOUNDS_AUTO;

                if (!json_object_get(root, "data-files"))
                        rr = error_set(error, -EINVAL,
                                       "'bounds-encoding' is about the bounds of 'data-files', "
                                       "which the request lacks");
                else if (!json_is_string(v) ||
                         data_file_bounds_encoding_parse(json_string_value(v), &encoding) < 0)
                        rr = error_set(error, -EINVAL,
                                       "'bounds-encoding' must be \"typed\" (JSON single values) "
                                       "or \"binary\" (hex of binary single values, as Iceberg "
                                       "Java's ContentFileParser writes them)");
                else if (!(r->bounds_encoding = strdup(json_string_value(v))))
                        rr = -ENOMEM;
                for (size_t i = 0; rr == 0 && i < r->n_data_files; i++)
                        r->data_files[i].bounds_encoding = encoding;
        }
        if (rr == 0)
                rr = request_parse_properties(r, json_object_get(root, "snapshot-properties"),
                                              limits, error);
        if (rr < 0)
                return rr;

        rr = request_fingerprint(r);
        if (rr < 0)
                return rr;
        {
                /* Queue identity: the namespace as sent (0x1F-joined), the table and the branch. */
                r->key_scope =
                        request_key_scope(/* principal= */ NULL, namespace_param, r->target.table);
                r->recorded_key = strdup(r->idempotency_key);
                if (!r->key_scope || !r->recorded_key)
                        return -ENOMEM;
                if (asprintf(&r->queue_name, "%s\x1f%s@%s", namespace_param, r->target.table,
                             r->branch) < 0) {
                        r->queue_name = NULL;
                        return -ENOMEM;
                }
                if (asprintf(&r->table_name, "%s\x1f%s", namespace_param, r->target.table) < 0) {
                        r->table_name = NULL;
                        return -ENOMEM;
                }
        }
        *ret = TAKE_PTR(r);
        return 0;
}

CommitRequest *request_free(CommitRequest *r) {
        if (!r)
                return NULL;
        request_target_deinit(&r->target);
        free(r->idempotency_key);
        free(r->branch);
        for (size_t i = 0; i < r->n_manifests; i++)
                free(r->manifests[i]);
        free(r->manifests);
        data_files_free(r->data_files, r->n_data_files);
        json_decref(r->data_files_json);
        free(r->bounds_encoding);
        json_decref(r->snapshot_properties);
        free(r->fingerprint);
        free(r->queue_name);
        free(r->table_name);
        free(r->key_scope);
        free(r->principal);
        free(r->recorded_key);
        free(r);
        return NULL;
}
