/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded catalog on a bucket (see bucket.h). Each call is one BucketJob
 * (bucket_job-internal.h), a small state machine of storage operations on the loop and of
 * thread-pool steps for the CPU work: find the latest version (bucket_version.c: the hint, a
 * listing only when the hint is missing or unusable, then HEAD v<N+1> while it exists) unless
 * the table cache holds it, read it and parse it on the pool, and for commits and creations
 * apply and encode the next version on the pool, publish it with a conditional create, then
 * the hint, then delete the metadata files that dropped out of the log (bucket_commit.c). Here:
 * the calls, namespaces, the checks before a table is created, the catalog's life. */
#define LOG_MODULE "catalog"

#include <limits.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bucket.h"
#include "catalog/bucket_commit-internal.h"
#include "catalog/bucket_job-internal.h"
#include "catalog/bucket_version-internal.h"
#include "catalog/hadoop_layout.h"
#include "catalog/table_cache.h"
#include "iceberg/table_update.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/time-util.h"
#include "util/uuid.h"

/* ---- namespaces and tables ----------------------------------------------------------------- */

static void bucket_write_marker(BucketJob *j);

static void bucket_on_marker(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;
        bool is_last = j->level + 1 == j->n_levels;

        if (r->status == -EEXIST && is_last) {
                bucket_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                "Namespace already exists: %s", j->name);
                return;
        }
        if (r->status < 0 && r->status != -EEXIST) {
                bucket_job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot create namespace %s: %s",
                                j->name, r->error.message);
                return;
        }
        if (is_last) {
                j->result.status = 0;
                bucket_job_answer(j);
                return;
        }
        j->level++;
        bucket_write_marker(j);
}

/* Parents are created as needed (mkdirs); only the last level must be new. */
static void bucket_write_marker(BucketJob *j) {
        Error e = { 0 };
        int r;

        r = storage_write(j->catalog->storage, NULL, j->markers[j->level], slice_make("", 0),
                          STORAGE_WRITE_IF_ABSENT, bucket_on_marker, j, &e);
        if (r < 0)
                (void)bucket_job_submit_error(j, r, &e);
}

static void bucket_on_table_listed(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;
        _cleanup_(json_decrefp) json_t *md = NULL;
        char uuid[UUID_STRING_MAX];
        const char *location;
        Error e = { 0 };
        int rr;

        if (r->status < 0 && r->status != -ENOENT) {
                bucket_job_fail_read(j, r);
                return;
        }
        for (size_t i = 0; i < r->n_names; i++)
                if (hadoop_layout_version_from_name(r->names[i]) > 0) {
                        bucket_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                        "Table already exists: %s", j->name);
                        return;
                }
        if (json_is_true(json_object_get(j->request, "stage-create"))) {
                bucket_job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                                "staged table creation is not supported by the filesystem catalog");
                return;
        }
        /* Path-based tables live where their path says (HadoopCatalog). */
        location = json_string_value(json_object_get(j->request, "location"));
        if (location && strcmp(location, j->dir) != 0) {
                bucket_job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                                "Cannot set a custom location for a path-based table. Expected %s "
                                "but got %s",
                                j->dir, location);
                return;
        }
        uuid_v4_string(uuid);
        rr = table_update_metadata_create(j->request, j->dir, j->now_ms, uuid, &md, &e);
        if (rr == -EINVAL) {
                bucket_job_fail(j, CATALOG_E_REJECTED, "BadRequestException", "%s", e.message);
                return;
        }
        if (rr < 0) {
                bucket_job_fail(j, rr, "", "cannot build table metadata: %s", strerror(-rr));
                return;
        }
        j->updated = TAKE_PTR(md);
        /* A concurrent create loses the conditional create of v1 and gets CONFLICT. */
        j->publish_version = 1;
        bucket_commit_build(j);
}

static void bucket_on_namespace_listed(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;
        _cleanup_(freep) char *prefix = NULL;
        Error e = { 0 };
        int rr;

        if (r->status < 0 && r->status != -ENOENT) {
                bucket_job_fail_read(j, r);
                return;
        }
        /* A namespace exists when anything is under it: our marker, or tables another tool put
         * there (S3A's directories are prefixes too). */
        if (r->n_names == 0) {
                const char *dot = strrchr(j->name, '.');

                bucket_job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchNamespaceException",
                                "Namespace does not exist: %.*s",
                                (int)(dot ? dot - j->name : (ptrdiff_t)strlen(j->name)), j->name);
                return;
        }
        if (asprintf(&prefix, "%s/metadata/v", j->dir) < 0) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        rr = storage_list(j->catalog->storage, NULL, prefix, BUCKET_MAX_LISTED_VERSIONS,
                          bucket_on_table_listed, j, &e);
        if (rr < 0)
                (void)bucket_job_submit_error(j, rr, &e);
}

