/* SPDX-License-Identifier: Apache-2.0 */
/* The filesystem catalog (see filesystem.h). Each call becomes one FsJob
 * (filesystem_job-internal.h): the loop thread here validates and copies the inputs, a
 * thread-pool worker does all file I/O and fills the result (filesystem_ops.c, on the versions
 * of filesystem_version.c), and the after-work callback (loop thread, here) answers and frees
 * the job. */
#define LOG_MODULE "catalog"

#include <limits.h>
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog/filesystem.h"
#include "catalog/filesystem_job-internal.h"
#include "catalog/filesystem_ops-internal.h"
#include "catalog/hadoop_layout.h"
#include "catalog/table_cache.h"
#include "storage/storage.h"
#include "util/buf.h"
#include "util/log.h"

#define VERSION_HINT HADOOP_LAYOUT_VERSION_HINT
#define METADATA_SUFFIX HADOOP_LAYOUT_METADATA_SUFFIX

struct FsCatalog {
        uv_loop_t *loop;
        char *warehouse; /* normalized absolute path; immutable, read by workers */
        uint64_t max_metadata_bytes;
        TableCache *cache; /* loop thread only: jobs get a reference to their table's entry */
        bool is_ready;
        bool is_closing;
        unsigned n_jobs; /* queued on the thread pool, not yet answered */
        void (*close_done)(void *userdata);
        void *close_userdata;
};

