/* SPDX-License-Identifier: Apache-2.0 */
/* A receipt rebuilt from the table alone (docs/design.md 3.3), for a key a retry or
 * GET /v1/commits/{key} finds in a snapshot's record: any daemon, after any restart, answers
 * with the receipt the committing attempt sent. The record places the request's manifests in
 * the snapshot's manifest list (they come first, in key order); their list entries and their
 * own entries are what receipt_from() needs. Reads two things from storage: the list's first
 * blocks and the request's manifests, parsed on the thread pool. */
#define LOG_MODULE "commit"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "commit/answer.h"
#include "commit/history_receipt.h"
#include "commit/receipt.h"
#include "iceberg/snapshot.h"
#include "iceberg/manifest_list.h"
#include "writer/api.h"
#include "writer/request.h"
#include "util/log.h"
#include "util/time-util.h"

struct HistoryReceipt {
        CommitEngine *engine;
        StorageProps *props;
        char *root;                /* the table location: every read stays beneath it... */
        char *metadata_dir;        /* ... or beneath this, where our own manifests lie */
        uint64_t started_ns;       /* its reads' deadline: commit.total-timeout-ms from here */
        SnapshotRecordEntry entry; /* strings below, owned */
        bool has_record;
        char *key, *table, *branch, *list_location;
        json_t *namespace;
        Buf list_bytes;
        ManifestFile *files; /* the list's first entries, up to the request's last */
        size_t n_files;
        StorageReadItem *items; /* the request's manifests as read */
        size_t n_items;
        StagedManifest **staged;
        json_t *receipt;
        int status;      /* 0, or why the request's manifests are not in the receipt */
        int fail_status; /* <0: a storage fault worth a retry (no receipt) */
        Error error;
        uv_work_t work;
        HistoryReceiptFn done;
        void *userdata;
};

static HistoryReceipt *history_receipt_free(HistoryReceipt *h) {
        if (!h)
                return NULL;
        storage_props_free(h->props);
        free(h->root);
        free(h->metadata_dir);
        free(h->key);
        free(h->table);
        free(h->branch);
        free(h->list_location);
        json_decref(h->namespace);
        buf_deinit(&h->list_bytes);
        manifest_list_files_free(h->files, h->n_files);
        for (size_t i = 0; h->items && i < h->n_items; i++)
                buf_deinit(&h->items[i].data);
        free(h->items);
        for (size_t i = 0; h->staged && i < h->entry.n_manifests; i++)
                manifest_staged_free(h->staged[i]);
        free(h->staged);
        json_decref(h->receipt);
        free(h);
        return NULL;
}

DEFINE_CLEANUP_FUNC(HistoryReceipt, history_receipt_free);

static void history_receipt_finish(HistoryReceipt *h) {
        CommitEngine *e = h->engine;

        if (h->fail_status < 0)
                h->done(NULL, h->fail_status, &h->error, h->userdata);
        else
                h->done(TAKE_PTR(h->receipt), 0, NULL, h->userdata);
        history_receipt_free(h);
        e->n_in_flight--;
        core_maybe_stopped(e);
}

/* Whether a failed read leaves the receipt without manifests (the file is gone or not what
 * the record says) rather than worth a retry (a fault of the store, credentials, the clock). */
static bool history_receipt_is_lasting(int status) {
        return status == -ENOENT || status == -EFBIG || status == -EXDEV || status == -EINVAL ||
               status == -EPROTONOSUPPORT;
}

/* A read failed: lasting, the receipt goes without manifests; else the caller retries. */
static void history_receipt_read_failed(HistoryReceipt *h, int status, const Error *error) {
        if (history_receipt_is_lasting(status)) {
                h->status = status;
                h->error = *error;
        } else {
                h->fail_status = status;
                h->error = *error;
        }
}

/* Thread pool, last step: the request's manifests parsed, the receipt built. */
static void history_receipt_build_work(uv_work_t *w) {
        HistoryReceipt *h = w->data;
        const StorageConfig *sc = h->engine->storage_config;
        ManifestLimits limits = { .max_entries = sc->max_manifest_entries };
        ReceiptSource s = {
                .key = h->key,
                .namespace = h->namespace,
                .table = h->table,
                .branch = h->branch,
                .snapshot_id = h->entry.snapshot_id,
                .sequence_number = h->entry.sequence_number,
                .has_first_row_id = h->entry.has_first_row_id,
                .first_row_id = h->entry.first_row_id,
                .n_requests = h->entry.n_requests,
                .attempt = h->has_record ? h->entry.attempt : 0,
        };

        if (h->has_record && h->status == 0 && h->fail_status == 0) {
                h->staged = calloc(h->entry.n_manifests + 1, sizeof(*h->staged));
                if (!h->staged) {
                        h->fail_status = -ENOMEM;
                        (void)error_set(&h->error, -ENOMEM, "out of memory");
                        return;
                }
                for (size_t i = 0; h->status == 0 && i < h->entry.n_manifests; i++) {
                        const char *path = h->files[h->entry.list_offset + i].path;
                        int r = manifest_staged_parse(buf_slice(&h->items[i].data), path, &limits,
                                                      &h->staged[i], &h->error);

                        if (r == -ENOMEM) {
                                h->fail_status = r;
                                return;
                        }
                        if (r < 0)
                                h->status = r;
                }
        }
        s.has_manifests = h->has_record && h->status == 0;
        if (s.has_manifests && h->entry.n_manifests > 0) {
                s.manifests = &h->files[h->entry.list_offset];
                s.staged = (const StagedManifest *const *)h->staged;
                s.n_manifests = h->entry.n_manifests;
        }
        h->receipt = receipt_from(&s);
        if (!h->receipt) {
                h->fail_status = -ENOMEM;
                (void)error_set(&h->error, -ENOMEM, "out of memory");
        }
}

