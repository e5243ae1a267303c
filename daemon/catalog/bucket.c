/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded catalog on a bucket (see bucket.h). Each call is one BucketJob, a small state
 * machine of storage operations: find the latest version (the hint, a listing only when the
 * hint is missing or unusable, then HEAD v<N+1> while it exists), read it, and for commits and
 * creations publish the next version with a conditional create, then the hint. */
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
#include "catalog/hadoop_layout.h"
#include "iceberg/table_update.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/time-util.h"
#include "util/uuid.h"

#define VERSION_HINT HADOOP_LAYOUT_VERSION_HINT
/* Version files listed at most when the hint is unusable (a table with more is read from the
 * highest of the first ones, then stepped forward by HEAD). */
#define BUCKET_MAX_LISTED_VERSIONS 100000

struct BucketCatalog {
        uv_loop_t *loop;
        Storage *storage;
        char *warehouse; /* s3://bucket/path, no trailing '/' */
        uint64_t max_metadata_bytes;
        bool is_ready;
        bool is_closing;
        unsigned n_jobs;
        uv_work_t close_work; /* answers close() from the loop */
        void (*close_done)(void *userdata);
        void *close_userdata;
};

typedef enum BucketOp {
        BUCKET_OP_START,
        BUCKET_OP_LOAD,
        BUCKET_OP_COMMIT,
        BUCKET_OP_CREATE_NAMESPACE,
        BUCKET_OP_CREATE_TABLE,
} BucketOp;

/* Owned by the catalog from its start until it answers. */
typedef struct BucketJob {
        BucketCatalog *catalog;
        BucketOp op;
        char *dir;  /* the table's (or namespace's) location */
        char *name; /* "ns.t" for messages */
        json_t *request;
        int64_t now_ms;
        int64_t version;         /* the latest found */
        char *metadata_location; /* ... its file */
        json_t *metadata;        /* ... parsed */
        char *text;              /* a version being published */
        char *publish_location;
        int64_t publish_version;
        size_t level; /* create namespace: the marker being written */
        size_t n_levels;
        char **markers;
        CatalogResult result;
        CatalogCallback cb;
        void *userdata;
        bool in_call; /* inside the call that started it: answer later */
        uv_work_t defer;
} BucketJob;

static BucketJob *bucket_job_free(BucketJob *j) {
        if (!j)
                return NULL;
        free(j->dir);
        free(j->name);
        json_decref(j->request);
        free(j->metadata_location);
        json_decref(j->metadata);
        free(j->text);
        free(j->publish_location);
        for (size_t i = 0; i < j->n_levels; i++)
                free(j->markers[i]);
        free(j->markers);
        json_decref(j->result.body);
        free(j);
        return NULL;
}

DEFINE_CLEANUP_FUNC(BucketJob, bucket_job_free);

static void bucket_maybe_closed(BucketCatalog *c);

static void bucket_job_answer(BucketJob *j);

static void bucket_on_defer_work(uv_work_t *w) {
}

static void bucket_on_defer_after(uv_work_t *w, int status) {
        BucketJob *j = w->data;

        j->in_call = false;
        bucket_job_answer(j);
}

static void bucket_job_answer(BucketJob *j) {
        BucketCatalog *c = j->catalog;

        /* Callbacks never run inside the call that started them (catalog.h): an answer known at
         * once goes through the loop. uv_queue_work cannot fail on a valid loop. */
        if (j->in_call) {
                j->defer.data = j;
                if (uv_queue_work(c->loop, &j->defer, bucket_on_defer_work,
                                  bucket_on_defer_after) == 0)
                        return;
        }

        if (j->op == BUCKET_OP_START && j->result.status == 0)
                c->is_ready = true;
        if (j->cb)
                j->cb(&j->result, j->userdata);
        bucket_job_free(j);
        assert(c->n_jobs > 0);
        c->n_jobs--;
        bucket_maybe_closed(c);
}

_printf_(4, 5) static void bucket_job_fail(BucketJob *j, int status, const char *type,
                                           const char *fmt, ...) {
        va_list ap;
        char text[2048];

        va_start(ap, fmt);
        (void)vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        j->result.status = status;
        catalog_result_set_message(&j->result, "%s", text);
        (void)snprintf(j->result.error_type, sizeof(j->result.error_type), "%s", type);
        bucket_job_answer(j);
}

