/* SPDX-License-Identifier: Apache-2.0 */
/* The attempts of one batch (docs/design.md section 2), driven from one table of steps: the
 * table and its checks, the list planned, its parent read, the requests that arrived meanwhile
 * joined, the list assembled, checked against the live files, merged, finished and written, the
 * commit sent. Every step reports how it ended (step.h) to attempt_on_step(), the one place that
 * answers a batch, retries it after a backoff, replays a commit without verdict, reloads for a
 * recheck or ends it. 409 -> back off and rebuild only the list; no verdict -> 504
 * commit-state-unknown with every file kept. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "commit/answer.h"
#include "commit/attempt.h"
#include "commit/checks.h"
#include "commit/landing.h"
#include "commit/list_build.h"
#include "commit/live_index.h"
#include "commit/merge.h"
#include "commit/queue.h"
#include "commit/step.h"
#include "commit/table_state.h"
#include "iceberg/snapshot.h"
#include "util/log.h"
#include "util/queue.h"
#include "util/time-util.h"

static void attempt_start(Batch *b);

/* --- batches ------------------------------------------------------------------------------- */

static void attempt_free_attempt(Batch *b) {
        core_release_table(b->queue->engine, TAKE_PTR(b->table));
        b->head = b->parent = (TableBranch){ 0 };
        free(b->parent_list_location);
        b->parent_list_location = NULL;
        snapshot_change_deinit(&b->change);
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

static Batch *attempt_free_batch(Batch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_jobs; i++)
                answer_job_free(b->jobs[i]);
        merge_batch_deinit(b);
        attempt_free_attempt(b);
        for (size_t i = 0; i < b->n_counted; i++)
                free(b->counted[i].path);
        free(b->counted);
        free(b->jobs);
        free(b);
        return NULL;
}

/* Ends the batch (every job answered) and lets the next one start. */
static void attempt_end(Batch *b) {
        TableQueue *q = b->queue;
        CommitEngine *e = q->engine;

        q->batch = NULL;
        e->n_batches--;
        attempt_free_batch(b);
        attempt_kick(q);
        if (!q->batch)
                queue_idle(q);
        core_maybe_stopped(e);
}

void attempt_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...) {
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
                answer_job(b->jobs[i], state, status, writer_error_body(status, type, message));
        b->n_jobs = 0;
        attempt_end(b);
}

static void attempt_on_retry_timer(uv_timer_t *t) {
        TableQueue *q = t->data;

        if (q->batch)
                attempt_start(q->batch);
}

/* Java's Tasks backoff: min * 2^(n-1) capped at max, plus up to 10% jitter. */
uint64_t attempt_backoff_bound_ms(const CommitConfig *config, unsigned attempt, uint64_t random) {
        uint64_t delay = config->min_backoff_ms;

        for (unsigned i = 1; i < attempt && delay < config->max_backoff_ms; i++)
                delay *= 2;
        if (delay > config->max_backoff_ms)
                delay = config->max_backoff_ms;
        return delay + (delay >= 10 ? random % (delay / 10) : 0);
}

static uint64_t attempt_backoff_ms(const Batch *b) {
        uint64_t random = 0;

        if (getrandom(&random, sizeof(random), 0) != (ssize_t)sizeof(random))
                random = 0;
        return attempt_backoff_bound_ms(b->queue->engine->config, b->attempt, random);
}

/* Another attempt after a backoff, or the end: after max_attempts, or past the total timeout
 * once at least two attempts were made. */
