/* SPDX-License-Identifier: Apache-2.0 */
/* Snapshot summary and commit request JSON (docs/design.md sections 2.6 and 3.3). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "iceberg/snapshot.h"
#include "util/checked.h"
#include "util/parse.h"

/* Keys computed here; a writer may not set them (nor anything under "icecommit."). */
static const char *const snapshot_computed_keys[] = {
        "operation",
        "added-data-files",
        "added-records",
        "added-files-size",
        "total-data-files",
        "total-records",
        "total-files-size",
        "total-delete-files",
        "total-position-deletes",
        "total-equality-deletes",
        "manifests-created",
        "manifests-kept",
        "manifests-replaced",
        "entries-processed",
        "engine-name",
        "engine-version",
        "deleted-data-files",
        "deleted-records",
        "removed-files-size",
        "changed-partition-count",
        "added-delete-files",
        "added-equality-delete-files",
        "added-equality-deletes",
        "added-position-delete-files",
        "added-position-deletes",
        "added-dvs",
};

bool snapshot_summary_key_is_reserved(const char *key) {
        if (strncmp(key, "icecommit.", 10) == 0)
                return true;
        for (size_t i = 0; i < sizeof(snapshot_computed_keys) / sizeof(snapshot_computed_keys[0]);
             i++)
                if (strcmp(key, snapshot_computed_keys[i]) == 0)
                        return true;
        return false;
}

static int summary_set_i64(json_t *summary, const char *key, int64_t value) {
        char text[24];

        (void)snprintf(text, sizeof(text), "%" PRId64, value);
        return json_object_set_new(summary, key, json_string(text)) < 0 ? -ENOMEM : 0;
}

/* Java SnapshotSummary.updateTotal: previous + added - deleted; the total is left out when the
 * previous summary lacks it, is not a number, or the result would be negative. */
static int summary_set_total(json_t *summary, const json_t *parent_summary, const char *key,
                             int64_t added) {
        int64_t previous = 0, total;

        if (parent_summary) {
                const char *text = json_string_value(json_object_get(parent_summary, key));

                if (!text || parse_i64(text, &previous) < 0)
                        return 0;
        }
        if (checked_add_i64(&total, previous, added) || total < 0)
                return 0;
        return summary_set_i64(summary, key, total);
}

int snapshot_summary_build(const json_t *parent_summary, const SnapshotAdded *added,
                           const json_t *writer_properties, const SnapshotRecord *record,
                           json_t **ret_summary, Error *error) {
        json_t *summary = json_object();
        const char *key;
        json_t *value;
        int r = 0;

        if (!summary)
                return -ENOMEM;
        json_object_foreach ((json_t *)writer_properties, key, value) {
                if (!json_is_string(value)) {
                        json_decref(summary);
                        return error_set(error, -EINVAL, "snapshot property '%s' is not a string",
                                         key);
                }
                if (snapshot_summary_key_is_reserved(key)) {
                        json_decref(summary);
                        return error_set(error, -EINVAL,
                                         "snapshot property '%s' is computed by icecommitd", key);
                }
                if (json_object_set(summary, key, value) < 0)
                        r = -ENOMEM;
        }

        /* BaseRowDelta.operation(), unless the change says. */
        if (json_object_set_new(summary, "operation",
                                json_string(added->operation                    ? added->operation
                                            : added->equality_delete_files == 0 ? "append"
                                            : added->data_files == 0            ? "delete"
                                                                                : "overwrite")) < 0)
                r = -ENOMEM;
        /* Counters only when > 0 (SnapshotSummary.java:266-289). */
        if (r == 0 && added->data_files > 0)
                r = summary_set_i64(summary, "added-data-files", added->data_files);
        if (r == 0 && added->records > 0)
                r = summary_set_i64(summary, "added-records", added->records);
        if (r == 0 && added->equality_delete_files > 0)
                r = summary_set_i64(summary, "added-delete-files", added->equality_delete_files);
        if (r == 0 && added->equality_delete_files > 0)
                r = summary_set_i64(summary, "added-equality-delete-files",
                                    added->equality_delete_files);
        if (r == 0 && added->files_size > 0)
                r = summary_set_i64(summary, "added-files-size", added->files_size);
        if (r == 0 && added->equality_deletes > 0)
                r = summary_set_i64(summary, "added-equality-deletes", added->equality_deletes);
        if (r == 0 && added->removed_data_files > 0)
                r = summary_set_i64(summary, "deleted-data-files", added->removed_data_files);
        if (r == 0 && added->removed_records > 0)
                r = summary_set_i64(summary, "deleted-records", added->removed_records);
        if (r == 0 && added->removed_files_size > 0)
                r = summary_set_i64(summary, "removed-files-size", added->removed_files_size);
        if (r == 0)
                r = summary_set_total(summary, parent_summary, "total-records",
                                      added->records - added->removed_records);
        if (r == 0)
                r = summary_set_total(summary, parent_summary, "total-files-size",
                                      added->files_size - added->removed_files_size);
        if (r == 0)
                r = summary_set_total(summary, parent_summary, "total-data-files",
                                      added->data_files - added->removed_data_files);
        if (r == 0)
                r = summary_set_total(summary, parent_summary, "total-delete-files",
                                      added->equality_delete_files);
        if (r == 0)
                r = summary_set_total(summary, parent_summary, "total-position-deletes", 0);
        if (r == 0)
                r = summary_set_total(summary, parent_summary, "total-equality-deletes",
                                      added->equality_deletes);
        if (r == 0)
                r = summary_set_i64(summary, "manifests-created", added->manifests_created);
        if (r == 0)
                r = summary_set_i64(summary, "manifests-kept", added->manifests_kept);
        if (r == 0)
                r = summary_set_i64(summary, "manifests-replaced", added->manifests_replaced);
        /* Java writes it only when manifests were rewritten (the entries read to do so). */
        if (r == 0 && added->entries_processed > 0)
                r = summary_set_i64(summary, "entries-processed", added->entries_processed);
        if (r == 0 &&
            (json_object_set_new(summary, "engine-name", json_string("icecommit")) < 0 ||
             json_object_set_new(summary, "engine-version", json_string(ICECOMMIT_VERSION)) < 0))
                r = -ENOMEM;
        if (r == 0 && record &&
            (json_object_set_new(summary, SNAPSHOT_SUMMARY_KEYS, json_string(record->keys)) < 0 ||
             json_object_set_new(summary, SNAPSHOT_SUMMARY_MANIFESTS,
                                 json_string(record->manifest_counts)) < 0 ||
             json_object_set_new(summary, SNAPSHOT_SUMMARY_BRANCH, json_string(record->branch)) <
                     0))
                r = -ENOMEM;
        if (r == 0 && record)
                r = summary_set_i64(summary, SNAPSHOT_SUMMARY_ATTEMPT, (int64_t)record->attempt);
        if (r < 0) {
                json_decref(summary);
                return r;
        }
        *ret_summary = summary;
        return 0;
}

