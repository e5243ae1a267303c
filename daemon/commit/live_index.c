/* SPDX-License-Identifier: Apache-2.0 */
/* One data file once, against the table (see live_index.h): a request naming a data file that
 * is live in its ref already (committed by us or by anyone else, under any manifest) is
 * refused with 422 data-file-already-committed. The index is built lazily by the first attempt
 * of a queue, in chunks read through storage and parsed on the thread pool, and is never
 * rebuilt: later attempts read only the manifests they have not seen. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "commit/live_index.h"
#include "commit/step.h"
#include "iceberg/manifest_entries.h"
#include "util/log.h"

/* Most manifests read per step ([s3] max-concurrent-requests, up to this): the bytes held at
 * once stay within that many times max_manifest_bytes. */
#define LIVE_INDEX_CHUNK_MANIFESTS 32u

/* Outcomes of a thread-pool step besides 0 (checked, nothing found) and 1 (refusals flagged,
 * as list_build.c's check of the batch). */
enum {
        LIVE_INDEX_NEED_READS = 2,
        LIVE_INDEX_TOO_LARGE,
        LIVE_INDEX_UNREADABLE,
};

void live_index_attempt_deinit(LiveIndexAttempt *a) {
        free(a->missing);
        for (size_t i = 0; i < a->n_items; i++)
                buf_deinit(&a->items[i].data);
        free(a->items);
        for (size_t i = 0; a->staged && i < a->n_staged; i++)
                free(a->staged[i]);
        free(a->staged);
        free(a->n_staged_files);
        *a = (LiveIndexAttempt){ 0 };
}

/* Whether the check runs for this table: its property, else [commit] live-file-index. */
static bool live_index_is_enabled(const Batch *b) {
        const char *v = table_property(b->table, TABLE_PROPERTY_LIVE_FILE_INDEX);

        if (v && strcasecmp(v, "false") == 0)
                return false;
        if (v && strcasecmp(v, "true") == 0)
                return true;
        /* Any other value leaves the check on: a typo must not let duplicates in. */
        return b->queue->engine->config->live_file_index || v;
}

static bool live_index_is_at_parent(const LiveIndex *ix, const Batch *b) {
        return ix->files && ix->is_current && ix->has_snapshot == b->parent.exists &&
               (!b->parent.exists || ix->snapshot_id == b->parent.snapshot_id);
}

/* Drops a queue's index: the table's commits go on without the check. */
static void live_index_drop(Batch *b, int reason, const char *why) {
        CommitEngine *e = b->queue->engine;
        LiveIndex *ix = &b->queue->live;
        const char *label = reason == LIVE_INDEX_TOO_LARGE ? "too-large" : "unreadable";

        log_warning("live-file index dropped queue='%s' reason=%s: %s; committing without the "
                    "check for "
                    "data files already in the table%s",
                    b->queue->label, label, why,
                    reason == LIVE_INDEX_TOO_LARGE ? " until a restart"
                                                   : " until the branch moves");
        metrics_add(e->metrics, METRIC_LIVE_INDEX_DROPS, label, 1);
        queue_live_index_drop(e, ix);
        ix->is_too_large = reason == LIVE_INDEX_TOO_LARGE;
        ix->is_unreadable = reason == LIVE_INDEX_UNREADABLE;
        ix->has_snapshot = b->parent.exists;
        ix->snapshot_id = b->parent.snapshot_id;
        b->live.is_used = false;
}

/* Thread pool: the live files of one manifest the table holds (entries ADDED or EXISTING; a
 * DELETED entry is no longer live). */
