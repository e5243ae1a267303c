/* SPDX-License-Identifier: Apache-2.0 */
/* Publishing the next version of a bucket catalog's table (bucket_commit-internal.h): a commit
 * applied and the metadata encoded on the thread pool (parsed metadata and its encoding never
 * run on the loop: a table's history may be large), the version created with a conditional
 * create that never replaces, then the hint, then the metadata files that dropped out of the
 * log deleted, then the answer. */
#define LOG_MODULE "catalog"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bucket_commit-internal.h"
#include "catalog/bucket_version-internal.h"
#include "catalog/hadoop_layout.h"
#include "iceberg/table_update.h"
#include "util/log.h"

#define VERSION_HINT HADOOP_LAYOUT_VERSION_HINT

static void bucket_publish(BucketJob *j);
static void bucket_delete_next(BucketJob *j);

static void bucket_work_build(BucketJob *j) {
        Error e = { 0 };
        int r;

        if (j->op == BUCKET_OP_COMMIT) {
                r = table_update_apply(j->metadata, j->request, j->now_ms, j->metadata_location,
                                       &j->updated, &e);
                j->work_status = r;
                if (r == -ESTALE)
                        bucket_job_set_failure(j, CATALOG_E_CONFLICT, "CommitFailedException", "%s",
                                               e.message);
                else if (r == -EINVAL)
                        bucket_job_set_failure(j, CATALOG_E_REJECTED, "BadRequestException", "%s",
                                               e.message);
                else if (r < 0)
                        bucket_job_set_failure(j, r, "", "cannot apply the commit: %s",
                                               strerror(-r));
                if (r < 0)
                        return;
                /* Like the REST server: a commit without updates changes nothing and writes
                 * nothing. */
                if (json_array_size(json_object_get(j->request, "updates")) == 0) {
                        j->is_noop = true;
                        return;
                }
                if (table_update_deletes_after_commit(j->updated) &&
                    table_update_removed_metadata_files(j->metadata, j->updated, &j->removed) < 0) {
                        j->n_delete_failed++;
                        (void)snprintf(j->delete_warning, sizeof(j->delete_warning),
                                       "out of memory");
                }
                /* The memo encodes only what is new since the version it last wrote. */
                if (!j->memo)
                        j->memo = metadata_text_memo_new();
        }
        /* Compact, as Java's TableMetadataParser writes it. */
        buf_init(&j->text, SIZE_MAX - 1);
        r = metadata_text_dump(j->updated, j->memo, &j->text);
        if (r < 0) {
                bucket_job_set_failure(j, r, "", "cannot encode the new metadata: %s",
                                       strerror(-r));
                j->work_status = r;
        }
}

/* Thread pool: a commit applies j->request to j->metadata; then j->updated is encoded. */
static void bucket_on_build(uv_work_t *w) {
        bucket_work_build(w->data);
}

static void bucket_on_failed_next(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        /* No v<N+1>: the cached version is the latest, and the failure on it the answer. An
         * unknown answer proves nothing: read the latest. */
        if (r->status == -ENOENT)
                bucket_job_answer(j);
        else
                bucket_version_retry_from_latest(j);
}

static void bucket_on_built(uv_work_t *w, int status) {
        BucketJob *j = w->data;
        _cleanup_(freep) char *next = NULL;
        Error e = { 0 };
        int r;

        if (j->is_noop) {
                j->result.status = 0;
                j->result.body = json_pack("{s:s, s:O}", "metadata-location", j->metadata_location,
                                           "metadata", j->metadata);
                if (!j->result.body)
                        bucket_job_set_failure(j, -ENOMEM, "", "out of memory");
                bucket_job_answer(j);
                return;
        }
        if (j->work_status == 0) {
                bucket_publish(j);
                return;
        }
        if (!j->from_cache || (j->work_status != -ESTALE && j->work_status != -EINVAL)) {
                bucket_job_answer(j);
                return;
        }
        /* The request does not apply to the cached version: that is its answer only when the
         * cached version is still the latest (no v<N+1>). */
        next = hadoop_layout_version_location(j->dir, j->version + 1);
        if (!next) {
                bucket_job_answer(j);
                return;
        }
        r = storage_size(j->catalog->storage, NULL, next, bucket_on_failed_next, j, &e);
        if (r < 0)
                bucket_job_answer(j); /* with the failure on the cached version */
}

void bucket_commit_build(BucketJob *j) {
        bucket_job_queue_work(j, bucket_on_build, bucket_on_built);
}

/* ---- publishing a version ------------------------------------------------------------------ */

static void bucket_on_deleted(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status < 0 && j->n_delete_failed++ == 0)
                (void)snprintf(j->delete_warning, sizeof(j->delete_warning), "%s",
                               r->error.message);
        bucket_delete_next(j);
}

