/* SPDX-License-Identifier: Apache-2.0 */
/* The bucket catalog's jobs (bucket_job-internal.h): one per call, answered once, from the loop
 * and never inside the call that started it; their failures, the thread-pool steps they queue,
 * the table cache they feed, and the catalog's close once no job is left. Logs what a job
 * ignored. */
#define LOG_MODULE "catalog"

#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bucket_job-internal.h"
#include "util/log.h"

BucketJob *bucket_job_free(BucketJob *j) {
        if (!j)
                return NULL;
        free(j->dir);
        free(j->name);
        json_decref(j->request);
        free(j->cached_location);
        json_decref(j->cached_metadata);
        free(j->metadata_location);
        json_decref(j->metadata);
        buf_deinit(&j->read);
        json_decref(j->updated);
        buf_deinit(&j->text);
        metadata_text_memo_free(j->memo);
        json_decref(j->removed);
        free(j->publish_location);
        for (size_t i = 0; i < j->n_levels; i++)
                free(j->markers[i]);
        free(j->markers);
        json_decref(j->result.body);
        free(j);
        return NULL;
}

void bucket_job_maybe_closed(BucketCatalog *c) {
        void (*done)(void *userdata);

        if (!c->is_closing || c->n_jobs > 0 || !c->close_done)
                return;
        done = c->close_done;
        c->close_done = NULL;
        done(c->close_userdata);
}

static void bucket_on_defer_work(uv_work_t *w) {
}

static void bucket_on_defer_after(uv_work_t *w, int status) {
        BucketJob *j = w->data;

        j->in_call = false;
        bucket_job_answer(j);
}

void bucket_job_answer(BucketJob *j) {
        BucketCatalog *c = j->catalog;

        /* Callbacks never run inside the call that started them (catalog.h): an answer known at
         * once goes through the loop. uv_queue_work cannot fail on a valid loop. */
        if (j->in_call) {
                j->defer.data = j;
                if (uv_queue_work(c->loop, &j->defer, bucket_on_defer_work,
                                  bucket_on_defer_after) == 0)
                        return;
        }

        if (j->n_delete_failed > 0)
                log_warning("previous metadata files of table='%s' not deleted: n=%u first: %s, "
                            "ignoring",
                            j->name, j->n_delete_failed, j->delete_warning);
        /* The memo goes back to the table's entry, which by now is the version this job
         * published (or read); when the table is no longer cached it is freed. */
        if (j->memo)
                table_cache_give_memo(c->cache, j->dir, TAKE_PTR(j->memo));
        if (j->op == BUCKET_OP_START && j->result.status == 0)
                c->is_ready = true;
        if (j->cb)
                j->cb(&j->result, j->userdata);
        bucket_job_free(j);
        assert(c->n_jobs > 0);
        c->n_jobs--;
        bucket_job_maybe_closed(c);
}

/* Records a failure without answering (also from a pool step). */
_printf_(4, 5) void bucket_job_set_failure(BucketJob *j, int status, const char *type,
                                           const char *fmt, ...) {
        va_list ap;
        char text[2048];

        va_start(ap, fmt);
        (void)vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        j->result.status = status;
        catalog_result_set_message(&j->result, "%s", text);
        (void)snprintf(j->result.error_type, sizeof(j->result.error_type), "%s", type);
}

_printf_(4, 5) void bucket_job_fail(BucketJob *j, int status, const char *type, const char *fmt,
                                    ...) {
        va_list ap;
        char text[2048];

        va_start(ap, fmt);
        (void)vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        bucket_job_set_failure(j, status, type, "%s", text);
        bucket_job_answer(j);
}

/* A storage failure while reading: the table's files are not there, or the store is not. */
void bucket_job_fail_read(BucketJob *j, const StorageResult *r) {
        if (r->status == -ENOENT)
                bucket_job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchTableException",
                                "Table does not exist: %s", j->name);
        else if (r->status == -EFBIG)
                bucket_job_fail(j, -E2BIG, "", "%s", r->error.message);
        else if (r->status == -ECANCELED)
                bucket_job_fail(j, -ECANCELED, "", "%s", r->error.message);
        else
                bucket_job_fail(j, CATALOG_E_UNAVAILABLE, "", "%s", r->error.message);
}

int bucket_job_submit_error(BucketJob *j, int r, const Error *e) {
        bucket_job_fail(j, r == -ENOMEM ? -ENOMEM : CATALOG_E_UNAVAILABLE, "", "%s", e->message);
        return r;
}

void bucket_job_succeed(BucketJob *j, const char *metadata_location, json_t *metadata_take) {
        /* The body shares the metadata with the cache: nobody changes either (catalog.h). */
        j->result.status = 0;
        j->result.body = json_pack("{s:s, s:o}", "metadata-location", metadata_location, "metadata",
                                   metadata_take);
        if (!j->result.body) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        bucket_job_answer(j);
}

void bucket_job_queue_work(BucketJob *j, uv_work_cb work, uv_after_work_cb after_work) {
        j->work_status = 0;
        j->work.data = j;
        if (uv_queue_work(j->catalog->loop, &j->work, work, after_work) < 0)
                bucket_job_fail(j, -ENOMEM, "", "cannot queue work");
}

/* ---- the table cache ----------------------------------------------------------------------- */

/* Forgets the table's cached version when it is `version` or older: a newer one another job
 * put in the meantime stays. */
void bucket_job_cache_drop(BucketCatalog *c, const char *table, int64_t version) {
        const TableCacheEntry *e = table_cache_get(c->cache, table);

        if (e && e->version <= version)
                table_cache_drop(c->cache, table);
}

void bucket_job_cache_put(BucketJob *j, int64_t version, const char *location, json_t *metadata,
                          uint64_t size) {
        /* An object's stamp is its size: HEAD gives nothing else every store keeps stable. */
        TableCacheStamp stamp = { .size = size };

        if (table_cache_put(j->catalog->cache, j->dir, version, location, metadata, &stamp) < 0)
                log_debug("table='%s' not cached: out of memory", j->name);
}