static int live_index_add_manifest(Batch *b, const char *location, const Buf *bytes) {
        LiveIndex *ix = &b->queue->live;
        LiveIndexAttempt *a = &b->live;
        ManifestEntry *entries = NULL;
        _cleanup_(freep) LiveFileHash *hashes = NULL;
        size_t n = 0, n_live = 0;
        int r;

        r = manifest_entries_read(buf_slice(bytes),
                                  b->queue->engine->storage_config->max_manifest_entries, &entries,
                                  &n, &a->error);
        if (r < 0) {
                if (r == -ENOMEM)
                        return r;
                (void)error_prefix(&a->error, r, "manifest '%s'", location);
                return LIVE_INDEX_UNREADABLE;
        }
        hashes = calloc(n ? n : 1, sizeof(*hashes));
        if (!hashes) {
                manifest_entries_free(entries, n);
                return -ENOMEM;
        }
        for (size_t i = 0; r == 0 && i < n; i++)
                if (entries[i].status != MANIFEST_ENTRY_DELETED &&
                    entries[i].content == DATA_FILE_CONTENT_DATA)
                        r = live_files_hash(ix->files, entries[i].file_path, &hashes[n_live++]);
        manifest_entries_free(entries, n);
        if (r < 0)
                return r;
        r = live_files_add_manifest(ix->files, location, hashes, n_live);
        if (r == -E2BIG) {
                (void)error_set(&a->error, r,
                                "%zu live files, %" PRIu64 " bytes for this table, %" PRIu64
                                " for all tables (commit.live-file-index-max-table-bytes, "
                                "commit.live-file-index-max-bytes)",
                                live_files_n_files(ix->files), live_files_bytes(ix->files),
                                budget_used(&b->queue->engine->live_budget));
                return LIVE_INDEX_TOO_LARGE;
        }
        return r == -EEXIST ? 0 : r;
}

/* Thread pool: brings the index to the parent snapshot, or says what to read next. */
static int live_index_sync(Batch *b) {
        LiveIndex *ix = &b->queue->live;
        LiveIndexAttempt *a = &b->live;
        int r;

        if (live_index_is_at_parent(ix, b))
                return 0;
        ix->is_current = false;
        if (!a->is_planned) {
                _cleanup_(freep) const char **paths =
                        calloc(b->change.n_list - b->change.n_added + 1, sizeof(*paths));
                size_t n = 0;

                a->missing = calloc(b->change.n_list - b->change.n_added + 1, sizeof(*a->missing));
                if (!paths || !a->missing)
                        return -ENOMEM;
                /* Delete manifests hold no data files. */
                for (size_t i = b->change.n_added; i < b->change.n_list; i++)
                        if (b->change.list[i].content == MANIFEST_CONTENT_DATA)
                                paths[n++] = b->change.list[i].path;
                r = live_files_retain(ix->files, paths, n);
                if (r < 0)
                        return r;
                for (size_t i = b->change.n_added; i < b->change.n_list; i++)
                        if (b->change.list[i].content == MANIFEST_CONTENT_DATA &&
                            !live_files_has_manifest(ix->files, b->change.list[i].path))
                                a->missing[a->n_missing++] = i;
                a->is_planned = true;
        }
        for (size_t i = 0; i < a->n_items; i++) {
                r = live_index_add_manifest(b, b->change.list[a->missing[a->n_read + i]].path,
                                            &a->items[i].data);
                if (r != 0)
                        return r;
                buf_deinit(&a->items[i].data);
        }
        a->n_read += a->n_items;
        a->n_items = 0;
        if (a->n_read < a->n_missing)
                return LIVE_INDEX_NEED_READS;
        ix->is_current = true;
        ix->has_snapshot = b->parent.exists;
        ix->snapshot_id = b->parent.snapshot_id;
        return 0;
}

/* Thread pool: every data file the batch stages, against the index. Flags each request
 * naming a live file (its first such entry); returns 1 when any was flagged, else 0. */
static int live_index_lookup(Batch *b) {
        LiveIndex *ix = &b->queue->live;
        LiveIndexAttempt *a = &b->live;
        int found = 0, r;

        a->staged = calloc(b->change.n_added + 1, sizeof(*a->staged));
        a->n_staged_files = calloc(b->change.n_added + 1, sizeof(*a->n_staged_files));
        if (!a->staged || !a->n_staged_files)
                return -ENOMEM;
        a->n_staged = b->change.n_added;
        for (size_t i = 0; i < b->n_jobs; i++) {
                Job *j = b->jobs[i];

                for (size_t k = 0; k < j->n_manifests; k++) {
                        const StagedManifest *m = j->manifests[k];
                        size_t slot = b->change.parts[i].first + k;

                        if (m->content != MANIFEST_CONTENT_DATA)
                                continue;
                        a->staged[slot] = calloc(m->n_files ? m->n_files : 1, sizeof(**a->staged));
                        if (!a->staged[slot])
                                return -ENOMEM;
                        a->n_staged_files[slot] = m->n_files;
                        for (size_t e = 0; e < m->n_files; e++) {
                                LiveFileHash *h = &a->staged[slot][e];
                                const char *holder;
                                char where[512];

                                r = live_files_hash(ix->files, m->files[e].path, h);
                                if (r < 0)
                                        return r;
                                if (j->refusal_type || !live_files_contains(ix->files, *h))
                                        continue;
                                holder = live_files_find_manifest(ix->files, *h);
                                if (k < j->writer->request->n_manifests)
                                        (void)snprintf(where, sizeof(where),
                                                       "staged-manifests[%zu] '%s' entry %zu", k,
                                                       j->writer->request->manifests[k], e);
                                else
                                        (void)snprintf(where, sizeof(where), "'data-files'[%zu]",
                                                       e);
                                j->refusal_type = "data-file-already-committed";
                                (void)error_set(&j->error, -EEXIST,
                                                "%s '%s' is a data file already live in the table "
                                                "(in manifest '%s' of "
                                                "snapshot %" PRId64
                                                " of branch '%s'): committing it again would make "
                                                "readers see its rows twice",
                                                where, m->files[e].path, holder ? holder : "?",
                                                b->parent.snapshot_id, j->writer->request->branch);
                                found = 1;
                        }
                }
        }
        a->is_used = true;
        return found;
}

