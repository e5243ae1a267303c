/* SPDX-License-Identifier: Apache-2.0 */
/* The commit engine (docs/design.md section 2): intake of writer requests on the thread pool, one
 * queue per table and branch, the idempotency-key registry, and shutdown. The attempts of a batch
 * (load, rebuild the manifest list, commit, retry) are in batch.c. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "auth/tokens.h"
#include "commit/duplicates.h"
#include "commit/internal.h"
#include "iceberg/manifest.h"
#include "iceberg/snapshot.h"
#include "parquet/footer.h"
#include "storage/roots.h"
#include "storage/storage.h"
#include "util/log.h"
#include "util/queue.h"
#include "util/time-util.h"

/* Retry-After on a 503, so that writers (and proxies) back off the configured time. */
static void engine_add_retry_after(CommitEngine *e, WriterRequest *w) {
        char seconds[16];

        (void)snprintf(seconds, sizeof(seconds), "%u", e->config->retry_after_s);
        writer_request_add_header(w, "Retry-After", seconds);
}

/* A table's metadata tree of a long history is megabytes of small allocations: freeing it is
 * tens of milliseconds, which the loop must not spend (docs/design.md section 12). jansson's
 * reference counts are atomic (JSON_HAVE_ATOMIC_BUILTINS), so the last reference may go on a
 * thread of the pool. */
typedef struct JsonRelease {
        uv_work_t work;
        CommitEngine *engine;
        json_t *json;
} JsonRelease;

static void engine_release_work(uv_work_t *w) {
        JsonRelease *r = w->data;

        json_decref(TAKE_PTR(r->json));
}

static void engine_release_after(uv_work_t *w, int status) {
        JsonRelease *r = w->data;
        CommitEngine *e = r->engine;

        (void)status;
        json_decref(r->json); /* cancelled (stopping): here after all */
        free(r);
        e->n_in_flight--;
        engine_maybe_stopped(e);
}

void engine_release_json(CommitEngine *e, json_t *json) {
        JsonRelease *r;

        if (!json)
                return;
        /* Not the last reference, or no room to hand it over: an ordinary decrement. */
        if (json->refcount > 1 || !(r = calloc(1, sizeof(*r)))) {
                json_decref(json);
                return;
        }
        *r = (JsonRelease){ .engine = e, .json = json };
        r->work.data = r;
        if (uv_queue_work(e->loop, &r->work, engine_release_work, engine_release_after) < 0) {
                free(r);
                json_decref(json);
                return;
        }
        e->n_in_flight++;
}

void engine_release_table(CommitEngine *e, TableMetadata *t) {
        json_t *metadata;

        if (!t)
                return;
        metadata = TAKE_PTR(t->metadata);
        table_metadata_free(t);
        engine_release_json(e, metadata);
}

Job *engine_job_free(Job *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_manifests; i++)
                manifest_staged_free(j->manifests[i]);
        free(j->manifests);
        free(j->manifest_lengths);
        engine_release_table(j->engine, j->table);
        storage_props_free(j->props);
        if (j->manifest_bytes)
                for (size_t i = 0; i < j->writer->request->n_manifests; i++)
                        buf_deinit(&j->manifest_bytes[i]);
        free(j->manifest_bytes);
        free(j->file_sizes);
        free(j->file_reads);
        probe_list_free(j);
        free(j->io);
        owned_free(j);
        writer_request_free(j->writer);
        /* The end of the request: whatever it still held at intake (its parsed manifests,
         * bytes of a refusal half-way) goes back, on every path that ends it. */
        budget_release_all(&j->intake);
        free(j);
        return NULL;
}

/* icecommit_queue_requests: the requests accepted and not answered, repeats of a pending key
 * included (they count against commit.max-queue-requests alike). */
static size_t engine_n_waiting(const CommitEngine *e) {
        return e->n_queued + registry_n_waiters(e->keys);
}

static void engine_publish_queue(CommitEngine *e) {
        metrics_set(e->metrics, METRIC_QUEUE_REQUESTS, NULL, (double)engine_n_waiting(e));
}

int engine_intake_refuse(Job *j, int r, const char *what) {
        const CommitConfig *c = j->engine->config;

        if (r == -EBUSY) {
                /* Nothing is wrong with the request: others hold the bytes for now. */
                j->intake_status = 503;
                j->intake_type = "server-busy";
                return error_set(&j->error, r,
                                 "%s: requests hold %" PRIu64 " bytes at intake, the daemon's "
                                 "limit is %" PRIu64 " (commit.intake-max-bytes); retry with the "
                                 "same key",
                                 what, budget_used(&j->engine->intake_budget), c->intake_max_bytes);
        }
        j->intake_status = 413;
        j->intake_type = "request-too-large";
        return error_set(&j->error, r,
                         "%s: the request would hold more than %" PRIu64 " bytes at intake "
                         "(commit.intake-max-request-bytes, %" PRIu64 " held); split it",
                         what, j->intake.max_bytes, j->intake.bytes);
}

/* Answers a job's writer, every waiter with the same key, and records the outcome. A retryable
 * outcome (5xx other than "unknown") or a 403 an operator fixes drops the key so that a retry
 * is a fresh request. */
void engine_job_finish(Job *j, KeyState state, int status, json_t *body) {
        CommitEngine *e = j->engine;
        const char *outcome;
        size_t len = 0;
        char *text;

        /* Serialized once: the writer, every waiter and every later replay get these bytes. */
        text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (text)
                len = strlen(text);
        if (status == 503 || !text) { /* !text: the 503 out-of-memory below */
                engine_add_retry_after(e, j->writer);
                for (size_t i = 0; i < j->entry->n_waiters; i++)
                        engine_add_retry_after(e, j->entry->waiters[i]);
        }
        if (text)
                writer_request_reply_text(j->writer, status, slice_make(text, len));
        else
                writer_request_reply_error(j->writer, 503, "out-of-memory",
                                           "out of memory, retry with the same key");
        if (state == KEY_COMMITTED)
                metrics_observe(e->metrics, METRIC_COMMIT_DURATION,
                                (double)(now_monotonic_ns() - j->writer->accepted_ns) / 1e9);

        outcome = state == KEY_COMMITTED ? "committed"
                  : state == KEY_UNKNOWN ? "unknown"
                  : status >= 500        ? "failed-retryable"
                                         : "rejected";
        metrics_add(e->metrics, METRIC_COMMIT_REQUESTS, outcome, 1);
        observe_job_finished(j, state, status);

        /* What icecommitd wrote for the request is its alone: when the commit is known not to
         * have happened it goes; an attempt without a verdict may have committed it. */
        if (state == KEY_FAILED && !j->may_be_committed)
                owned_delete(j, j->props);
        registry_finish(e->keys, j->entry, state, status, text, len);
        j->entry = NULL;
        e->n_queued--;
        engine_publish_queue(e);
        engine_job_free(j);
}