static void bucket_on_started(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status < 0 && r->status != -ENOENT) {
                bucket_job_fail(j, CATALOG_E_UNAVAILABLE, "", "warehouse '%s' is not usable: %s",
                                j->catalog->warehouse, r->error.message);
                return;
        }
        j->result.status = 0;
        bucket_job_answer(j);
}

/* ---- calls ------------------------------------------------------------------------------- */

/* The latest version is in j->metadata (j->on_found, from bucket_version.c): answer a load, or
 * apply a commit (on the pool) and publish it. */
static void bucket_on_found(BucketJob *j) {
        if (j->op == BUCKET_OP_LOAD) {
                bucket_job_succeed(j, j->metadata_location, TAKE_PTR(j->metadata));
                return;
        }
        j->publish_version = j->version + 1;
        bucket_commit_build(j);
}

static int bucket_job_new(BucketCatalog *c, BucketOp op, const char *const *namespace,
                          size_t n_namespace, const char *last, const json_t *request,
                          CatalogCallback cb, void *userdata, BucketJob **ret) {
        _cleanup_(bucket_job_freep) BucketJob *j = NULL;
        _cleanup_(buf_deinitp) Buf dir = { 0 }, name = { 0 };
        int r = 0;

        if (c->is_closing)
                return -ESHUTDOWN;
        if (op != BUCKET_OP_START) {
                if (n_namespace == 0)
                        return -EINVAL;
                for (size_t i = 0; i < n_namespace; i++)
                        if (!hadoop_layout_name_is_valid(namespace[i]))
                                return -EINVAL;
                if (last && !hadoop_layout_name_is_valid(last))
                        return -EINVAL;
        }
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->catalog = c;
        j->op = op;
        j->cb = cb;
        j->userdata = userdata;
        j->in_call = true;
        j->on_found = bucket_on_found;
        j->now_ms = now_realtime_ms();
        /* S3 keys are at most 1024 bytes; with the scheme and bucket a location stays far below. */
        buf_init(&dir, PATH_MAX);
        buf_init(&name, PATH_MAX);
        r = buf_append_str(&dir, c->warehouse);
        for (size_t i = 0; r == 0 && i < n_namespace + (last ? 1 : 0); i++) {
                const char *part = i < n_namespace ? namespace[i] : last;

                r = buf_printf(&dir, "/%s", part);
                if (r == 0)
                        r = buf_printf(&name, "%s%s", i ? "." : "", part);
        }
        if (r < 0)
                return r;
        j->dir = (char *)buf_steal(&dir, NULL);
        j->name = (char *)buf_steal(&name, NULL);
        if (!j->name && !(j->name = strdup("")))
                return -ENOMEM;
        if (request && !(j->request = json_deep_copy(request)))
                return -ENOMEM;
        if (op == BUCKET_OP_CREATE_NAMESPACE) {
                const char *end = j->dir + strlen(c->warehouse);

                j->markers = calloc(n_namespace, sizeof(*j->markers));
                if (!j->markers)
                        return -ENOMEM;
                for (size_t i = 0; i < n_namespace; i++) {
                        end = strchr(end + 1, '/');
                        if (!end)
                                end = j->dir + strlen(j->dir);
                        if (asprintf(&j->markers[i], "%.*s/", (int)(end - j->dir), j->dir) < 0)
                                return -ENOMEM;
                        j->n_levels++;
                }
        }
        c->n_jobs++;
        *ret = TAKE_PTR(j);
        return 0;
}

static int bucket_start(void *impl, CatalogCallback cb, void *userdata) {
        BucketCatalog *c = impl;
        _cleanup_(freep) char *prefix = NULL;
        BucketJob *j;
        Error e = { 0 };
        int r;

        r = bucket_job_new(c, BUCKET_OP_START, NULL, 0, NULL, NULL, cb, userdata, &j);
        if (r < 0)
                return r;
        /* One listing proves the endpoint, the bucket and the credentials. */
        if (asprintf(&prefix, "%s/", c->warehouse) < 0) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return 0;
        }
        r = storage_list(c->storage, NULL, prefix, 1, bucket_on_started, j, &e);
        if (r < 0)
                bucket_job_fail(j, CATALOG_E_UNAVAILABLE, "", "warehouse '%s' is not usable: %s",
                                c->warehouse, e.message);
        j->in_call = false;
        return 0;
}

static bool bucket_is_ready(const void *impl) {
        return ((const BucketCatalog *)impl)->is_ready;
}

/* As on local disks: an unknown outcome is resolved by reloading and finding the key. */
static bool bucket_supports_idempotency(const void *impl) {
        return false;
}

