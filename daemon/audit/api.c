/* SPDX-License-Identifier: Apache-2.0 */
/* Lineage audit routes (api.h): request -> catalog load (loop) -> file reads and checks (thread
 * pool) -> answer (loop). One AuditJob per request owns everything of it; the client going
 * away only detaches the HTTP request, the job runs to its end and frees itself. */
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
#include "iceberg/manifest_entries.h"
#include "storage/local.h"
#include "storage/storage.h"
#include "util/log.h"
#include "util/parse.h"
#include "writer/request.h"

struct AuditApi {
        uv_loop_t *loop;
        Catalog *catalog;
        const AuditConfig *config;
        const StorageConfig *storage;
        unsigned n_running;             /* jobs between their request and their answer */
};

typedef struct AuditJob {
        AuditApi *api;
        HttpRequest *http;              /* NULL once answered or once the client went away */
        CommitTarget target;
        bool is_lookup;
        int64_t row_id;
        AuditTable *table;
        /* The outcome of the thread-pool work: an answer, or an error status, type and reason. */
        json_t *answer;
        int status;
        const char *error_type;
        Error error;
        uv_work_t work;
} AuditJob;

static void audit_job_free(AuditJob *j) {
        AuditApi *api = j->api;

        api->n_running--;
        if (j->http)            /* never left unanswered, whatever ended the job */
                http_reply_error(j->http, 500, "internal", "the audit ended without an answer");
        commit_target_deinit(&j->target);
        audit_table_free(j->table);
        json_decref(j->answer);
        free(j);
}

static void audit_job_on_gone(HttpRequest *r, void *userdata) {
        AuditJob *j = userdata;

        j->http = NULL;
}

static _printf_(4, 5) void audit_job_fail(AuditJob *j, int status, const char *type, const char *fmt, ...) {
        char message[2048];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        log_debug("audit of table '%s' failed status=%d type=%s: %s", j->target.table, status, type, message);
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

/* Reads a table file named by an Iceberg location into *out (bounded by max_bytes). */
static int audit_read_location(const char *location, uint64_t max_bytes, Buf *out, Error *e) {
        _cleanup_(freep) char *path = NULL;
        int r;

        out->len = 0;
        r = storage_path_from_location(location, &path, e);
        if (r < 0)
                return r;
        return storage_local_read_file(path, max_bytes, out, e);
}

/* Reads the manifest list of snapshot i; an unreadable one is recorded in the audit. */
static int audit_read_list(AuditJob *j, size_t i, Buf *bytes) {
        AuditSnapshot *s = &j->table->snapshots[i];
        Error reason;
        int r;

        if (!s->manifest_list)
                return 0;
        r = audit_read_location(s->manifest_list, j->api->storage->max_manifest_bytes, bytes, &reason);
        if (r == -ENOMEM)
                return audit_work_fail(j, 503, "out-of-memory", error_set(&j->error, r, "out of memory"));
        if (r < 0)
                return audit_snapshot_set_list_error(j->table, i, reason.message) < 0
                               ? audit_work_fail(j, 503, "out-of-memory", error_set(&j->error, -ENOMEM, "out of memory"))
                               : 0;
        r = audit_snapshot_set_list(j->table, i, buf_slice(bytes), &j->error);
        if (r == -E2BIG)
                return audit_work_fail(j, 422, "table-too-large", r);
        if (r < 0)
                return audit_work_fail(j, 503, "out-of-memory", r);
        return 0;
}

static json_t *audit_target_json(const AuditJob *j) {
        return json_pack("{s:o, s:s}", "namespace", commit_target_namespace_json(&j->target), "table",
                         j->target.table);
}

static void audit_work_lineage(AuditJob *j) {
        _cleanup_(buf_deinitp) Buf bytes;
        json_t *report;

        buf_init(&bytes, j->api->storage->max_manifest_bytes);
        for (size_t i = 0; i < j->table->n_snapshots; i++)
                if (audit_read_list(j, i, &bytes) < 0)
                        return;
        report = audit_table_report(j->table);
        if (!report || json_object_update_new(report, audit_target_json(j)) < 0) {
                json_decref(report);
                (void)audit_work_fail(j, 503, "out-of-memory", error_set(&j->error, -ENOMEM, "out of memory"));
                return;
        }
        j->answer = report;
        j->status = 200;
}

static json_t *audit_unassigned(const AuditJob *j, const char *reason, json_t *details /* stolen, may be NULL */) {
        json_t *o = json_pack("{s:I, s:b, s:s, s:I}", "row-id", (json_int_t)j->row_id, "assigned", 0, "reason",
                              reason, "next-row-id", (json_int_t)j->table->table->next_row_id);

        if (o && details && json_object_update(o, details) < 0)
                o = (json_decref(o), NULL);
        json_decref(details);
        return o;
}

static json_t *audit_snapshot_brief(const AuditSnapshot *s) {
        return json_pack("{s:I, s:I, s:I, s:I, s:I, s:s?}", "snapshot-id", (json_int_t)s->snapshot_id,
                         "sequence-number", (json_int_t)s->sequence_number, "timestamp-ms",
                         (json_int_t)s->timestamp_ms, "first-row-id", (json_int_t)s->first_row_id, "last-row-id",
                         (json_int_t)(s->first_row_id + s->added_rows - 1), "manifest-list", s->manifest_list);
}

static json_t *audit_manifest_brief(const ManifestFile *m) {
        return json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "path", m->path, "first-row-id",
                         (json_int_t)m->first_row_id, "last-row-id",
                         (json_int_t)(m->first_row_id + m->added_rows_count + m->existing_rows_count - 1),
                         "added-rows", (json_int_t)m->added_rows_count, "existing-rows",
                         (json_int_t)m->existing_rows_count, "added-snapshot-id", (json_int_t)m->added_snapshot_id,
                         "sequence-number", (json_int_t)m->sequence_number);
}