void engine_job_fail(Job *j, int status, const char *type, const char *fmt, ...) {
        char message[2048];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        engine_job_finish(j, KEY_FAILED, status,
                          http_error_body(status, type, message, strlen(message)));
}

/* --- queues ------------------------------------------------------------------------------ */

static void queue_on_timer_closed(uv_handle_t *h) {
        TableQueue *q = h->data;
        CommitEngine *e = q->engine;

        live_index_deinit(e, &q->live);
        list_cache_clear(q);
        table_state_put(q->state);
        free(q->name);
        free(q->label);
        free(q);
        e->n_open_handles--;
        engine_maybe_stopped(e);
}

/* Frees a queue whose timer was never initialized: an initialized one ends in
 * queue_on_timer_closed(). */
static TableQueue *queue_free_unopened(TableQueue *q) {
        if (!q)
                return NULL;
        table_state_put(q->state);
        free(q->name);
        free(q->label);
        free(q);
        return NULL;
}

DEFINE_CLEANUP_FUNC(TableQueue, queue_free_unopened);

static TableQueue *queue_get(CommitEngine *e, const CommitRequest *r) {
        _cleanup_(queue_free_unopenedp) TableQueue *new_queue = NULL;
        TableQueue *q;

        for (q = e->queues; q; q = q->next)
                if (strcmp(q->name, r->queue_name) == 0)
                        return q;
        new_queue = calloc(1, sizeof(*new_queue));
        if (!new_queue)
                return NULL;
        new_queue->name = strdup(r->queue_name);
        new_queue->label = strdup(r->queue_name);
        for (char *p = new_queue->label; p && *p; p++)
                if (*p == '\x1f')
                        *p = '.'; /* namespace levels and the table, as Iceberg prints them */
        new_queue->state = table_state_get(e, r->table_name);
        if (!new_queue->name || !new_queue->label || !new_queue->state ||
            uv_timer_init(e->loop, &new_queue->retry_timer) < 0)
                return NULL;
        q = TAKE_PTR(new_queue); /* from here on it ends by closing its timer */
        q->retry_timer.data = q;
        q->engine = e;
        q->next = e->queues;
        e->queues = q;
        e->n_open_handles++;
        return q;
}

static void queue_on_idle(uv_timer_t *t) {
        TableQueue *q = t->data;
        CommitEngine *e = q->engine;

        if (q->batch || q->head || e->is_closing_handles)
                return;
        for (TableQueue **p = &e->queues; *p; p = &(*p)->next)
                if (*p == q) {
                        *p = q->next;
                        break;
                }
        log_debug("queue='%s' idle for %u ms, dropped", q->label, e->config->queue_idle_ms);
        uv_close((uv_handle_t *)&q->retry_timer, queue_on_timer_closed);
}

void engine_queue_idle(TableQueue *q) {
        /* A long-running daemon meets many tables: what an idle one holds (its state, its
         * live-file index) goes after commit.queue-idle-ms. */
        if (q->head || q->batch || q->engine->is_stopping)
                return;
        (void)uv_timer_start(&q->retry_timer, queue_on_idle, q->engine->config->queue_idle_ms, 0);
        /* Waiting to drop a queue is no work: it does not keep the loop running. */
        uv_unref((uv_handle_t *)&q->retry_timer);
}

/* Deletes files whose attempt is known not to be committed; a failure only leaves garbage. */
static void engine_on_deleted(StorageResult *result, void *userdata) {
        CommitEngine *e = userdata;

        if (result->status < 0)
                log_warning("cannot delete an uncommitted file, leaving it: %s",
                            result->error.message);
        e->n_in_flight--;
        engine_maybe_stopped(e);
}

void engine_delete_file_async(CommitEngine *e, const StorageProps *props,
                              char *location /* stolen */) {
        _cleanup_(freep) char *l = location;
        StorageContext ctx = { .props = props };

        if (!l)
                return;
        if (storage_delete(e->storage, &ctx, l, engine_on_deleted, e, NULL) < 0)
                return;
        e->n_in_flight++;
}

StorageContext engine_storage_context(const CommitEngine *e, const StorageProps *props,
                                      uint64_t accepted_ns) {
        return (StorageContext){
                .props = props,
                .deadline_ns = accepted_ns + e->config->total_timeout_ms * 1000000ull,
        };
}

int engine_check_table_roots(const CommitEngine *e, const TableMetadata *t, const char **ret_type,
                             Error *error) {
        return storage_roots_refuse_table(storage_roots(e->storage), t->location,
                                          json_object_get(t->metadata, "properties"), ret_type,
                                          error);
}

int engine_storage_http_status(int status, const char **ret_type, const char *permanent_type) {
        if (storage_status_is_transient(status)) {
                *ret_type = status == -ENOMEM ? "out-of-memory" : "storage-unavailable";
                return 503;
        }
        switch (status) {
        case -EACCES:
                *ret_type = "storage-access-denied";
                return 403;
        case -EFBIG:
                *ret_type = permanent_type;
                return 413;
        case -EREMOTEIO:
                *ret_type = "storage-error";
                return 502;
        default:
                *ret_type = permanent_type;
                return 422;
        }
}

/* --- intake -------------------------------------------------------------------------------- */

static void job_intake_enqueue(Job *j) {
        CommitEngine *e = j->engine;
        TableQueue *q;

        if (e->is_stopping) {
                engine_job_fail(j, 503, "shutting-down",
                                "icecommitd is stopping; retry with the same key");
                return;
        }
        q = queue_get(e, j->writer->request);
        if (!q) {
                engine_job_fail(j, 503, "out-of-memory", "out of memory");
                return;
        }
        QUEUE_PUSH(q, j);
        batch_queue_kick(q);
}

