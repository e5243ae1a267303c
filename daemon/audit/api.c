/* SPDX-License-Identifier: Apache-2.0 */
/* Lineage audit routes (api.h): request -> catalog load (loop) -> file reads (storage, loop)
 * and parsing and checks (thread pool), in chunks of manifest lists -> answer (loop). One
 * AuditJob per request owns everything of it; the client going away only detaches the HTTP
 * request, the job runs to its end and frees itself. */
#define LOG_MODULE "audit"
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/api.h"
#include "audit/table.h"
#include "audit/table_report.h"
#include "iceberg/manifest_entries.h"
#include "storage/roots.h"
#include "storage/storage.h"
#include "util/log.h"
#include "util/parse.h"
#include "writer/request.h"

struct AuditApi {
        uv_loop_t *loop;
        Auth *auth;
        Catalog *catalog;
        const AuditConfig *config;
        const StorageConfig *storage_config;
        Storage *storage;
        unsigned n_running; /* jobs between their request and their answer */
};

typedef struct AuditJob {
        AuditApi *api;
        HttpRequest *http; /* NULL once answered or once the client went away */
        CommitTarget target;
        bool is_lookup;
        int64_t row_id;
        AuditTable *table;
        StorageProps *props; /* the table's storage settings from its load */
        /* Lineage: manifest lists are read and parsed a chunk of snapshots at a time. */
        size_t next_snapshot;
        size_t *chunk;                /* snapshot indices of the chunk */
        StorageReadItem *chunk_items; /* ... and their lists as read */
        size_t n_chunk;
        /* Lookup: the snapshot the row id falls in, the manifest list read, the manifest. */
        size_t lookup_snapshot;
        char *lookup_manifest; /* the manifest to read next, or NULL once answered */
        ssize_t lookup_manifest_index;
        StorageReadItem lookup_item;
        /* The outcome of the thread-pool work: an answer, or an error status, type and reason. */
        json_t *answer;
        int status;
        const char *error_type;
        Error error;
        uv_work_t work;
} AuditJob;

static AuditJob *audit_job_free(AuditJob *j) {
        if (!j)
                return NULL;
        j->api->n_running--;
        if (j->http) /* never left unanswered, whatever ended the job */
                http_reply_error(j->http, 500, "internal", "the audit ended without an answer");
        request_target_deinit(&j->target);
        audit_table_free(j->table);
        storage_props_free(j->props);
        for (size_t i = 0; i < j->n_chunk; i++)
                buf_deinit(&j->chunk_items[i].data);
        free(j->chunk);
        free(j->chunk_items);
        free(j->lookup_manifest);
        buf_deinit(&j->lookup_item.data);
        json_decref(j->answer);
        free(j);
        return NULL;
}

DEFINE_CLEANUP_FUNC(AuditJob, audit_job_free);

static void audit_job_on_gone(HttpRequest *r, void *userdata) {
        AuditJob *j = userdata;

        j->http = NULL;
}

static _printf_(4, 5) void audit_job_fail(AuditJob *j, int status, const char *type,
                                          const char *fmt, ...) {
        char message[2048];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        log_debug("audit of table '%s' failed status=%d type=%s: %s", j->target.table, status, type,
                  message);
        if (j->http)
                http_reply_error(j->http, status, type, "%s", message);
        j->http = NULL;
}

/* Work-side error: recorded, answered by audit_after_work(). */
static int audit_work_fail(AuditJob *j, int status, const char *type, int r) {
        j->status = status;
        j->error_type = type;
        return r;
}

/* Thread pool: takes the manifest list of snapshot i as read (item); an unreadable one is
 * recorded in the audit. */
static int audit_take_list(AuditJob *j, size_t i, StorageReadItem *item) {
        AuditSnapshot *s = &j->table->snapshots[i];
        int r;

        if (!s->manifest_list)
                return 0;
        if (item->status == -ENOMEM)
                return audit_work_fail(j, 503, "out-of-memory",
                                       error_set(&j->error, -ENOMEM, "out of memory"));
        /* A store that fails for now is no finding about the table: ask again later. */
        if (storage_status_is_transient(item->status))
                return audit_work_fail(j, 503, "storage-unavailable",
                                       error_set(&j->error, item->status, "%s",
                                                 item->error.message));
        if (item->status < 0)
                return audit_snapshot_set_list_error(j->table, i, item->error.message) < 0
                               ? audit_work_fail(j, 503, "out-of-memory",
                                                 error_set(&j->error, -ENOMEM, "out of memory"))
                               : 0;
        r = audit_snapshot_set_list(j->table, i, buf_slice(&item->data), &j->error);
        buf_deinit(&item->data);
        if (r == -E2BIG)
                return audit_work_fail(j, 422, "table-too-large", r);
        if (r < 0)
                return audit_work_fail(j, 503, "out-of-memory", r);
        return 0;
}

