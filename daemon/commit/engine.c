/* SPDX-License-Identifier: Apache-2.0 */
/* The commit engine (DESIGN section 1): intake of writer requests on the thread pool, one queue
 * per table and branch, the idempotency-key registry, and shutdown. The attempts of a batch
 * (load, rebuild the manifest list, commit, retry) are in batch.c. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/internal.h"
#include "iceberg/manifest.h"
#include "iceberg/snapshot.h"
#include "storage/storage.h"
#include "util/log.h"
#include "util/time-util.h"

json_t *engine_error_body(int status, const char *type, const char *message) {
        return json_pack("{s:{s:i, s:s, s:s}}", "error", "code", status, "type", type, "message", message);
}

/* Retry-After on a 503, so that writers (and proxies) back off the configured time. */
static void engine_add_retry_after(CommitEngine *e, WriterRequest *w) {
        char seconds[16];

        (void)snprintf(seconds, sizeof(seconds), "%u", e->config->retry_after_s);
        writer_request_add_header(w, "Retry-After", seconds);
}

void job_free(Job *j) {
        if (!j)
                return;
        for (size_t i = 0; i < j->n_manifests; i++)
                staged_manifest_free(j->manifests[i]);
        free(j->manifests);
        free(j->manifest_lengths);
        table_metadata_free(j->table);
        free(j->generated_location);
        free(j->generated_path);
        writer_request_free(j->writer);
        free(j);
}

/* Answers a job's writer, every waiter with the same key, and records the outcome. A retryable
 * outcome (5xx other than "unknown") drops the key so that a retry is a fresh request. */
void job_finish(Job *j, KeyState state, int status, json_t *body) {
        CommitEngine *e = j->engine;
        const char *outcome;

        if (status == 503)
                engine_add_retry_after(e, j->writer);
        writer_request_reply(j->writer, status, json_deep_copy(body));
        if (state == KEY_COMMITTED)
                metrics_observe(e->metrics, METRIC_COMMIT_DURATION,
                                (double)(now_monotonic_ns() - j->writer->accepted_ns) / 1e9);

        outcome = state == KEY_COMMITTED ? "committed" : state == KEY_UNKNOWN ? "unknown"
                  : status >= 500 ? "failed-retryable" : "rejected";
        metrics_add(e->metrics, METRIC_COMMIT_REQUESTS, outcome, 1);

        /* The manifest written for data-files is this job's alone: when the commit is known
         * not to have happened it goes; an attempt without a verdict may have committed it. */
        if (state == KEY_FAILED && !j->may_be_committed)
                engine_delete_file_async(e, TAKE_PTR(j->generated_path));
        key_registry_finish(e->keys, j->entry, state, status, body);
        j->entry = NULL;
        e->n_queued--;
        metrics_set(e->metrics, METRIC_QUEUE_REQUESTS, NULL, (double)e->n_queued);
        job_free(j);
}

void job_fail(Job *j, int status, const char *type, const char *fmt, ...) {
        char message[2048];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        job_finish(j, KEY_FAILED, status, engine_error_body(status, type, message));
}

/* --- queues ------------------------------------------------------------------------------ */

static void queue_on_timer_closed(uv_handle_t *h) {
        TableQueue *q = h->data;
        CommitEngine *e = q->engine;

        free(q->name);
        free(q);
        e->n_open_handles--;
        engine_maybe_stopped(e);
}

static TableQueue *queue_get(CommitEngine *e, const char *name) {
        TableQueue *q;

        for (q = e->queues; q; q = q->next)
                if (strcmp(q->name, name) == 0)
                        return q;
        q = calloc(1, sizeof(*q));
        if (!q)
                return NULL;
        q->name = strdup(name);
        if (!q->name || uv_timer_init(e->loop, &q->retry_timer) < 0) {
                free(q->name);
                free(q);
                return NULL;
        }
        q->retry_timer.data = q;
        q->engine = e;
        q->next = e->queues;
        e->queues = q;
        e->n_open_handles++;
        return q;
}

