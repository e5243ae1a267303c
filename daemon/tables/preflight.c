/* SPDX-License-Identifier: Apache-2.0 */
/* Upgrade pre-flight report (see preflight.h). Writers are told apart by the summary keys
 * engines put in every snapshot they commit; a writer too old for v3 keeps committing without
 * row lineage (or fails), so each one seen is listed for the operator to stop or check. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/manifest_list.h"
#include "tables/preflight.h"
#include "util/parse.h"

/* Summary keys that identify a writer: Iceberg Java's own (iceberg-version, and engine-name /
 * engine-version from EnvironmentContext: Spark, Flink, Trino...), the application ids Spark
 * and others add, and ours (icecommitd writes engine-name=icecommit). */
static const char *const writer_keys[] = {
        "engine-name", "engine-version", "iceberg-version",
        "app-id",      "spark.app.id",   "flink.job-id",
};

int preflight_request_parse(Slice body, UpgradeRequest *ret, Error *error) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *v;
        json_error_t je;
        const char *key;
        UpgradeRequest req = { 0 };

        root = json_loadb((const char *)body.ptr, body.len, JSON_REJECT_DUPLICATES, &je);
        if (!root)
                return error_set(error, -EINVAL, "body is not JSON: %s (line %d, column %d)",
                                 je.text, je.line, je.column);
        if (!json_is_object(root))
                return error_set(error, -EINVAL, "body must be a JSON object");
        json_object_foreach (root, key, v) {
                if (strcmp(key, "format-version") == 0) {
                        if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                            json_integer_value(v) > 3)
                                return error_set(error, -EINVAL,
                                                 "\"format-version\" must be 3 (an integer)");
                        req.format_version = (int)json_integer_value(v);
                } else if (strcmp(key, "dry-run") == 0) {
                        if (!json_is_boolean(v))
                                return error_set(error, -EINVAL,
                                                 "\"dry-run\" must be true or false");
                        req.dry_run = json_is_true(v);
                } else
                        return error_set(error, -EINVAL, "unknown field \"%s\"", key);
        }
        /* An upgrade cannot be undone: neither field has a default. */
        if (req.format_version == 0)
                return error_set(error, -EINVAL, "\"format-version\" is required");
        if (!json_object_get(root, "dry-run"))
                return error_set(error, -EINVAL, "\"dry-run\" is required (true: report only)");
        *ret = req;
        return 0;
}

UpgradeBranch *preflight_branches_free(UpgradeBranch *branches, size_t n) {
        for (size_t i = 0; branches && i < n; i++) {
                free(branches[i].list_location);
                manifest_list_files_free(branches[i].files, branches[i].n_files);
        }
        free(branches);
        return NULL;
}

static int branch_compare(const void *a, const void *b) {
        const UpgradeBranch *x = a, *y = b;
        bool x_main = strcmp(x->name, "main") == 0, y_main = strcmp(y->name, "main") == 0;

        if (x_main != y_main)
                return x_main ? -1 : 1;
        return strcmp(x->name, y->name);
}

int preflight_branches_collect(const TableMetadata *t, UpgradeBranch **ret_branches, size_t *ret_n,
                               Error *error) {
        json_t *refs = json_object_get(t->metadata, "refs"), *ref;
        UpgradeBranch *branches;
        const char *name;
        size_t n = 0;

        branches = calloc(json_object_size(refs) + 1, sizeof(*branches));
        if (!branches)
                return -ENOMEM;
        json_object_foreach (refs, name, ref) {
                UpgradeBranch *b = &branches[n];
                const char *list;

                if (!json_is_string(json_object_get(ref, "type")) ||
                    strcmp(json_string_value(json_object_get(ref, "type")), "branch") != 0)
                        continue;
                n++;
                b->name = name;
                if (table_json_get_i64(ref, "snapshot-id", &b->snapshot_id) < 0) {
                        error_set(error, -EINVAL, "branch '%s' has no snapshot-id", name);
                        preflight_branches_free(branches, n);
                        return -EINVAL;
                }
                b->snapshot = table_snapshot(t, b->snapshot_id);
                list = json_string_value(json_object_get(b->snapshot, "manifest-list"));
                if (!list) {
                        error_set(error, -EINVAL,
                                  "branch '%s': snapshot %" PRId64
                                  " is missing or has no manifest-list",
                                  name, b->snapshot_id);
                        preflight_branches_free(branches, n);
                        return -EINVAL;
                }
                b->list_location = strdup(list);
                if (!b->list_location) {
                        preflight_branches_free(branches, n);
                        return -ENOMEM;
                }
        }
        qsort(branches, n, sizeof(*branches), branch_compare);
        *ret_branches = branches;
        *ret_n = n;
        return 0;
}