static json_t *audit_target_json(const AuditJob *j) {
        return json_pack("{s:o, s:s}", "namespace", request_target_namespace_json(&j->target),
                         "table", j->target.table);
}

/* Thread pool: the chunk's lists into the audit; after the last chunk, the report. */
static void audit_work_lineage(AuditJob *j) {
        _cleanup_(json_decrefp) json_t *report = NULL;

        for (size_t k = 0; k < j->n_chunk; k++)
                if (audit_take_list(j, j->chunk[k], &j->chunk_items[k]) < 0)
                        return;
        if (j->next_snapshot < j->table->n_snapshots)
                return; /* more chunks to read */
        report = audit_table_report(j->table);
        if (!report || json_object_update_new(report, audit_target_json(j)) < 0) {
                (void)audit_work_fail(j, 503, "out-of-memory",
                                      error_set(&j->error, -ENOMEM, "out of memory"));
                return;
        }
        j->answer = TAKE_PTR(report);
        j->status = 200;
}

static json_t *audit_unassigned(const AuditJob *j, const char *reason,
                                json_t *details /* stolen, may be NULL */) {
        json_t *o = json_pack("{s:I, s:b, s:s, s:I}", "row-id", (json_int_t)j->row_id, "assigned",
                              0, "reason", reason, "next-row-id",
                              (json_int_t)j->table->table->next_row_id);

        if (o && details && json_object_update(o, details) < 0)
                o = (json_decref(o), NULL);
        json_decref(details);
        return o;
}

static json_t *audit_snapshot_brief(const AuditSnapshot *s) {
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s?}", "snapshot-id",
                         (json_int_t)s->snapshot_id, "sequence-number",
                         (json_int_t)s->sequence_number, "timestamp-ms",
                         (json_int_t)s->timestamp_ms, "first-row-id", (json_int_t)s->first_row_id,
                         "last-row-id", (json_int_t)(s->first_row_id + s->added_rows - 1),
                         "manifest-list", s->manifest_list);
}

static json_t *audit_manifest_brief(const ManifestFile *m) {
        return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "path", m->path, "first-row-id",
                         (json_int_t)m->first_row_id, "last-row-id",
                         (json_int_t)(m->first_row_id + m->added_rows_count +
                                      m->existing_rows_count - 1),
                         "added-rows", (json_int_t)m->added_rows_count, "existing-rows",
                         (json_int_t)m->existing_rows_count, "added-snapshot-id",
                         (json_int_t)m->added_snapshot_id, "sequence-number",
                         (json_int_t)m->sequence_number);
}

static const char *entry_status_name(int32_t status) {
        return status == MANIFEST_ENTRY_ADDED      ? "added"
               : status == MANIFEST_ENTRY_EXISTING ? "existing"
                                                   : "deleted";
}

/* Where row id j->row_id was assigned, step 1 (loop): the snapshot (metadata). Returns an answer
 * when the metadata alone answers, else NULL with j->lookup_snapshot set (or an error). */
static json_t *audit_lookup_snapshot(AuditJob *j) {
        const AuditTable *t = j->table;
        AuditGap gap;
        int r;

        r = audit_table_locate_snapshot(t, j->row_id, &j->lookup_snapshot, &gap);
        if (r == AUDIT_ROW_AT_OR_ABOVE_NEXT)
                return audit_unassigned(j, "at or above the table's next-row-id: never assigned",
                                        NULL);
        if (r == AUDIT_ROW_IN_GAP)
                return audit_unassigned(j, gap.explanation,
                                        json_pack("{s:{s:I, s:I, s:b}}", "gap", "first-row-id",
                                                  (json_int_t)gap.first, "last-row-id",
                                                  (json_int_t)(gap.end - 1), "explained",
                                                  gap.is_explained));
        return NULL;
}