static void queue_push(TableQueue *q, Job *j) {
        j->next = NULL;
        if (q->tail)
                q->tail->next = j;
        else
                q->head = j;
        q->tail = j;
}

/* Deletes a manifest list whose attempt is known not to be committed, off the loop. */
typedef struct DeleteJob {
        uv_work_t work;
        CommitEngine *engine;
        char *path;
} DeleteJob;

static void delete_work(uv_work_t *w) {
        DeleteJob *d = w->data;

        (void)storage_delete_file(d->path);
}

static void delete_after(uv_work_t *w, int status) {
        DeleteJob *d = w->data;
        CommitEngine *e = d->engine;

        free(d->path);
        free(d);
        e->n_in_flight--;
        engine_maybe_stopped(e);
}

void engine_delete_file_async(CommitEngine *e, char *path /* stolen */) {
        DeleteJob *d;

        if (!path)
                return;
        d = calloc(1, sizeof(*d));
        if (!d) {
                free(path);
                return;
        }
        *d = (DeleteJob){ .engine = e, .path = path };
        d->work.data = d;
        if (uv_queue_work(e->loop, &d->work, delete_work, delete_after) < 0) {
                free(path);
                free(d);
                return;
        }
        e->n_in_flight++;
}

/* --- intake -------------------------------------------------------------------------------- */

static void job_intake_work(uv_work_t *w) {
        Job *j = w->data;
        const CommitRequest *r = j->writer->request;
        const StorageConfig *storage = j->engine->storage;
        ManifestLimits limits = { .max_entries = storage->max_manifest_entries };
        _cleanup_(buf_deinitp) Buf bytes;

        buf_init(&bytes, storage->max_manifest_bytes);
        for (size_t i = 0; i < r->n_manifests; i++) {
                _cleanup_(freep) char *path = NULL;
                int rr;

                rr = storage_path_from_location(r->manifests[i], &path, &j->error);
                if (rr == 0)
                        rr = storage_read_file(path, storage->max_manifest_bytes, &bytes, &j->error);
                if (rr == 0)
                        rr = staged_manifest_parse(buf_slice(&bytes), r->manifests[i], &limits,
                                                   &j->manifests[i], &j->error);
                if (rr < 0) {
                        (void)error_prefix(&j->error, rr, "staged-manifests[%zu] '%s'", i, r->manifests[i]);
                        j->intake_status = rr == -ENOMEM ? 503 : rr == -EFBIG ? 413 : 422;
                        return;
                }
                j->manifest_lengths[i] = (int64_t)bytes.len;
                j->n_manifests = i + 1;
        }
        if (r->n_data_files > 0)
                (void)job_intake_data_files(j, storage->max_manifest_bytes);
}

static void job_intake_after(uv_work_t *w, int status) {
        Job *j = w->data;
        CommitEngine *e = j->engine;
        TableQueue *q;

        e->n_in_flight--;
        if (status < 0 || j->intake_status) {
                job_fail(j, status < 0 ? 503 : j->intake_status,
                         status < 0 ? "shutting-down" : j->intake_type ? j->intake_type : "invalid-manifest", "%s",
                         status < 0 ? "the request was cancelled" : j->error.message);
                engine_maybe_stopped(e);
                return;
        }
        if (e->is_stopping) {
                job_fail(j, 503, "shutting-down", "icecommitd is stopping; retry with the same key");
                engine_maybe_stopped(e);
                return;
        }
        q = queue_get(e, j->writer->request->queue_name);
        if (!q) {
                job_fail(j, 503, "out-of-memory", "out of memory");
                return;
        }
        queue_push(q, j);
        batch_queue_kick(q);
}