static json_t *snapshot_json(const SnapshotSpec *s) {
        json_t *o = json_pack("{s:I, s:I, s:O, s:s}", "snapshot-id", (json_int_t)s->snapshot_id,
                              "timestamp-ms", (json_int_t)s->timestamp_ms, "summary", s->summary,
                              "manifest-list", s->manifest_list);

        if (!o)
                return NULL;
        if (!s->is_v1 &&
            json_object_set_new(o, "sequence-number", json_integer(s->sequence_number)) < 0)
                goto fail;
        /* parent-snapshot-id only when there is a parent (SnapshotParser). */
        if (s->has_parent &&
            json_object_set_new(o, "parent-snapshot-id", json_integer(s->parent_snapshot_id)) < 0)
                goto fail;
        if (s->has_schema_id && json_object_set_new(o, "schema-id", json_integer(s->schema_id)) < 0)
                goto fail;
        if (s->has_first_row_id &&
            (json_object_set_new(o, "first-row-id", json_integer(s->first_row_id)) < 0 ||
             json_object_set_new(o, "added-rows", json_integer(s->added_rows)) < 0))
                goto fail;
        return o;
fail:
        json_decref(o);
        return NULL;
}

int snapshot_commit_request_build(const TableMetadata *table, const char *branch,
                                  const TableBranch *head, const SnapshotSpec *snapshot,
                                  json_t **ret_request) {
        static const char *const retention[] = { "max-ref-age-ms", "max-snapshot-age-ms",
                                                 "min-snapshots-to-keep" };
        json_t *request, *set_ref, *snap;

        snap = snapshot_json(snapshot);
        if (!snap)
                return -ENOMEM;
        set_ref =
                json_pack("{s:s, s:s, s:s, s:I}", "action", "set-snapshot-ref", "ref-name", branch,
                          "type", "branch", "snapshot-id", (json_int_t)snapshot->snapshot_id);
        if (!set_ref) {
                json_decref(snap);
                return -ENOMEM;
        }
        /* set-snapshot-ref replaces the whole ref: carry its retention settings over. */
        for (size_t i = 0; head->ref && i < sizeof(retention) / sizeof(retention[0]); i++) {
                json_t *v = json_object_get(head->ref, retention[i]);

                if (v && !json_is_null(v) && json_object_set(set_ref, retention[i], v) < 0) {
                        json_decref(snap);
                        json_decref(set_ref);
                        return -ENOMEM;
                }
        }

        /* "snapshot-id": null asserts that the branch does not exist yet. */
        request = json_pack("{s:[{s:s, s:s}, {s:s, s:s, s:o}], s:[{s:s, s:o}, o]}", "requirements",
                            "type", "assert-table-uuid", "uuid", table->uuid, "type",
                            "assert-ref-snapshot-id", "ref", branch, "snapshot-id",
                            head->exists ? json_integer(head->snapshot_id) : json_null(), "updates",
                            "action", "add-snapshot", "snapshot", snap, set_ref);
        if (!request)
                return -ENOMEM;
        /* The snapshot records the current schema id, and the requests were checked against
         * that schema: a commit built on a table whose schema has changed since (a schema
         * update moves no branch head) must be refused, reloaded and checked again. */
        if (table->has_current_schema_id) {
                json_t *schema_req = json_pack("{s:s, s:i}", "type", "assert-current-schema-id",
                                               "current-schema-id", (int)table->current_schema_id);

                if (!schema_req || json_array_append_new(json_object_get(request, "requirements"),
                                                         schema_req) < 0) {
                        json_decref(request);
                        return -ENOMEM;
                }
        }
        *ret_request = request;
        return 0;
}

