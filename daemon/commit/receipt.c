/* SPDX-License-Identifier: Apache-2.0 */
/* The receipt of a committed request (proto/openapi.yaml CommitReceipt): its snapshot, and
 * per staged manifest and data file the row ids a reader will see, so that a writer can check
 * and clean up (docs/exactly-once.md). One builder for the committing attempt and for a receipt
 * rebuilt from the table (history_receipt.c): both answer with the same bytes. */
#include <jansson.h>

#include "commit/receipt.h"
#include "writer/request.h"

/* Each data file of a staged manifest with what a reader will see: its first_row_id (the
 * manifest's plus the record counts of the files before it, every staged entry having none of
 * its own: spec "First Row ID Inheritance") and _last_updated_sequence_number, the commit's
 * sequence number (the data sequence number of ADDED entries). NULL on allocation failure. */
static json_t *receipt_files(const ReceiptSource *s, const ManifestFile *m,
                             const StagedManifest *staged) {
        _cleanup_(json_decrefp) json_t *files = json_array();
        int64_t cursor = m->first_row_id;

        for (size_t k = 0; files && k < staged->n_files; k++) {
                const DataFileInfo *f = &staged->files[k];
                json_t *o = json_pack("{s:s, s:I, s:I}", "location", f->path, "record-count",
                                      (json_int_t)f->record_count, "last-updated-sequence-number",
                                      (json_int_t)s->sequence_number);

                if (!o || json_array_append_new(files, o) < 0)
                        return NULL;
                if (!m->has_first_row_id)
                        continue;
                if (json_object_set_new(o, "first-row-id", json_integer(cursor)) < 0 ||
                    json_object_set_new(o, "last-row-id",
                                        f->record_count > 0
                                                ? json_integer(cursor + f->record_count - 1)
                                                : json_null()) < 0)
                        return NULL;
                cursor += f->record_count; /* within the manifest's range: lineage checked it */
        }
        return TAKE_PTR(files);
}

static json_t *receipt_manifests(const ReceiptSource *s) {
        _cleanup_(json_decrefp) json_t *manifests = json_array();

        for (size_t i = 0; manifests && i < s->n_manifests; i++) {
                const ManifestFile *m = &s->manifests[i];
                json_t *o = json_pack("{s:s, s:s, s:I, s:I}", "location", m->path, "content",
                                      m->content == MANIFEST_CONTENT_DELETES ? "deletes" : "data",
                                      "added-files", (json_int_t)m->added_files_count, "added-rows",
                                      (json_int_t)m->added_rows_count);

                if (!o || json_array_append_new(manifests, o) < 0)
                        return NULL;
                /* The table references icecommitd's copy (location); the writer's own file is
                 * the writer's again, to delete (docs/exactly-once.md). */
                if (s->staged[i]->staged_location &&
                    json_object_set_new(o, "staged-location",
                                        json_string(s->staged[i]->staged_location)) < 0)
                        return NULL;
                if (m->has_first_row_id) {
                        /* Rows get first-row-id + position, in entry order (spec: inheritance). */
                        if (json_object_set_new(o, "first-row-id", json_integer(m->first_row_id)) <
                                    0 ||
                            json_object_set_new(o, "last-row-id",
                                                m->added_rows_count > 0
                                                        ? json_integer(m->first_row_id +
                                                                       m->added_rows_count - 1)
                                                        : json_null()) < 0)
                                return NULL;
                }
                if (json_object_set_new(o, "data-files", receipt_files(s, m, s->staged[i])) < 0)
                        return NULL;
        }
        return TAKE_PTR(manifests);
}

json_t *receipt_from(const ReceiptSource *s) {
        _cleanup_(json_decrefp) json_t *receipt = NULL;

        receipt = json_pack("{s:s, s:s, s:O, s:s, s:s?, s:I, s:I, s:o, s:I, s:o}",
                            "idempotency-key", s->key, "status", "committed", "namespace",
                            s->namespace, "table", s->table, "branch", s->branch, "snapshot-id",
                            (json_int_t)s->snapshot_id, "sequence-number",
                            (json_int_t)s->sequence_number, "snapshot-first-row-id",
                            s->has_first_row_id ? json_integer(s->first_row_id) : json_null(),
                            "batch-requests", (json_int_t)s->n_requests, "attempts",
                            s->attempt > 0 ? json_integer(s->attempt) : json_null());
        /* branch and attempts are null, and manifests absent, where a snapshot an older
         * icecommitd recorded does not say. Without its manifests (such a snapshot, or one
         * whose files are gone) the receipt lists none: the writer deletes nothing. */
        if (receipt && s->has_manifests &&
            json_object_set_new(receipt, "manifests", receipt_manifests(s)) < 0)
                return NULL;
        return TAKE_PTR(receipt);
}

json_t *receipt_build(const Batch *b, size_t i) {
        const Job *j = b->jobs[i];
        const SnapshotChangePart *part = &b->change.parts[i];
        const CommitRequest *r = j->writer->request;
        _cleanup_(json_decrefp) json_t *ns = request_target_namespace_json(&r->target);
        ReceiptSource s = {
                .key = r->idempotency_key,
                .namespace = ns,
                .table = r->target.table,
                .branch = r->branch,
                .snapshot_id = b->snapshot_id,
                .sequence_number = b->sequence_number,
                .has_first_row_id = b->table->format_version >= 3,
                .first_row_id = b->first_row_id,
                .n_requests = b->n_jobs,
                .attempt = b->built_attempt,
                .has_manifests = true,
                .manifests = &b->change.list[part->first],
                .staged = part->staged,
                .n_manifests = part->n,
        };

        return ns ? receipt_from(&s) : NULL;
}
