/* SPDX-License-Identifier: Apache-2.0 */
/* The attempts of one batch: load the table, answer keys already in its history, build the
 * manifest list on the thread pool (staged manifests first, then the parent's, row ids
 * assigned), commit with requirements; 409 -> back off and rebuild only the list; no verdict ->
 * 504 commit-state-unknown with every file kept. */
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
#include "iceberg/lineage.h"
#include "iceberg/manifest_list.h"
#include "iceberg/manifest_list_append.h"
#include "iceberg/schema_compat.h"
#include "iceberg/snapshot.h"
#include "storage/storage.h"
#include "util/log.h"
#include "util/queue.h"
#include "util/time-util.h"

static void batch_attempt_start(Batch *b);
static void batch_build_after(Batch *b);
static void batch_assemble_start(Batch *b);

/* --- batches ------------------------------------------------------------------------------- */

static void batch_free_attempt(Batch *b) {
        engine_release_table(b->queue->engine, TAKE_PTR(b->table));
        b->head = b->parent = (TableBranch){ 0 };
        free(b->parent_list_location);
        b->parent_list_location = NULL;
        for (size_t i = 0; i < b->n_list; i++)
                manifest_file_deinit(&b->list[i]);
        free(b->list);
        b->list = NULL;
        b->n_list = b->n_staged = 0;
        free(b->list_location);
        free(b->list_cleanup);
        b->list_location = b->list_cleanup = NULL;
        b->props = storage_props_free(b->props);
        buf_deinit(&b->parent_bytes);
        for (size_t i = 0; i < b->n_parent_files; i++)
                manifest_file_deinit(&b->parent_files[i]);
        free(b->parent_files);
        b->parent_files = NULL;
        b->n_parent_files = 0;
        b->has_parent_files = false;
        for (size_t i = 0; i < b->n_to_count; i++)
                buf_deinit(&b->count_bytes[i]);
        free(b->count_bytes);
        free(b->to_count);
        free(b->io);
        b->count_bytes = NULL;
        b->to_count = NULL;
        b->io = NULL;
        b->n_to_count = b->n_io_started = b->n_io_done = 0;
        b->io_status = 0;
        buf_deinit(&b->list_bytes);
        json_decref(b->commit_request);
        b->commit_request = NULL;
        b->commit_key[0] = 0;
        live_index_attempt_deinit(&b->live);
        merge_attempt_deinit(b);
}

static Batch *batch_free(Batch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_jobs; i++)
                engine_job_free(b->jobs[i]);
        merge_batch_deinit(b);
        batch_free_attempt(b);
        for (size_t i = 0; i < b->n_counted; i++)
                free(b->counted[i].path);
        free(b->counted);
        free(b->jobs);
        free(b);
        return NULL;
}

/* Ends the batch (every job answered) and lets the next one start. */
static void batch_end(Batch *b) {
        TableQueue *q = b->queue;
        CommitEngine *e = q->engine;

        q->batch = NULL;
        batch_free(b);
        batch_queue_kick(q);
        if (!q->batch)
                engine_queue_idle(q);
        engine_maybe_stopped(e);
}

static void batch_remove_job(Batch *b, size_t i) {
        memmove(&b->jobs[i], &b->jobs[i + 1], (b->n_jobs - i - 1) * sizeof(*b->jobs));
        b->n_jobs--;
}

void batch_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...) {
        char message[2048];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        log_warning("commit failed queue='%s' status=%d type=%s: %s", b->queue->label, status, type,
                    message);
        /* Whatever went wrong, the next batch starts from the catalog's table. */
        table_state_drop(b->queue->state, "failed");
        for (size_t i = 0; i < b->n_jobs; i++)
                engine_job_finish(b->jobs[i], state, status,
                                  http_error_body(status, type, message, strlen(message)));
        b->n_jobs = 0;
        batch_end(b);
}

static void batch_on_retry_timer(uv_timer_t *t) {
        TableQueue *q = t->data;

        if (q->batch)
                batch_attempt_start(q->batch);
}

/* Java's Tasks backoff: min * 2^(n-1) capped at max, plus up to 10% jitter. */
uint64_t commit_engine_backoff_ms(const CommitConfig *config, unsigned attempt, uint64_t random) {
        uint64_t delay = config->min_backoff_ms;

        for (unsigned i = 1; i < attempt && delay < config->max_backoff_ms; i++)
                delay *= 2;
        if (delay > config->max_backoff_ms)
                delay = config->max_backoff_ms;
        return delay + (delay >= 10 ? random % (delay / 10) : 0);
}

static uint64_t batch_backoff_ms(const Batch *b) {
        uint64_t random = 0;

        if (getrandom(&random, sizeof(random), 0) != (ssize_t)sizeof(random))
                random = 0;
        return commit_engine_backoff_ms(b->queue->engine->config, b->attempt, random);
}

/* Another attempt after a backoff, or the end: after max_attempts, or past the total timeout
 * once at least two attempts were made. */
static void batch_retry_later(Batch *b, const char *reason, int status, const char *type,
                              const char *message) {
        CommitEngine *e = b->queue->engine;
        uint64_t elapsed_ms = (now_monotonic_ns() - b->started_ns) / 1000000u;
        uint64_t delay;

        metrics_add(e->metrics, METRIC_COMMIT_RETRIES, reason, 1);
        if (e->is_stopping || b->attempt >= e->config->max_attempts ||
            (b->attempt >= 2 && elapsed_ms >= e->config->total_timeout_ms)) {
                /* After an attempt without a verdict, giving up cannot say "not committed". */
                if (b->has_unknown)
                        batch_fail(b, KEY_UNKNOWN, 504, "commit-state-unknown",
                                   "%s after %u attempts in %" PRIu64
                                   " ms; an earlier attempt got no verdict "
                                   "and snapshot %" PRId64
                                   " may be committed; retry with the same idempotency key "
                                   "to resolve it",
                                   message, b->attempt, elapsed_ms, b->snapshot_id);
                else
                        batch_fail(b, KEY_FAILED, status, type,
                                   "%s after %u attempts in %" PRIu64
                                   " ms; nothing was committed, retry with "
                                   "the same key",
                                   message, b->attempt, elapsed_ms);
                return;
        }
        delay = batch_backoff_ms(b);
        log_info("commit attempt %u/%u queue='%s' %s, retrying in %" PRIu64 " ms", b->attempt,
                 e->config->max_attempts, b->queue->label, reason, delay);
        batch_free_attempt(b);
        (void)uv_timer_start(&b->queue->retry_timer, batch_on_retry_timer, delay, 0);
}

/* "ns.table" (namespace levels joined by dots), the metric label of a table. */
static char *batch_table_label(const CommitRequest *r) {
        _cleanup_(buf_deinitp) Buf label = { 0 };

        buf_init(&label, 64 * 1024);
        for (size_t i = 0; i < r->target.n_namespace; i++)
                if (buf_printf(&label, "%s.", r->target.namespace[i]) < 0)
                        return NULL;
        if (buf_append_str(&label, r->target.table) < 0)
                return NULL;
        return (char *)buf_steal(&label, NULL);
}

/* Committed equality deletes on a v3 table: the deleted rows' lineage ends there, and an
 * update written as delete + insert gives the row a new _row_id. Allowed by policy, but seen. */
static void batch_count_lineage_break(const Batch *b, const Job *j) {
        const CommitRequest *r = j->writer->request;
        _cleanup_(freep) char *label = batch_table_label(r);

        metrics_add(b->queue->engine->metrics, METRIC_LINEAGE_BREAKS,
                    label ? label : r->target.table, 1);
        log_warning("committed equality deletes on v3 table='%s' key='%s' snapshot=%" PRId64
                    ": row lineage is not kept for rows they delete (policy allows it)",
                    label ? label : r->target.table, r->idempotency_key, b->snapshot_id);
}

static void batch_on_committed(const CatalogResult *result, void *userdata);