/* Step 2 (thread pool, the snapshot's list read): the manifest whose range holds the id. Sets
 * j->lookup_manifest to read next, or answers. */
static json_t *audit_lookup_list(AuditJob *j) {
        const AuditTable *t = j->table;
        const AuditSnapshot *s = &t->snapshots[j->lookup_snapshot];
        ssize_t k;

        if (audit_take_list(j, j->lookup_snapshot, &j->lookup_item) < 0)
                return NULL;
        if (s->list_error || !s->is_list_read) {
                j->status = 502;
                j->error_type = "unreadable-table-file";
                (void)error_set(&j->error, -EIO,
                                "the manifest list of snapshot %" PRId64 " cannot be read: %s",
                                s->snapshot_id,
                                s->list_error ? s->list_error : "the snapshot names none");
                return NULL;
        }
        k = audit_snapshot_find_manifest(s, j->row_id);
        if (k < 0)
                return audit_unassigned(
                        j,
                        "reserved by the snapshot's range, but no data manifest of it holds the id",
                        json_pack("{s:o}", "snapshot", audit_snapshot_brief(s)));
        j->lookup_manifest_index = k;
        j->lookup_manifest = strdup(s->manifests[k].path);
        if (!j->lookup_manifest)
                (void)audit_work_fail(j, 503, "out-of-memory",
                                      error_set(&j->error, -ENOMEM, "out of memory"));
        return NULL;
}

/* A manifest's entries as read, owned by the local holding them. */
typedef struct AuditEntries {
        ManifestEntry *entries;
        size_t n_entries;
} AuditEntries;

static void audit_entries_deinit(AuditEntries *e) {
        e->entries = manifest_entries_free(e->entries, e->n_entries);
        e->n_entries = 0;
}

/* Step 3 (thread pool, the manifest read): the data file and position. */
static json_t *audit_lookup_entries(AuditJob *j) {
        const AuditTable *t = j->table;
        const AuditSnapshot *s = &t->snapshots[j->lookup_snapshot];
        const ManifestFile *m = &s->manifests[j->lookup_manifest_index];
        _cleanup_(audit_entries_deinit) AuditEntries e = { 0 };
        const ManifestEntry *x;
        size_t i = j->lookup_snapshot;
        ssize_t k;
        json_t *o;
        int r;

        r = j->lookup_item.status;
        if (r < 0)
                (void)error_set(&j->error, r, "%s", j->lookup_item.error.message);
        if (r >= 0)
                r = manifest_entries_read(buf_slice(&j->lookup_item.data),
                                          j->api->storage_config->max_manifest_entries, &e.entries,
                                          &e.n_entries, &j->error);
        if (r >= 0)
                r = manifest_entries_inherit(e.entries, e.n_entries, m, &j->error);
        if (r < 0) {
                (void)error_prefix(&j->error, r, "manifest '%s'", m->path);
                j->status = r == -ENOMEM ? 503 : storage_status_is_transient(r) ? 503 : 502;
                j->error_type = r == -ENOMEM       ? "out-of-memory"
                                : j->status == 503 ? "storage-unavailable"
                                                   : "unreadable-table-file";
                return NULL;
        }
        k = audit_entries_find_row(e.entries, e.n_entries, j->row_id);
        if (k < 0) {
                o = audit_unassigned(j,
                                     "reserved by the manifest's range, but no live data file of "
                                     "it holds the id",
                                     json_pack("{s:o, s:o}", "snapshot", audit_snapshot_brief(s),
                                               "manifest", audit_manifest_brief(m)));
                return o;
        }
        x = &e.entries[k];
        o = json_pack(
                "{s:I, s:b, s:o, s:o, s:{s:s, s:s, s:I, s:I, s:b, s:o, s:o, s:o}, s:I, s:o, s:o}",
                "row-id", (json_int_t)j->row_id, "assigned", 1, "snapshot", audit_snapshot_brief(s),
                "manifest", audit_manifest_brief(m), "data-file", "path", x->file_path, "status",
                entry_status_name(x->status), "record-count", (json_int_t)x->record_count,
                "first-row-id", (json_int_t)x->first_row_id, "first-row-id-inherited",
                x->is_first_row_id_inherited, "snapshot-id",
                x->has_snapshot_id ? json_integer(x->snapshot_id) : json_null(),
                "data-sequence-number",
                x->has_sequence_number ? json_integer(x->sequence_number) : json_null(),
                "file-sequence-number",
                x->has_file_sequence_number ? json_integer(x->file_sequence_number) : json_null(),
                "position", (json_int_t)(j->row_id - x->first_row_id),
                /* What a reader reports for a row whose column is null in the file (rows
                 * that kept a materialized value report that instead). */
                "last-updated-sequence-number",
                x->has_sequence_number ? json_integer(x->sequence_number) : json_null(), "refs",
                audit_table_refs_containing(t, i));
        return o;
}