static void attempt_retry_later(Batch *b, const char *reason, int status, const char *type,
                                const char *message) {
        CommitEngine *e = b->queue->engine;
        uint64_t elapsed_ms = (now_monotonic_ns() - b->started_ns) / 1000000u;
        uint64_t delay;

        metrics_add(e->metrics, METRIC_COMMIT_RETRIES, reason, 1);
        if (e->is_stopping || b->attempt >= e->config->max_attempts ||
            (b->attempt >= 2 && elapsed_ms >= e->config->total_timeout_ms)) {
                /* After an attempt without a verdict, giving up cannot say "not committed". */
                if (b->has_unknown)
                        attempt_fail(b, KEY_UNKNOWN, 504, "commit-state-unknown",
                                     "%s after %u attempts in %" PRIu64
                                     " ms; an earlier attempt got no verdict "
                                     "and snapshot %" PRId64
                                     " may be committed; retry with the same idempotency key "
                                     "to resolve it",
                                     message, b->attempt, elapsed_ms, b->snapshot_id);
                else
                        attempt_fail(b, KEY_FAILED, status, type,
                                     "%s after %u attempts in %" PRIu64
                                     " ms; nothing was committed, retry with "
                                     "the same key",
                                     message, b->attempt, elapsed_ms);
                return;
        }
        delay = attempt_backoff_ms(b);
        log_info("commit attempt %u/%u queue='%s' %s, retrying in %" PRIu64 " ms", b->attempt,
                 e->config->max_attempts, b->queue->label, reason, delay);
        attempt_free_attempt(b);
        (void)uv_timer_start(&b->queue->retry_timer, attempt_on_retry_timer, delay, 0);
}

/* Resends an attempt that got no verdict, same body and Idempotency-Key: the catalog answers
 * with the original outcome when it had one. */
static void attempt_on_replay_timer(uv_timer_t *t) {
        TableQueue *q = t->data;
        Batch *b = q->batch;

        if (!b)
                return;
        b->attempt++;
        if (landing_send(b) < 0)
                attempt_retry_later(b, "unknown", 504, "commit-state-unknown",
                                    "cannot resend the commit");
}

static void attempt_recheck_on_load(Batch *b);

/* Answers (422) the requests an attempt's checks flagged, and starts the next attempt for the
 * others (or ends the batch). */
static void attempt_refuse_flagged(Batch *b) {
        /* On the table state, a refusal waits for a fresh load (checks_refuse_job): the checks
         * run again there, so the flags go. */
        if (b->on_state) {
                for (size_t i = 0; i < b->n_jobs; i++)
                        b->jobs[i]->refusal_type = NULL;
                attempt_recheck_on_load(b);
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
                answer_job_error(j, 422, j->refusal_type, "%s", j->error.message);
        }
        attempt_free_attempt(b); /* nothing of this attempt was written */
        if (b->n_jobs == 0) {
                attempt_end(b);
                return;
        }
        attempt_start(b);
}

/* A check on the table state wanted to refuse a request, or the batch: the same attempt again
 * on a fresh load (a refusal never rests on the state). */
static void attempt_recheck_on_load(Batch *b) {
        b->needs_fresh_table = false;
        log_info("queue='%s' a request would be refused on the table state: loading the table "
                 "to check again",
                 b->queue->label);
        table_state_drop(b->queue->state, "recheck");
        attempt_free_attempt(b);
        b->attempt--; /* the same attempt, nothing was sent */
        attempt_start(b);
}