static int batch_send_commit(Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        int r;

        r = catalog_commit_table(e->catalog, (const char *const *)first->target.namespace,
                                 first->target.n_namespace, first->target.table, b->commit_request,
                                 b->commit_key[0] ? b->commit_key : NULL, batch_on_committed, b);
        if (r < 0)
                return r;
        e->n_in_flight++;
        return 0;
}

/* Resends an attempt that got no verdict, same body and Idempotency-Key: the catalog answers
 * with the original outcome when it had one. */
static void batch_on_replay_timer(uv_timer_t *t) {
        TableQueue *q = t->data;
        Batch *b = q->batch;

        if (!b)
                return;
        b->attempt++;
        if (batch_send_commit(b) < 0)
                batch_retry_later(b, "unknown", 504, "commit-state-unknown",
                                  "cannot resend the commit");
}

static void batch_on_committed(const CatalogResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;

        e->n_in_flight--;
        /* -ECANCELED (the client closed mid-call) and other local errors after the call was
         * accepted: the request may have reached the catalog, so the outcome is unknown. */
        switch (result->status < 0 ? CATALOG_E_STATE_UNKNOWN : result->status) {
        case 0:
                /* The catalog's answer is the table the next commit builds on: no load. */
                table_state_adopt(b->queue->state, result->body,
                                  b->jobs[0]->writer->request->branch, b->snapshot_id);
                live_index_committed(b);
                merge_attempt_outcome(b, /* is_committed= */ true);
                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "committed", 1);
                metrics_add(e->metrics, METRIC_COMMIT_SNAPSHOTS, NULL, 1);
                metrics_observe(e->metrics, METRIC_BATCH_REQUESTS, (double)b->n_jobs);
                if (b->table->format_version >= 3)
                        metrics_add(e->metrics, METRIC_ROWS_ASSIGNED, NULL,
                                    (double)(b->next_row_id - b->first_row_id));
                observe_committed(b);
                for (size_t i = 0; i < b->n_jobs; i++) {
                        json_t *receipt = receipt_build(b, b->jobs[i]);

                        table_state_add_key(b->queue->state,
                                            b->jobs[i]->writer->request->recorded_key,
                                            b->snapshot_id);
                        if (b->jobs[i]->breaks_lineage)
                                batch_count_lineage_break(b, b->jobs[i]);

                        if (!receipt)
                                receipt = json_pack("{s:s, s:I}", "status", "committed",
                                                    "snapshot-id", (json_int_t)b->snapshot_id);
                        engine_job_finish(b->jobs[i], KEY_COMMITTED, 200, receipt);
                }
                b->n_jobs = 0;
                list_cache_keep(b);
                batch_end(b);
                return;

        case CATALOG_E_CONFLICT:
                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "conflict", 1);
                table_state_drop(b->queue->state, "conflict");
                /* Known not committed: this attempt's list can go (the staged manifests stay). */
                engine_delete_file_async(e, b->props, TAKE_PTR(b->list_cleanup));
                batch_retry_later(b, "conflict", 503, "commit-conflict", result->message);
                return;

        case CATALOG_E_UNAVAILABLE:
                /* Nothing was sent, so nothing was applied. */
                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "unavailable", 1);
                engine_delete_file_async(e, b->props, TAKE_PTR(b->list_cleanup));
                batch_retry_later(b, "catalog-unavailable", 503, "catalog-unavailable",
                                  result->message);
                return;

        case CATALOG_E_STATE_UNKNOWN:
                /* The commit may have landed: its manifest list is never deleted. Resolve before
                 * anything else: replay the same request with the same Idempotency-Key where the
                 * catalog honours it (a landed commit answers 200 again), else reload; every
                 * reload looks for the batch's keys in the table history, and a new attempt
                 * reuses the snapshot id and asserts the head it saw, so the catalog's own
                 * requirement checks refuse a second landing. */
                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "unknown", 1);
                table_state_drop(b->queue->state, "unknown");
                b->has_unknown = true;
                merge_attempt_outcome(b, /* is_committed= */ false);
                for (size_t i = 0; i < b->n_jobs; i++)
                        b->jobs[i]->may_be_committed = true;
                free(TAKE_PTR(b->list_cleanup));
                log_warning("commit attempt %u queue='%s' snapshot=%" PRId64
                            " got no verdict (%s), resolving",
                            b->attempt, b->queue->label, b->snapshot_id, result->message);
                if (b->commit_key[0] && b->commit_request && !e->is_stopping &&
                    b->attempt < e->config->max_attempts) {
                        metrics_add(e->metrics, METRIC_COMMIT_RETRIES, "replay", 1);
                        (void)uv_timer_start(&b->queue->retry_timer, batch_on_replay_timer,
                                             batch_backoff_ms(b), 0);
                        return;
                }
                batch_retry_later(b, "unknown", 504, "commit-state-unknown", result->message);
                return;

        default: { /* NOT_FOUND, REJECTED: known not committed, and trying again cannot help */
                const char *type;
                int status = catalog_outcome_http_status(result->status, &type);

                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "rejected", 1);
                table_state_drop(b->queue->state, "rejected");
                engine_delete_file_async(e, b->props, TAKE_PTR(b->list_cleanup));
                /* Built on the table state, the refusal may be the state's fault (a format
                 * upgrade or other change that moved no head): once more, on a fresh load;
                 * a refusal of that one is final. */
                if (b->on_state) {
                        batch_retry_later(b, "rejected-on-state", 502, type, result->message);
                        return;
                }
                if (status == 404)
                        batch_fail(b, KEY_FAILED, status, type, "%s", result->message);
                else
                        batch_fail(b, KEY_FAILED, status, type,
                                   "the catalog refused the commit (HTTP %ld): %s",
                                   result->http_status, result->message);
                return;
        }
        }
}

/* The list entry of a staged manifest: counts and partition summaries from its entries; the
 * sequence numbers and snapshot id are filled in per attempt. */
static int manifest_file_from_staged(const StagedManifest *m, const char *location, int64_t length,
                                     ManifestFile *ret) {
        _cleanup_(manifest_file_deinit) ManifestFile f = {
                .length = length,
                .partition_spec_id = m->partition_spec_id,
                .content = m->content,
                .has_counts = true,
                .added_files_count = m->added_files_count,
                .added_rows_count = m->added_rows_count,
                .has_partitions = m->has_partitions,
        };

        f.path = strdup(location);
        if (!f.path)
                return -ENOMEM;
        if (m->has_partitions && m->n_partitions > 0) {
                f.partitions = calloc(m->n_partitions, sizeof(*f.partitions));
                if (!f.partitions)
                        return -ENOMEM;
                f.n_partitions = m->n_partitions;
                for (size_t i = 0; i < m->n_partitions; i++) {
                        const PartitionFieldSummary *from = &m->partitions[i];
                        PartitionFieldSummary *to = &f.partitions[i];

                        to->contains_null = from->contains_null;
                        to->has_contains_nan = from->has_contains_nan;
                        to->contains_nan = from->contains_nan;
                        to->has_lower_bound = from->has_lower_bound;
                        to->has_upper_bound = from->has_upper_bound;
                        buf_init(&to->lower_bound, from->lower_bound.max);
                        buf_init(&to->upper_bound, from->upper_bound.max);
                        if ((from->has_lower_bound &&
                             buf_append(&to->lower_bound, from->lower_bound.data,
                                        from->lower_bound.len) < 0) ||
                            (from->has_upper_bound &&
                             buf_append(&to->upper_bound, from->upper_bound.data,
                                        from->upper_bound.len) < 0))
                                return -ENOMEM;
                }
        }
        *ret = f;
        f = (ManifestFile){ 0 };
        return 0;
}

/* The counts of a manifest already counted by an earlier attempt of this batch, applied. */
static bool batch_apply_counted(Batch *b, ManifestFile *m) {
        for (size_t i = 0; i < b->n_counted; i++)
                if (strcmp(b->counted[i].path, m->path) == 0) {
                        manifest_counts_apply(&b->counted[i].counts, m);
                        return true;
                }
        return false;
}