static void job_intake_queue(Job *j) {
        CommitEngine *e = j->engine;
        int r;

        r = uv_queue_work(e->loop, &j->work, job_intake_work, job_intake_after);
        if (r < 0) {
                job_fail(j, 503, "internal", "cannot queue work: %s", uv_strerror(r));
                return;
        }
        e->n_in_flight++;
}

static void job_on_intake_loaded(const CatalogResult *result, void *userdata) {
        Job *j = userdata;
        CommitEngine *e = j->engine;
        int r;

        e->n_in_flight--;
        if (result->status == CATALOG_E_NOT_FOUND)
                job_fail(j, 404, "no-such-table", "%s", result->message);
        else if (result->status != 0)
                job_fail(j, 503, "catalog-unavailable", "cannot load the table to check data-files: %s",
                         result->message);
        else if ((r = table_metadata_parse(result->body, &j->table, &j->error)) < 0)
                job_fail(j, r == -ENOMEM ? 503 : 502, "catalog-bad-metadata", "%s", j->error.message);
        else if (e->is_stopping)
                job_fail(j, 503, "shutting-down", "icecommitd is stopping; retry with the same key");
        else
                job_intake_queue(j);
        engine_maybe_stopped(e);
}

static void engine_submit(WriterRequest *w, void *userdata) {
        CommitEngine *e = userdata;
        const CommitRequest *r = w->request;
        KeyEntry *entry = key_registry_get(e->keys, r->idempotency_key);
        Job *j;
        int rr;

        if (entry && strcmp(entry->fingerprint, r->fingerprint) != 0) {
                writer_request_reply_error(w, 409, "idempotency-key-reused",
                                           "idempotency key '%s' was already used with a different request body",
                                           r->idempotency_key);
                writer_request_free(w);
                return;
        }
        if (entry && entry->state == KEY_PENDING) {
                if (key_registry_wait(entry, w) < 0) {
                        writer_request_reply_error(w, 503, "out-of-memory", "out of memory");
                        writer_request_free(w);
                }
                return;
        }
        if (entry && (entry->state == KEY_COMMITTED || entry->state == KEY_FAILED)) {
                /* A finished request is answered again, the same way (4xx failures only: a
                 * retryable failure was removed from the registry). */
                writer_request_reply(w, entry->status, json_deep_copy(entry->body));
                writer_request_free(w);
                return;
        }
        if (entry)      /* KEY_UNKNOWN: resolve by trying again; the history check finds a landed one */
                key_registry_remove(e->keys, entry);

        if (e->is_stopping) {
                engine_add_retry_after(e, w);
                writer_request_reply_error(w, 503, "shutting-down", "icecommitd is stopping; retry with the same key");
                writer_request_free(w);
                return;
        }
        if (e->n_queued >= e->config->max_queue_requests) {
                engine_add_retry_after(e, w);
                writer_request_reply_error(w, 503, "queue-full",
                                           "%zu requests are waiting (commit.max-queue-requests); retry later",
                                           e->n_queued);
                metrics_add(e->metrics, METRIC_COMMIT_REQUESTS, "queue-full", 1);
                writer_request_free(w);
                return;
        }

        j = calloc(1, sizeof(*j));
        if (j) {
                /* One more slot for the manifest of the request's data-files. */
                j->manifests = calloc(r->n_manifests + 1, sizeof(*j->manifests));
                j->manifest_lengths = calloc(r->n_manifests + 1, sizeof(*j->manifest_lengths));
        }
        if (!j || !j->manifests || !j->manifest_lengths ||
            key_registry_add(e->keys, r->idempotency_key, r->fingerprint, &entry) < 0) {
                if (j) {
                        free(j->manifests);
                        free(j->manifest_lengths);
                }
                free(j);
                writer_request_reply_error(w, 503, "out-of-memory", "out of memory");
                writer_request_free(w);
                return;
        }
        j->engine = e;
        j->writer = w;
        j->entry = entry;
        j->work.data = j;
        e->n_queued++;
        metrics_set(e->metrics, METRIC_QUEUE_REQUESTS, NULL, (double)e->n_queued);
        if (r->n_data_files > 0) {
                /* Described files are checked against the table's schema and specs. */
                rr = catalog_load_table(e->catalog, (const char *const *)r->target.namespace, r->target.n_namespace,
                                        r->target.table, job_on_intake_loaded, j);
                if (rr < 0) {
                        job_fail(j, 503, "catalog-unavailable", "cannot load the table: %s", strerror(-rr));
                        return;
                }
                e->n_in_flight++;
                return;
        }
        job_intake_queue(j);
}