static const char *entry_status_name(int32_t status) {
        return status == MANIFEST_ENTRY_ADDED ? "added" : status == MANIFEST_ENTRY_EXISTING ? "existing" : "deleted";
}

/* Where row id j->row_id was assigned: snapshot (metadata), manifest (its list), data file
 * and position (the manifest, with the reader's inheritance applied). */
static json_t *audit_lookup(AuditJob *j) {
        const AuditTable *t = j->table;
        _cleanup_(buf_deinitp) Buf bytes;
        ManifestEntry *entries = NULL;
        const AuditSnapshot *s;
        const ManifestFile *m;
        const ManifestEntry *x;
        size_t i, n_entries = 0;
        AuditGap gap;
        ssize_t k;
        json_t *o;
        int r;

        buf_init(&bytes, j->api->storage->max_manifest_bytes);
        r = audit_table_locate_snapshot(t, j->row_id, &i, &gap);
        if (r == AUDIT_ROW_AT_OR_ABOVE_NEXT)
                return audit_unassigned(j, "at or above the table's next-row-id: never assigned", NULL);
        if (r == AUDIT_ROW_IN_GAP)
                return audit_unassigned(
                        j, gap.explanation,
                        json_pack("{s:{s:I, s:I, s:b}}", "gap", "first-row-id", (json_int_t)gap.first, "last-row-id",
                                  (json_int_t)(gap.end - 1), "explained", gap.is_explained));
        if (r < 0)
                return NULL;

        s = &t->snapshots[i];
        if (audit_read_list(j, i, &bytes) < 0)
                return NULL;
        if (s->list_error || !s->is_list_read) {
                j->status = 502;
                j->error_type = "unreadable-table-file";
                (void)error_set(&j->error, -EIO, "the manifest list of snapshot %" PRId64 " cannot be read: %s",
                                s->snapshot_id, s->list_error ? s->list_error : "the snapshot names none");
                return NULL;
        }
        k = audit_snapshot_find_manifest(s, j->row_id);
        if (k < 0)
                return audit_unassigned(j, "reserved by the snapshot's range, but no data manifest of it holds the id",
                                        json_pack("{s:o}", "snapshot", audit_snapshot_brief(s)));
        m = &s->manifests[k];

        r = audit_read_location(m->path, j->api->storage->max_manifest_bytes, &bytes, &j->error);
        if (r >= 0)
                r = manifest_entries_read(buf_slice(&bytes), j->api->storage->max_manifest_entries, &entries,
                                          &n_entries, &j->error);
        if (r >= 0)
                r = manifest_entries_inherit(entries, n_entries, m, &j->error);
        if (r < 0) {
                manifest_entries_free(entries, n_entries);
                (void)error_prefix(&j->error, r, "manifest '%s'", m->path);
                j->status = r == -ENOMEM ? 503 : 502;
                j->error_type = r == -ENOMEM ? "out-of-memory" : "unreadable-table-file";
                return NULL;
        }
        k = audit_entries_find_row(entries, n_entries, j->row_id);
        if (k < 0) {
                o = audit_unassigned(j, "reserved by the manifest's range, but no live data file of it holds the id",
                                     json_pack("{s:o, s:o}", "snapshot", audit_snapshot_brief(s), "manifest",
                                               audit_manifest_brief(m)));
                manifest_entries_free(entries, n_entries);
                return o;
        }
        x = &entries[k];
        o = json_pack("{s:I, s:b, s:o, s:o, s:{s:s, s:s, s:I, s:I, s:b, s:o, s:o, s:o}, s:I, s:o, s:o}",
                      "row-id", (json_int_t)j->row_id, "assigned", 1,
                      "snapshot", audit_snapshot_brief(s),
                      "manifest", audit_manifest_brief(m),
                      "data-file",
                      "path", x->file_path, "status", entry_status_name(x->status),
                      "record-count", (json_int_t)x->record_count, "first-row-id", (json_int_t)x->first_row_id,
                      "first-row-id-inherited", x->is_first_row_id_inherited,
                      "snapshot-id", x->has_snapshot_id ? json_integer(x->snapshot_id) : json_null(),
                      "data-sequence-number",
                      x->has_sequence_number ? json_integer(x->sequence_number) : json_null(),
                      "file-sequence-number",
                      x->has_file_sequence_number ? json_integer(x->file_sequence_number) : json_null(),
                      "position", (json_int_t)(j->row_id - x->first_row_id),
                      /* What a reader reports for a row whose column is null in the file (rows
                       * that kept a materialized value report that instead). */
                      "last-updated-sequence-number",
                      x->has_sequence_number ? json_integer(x->sequence_number) : json_null(),
                      "refs", audit_table_refs_containing(t, i));
        manifest_entries_free(entries, n_entries);
        return o;
}