/* Thread pool: the real counts of a manifest-list entry whose counts are null (v1 lists of
 * old writers: "unknown, assume non-zero"). Taking them as 0 would give two manifests the same
 * row-id range (iceberg-go #1627); Java's V3Writer fails on them. Read once per batch. */
static int batch_count_manifest(Batch *b, ManifestFile *m, const Buf *bytes) {
        const StorageConfig *storage = b->queue->engine->storage_config;
        const ManifestLimits limits = { .max_entries = storage->max_manifest_entries };
        CountedManifest *grown;
        ManifestCounts counts;
        int r;

        if (batch_apply_counted(b, m))
                return 0;
        r = manifest_count_entries(buf_slice(bytes), &limits, &counts, &b->error);
        if (r < 0)
                return error_prefix(
                        &b->error, r == -ENOMEM || r == -EIO ? r : -EINVAL,
                        "counting the rows of manifest '%s' (its list entry has null counts)",
                        m->path);

        grown = reallocarray(b->counted, b->n_counted + 1, sizeof(*b->counted));
        if (!grown)
                return -ENOMEM;
        b->counted = grown;
        b->counted[b->n_counted].path = strdup(m->path);
        if (!b->counted[b->n_counted].path)
                return -ENOMEM;
        b->counted[b->n_counted++].counts = counts;
        manifest_counts_apply(&counts, m);
        return 0;
}

/* Thread pool, step 1: parse the parent's manifest list (read by the loop), put the staged
 * manifests first, and find the entries whose counts must be read from their manifests. */
static int batch_assemble_list(Batch *b) {
        size_t n = 0, n_missing = 0;
        int r;

        if (b->parent_list_location && !b->has_parent_files) {
                r = manifest_list_read(buf_slice(&b->parent_bytes), &b->parent_files,
                                       &b->n_parent_files, &b->error);
                if (r < 0)
                        return error_prefix(&b->error, r, "parent manifest list '%s'",
                                            b->parent_list_location);
                /* parent_bytes stays until the list is written: batch_append_list copies it. */
        }

        b->list = calloc(b->n_staged + b->n_parent_files + 1, sizeof(*b->list));
        if (!b->list)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_jobs; i++) {
                Job *j = b->jobs[i];

                j->list_offset = n;
                for (size_t k = 0; k < j->n_manifests; k++) {
                        r = manifest_file_from_staged(j->manifests[k],
                                                      owned_manifest_location(j, k),
                                                      j->manifest_lengths[k], &b->list[n]);
                        if (r < 0) {
                                b->n_list = n;
                                return r;
                        }
                        /* Inherited by the entries through the list (spec: sequence numbers and
                         * snapshot id of ADDED entries come from the manifest list). */
                        b->list[n].sequence_number = b->sequence_number;
                        b->list[n].min_sequence_number = b->sequence_number;
                        b->list[n].has_added_snapshot_id = true;
                        b->list[n].added_snapshot_id = b->snapshot_id;
                        n++;
                }
        }
        /* The parent's entries follow, copied as they are (the list takes them over). Their
         * encoded bytes can be copied too unless this attempt fills in what one lacks: counts
         * (below) or a v3 data manifest's first_row_id (lineage_assign). */
        b->is_parent_unchanged = b->parent_list_location != NULL;
        for (size_t i = 0; i < b->n_parent_files; i++) {
                const ManifestFile *m = &b->parent_files[i];

                if (!m->has_counts || (b->table->format_version >= 3 &&
                                       m->content == MANIFEST_CONTENT_DATA && !m->has_first_row_id))
                        b->is_parent_unchanged = false;
        }
        if (b->n_parent_files > 0)
                memcpy(&b->list[n], b->parent_files, b->n_parent_files * sizeof(*b->parent_files));
        n += b->n_parent_files;
        free(b->parent_files);
        b->parent_files = NULL;
        b->n_parent_files = 0;
        b->n_list = n;

        /* Every list written needs counts; a v3 list also derives row-id ranges from them. */
        for (size_t i = 0; i < b->n_list; i++)
                if (!b->list[i].has_counts && !batch_apply_counted(b, &b->list[i]))
                        n_missing++;
        if (n_missing == 0)
                return 0;
        b->to_count = calloc(n_missing, sizeof(*b->to_count));
        b->count_bytes = calloc(n_missing, sizeof(*b->count_bytes));
        b->io = calloc(n_missing, sizeof(*b->io));
        if (!b->to_count || !b->count_bytes || !b->io)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_list; i++)
                if (!b->list[i].has_counts)
                        b->to_count[b->n_to_count++] = i;
        return 0;
}

/* Where a job's k-th manifest's entry e stands, for messages. */
static void batch_describe(const Job *j, size_t k, char *out, size_t size) {
        if (k < j->writer->request->n_manifests)
                (void)snprintf(out, size, "staged-manifests[%zu] '%s'", k,
                               j->writer->request->manifests[k]);
        else
                (void)snprintf(out, size, "'data-files'");
}

static const char *batch_last_component(const char *location) {
        const char *slash = strrchr(location, '/');

        return slash ? slash + 1 : location;
}