static json_t *engine_lookup(const char *key, int *ret_status, void *userdata) {
        CommitEngine *e = userdata;
        KeyEntry *entry = key_registry_get(e->keys, key);

        if (!entry) {
                *ret_status = 404;
                return engine_error_body(404, "unknown-key",
                                         "this daemon has no record of the key (never seen, or evicted); add "
                                         "?namespace=NS&table=T to search that table's history");
        }
        *ret_status = 200;
        return key_entry_status_json(entry);
}

/* One GET /v1/commits/{key}?namespace=&table= waiting for its table. */
typedef struct HistoryLookup {
        CommitEngine *engine;
        WriterRequest *writer;
        char *key;
        char *table;
} HistoryLookup;

static void history_lookup_free(HistoryLookup *l) {
        writer_request_free(l->writer);
        free(l->key);
        free(l->table);
        free(l);
}

static void engine_on_history_loaded(const CatalogResult *result, void *userdata) {
        HistoryLookup *l = userdata;
        CommitEngine *e = l->engine;
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        Error error = {};
        json_t *s;

        e->n_in_flight--;
        if (result->status == CATALOG_E_NOT_FOUND)
                writer_request_reply_error(l->writer, 404, "no-such-table", "%s", result->message);
        else if (result->status != 0)
                writer_request_reply_error(l->writer, 503, "catalog-unavailable",
                                           "cannot load the table to search its history: %s", result->message);
        else if (table_metadata_parse(result->body, &t, &error) < 0)
                writer_request_reply_error(l->writer, 502, "catalog-bad-metadata", "%s", error.message);
        else if ((s = snapshot_find_key(t->metadata, l->key, e->config->history_lookback))) {
                int64_t id = 0, seq = 0;

                (void)json_get_i64(s, "snapshot-id", &id);
                (void)json_get_i64(s, "sequence-number", &seq);
                writer_request_reply(l->writer, 200,
                                     json_pack("{s:s, s:s, s:{s:s, s:s, s:I, s:I, s:b}}", "idempotency-key", l->key,
                                               "status", "committed", "receipt", "idempotency-key", l->key,
                                               "table", l->table, "snapshot-id", (json_int_t)id,
                                               "sequence-number", (json_int_t)seq, "found-in-history", 1));
        } else
                writer_request_reply_error(l->writer, 404, "unknown-key",
                                           "key '%s' is not in this daemon's memory nor in the newest %u snapshots "
                                           "of the table (0 = all)",
                                           l->key, e->config->history_lookback);
        history_lookup_free(l);
        engine_maybe_stopped(e);
}

static void engine_lookup_history(WriterRequest *w, const char *key, const char *namespace_param,
                                  const char *table, void *userdata) {
        CommitEngine *e = userdata;
        CommitTarget target = {};
        HistoryLookup *l;
        Error error = {};
        int r;

        r = commit_target_parse(namespace_param, table, &target, &error);
        if (r < 0) {
                writer_request_reply_error(w, r == -ENOMEM ? 503 : 400, r == -ENOMEM ? "out-of-memory" : "bad-request",
                                           "%s", error.message);
                writer_request_free(w);
                return;
        }
        l = calloc(1, sizeof(*l));
        if (!l || !(l->key = strdup(key)) || !(l->table = strdup(table))) {
                if (l) {
                        free(l->key);
                        free(l);
                }
                commit_target_deinit(&target);
                writer_request_reply_error(w, 503, "out-of-memory", "out of memory");
                writer_request_free(w);
                return;
        }
        l->engine = e;
        l->writer = w;
        r = catalog_load_table(e->catalog, (const char *const *)target.namespace, target.n_namespace, target.table,
                               engine_on_history_loaded, l);
        commit_target_deinit(&target);
        if (r < 0) {
                writer_request_reply_error(w, 503, "catalog-unavailable", "cannot load the table: %s", strerror(-r));
                history_lookup_free(l);
                return;
        }
        e->n_in_flight++;
}