static void live_index_work(uv_work_t *w) {
        Batch *b = w->data;
        LiveIndexAttempt *a = &b->live;

        a->status = live_index_sync(b);
        if (a->status == 0)
                a->status = live_index_lookup(b);
}

static void live_index_work_after(uv_work_t *w, int status);

static void live_index_queue_work(Batch *b) {
        CommitEngine *e = b->queue->engine;
        int r;

        b->live.work.data = b;
        r = uv_queue_work(e->loop, &b->live.work, live_index_work, live_index_work_after);
        if (r < 0) {
                step_fail(b, KEY_FAILED, 503, "internal", "cannot queue work: %s", uv_strerror(r));
                return;
        }
        e->n_in_flight++;
}

static void live_index_on_read(StorageReadItem *items, size_t n_items, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;
        LiveIndexAttempt *a = &b->live;

        e->n_in_flight--;
        for (size_t i = 0; i < n_items; i++) {
                if (items[i].status == 0)
                        continue;
                if (storage_status_is_transient(items[i].status)) {
                        /* The manifests read so far stay in the index: the retry goes on
                         * from there. */
                        char message[sizeof(items[i].error.message) + 64];

                        (void)snprintf(message, sizeof(message),
                                       "reading the table's manifests for the live-file "
                                       "index: %s",
                                       items[i].error.message);
                        step_storage_failed(b, items[i].status, message);
                        core_maybe_stopped(e);
                        return;
                }
                live_index_drop(b, LIVE_INDEX_UNREADABLE, items[i].error.message);
                step_next(b);
                core_maybe_stopped(e);
                return;
        }
        a->items = calloc(n_items ? n_items : 1, sizeof(*a->items));
        if (!a->items) {
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                core_maybe_stopped(e);
                return;
        }
        for (size_t i = 0; i < n_items; i++) {
                a->items[i] = items[i];
                buf_init(&items[i].data, 0);
        }
        a->n_items = n_items;
        metrics_add(e->metrics, METRIC_LIVE_INDEX_MANIFESTS_READ, NULL, (double)n_items);
        live_index_queue_work(b);
        core_maybe_stopped(e);
}

/* Reads the next chunk of manifests the index has not seen. */
static void live_index_read_chunk(Batch *b) {
        CommitEngine *e = b->queue->engine;
        LiveIndexAttempt *a = &b->live;
        StorageContext ctx = core_storage_context(e, b->props, b->started_ns);
        const char *locations[LIVE_INDEX_CHUNK_MANIFESTS];
        size_t n = 0, chunk = e->storage_config->s3.max_concurrent_requests;
        int r;

        if (chunk > LIVE_INDEX_CHUNK_MANIFESTS)
                chunk = LIVE_INDEX_CHUNK_MANIFESTS;
        while (n < chunk && a->n_read + n < a->n_missing) {
                locations[n] = b->change.list[a->missing[a->n_read + n]].path;
                n++;
        }
        free(a->items);
        a->items = NULL;
        r = storage_read_many(e->storage, &ctx, locations, n, e->storage_config->max_manifest_bytes,
                              e->storage_config->s3.max_concurrent_requests, live_index_on_read, b);
        if (r < 0) {
                step_storage_failed(b, r,
                                    "cannot read the table's manifests for the live-file index");
                return;
        }
        e->n_in_flight++;
}