/* Whether a metadata-log entry names an object of the table's own metadata/ prefix, directly
 * (no deeper key, no "." or ".." name some store might resolve), other than the current one. */
static bool bucket_is_own_metadata_file(const BucketJob *j, const char *location,
                                        const char *metadata_dir) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 }, dir = { 0 };
        const char *name;
        size_t n;

        if (!location || strcmp(location, j->publish_location) == 0 ||
            !storage_location_is_within(location, metadata_dir) ||
            storage_location_parse(location, &l, NULL) < 0 ||
            storage_location_parse(metadata_dir, &dir, NULL) < 0)
                return false;
        n = strlen(dir.key);
        if (strncmp(l.key, dir.key, n) != 0 || l.key[n] != '/')
                return false;
        name = l.key + n + 1;
        return !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* Deletes the metadata files that dropped out of the metadata-log with this commit when
 * write.metadata.delete-after-commit.enabled is "true", as Java's
 * HadoopTableOperations.deleteRemovedMetadataFiles: after the commit succeeded, one at a time
 * (usually one per commit), failures only counted and logged, then the commit is answered. */
static void bucket_delete_next(BucketJob *j) {
        _cleanup_(freep) char *metadata_dir = NULL;
        Error e = { 0 };
        int r;

        if (asprintf(&metadata_dir, "%s/metadata", j->dir) < 0) {
                j->n_delete_failed++;
                (void)snprintf(j->delete_warning, sizeof(j->delete_warning), "out of memory");
                metadata_dir = NULL;
                j->n_removed_done = json_array_size(j->removed);
        }
        while (j->n_removed_done < json_array_size(j->removed)) {
                const char *location =
                        json_string_value(json_array_get(j->removed, j->n_removed_done++));

                if (!bucket_is_own_metadata_file(j, location, metadata_dir))
                        continue;
                r = storage_delete(j->catalog->storage, NULL, location, bucket_on_deleted, j, &e);
                if (r == 0)
                        return;
                if (j->n_delete_failed++ == 0)
                        (void)snprintf(j->delete_warning, sizeof(j->delete_warning), "%s",
                                       e.message);
        }
        bucket_job_succeed(j, j->publish_location, TAKE_PTR(j->updated));
}

static void bucket_on_hint_written(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        /* The hint only speeds up reads (readers step forward from it). */
        if (r->status < 0)
                log_warning("version hint of table='%s' not updated: %s, ignoring", j->name,
                            r->error.message);
        bucket_delete_next(j);
}

static void bucket_write_hint(BucketJob *j) {
        _cleanup_(freep) char *hint = NULL;
        Error e = { 0 };
        int r;

        (void)snprintf(j->hint, sizeof(j->hint), "%" PRId64, j->publish_version);
        if (asprintf(&hint, "%s/metadata/" VERSION_HINT, j->dir) < 0) {
                bucket_delete_next(j);
                return;
        }
        r = storage_write(j->catalog->storage, NULL, hint, slice_make(j->hint, strlen(j->hint)),
                          /* flags= */ 0, bucket_on_hint_written, j, &e);
        if (r < 0) {
                log_warning("version hint of table='%s' not updated: %s, ignoring", j->name,
                            e.message);
                bucket_delete_next(j);
        }
}

static void bucket_on_published(StorageResult *r, void *userdata) {
        BucketJob *j = userdata;

        if (r->status == -EEXIST) {
                if (j->op == BUCKET_OP_CREATE_TABLE) {
                        bucket_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                        "Table already exists: %s", j->name);
                        return;
                }
                /* Another writer has v<N+1>: what was read or cached is not the latest. */
                if (j->from_cache) {
                        bucket_version_retry_from_latest(j);
                        return;
                }
                bucket_job_cache_drop(j->catalog, j->dir, j->version);
                bucket_job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException",
                                "Version %" PRId64 " already exists: %s", j->publish_version,
                                j->publish_location);
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
        /* The created object is our text: its size is the stamp a later HEAD compares. */
        if (j->op == BUCKET_OP_CREATE_TABLE)
                table_cache_drop(j->catalog->cache, j->dir); /* an older table of that name */
        bucket_job_cache_put(j, j->publish_version, j->publish_location, j->updated, j->text.len);
        buf_deinit(&j->text);
        bucket_write_hint(j);
}

/* Publishes j->text (encoded on the pool) as v<publish_version> with a create that never
 * replaces. */
static void bucket_publish(BucketJob *j) {
        Error e = { 0 };
        int r;

        free(j->publish_location);
        j->publish_location = hadoop_layout_version_location(j->dir, j->publish_version);
        if (!j->publish_location) {
                bucket_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        r = storage_write(j->catalog->storage, NULL, j->publish_location, buf_slice(&j->text),
                          STORAGE_WRITE_IF_ABSENT, bucket_on_published, j, &e);
        if (r < 0)
                (void)bucket_job_submit_error(j, r, &e);
}
