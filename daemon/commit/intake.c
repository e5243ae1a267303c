/* SPDX-License-Identifier: Apache-2.0 */
/* The intake of a writer request (docs/design.md section 2.1), once per request and never per
 * attempt: the table (the state while fresh, else a load), every file the request names read
 * beneath its location (staged manifests; data-files' sizes and Parquet footers), the staged
 * manifests copied and parsed on the thread pool, the request's own checks (one data file once,
 * rows bounded), the data files probed on storage, icecommitd's manifests written; then the
 * request joins its table's queue. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/answer.h"
#include "commit/attempt.h"
#include "commit/data_files.h"
#include "commit/duplicates.h"
#include "commit/intake.h"
#include "commit/owned.h"
#include "commit/probe.h"
#include "commit/queue.h"
#include "commit/table_state.h"
#include "parquet/footer.h"
#include "util/log.h"
#include "util/queue.h"

/* Answers a request its intake refused (j->intake_status set, the reason in j->error) and
 * returns true; false when there is nothing to answer. */
static bool intake_refused(Job *j) {
        if (!j->intake_status)
                return false;
        answer_job_error(j, j->intake_status, j->intake_type ? j->intake_type : "invalid-manifest",
                         "%s", j->error.message);
        return true;
}

/* After the writes of what icecommitd owns of the request: it joins its table's queue. */
static void intake_enqueue(Job *j) {
        CommitEngine *e = j->engine;
        TableQueue *q;

        if (intake_refused(j))
                return;
        if (e->is_stopping) {
                answer_job_error(j, 503, "shutting-down",
                                 "icecommitd is stopping; retry with the same key");
                return;
        }
        q = queue_get(e, j->writer->request);
        if (!q) {
                answer_job_error(j, 503, "out-of-memory", "out of memory");
                return;
        }
        QUEUE_PUSH(q, j);
        attempt_kick(q);
}

/* Thread pool: one request naming one data file twice (in two manifests, twice in one, or under
 * two spellings) would commit its rows twice, each time with new row ids. */
