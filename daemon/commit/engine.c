/* SPDX-License-Identifier: Apache-2.0 */
/* The commit engine (docs/design.md section 2) as the writer API sees it: its hooks (submit,
 * lookups, readiness, metrics), admission (the idempotency-key registry, repeats, the queue
 * bound), and its life (new, stop, free). A request accepted goes to intake (intake.c), then its
 * table's queue, whose batches' attempts attempt.c drives. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "auth/tokens.h"
#include "commit/answer.h"
#include "commit/engine.h"
#include "commit/attempt.h"
#include "commit/intake.h"
#include "commit/lookup.h"
#include "commit/observe.h"
#include "commit/queue.h"
#include "commit/table_state.h"
#include "util/log.h"
#include "util/queue.h"

/* A 503 queue-full: counted, with Retry-After. */
static void engine_answer_queue_full(CommitEngine *e, WriterRequest *w, const char *fmt, ...)
        _printf_(3, 4);
static void engine_answer_queue_full(CommitEngine *e, WriterRequest *w, const char *fmt, ...) {
        char message[512];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        answer_add_retry_after(e, w);
        metrics_add(e->metrics, METRIC_COMMIT_REQUESTS, "queue-full", 1);
        writer_request_finish_error(w, 503, "queue-full", "%s", message);
}

/* Admission (docs/design.md section 2.1): with commit.max-queue-requests requests accepted and
 * not answered, repeats of pending keys included, a request is answered 503 queue-full. */
static bool engine_queue_is_full(CommitEngine *e, WriterRequest *w) {
        size_t n = answer_n_waiting(e);

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
        answer_publish_queue(e);
}

static void engine_submit(WriterRequest *w, void *userdata) {
        CommitEngine *e = userdata;
        const CommitRequest *r = w->request;
        KeyEntry *entry = registry_get(e->keys, r->key_scope, r->idempotency_key);
        _cleanup_(answer_job_freep) Job *j = NULL;
        bool is_retry_of_unknown;

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
                answer_add_retry_after(e, w);
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
        answer_publish_queue(e);
        intake_start(TAKE_PTR(j));
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
        answer_publish_queue(e);
        metrics_set(e->metrics, METRIC_INTAKE_BYTES, NULL, (double)budget_used(&e->intake_budget));
        metrics_set(e->metrics, METRIC_RECEIPT_CACHE_BYTES, NULL,
                    (double)registry_finished_bytes(e->keys));
        observe_scrape(e);
        return metrics_expose(e->metrics, out);
}

static const WriterHooks engine_hooks = {
        .submit = engine_submit,
        .lookup = lookup_key,
        .lookup_history = lookup_in_history,
        .is_ready = engine_is_ready,
        .metrics = engine_metrics,
};

const WriterHooks *commit_engine_hooks(void) {
        return &engine_hooks;
}

/* Once stopping and nothing is in flight (core_maybe_stopped): the queues' timers close, each
 * close freeing its queue and coming back here; once all are closed, the stop is done. */
static void engine_on_quiet(CommitEngine *e) {
        void (*done)(void *);

        if (!e->is_closing_handles) {
                e->is_closing_handles = true;
                queue_close_all(e);
        }
        if (e->n_open_handles > 0)
                return;
        done = e->stop_done;
        e->stop_done = NULL;
        done(e->stop_userdata);
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
        e->on_quiet = engine_on_quiet;
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

void commit_engine_stop(CommitEngine *e, void (*done)(void *userdata), void *userdata) {
        e->is_stopping = true;
        e->stop_done = done;
        e->stop_userdata = userdata;
        for (TableQueue *q = e->queues; q; q = q->next) {
                for (Job *j; (j = QUEUE_POP(q));)
                        answer_job_error(j, 503, "shutting-down",
                                         "icecommitd is stopping; retry with the same key");
                /* A batch waiting for its retry timer ends now; one talking to the catalog ends
                 * with its answer (attempt_retry_later refuses to go on while stopping). */
                if (q->batch && uv_is_active((uv_handle_t *)&q->retry_timer)) {
                        uv_timer_stop(&q->retry_timer);
                        /* After an attempt without a verdict "nothing was committed" would be a
                         * guess: the writer must resolve it by retrying the key. */
                        if (q->batch->has_unknown)
                                attempt_fail(
                                        q->batch, KEY_UNKNOWN, 504, "commit-state-unknown",
                                        "icecommitd is stopping; an earlier attempt got no verdict "
                                        "and snapshot "
                                        "%" PRId64
                                        " may be committed; retry with the same key to resolve it",
                                        q->batch->snapshot_id);
                        else
                                attempt_fail(q->batch, KEY_FAILED, 503, "shutting-down",
                                             "icecommitd is stopping; nothing was committed, retry "
                                             "with the same key");
                }
        }
        core_maybe_stopped(e);
}

unsigned commit_engine_flush(CommitEngine *e) {
        return attempt_flush(e);
}

uint64_t commit_engine_backoff_ms(const CommitConfig *config, unsigned attempt, uint64_t random) {
        return attempt_backoff_bound_ms(config, attempt, random);
}

CommitEngine *commit_engine_free(CommitEngine *e) {
        if (!e)
                return NULL;
        registry_free(e->keys);
        free(e);
        return NULL;
}