/* Thread pool: one request naming one data file twice (in two manifests, twice in one, or under
 * two spellings) would commit its rows twice, each time with new row ids. */
static int job_intake_check_repeats(Job *j) {
        _cleanup_(duplicates_deinit) Duplicates files = { 0 };
        const DuplicatesRef *first, *again;
        const CommitRequest *r = j->writer->request;
        char where_first[600], where_again[600];
        uint64_t index_bytes;
        size_t pos = 0;
        bool found;
        int rr = 0;

        for (size_t k = 0; rr == 0 && k < j->n_manifests; k++)
                for (size_t e = 0; rr == 0 && e < j->manifests[k]->n_files; e++)
                        rr = duplicates_add(&files, j->manifests[k]->files[e].path, 0, k, e);
        if (rr < 0) {
                j->intake_status = 503;
                j->intake_type = "out-of-memory";
                return error_set(&j->error, rr, "out of memory");
        }
        /* A copy of every path, held while the check runs: it counts while it is held. */
        index_bytes = files.cap * sizeof(*files.refs);
        for (size_t i = 0; i < files.n_refs; i++)
                index_bytes += strlen(files.refs[i].canonical) + 1;
        rr = budget_take(&j->intake, index_bytes);
        if (rr < 0)
                return engine_intake_refuse(j, rr, "checking that no data file is named twice");
        duplicates_sort(&files);
        found = duplicates_next(&files, &pos, &first, &again);
        budget_release(&j->intake, index_bytes);
        if (!found)
                return 0;
        for (int i = 0; i < 2; i++) {
                const DuplicatesRef *x = i ? again : first;
                char *out = i ? where_again : where_first;

                if (x->manifest < r->n_manifests)
                        (void)snprintf(out, sizeof(where_first),
                                       "staged-manifests[%zu] entry %zu '%s'", x->manifest,
                                       x->entry, j->manifests[x->manifest]->files[x->entry].path);
                else
                        (void)snprintf(out, sizeof(where_first), "'data-files'[%zu] '%s'", x->entry,
                                       j->manifests[x->manifest]->files[x->entry].path);
        }
        j->intake_status = 422;
        j->intake_type = "duplicate-data-file";
        return error_set(&j->error, -EEXIST,
                         "%s names the same data file as %s: its rows would be committed twice",
                         where_again, where_first);
}

/* Thread pool: the rows a request claims row ids for are bounded (commit.max-rows-per-request):
 * a writer's record-count of 2^62 for a three-row file would use up the table's row-id space
 * for good. Counts were checked non-negative by the parsers; the sum saturates. */
static void job_intake_check_rows(Job *j) {
        uint64_t rows = 0, max = j->engine->config->max_rows_per_request;

        for (size_t i = 0; i < j->n_manifests; i++) {
                const StagedManifest *m = j->manifests[i];

                if (m->content == MANIFEST_CONTENT_DELETES || m->added_rows_count <= 0)
                        continue;
                if (__builtin_add_overflow(rows, (uint64_t)m->added_rows_count, &rows))
                        rows = UINT64_MAX;
        }
        if (rows <= max)
                return;
        (void)error_set(&j->error, -E2BIG,
                        "the request adds %" PRIu64 " rows, above the limit of %" PRIu64
                        " (commit.max-rows-per-request); split it, or raise the limit",
                        rows, max);
        j->intake_status = 422;
        j->intake_type = "too-many-rows";
}

/* A staged manifest refused by its parse (or its copy): the status and type of each outcome. */
static void job_intake_parse_failed(Job *j, size_t i, int rr) {
        const CommitRequest *r = j->writer->request;
        const uint32_t max_files = j->engine->config->max_verified_files_per_request;
        char what[256];

        (void)snprintf(what, sizeof(what), "staged-manifests[%zu] '%s'", i, r->manifests[i]);
        switch (rr) {
        case -EDQUOT:
                j->intake_status = 422;
                j->intake_type = "too-many-data-files";
                (void)error_set(&j->error, rr,
                                "the request names more than %" PRIu32 " data files "
                                "(commit.max-verified-files-per-request: entries of its staged "
                                "manifests and its data-files together), %s goes past it; split "
                                "the request",
                                max_files, what);
                return;
        case -EFBIG:
        case -EBUSY:
                (void)engine_intake_refuse(j, rr, what);
                return;
        case -ENOMEM:
                j->intake_status = 503;
                j->intake_type = "out-of-memory";
                break;
        default:
                j->intake_status = 422;
                break;
        }
        (void)error_prefix(&j->error, rr, "%s", what);
}

/* Thread pool: staged manifest i as read becomes icecommitd's copy (unless
 * commit.copy-staged-manifests is off), and the copy is what is parsed and checked: the
 * bytes the table will reference are the bytes validated, whatever the writer does to its
 * own file afterwards. The bytes read are held no more once parsed; the copy's, until written. */
static int job_intake_parse_staged(Job *j, size_t i, const ManifestLimits *limits) {
        const CommitRequest *r = j->writer->request;
        const StorageConfig *storage = j->engine->storage_config;
        Buf *read = &j->manifest_bytes[i];
        const Buf *bytes = read;
        int rr = 0;

        if (j->engine->config->copy_staged_manifests) {
                rr = owned_copy_prepare(j, i, buf_slice(read), storage->max_manifest_bytes);
                if (rr >= 0)
                        bytes = &j->owned[i].bytes;
                else if (rr == -E2BIG) {
                        /* Past storage.max-manifest-bytes with our header key: too large. */
                        budget_release(&j->intake, read->cap);
                        buf_deinit(read);
                        j->intake_status = 413;
                        (void)error_prefix(&j->error, rr, "staged-manifests[%zu] '%s'", i,
                                           r->manifests[i]);
                        return rr;
                }
        }
        if (rr >= 0)
                rr = manifest_staged_parse(buf_slice(bytes), r->manifests[i], limits,
                                           &j->manifests[i], &j->error);
        /* Not a copy: a writer's key saying where "its copy" was staged would speak for
         * icecommitd in the receipts rebuilt from the table. */
        if (rr >= 0 && !j->owned[i].location && j->manifests[i]->staged_location) {
                /* What its parse took stays in j->intake until the job ends. */
                j->manifests[i] = manifest_staged_free(j->manifests[i]);
                rr = error_set(&j->error, -EINVAL,
                               "the manifest's header has the key '%s', which only icecommitd "
                               "writes",
                               MANIFEST_META_STAGED_LOCATION);
        }
        if (rr >= 0)
                j->manifest_lengths[i] = (int64_t)bytes->len;
        /* Parsed or refused: the bytes read are not held any more (job_on_io counted them). */
        budget_release(&j->intake, read->cap);
        buf_deinit(read);
        if (rr < 0)
                job_intake_parse_failed(j, i, rr);
        return rr;
}