static int intake_check_repeats(Job *j) {
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
                return job_intake_refuse(j, rr, "checking that no data file is named twice");
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
static void intake_check_rows(Job *j) {
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
static void intake_parse_failed(Job *j, size_t i, int rr) {
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
                (void)job_intake_refuse(j, rr, what);
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
static int intake_parse_staged(Job *j, size_t i, const ManifestLimits *limits) {
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
        /* Parsed or refused: the bytes read are not held any more (intake_on_io counted them). */
        budget_release(&j->intake, read->cap);
        buf_deinit(read);
        if (rr < 0)
                intake_parse_failed(j, i, rr);
        return rr;
}

/* Thread pool: parse what was read; check and describe the data-files. */
static void intake_work(uv_work_t *w) {
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
                int rr = intake_parse_staged(j, i, &limits);

                if (rr < 0)
                        return;
                j->n_manifests = i + 1;
        }
        limits.entries_left = NULL; /* the data-files were counted above */
        if (r->n_data_files > 0 && data_files_intake(j, storage->max_manifest_bytes, &limits) < 0)
                return;
        if (intake_check_repeats(j) < 0)
                return;
        intake_check_rows(j);
        if (j->intake_status == 0)
                (void)probe_plan(j);
}

/* After the probes: writes what icecommitd owns of the request (its copies of the staged
 * manifests, its data-files' manifest), then queues it. */
static void intake_write_owned(Job *j) {
        if (!intake_refused(j))
                owned_write_start(j, intake_enqueue);
}

static void intake_after(uv_work_t *w, int status) {
        Job *j = w->data;
        CommitEngine *e = j->engine;

        e->n_in_flight--;
        if (status < 0)
                answer_job_error(j, 503, "shutting-down", "the request was cancelled");
        else if (e->is_stopping && !j->intake_status)
                answer_job_error(j, 503, "shutting-down",
                                 "icecommitd is stopping; retry with the same key");
        else if (!intake_refused(j))
                /* The staged manifests' data files exist with their sizes before anything is
                 * written or queued. */
                probe_start(j, intake_write_owned);
        core_maybe_stopped(e);
}

static void intake_queue(Job *j) {
        CommitEngine *e = j->engine;
        int r;

        r = uv_queue_work(e->loop, &j->work, intake_work, intake_after);
        if (r < 0) {
                answer_job_error(j, 503, "internal", "cannot queue work: %s", uv_strerror(r));
                return;
        }
        e->n_in_flight++;
}

static void intake_io_pump(Job *j);
static void intake_on_io(StorageResult *result, void *userdata);

/* Sets the job's intake failure from a failed read of item i (a staged manifest, then the
 * data-files). A read that left the table through a symlink (-EXDEV) is refused in the very
 * words of a location outside the table: nothing about where it leads shows. */
static void intake_io_failed(Job *j, size_t i, int status, const char *why) {
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
                core_storage_http_status(status, &type,
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
static int intake_io_start(Job *j, size_t i, uint64_t tail_bytes, Error *error) {
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        StorageContext ctx = core_storage_context(e, j->props, j->writer->accepted_ns);
        int rr;

        ctx.root = j->table->location;
        j->io[i] = (IoSlot){ .job = j, .index = i };
        if (i < r->n_manifests)
                rr = storage_read(e->storage, &ctx, r->manifests[i],
                                  e->storage_config->max_manifest_bytes, intake_on_io, &j->io[i],
                                  error);
        else if (tail_bytes > 0)
                rr = storage_read_tail(e->storage, &ctx, r->data_files[i - r->n_manifests].location,
                                       tail_bytes, intake_on_io, &j->io[i], error);
        else
                rr = storage_size(e->storage, &ctx, r->data_files[i - r->n_manifests].location,
                                  intake_on_io, &j->io[i], error);
        if (rr == 0)
                e->n_in_flight++;
        return rr;
}

/* A described Parquet file's tail arrived: check its footer, or read the longer tail that
 * holds it. Returns true when a second read went out (the item is not done yet). */
static bool intake_on_footer(Job *j, size_t i, StorageResult *result) {
        const CommitRequest *r = j->writer->request;
        size_t d = i - r->n_manifests;
        uint64_t need = 0;
        Error error = { 0 };
        int rr;

        if (j->file_reads[d]++ > 0 && result->size != j->file_sizes[d]) {
                intake_io_failed(j, i, -EAGAIN, "the file changed while its footer was read");
                return false;
        }
        j->file_sizes[d] = result->size;
        rr = probe_footer_check(j, d, result, &need);
        if (rr == PARQUET_FOOTER_E_SHORT && j->file_reads[d] > 1) {
                intake_io_failed(j, i, -EAGAIN, "the file changed while its footer was read");
                return false;
        }
        if (rr == PARQUET_FOOTER_E_SHORT) {
                rr = intake_io_start(j, i, need, &error);
                if (rr == 0)
                        return true;
                intake_io_failed(j, i, rr, error.message);
                return false;
        }
        if (rr < 0)
                j->io_status = rr; /* the reason is set */
        return false;
}

/* A staged manifest's bytes arrived: they count from now until parsed. Over a bound they go at
 * once, and no further read starts (the request is refused). */
static void intake_io_hold_manifest(Job *j, size_t i) {
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
        j->io_status = job_intake_refuse(j, rr, what);
}

/* One intake read answered: a staged manifest's bytes or a data file's size (and tail). */
static void intake_on_io(StorageResult *result, void *userdata) {
        IoSlot *slot = userdata;
        Job *j = slot->job;
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        size_t i = slot->index;

        e->n_in_flight--;
        if (result->status < 0 && j->io_status == 0)
                intake_io_failed(j, i, result->status, result->error.message);
        else if (result->status == 0 && i < r->n_manifests) {
                j->manifest_bytes[i] = result->data;
                buf_init(&result->data, 0);
                intake_io_hold_manifest(j, i);
        } else if (result->status == 0 && j->io_status == 0 &&
                   probe_wants_footer(j, i - r->n_manifests)) {
                if (intake_on_footer(j, i, result)) {
                        core_maybe_stopped(e);
                        return; /* the longer tail comes back here */
                }
        } else if (result->status == 0)
                j->file_sizes[i - r->n_manifests] = result->size;
        j->n_io_done++;
        intake_io_pump(j);
        core_maybe_stopped(e);
}

/* Keeps up to s3.max-concurrent-requests intake reads in flight; when all are answered, parses
 * on the thread pool, or fails the job with the first failure. */
static void intake_io_pump(Job *j) {
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        const uint32_t max = e->storage_config->s3.max_concurrent_requests;

        while (j->io_status == 0 && !e->is_stopping && j->n_io_started < j->n_io &&
               j->n_io_started - j->n_io_done < max) {
                size_t i = j->n_io_started;
                bool footer = i >= r->n_manifests && probe_wants_footer(j, i - r->n_manifests);
                Error error = { 0 };
                int rr;

                rr = intake_io_start(j, i, footer ? e->config->parquet_tail_bytes : 0, &error);
                if (rr < 0) {
                        intake_io_failed(j, i, rr, error.message);
                        break;
                }
                j->n_io_started++;
        }
        if (j->n_io_done < j->n_io_started)
                return; /* the last answer comes back here */
        if (e->is_stopping && j->io_status == 0) {
                answer_job_error(j, 503, "shutting-down",
                                 "icecommitd is stopping; retry with the same key");
                return;
        }
        if (j->io_status != 0) {
                answer_job_error(j, j->intake_status, j->intake_type, "%s", j->error.message);
                return;
        }
        intake_queue(j);
}

/* Reads what the request names: its staged manifests and the sizes of its data-files. */
static void intake_fetch(Job *j) {
        const CommitRequest *r = j->writer->request;

        if (data_files_check_locations(j) < 0) {
                answer_job_error(j, j->intake_status, j->intake_type, "%s", j->error.message);
                return;
        }
        j->n_io = r->n_manifests + r->n_data_files;
        j->manifest_bytes = calloc(r->n_manifests + 1, sizeof(*j->manifest_bytes));
        j->file_sizes = calloc(r->n_data_files + 1, sizeof(*j->file_sizes));
        j->file_reads = calloc(r->n_data_files + 1, sizeof(*j->file_reads));
        j->io = calloc(j->n_io + 1, sizeof(*j->io));
        if (!j->manifest_bytes || !j->file_sizes || !j->file_reads || !j->io) {
                answer_job_error(j, 503, "out-of-memory", "out of memory");
                return;
        }
        intake_io_pump(j);
}

static void intake_on_loaded(const CatalogResult *result, void *userdata) {
        Job *j = userdata;
        CommitEngine *e = j->engine;
        const char *type;
        int r;

        e->n_in_flight--;
        if (result->status != 0) {
                r = catalog_outcome_http_status(result->status, &type);
                answer_job_error(j, r, type, "%s%s",
                                 r == 404 ? "" : "cannot load the table to check the request: ",
                                 result->message);
        } else if ((r = table_metadata_parse(result->body, &j->table, &j->error)) < 0 ||
                   (r = storage_props_new(result->properties, result->body, &j->props, &j->error)) <
                           0)
                answer_job_error(j, r == -ENOMEM ? 503 : 502, "catalog-bad-metadata", "%s",
                                 j->error.message);
        else if ((r = core_check_table_roots(e, j->table, &type, &j->error)) > 0)
                answer_job_error(j, r, type, "%s", j->error.message);
        else if (e->is_stopping)
                answer_job_error(j, 503, "shutting-down",
                                 "icecommitd is stopping; retry with the same key");
        else
                intake_fetch(j);
        core_maybe_stopped(e);
}

void intake_start(Job *j) {
        CommitEngine *e = j->engine;
        const CommitRequest *r = j->writer->request;
        TableState *state;
        int rr;

        /* Once per request, not per attempt: every file the request names is read beneath
         * the table's location, and checked against its roots, schema and specs; objects are
         * read with the storage settings (and vended credentials) it comes with. The table as
         * the engine holds it serves when recent (the batch checks again on its own table);
         * else a load without the history: the batch's own load has it for the keys. */
        state = table_state_find(e, r->table_name);
        if (state && table_state_is_fresh(state) &&
            table_state_use(state, &j->table, &j->props, &j->error) == 0) {
                const char *type;

                if (core_check_table_roots(e, j->table, &type, &j->error) == 0) {
                        intake_fetch(j);
                        return;
                }
                /* A refusal never rests on the state (a property may have changed since,
                 * with no snapshot to tell): the load below decides. */
                core_release_table(e, TAKE_PTR(j->table));
                j->props = storage_props_free(j->props);
        }
        metrics_add(e->metrics, METRIC_TABLE_LOADS, "intake", 1);
        rr = catalog_load_table_refs(e->catalog, (const char *const *)r->target.namespace,
                                     r->target.n_namespace, r->target.table, intake_on_loaded, j);
        if (rr < 0) {
                answer_job_error(j, 503, "catalog-unavailable", "cannot load the table: %s",
                                 strerror(-rr));
                return;
        }
        e->n_in_flight++;
}
