/* SPDX-License-Identifier: Apache-2.0 */
/* The checks of an attempt (docs/design.md section 2): the table, loaded or as the engine holds
 * it (storage roots, snapshot-id inheritance, the branch), and every request against it (keys
 * its history records are answered from it, never committed twice; each staged manifest's
 * location, partition spec, format version, data files, schema and the equality-delete
 * guardrail). A refusal never rests on the table state: on it, the attempt loads and checks
 * again (STEP_RECHECK). */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/answer.h"
#include "commit/checks.h"
#include "commit/history_receipt.h"
#include "commit/key_index.h"
#include "commit/owned.h"
#include "commit/probe.h"
#include "commit/step.h"
#include "commit/table_state.h"
#include "iceberg/schema_compat.h"
#include "util/log.h"

/* The equality-delete policy of the table: its property icecommit.equality-deletes, else the
 * daemon's [lineage] equality-deletes. -EINVAL for a property value that is neither. */
static int checks_equality_delete_policy(const Batch *b, bool *ret_allow) {
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
static bool checks_file_is_confined(const TableMetadata *t, const char *path) {
        _cleanup_(freep) char *root = probe_confinement_root(t, path); /* the rule is probe.c's */

        return root != NULL;
}

/* Checks one staged manifest of a job against the table as loaded by this attempt (the table
 * may have changed since intake and between attempts). On a violation answers the job and
 * returns false. */
/* Refuses one request for what the attempt's table says (answers it), except on the table
 * state: a refusal must never rest on a stale table (a property or policy changed since, with no
 * snapshot to tell), so the attempt gets a fresh load first and checks again there. */
_printf_(5, 6) static void checks_refuse_job(Batch *b, Job *j, int status, const char *type,
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
        answer_job_error(j, status, type, "%s", message);
}

static bool checks_manifest(Batch *b, Job *j, size_t k) {
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
                checks_refuse_job(b, j, 422, "invalid-manifest",
                                  "staged-manifests[%zu] '%s' is outside the table location '%s'",
                                  k, location, b->table->location);
                return false;
        }
        if (!table_has_partition_spec(b->table, m->partition_spec_id)) {
                checks_refuse_job(b, j, 422, "invalid-manifest",
                                  "staged-manifests[%zu] '%s' uses partition spec %d, which the "
                                  "table does not have",
                                  k, location, m->partition_spec_id);
                return false;
        }
        if (m->format_version == 1 && b->table->format_version != 1) {
                /* Format 1 entries carry no sequence numbers: v2+ writers must write v2+
                 * manifests (spec "Writer requirements"). */
                checks_refuse_job(b, j, 422, "invalid-manifest",
                                  "staged-manifests[%zu] '%s' is a format-version 1 manifest; the "
                                  "table is version %d and "
                                  "takes version 2 or 3 manifests",
                                  k, location, b->table->format_version);
                return false;
        }
        if (m->format_version > b->table->format_version) {
                checks_refuse_job(b, j, 422, "invalid-manifest",
                                  "staged-manifests[%zu] '%s' is a format-version %d manifest; the "
                                  "table is version %d",
                                  k, location, m->format_version, b->table->format_version);
                return false;
        }

        for (size_t e = 0; e < m->n_files; e++)
                if (!checks_file_is_confined(b->table, m->files[e].path)) {
                        /* Said without asking storage anything about the file. */
                        checks_refuse_job(
                                b, j, 422, "invalid-manifest",
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
                        checks_refuse_job(
                                b, j, 422, "invalid-manifest",
                                "staged-manifests[%zu] '%s': its schema metadata is not JSON", k,
                                location);
                        return false;
                }
                if (!current) {
                        checks_refuse_job(b, j, 502, "catalog-bad-metadata",
                                          "the table metadata has no current schema");
                        return false;
                }
                r = schema_compat_check(written, current, b->table->format_version, &error);
                if (r == SCHEMA_COMPAT_E_INCOMPATIBLE) {
                        checks_refuse_job(
                                b, j, 422, "schema-mismatch",
                                "staged-manifests[%zu] '%s' was written with a schema the "
                                "table's current schema "
                                "(id %d) no longer matches: %s",
                                k, location, b->table->current_schema_id, error.message);
                        return false;
                }
                if (r < 0) {
                        checks_refuse_job(b, j, r == -ENOMEM ? 503 : 422,
                                          r == -ENOMEM ? "out-of-memory" : "invalid-manifest",
                                          "staged-manifests[%zu] '%s': cannot compare schemas: %s",
                                          k, location, error.message);
                        return false;
                }
        }

        /* Guardrail: equality deletes cannot keep v3 row lineage. Format 2 has none to break. */
        if (m->content != MANIFEST_CONTENT_DELETES || b->table->format_version < 3)
                return true;
        if (checks_equality_delete_policy(b, &allow) < 0) {
                checks_refuse_job(b, j, 422, "lineage-guardrail",
                                  "staged-manifests[%zu] '%s' holds equality deletes and the table "
                                  "property '%s' is '%s', "
                                  "expected 'reject' or 'allow'",
                                  k, location, TABLE_PROPERTY_EQUALITY_DELETES,
                                  table_property(b->table, TABLE_PROPERTY_EQUALITY_DELETES));
                return false;
        }
        if (!allow) {
                checks_refuse_job(
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

static void checks_each_request(Batch *b, size_t from) {
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
                        bad = !checks_manifest(b, j, k);
                if (bad && b->needs_fresh_table)
                        return; /* not answered: the caller loads and checks again */
                if (bad)
                        batch_remove_job(b, i);
                else
                        i++;
        }
}

void checks_requests(Batch *b, size_t from) {
        checks_each_request(b, from);
        if (b->needs_fresh_table)
                step_report(b, STEP_RECHECK);
        else if (b->n_jobs == 0)
                step_report(b, STEP_END);
        else
                step_next(b);
}

/* A refusal of the whole batch for what the table says: on the table state, the same attempt
 * again on a fresh load instead (checks_refuse_job). Returns true when it went that way. */
static bool checks_recheck_state(Batch *b) {
        if (!b->on_state)
                return false;
        step_report(b, STEP_RECHECK);
        return true;
}

static void checks_with_table(Batch *b);

static void checks_on_loaded(const CatalogResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;
        const char *type;
        int r;

        e->n_in_flight--;
        if (result->status != 0) {
                table_state_drop(b->queue->state, "failed");
                r = catalog_outcome_http_status(result->status, &type);
                if (r == 503)
                        step_retry(b, "catalog-unavailable", r, type, result->message);
                else if (r == 404)
                        step_fail(b, KEY_FAILED, r, type, "%s", result->message);
                else
                        step_fail(b, KEY_FAILED, r, type, "loading the table failed (HTTP %ld): %s",
                                  result->http_status, result->message);
                return;
        }

        r = table_metadata_parse(result->body, &b->table, &b->error);
        if (r >= 0)
                r = storage_props_new(result->properties, result->body, &b->props, &b->error);
        if (r < 0) {
                step_fail(b, KEY_FAILED, r == -ENOMEM ? 503 : 502, "catalog-bad-metadata", "%s",
                          b->error.message);
                return;
        }
        (void)table_state_loaded(b->queue->state, result->body, b->table, b->props);
        checks_with_table(b);
}

/* The attempt has its table (loaded, or the state): what it says of the whole batch. */
static void checks_with_table(Batch *b) {
        CommitEngine *e = b->queue->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        const char *type;
        int r;

        /* Before anything is read or written for it: the table's location and storage
         * properties may have changed since intake (another engine), and the roots on SIGHUP. */
        r = core_check_table_roots(e, b->table, &type, &b->error);
        if (r > 0) {
                if (checks_recheck_state(b))
                        return;
                /* An earlier attempt without a verdict may have landed: refusing now cannot
                 * say "not committed"; the key stays open until a retry finds it. */
                if (b->has_unknown)
                        step_fail(b, KEY_UNKNOWN, 504, "commit-state-unknown",
                                  "%s; an earlier attempt got no verdict and snapshot %" PRId64
                                  " may be committed; retry with the same idempotency key "
                                  "once the table is within the roots",
                                  b->error.message, b->snapshot_id);
                else
                        step_fail(b, KEY_FAILED, r, type, "%s", b->error.message);
                return;
        }

        /* Staged manifests leave snapshot ids to inheritance, which a format 1 table allows
         * only when told to (Java SnapshotProducer.canInheritSnapshotId). */
        if (!table_inherits_snapshot_ids(b->table)) {
                if (checks_recheck_state(b))
                        return;
                step_fail(b, KEY_FAILED, 422, "unsupported-format-version",
                          "format-version 1 tables take staged manifests only with snapshot-id "
                          "inheritance: "
                          "set the table property %s=true, or upgrade the table to format version "
                          "2 or 3",
                          TABLE_PROPERTY_SNAPSHOT_ID_INHERITANCE);
                return;
        }
        r = table_branch(b->table, first->branch, &b->head, &b->error);
        if (r < 0) {
                if (checks_recheck_state(b))
                        return;
                step_fail(b, KEY_FAILED, 400, "bad-branch", "%s", b->error.message);
                return;
        }

        step_next(b);
}

void checks_table(Batch *b) {
        TableQueue *q = b->queue;
        CommitEngine *e = q->engine;
        const CommitRequest *first = b->jobs[0]->writer->request;
        int r;

        /* The table as the last load or commit response left it, while that is recent: no
         * load. A state another writer moved past costs a 409 and a reload, never a wrong
         * commit: every commit asserts the head it was built on (table_state.c). */
        b->on_state = false;
        if (table_state_is_fresh(q->state)) {
                r = table_state_use(q->state, &b->table, &b->props, &b->error);
                b->on_state = r == 0;
                if (r == 0) {
                        checks_with_table(b);
                        return;
                }
                table_state_drop(q->state, r == -ENOMEM ? "out-of-memory" : "unreadable");
        }
        metrics_add(e->metrics, METRIC_TABLE_LOADS, table_state_load_reason(q->state), 1);
        r = catalog_load_table(e->catalog, (const char *const *)first->target.namespace,
                               first->target.n_namespace, first->target.table, checks_on_loaded, b);
        if (r < 0) {
                step_retry(b, "catalog-unavailable", 503, "catalog-unavailable",
                           "cannot send the load-table request");
                return;
        }
        e->n_in_flight++;
}