/* Two writers setting one snapshot property to different values cannot share a snapshot. */
static bool attempt_properties_conflict(const json_t *merged, const json_t *props) {
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
#define ATTEMPT_SUMMARY_FIXED_BYTES 1024u

/* What a request adds to its batch's summary at most: its snapshot properties (as if none
 * were shared), its recorded key and manifest count, each with a separator. */
static size_t attempt_summary_bytes(const Job *j) {
        const CommitRequest *r = j->writer->request;
        size_t n = strlen(r->recorded_key) + 1 + 11 + 1;
        const char *key;
        json_t *value;

        json_object_foreach ((json_t *)r->snapshot_properties, key, value)
                n += strlen(key) + json_string_length(value) + 6; /* "k":"v", */
        return n;
}

static size_t attempt_take_waiting(Batch *b) {
        TableQueue *q = b->queue;
        const CommitConfig *config = q->engine->config;
        _cleanup_(json_decrefp) json_t *props = NULL;
        size_t n_manifests = 0, from = b->n_jobs;
        size_t summary_bytes = ATTEMPT_SUMMARY_FIXED_BYTES;

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
                summary_bytes += attempt_summary_bytes(b->jobs[i]);
        }
        summary_bytes += strlen(q->label);
        while (q->head && b->n_jobs < b->max_jobs && b->n_jobs < config->max_batch_requests) {
                Job *j = q->head;
                const json_t *jp = j->writer->request->snapshot_properties;
                size_t adds = attempt_summary_bytes(j);

                if (b->n_jobs > 0 && (n_manifests + j->n_manifests > config->max_batch_manifests ||
                                      summary_bytes + adds > config->max_summary_bytes ||
                                      attempt_properties_conflict(props, jp)))
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
 * a snapshot carries every request that waits rather than those that waited when it started.
 * They get the same checks as the batch's first requests had, on this attempt's table. */
static void attempt_join(Batch *b) {
        size_t from = b->n_jobs;

        if (attempt_take_waiting(b) == 0) {
                step_next(b);
                return;
        }
        checks_requests(b, from);
}

/* Runs after every reload: a commit that landed while we were unsure is found here. */
static void attempt_check_requests(Batch *b) {
        checks_requests(b, 0);
}

/* The steps of an attempt, in order. Each ends with one outcome (step.h); STEP_NEXT runs the
 * next one. */
static const struct {
        const char *name;
        void (*run)(Batch *b);
} attempt_steps[] = {
        { "table", checks_table },              /* load (or the state), roots, branch */
        { "requests", attempt_check_requests }, /* keys in history, each manifest checked */
        { "plan", list_build_plan },            /* numbers, parent, the list's name */
        { "parent", list_build_parent },        /* the parent's list: cached or read */
        { "join", attempt_join },               /* requests that arrived meanwhile */
        { "assemble", list_build_assemble },    /* the list; one data file once */
        { "live-files", live_index_check },     /* against the files live in the branch */
        { "merge", merge_step },                /* the parent's manifests merged */
        { "finish", list_build_finish },        /* counts, row ids, the list's bytes */
        { "write", list_build_write },          /* the list on storage */
        { "commit", landing_commit },           /* the snapshot, sent; the verdict */
};

static void attempt_on_step(Batch *b, const StepOutcome *o) {
        switch (o->kind) {
        case STEP_NEXT:
                if (++b->step >= sizeof(attempt_steps) / sizeof(*attempt_steps)) {
                        /* The commit step ends otherwise: a step table without it. */
                        attempt_fail(b, KEY_FAILED, 500, "internal",
                                     "the attempt ran out of steps");
                        return;
                }
                log_debug("queue='%s' attempt %u step %s", b->queue->label, b->attempt,
                          attempt_steps[b->step].name);
                attempt_steps[b->step].run(b);
                return;
        case STEP_FAIL:
                attempt_fail(b, o->state, o->status, o->type, "%s", o->message);
                return;
        case STEP_RETRY:
                attempt_retry_later(b, o->reason, o->status, o->type, o->message);
                return;
        case STEP_REFUSE_FLAGGED:
                attempt_refuse_flagged(b);
                return;
        case STEP_RECHECK:
                attempt_recheck_on_load(b);
                return;
        case STEP_END:
                attempt_end(b);
                return;
        case STEP_REPLAY:
                (void)uv_timer_start(&b->queue->retry_timer, attempt_on_replay_timer,
                                     attempt_backoff_ms(b), 0);
                return;
        }
}

static void attempt_start(Batch *b) {
        b->attempt++;
        b->error.message[0] = 0;
        b->step = 0;
        b->step_done = attempt_on_step;
        attempt_steps[0].run(b);
}

unsigned attempt_flush(CommitEngine *e) {
        unsigned n = 0;

        for (TableQueue *q = e->queues; q; q = q->next)
                if (q->batch && q->batch->attempt == 0 &&
                    uv_is_active((uv_handle_t *)&q->retry_timer)) {
                        (void)uv_timer_start(&q->retry_timer, attempt_on_retry_timer, 0, 0);
                        n++;
                }
        return n;
}

void attempt_kick(TableQueue *q) {
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
        (void)attempt_take_waiting(b);
        b->snapshot_id = snapshot_id_generate();
        uuid_v4_string(b->commit_uuid);
        b->started_ns = now_monotonic_ns();
        q->batch = b;
        e->n_batches++;
        /* Started from the loop, not from within the caller (a submission or the end of the
         * previous batch): requests arriving meanwhile, or within commit.linger-ms, join. */
        uv_ref((uv_handle_t *)&q->retry_timer); /* unreferenced while it was the idle timeout */
        (void)uv_timer_start(&q->retry_timer, attempt_on_retry_timer, e->config->linger_ms, 0);
}