/* Manifest lists read and parsed per round: bounds the bytes held at once. */
#define AUDIT_CHUNK_SNAPSHOTS 64

static void audit_set_answer(AuditJob *j, json_t *o) {
        if (o && json_object_update_new(o, audit_target_json(j)) < 0)
                o = (json_decref(o), NULL);
        if (o) {
                j->answer = o;
                j->status = 200;
        } else if (j->status == 0)
                (void)audit_work_fail(j, 503, "out-of-memory",
                                      error_set(&j->error, -ENOMEM, "out of memory"));
}

static void audit_work(uv_work_t *w) {
        AuditJob *j = w->data;
        json_t *o;

        if (!j->is_lookup) {
                audit_work_lineage(j);
                return;
        }
        if (!j->lookup_manifest) {
                o = audit_lookup_list(j);
                if (o || (j->status == 0 && !j->lookup_manifest))
                        audit_set_answer(j, o);
                return;
        }
        o = audit_lookup_entries(j);
        free(j->lookup_manifest);
        j->lookup_manifest = NULL;
        j->lookup_manifest_index = -1;
        audit_set_answer(j, o);
}

static void audit_after_work(uv_work_t *w, int status);

static void audit_queue_work(AuditJob *j) {
        int r;

        j->work.data = j;
        r = uv_queue_work(j->api->loop, &j->work, audit_work, audit_after_work);
        if (r == 0)
                return;
        audit_job_fail(j, 503, "internal", "cannot queue work: %s", uv_strerror(r));
        audit_job_free(j);
}

/* Moves what was read into the job, for the thread pool. */
static void audit_take_items(StorageReadItem *dst, StorageReadItem *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                dst[i] = items[i];
                buf_init(&items[i].data, 0);
        }
}

static void audit_on_chunk_read(StorageReadItem *items, size_t n_items, void *userdata) {
        AuditJob *j = userdata;

        audit_take_items(j->chunk_items, items, n_items);
        audit_queue_work(j);
}

static void audit_on_lookup_read(StorageReadItem *items, size_t n_items, void *userdata) {
        AuditJob *j = userdata;

        buf_deinit(&j->lookup_item.data);
        audit_take_items(&j->lookup_item, items, 1);
        audit_queue_work(j);
}

/* Reads one location (a lookup's list, then its manifest) into j->lookup_item. */
static void audit_read_one(AuditJob *j, const char *location) {
        StorageContext ctx = { .props = j->props };
        int r;

        r = storage_read_many(j->api->storage, &ctx, &location, 1,
                              j->api->storage_config->max_manifest_bytes, 1, audit_on_lookup_read,
                              j);
        if (r < 0) {
                audit_job_fail(j, 503, "storage-unavailable", "cannot read '%s': %s", location,
                               strerror(-r));
                audit_job_free(j);
        }
}

/* The next chunk of snapshots whose lists are to be read, or the report when none is left. */
static void audit_lineage_next_chunk(AuditJob *j) {
        StorageContext ctx = { .props = j->props };
        const char *locations[AUDIT_CHUNK_SNAPSHOTS];
        int r;

        for (size_t i = 0; i < j->n_chunk; i++)
                buf_deinit(&j->chunk_items[i].data);
        j->n_chunk = 0;
        while (j->next_snapshot < j->table->n_snapshots && j->n_chunk < AUDIT_CHUNK_SNAPSHOTS) {
                const AuditSnapshot *s = &j->table->snapshots[j->next_snapshot];

                if (s->manifest_list) {
                        locations[j->n_chunk] = s->manifest_list;
                        j->chunk[j->n_chunk++] = j->next_snapshot;
                }
                j->next_snapshot++;
        }
        r = storage_read_many(j->api->storage, &ctx, locations, j->n_chunk,
                              j->api->storage_config->max_manifest_bytes,
                              j->api->storage_config->s3.max_concurrent_requests,
                              audit_on_chunk_read, j);
        if (r < 0) {
                audit_job_fail(j, 503, "storage-unavailable", "cannot read the manifest lists: %s",
                               strerror(-r));
                audit_job_free(j);
        }
}

