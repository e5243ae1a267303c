/* SPDX-License-Identifier: Apache-2.0 */
/* The queues of the engine (queue.h), one per table and branch: made on a table's first request,
 * dropped with what they hold after commit.queue-idle-ms without work, closed when the engine
 * stops. */
#define LOG_MODULE "commit"
#include <stdlib.h>
#include <string.h>

#include "commit/queue.h"
#include "iceberg/manifest_list.h"
#include "commit/table_state.h"
#include "util/log.h"

void queue_live_index_publish(CommitEngine *e) {
        metrics_set(e->metrics, METRIC_LIVE_INDEX_BYTES, NULL,
                    (double)budget_used(&e->live_budget));
}

void queue_live_index_drop(CommitEngine *e, LiveIndex *ix) {
        ix->files = live_files_free(ix->files);
        *ix = (LiveIndex){ 0 };
        queue_live_index_publish(e);
}

void queue_list_cache_clear(TableQueue *q) {
        ListCache *c = &q->list_cache;

        q->engine->list_cache_bytes -= c->size;
        free(c->location);
        buf_deinit(&c->bytes);
        manifest_list_files_free(c->files, c->n_files);
        *c = (ListCache){ 0 };
}

static void queue_on_timer_closed(uv_handle_t *h) {
        TableQueue *q = h->data;
        CommitEngine *e = q->engine;

        queue_live_index_drop(e, &q->live);
        queue_list_cache_clear(q);
        table_state_put(q->state);
        free(q->name);
        free(q->label);
        free(q);
        e->n_open_handles--;
        core_maybe_stopped(e);
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

TableQueue *queue_get(CommitEngine *e, const CommitRequest *r) {
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

void queue_idle(TableQueue *q) {
        /* A long-running daemon meets many tables: what an idle one holds (its state, its
         * live-file index) goes after commit.queue-idle-ms. */
        if (q->head || q->batch || q->engine->is_stopping)
                return;
        (void)uv_timer_start(&q->retry_timer, queue_on_idle, q->engine->config->queue_idle_ms, 0);
        /* Waiting to drop a queue is no work: it does not keep the loop running. */
        uv_unref((uv_handle_t *)&q->retry_timer);
}

void queue_close_all(CommitEngine *e) {
        TableQueue *q = e->queues;

        e->queues = NULL;
        while (q) {
                TableQueue *next = q->next;

                uv_close((uv_handle_t *)&q->retry_timer, queue_on_timer_closed);
                q = next;
        }
}