static int batch_compare_strings(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Thread pool: one data file once (issue: a manifest registered twice, or two requests naming
 * one file, would give the same rows two row-id ranges). Flags the later request of each clash
 * (refusal_type, error); returns 1 when any was flagged, 0, or -ENOMEM. */
static int batch_find_repeats(Batch *b) {
        _cleanup_(duplicates_deinit) Duplicates manifests = { 0 }, files = { 0 };
        _cleanup_(freep) const char **bases = NULL;
        _cleanup_(freep) char(*ids)[OWNED_COPY_ID_MAX] = NULL;
        const DuplicatesRef *first, *again;
        size_t pos = 0, n_bases = 0, n_ids = 0;
        int r = 0, found = 0;

        /* Staged manifests: the parent's entries (owner 0, so they sort first; in the list
         * after the staged ones) against the batch's. A staged manifest is in the table as
         * itself (committed by reference) or as a copy of ours, whose name starts with the id of
         * its staged location (owned.c): both are looked for. A parent may list 100,000
         * manifests and the batch a few: only the parent's entries whose last path component,
         * or copy id, is one of the batch's are compared, spelled canonically (which never
         * changes a file's last component). */
        bases = calloc(2 * b->n_staged + 1, sizeof(*bases));
        ids = calloc(b->n_staged + 1, sizeof(*ids));
        if (!bases || !ids)
                return -ENOMEM;
        for (size_t i = 0; r == 0 && i < b->n_jobs; i++)
                for (size_t k = 0; r == 0 && k < b->jobs[i]->writer->request->n_manifests; k++) {
                        const char *location = b->jobs[i]->writer->request->manifests[k];

                        bases[n_bases++] = batch_last_component(location);
                        r = duplicates_add(&manifests, location, i + 1, k, 0);
                        if (r == 0)
                                r = owned_copy_id(location, ids[n_ids]);
                        if (r == 0) {
                                bases[n_bases++] = ids[n_ids];
                                r = duplicates_add(&manifests, ids[n_ids++], i + 1, k, 0);
                        }
                }
        qsort(bases, n_bases, sizeof(*bases), batch_compare_strings);
        for (size_t i = b->n_staged; r == 0 && i < b->n_list; i++) {
                const char *base = batch_last_component(b->list[i].path);
                char id[OWNED_COPY_ID_MAX];

                if (bsearch(&base, bases, n_bases, sizeof(*bases), batch_compare_strings))
                        r = duplicates_add(&manifests, b->list[i].path, 0, i, 0);
                base = id;
                if (r == 0 && owned_copy_id_of(b->list[i].path, id) &&
                    bsearch(&base, bases, n_bases, sizeof(*bases), batch_compare_strings))
                        r = duplicates_add(&manifests, id, 0, i, 0);
        }
        /* Data files: each request's against the others' (within one request: at intake). */
        for (size_t i = 0; r == 0 && i < b->n_jobs; i++)
                for (size_t k = 0; r == 0 && k < b->jobs[i]->n_manifests; k++)
                        for (size_t e = 0; r == 0 && e < b->jobs[i]->manifests[k]->n_files; e++)
                                r = duplicates_add(&files, b->jobs[i]->manifests[k]->files[e].path,
                                                   i, k, e);
        if (r < 0)
                return r;
        duplicates_sort(&manifests);
        duplicates_sort(&files);
        while (duplicates_next(&manifests, &pos, &first, &again)) {
                Job *j;
                char where[512];

                if (first->owner != 0 || again->owner == 0)
                        continue;
                j = b->jobs[again->owner - 1];
                if (j->refusal_type)
                        continue;
                batch_describe(j, again->manifest, where, sizeof(where));
                j->refusal_type = "manifest-already-committed";
                (void)error_set(&j->error, -EEXIST,
                                "%s is already in the table (added by snapshot %" PRId64
                                "): its files would be "
                                "committed twice",
                                where, b->list[first->manifest].added_snapshot_id);
                found = 1;
        }
        pos = 0;
        while (duplicates_next(&files, &pos, &first, &again)) {
                Job *j = b->jobs[again->owner];
                char where[512];

                if (first->owner == again->owner || j->refusal_type ||
                    b->jobs[first->owner]->refusal_type)
                        continue;
                batch_describe(j, again->manifest, where, sizeof(where));
                j->refusal_type = "duplicate-data-file";
                (void)error_set(
                        &j->error, -EEXIST,
                        "%s entry %zu '%s' is a data file another request of this batch commits "
                        "(as '%s'); retry once that one is answered",
                        where, again->entry,
                        j->manifests[again->manifest]->files[again->entry].path,
                        b->jobs[first->owner]
                                ->manifests[first->manifest]
                                ->files[first->entry]
                                .path);
                found = 1;
        }
        return found;
}

/* Thread pool: the new list as the staged entries in front of the parent's blocks, copied as
 * they are (iceberg/manifest_list_append.h), instead of decoding and encoding every entry of
 * the table again. MANIFEST_LIST_APPEND_E_WHOLE when the list is to be written whole. */
static int batch_append_list(Batch *b, const ManifestListHeader *header) {
        int r;

        /* A parent entry manifest_list_write() refuses is refused the same way: by it. */
        if (manifest_list_check(header, b->list + b->n_staged, b->n_list - b->n_staged,
                                /* e= */ NULL) < 0)
                return MANIFEST_LIST_APPEND_E_WHOLE;
        r = manifest_list_append(header, b->list, b->n_staged, buf_slice(&b->parent_bytes),
                                 &b->list_bytes, &b->error);
        if (r == 0)
                log_debug("manifest list written incrementally queue='%s' new=%zu parent=%zu",
                          b->queue->label, b->n_staged, b->n_list - b->n_staged);
        else if (r == MANIFEST_LIST_APPEND_E_WHOLE)
                log_debug("manifest list written whole queue='%s': %s", b->queue->label,
                          b->error.message);
        return r;
}

/* Thread pool, step 2: count what was read, assign row ids and serialize the new list. */
static int batch_finish_list(Batch *b) {
        const CommitEngine *e = b->queue->engine;
        ManifestListHeader header;
        int r;

        for (size_t i = 0; i < b->n_to_count; i++) {
                r = batch_count_manifest(b, &b->list[b->to_count[i]], &b->count_bytes[i]);
                if (r < 0)
                        return r;
                buf_deinit(&b->count_bytes[i]);
        }
        if (b->table->format_version >= 3) {
                r = lineage_assign(b->list, b->n_list, b->first_row_id, &b->next_row_id, &b->error);
                if (r < 0)
                        return r;
        }
        header = (ManifestListHeader){
                .format_version = b->table->format_version,
                .snapshot_id = b->snapshot_id,
                .has_parent_snapshot_id = b->parent.exists,
                .parent_snapshot_id = b->parent.snapshot_id,
                .sequence_number = b->sequence_number,
                .has_first_row_id = b->table->format_version >= 3,
                .first_row_id = b->first_row_id,
        };
        /* The list must stay readable by the next attempt, whose parent read has this bound. */
        buf_init(&b->list_bytes, (size_t)e->storage_config->max_manifest_bytes);
        r = MANIFEST_LIST_APPEND_E_WHOLE;
        if (b->is_parent_unchanged)
                r = batch_append_list(b, &header);
        else if (b->parent_list_location)
                log_debug("manifest list written whole queue='%s': this attempt changed "
                          "parent entries (counts, row ids or a merge)",
                          b->queue->label);
        if (r == MANIFEST_LIST_APPEND_E_WHOLE)
                r = manifest_list_write(&header, b->list, b->n_list, &b->list_bytes, &b->error);
        buf_deinit(&b->parent_bytes);
        return r;
}

static void batch_assemble_work(uv_work_t *w) {
        Batch *b = w->data;

        b->work_status = batch_assemble_list(b);
        if (b->work_status == 0)
                b->work_status = batch_find_repeats(b);
        /* A merge step changes the list first (merge.c). */
        if (b->work_status == 0 && b->n_to_count == 0 && !merge_is_possible(b))
                b->work_status = batch_finish_list(b);
}

static void batch_finish_work(uv_work_t *w) {
        Batch *b = w->data;

        b->work_status = batch_finish_list(b);
}

static void batch_list_ready(Batch *b);

void batch_storage_failed(Batch *b, int status, const char *what) {
        const char *type;
        int http = engine_storage_http_status(status, &type, "storage-error");

        engine_delete_file_async(b->queue->engine, b->props, TAKE_PTR(b->list_cleanup));
        if (http == 503) {
                batch_retry_later(b, "storage-unavailable", 503, type, what);
                return;
        }
        /* The table's own files are unreadable: not the writer's fault, and not ours to fix. */
        batch_fail(b, KEY_FAILED, http == 422 ? 502 : http, type, "%s", what);
}

static void batch_work_after(uv_work_t *w, int status);

static int batch_queue_work(Batch *b, uv_work_cb work) {
        CommitEngine *e = b->queue->engine;
        int r;

        b->work.data = b;
        b->work_status = 0;
        r = uv_queue_work(e->loop, &b->work, work, batch_work_after);
        if (r < 0)
                return r;
        e->n_in_flight++;
        return 0;
}

static void batch_count_pump(Batch *b);

static void batch_on_count_read(StorageResult *result, void *userdata) {
        IoSlot *slot = userdata;
        Batch *b = slot->batch;
        CommitEngine *e = b->queue->engine;

        e->n_in_flight--;
        b->n_io_done++;
        if (result->status < 0 && b->io_status == 0) {
                b->io_status = result->status;
                (void)error_set(&b->error, result->status,
                                "counting the rows of manifest '%s' (its list entry has "
                                "null counts): %s",
                                b->list[b->to_count[slot->index]].path, result->error.message);
        } else if (result->status == 0) {
                b->count_bytes[slot->index] = result->data;
                buf_init(&result->data, 0);
        }
        batch_count_pump(b);
        engine_maybe_stopped(e);
}

/* Reads the manifests to count, a few at a time; then counts them on the thread pool. */
static void batch_count_pump(Batch *b) {
        CommitEngine *e = b->queue->engine;
        StorageContext ctx = engine_storage_context(e, b->props, b->started_ns);
        int r;

        while (b->io_status == 0 && b->n_io_started < b->n_to_count &&
               b->n_io_started - b->n_io_done < e->storage_config->s3.max_concurrent_requests) {
                size_t i = b->n_io_started;

                b->io[i] = (IoSlot){ .batch = b, .index = i };
                r = storage_read(e->storage, &ctx, b->list[b->to_count[i]].path,
                                 e->storage_config->max_manifest_bytes, batch_on_count_read,
                                 &b->io[i], &b->error);
                if (r < 0) {
                        b->io_status = r;
                        break;
                }
                b->n_io_started++;
                e->n_in_flight++;
        }
        if (b->n_io_done < b->n_io_started)
                return;
        if (b->io_status != 0) {
                batch_storage_failed(b, b->io_status, b->error.message);
                return;
        }
        r = batch_queue_work(b, batch_finish_work);
        if (r < 0)
                batch_fail(b, KEY_FAILED, 503, "internal", "cannot queue work: %s", uv_strerror(r));
}

static void batch_work_after(uv_work_t *w, int status) {
        Batch *b = w->data;
        CommitEngine *e = b->queue->engine;
        int r = status < 0 ? status : b->work_status;

        e->n_in_flight--;
        if (r == 1) {
                batch_refuse_flagged(b);
                return;
        }
        if (r < 0) {
                /* The list is unusable: a definite failure, nothing sent. */
                if (r == -ENOMEM || status < 0)
                        batch_fail(b, KEY_FAILED, 503, "storage-failed",
                                   "cannot build the manifest list: %s",
                                   b->error.message[0] ? b->error.message : strerror(-r));
                else
                        batch_fail(b, KEY_FAILED, 422, "invalid-table-state", "%s",
                                   b->error.message);
                return;
        }
        /* Once per attempt, after the list is assembled: the data files against the table. */
        if (!b->live.is_checked && live_index_check_start(b))
                return;
        batch_continue(b);
}

void batch_continue(Batch *b) {
        if (merge_start(b))
                return;
        if (b->list_bytes.data) {
                batch_list_ready(b);
                return;
        }
        batch_count_pump(b);
}

static bool batch_recheck_on_load(Batch *b);

void batch_refuse_flagged(Batch *b) {
        /* On the table state, a refusal waits for a fresh load (batch_refuse_job): the checks
         * run again there, so the flags go. */
        if (b->on_state) {
                for (size_t i = 0; i < b->n_jobs; i++)
                        b->jobs[i]->refusal_type = NULL;
                b->needs_fresh_table = true;
                (void)batch_recheck_on_load(b);
                return;
        }
        /* Requests naming what the table or the batch holds already are answered; the others
         * go on in a new attempt, whose list holds none of the refused. */
        for (size_t i = 0; i < b->n_jobs;) {
                Job *j = b->jobs[i];

                if (!j->refusal_type) {
                        i++;
                        continue;
                }
                batch_remove_job(b, i);
                if (strcmp(j->refusal_type, "data-file-already-committed") == 0)
                        metrics_add(b->queue->engine->metrics, METRIC_LIVE_FILE_REFUSALS, NULL, 1);
                log_warning("key='%s' refused: %s", j->writer->request->idempotency_key,
                            j->error.message);
                engine_job_fail(j, 422, j->refusal_type, "%s", j->error.message);
        }
        batch_free_attempt(b); /* nothing of this attempt was written */
        if (b->n_jobs == 0) {
                batch_end(b);
                return;
        }
        batch_attempt_start(b);
}

static void batch_on_parent_read(StorageResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;

        e->n_in_flight--;
        if (result->status < 0) {
                batch_storage_failed(b, result->status, result->error.message);
                return;
        }
        b->parent_bytes = result->data;
        buf_init(&result->data, 0);
        batch_assemble_start(b);
}

static void batch_on_list_written(StorageResult *result, void *userdata);

/* The list is built: write it under a name no other attempt uses, never replacing one. */
static void batch_list_ready(Batch *b) {
        CommitEngine *e = b->queue->engine;
        StorageContext ctx = engine_storage_context(e, b->props, b->started_ns);
        int r;

        r = storage_write(e->storage, &ctx, b->list_location, buf_slice(&b->list_bytes),
                          STORAGE_WRITE_IF_ABSENT, batch_on_list_written, b, &b->error);
        if (r < 0) {
                batch_storage_failed(b, r, b->error.message);
                return;
        }
        e->n_in_flight++;
}

static void batch_on_list_written(StorageResult *result, void *userdata) {
        Batch *b = userdata;

        b->queue->engine->n_in_flight--;
        if (result->status < 0) {
                char message[sizeof(b->error.message) + 64];

                (void)snprintf(message, sizeof(message), "cannot write the manifest list: %s",
                               result->error.message);
                batch_storage_failed(b, result->status == -EEXIST ? -EAGAIN : result->status,
                                     message);
                return;
        }
        batch_build_after(b);
}

static void batch_build_after(Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        _cleanup_(freep) char *keys = NULL, *counts = NULL;
        json_t *summary = NULL, *request = NULL, *writer_props, *parent_summary;
        SnapshotAdded added = { 0 };
        SnapshotRecord record;
        SnapshotSpec spec;
        Buf key_list, count_list;
        int r;

        /* "principal/key" per request, comma-separated, and its manifests' count */
        buf_init(&key_list, b->n_jobs * (AUTH_PRINCIPAL_MAX + 1 + COMMIT_KEY_MAX + 1) + 1);
        buf_init(&count_list, b->n_jobs * (10 + 1) + 1);
        writer_props = json_object();
        r = writer_props ? 0 : -ENOMEM;
        for (size_t i = 0; i < b->n_jobs; i++) {
                const Job *j = b->jobs[i];

                /* The key record is what makes a retry safe: it must be complete or absent.
                 * With authentication on, keys are recorded as "principal/key": one key of two
                 * principals is two requests in history too. The counts place each request's
                 * manifests in the list (they come first, in this order), for its receipt. */
                if (r == 0)
                        r = buf_printf(&key_list, "%s%s", i ? "," : "",
                                       j->writer->request->recorded_key);
                if (r == 0)
                        r = buf_printf(&count_list, "%s%zu", i ? "," : "", j->n_manifests);
                if (r == 0 &&
                    json_object_update(writer_props, j->writer->request->snapshot_properties) < 0)
                        r = -ENOMEM;
                for (size_t k = 0; k < j->n_manifests; k++) {
                        const StagedManifest *m = j->manifests[k];

                        /* A delete manifest holds only equality deletes (staging rules): its
                         * rows are deletes, never added records (Java SnapshotSummary). */
                        if (m->content == MANIFEST_CONTENT_DELETES) {
                                added.equality_delete_files += m->n_equality_delete_files;
                                added.equality_deletes += m->added_rows_count;
                        } else {
                                added.data_files += m->added_files_count;
                                added.records += m->added_rows_count;
                        }
                        added.files_size += m->added_files_size;
                }
        }
        keys = r == 0 ? (char *)buf_steal(&key_list, NULL) : NULL;
        counts = r == 0 ? (char *)buf_steal(&count_list, NULL) : NULL;
        buf_deinit(&key_list);
        buf_deinit(&count_list);
        /* Replays resend this request as it is: the attempt that built it is the one its
         * receipts name, whichever daemon rebuilds them. */
        b->built_attempt = b->attempt;
        record = (SnapshotRecord){
                .keys = keys,
                .manifest_counts = counts,
                .branch = first->branch,
                .attempt = b->built_attempt,
        };
        added.manifests_created = (int64_t)b->n_staged;
        added.manifests_kept = (int64_t)(b->n_list - b->n_staged);
        merge_summary(b, &added);

        /* Totals continue the parent's (Java restarts them at 0 on a new branch, though the
         * branch holds the parent's data too). */
        parent_summary = b->parent.snapshot ? json_object_get(b->parent.snapshot, "summary") : NULL;
        r = !keys || !counts ? -ENOMEM
                             : snapshot_summary_build(parent_summary, &added, writer_props, &record,
                                                      &summary, &b->error);
        json_decref(writer_props);
        if (r < 0) {
                engine_delete_file_async(e, b->props, TAKE_PTR(b->list_cleanup));
                batch_fail(b, KEY_FAILED, 500, "internal", "cannot build the snapshot summary: %s",
                           b->error.message);
                return;
        }

        spec = (SnapshotSpec){
                .snapshot_id = b->snapshot_id,
                .has_parent = b->parent.exists,
                .parent_snapshot_id = b->parent.snapshot_id,
                .sequence_number = b->sequence_number,
                .is_v1 = b->table->format_version == 1,
                .timestamp_ms = b->timestamp_ms,
                .has_schema_id = b->table->has_current_schema_id,
                .schema_id = b->table->current_schema_id,
                .manifest_list = b->list_location,
                .has_first_row_id = b->table->format_version >= 3,
                .first_row_id = b->first_row_id,
                .added_rows = b->next_row_id - b->first_row_id,
                .summary = summary,
        };
        r = snapshot_commit_request_build(b->table, first->branch, &b->head, &spec, &request);
        json_decref(summary);
        if (r < 0) {
                engine_delete_file_async(e, b->props, TAKE_PTR(b->list_cleanup));
                batch_fail(b, KEY_FAILED, 503, "out-of-memory", "cannot build the commit request");
                return;
        }

        /* Each attempt is a new logical operation for the catalog: a new key (REST spec); a
         * replay of this same attempt reuses it. */
        b->commit_request = request;
        if (catalog_supports_idempotency(e->catalog))
                uuid_v7_string(b->commit_key);
        r = batch_send_commit(b);
        if (r < 0) {
                engine_delete_file_async(e, b->props, TAKE_PTR(b->list_cleanup));
                batch_retry_later(b, "catalog-unavailable", 503, "catalog-unavailable",
                                  "cannot send the commit");
                return;
        }
}

/* The equality-delete policy of the table: its property icecommit.equality-deletes, else the
 * daemon's [lineage] equality-deletes. -EINVAL for a property value that is neither. */
static int batch_equality_delete_policy(const Batch *b, bool *ret_allow) {
        const char *v = table_property(b->table, TABLE_PROPERTY_EQUALITY_DELETES);

        if (!v) {
                *ret_allow = b->queue->engine->config->allow_equality_deletes;
                return 0;
        }
        if (strcmp(v, "allow") != 0 && strcmp(v, "reject") != 0)
                return -EINVAL;
        *ret_allow = strcmp(v, "allow") == 0;
        return 0;
}

/* Whether a data file may belong to the table: under its location, its write.data.path (or
 * the older write.folder-storage.path and write.object-storage.path), or one of the table
 * property icecommit.allowed-prefixes. A staged manifest must not commit another table's files. */
static bool batch_file_is_confined(const TableMetadata *t, const char *path) {
        _cleanup_(freep) char *root = probe_confinement_root(t, path); /* the rule is probe.c's */

        return root != NULL;
}

/* Checks one staged manifest of a job against the table as loaded by this attempt (the table
 * may have changed since intake and between attempts). On a violation answers the job and
 * returns false. */
/* Refuses one request for what the attempt's table says (answers it), except on the table
 * state: a refusal must never rest on a stale table (a property or policy changed since, with no
 * snapshot to tell), so the attempt gets a fresh load first and checks again there. */
_printf_(5, 6) static void batch_refuse_job(Batch *b, Job *j, int status, const char *type,
                                            const char *fmt, ...) {
        char message[2048];
        va_list ap;

        if (b->on_state) {
                b->needs_fresh_table = true;
                return;
        }
        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        engine_job_fail(j, status, type, "%s", message);
}

static bool batch_check_manifest(Batch *b, Job *j, size_t k) {
        const StagedManifest *m = j->manifests[k];
        /* As the writer named it (icecommitd's copy lies in the metadata directory). */
        const char *location = k < j->writer->request->n_manifests
                                       ? j->writer->request->manifests[k]
                                       : owned_manifest_location(j, k);
        json_t *current;
        bool allow;

        /* Ours (written for data-files, after the staged ones) lives in the metadata directory,
         * which write.metadata.path may put elsewhere. */
        if (k < j->writer->request->n_manifests &&
            !storage_location_is_within(location, b->table->location)) {
                batch_refuse_job(b, j, 422, "invalid-manifest",
                                 "staged-manifests[%zu] '%s' is outside the table location '%s'", k,
                                 location, b->table->location);
                return false;
        }
        if (!table_has_partition_spec(b->table, m->partition_spec_id)) {
                batch_refuse_job(b, j, 422, "invalid-manifest",
                                 "staged-manifests[%zu] '%s' uses partition spec %d, which the "
                                 "table does not have",
                                 k, location, m->partition_spec_id);
                return false;
        }
        if (m->format_version == 1 && b->table->format_version != 1) {
                /* Format 1 entries carry no sequence numbers: v2+ writers must write v2+
                 * manifests (spec "Writer requirements"). */
                batch_refuse_job(b, j, 422, "invalid-manifest",
                                 "staged-manifests[%zu] '%s' is a format-version 1 manifest; the "
                                 "table is version %d and "
                                 "takes version 2 or 3 manifests",
                                 k, location, b->table->format_version);
                return false;
        }
        if (m->format_version > b->table->format_version) {
                batch_refuse_job(b, j, 422, "invalid-manifest",
                                 "staged-manifests[%zu] '%s' is a format-version %d manifest; the "
                                 "table is version %d",
                                 k, location, m->format_version, b->table->format_version);
                return false;
        }

        for (size_t e = 0; e < m->n_files; e++)
                if (!batch_file_is_confined(b->table, m->files[e].path)) {
                        /* Said without asking storage anything about the file. */
                        batch_refuse_job(b, j, 422, "invalid-manifest",
                                         "staged-manifests[%zu] '%s' entry %zu '%s' is outside the "
                                         "table location '%s' (and "
                                         "write.data.path and the table property %s)",
                                         k, location, e, m->files[e].path, b->table->location,
                                         TABLE_PROPERTY_ALLOWED_PREFIXES);
                        return false;
                }
        /* The schema the files were written with must still map onto the table's, by field id.
         * Java always writes it; a manifest without one cannot be checked and is taken as is. */
        current = table_current_schema(b->table);
        if (m->schema_json) {
                _cleanup_(json_decrefp) json_t *written = json_loads(m->schema_json, 0, NULL);
                Error error = { 0 };
                int r;

                if (!written) {
                        batch_refuse_job(
                                b, j, 422, "invalid-manifest",
                                "staged-manifests[%zu] '%s': its schema metadata is not JSON", k,
                                location);
                        return false;
                }
                if (!current) {
                        batch_refuse_job(b, j, 502, "catalog-bad-metadata",
                                         "the table metadata has no current schema");
                        return false;
                }
                r = schema_compat_check(written, current, b->table->format_version, &error);
                if (r == SCHEMA_COMPAT_E_INCOMPATIBLE) {
                        batch_refuse_job(b, j, 422, "schema-mismatch",
                                         "staged-manifests[%zu] '%s' was written with a schema the "
                                         "table's current schema "
                                         "(id %d) no longer matches: %s",
                                         k, location, b->table->current_schema_id, error.message);
                        return false;
                }
                if (r < 0) {
                        batch_refuse_job(b, j, r == -ENOMEM ? 503 : 422,
                                         r == -ENOMEM ? "out-of-memory" : "invalid-manifest",
                                         "staged-manifests[%zu] '%s': cannot compare schemas: %s",
                                         k, location, error.message);
                        return false;
                }
        }

        /* Guardrail: equality deletes cannot keep v3 row lineage. Format 2 has none to break. */
        if (m->content != MANIFEST_CONTENT_DELETES || b->table->format_version < 3)
                return true;
        if (batch_equality_delete_policy(b, &allow) < 0) {
                batch_refuse_job(b, j, 422, "lineage-guardrail",
                                 "staged-manifests[%zu] '%s' holds equality deletes and the table "
                                 "property '%s' is '%s', "
                                 "expected 'reject' or 'allow'",
                                 k, location, TABLE_PROPERTY_EQUALITY_DELETES,
                                 table_property(b->table, TABLE_PROPERTY_EQUALITY_DELETES));
                return false;
        }
        if (!allow) {
                batch_refuse_job(
                        b, j, 422, "lineage-guardrail",
                        "staged-manifests[%zu] '%s' holds %" PRId32
                        " equality delete file(s); on a format-version 3 "
                        "table equality deletes cannot keep row lineage, and the policy is "
                        "reject (table property "
                        "'%s' or [lineage] equality-deletes)",
                        k, location, m->n_equality_delete_files, TABLE_PROPERTY_EQUALITY_DELETES);
                return false;
        }
        j->breaks_lineage = true;
        return true;
}

static void batch_check_jobs(Batch *b, size_t from) {
        for (size_t i = from; i < b->n_jobs;) {
                Job *j = b->jobs[i];
                const CommitRequest *r = j->writer->request;
                /* Found: committed by an earlier attempt (possibly of another daemon, or before
                 * a crash): answer it, never commit it twice. */
                json_t *done = key_index_find(&b->queue->state->keys, b->table, r->recorded_key,
                                              b->queue->engine->config->history_lookback);
                bool bad = false;

                if (done) {
                        int64_t id = 0;

                        (void)table_json_get_i64(done, "snapshot-id", &id);
                        log_notice("key='%s' already committed in snapshot %" PRId64
                                   ", not committing it again",
                                   r->idempotency_key, id);
                        batch_remove_job(b, i);
                        /* Committed by another request with this key (or an attempt of this
                         * one, which then had no verdict): what icecommitd wrote for this one
                         * is in no snapshot unless an attempt of ours may have landed. */
                        if (!j->may_be_committed)
                                owned_delete(j, j->props ? j->props : b->props);
                        history_receipt_answer_job(j, done, b->table,
                                                   j->props ? j->props : b->props);
                        continue;
                }
                j->breaks_lineage = false;
                /* A failed check frees the job: test `bad` before touching it again. */
                for (size_t k = 0; !bad && k < j->n_manifests; k++)
                        bad = !batch_check_manifest(b, j, k);
                if (bad && b->needs_fresh_table)
                        return; /* not answered: the caller loads and checks again */
                if (bad)
                        batch_remove_job(b, i);
                else
                        i++;
        }
}

/* A refusal of the whole batch for what the table says: on the table state, the same attempt
 * again on a fresh load instead (batch_refuse_job). Returns true when it went that way. */
static bool batch_recheck_state(Batch *b) {
        if (!b->on_state)
                return false;
        b->needs_fresh_table = true;
        return batch_recheck_on_load(b);
}

/* After batch_check_jobs() on the table state wanted to refuse a request: the same attempt
 * again on a fresh load. Returns true when it went that way. */
static bool batch_recheck_on_load(Batch *b) {
        if (!b->needs_fresh_table)
                return false;
        b->needs_fresh_table = false;
        log_info("queue='%s' a request would be refused on the table state: loading the table "
                 "to check again",
                 b->queue->label);
        table_state_drop(b->queue->state, "recheck");
        batch_free_attempt(b);
        b->attempt--; /* the same attempt, nothing was sent */
        batch_attempt_start(b);
        return true;
}

static void batch_with_table(Batch *b);

static void batch_on_loaded(const CatalogResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;
        const char *type;
        int r;

        e->n_in_flight--;
        if (result->status != 0) {
                table_state_drop(b->queue->state, "failed");
                r = catalog_outcome_http_status(result->status, &type);
                if (r == 503)
                        batch_retry_later(b, "catalog-unavailable", r, type, result->message);
                else if (r == 404)
                        batch_fail(b, KEY_FAILED, r, type, "%s", result->message);
                else
                        batch_fail(b, KEY_FAILED, r, type,
                                   "loading the table failed (HTTP %ld): %s", result->http_status,
                                   result->message);
                return;
        }

        r = table_metadata_parse(result->body, &b->table, &b->error);
        if (r >= 0)
                r = storage_props_new(result->properties, result->body, &b->props, &b->error);
        if (r < 0) {
                batch_fail(b, KEY_FAILED, r == -ENOMEM ? 503 : 502, "catalog-bad-metadata", "%s",
                           b->error.message);
                return;
        }
        (void)table_state_loaded(b->queue->state, result->body, b->table, b->props);
        batch_with_table(b);
}

/* The attempt has its table (loaded, or the state): checks, the parent, its manifest list. */
static void batch_with_table(Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        const char *type;
        json_t *list;
        int r;

        /* Before anything is read or written for it: the table's location and storage
         * properties may have changed since intake (another engine), and the roots on SIGHUP. */
        r = engine_check_table_roots(e, b->table, &type, &b->error);
        if (r > 0) {
                if (batch_recheck_state(b))
                        return;
                /* An earlier attempt without a verdict may have landed: refusing now cannot
                 * say "not committed"; the key stays open until a retry finds it. */
                if (b->has_unknown)
                        batch_fail(b, KEY_UNKNOWN, 504, "commit-state-unknown",
                                   "%s; an earlier attempt got no verdict and snapshot %" PRId64
                                   " may be committed; retry with the same idempotency key "
                                   "once the table is within the roots",
                                   b->error.message, b->snapshot_id);
                else
                        batch_fail(b, KEY_FAILED, r, type, "%s", b->error.message);
                return;
        }

        /* Staged manifests leave snapshot ids to inheritance, which a format 1 table allows
         * only when told to (Java SnapshotProducer.canInheritSnapshotId). */
        if (!table_inherits_snapshot_ids(b->table)) {
                if (batch_recheck_state(b))
                        return;
                batch_fail(b, KEY_FAILED, 422, "unsupported-format-version",
                           "format-version 1 tables take staged manifests only with snapshot-id "
                           "inheritance: "
                           "set the table property %s=true, or upgrade the table to format version "
                           "2 or 3",
                           TABLE_PROPERTY_SNAPSHOT_ID_INHERITANCE);
                return;
        }
        r = table_branch(b->table, first->branch, &b->head, &b->error);
        if (r < 0) {
                if (batch_recheck_state(b))
                        return;
                batch_fail(b, KEY_FAILED, 400, "bad-branch", "%s", b->error.message);
                return;
        }

        /* Runs after every reload: a commit that landed while we were unsure is found here. */
        batch_check_jobs(b, 0);
        if (batch_recheck_on_load(b))
                return;
        if (b->n_jobs == 0) {
                batch_end(b);
                return;
        }

        /* Every request of an attempt that landed was found above; should the snapshot id be
         * taken anyway, the requests left need another (the catalog would refuse a second
         * snapshot with that id). */
        if (table_snapshot(b->table, b->snapshot_id)) {
                log_notice("queue='%s' snapshot id %" PRId64 " is taken, choosing another",
                           b->queue->label, b->snapshot_id);
                b->snapshot_id = snapshot_id_generate();
        }
        /* Table-wide, whatever the branch: sequence number and next-row-id (spec: branches).
         * Format 1 has no sequence numbers: its files read as 0. */
        b->sequence_number = b->table->format_version == 1 ? 0 : b->table->last_sequence_number + 1;
        b->first_row_id = b->table->next_row_id;
        b->next_row_id = b->first_row_id;
        b->timestamp_ms = now_realtime_ms();
        /* A new branch starts from main's head, as Iceberg Java's SnapshotUtil.latestSnapshot
         * does; the commit still asserts that the branch does not exist yet. */
        b->parent = b->head;
        first = b->jobs[0]->writer->request; /* the first may have been answered */
        if (!b->head.exists && strcmp(first->branch, "main") != 0) {
                r = table_branch(b->table, "main", &b->parent, &b->error);
                if (r < 0) {
                        batch_fail(b, KEY_FAILED, 400, "bad-branch", "%s", b->error.message);
                        return;
                }
        }
        list = b->parent.snapshot ? json_object_get(b->parent.snapshot, "manifest-list") : NULL;
        if (b->parent.exists && !json_is_string(list)) {
                batch_fail(b, KEY_FAILED, 502, "catalog-bad-metadata",
                           "parent snapshot %" PRId64 " has no manifest-list",
                           b->parent.snapshot_id);
                return;
        }
        if (list && !(b->parent_list_location = strdup(json_string_value(list)))) {
                batch_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        if (asprintf(&b->list_location, "%s/snap-%" PRId64 "-%u-%s.avro", b->table->metadata_dir,
                     b->snapshot_id, b->attempt, b->commit_uuid) < 0) {
                b->list_location = NULL;
                batch_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        b->list_cleanup = strdup(b->list_location);
        if (!b->list_cleanup) {
                batch_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        if (list_cache_take(b)) {
                batch_assemble_start(b);
                return;
        }
        if (b->parent_list_location) {
                StorageContext ctx = engine_storage_context(e, b->props, b->started_ns);

                r = storage_read(e->storage, &ctx, b->parent_list_location,
                                 e->storage_config->max_manifest_bytes, batch_on_parent_read, b,
                                 &b->error);
                if (r < 0) {
                        batch_storage_failed(b, r, b->error.message);
                        return;
                }
                e->n_in_flight++;
                return;
        }
        batch_assemble_start(b);
}

static void batch_attempt_start(Batch *b) {
        TableQueue *q = b->queue;
        CommitEngine *e = q->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        int r;

        b->attempt++;
        b->error.message[0] = 0;
        /* The table as the last load or commit response left it, while that is recent: no
         * load. A state another writer moved past costs a 409 and a reload, never a wrong
         * commit: every commit asserts the head it was built on (table_state.c). */
        b->on_state = false;
        if (table_state_is_fresh(q->state)) {
                r = table_state_use(q->state, &b->table, &b->props, &b->error);
                b->on_state = r == 0;
                if (r == 0) {
                        batch_with_table(b);
                        return;
                }
                table_state_drop(q->state, r == -ENOMEM ? "out-of-memory" : "unreadable");
        }
        metrics_add(e->metrics, METRIC_TABLE_LOADS, table_state_load_reason(q->state), 1);
        r = catalog_load_table(e->catalog, (const char *const *)first->target.namespace,
                               first->target.n_namespace, first->target.table, batch_on_loaded, b);
        if (r < 0) {
                batch_retry_later(b, "catalog-unavailable", 503, "catalog-unavailable",
                                  "cannot send the load-table request");
                return;
        }
        e->n_in_flight++;
}

/* Two writers setting one snapshot property to different values cannot share a snapshot. */
static bool properties_conflict(const json_t *merged, const json_t *props) {
        const char *key;
        json_t *v;

        json_object_foreach ((json_t *)props, key, v) {
                json_t *other = json_object_get(merged, key);

                if (other && !json_equal(other, v))
                        return true;
        }
        return false;
}

/* Moves waiting requests into the batch while its limits allow (requests and staged manifests
 * per snapshot, snapshot properties that agree); returns how many joined. */
/* Room in a summary beyond the properties and the request record: the keys icecommitd
 * computes (about 600 bytes) and the branch. */
#define BATCH_SUMMARY_FIXED_BYTES 1024u

/* What a request adds to its batch's summary at most: its snapshot properties (as if none
 * were shared), its recorded key and manifest count, each with a separator. */
static size_t batch_summary_bytes(const Job *j) {
        const CommitRequest *r = j->writer->request;
        size_t n = strlen(r->recorded_key) + 1 + 11 + 1;
        const char *key;
        json_t *value;

        json_object_foreach ((json_t *)r->snapshot_properties, key, value)
                n += strlen(key) + json_string_length(value) + 6; /* "k":"v", */
        return n;
}

static size_t batch_take_waiting(Batch *b) {
        TableQueue *q = b->queue;
        const CommitConfig *config = q->engine->config;
        _cleanup_(json_decrefp) json_t *props = NULL;
        size_t n_manifests = 0, from = b->n_jobs;
        size_t summary_bytes = BATCH_SUMMARY_FIXED_BYTES;

        /* After an attempt without a verdict the batch takes nobody: that attempt may land
         * later, and then every request still in the batch must be in it (found in history),
         * never a newcomer that would need the same snapshot id again. */
        if (!q->head || b->has_unknown || b->n_jobs >= b->max_jobs ||
            b->n_jobs >= config->max_batch_requests)
                return 0;
        props = json_object();
        if (!props)
                return 0;
        for (size_t i = 0; i < b->n_jobs; i++) {
                (void)json_object_update(props, b->jobs[i]->writer->request->snapshot_properties);
                n_manifests += b->jobs[i]->n_manifests;
                summary_bytes += batch_summary_bytes(b->jobs[i]);
        }
        summary_bytes += strlen(q->label);
        while (q->head && b->n_jobs < b->max_jobs && b->n_jobs < config->max_batch_requests) {
                Job *j = q->head;
                const json_t *jp = j->writer->request->snapshot_properties;
                size_t adds = batch_summary_bytes(j);

                if (b->n_jobs > 0 && (n_manifests + j->n_manifests > config->max_batch_manifests ||
                                      summary_bytes + adds > config->max_summary_bytes ||
                                      properties_conflict(props, jp)))
                        break;
                (void)json_object_update(props, (json_t *)jp);
                n_manifests += j->n_manifests;
                summary_bytes += adds;
                b->jobs[b->n_jobs++] = QUEUE_POP(q);
        }
        return b->n_jobs - from;
}

/* Full batches (docs/design.md section 12): the requests that arrived while this attempt got
 * its table and parent join it now, just before its manifest list is built, so that under load
 * a snapshot carries every request that waits rather than those that waited when it started. */
static void batch_assemble_start(Batch *b) {
        size_t from = b->n_jobs;
        int r;

        if (batch_take_waiting(b) > 0) {
                /* The same checks as the batch's first requests had, on this attempt's table. */
                batch_check_jobs(b, from);
                if (batch_recheck_on_load(b))
                        return;
                if (b->n_jobs == 0) {
                        batch_end(b);
                        return;
                }
        }
        b->n_staged = 0;
        for (size_t i = 0; i < b->n_jobs; i++)
                b->n_staged += b->jobs[i]->n_manifests;
        r = batch_queue_work(b, batch_assemble_work);
        if (r < 0)
                batch_fail(b, KEY_FAILED, 503, "internal", "cannot queue work: %s", uv_strerror(r));
}

unsigned commit_engine_flush(CommitEngine *e) {
        unsigned n = 0;

        for (TableQueue *q = e->queues; q; q = q->next)
                if (q->batch && q->batch->attempt == 0 &&
                    uv_is_active((uv_handle_t *)&q->retry_timer)) {
                        (void)uv_timer_start(&q->retry_timer, batch_on_retry_timer, 0, 0);
                        n++;
                }
        return n;
}

void batch_queue_kick(TableQueue *q) {
        CommitEngine *e = q->engine;
        Batch *b;

        if (q->batch || !q->head || e->is_stopping)
                return;
        b = calloc(1, sizeof(*b));
        if (b)
                b->jobs = calloc(e->config->max_batch_requests, sizeof(*b->jobs));
        if (!b || !b->jobs) {
                if (b)
                        free(b->jobs);
                free(b);
                return; /* retried on the next submission or batch end */
        }
        b->max_jobs = e->config->max_batch_requests;
        b->queue = q;
        (void)batch_take_waiting(b);
        b->snapshot_id = snapshot_id_generate();
        uuid_v4_string(b->commit_uuid);
        b->started_ns = now_monotonic_ns();
        q->batch = b;
        /* Started from the loop, not from within the caller (a submission or the end of the
         * previous batch): requests arriving meanwhile, or within commit.linger-ms, join. */
        uv_ref((uv_handle_t *)&q->retry_timer); /* unreferenced while it was the idle timeout */
        (void)uv_timer_start(&q->retry_timer, batch_on_retry_timer, e->config->linger_ms, 0);
}