static int64_t now_ms(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- paths ------------------------------------------------------------------------------- */

/* <warehouse>/<level>/.../<last> and "level. ... .last"; last may be NULL. */
static int paths_build(const FsCatalog *c, const char *const *namespace, size_t n_namespace,
                       const char *last, char **ret_dir, char **ret_name) {
        _cleanup_(buf_deinitp) Buf dir = { 0 }, name = { 0 };
        int r = 0;

        if (n_namespace == 0)
                return -EINVAL;
        for (size_t i = 0; i < n_namespace; i++)
                if (!hadoop_layout_name_is_valid(namespace[i]))
                        return -EINVAL;
        if (last && !hadoop_layout_name_is_valid(last))
                return -EINVAL;
        /* A path the kernel takes; names are validated above, so only their length can fail. */
        buf_init(&dir, PATH_MAX);
        buf_init(&name, PATH_MAX);
        r = buf_append_str(&dir, c->warehouse);
        for (size_t i = 0; r == 0 && i <= n_namespace; i++) {
                const char *part = i < n_namespace ? namespace[i] : last;

                if (!part)
                        break;
                r = buf_append_str(&dir, strcmp(c->warehouse, "/") == 0 && i == 0 ? "" : "/");
                if (r == 0)
                        r = buf_append_str(&dir, part);
                if (r == 0 && i > 0)
                        r = buf_append_str(&name, ".");
                if (r == 0)
                        r = buf_append_str(&name, part);
        }
        if (r < 0)
                return r;
        *ret_dir = (char *)buf_steal(&dir, NULL);
        *ret_name = (char *)buf_steal(&name, NULL);
        return 0;
}

/* ---- the loop side ------------------------------------------------------------------------ */

static void job_after_work(uv_work_t *work, int status) {
        _cleanup_(filesystem_job_freep) FsJob *j = work->data;
        FsCatalog *c = j->catalog;

        assert(c->n_jobs > 0);
        c->n_jobs--;
        if (j->warning[0])
                log_warning("version hint of table='%s' not updated: %s, ignoring", j->name,
                            j->warning);
        if (j->n_delete_failed > 0)
                log_warning("previous metadata files of table='%s' not deleted: n=%u first: %s, "
                            "ignoring",
                            j->name, j->n_delete_failed, j->delete_warning);
        if (j->cache_drop)
                table_cache_drop(c->cache, j->dir);
        if (j->put_metadata && table_cache_put(c->cache, j->dir, j->put_version, j->put_location,
                                               j->put_metadata, &j->put_stamp) < 0)
                log_debug("table='%s' not cached: out of memory", j->name);
        if (j->memo)
                table_cache_give_memo(c->cache, j->dir, TAKE_PTR(j->memo));
        if (j->op == FS_OP_START && j->result.status == 0)
                c->is_ready = true;
        if (j->cb)
                j->cb(&j->result, j->userdata);
        if (c->is_closing && c->n_jobs == 0 && c->close_done) {
                void (*done)(void *) = c->close_done;

                c->close_done = NULL;
                done(c->close_userdata);
        }
}

static int job_new(FsCatalog *c, FsOp op, CatalogCallback cb, void *userdata, FsJob **ret) {
        FsJob *j;

        if (c->is_closing)
                return -ESHUTDOWN;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->catalog = c;
        j->warehouse = c->warehouse;
        j->max_metadata_bytes = c->max_metadata_bytes;
        j->op = op;
        j->cb = cb;
        j->userdata = userdata;
        j->now_ms = now_ms();
        j->work.data = j;
        *ret = j;
        return 0;
}

static int job_queue(FsJob *j) {
        int r = uv_queue_work(j->catalog->loop, &j->work, filesystem_ops_work, job_after_work);

        if (r < 0)
                return r;
        j->catalog->n_jobs++;
        return 0;
}

/* Creates, fills and queues a job; on failure nothing was queued and cb will not run. */
static int job_start(FsCatalog *c, FsOp op, const char *const *namespace, size_t n_namespace,
                     const char *last, const json_t *request, CatalogCallback cb, void *userdata) {
        _cleanup_(filesystem_job_freep) FsJob *j = NULL;
        int r;

        r = job_new(c, op, cb, userdata, &j);
        if (r < 0)
                return r;
        r = paths_build(c, namespace, n_namespace, last, &j->dir, &j->name);
        if (r < 0)
                return r;
        if (op == FS_OP_LOAD || op == FS_OP_COMMIT) {
                const TableCacheEntry *e = table_cache_get(c->cache, j->dir);

                if (e) {
                        j->cached_location = strdup(e->metadata_location);
                        if (!j->cached_location)
                                return -ENOMEM;
                        j->cached_metadata = json_incref(e->metadata);
                        j->cached_version = e->version;
                        j->cached_stamp = e->stamp;
                }
                if (op == FS_OP_COMMIT)
                        j->memo = table_cache_take_memo(c->cache, j->dir);
        }
        if (request) {
                /* jansson is not thread-safe: the worker gets its own copy. */
                j->request = json_deep_copy(request);
                if (!j->request)
                        return -ENOMEM;
        }
        r = job_queue(j);
        if (r < 0)
                return r;
        TAKE_PTR(j);
        return 0;
}

int filesystem_catalog_new(uv_loop_t *loop, const CatalogConfig *config, FsCatalog **ret_catalog) {
        _cleanup_(freep) FsCatalog *c = NULL;
        int r;

        const char *warehouse = catalog_config_warehouse(config);

        if (warehouse[0] == '\0')
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        r = storage_path_from_location(warehouse, &c->warehouse, NULL);
        if (r < 0)
                return r == -ENOMEM ? r : -EINVAL;
        c->loop = loop;
        c->max_metadata_bytes =
                config->max_response_bytes ? config->max_response_bytes : 256u << 20;
        r = table_cache_new(config->cache_tables, &c->cache);
        if (r < 0) {
                free(c->warehouse);
                return r;
        }
        *ret_catalog = TAKE_PTR(c);
        return 0;
}

static int fs_catalog_start(void *impl, CatalogCallback cb, void *userdata) {
        FsCatalog *c = impl;
        _cleanup_(filesystem_job_freep) FsJob *j = NULL;
        int r;

        r = job_new(c, FS_OP_START, cb, userdata, &j);
        if (r < 0)
                return r;
        j->name = strdup(c->warehouse);
        if (!j->name)
                return -ENOMEM;
        r = job_queue(j);
        if (r < 0)
                return r;
        TAKE_PTR(j);
        return 0;
}

static bool fs_catalog_is_ready(const void *impl) {
        const FsCatalog *c = impl;

        return c->is_ready;
}

static int fs_catalog_load_table(void *impl, const char *const *namespace, size_t n_namespace,
                                 const char *table, CatalogCallback cb, void *userdata) {
        FsCatalog *c = impl;

        if (!table)
                return -EINVAL;
        return job_start(c, FS_OP_LOAD, namespace, n_namespace, table, /* request= */ NULL, cb,
                         userdata);
}

static int fs_catalog_commit_table(void *impl, const char *const *namespace, size_t n_namespace,
                                   const char *table, const json_t *request,
                                   const char *idempotency_key, CatalogCallback cb,
                                   void *userdata) {
        FsCatalog *c = impl;

        /* No replay cache: a committed request is found again by its snapshot summary. */
        (void)idempotency_key;
        if (!table || !json_is_object(request))
                return -EINVAL;
        return job_start(c, FS_OP_COMMIT, namespace, n_namespace, table, request, cb, userdata);
}

static int fs_catalog_create_namespace(void *impl, const char *const *namespace, size_t n_namespace,
                                       const json_t *properties, CatalogCallback cb,
                                       void *userdata) {
        FsCatalog *c = impl;

        if (properties && !json_is_object(properties))
                return -EINVAL;
        return job_start(c, FS_OP_CREATE_NAMESPACE, namespace, n_namespace, /* last= */ NULL,
                         properties, cb, userdata);
}

static int fs_catalog_create_table(void *impl, const char *const *namespace, size_t n_namespace,
                                   const char *name, const json_t *request, CatalogCallback cb,
                                   void *userdata) {
        FsCatalog *c = impl;
        _cleanup_(json_decrefp) json_t *named = NULL;

        if (!name || !json_is_object(request))
                return -EINVAL;
        named = json_deep_copy(request);
        if (!named)
                return -ENOMEM;
        if (json_object_set_new(named, "name", json_string(name)) < 0)
                return -ENOMEM;
        return job_start(c, FS_OP_CREATE_TABLE, namespace, n_namespace, name, named, cb, userdata);
}

static void fs_catalog_close(void *impl, void (*done)(void *userdata), void *userdata) {
        FsCatalog *c = impl;
        FsJob *j = NULL;

        if (c->is_closing)
                return;
        c->close_done = done;
        c->close_userdata = userdata;
        /* Answer from the loop even when nothing is in flight: an empty job does that. The
         * close job is queued before is_closing is set, and counts as work in flight. */
        if (job_new(c, FS_OP_CLOSE, /* cb= */ NULL, NULL, &j) < 0 || job_queue(j) < 0) {
                filesystem_job_free(j);
                c->is_closing = true;
                if (c->n_jobs == 0 && done)
                        done(userdata); /* out of memory: better now than never */
                c->close_done = NULL;
                return;
        }
        c->is_closing = true;
}

FsCatalog *filesystem_catalog_free(FsCatalog *c) {
        if (!c)
                return NULL;
        assert(c->n_jobs == 0);
        table_cache_free(c->cache);
        free(c->warehouse);
        free(c);
        return NULL;
}

/* ---- as a catalog backend (catalog.h) ------------------------------------------------------ */

/* Exactly-once rests on the idempotency keys in snapshot summaries: an unknown outcome is
 * resolved by reloading, which a local rename makes cheap. */
static bool fs_catalog_supports_idempotency(const void *impl) {
        return false;
}

/* The interface's free returns nothing; filesystem_catalog_free() returns NULL. */
static void fs_catalog_free(void *impl) {
        filesystem_catalog_free(impl);
}

const CatalogBackend filesystem_catalog_backend = {
        .name = "filesystem",
        .start = fs_catalog_start,
        .is_ready = fs_catalog_is_ready,
        .supports_idempotency = fs_catalog_supports_idempotency,
        .load_table = fs_catalog_load_table,
        .commit_table = fs_catalog_commit_table,
        .create_namespace = fs_catalog_create_namespace,
        .create_table = fs_catalog_create_table,
        .close = fs_catalog_close,
        .free = fs_catalog_free,
};