static void audit_work(uv_work_t *w) {
        AuditJob *j = w->data;

        if (!j->is_lookup) {
                audit_work_lineage(j);
                return;
        }
        j->answer = audit_lookup(j);
        if (j->answer) {
                if (json_object_update_new(j->answer, audit_target_json(j)) < 0)
                        j->answer = (json_decref(j->answer), NULL);
                else
                        j->status = 200;
        }
        if (!j->answer && j->status == 0)
                (void)audit_work_fail(j, 503, "out-of-memory", error_set(&j->error, -ENOMEM, "out of memory"));
}

static void audit_after_work(uv_work_t *w, int status) {
        AuditJob *j = w->data;

        if (status < 0)
                audit_job_fail(j, 503, "shutting-down", "the audit was cancelled");
        else if (j->status != 200)
                audit_job_fail(j, j->status, j->error_type, "%s", j->error.message);
        else if (j->http) {
                http_reply_json(j->http, 200, TAKE_PTR(j->answer));
                j->http = NULL;
        }
        audit_job_free(j);
}

static void audit_on_table_loaded(const CatalogResult *result, void *userdata) {
        AuditJob *j = userdata;
        AuditLimits limits = {
                .max_snapshots = j->api->config->max_snapshots,
                .max_manifests = j->api->config->max_manifests,
                .max_findings = j->api->config->max_findings,
        };
        TableMetadata *metadata = NULL;
        int r;

        if (result->status == CATALOG_E_NOT_FOUND) {
                audit_job_fail(j, 404, "no-such-table", "%s", result->message);
                goto done;
        }
        if (result->status != 0) {
                audit_job_fail(j, 503, "catalog-unavailable", "cannot load the table: %s", result->message);
                goto done;
        }
        r = table_metadata_parse(result->body, &metadata, &j->error);
        if (r >= 0)
                r = audit_table_new(TAKE_PTR(metadata), &limits, &j->table, &j->error);
        if (r == -E2BIG) {
                audit_job_fail(j, 422, "table-too-large", "%s", j->error.message);
                goto done;
        }
        if (r == -ENOMEM) {
                table_metadata_free(metadata);
                audit_job_fail(j, 503, "out-of-memory", "out of memory");
                goto done;
        }
        if (r < 0) {
                table_metadata_free(metadata);
                audit_job_fail(j, 502, "catalog-bad-metadata", "%s", j->error.message);
                goto done;
        }
        if (j->is_lookup && j->table->table->format_version < 3) {
                audit_job_fail(j, 422, "no-row-lineage", "the table is format-version %d: rows have no row ids",
                               j->table->table->format_version);
                goto done;
        }
        j->work.data = j;
        r = uv_queue_work(j->api->loop, &j->work, audit_work, audit_after_work);
        if (r == 0)
                return;
        audit_job_fail(j, 503, "internal", "cannot queue work: %s", uv_strerror(r));
done:
        audit_job_free(j);
}