int64_t snapshot_id_generate(void) {
        uint64_t v = 0;

        /* Like Java's SnapshotIdGeneratorUtil: random bits masked to a positive long. */
        do {
                if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v))
                        v = 0;
                v &= (uint64_t)INT64_MAX;
        } while (v == 0);
        return (int64_t)v;
}

bool snapshot_records_key(const json_t *s, const char *key) {
        const char *keys = json_string_value(
                json_object_get(json_object_get(s, "summary"), SNAPSHOT_SUMMARY_KEYS));
        size_t klen = strlen(key);

        for (const char *p = keys; p && *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);

                if (len == klen && memcmp(p, key, klen) == 0)
                        return true;
                p = end ? end + 1 : p + len;
        }
        return false;
}

/* The next comma-separated item of a list at *p: its start and length; false at the end. */
static bool record_next(const char **p, const char **ret_item, size_t *ret_len) {
        const char *end;

        if (!*p || !**p)
                return false;
        end = strchr(*p, ',');
        *ret_item = *p;
        *ret_len = end ? (size_t)(end - *p) : strlen(*p);
        *p = end ? end + 1 : *p + *ret_len;
        return true;
}

int snapshot_record_find(const json_t *s, const char *key, SnapshotRecordEntry *ret) {
        const json_t *summary = json_object_get(s, "summary");
        const char *keys = json_string_value(json_object_get(summary, SNAPSHOT_SUMMARY_KEYS));
        const char *counts =
                json_string_value(json_object_get(summary, SNAPSHOT_SUMMARY_MANIFESTS));
        const char *attempt = json_string_value(json_object_get(summary, SNAPSHOT_SUMMARY_ATTEMPT));
        const char *item;
        size_t klen = strlen(key), len, index = SIZE_MAX, n = 0, offset = 0, count = 0;
        bool adds_up = true;
        int64_t v;

        *ret = (SnapshotRecordEntry){
                .branch = json_string_value(json_object_get(summary, SNAPSHOT_SUMMARY_BRANCH)),
                .manifest_list = json_string_value(json_object_get(s, "manifest-list")),
        };
        for (const char *p = keys; record_next(&p, &item, &len); n++)
                if (index == SIZE_MAX && len == klen && memcmp(item, key, klen) == 0)
                        index = n;
        if (index == SIZE_MAX)
                return -ENOENT;
        ret->n_requests = n;
        (void)table_json_get_i64(s, "snapshot-id", &ret->snapshot_id);
        (void)table_json_get_i64(s, "sequence-number", &ret->sequence_number);
        ret->has_first_row_id = table_json_get_i64(s, "first-row-id", &ret->first_row_id) == 0;

        /* Exactly one count per key, each a small number; the offset is the sum before it. */
        n = 0;
        for (const char *p = counts; adds_up && record_next(&p, &item, &len); n++) {
                char text[12];

                adds_up = len > 0 && len < sizeof(text);
                if (!adds_up)
                        break;
                memcpy(text, item, len);
                text[len] = '\0';
                adds_up = parse_i64(text, &v) == 0 && v >= 0 && v <= INT32_MAX;
                if (!adds_up)
                        break;
                if (n < index)
                        offset += (size_t)v;
                else if (n == index)
                        count = (size_t)v;
        }
        if (!counts || !adds_up || n != ret->n_requests || !ret->branch || !ret->manifest_list ||
            !attempt || parse_i64(attempt, &v) < 0 || v < 1 || v > UINT32_MAX)
                return -ENODATA;
        ret->attempt = (unsigned)v;
        ret->list_offset = offset;
        ret->n_manifests = count;
        return 0;
}

json_t *snapshot_find_key(const json_t *metadata, const char *key, size_t lookback) {
        json_t *snapshots = json_object_get(metadata, "snapshots");
        size_t n = json_array_size(snapshots);

        /* Snapshots are listed in the order they were added: search the newest first. */
        for (size_t i = n; i > 0 && (lookback == 0 || n - i < lookback); i--) {
                json_t *s = json_array_get(snapshots, i - 1);

                if (snapshot_records_key(s, key))
                        return s;
        }
        return NULL;
}