/* A summary value as an integer (summaries hold strings), or -1 when absent or not a number. */
static int64_t summary_i64(const json_t *summary, const char *key) {
        const char *s = json_string_value(json_object_get(summary, key));
        uint64_t v;

        if (!s || parse_u64(s, &v) < 0 || v > INT64_MAX)
                return -1;
        return (int64_t)v;
}

/* The writers of the newest `lookback` snapshots, newest first, one entry per distinct
 * identity with how many of those snapshots it committed. */
static json_t *report_writers(const json_t *metadata, uint32_t lookback, size_t *ret_inspected) {
        const json_t *snapshots = json_object_get(metadata, "snapshots");
        size_t n = json_array_size(snapshots), inspected = 0;
        json_t *writers = json_array();

        for (size_t i = n; writers && i > 0 && inspected < lookback; i--, inspected++) {
                const json_t *s = json_array_get(snapshots, i - 1);
                const json_t *summary = json_object_get(s, "summary");
                json_t *identity = json_object(), *w = NULL, *known;
                size_t k;

                if (!identity)
                        goto fail;
                for (size_t j = 0; j < sizeof(writer_keys) / sizeof(writer_keys[0]); j++) {
                        json_t *v = json_object_get(summary, writer_keys[j]);

                        if (json_is_string(v) && json_object_set(identity, writer_keys[j], v) < 0) {
                                json_decref(identity);
                                goto fail;
                        }
                }
                json_array_foreach (writers, k, known)
                        if (json_equal(json_object_get(known, "writer"), identity)) {
                                w = known;
                                break;
                        }
                if (w) {
                        json_decref(identity);
                        json_object_set_new(w, "snapshots",
                                            json_integer(json_integer_value(
                                                                 json_object_get(w, "snapshots")) +
                                                         1));
                        continue;
                }
                w = json_pack("{s:o, s:I, s:O?, s:O?}", "writer", identity, "snapshots",
                              (json_int_t)1, "last-snapshot-id", json_object_get(s, "snapshot-id"),
                              "last-timestamp-ms", json_object_get(s, "timestamp-ms"));
                if (!w || json_array_append_new(writers, w) < 0)
                        goto fail;
        }
        *ret_inspected = inspected;
        return writers;
fail:
        json_decref(writers);
        return NULL;
}

static bool writer_is_ours(const json_t *w) {
        const char *engine =
                json_string_value(json_object_get(json_object_get(w, "writer"), "engine-name"));

        return engine && strcmp(engine, "icecommit") == 0;
}

static int report_warn(json_t *warnings, const char *fmt, ...) _printf_(2, 3);
static int report_warn(json_t *warnings, const char *fmt, ...) {
        char text[1024];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return json_array_append_new(warnings, json_string(text));
}

static bool json_array_has_string(const json_t *array, const char *s) {
        const json_t *v;
        size_t i;

        json_array_foreach (array, i, v)
                if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
                        return true;
        return false;
}