/* The one place the audit talks to the catalog. */
static int audit_load_table(AuditJob *j) {
        return catalog_load_table(j->api->catalog, (const char *const *)j->target.namespace, j->target.n_namespace,
                                  j->target.table, audit_on_table_loaded, j);
}

static void audit_start(AuditApi *api, HttpRequest *r, bool is_lookup) {
        char seconds[16];
        AuditJob *j;
        Error error = {};
        int rr;

        if (api->n_running >= api->config->max_concurrent) {
                (void)snprintf(seconds, sizeof(seconds), "%u", 1u);
                http_reply_add_header(r, "Retry-After", seconds);
                http_reply_error(r, 503, "audit-busy",
                                 "%u audits are running (audit.max-concurrent); retry later", api->n_running);
                return;
        }
        j = calloc(1, sizeof(*j));
        if (!j) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        j->api = api;
        j->is_lookup = is_lookup;
        rr = commit_target_parse(http_request_param(r, 0), http_request_param(r, 1), &j->target, &error);
        if (rr >= 0 && is_lookup) {
                rr = parse_i64(http_request_param(r, 2), &j->row_id);
                if (rr < 0 || j->row_id < 0)
                        rr = error_set(&error, -EINVAL, "row id '%s' is not a non-negative 64-bit integer",
                                       http_request_param(r, 2));
        }
        if (rr < 0) {
                commit_target_deinit(&j->target);
                free(j);
                if (rr == -ENOMEM)
                        http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                else
                        http_reply_error(r, 400, "bad-request", "%s", error.message);
                return;
        }
        api->n_running++;
        j->http = r;
        http_request_on_gone(r, audit_job_on_gone, j);
        rr = audit_load_table(j);
        if (rr < 0) {
                audit_job_fail(j, 503, "catalog-unavailable", "cannot load the table: %s", strerror(-rr));
                audit_job_free(j);
        }
}

static void audit_handle_lineage(HttpRequest *r, void *userdata) {
        audit_start(userdata, r, /* is_lookup= */ false);
}

static void audit_handle_row_id(HttpRequest *r, void *userdata) {
        audit_start(userdata, r, /* is_lookup= */ true);
}

int audit_api_new(uv_loop_t *loop, HttpServer *server, Catalog *catalog,
                  const AuditConfig *config, const StorageConfig *storage, AuditApi **ret_api) {
        _cleanup_(audit_api_freep) AuditApi *api = NULL;
        int r;

        api = calloc(1, sizeof(*api));
        if (!api)
                return -ENOMEM;
        *api = (AuditApi){ .loop = loop, .catalog = catalog, .config = config, .storage = storage };
        r = http_server_route(server, "GET", "/v1/namespaces/{}/tables/{}/lineage", audit_handle_lineage, api);
        if (r >= 0)
                r = http_server_route(server, "GET", "/v1/namespaces/{}/tables/{}/row-ids/{}", audit_handle_row_id,
                                      api);
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
