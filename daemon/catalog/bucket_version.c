/* SPDX-License-Identifier: Apache-2.0 */
/* Finding and reading the latest version of a bucket catalog's table (bucket_version-internal.h):
 * the table cache's version when its object is unchanged (and, for a load, no v<N+1> exists),
 * else the hint, a listing only when the hint is missing or unusable, then HEAD v<N+1> while it
 * exists; the metadata read is parsed on the thread pool. Ends in j->on_found, or answers the
 * job with the failure. */
#define LOG_MODULE "catalog"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bucket_version-internal.h"
#include "catalog/hadoop_layout.h"
#include "util/log.h"

#define VERSION_HINT HADOOP_LAYOUT_VERSION_HINT

static void bucket_find_latest(BucketJob *j);
static void bucket_probe(BucketJob *j);

static json_t *json_decref_null(json_t *v) {
        json_decref(v);
        return NULL;
}

static void bucket_work_parse(BucketJob *j) {
        json_error_t json_error;
        json_t *md;

        md = json_loadb(buf_str(&j->read), j->read.len, JSON_REJECT_DUPLICATES, &json_error);
        if (!json_is_object(md)) {
                json_decref(md);
                bucket_job_set_failure(j, -EBADMSG, "", "'%s' is not table metadata: line %d: %s",
                                       j->metadata_location, json_error.line,
                                       md ? "not an object" : json_error.text);
                j->work_status = -EBADMSG;
                return;
        }
        j->metadata = md;
}

/* Thread pool: j->read -> j->metadata (a long history is megabytes of JSON). */
static void bucket_on_parse(uv_work_t *w) {
        bucket_work_parse(w->data);
}

static void bucket_on_parsed(uv_work_t *w, int status) {
        BucketJob *j = w->data;

        if (j->work_status < 0) {
                bucket_job_answer(j);
                return;
        }
        bucket_job_cache_put(j, j->version, j->metadata_location, j->metadata, j->read.len);
        buf_deinit(&j->read);
        j->on_found(j);
}

static void bucket_on_read(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status < 0) {
                bucket_job_fail_read(j, r);
                return;
        }
        /* Parsed on the pool: a long history is megabytes of JSON. */
        buf_deinit(&j->read);
        j->read = r->data;
        buf_init(&r->data, 0);
        bucket_job_queue_work(j, bucket_on_parse, bucket_on_parsed);
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
                (void)bucket_job_submit_error(j, r, &e);
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
                (void)bucket_job_submit_error(j, r, &e);
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
                (void)bucket_job_submit_error(j, rr, &e);
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
                (void)bucket_job_submit_error(j, r, &e);
}

/* The cached version was not the latest: forget it and do what a commit without the cache
 * does, once. */
void bucket_version_retry_from_latest(BucketJob *j) {
        log_debug("table='%s' version=%" PRId64 " cached is not the latest, reading the latest",
                  j->name, j->version);
        bucket_job_cache_drop(j->catalog, j->dir, j->version);
        j->from_cache = false;
        j->result = (CatalogResult){ 0 };
        j->metadata = json_decref_null(j->metadata);
        j->updated = json_decref_null(j->updated);
        j->removed = json_decref_null(j->removed);
        buf_deinit(&j->text);
        j->n_delete_failed = 0;
        bucket_find_latest(j);
}

/* A load answers from the cache when its object is still the size it had and no v<N+1>
 * exists (two HEADs instead of reading and parsing the whole history). */
static void bucket_on_cached_next(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status == -ENOENT) {
                j->result.status = 0;
                j->result.body = json_pack("{s:s, s:O}", "metadata-location", j->cached_location,
                                           "metadata", j->cached_metadata);
                if (!j->result.body)
                        bucket_job_set_failure(j, -ENOMEM, "", "out of memory");
                bucket_job_answer(j);
                return;
        }
        if (r->status == 0)
                bucket_job_cache_drop(j->catalog, j->dir, j->cached_version);
        bucket_find_latest(j);
}

static void bucket_on_cached_head(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;
        _cleanup_(freep) char *next = NULL;
        Error e = { 0 };
        int rr;

        if (r->status < 0 || r->size != j->cached_size) {
                /* Gone or another object (a table created again): read anew. A transient
                 * failure proves nothing either way: the read decides. */
                if (r->status == -ENOENT || r->status == 0)
                        bucket_job_cache_drop(j->catalog, j->dir, j->cached_version);
                bucket_find_latest(j);
                return;
        }
        if (j->op == BUCKET_OP_LOAD) {
                next = hadoop_layout_version_location(j->dir, j->cached_version + 1);
                if (!next) {
                        bucket_job_fail(j, -ENOMEM, "", "out of memory");
                        return;
                }
                rr = storage_size(j->catalog->storage, NULL, next, bucket_on_cached_next, j, &e);
                if (rr < 0)
                        (void)bucket_job_submit_error(j, rr, &e);
                return;
        }
        j->from_cache = true;
        j->version = j->cached_version;
        j->metadata_location = TAKE_PTR(j->cached_location);
        j->metadata = TAKE_PTR(j->cached_metadata);
        j->on_found(j);
}

/* Loads and commits start from the table's cached version when there is one. */
void bucket_version_begin(BucketJob *j) {
        BucketCatalog *c = j->catalog;
        const TableCacheEntry *e = table_cache_get(c->cache, j->dir);
        Error error = { 0 };
        int r;

        if (j->op == BUCKET_OP_COMMIT)
                j->memo = table_cache_take_memo(c->cache, j->dir);
        if (!e) {
                bucket_find_latest(j);
                return;
        }
        j->cached_location = strdup(e->metadata_location);
        if (!j->cached_location) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        j->cached_metadata = json_incref(e->metadata);
        j->cached_version = e->version;
        j->cached_size = e->stamp.size;
        r = storage_size(c->storage, NULL, j->cached_location, bucket_on_cached_head, j, &error);
        if (r < 0)
                (void)bucket_job_submit_error(j, r, &error);
}
