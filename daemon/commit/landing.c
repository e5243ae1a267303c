/* SPDX-License-Identifier: Apache-2.0 */
/* The last step of an attempt (docs/design.md section 2): the snapshot (summary, key record) and
 * the CommitTableRequest built from the attempt's list, sent with requirements, and the catalog's
 * verdict: committed (receipts, the table state, the live-file index and the list cache follow
 * the new snapshot), 409 (another attempt), no verdict (replay or reload; every file kept) or a
 * refusal. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/answer.h"
#include "commit/landing.h"
#include "commit/list_cache.h"
#include "commit/live_index.h"
#include "commit/merge.h"
#include "commit/observe.h"
#include "commit/receipt.h"
#include "commit/step.h"
#include "commit/table_state.h"
#include "iceberg/snapshot.h"
#include "util/log.h"
#include "util/uuid.h"

/* "ns.table" (namespace levels joined by dots), the metric label of a table. */
static char *landing_table_label(const CommitRequest *r) {
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
static void landing_count_lineage_break(const Batch *b, const Job *j) {
        const CommitRequest *r = j->writer->request;
        _cleanup_(freep) char *label = landing_table_label(r);

        metrics_add(b->queue->engine->metrics, METRIC_LINEAGE_BREAKS,
                    label ? label : r->target.table, 1);
        log_warning("committed equality deletes on v3 table='%s' key='%s' snapshot=%" PRId64
                    ": row lineage is not kept for rows they delete (policy allows it)",
                    label ? label : r->target.table, r->idempotency_key, b->snapshot_id);
}

static void landing_on_committed(const CatalogResult *result, void *userdata);

int landing_send(Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        int r;

        r = catalog_commit_table(e->catalog, (const char *const *)first->target.namespace,
                                 first->target.n_namespace, first->target.table, b->commit_request,
                                 b->commit_key[0] ? b->commit_key : NULL, landing_on_committed, b);
        if (r < 0)
                return r;
        e->n_in_flight++;
        return 0;
}

static void landing_on_committed(const CatalogResult *result, void *userdata) {
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
                        json_t *receipt = receipt_build(b, i);

                        table_state_add_key(b->queue->state,
                                            b->jobs[i]->writer->request->recorded_key,
                                            b->snapshot_id);
                        if (b->jobs[i]->breaks_lineage)
                                landing_count_lineage_break(b, b->jobs[i]);

                        if (!receipt)
                                receipt = json_pack("{s:s, s:I}", "status", "committed",
                                                    "snapshot-id", (json_int_t)b->snapshot_id);
                        answer_job(b->jobs[i], KEY_COMMITTED, 200, receipt);
                }
                b->n_jobs = 0;
                list_cache_keep(b);
                step_report(b, STEP_END);
                return;

        case CATALOG_E_CONFLICT:
                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "conflict", 1);
                table_state_drop(b->queue->state, "conflict");
                /* Known not committed: this attempt's list can go (the staged manifests stay). */
                core_delete_file(e, b->props, TAKE_PTR(b->list_cleanup));
                step_retry(b, "conflict", 503, "commit-conflict", result->message);
                return;

        case CATALOG_E_UNAVAILABLE:
                /* Nothing was sent, so nothing was applied. */
                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "unavailable", 1);
                core_delete_file(e, b->props, TAKE_PTR(b->list_cleanup));
                step_retry(b, "catalog-unavailable", 503, "catalog-unavailable", result->message);
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
                        step_report(b, STEP_REPLAY);
                        return;
                }
                step_retry(b, "unknown", 504, "commit-state-unknown", result->message);
                return;

        default: { /* NOT_FOUND, REJECTED: known not committed, and trying again cannot help */
                const char *type;
                int status = catalog_outcome_http_status(result->status, &type);

                metrics_add(e->metrics, METRIC_COMMIT_ATTEMPTS, "rejected", 1);
                table_state_drop(b->queue->state, "rejected");
                core_delete_file(e, b->props, TAKE_PTR(b->list_cleanup));
                /* Built on the table state, the refusal may be the state's fault (a format
                 * upgrade or other change that moved no head): once more, on a fresh load;
                 * a refusal of that one is final. */
                if (b->on_state) {
                        step_retry(b, "rejected-on-state", 502, type, result->message);
                        return;
                }
                if (status == 404)
                        step_fail(b, KEY_FAILED, status, type, "%s", result->message);
                else
                        step_fail(b, KEY_FAILED, status, type,
                                  "the catalog refused the commit (HTTP %ld): %s",
                                  result->http_status, result->message);
                return;
        }
        }
}

void landing_commit(Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        json_t *summary = NULL, *request = NULL, *parent_summary;
        SnapshotSpec spec;
        int r;

        /* Replays resend this request as it is: the attempt that built it is the one its
         * receipts name, whichever daemon rebuilds them. */
        b->built_attempt = b->attempt;
        /* Totals continue the parent's (Java restarts them at 0 on a new branch, though the
         * branch holds the parent's data too). With authentication on, keys are recorded as
         * "principal/key": one key of two principals is two requests in history too. */
        parent_summary = b->parent.snapshot ? json_object_get(b->parent.snapshot, "summary") : NULL;
        r = snapshot_change_summary(&b->change, parent_summary, first->branch, b->built_attempt,
                                    &summary, &b->error);
        if (r < 0) {
                core_delete_file(e, b->props, TAKE_PTR(b->list_cleanup));
                step_fail(b, KEY_FAILED, 500, "internal", "cannot build the snapshot summary: %s",
                          r == -ENOMEM ? "out of memory" : b->error.message);
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
                core_delete_file(e, b->props, TAKE_PTR(b->list_cleanup));
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "cannot build the commit request");
                return;
        }

        /* Each attempt is a new logical operation for the catalog: a new key (REST spec); a
         * replay of this same attempt reuses it. */
        b->commit_request = request;
        if (catalog_supports_idempotency(e->catalog))
                uuid_v7_string(b->commit_key);
        r = landing_send(b);
        if (r < 0) {
                core_delete_file(e, b->props, TAKE_PTR(b->list_cleanup));
                step_retry(b, "catalog-unavailable", 503, "catalog-unavailable",
                           "cannot send the commit");
                return;
        }
}