/* Thread pool: parse what was read; check and describe the data-files. */
static void job_intake_work(uv_work_t *w) {
        Job *j = w->data;
        const CommitRequest *r = j->writer->request;
        const CommitConfig *c = j->engine->config;
        const StorageConfig *storage = j->engine->storage_config;
        /* The request's bound on data files, spent as its manifests are decoded: its
         * data-files first, since they are held already (parsed with the body). */
        uint64_t files_left = c->max_verified_files_per_request;
        ManifestLimits limits = {
                .max_entries = storage->max_manifest_entries,
                .max_path_bytes = c->max_path_bytes,
                .max_entry_bytes = storage->max_manifest_entry_bytes,
                .entries_left = &files_left,
                .hold = &j->intake,
        };

        if (r->n_data_files > files_left) {
                j->intake_status = 422;
                j->intake_type = "too-many-data-files";
                (void)error_set(&j->error, -EDQUOT,
                                "the request names %zu data-files, above the %" PRIu64
                                " data files of one request (commit.max-verified-files-per-"
                                "request); split it",
                                r->n_data_files, files_left);
                return;
        }
        files_left -= r->n_data_files;
        for (size_t i = 0; i < r->n_manifests; i++) {
                int rr = job_intake_parse_staged(j, i, &limits);

                if (rr < 0)
                        return;
                j->n_manifests = i + 1;
        }
        limits.entries_left = NULL; /* the data-files were counted above */
        if (r->n_data_files > 0 && data_files_intake(j, storage->max_manifest_bytes, &limits) < 0)
                return;
        if (job_intake_check_repeats(j) < 0)
                return;
        job_intake_check_rows(j);
        if (j->intake_status == 0)
                (void)probe_plan(j);
}

/* After the probes: writes what icecommitd owns of the request (its copies of the staged
 * manifests, its data-files' manifest), then queues it. */
static void job_intake_write_owned(Job *j) {
        owned_write_start(j, job_intake_enqueue);
}

static void job_intake_after(uv_work_t *w, int status) {
        Job *j = w->data;
        CommitEngine *e = j->engine;

        e->n_in_flight--;
        if (status < 0 || j->intake_status) {
                engine_job_fail(j, status < 0 ? 503 : j->intake_status,
                                status < 0       ? "shutting-down"
                                : j->intake_type ? j->intake_type
                                                 : "invalid-manifest",
                                "%s", status < 0 ? "the request was cancelled" : j->error.message);
                engine_maybe_stopped(e);
                return;
        }
        if (e->is_stopping)
                engine_job_fail(j, 503, "shutting-down",
                                "icecommitd is stopping; retry with the same key");
        else
                /* The staged manifests' data files exist with their sizes before anything is
                 * written or queued. */
                probe_start(j, job_intake_write_owned);
        engine_maybe_stopped(e);
}

static void job_intake_queue(Job *j) {
        CommitEngine *e = j->engine;
        int r;

        r = uv_queue_work(e->loop, &j->work, job_intake_work, job_intake_after);
        if (r < 0) {
                engine_job_fail(j, 503, "internal", "cannot queue work: %s", uv_strerror(r));
                return;
        }
        e->n_in_flight++;
}

static void job_io_pump(Job *j);
static void job_on_io(StorageResult *result, void *userdata);

/* Sets the job's intake failure from a failed read of item i (a staged manifest, then the
 * data-files). A read that left the table through a symlink (-EXDEV) is refused in the very
 * words of a location outside the table: nothing about where it leads shows. */
static void job_io_failed(Job *j, size_t i, int status, const char *why) {
        const CommitRequest *r = j->writer->request;
        const bool is_manifest = i < r->n_manifests;
        const char *type;

        j->io_status = status;
        if (status == -EXDEV) {
                j->intake_status = 422;
                j->intake_type = is_manifest ? "invalid-manifest" : "invalid-data-file";
                if (is_manifest)
                        (void)error_set(
                                &j->error, status,
                                "staged-manifests[%zu] '%s' is outside the table location '%s'", i,
                                r->manifests[i], j->table->location);
                else
                        (void)error_set(&j->error, status,
                                        "'data-files'[%zu] '%s' is outside the table location '%s'",
                                        i - r->n_manifests,
                                        r->data_files[i - r->n_manifests].location,
                                        j->table->location);
                return;
        }
        j->intake_status =
                engine_storage_http_status(status, &type,
                                           is_manifest ? "invalid-manifest" : "invalid-data-file");
        j->intake_type = type;
        if (is_manifest)
                (void)error_set(&j->error, status, "staged-manifests[%zu] '%s': %s", i,
                                r->manifests[i], why);
        else
                (void)error_set(&j->error, status, "'data-files'[%zu]: %s", i - r->n_manifests,
                                why);
}

/* Starts intake read i: a staged manifest's bytes, a data file's size, or (for a described
 * Parquet file) the last tail_bytes of it, which give its size too. Beneath the table location,
 * which both must lie in (data_files_check_locations). */
static int job_io_start(Job *j, size_t i, uint64_t tail_bytes, Error *error) {
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        StorageContext ctx = engine_storage_context(e, j->props, j->writer->accepted_ns);
        int rr;

        ctx.root = j->table->location;
        j->io[i] = (IoSlot){ .job = j, .index = i };
        if (i < r->n_manifests)
                rr = storage_read(e->storage, &ctx, r->manifests[i],
                                  e->storage_config->max_manifest_bytes, job_on_io, &j->io[i],
                                  error);
        else if (tail_bytes > 0)
                rr = storage_read_tail(e->storage, &ctx, r->data_files[i - r->n_manifests].location,
                                       tail_bytes, job_on_io, &j->io[i], error);
        else
                rr = storage_size(e->storage, &ctx, r->data_files[i - r->n_manifests].location,
                                  job_on_io, &j->io[i], error);
        if (rr == 0)
                e->n_in_flight++;
        return rr;
}

