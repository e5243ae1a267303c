/* SPDX-License-Identifier: Apache-2.0 */
/* How a request ends (answer.h): every path that answers a writer request goes through
 * answer_job(), which records the outcome once, for the writer, its key's waiters and later
 * replays. */
#define LOG_MODULE "commit"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/answer.h"
#include "commit/observe.h"
#include "commit/owned.h"
#include "commit/probe.h"
#include "util/time-util.h"

/* Retry-After on a 503, so that writers (and proxies) back off the configured time. */
void answer_add_retry_after(CommitEngine *e, WriterRequest *w) {
        char seconds[16];

        (void)snprintf(seconds, sizeof(seconds), "%u", e->config->retry_after_s);
        writer_request_add_header(w, "Retry-After", seconds);
}

/* icecommit_queue_requests: the requests accepted and not answered, repeats of a pending key
 * included (they count against commit.max-queue-requests alike). */
size_t answer_n_waiting(const CommitEngine *e) {
        return e->n_queued + registry_n_waiters(e->keys);
}

void answer_publish_queue(CommitEngine *e) {
        metrics_set(e->metrics, METRIC_QUEUE_REQUESTS, NULL, (double)answer_n_waiting(e));
}

Job *answer_job_free(Job *j) {
        if (!j)
                return NULL;
        for (size_t i = 0; i < j->n_manifests; i++)
                manifest_staged_free(j->manifests[i]);
        free(j->manifests);
        free(j->manifest_lengths);
        core_release_table(j->engine, j->table);
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

/* Answers a job's writer, every waiter with the same key, and records the outcome. A retryable
 * outcome (5xx other than "unknown") or a 403 an operator fixes drops the key so that a retry
 * is a fresh request. */
void answer_job(Job *j, KeyState state, int status, json_t *body) {
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
                answer_add_retry_after(e, j->writer);
                for (size_t i = 0; i < j->entry->n_waiters; i++)
                        answer_add_retry_after(e, j->entry->waiters[i]);
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
        answer_publish_queue(e);
        answer_job_free(j);
}

void answer_job_error(Job *j, int status, const char *type, const char *fmt, ...) {
        char message[2048];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        answer_job(j, KEY_FAILED, status, writer_error_body(status, type, message));
}