static json_t *report_branch(const UpgradeBranch *b, json_t *unknown, json_t *equality,
                             json_t *warnings) {
        const json_t *summary = json_object_get(b->snapshot, "summary");
        int64_t data = 0, deletes = 0, rows = 0,
                eq = summary_i64(summary, "total-equality-deletes");
        json_t *branch_unknown = json_array(), *o;
        bool rows_known = true;

        if (!branch_unknown)
                return NULL;
        for (size_t i = 0; i < b->n_files; i++) {
                const ManifestFile *m = &b->files[i];

                if (m->content != MANIFEST_CONTENT_DATA) {
                        deletes++;
                        continue;
                }
                data++;
                if (!m->has_counts) {
                        rows_known = false;
                        json_array_append_new(branch_unknown, json_string(m->path));
                        /* One entry per manifest, however many branches share it. */
                        if (!json_array_has_string(unknown, m->path))
                                json_array_append_new(unknown, json_string(m->path));
                        continue;
                }
                rows += m->added_rows_count + m->existing_rows_count;
        }
        if (eq > 0) {
                json_array_append_new(equality,
                                      json_pack("{s:s, s:I, s:I}", "branch", b->name, "snapshot-id",
                                                (json_int_t)b->snapshot_id,
                                                "total-equality-deletes", (json_int_t)eq));
                report_warn(
                        warnings,
                        "branch '%s' holds %" PRId64
                        " equality deletes: rows updated through equality "
                        "deletes get new row ids, their lineage is not kept (spec: row lineage)",
                        b->name, eq);
        }
        o = json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:o}", "name", b->name, "snapshot-id",
                      (json_int_t)b->snapshot_id, "data-manifests", (json_int_t)data,
                      "delete-manifests", (json_int_t)deletes, "rows-to-assign",
                      rows_known ? json_integer(rows) : json_null(), "total-equality-deletes",
                      eq >= 0 ? json_integer(eq) : json_null(), "unknown-row-counts",
                      branch_unknown);
        return o;
}

json_t *preflight_report_build(const TableMetadata *t, const UpgradeBranch *branches, size_t n,
                               int target_format_version, uint32_t lookback) {
        json_t *report = NULL, *writers, *list = json_array(), *unknown = json_array(),
               *equality = json_array(), *warnings = json_array(), *w;
        size_t inspected = 0, i;

        writers = report_writers(t->metadata, lookback, &inspected);
        if (!writers || !list || !unknown || !equality || !warnings)
                goto fail;
        for (i = 0; i < n; i++) {
                json_t *b = report_branch(&branches[i], unknown, equality, warnings);

                if (!b || json_array_append_new(list, b) < 0)
                        goto fail;
        }
        json_array_foreach (writers, i, w) {
                char *identity;

                if (writer_is_ours(w))
                        continue;
                identity = json_dumps(json_object_get(w, "writer"), JSON_COMPACT | JSON_SORT_KEYS);
                report_warn(warnings,
                            "writer %s committed %" JSON_INTEGER_FORMAT
                            " of the %zu newest snapshots: it must "
                            "support format version 3 with row lineage, or stop before the upgrade",
                            identity ? identity : "?",
                            json_integer_value(json_object_get(w, "snapshots")), inspected);
                free(identity);
        }
        if (json_array_size(unknown) > 0)
                report_warn(warnings,
                            "%zu manifests have unknown (null) row counts: the first commit after "
                            "the upgrade "
                            "counts their rows from their entries",
                            json_array_size(unknown));

        report = json_pack("{s:i, s:i, s:I, s:{s:I, s:I}, s:o, s:o, s:o, s:o, s:o}",
                           "format-version", t->format_version, "target-format-version",
                           target_format_version, "next-row-id",
                           (json_int_t)(t->format_version >= 3 ? t->next_row_id : 0), "snapshots",
                           "total",
                           (json_int_t)json_array_size(json_object_get(t->metadata, "snapshots")),
                           "inspected", (json_int_t)inspected, "writers", writers, "branches", list,
                           "equality-deletes", equality, "unknown-row-counts", unknown, "warnings",
                           warnings);
        return report;
fail:
        json_decref(writers);
        json_decref(list);
        json_decref(unknown);
        json_decref(equality);
        json_decref(warnings);
        return NULL;
}