/* A described Parquet file's tail arrived: check its footer, or read the longer tail that
 * holds it. Returns true when a second read went out (the item is not done yet). */
static bool job_on_footer(Job *j, size_t i, StorageResult *result) {
        const CommitRequest *r = j->writer->request;
        size_t d = i - r->n_manifests;
        uint64_t need = 0;
        Error error = { 0 };
        int rr;

        if (j->file_reads[d]++ > 0 && result->size != j->file_sizes[d]) {
                job_io_failed(j, i, -EAGAIN, "the file changed while its footer was read");
                return false;
        }
        j->file_sizes[d] = result->size;
        rr = probe_footer_check(j, d, result, &need);
        if (rr == PARQUET_FOOTER_E_SHORT && j->file_reads[d] > 1) {
                job_io_failed(j, i, -EAGAIN, "the file changed while its footer was read");
                return false;
        }
        if (rr == PARQUET_FOOTER_E_SHORT) {
                rr = job_io_start(j, i, need, &error);
                if (rr == 0)
                        return true;
                job_io_failed(j, i, rr, error.message);
                return false;
        }
        if (rr < 0)
                j->io_status = rr; /* the reason is set */
        return false;
}

/* A staged manifest's bytes arrived: they count from now until parsed. Over a bound they go at
 * once, and no further read starts (the request is refused). */
static void job_io_hold_manifest(Job *j, size_t i) {
        const CommitRequest *r = j->writer->request;
        char what[256];
        int rr;

        if (j->io_status != 0) {
                buf_deinit(&j->manifest_bytes[i]);
                return;
        }
        /* Reads grow their buffer in steps of 64 KiB and more: kept, it would be mostly room. */
        buf_trim(&j->manifest_bytes[i]);
        rr = budget_take(&j->intake, j->manifest_bytes[i].cap);
        if (rr == 0)
                return;
        buf_deinit(&j->manifest_bytes[i]);
        (void)snprintf(what, sizeof(what), "staged-manifests[%zu] '%s'", i, r->manifests[i]);
        j->io_status = engine_intake_refuse(j, rr, what);
}

/* One intake read answered: a staged manifest's bytes or a data file's size (and tail). */
static void job_on_io(StorageResult *result, void *userdata) {
        IoSlot *slot = userdata;
        Job *j = slot->job;
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        size_t i = slot->index;

        e->n_in_flight--;
        if (result->status < 0 && j->io_status == 0)
                job_io_failed(j, i, result->status, result->error.message);
        else if (result->status == 0 && i < r->n_manifests) {
                j->manifest_bytes[i] = result->data;
                buf_init(&result->data, 0);
                job_io_hold_manifest(j, i);
        } else if (result->status == 0 && j->io_status == 0 &&
                   probe_wants_footer(j, i - r->n_manifests)) {
                if (job_on_footer(j, i, result)) {
                        engine_maybe_stopped(e);
                        return; /* the longer tail comes back here */
                }
        } else if (result->status == 0)
                j->file_sizes[i - r->n_manifests] = result->size;
        j->n_io_done++;
        job_io_pump(j);
        engine_maybe_stopped(e);
}

/* Keeps up to s3.max-concurrent-requests intake reads in flight; when all are answered, parses
 * on the thread pool, or fails the job with the first failure. */
static void job_io_pump(Job *j) {
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        const uint32_t max = e->storage_config->s3.max_concurrent_requests;

        while (j->io_status == 0 && !e->is_stopping && j->n_io_started < j->n_io &&
               j->n_io_started - j->n_io_done < max) {
                size_t i = j->n_io_started;
                bool footer = i >= r->n_manifests && probe_wants_footer(j, i - r->n_manifests);
                Error error = { 0 };
                int rr;

                rr = job_io_start(j, i, footer ? e->config->parquet_tail_bytes : 0, &error);
                if (rr < 0) {
                        job_io_failed(j, i, rr, error.message);
                        break;
                }
                j->n_io_started++;
        }
        if (j->n_io_done < j->n_io_started)
                return; /* the last answer comes back here */
        if (e->is_stopping && j->io_status == 0) {
                engine_job_fail(j, 503, "shutting-down",
                                "icecommitd is stopping; retry with the same key");
                return;
        }
        if (j->io_status != 0) {
                engine_job_fail(j, j->intake_status, j->intake_type, "%s", j->error.message);
                return;
        }
        job_intake_queue(j);
}

/* Reads what the request names: its staged manifests and the sizes of its data-files. */
static void job_intake_fetch(Job *j) {
        const CommitRequest *r = j->writer->request;

        if (data_files_check_locations(j) < 0) {
                engine_job_fail(j, j->intake_status, j->intake_type, "%s", j->error.message);
                return;
        }
        j->n_io = r->n_manifests + r->n_data_files;
        j->manifest_bytes = calloc(r->n_manifests + 1, sizeof(*j->manifest_bytes));
        j->file_sizes = calloc(r->n_data_files + 1, sizeof(*j->file_sizes));
        j->file_reads = calloc(r->n_data_files + 1, sizeof(*j->file_reads));
        j->io = calloc(j->n_io + 1, sizeof(*j->io));
        if (!j->manifest_bytes || !j->file_sizes || !j->file_reads || !j->io) {
                engine_job_fail(j, 503, "out-of-memory", "out of memory");
                return;
        }
        job_io_pump(j);
}

