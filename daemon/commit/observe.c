/* SPDX-License-Identifier: Apache-2.0 */
/* What the engine tells operators beyond answers: the one log line per commit, the metrics of
 * each table (queue depth, oldest request, last commit, row ids; table labels bounded by
 * metrics.max-table-labels) and of unknown outcomes. Reads the engine's structures, never
 * changes them. */
#define LOG_MODULE "commit"
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "commit/observe.h"
#include "commit/queue.h"
#include "commit/table_state.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/time-util.h"

/* The keys in the log line: enough to find every writer's request, bounded for a big batch. */
#define OBSERVE_MAX_KEYS_BYTES 1024

static double observe_now_unix_s(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void observe_keys(const Batch *b, char *out, size_t size) {
        size_t len = 0;

        out[0] = '\0';
        for (size_t i = 0; i < b->n_jobs; i++) {
                const char *key = b->jobs[i]->writer->request->idempotency_key;
                size_t n = strlen(key);
                int k;

                /* Room for this key, its comma and a possible ",+N more" after it. */
                if (n + 1 > size - len || size - len - n - 1 < 24) {
                        (void)snprintf(out + len, size - len, "%s+%zu more", len ? "," : "",
                                       b->n_jobs - i);
                        return;
                }
                k = snprintf(out + len, size - len, "%s%s", len ? "," : "", key);
                if (k > 0)
                        len += (size_t)k;
        }
}

void observe_committed(const Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *r = b->jobs[0]->writer->request;
        const char *table = metrics_table_label(e->metrics, r->table_name);
        char keys[OBSERVE_MAX_KEYS_BYTES], name[512];
        int64_t added = b->next_row_id - b->first_row_id;
        int64_t duration_ms = (int64_t)((now_monotonic_ns() - b->started_ns) / 1000000u);
        size_t len = 0;

        metrics_set(e->metrics, METRIC_TABLE_LAST_COMMIT, table, observe_now_unix_s());
        if (b->table->format_version >= 3)
                metrics_add(e->metrics, METRIC_TABLE_ROWS_ASSIGNED, table, (double)added);

        /* The table as writers name it, "ns.table", whatever the metric label became. */
        for (size_t i = 0; i < r->target.n_namespace && len < sizeof(name); i++) {
                int k = snprintf(name + len, sizeof(name) - len, "%s.", r->target.namespace[i]);

                len += k > 0 ? (size_t)k : 0;
        }
        if (len < sizeof(name))
                (void)snprintf(name + len, sizeof(name) - len, "%s", r->target.table);
        observe_keys(b, keys, sizeof(keys));

        const LogField fields[] = {
                LOG_FIELD_STR("table", name),
                LOG_FIELD_STR("branch", r->branch),
                LOG_FIELD_I64("snapshot-id", b->snapshot_id),
                LOG_FIELD_I64("sequence-number", b->sequence_number),
                LOG_FIELD_I64("first-row-id", b->first_row_id),
                LOG_FIELD_I64("added-rows", added),
                LOG_FIELD_I64("requests", (int64_t)b->n_jobs),
                LOG_FIELD_I64("attempts", (int64_t)b->attempt),
                LOG_FIELD_I64("duration-ms", duration_ms),
                LOG_FIELD_STR("keys", keys),
        };
        log_fields(LOG_LEVEL_INFO, fields, ELEMENTSOF(fields),
                   "committed table='%s' branch='%s' snapshot=%" PRId64 " sequence=%" PRId64
                   " first-row-id=%" PRId64 " added-rows=%" PRId64
                   " requests=%zu attempts=%u duration-ms=%" PRId64 " keys='%s'",
                   name, r->branch, b->snapshot_id, b->sequence_number, b->first_row_id, added,
                   b->n_jobs, b->attempt, duration_ms, keys);
}

void observe_job_finished(const Job *j, KeyState state, int status) {
        CommitEngine *e = j->engine;

        /* A request whose earlier commit got no verdict learns its fate here: committed (found
         * in the history or landed now), or refused for good. A 503 or another 504 leaves it
         * open (the writer retries the key). */
        if (!j->may_be_committed && !j->resolves_unknown)
                return;
        if (state == KEY_COMMITTED)
                metrics_add(e->metrics, METRIC_UNKNOWN_RESOLVED, "committed", 1);
        else if (state == KEY_FAILED && status < 500)
                metrics_add(e->metrics, METRIC_UNKNOWN_RESOLVED, "not-committed", 1);
}

static void observe_job_waiting(CommitEngine *e, const char *table, const Job *j, uint64_t now,
                                size_t *n_unresolved) {
        double age = (double)(now - j->writer->accepted_ns) / 1e9;

        metrics_add(e->metrics, METRIC_TABLE_QUEUE_REQUESTS, table, 1);
        if (age > metrics_get(e->metrics, METRIC_TABLE_OLDEST_AGE, table))
                metrics_set(e->metrics, METRIC_TABLE_OLDEST_AGE, table, age);
        if (j->may_be_committed || j->resolves_unknown)
                (*n_unresolved)++;
}

void observe_scrape(CommitEngine *e) {
        uint64_t now = now_monotonic_ns();
        size_t n_unresolved = registry_count_unknown(e->keys);

        /* Tables whose queue went idle keep their series, at 0. */
        metrics_reset(e->metrics, METRIC_TABLE_QUEUE_REQUESTS);
        metrics_reset(e->metrics, METRIC_TABLE_OLDEST_AGE);
        for (TableQueue *q = e->queues; q; q = q->next) {
                const char *table = metrics_table_label(e->metrics, q->state->name);

                metrics_add(e->metrics, METRIC_TABLE_QUEUE_REQUESTS, table, 0);
                metrics_add(e->metrics, METRIC_TABLE_OLDEST_AGE, table, 0);
                for (const Job *j = q->head; j; j = j->next)
                        observe_job_waiting(e, table, j, now, &n_unresolved);
                for (size_t i = 0; q->batch && i < q->batch->n_jobs; i++)
                        observe_job_waiting(e, table, q->batch->jobs[i], now, &n_unresolved);
        }
        metrics_set(e->metrics, METRIC_UNKNOWN_OUTSTANDING, NULL, (double)n_unresolved);
}