static void live_index_work_after(uv_work_t *w, int status) {
        Batch *b = w->data;
        CommitEngine *e = b->queue->engine;
        LiveIndexAttempt *a = &b->live;
        int r = status < 0 ? status : a->status;

        e->n_in_flight--;
        queue_live_index_publish(e);
        switch (r) {
        case 0:
                step_next(b);
                break;
        case 1:
                step_report(b, STEP_REFUSE_FLAGGED); /* counts METRIC_LIVE_FILE_REFUSALS as it
                                                        answers */
                break;
        case LIVE_INDEX_NEED_READS:
                live_index_read_chunk(b);
                break;
        case LIVE_INDEX_TOO_LARGE:
        case LIVE_INDEX_UNREADABLE:
                live_index_drop(b, r, a->error.message);
                step_next(b);
                break;
        default:
                /* Out of memory, or the work was cancelled: the index is left as far as it
                 * got (not current); the writers may retry. */
                step_fail(b, KEY_FAILED, 503, r == -ENOMEM ? "out-of-memory" : "internal",
                          "cannot check the batch's data files against the table: %s",
                          strerror(-r));
                break;
        }
        core_maybe_stopped(e);
}

static bool live_index_check_start(Batch *b) {
        CommitEngine *e = b->queue->engine;
        LiveIndex *ix = &b->queue->live;
        int r;

        b->live.is_checked = true;
        if (!live_index_is_enabled(b)) {
                if (ix->files)
                        queue_live_index_drop(e, ix); /* turned off: give its memory back */
                return false;
        }
        if (ix->is_too_large)
                return false;
        if (ix->is_unreadable) {
                if (ix->has_snapshot == b->parent.exists &&
                    ix->snapshot_id == b->parent.snapshot_id)
                        return false;
                ix->is_unreadable = false;
        }
        if (!ix->files) {
                if (!e->has_live_key) {
                        if (getrandom(e->live_key, sizeof(e->live_key), 0) !=
                            (ssize_t)sizeof(e->live_key))
                                return false; /* no key, no index: commits go on unchecked */
                        e->has_live_key = true;
                }
                e->live_budget.max_bytes = e->config->live_file_index_max_bytes;
                r = live_files_new(e->live_key, e->config->live_file_index_max_table_bytes,
                                   &e->live_budget, &ix->files);
                if (r == -E2BIG) {
                        live_index_drop(b, LIVE_INDEX_TOO_LARGE, "no room for another index");
                        return false;
                }
                if (r < 0) {
                        step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                        return true;
                }
                if (b->parent.exists)
                        log_info("building the live-file index queue='%s' snapshot=%" PRId64,
                                 b->queue->label, b->parent.snapshot_id);
        }
        live_index_queue_work(b);
        return true;
}

void live_index_committed(Batch *b) {
        CommitEngine *e = b->queue->engine;
        LiveIndex *ix = &b->queue->live;
        LiveIndexAttempt *a = &b->live;
        int r = 0;

        if (!a->is_used || !live_index_is_at_parent(ix, b)) {
                ix->is_current = false;
                return;
        }
        /* The new snapshot holds the parent's manifests and the staged ones: add those. */
        for (size_t i = 0; r == 0 && i < a->n_staged; i++) {
                if (!a->staged[i])
                        continue;
                r = live_files_add_manifest(ix->files, b->change.list[i].path, a->staged[i],
                                            a->n_staged_files[i]);
                if (r == -EEXIST)
                        r = 0; /* refused as manifest-already-committed: cannot be */
        }
        if (r == -E2BIG) {
                (void)error_set(&a->error, r, "%zu live files, %" PRIu64 " bytes for this table",
                                live_files_n_files(ix->files), live_files_bytes(ix->files));
                live_index_drop(b, LIVE_INDEX_TOO_LARGE, a->error.message);
                return;
        }
        if (r < 0) {
                ix->is_current = false; /* out of memory: the next attempt catches up */
                queue_live_index_publish(e);
                return;
        }
        ix->has_snapshot = true;
        ix->snapshot_id = b->snapshot_id;
        queue_live_index_publish(e);
}

void live_index_check(Batch *b) {
        if (b->live.is_checked || !live_index_check_start(b))
                step_next(b);
}