static void job_on_intake_loaded(const CatalogResult *result, void *userdata) {
        Job *j = userdata;
        CommitEngine *e = j->engine;
        const char *type;
        int r;

        e->n_in_flight--;
        if (result->status != 0) {
                r = catalog_outcome_http_status(result->status, &type);
                engine_job_fail(j, r, type, "%s%s",
                                r == 404 ? "" : "cannot load the table to check the request: ",
                                result->message);
        } else if ((r = table_metadata_parse(result->body, &j->table, &j->error)) < 0 ||
                   (r = storage_props_new(result->properties, result->body, &j->props, &j->error)) <
                           0)
                engine_job_fail(j, r == -ENOMEM ? 503 : 502, "catalog-bad-metadata", "%s",
                                j->error.message);
        else if ((r = engine_check_table_roots(e, j->table, &type, &j->error)) > 0)
                engine_job_fail(j, r, type, "%s", j->error.message);
        else if (e->is_stopping)
                engine_job_fail(j, 503, "shutting-down",
                                "icecommitd is stopping; retry with the same key");
        else
                job_intake_fetch(j);
        engine_maybe_stopped(e);
}

/* A 503 queue-full: counted, with Retry-After. */
static void engine_answer_queue_full(CommitEngine *e, WriterRequest *w, const char *fmt, ...)
        _printf_(3, 4);
static void engine_answer_queue_full(CommitEngine *e, WriterRequest *w, const char *fmt, ...) {
        char message[512];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        engine_add_retry_after(e, w);
        metrics_add(e->metrics, METRIC_COMMIT_REQUESTS, "queue-full", 1);
        writer_request_finish_error(w, 503, "queue-full", "%s", message);
}

/* Admission (docs/design.md section 2.1): with commit.max-queue-requests requests accepted and
 * not answered, repeats of pending keys included, a request is answered 503 queue-full. */
static bool engine_queue_is_full(CommitEngine *e, WriterRequest *w) {
        size_t n = engine_n_waiting(e);

        if (n < e->config->max_queue_requests)
                return false;
        engine_answer_queue_full(
                e, w, "%zu requests are waiting (commit.max-queue-requests); retry later", n);
        return true;
}

/* A repeat of a key whose first request is not answered waits for that answer: it counts
 * against the queue like any request, a key has at most commit.max-waiters-per-key of them,
 * and one whose client leaves is dropped at once (registry_wait). */
static void engine_submit_repeat(CommitEngine *e, KeyEntry *entry, WriterRequest *w) {
        if (engine_queue_is_full(e, w))
                return;
        if (entry->n_waiters >= e->config->max_waiters_per_key) {
                engine_answer_queue_full(e, w,
                                         "%zu requests with key '%s' wait for its first one's "
                                         "answer (commit.max-waiters-per-key); retry later",
                                         entry->n_waiters, entry->key);
                return;
        }
        if (registry_wait(entry, w) < 0) {
                writer_request_finish_error(w, 503, "out-of-memory", "out of memory");
                return;
        }
        engine_publish_queue(e);
}

static void engine_submit(WriterRequest *w, void *userdata) {
        CommitEngine *e = userdata;
        const CommitRequest *r = w->request;
        KeyEntry *entry = registry_get(e->keys, r->key_scope, r->idempotency_key);
        _cleanup_(engine_job_freep) Job *j = NULL;
        bool is_retry_of_unknown;
        TableState *state;
        int rr;

        /* A refused request committed nothing: its answer is replayed for the same body only, and
         * a corrected body under the key is a new request (else one bad request, or someone's
         * stray key, would block the key until the entry ages out). */
        if (entry && entry->state == KEY_FAILED &&
            strcmp(entry->fingerprint, r->fingerprint) != 0) {
                registry_remove(e->keys, entry);
                entry = NULL;
        }
        if (entry && strcmp(entry->fingerprint, r->fingerprint) != 0) {
                writer_request_finish_error(
                        w, 409, "idempotency-key-reused",
                        "idempotency key '%s' was already used with a different request body",
                        r->idempotency_key);
                return;
        }
        if (entry && entry->state == KEY_PENDING) {
                engine_submit_repeat(e, entry, w);
                return;
        }
        if (entry && (entry->state == KEY_COMMITTED || entry->state == KEY_FAILED)) {
                /* A finished request is answered again, the same way (4xx failures only: a
                 * retryable failure, or a 403, was removed from the registry), with the bytes
                 * kept. */
                writer_request_reply_text(w, entry->status,
                                          slice_make(entry->body, entry->body_len));
                writer_request_free(w);
                return;
        }
        is_retry_of_unknown = entry != NULL;
        if (entry) /* KEY_UNKNOWN: resolve by trying again; the history check finds a landed one */
                registry_remove(e->keys, entry);

        if (e->is_stopping) {
                engine_add_retry_after(e, w);
                writer_request_finish_error(w, 503, "shutting-down",
                                            "icecommitd is stopping; retry with the same key");
                return;
        }
        if (engine_queue_is_full(e, w))
                return;

        j = calloc(1, sizeof(*j));
        if (j) {
                /* One more slot for the manifest of the request's data-files. */
                j->manifests = calloc(r->n_manifests + 1, sizeof(*j->manifests));
                j->manifest_lengths = calloc(r->n_manifests + 1, sizeof(*j->manifest_lengths));
                j->owned = calloc(r->n_manifests + 1, sizeof(*j->owned));
        }
        if (!j || !j->manifests || !j->manifest_lengths || !j->owned ||
            registry_add(e->keys, r->key_scope, r->idempotency_key, r->fingerprint, &entry) < 0) {
                writer_request_finish_error(w, 503, "out-of-memory", "out of memory");
                return;
        }
        j->engine = e;
        j->writer = w;
        j->entry = entry;
        j->resolves_unknown = is_retry_of_unknown;
        j->intake = (BudgetHold){ .budget = &e->intake_budget,
                                  .max_bytes = e->config->intake_max_request_bytes };
        j->work.data = j;
        e->n_queued++;
        engine_publish_queue(e);
        /* Once per request, not per attempt: every file the request names is read beneath
         * the table's location, and checked against its roots, schema and specs; objects are
         * read with the storage settings (and vended credentials) it comes with. The table as
         * the engine holds it serves when recent (the batch checks again on its own table);
         * else a load without the history: the batch's own load has it for the keys. */
        state = table_state_find(e, r->table_name);
        if (state && table_state_is_fresh(state) &&
            table_state_use(state, &j->table, &j->props, &j->error) == 0) {
                const char *type;

                if (engine_check_table_roots(e, j->table, &type, &j->error) == 0) {
                        job_intake_fetch(TAKE_PTR(j));
                        return;
                }
                /* A refusal never rests on the state (a property may have changed since,
                 * with no snapshot to tell): the load below decides. */
                engine_release_table(e, TAKE_PTR(j->table));
                j->props = storage_props_free(j->props);
        }
        metrics_add(e->metrics, METRIC_TABLE_LOADS, "intake", 1);
        rr = catalog_load_table_refs(e->catalog, (const char *const *)r->target.namespace,
                                     r->target.n_namespace, r->target.table, job_on_intake_loaded,
                                     j);
        if (rr < 0) {
                engine_job_fail(TAKE_PTR(j), 503, "catalog-unavailable",
                                "cannot load the table: %s", strerror(-rr));
                return;
        }
        TAKE_PTR(j); /* the catalog calls back */
        e->n_in_flight++;
}