/* A storage failure while reading: the table's files are not there, or the store is not. */
static void bucket_job_fail_read(BucketJob *j, const StorageResult *r) {
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

static int bucket_submit_error(BucketJob *j, int r, const Error *e) {
        bucket_job_fail(j, r == -ENOMEM ? -ENOMEM : CATALOG_E_UNAVAILABLE, "", "%s", e->message);
        return r;
}

/* ---- finding and reading the latest version ----------------------------------------------- */

static void bucket_found(BucketJob *j);
static void bucket_probe(BucketJob *j);

static void bucket_on_read(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;
        json_error_t json_error;
        _cleanup_(json_decrefp) json_t *md = NULL;

        if (r->status < 0) {
                bucket_job_fail_read(j, r);
                return;
        }
        md = json_loadb(buf_str(&r->data), r->data.len, JSON_REJECT_DUPLICATES, &json_error);
        if (!json_is_object(md)) {
                bucket_job_fail(j, -EBADMSG, "", "'%s' is not table metadata: line %d: %s",
                                j->metadata_location, json_error.line,
                                md ? "not an object" : json_error.text);
                return;
        }
        j->metadata = TAKE_PTR(md);
        bucket_found(j);
}

static void bucket_read_version(BucketJob *j) {
        Error e = { 0 };
        int r;

        free(j->metadata_location);
        j->metadata_location = hadoop_layout_version_location(j->dir, j->version);
        if (!j->metadata_location) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        r = storage_read(j->catalog->storage, NULL, j->metadata_location,
                         j->catalog->max_metadata_bytes, bucket_on_read, j, &e);
        if (r < 0)
                (void)bucket_submit_error(j, r, &e);
}

static void bucket_on_probe(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status == 0) {
                j->version++;
                bucket_probe(j);
                return;
        }
        if (r->status != -ENOENT) {
                bucket_job_fail_read(j, r);
                return;
        }
        if (j->version == 0) {
                bucket_job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchTableException",
                                "Table does not exist: %s", j->name);
                return;
        }
        bucket_read_version(j);
}

/* The hint may lag behind the last commit: step forward while v<N+1> exists. */
static void bucket_probe(BucketJob *j) {
        _cleanup_(freep) char *next = hadoop_layout_version_location(j->dir, j->version + 1);
        Error e = { 0 };
        int r;

        if (!next) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        r = storage_size(j->catalog->storage, NULL, next, bucket_on_probe, j, &e);
        if (r < 0)
                (void)bucket_submit_error(j, r, &e);
}

static void bucket_on_list(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status < 0 && r->status != -ENOENT) {
                bucket_job_fail_read(j, r);
                return;
        }
        j->version = 0;
        for (size_t i = 0; i < r->n_names; i++) {
                int64_t v = hadoop_layout_version_from_name(r->names[i]);

                if (v > j->version)
                        j->version = v;
        }
        bucket_probe(j);
}

static void bucket_on_hint(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;
        _cleanup_(freep) char *prefix = NULL;
        Error e = { 0 };
        int64_t v;
        int rr;

        if (r->status == 0 && (v = hadoop_layout_hint_parse(buf_str(&r->data), r->data.len)) > 0) {
                j->version = v;
                bucket_probe(j);
                return;
        }
        if (r->status < 0 && r->status != -ENOENT && r->status != -EFBIG) {
                bucket_job_fail_read(j, r);
                return;
        }
        /* No usable hint: list the version files, as HadoopTableOperations.findVersion() does.
         * Only then: a commit never lists the prefix while the hint is there. */
        if (asprintf(&prefix, "%s/metadata/v", j->dir) < 0) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        rr = storage_list(j->catalog->storage, NULL, prefix, BUCKET_MAX_LISTED_VERSIONS,
                          bucket_on_list, j, &e);
        if (rr < 0)
                (void)bucket_submit_error(j, rr, &e);
}

static void bucket_find_latest(BucketJob *j) {
        _cleanup_(freep) char *hint = NULL;
        Error e = { 0 };
        int r;

        if (asprintf(&hint, "%s/metadata/" VERSION_HINT, j->dir) < 0) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        r = storage_read(j->catalog->storage, NULL, hint, 64, bucket_on_hint, j, &e);
        if (r < 0)
                (void)bucket_submit_error(j, r, &e);
}

/* ---- publishing a version ------------------------------------------------------------------ */

static void bucket_succeed(BucketJob *j, const char *metadata_location, json_t *metadata_take) {
        j->result.status = 0;
        j->result.body = json_pack("{s:s, s:o}", "metadata-location", metadata_location, "metadata",
                                   metadata_take);
        if (!j->result.body) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        bucket_job_answer(j);
}

static void bucket_on_hint_written(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        /* The hint only speeds up reads (readers step forward from it). */
        if (r->status < 0)
                log_warning("version hint of table='%s' not updated: %s, ignoring", j->name,
                            r->error.message);
        free(j->text);
        j->text = NULL;
        bucket_succeed(j, j->publish_location, TAKE_PTR(j->metadata));
}