static int bucket_load_table(void *impl, const char *const *namespace, size_t n_namespace,
                             const char *table, CatalogCallback cb, void *userdata) {
        BucketJob *j;
        int r;

        r = bucket_job_new(impl, BUCKET_OP_LOAD, namespace, n_namespace, table, NULL, cb, userdata,
                           &j);
        if (r < 0)
                return r;
        bucket_version_begin(j);
        j->in_call = false;
        return 0;
}

static int bucket_commit_table(void *impl, const char *const *namespace, size_t n_namespace,
                               const char *table, const json_t *request,
                               const char *idempotency_key, CatalogCallback cb, void *userdata) {
        BucketJob *j;
        int r;

        r = bucket_job_new(impl, BUCKET_OP_COMMIT, namespace, n_namespace, table, request, cb,
                           userdata, &j);
        if (r < 0)
                return r;
        bucket_version_begin(j);
        j->in_call = false;
        return 0;
}

static int bucket_create_namespace(void *impl, const char *const *namespace, size_t n_namespace,
                                   const json_t *properties, CatalogCallback cb, void *userdata) {
        BucketJob *j;
        int r;

        r = bucket_job_new(impl, BUCKET_OP_CREATE_NAMESPACE, namespace, n_namespace, NULL,
                           properties, cb, userdata, &j);
        if (r < 0)
                return r;
        if (json_object_size(j->request) > 0) {
                bucket_job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                                "Cannot create namespace %s: metadata is not supported", j->name);
                return 0;
        }
        bucket_write_marker(j);
        j->in_call = false;
        return 0;
}

static int bucket_create_table(void *impl, const char *const *namespace, size_t n_namespace,
                               const char *name, const json_t *request, CatalogCallback cb,
                               void *userdata) {
        BucketCatalog *c = impl;
        _cleanup_(freep) char *prefix = NULL;
        BucketJob *j;
        Error e = { 0 };
        int r;

        r = bucket_job_new(c, BUCKET_OP_CREATE_TABLE, namespace, n_namespace, name, request, cb,
                           userdata, &j);
        if (r < 0)
                return r;
        if (asprintf(&prefix, "%.*s/", (int)(strrchr(j->dir, '/') - j->dir), j->dir) < 0) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return 0;
        }
        r = storage_list(c->storage, NULL, prefix, 1, bucket_on_namespace_listed, j, &e);
        if (r < 0)
                (void)bucket_job_submit_error(j, r, &e);
        j->in_call = false;
        return 0;
}

static void bucket_on_close_work(uv_work_t *w) {
}

static void bucket_on_close_after(uv_work_t *w, int status) {
        BucketCatalog *c = w->data;

        assert(c->n_jobs > 0);
        c->n_jobs--;
        bucket_job_maybe_closed(c);
}

/* Jobs in flight end with their storage operations (the storage closes with the catalog). */
static void bucket_close(void *impl, void (*done)(void *userdata), void *userdata) {
        BucketCatalog *c = impl;

        if (c->is_closing)
                return;
        c->close_done = done;
        c->close_userdata = userdata;
        c->is_closing = true;
        /* Answer from the loop even when nothing is in flight: an empty job does that. */
        c->close_work.data = c;
        if (uv_queue_work(c->loop, &c->close_work, bucket_on_close_work, bucket_on_close_after) ==
            0)
                c->n_jobs++;
        else
                bucket_job_maybe_closed(c);
}

static void bucket_free(void *impl) {
        BucketCatalog *c = impl;

        if (!c)
                return;
        assert(c->n_jobs == 0);
        table_cache_free(c->cache);
        free(c->warehouse);
        free(c);
}

int bucket_catalog_new(uv_loop_t *loop, const CatalogConfig *config, Storage *storage,
                       BucketCatalog **ret) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        const char *warehouse = catalog_config_warehouse(config);
        _cleanup_(freep) BucketCatalog *c = NULL;
        size_t n;

        if (!storage || storage_location_parse(warehouse, &l, NULL) < 0 ||
            l.scheme != STORAGE_SCHEME_S3)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->loop = loop;
        c->storage = storage;
        c->warehouse = strdup(warehouse);
        if (!c->warehouse)
                return -ENOMEM;
        for (n = strlen(c->warehouse); n > 0 && c->warehouse[n - 1] == '/'; n--)
                c->warehouse[n - 1] = 0;
        c->max_metadata_bytes =
                config->max_response_bytes ? config->max_response_bytes : 256u << 20;
        if (table_cache_new(config->cache_tables, &c->cache) < 0) {
                free(c->warehouse);
                return -ENOMEM;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

const CatalogBackend bucket_catalog_backend = {
        .name = "filesystem",
        .start = bucket_start,
        .is_ready = bucket_is_ready,
        .supports_idempotency = bucket_supports_idempotency,
        .load_table = bucket_load_table,
        .commit_table = bucket_commit_table,
        .create_namespace = bucket_create_namespace,
        .create_table = bucket_create_table,
        .close = bucket_close,
        .free = bucket_free,
};