/* Whether the caller of a lookup may see an entry: its own key (the scope starts with its
 * principal), on a table it holds the right `read` on. Everything else stays unknown to it. */
static bool engine_entry_is_visible(const KeyEntry *entry, void *userdata) {
        const AuthToken *caller = userdata;
        size_t n = strlen(caller->principal);
        _cleanup_(freep) char *namespace_param = NULL;
        const char *rest, *sep;

        if (strncmp(entry->scope, caller->principal, n) != 0 || entry->scope[n] != '\x1d')
                return false;
        rest = entry->scope + n + 1;
        sep = strchr(rest, '\x1e');
        if (!sep || !(namespace_param = strndup(rest, (size_t)(sep - rest))))
                return false;
        return auth_token_allows(caller, AUTH_RIGHT_READ, namespace_param, sep + 1);
}

/* An error document as the lookup hook returns it: serialized. */
static char *engine_lookup_error(int status, const char *type, const char *message, size_t len,
                                 size_t *ret_len) {
        _cleanup_(json_decrefp) json_t *body = http_error_body(status, type, message, len);
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

        if (text)
                *ret_len = strlen(text);
        return text;
}

static char *engine_lookup(const char *key, const char *namespace_param, const char *table,
                           const AuthToken *caller, int *ret_status, size_t *ret_len,
                           void *userdata) {
        CommitEngine *e = userdata;
        KeyEntry *entry;
        size_t n = 1;

        if (namespace_param && table) {
                /* The caller's right on this table was checked by the handler. */
                _cleanup_(freep) char *scope = request_key_scope(caller ? caller->principal : NULL,
                                                                 namespace_param, table);

                if (!scope)
                        return NULL;
                entry = registry_get(e->keys, scope, key);
        } else
                entry = registry_find_any(e->keys, key, caller ? engine_entry_is_visible : NULL,
                                          (void *)caller, &n);
        if (n > 1) {
                static const char ambiguous[] = "the key was used on several tables: add "
                                                "?namespace=NS&table=T to say which";

                *ret_status = 409;
                return engine_lookup_error(409, "key-ambiguous", ambiguous, sizeof(ambiguous) - 1,
                                           ret_len);
        }
        if (!entry) {
                static const char unknown[] =
                        "this daemon has no record of the key (never seen, or evicted); add "
                        "?namespace=NS&table=T to search that table's history";

                *ret_status = 404;
                return engine_lookup_error(404, "unknown-key", unknown, sizeof(unknown) - 1,
                                           ret_len);
        }
        *ret_status = 200;
        return registry_entry_status_text(entry, ret_len);
}

/* One GET /v1/commits/{key}?namespace=&table= waiting for its table. */
typedef struct HistoryLookup {
        CommitEngine *engine;
        WriterRequest *writer;
        char *key;
        char *recorded_key; /* as the summaries hold it: "principal/key" with auth */
        char *table;
        json_t *namespace; /* its levels, for the receipt */
} HistoryLookup;

static HistoryLookup *history_lookup_free(HistoryLookup *l) {
        if (!l)
                return NULL;
        writer_request_free(l->writer);
        free(l->key);
        free(l->recorded_key);
        free(l->table);
        json_decref(l->namespace);
        free(l);
        return NULL;
}

DEFINE_CLEANUP_FUNC(HistoryLookup, history_lookup_free);

static void engine_on_history_receipt(json_t *receipt, int status, const Error *error,
                                      void *userdata) {
        HistoryLookup *l = userdata;
        const char *type;

        if (!receipt) {
                /* Never a 4xx: the key is committed, a writer must not send it anew. */
                type = status == -ENOMEM ? "out-of-memory" : "storage-unavailable";
                writer_request_reply_error(l->writer, 503, type,
                                           "key '%s' is committed, but its receipt cannot be "
                                           "read from the table now: %s",
                                           l->key, error->message);
        } else {
                writer_request_add_header(l->writer, HISTORY_RECEIPT_HEADER, "true");
                writer_request_reply(l->writer, 200,
                                     json_pack("{s:s, s:s, s:o}", "idempotency-key", l->key,
                                               "status", "committed", "receipt", receipt));
        }
        history_lookup_free(l);
}

static void engine_on_history_loaded(const CatalogResult *result, void *userdata) {
        _cleanup_(history_lookup_freep) HistoryLookup *l = userdata;
        CommitEngine *e = l->engine;
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        _cleanup_(storage_props_freep) StorageProps *props = NULL;
        Error error = { 0 };
        const char *type;
        json_t *s;
        int r;

        e->n_in_flight--;
        if (result->status != 0) {
                int status = catalog_outcome_http_status(result->status, &type);

                writer_request_reply_error(
                        l->writer, status, type, "%s%s",
                        status == 404 ? "" : "cannot load the table to search its history: ",
                        result->message);
        } else if (table_metadata_parse(result->body, &t, &error) < 0)
                writer_request_reply_error(l->writer, 502, "catalog-bad-metadata", "%s",
                                           error.message);
        else if ((r = engine_check_table_roots(e, t, &type, &error)) > 0)
                writer_request_reply_error(l->writer, r, type, "%s", error.message);
        else if ((s = snapshot_find_key(t->metadata, l->recorded_key,
                                        e->config->history_lookback))) {
                HistoryReceiptArgs a = {
                        .snapshot = s,
                        .recorded_key = l->recorded_key,
                        .key = l->key,
                        .namespace = l->namespace,
                        .table = l->table,
                        .root = t->location,
                        .metadata_dir = t->metadata_dir,
                };

                r = storage_props_new(result->properties, result->body, &props, &error);
                if (r >= 0) {
                        a.props = props;
                        r = history_receipt_start(e, &a, engine_on_history_receipt, l);
                }
                if (r >= 0)
                        TAKE_PTR(l); /* answered by engine_on_history_receipt */
                else
                        writer_request_reply_error(
                                l->writer, 503,
                                r == -ENOMEM ? "out-of-memory" : "storage-unavailable",
                                "key '%s' is committed, but its receipt cannot be read from the "
                                "table now: %s",
                                l->key, strerror(-r));
        } else
                writer_request_reply_error(
                        l->writer, 404, "unknown-key",
                        "key '%s' is not in this daemon's memory nor in the newest %u snapshots "
                        "of the table (0 = all)",
                        l->key, e->config->history_lookback);
        history_lookup_free(TAKE_PTR(l));
        engine_maybe_stopped(e);
}

