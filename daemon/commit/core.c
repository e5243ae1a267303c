/* SPDX-License-Identifier: Apache-2.0 */
/* The services every part of the commit engine uses (core.h): files deleted in the background,
 * storage contexts, metadata trees freed off the loop, storage failures in writer-API terms, the
 * storage roots, and the end of a stop. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <stdlib.h>

#include "commit/core.h"
#include "storage/roots.h"
#include "util/log.h"

/* A table's metadata tree of a long history is megabytes of small allocations: freeing it is
 * tens of milliseconds, which the loop must not spend (docs/design.md section 12). jansson's
 * reference counts are atomic (JSON_HAVE_ATOMIC_BUILTINS), so the last reference may go on a
 * thread of the pool. */
typedef struct JsonRelease {
        uv_work_t work;
        CommitEngine *engine;
        json_t *json;
} JsonRelease;

static void core_release_work(uv_work_t *w) {
        JsonRelease *r = w->data;

        json_decref(TAKE_PTR(r->json));
}

static void core_release_after(uv_work_t *w, int status) {
        JsonRelease *r = w->data;
        CommitEngine *e = r->engine;

        (void)status;
        json_decref(r->json); /* cancelled (stopping): here after all */
        free(r);
        e->n_in_flight--;
        core_maybe_stopped(e);
}

void core_release_json(CommitEngine *e, json_t *json) {
        JsonRelease *r;

        if (!json)
                return;
        /* Not the last reference, or no room to hand it over: an ordinary decrement. */
        if (json->refcount > 1 || !(r = calloc(1, sizeof(*r)))) {
                json_decref(json);
                return;
        }
        *r = (JsonRelease){ .engine = e, .json = json };
        r->work.data = r;
        if (uv_queue_work(e->loop, &r->work, core_release_work, core_release_after) < 0) {
                free(r);
                json_decref(json);
                return;
        }
        e->n_in_flight++;
}

void core_release_table(CommitEngine *e, TableMetadata *t) {
        json_t *metadata;

        if (!t)
                return;
        metadata = TAKE_PTR(t->metadata);
        table_metadata_free(t);
        core_release_json(e, metadata);
}

/* Deletes files whose attempt is known not to be committed; a failure only leaves garbage. */
static void core_on_deleted(StorageResult *result, void *userdata) {
        CommitEngine *e = userdata;

        if (result->status < 0)
                log_warning("cannot delete an uncommitted file, leaving it: %s",
                            result->error.message);
        e->n_in_flight--;
        core_maybe_stopped(e);
}

void core_delete_file(CommitEngine *e, const StorageProps *props, char *location /* stolen */) {
        _cleanup_(freep) char *l = location;
        StorageContext ctx = { .props = props };

        if (!l)
                return;
        if (storage_delete(e->storage, &ctx, l, core_on_deleted, e, NULL) < 0)
                return;
        e->n_in_flight++;
}

StorageContext core_storage_context(const CommitEngine *e, const StorageProps *props,
                                    uint64_t accepted_ns) {
        return (StorageContext){
                .props = props,
                .deadline_ns = accepted_ns + e->config->total_timeout_ms * 1000000ull,
        };
}

int core_check_table_roots(const CommitEngine *e, const TableMetadata *t, const char **ret_type,
                           Error *error) {
        return storage_roots_refuse_table(storage_roots(e->storage), t->location,
                                          json_object_get(t->metadata, "properties"), ret_type,
                                          error);
}

int core_storage_http_status(int status, const char **ret_type, const char *permanent_type) {
        if (storage_status_is_transient(status)) {
                *ret_type = status == -ENOMEM ? "out-of-memory" : "storage-unavailable";
                return 503;
        }
        switch (status) {
        case -EACCES:
                *ret_type = "storage-access-denied";
                return 403;
        case -EFBIG:
                *ret_type = permanent_type;
                return 413;
        case -EREMOTEIO:
                *ret_type = "storage-error";
                return 502;
        default:
                *ret_type = permanent_type;
                return 422;
        }
}

void core_maybe_stopped(CommitEngine *e) {
        if (!e->is_stopping || !e->stop_done || e->n_in_flight > 0 || e->n_batches > 0)
                return;
        e->on_quiet(e);
}