static void history_receipt_build_after(uv_work_t *w, int status) {
        HistoryReceipt *h = w->data;

        (void)status;
        if (h->fail_status == 0 && h->has_record && h->status < 0)
                log_warning("receipt of key='%s' (snapshot %" PRId64
                            ") rebuilt without its manifests: %s",
                            h->key, h->entry.snapshot_id, h->error.message);
        history_receipt_finish(h);
}

static void history_receipt_build(HistoryReceipt *h) {
        h->work.data = h;
        if (uv_queue_work(h->engine->loop, &h->work, history_receipt_build_work,
                          history_receipt_build_after) < 0) {
                h->fail_status = -ENOMEM;
                (void)error_set(&h->error, -ENOMEM, "cannot queue the work");
                history_receipt_finish(h);
        }
}

static void history_receipt_on_manifests(StorageReadItem *items, size_t n_items, void *userdata) {
        HistoryReceipt *h = userdata;

        h->items = calloc(n_items + 1, sizeof(*h->items));
        if (!h->items) {
                h->fail_status = -ENOMEM;
                (void)error_set(&h->error, -ENOMEM, "out of memory");
                history_receipt_finish(h);
                return;
        }
        h->n_items = n_items;
        for (size_t i = 0; i < n_items; i++) {
                if (items[i].status < 0 && h->status == 0 && h->fail_status == 0)
                        history_receipt_read_failed(h, items[i].status, &items[i].error);
                h->items[i].data = items[i].data; /* taken */
                buf_init(&items[i].data, 0);
        }
        if (h->fail_status < 0) {
                history_receipt_finish(h);
                return;
        }
        history_receipt_build(h);
}

/* Thread pool: the list's entries up to the request's last. */
static void history_receipt_list_work(uv_work_t *w) {
        HistoryReceipt *h = w->data;
        size_t need = h->entry.list_offset + h->entry.n_manifests;
        int r;

        r = manifest_list_read_first(buf_slice(&h->list_bytes), need, &h->files, &h->n_files,
                                     &h->error);
        buf_deinit(&h->list_bytes);
        if (r == -ENOMEM) {
                h->fail_status = r;
                return;
        }
        if (r < 0) {
                h->status = r;
                return;
        }
        if (h->n_files < need) {
                h->status = error_set(&h->error, -EBADMSG,
                                      "the record names list entries %zu..%zu of %zu",
                                      h->entry.list_offset, need - 1, h->n_files);
                return;
        }
        /* The request's manifests were added by this snapshot: a record that points elsewhere
         * does not describe this list. */
        for (size_t i = h->entry.list_offset; i < need; i++)
                if (!h->files[i].has_added_snapshot_id ||
                    h->files[i].added_snapshot_id != h->entry.snapshot_id) {
                        h->status = error_set(&h->error, -EBADMSG,
                                              "list entry %zu '%s' was not added by snapshot "
                                              "%" PRId64,
                                              i, h->files[i].path, h->entry.snapshot_id);
                        return;
                }
}

static void history_receipt_list_after(uv_work_t *w, int status) {
        HistoryReceipt *h = w->data;
        CommitEngine *e = h->engine;
        _cleanup_(freep) const char **locations = NULL;
        bool is_ours = true;
        StorageContext ctx;
        int r;

        (void)status;
        if (h->fail_status < 0) {
                history_receipt_finish(h);
                return;
        }
        if (h->status < 0) {
                history_receipt_build(h);
                return;
        }
        locations = calloc(h->entry.n_manifests + 1, sizeof(*locations));
        if (!locations) {
                h->fail_status = -ENOMEM;
                (void)error_set(&h->error, -ENOMEM, "out of memory");
                history_receipt_finish(h);
                return;
        }
        for (size_t i = 0; i < h->entry.n_manifests; i++) {
                locations[i] = h->files[h->entry.list_offset + i].path;
                if (!h->metadata_dir || !storage_location_is_within(locations[i], h->metadata_dir))
                        is_ours = false;
        }
        ctx = core_storage_context(e, h->props, h->started_ns);
        /* icecommitd's copies and data-files manifests lie in the metadata directory, which
         * write.metadata.path may put outside the table location; a writer's staged manifest
         * (committed by reference) beneath the location. */
        ctx.root = is_ours ? h->metadata_dir : h->root;
        r = storage_read_many(e->storage, &ctx, locations, h->entry.n_manifests,
                              e->storage_config->max_manifest_bytes,
                              e->storage_config->s3.max_concurrent_requests,
                              history_receipt_on_manifests, h);
        if (r < 0) {
                h->fail_status = r;
                (void)error_set(&h->error, r, "cannot read the manifests");
                history_receipt_finish(h);
        }
}