static void audit_after_work(uv_work_t *w, int status) {
        AuditJob *j = w->data;

        if (status < 0) {
                audit_job_fail(j, 503, "shutting-down", "the audit was cancelled");
        } else if (j->status != 0 && j->status != 200) {
                audit_job_fail(j, j->status, j->error_type, "%s", j->error.message);
        } else if (j->answer) {
                if (j->http)
                        http_reply_json(j->http, 200, TAKE_PTR(j->answer));
                j->http = NULL;
        } else if (!j->is_lookup) {
                audit_lineage_next_chunk(j);
                return;
        } else if (j->lookup_manifest) {
                audit_read_one(j, j->lookup_manifest);
                return;
        }
        audit_job_free(j);
}

static void audit_on_table_loaded(const CatalogResult *result, void *userdata) {
        _cleanup_(audit_job_freep) AuditJob *j = userdata;
        AuditLimits limits = {
                .max_snapshots = j->api->config->max_snapshots,
                .max_manifests = j->api->config->max_manifests,
                .max_findings = j->api->config->max_findings,
        };
        _cleanup_(table_metadata_freep) TableMetadata *metadata = NULL;
        const char *type;
        int r;

        if (result->status != 0) {
                r = catalog_outcome_http_status(result->status, &type);
                audit_job_fail(j, r, type, "%s%s",
                               r == 404 ? "" : "cannot load the table: ", result->message);
                return;
        }
        r = table_metadata_parse(result->body, &metadata, &j->error);
        if (r >= 0 &&
            (r = storage_roots_refuse_table(storage_roots(j->api->storage), metadata->location,
                                            json_object_get(metadata->metadata, "properties"),
                                            &type, &j->error)) > 0) {
                audit_job_fail(j, r, type, "%s", j->error.message);
                return;
        }
        if (r >= 0)
                r = audit_table_new(TAKE_PTR(metadata), &limits, &j->table, &j->error);
        if (r == -E2BIG) {
                audit_job_fail(j, 422, "table-too-large", "%s", j->error.message);
                return;
        }
        if (r == -ENOMEM) {
                audit_job_fail(j, 503, "out-of-memory", "out of memory");
                return;
        }
        if (r < 0) {
                audit_job_fail(j, 502, "catalog-bad-metadata", "%s", j->error.message);
                return;
        }
        if (j->is_lookup && j->table->table->format_version < 3) {
                audit_job_fail(j, 422, "no-row-lineage",
                               "the table is format-version %d: rows have no row ids",
                               j->table->table->format_version);
                return;
        }
        r = storage_props_new(result->properties, result->body, &j->props, &j->error);
        if (r < 0) {
                audit_job_fail(j, r == -ENOMEM ? 503 : 502, "catalog-bad-metadata", "%s",
                               j->error.message);
                return;
        }
        if (!j->is_lookup) {
                j->chunk = calloc(AUDIT_CHUNK_SNAPSHOTS, sizeof(*j->chunk));
                j->chunk_items = calloc(AUDIT_CHUNK_SNAPSHOTS, sizeof(*j->chunk_items));
                if (!j->chunk || !j->chunk_items) {
                        audit_job_fail(j, 503, "out-of-memory", "out of memory");
                        return;
                }
                audit_lineage_next_chunk(TAKE_PTR(j));
                return;
        }
        {
                json_t *o = audit_lookup_snapshot(j);
                const AuditSnapshot *s;

                if (o) {
                        audit_set_answer(j, o);
                        if (j->http && j->answer)
                                http_reply_json(j->http, 200, TAKE_PTR(j->answer));
                        else if (j->status != 200)
                                audit_job_fail(j, j->status, j->error_type, "%s", j->error.message);
                        j->http = NULL;
                        return;
                }
                s = &j->table->snapshots[j->lookup_snapshot];
                if (!s->manifest_list) {
                        audit_job_fail(j, 502, "unreadable-table-file",
                                       "the manifest list of snapshot %" PRId64
                                       " cannot be read: the snapshot names none",
                                       s->snapshot_id);
                        return;
                }
                j->lookup_manifest_index = -1;
                audit_read_one(TAKE_PTR(j), s->manifest_list);
                return;
        }
}