static void bucket_write_hint(BucketJob *j) {
        _cleanup_(freep) char *hint = NULL;
        Error e = { 0 };
        int r;

        free(j->text);
        if (asprintf(&j->text, "%" PRId64, j->publish_version) < 0 ||
            asprintf(&hint, "%s/metadata/" VERSION_HINT, j->dir) < 0) {
                j->text = NULL;
                bucket_succeed(j, j->publish_location, TAKE_PTR(j->metadata));
                return;
        }
        r = storage_write(j->catalog->storage, NULL, hint, slice_make(j->text, strlen(j->text)),
                          /* flags= */ 0, bucket_on_hint_written, j, &e);
        if (r < 0) {
                log_warning("version hint of table='%s' not updated: %s, ignoring", j->name,
                            e.message);
                bucket_succeed(j, j->publish_location, TAKE_PTR(j->metadata));
        }
}

static void bucket_on_published(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status == -EEXIST) {
                if (j->op == BUCKET_OP_CREATE_TABLE)
                        bucket_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                        "Table already exists: %s", j->name);
                else
                        bucket_job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException",
                                        "Version %" PRId64 " already exists: %s",
                                        j->publish_version, j->publish_location);
                return;
        }
        if (r->status < 0) {
                /* A PUT whose answer was lost may have landed: only a reload can tell. Refused
                 * requests (403, 4xx) and ones never sent wrote nothing. */
                bool maybe =
                        r->status == -EAGAIN || r->status == -ETIMEDOUT || r->status == -ECANCELED;

                bucket_job_fail(j, maybe ? CATALOG_E_STATE_UNKNOWN : CATALOG_E_UNAVAILABLE, "",
                                "cannot create '%s': %s", j->publish_location, r->error.message);
                return;
        }
        bucket_write_hint(j);
}

/* Publishes j->metadata as v<version> with a create that never replaces. */
static void bucket_publish(BucketJob *j, int64_t version) {
        Error e = { 0 };
        int r;

        j->publish_version = version;
        free(j->publish_location);
        j->publish_location = hadoop_layout_version_location(j->dir, version);
        free(j->text);
        j->text = json_dumps(j->metadata, JSON_COMPACT); /* as Java's TableMetadataParser */
        if (!j->publish_location || !j->text) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        r = storage_write(j->catalog->storage, NULL, j->publish_location,
                          slice_make(j->text, strlen(j->text)), STORAGE_WRITE_IF_ABSENT,
                          bucket_on_published, j, &e);
        if (r < 0)
                (void)bucket_submit_error(j, r, &e);
}

/* The latest version is in j->metadata: answer a load, or apply a commit and publish it. */
static void bucket_found(BucketJob *j) {
        _cleanup_(json_decrefp) json_t *updated = NULL;
        Error e = { 0 };
        int r;

        if (j->op == BUCKET_OP_LOAD) {
                bucket_succeed(j, j->metadata_location, TAKE_PTR(j->metadata));
                return;
        }
        r = table_update_apply(j->metadata, j->request, j->now_ms, j->metadata_location, &updated,
                               &e);
        if (r == -ESTALE) {
                bucket_job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException", "%s", e.message);
                return;
        }
        if (r == -EINVAL) {
                bucket_job_fail(j, CATALOG_E_REJECTED, "BadRequestException", "%s", e.message);
                return;
        }
        if (r < 0) {
                bucket_job_fail(j, r, "", "cannot apply the commit: %s", strerror(-r));
                return;
        }
        /* Like the REST server: a commit without updates changes nothing and writes nothing. */
        if (json_array_size(json_object_get(j->request, "updates")) == 0) {
                bucket_succeed(j, j->metadata_location, TAKE_PTR(j->metadata));
                return;
        }
        json_decref(j->metadata);
        j->metadata = TAKE_PTR(updated);
        bucket_publish(j, j->version + 1);
}

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
                (void)bucket_submit_error(j, r, &e);
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
        j->metadata = TAKE_PTR(md);
        /* A concurrent create loses the conditional create of v1 and gets CONFLICT. */
        bucket_publish(j, 1);
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
                (void)bucket_submit_error(j, rr, &e);
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
        bucket_find_latest(j);
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
        bucket_find_latest(j);
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
                (void)bucket_submit_error(j, r, &e);
        j->in_call = false;
        return 0;
}

static void bucket_on_close_work(uv_work_t *w) {
}

static void bucket_maybe_closed(BucketCatalog *c) {
        void (*done)(void *userdata);

        if (!c->is_closing || c->n_jobs > 0 || !c->close_done)
                return;
        done = c->close_done;
        c->close_done = NULL;
        done(c->close_userdata);
}

static void bucket_on_close_after(uv_work_t *w, int status) {
        BucketCatalog *c = w->data;

        assert(c->n_jobs > 0);
        c->n_jobs--;
        bucket_maybe_closed(c);
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
                bucket_maybe_closed(c);
}

static void bucket_free(void *impl) {
        BucketCatalog *c = impl;

        if (!c)
                return;
        assert(c->n_jobs == 0);
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