static void history_receipt_on_list(StorageResult *result, void *userdata) {
        HistoryReceipt *h = userdata;

        if (result->status < 0) {
                history_receipt_read_failed(h, result->status, &result->error);
                if (h->fail_status < 0)
                        history_receipt_finish(h);
                else
                        history_receipt_build(h);
                return;
        }
        h->list_bytes = result->data;
        buf_init(&result->data, 0);
        h->work.data = h;
        if (uv_queue_work(h->engine->loop, &h->work, history_receipt_list_work,
                          history_receipt_list_after) < 0) {
                h->fail_status = -ENOMEM;
                (void)error_set(&h->error, -ENOMEM, "cannot queue the work");
                history_receipt_finish(h);
        }
}

static char *strdup_or_null(const char *s, bool *ok) {
        char *d;

        if (!s)
                return NULL;
        d = strdup(s);
        if (!d)
                *ok = false;
        return d;
}

int history_receipt_start(CommitEngine *e, const HistoryReceiptArgs *a, HistoryReceiptFn done,
                          void *userdata) {
        _cleanup_(history_receipt_freep) HistoryReceipt *h = calloc(1, sizeof(*h));
        bool ok = true;
        int r;

        if (!h)
                return -ENOMEM;
        *h = (HistoryReceipt){
                .engine = e,
                .started_ns = now_monotonic_ns(),
                .done = done,
                .userdata = userdata,
        };
        r = snapshot_record_find(a->snapshot, a->recorded_key, &h->entry);
        if (r == -ENOENT)
                return -ENOENT;
        h->has_record = r == 0;
        h->key = strdup_or_null(a->key, &ok);
        h->table = strdup_or_null(a->table, &ok);
        h->branch = strdup_or_null(h->entry.branch, &ok);
        h->list_location = strdup_or_null(h->entry.manifest_list, &ok);
        h->root = strdup_or_null(a->root, &ok);
        h->metadata_dir = strdup_or_null(a->metadata_dir, &ok);
        h->entry.branch = NULL;
        h->entry.manifest_list = NULL; /* both borrowed from the snapshot: the copies above */
        h->namespace = json_deep_copy(a->namespace);
        if (!ok || !h->key || !h->table || !h->namespace ||
            storage_props_copy(a->props, &h->props) < 0)
                return -ENOMEM;

        if (!h->has_record || h->entry.n_manifests == 0 || !h->list_location) {
                h->work.data = h;
                if (uv_queue_work(e->loop, &h->work, history_receipt_build_work,
                                  history_receipt_build_after) < 0)
                        return -ENOMEM;
        } else {
                StorageContext ctx = core_storage_context(e, h->props, h->started_ns);

                /* The list is the table's own (the snapshot names it), not a writer's. */
                r = storage_read(e->storage, &ctx, h->list_location,
                                 e->storage_config->max_manifest_bytes, history_receipt_on_list, h,
                                 &h->error);
                if (r < 0)
                        return r;
        }
        TAKE_PTR(h); /* answered through done */
        e->n_in_flight++;
        return 0;
}

static void history_receipt_on_job(json_t *receipt, int status, const Error *error,
                                   void *userdata) {
        Job *j = userdata;
        const char *type;

        if (!receipt) {
                /* Never a 4xx: the key is committed, a writer must not send it anew. */
                type = status == -ENOMEM ? "out-of-memory" : "storage-unavailable";
                answer_job_error(j, 503, type,
                                 "the key is committed, but its receipt cannot be read from the "
                                 "table now: %s; retry with the same key",
                                 error->message);
                return;
        }
        /* Not in the body: a receipt is the same bytes however it was found. */
        writer_request_add_header(j->writer, HISTORY_RECEIPT_HEADER, "true");
        answer_job(j, KEY_COMMITTED, 200, receipt);
}

void history_receipt_answer_job(Job *j, const json_t *snapshot, const TableMetadata *t,
                                const StorageProps *props) {
        const CommitRequest *r = j->writer->request;
        _cleanup_(json_decrefp) json_t *ns = request_target_namespace_json(&r->target);
        HistoryReceiptArgs a = {
                .snapshot = snapshot,
                .recorded_key = r->recorded_key,
                .key = r->idempotency_key,
                .namespace = ns,
                .table = r->target.table,
                .root = t->location,
                .metadata_dir = t->metadata_dir,
                .props = props,
        };
        int rr = ns ? history_receipt_start(j->engine, &a, history_receipt_on_job, j) : -ENOMEM;

        if (rr < 0)
                answer_job_error(j, 503, rr == -ENOMEM ? "out-of-memory" : "storage-unavailable",
                                 "the key is committed, but its receipt cannot be read from the "
                                 "table now (%s); retry with the same key",
                                 strerror(-rr));
}