/* The one place the audit talks to the catalog. */
static int audit_load_table(AuditJob *j) {
        return catalog_load_table(j->api->catalog, (const char *const *)j->target.namespace,
                                  j->target.n_namespace, j->target.table, audit_on_table_loaded, j);
}

static void audit_start(AuditApi *api, HttpRequest *r, bool is_lookup) {
        const AuthToken *caller;
        char seconds[16];
        _cleanup_(audit_job_freep) AuditJob *j = NULL;
        Error error = { 0 };
        int rr;

        if (auth_check(api->auth, r, AUTH_RIGHT_READ, http_request_param(r, 0),
                       http_request_param(r, 1), &caller) < 0)
                return;
        if (api->n_running >= api->config->max_concurrent) {
                (void)snprintf(seconds, sizeof(seconds), "%u", 1u);
                http_reply_add_header(r, "Retry-After", seconds);
                http_reply_error(r, 503, "audit-busy",
                                 "%u audits are running (audit.max-concurrent); retry later",
                                 api->n_running);
                return;
        }
        j = calloc(1, sizeof(*j));
        if (!j) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        /* Counted from here, as audit_job_free() uncounts it; nothing in between looks at it. */
        api->n_running++;
        j->api = api;
        j->is_lookup = is_lookup;
        rr = request_target_parse(http_request_param(r, 0), http_request_param(r, 1), &j->target,
                                  &error);
        if (rr >= 0 && is_lookup) {
                rr = parse_i64(http_request_param(r, 2), &j->row_id);
                if (rr < 0 || j->row_id < 0)
                        rr = error_set(&error, -EINVAL,
                                       "row id '%s' is not a non-negative 64-bit integer",
                                       http_request_param(r, 2));
        }
        if (rr < 0) {
                if (rr == -ENOMEM)
                        http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                else
                        http_reply_error(r, 400, "bad-request", "%s", error.message);
                return; /* cleanup frees j, which has no request yet */
        }
        j->http = r;
        http_request_on_gone(r, audit_job_on_gone, j);
        rr = audit_load_table(j);
        if (rr < 0) {
                audit_job_fail(j, 503, "catalog-unavailable", "cannot load the table: %s",
                               strerror(-rr));
                return; /* cleanup frees j */
        }
        TAKE_PTR(j); /* the catalog calls back */
}

static void audit_handle_lineage(HttpRequest *r, void *userdata) {
        audit_start(userdata, r, /* is_lookup= */ false);
}

static void audit_handle_row_id(HttpRequest *r, void *userdata) {
        audit_start(userdata, r, /* is_lookup= */ true);
}

int audit_api_new(uv_loop_t *loop, HttpServer *server, Auth *auth, Catalog *catalog,
                  const AuditConfig *config, const StorageConfig *storage_config, Storage *storage,
                  AuditApi **ret_api) {
        _cleanup_(audit_api_freep) AuditApi *api = NULL;
        int r;

        api = calloc(1, sizeof(*api));
        if (!api)
                return -ENOMEM;
        *api = (AuditApi){ .loop = loop,
                           .auth = auth,
                           .catalog = catalog,
                           .config = config,
                           .storage_config = storage_config,
                           .storage = storage };
        r = http_server_route(server, "GET", "/v1/namespaces/{}/tables/{}/lineage",
                              audit_handle_lineage, api);
        if (r >= 0)
                r = http_server_route(server, "GET", "/v1/namespaces/{}/tables/{}/row-ids/{}",
                                      audit_handle_row_id, api);
        if (r < 0)
                return r;
        *ret_api = TAKE_PTR(api);
        return 0;
}

AuditApi *audit_api_free(AuditApi *api) {
        if (!api)
                return NULL;
        assert(api->n_running == 0);
        free(api);
        return NULL;
}