static void engine_lookup_history(WriterRequest *w, const char *key, const char *namespace_param,
                                  const char *table, const char *principal, void *userdata) {
        CommitEngine *e = userdata;
        _cleanup_(request_target_deinit) CommitTarget target = { 0 };
        _cleanup_(history_lookup_freep) HistoryLookup *l = NULL;
        Error error = { 0 };
        int r;

        r = request_target_parse(namespace_param, table, &target, &error);
        if (r < 0) {
                writer_request_finish_error(w, r == -ENOMEM ? 503 : 400,
                                            r == -ENOMEM ? "out-of-memory" : "bad-request", "%s",
                                            error.message);
                return;
        }
        l = calloc(1, sizeof(*l));
        if (!l || !(l->key = strdup(key)) ||
            !(l->recorded_key = request_key_recorded(principal, key)) ||
            !(l->table = strdup(table)) ||
            !(l->namespace = request_target_namespace_json(&target))) {
                writer_request_finish_error(w, 503, "out-of-memory", "out of memory");
                return;
        }
        l->engine = e;
        l->writer = w;
        r = catalog_load_table(e->catalog, (const char *const *)target.namespace,
                               target.n_namespace, target.table, engine_on_history_loaded, l);
        if (r < 0) {
                writer_request_reply_error(w, 503, "catalog-unavailable",
                                           "cannot load the table: %s", strerror(-r));
                return; /* cleanup frees l and its writer */
        }
        TAKE_PTR(l); /* the catalog calls back */
        e->n_in_flight++;
}

static bool engine_is_ready(bool with_details, const char **ret_reason, void *userdata) {
        CommitEngine *e = userdata;
        const char *why = NULL;

        if (e->is_stopping)
                *ret_reason = "icecommitd is stopping";
        else if (!catalog_is_ready(e->catalog))
                *ret_reason = "the catalog configuration is not loaded yet";
        else if (!storage_is_writable(e->storage, &why))
                *ret_reason = with_details
                                      ? why
                                      : "storage cannot be written (the daemon's log says why)";
        else
                return true;
        return false;
}

static int engine_metrics(Buf *out, void *userdata) {
        CommitEngine *e = userdata;

        metrics_set(e->metrics, METRIC_CATALOG_READY, NULL, catalog_is_ready(e->catalog) ? 1 : 0);
        metrics_set(e->metrics, METRIC_STORAGE_WRITABLE, NULL,
                    storage_is_writable(e->storage, NULL) ? 1 : 0);
        /* Waiters leave with their clients, between the engine's own updates. */
        engine_publish_queue(e);
        metrics_set(e->metrics, METRIC_INTAKE_BYTES, NULL, (double)budget_used(&e->intake_budget));
        metrics_set(e->metrics, METRIC_RECEIPT_CACHE_BYTES, NULL,
                    (double)registry_finished_bytes(e->keys));
        observe_scrape(e);
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

int commit_engine_new(uv_loop_t *loop, const CommitConfig *config,
                      const StorageConfig *storage_config, Storage *storage, Catalog *catalog,
                      Metrics *metrics, CommitEngine **ret) {
        _cleanup_(commit_engine_freep) CommitEngine *e = NULL;
        uint8_t hash_key[SIPHASH_KEY_BYTES];
        int r;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->loop = loop;
        e->config = config;
        e->storage_config = storage_config;
        e->storage = storage;
        e->catalog = catalog;
        e->metrics = metrics;
        e->intake_budget.max_bytes = config->intake_max_bytes;
        /* The registry's hash key: secret, so that writers cannot choose colliding keys. */
        if (getrandom(hash_key, sizeof(hash_key), 0) != (ssize_t)sizeof(hash_key))
                return -EIO;
        r = registry_new(config->receipt_cache_size, config->receipt_cache_max_bytes, hash_key,
                         &e->keys);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(e);
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
                for (Job *j; (j = QUEUE_POP(q));)
                        engine_job_fail(j, 503, "shutting-down",
                                        "icecommitd is stopping; retry with the same key");
                /* A batch waiting for its retry timer ends now; one talking to the catalog ends
                 * with its answer (batch_retry_later refuses to go on while stopping). */
                if (q->batch && uv_is_active((uv_handle_t *)&q->retry_timer)) {
                        uv_timer_stop(&q->retry_timer);
                        /* After an attempt without a verdict "nothing was committed" would be a
                         * guess: the writer must resolve it by retrying the key. */
                        if (q->batch->has_unknown)
                                batch_fail(
                                        q->batch, KEY_UNKNOWN, 504, "commit-state-unknown",
                                        "icecommitd is stopping; an earlier attempt got no verdict "
                                        "and snapshot "
                                        "%" PRId64
                                        " may be committed; retry with the same key to resolve it",
                                        q->batch->snapshot_id);
                        else
                                batch_fail(q->batch, KEY_FAILED, 503, "shutting-down",
                                           "icecommitd is stopping; nothing was committed, retry "
                                           "with the same key");
                }
        }
        engine_maybe_stopped(e);
}

CommitEngine *commit_engine_free(CommitEngine *e) {
        if (!e)
                return NULL;
        registry_free(e->keys);
        free(e);
        return NULL;
}