static bool engine_is_ready(void *userdata) {
        CommitEngine *e = userdata;

        return !e->is_stopping && catalog_is_ready(e->catalog);
}

static int engine_metrics(Buf *out, void *userdata) {
        CommitEngine *e = userdata;

        metrics_set(e->metrics, METRIC_CATALOG_READY, NULL, catalog_is_ready(e->catalog) ? 1 : 0);
        return metrics_expose(e->metrics, out);
}

static const WriterHooks engine_hooks = {
        .submit = engine_submit,
        .lookup = engine_lookup,
        .lookup_history = engine_lookup_history,
        .is_ready = engine_is_ready,
        .metrics = engine_metrics,
};

const WriterHooks *commit_engine_hooks(void) {
        return &engine_hooks;
}

int commit_engine_new(uv_loop_t *loop, const CommitConfig *config, const StorageConfig *storage,
                      Catalog *catalog, Metrics *metrics, CommitEngine **ret) {
        CommitEngine *e = calloc(1, sizeof(*e));
        int r;

        if (!e)
                return -ENOMEM;
        e->loop = loop;
        e->config = config;
        e->storage = storage;
        e->catalog = catalog;
        e->metrics = metrics;
        r = key_registry_new(config->receipt_cache_size, &e->keys);
        if (r < 0) {
                free(e);
                return r;
        }
        *ret = e;
        return 0;
}

void engine_maybe_stopped(CommitEngine *e) {
        void (*done)(void *);

        if (!e->is_stopping || !e->stop_done || e->n_in_flight > 0)
                return;
        for (TableQueue *q = e->queues; q; q = q->next)
                if (q->batch)
                        return;
        /* Nothing runs any more: close the queues' timers; each close frees its queue. */
        if (!e->is_closing_handles) {
                TableQueue *q = e->queues;

                e->is_closing_handles = true;
                e->queues = NULL;
                while (q) {
                        TableQueue *next = q->next;

                        uv_close((uv_handle_t *)&q->retry_timer, queue_on_timer_closed);
                        q = next;
                }
        }
        if (e->n_open_handles > 0)
                return;
        done = e->stop_done;
        e->stop_done = NULL;
        done(e->stop_userdata);
}

void commit_engine_stop(CommitEngine *e, void (*done)(void *userdata), void *userdata) {
        e->is_stopping = true;
        e->stop_done = done;
        e->stop_userdata = userdata;
        for (TableQueue *q = e->queues; q; q = q->next) {
                while (q->head) {
                        Job *j = q->head;

                        q->head = j->next;
                        job_fail(j, 503, "shutting-down", "icecommitd is stopping; retry with the same key");
                }
                q->tail = NULL;
                /* A batch waiting for its retry timer ends now; one talking to the catalog ends
                 * with its answer (batch_retry_later refuses to go on while stopping). */
                if (q->batch && uv_is_active((uv_handle_t *)&q->retry_timer)) {
                        uv_timer_stop(&q->retry_timer);
                        batch_fail(q->batch, KEY_FAILED, 503, "shutting-down",
                                   "icecommitd is stopping; nothing was committed, retry with the same key");
                }
        }
        engine_maybe_stopped(e);
}

CommitEngine *commit_engine_free(CommitEngine *e) {
        if (!e)
                return NULL;
        key_registry_free(e->keys);
        free(e);
        return NULL;
}

