/* SPDX-License-Identifier: Apache-2.0 */
/* The operations of the filesystem catalog on the thread pool (filesystem_ops-internal.h):
 * start, load, commit, create namespace and create table, each on one job, with the
 * versions read and published by filesystem_version.c. Fills the job's outcome; logs
 * nothing. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/filesystem_ops-internal.h"
#include "catalog/filesystem_version-internal.h"
#include "iceberg/table_update.h"
#include "storage/storage.h"
#include "util/uuid.h"

static json_t *json_decref_null(json_t *v) {
        json_decref(v);
        return NULL;
}

static void do_start(FsJob *j) {
        const char *warehouse = j->warehouse;
        _cleanup_(freep) char *copy = strdup(warehouse), *probe = NULL;
        int r;

        if (!copy) {
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        /* mkdir -p */
        for (char *p = copy + 1;; p++) {
                char saved = *p;

                if (saved != '/' && saved != '\0')
                        continue;
                *p = '\0';
                if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
                        filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "",
                                            "cannot create warehouse directory '%s': %s", copy,
                                            strerror(errno));
                        return;
                }
                *p = saved;
                if (saved == '\0')
                        break;
        }
        r = filesystem_version_write_temp(warehouse, "-probe.tmp", "", 0, &probe);
        if (r < 0) {
                filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "",
                                    "warehouse directory '%s' is not writable: %s", warehouse,
                                    strerror(-r));
                return;
        }
        (void)unlink(probe);
        j->result.status = 0;
}

static void do_load(FsJob *j) {
        _cleanup_(freep) char *path = NULL;
        TableCacheStamp stamp;
        int64_t version;
        json_t *md;

        /* Two stats instead of reading and parsing the whole history. */
        if (filesystem_version_cached_is_latest(j, /* check_next= */ true)) {
                filesystem_job_succeed(j, j->cached_location, json_incref(j->cached_metadata));
                return;
        }
        j->cache_drop = j->cached_metadata != NULL;
        if (filesystem_version_read_latest(j, &version, &path, &md, &stamp) < 0)
                return;
        if (filesystem_job_cache_later(j, version, path, md, &stamp) < 0) {
                json_decref(md);
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        filesystem_job_succeed(j, path, md);
}

/* Applies the job's request to `base` (version N at base_path). Returns 0 with the new
 * metadata, or fails the job and returns -ESTALE (CONFLICT), -EINVAL (REJECTED) or -errno. */
static int commit_apply(FsJob *j, const json_t *base, const char *base_path, json_t **ret_updated) {
        Error e = { 0 };
        int r;

        r = table_update_apply(base, j->request, j->now_ms, base_path, ret_updated, &e);
        if (r == -ESTALE)
                filesystem_job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException", "%s",
                                    e.message);
        else if (r == -EINVAL)
                filesystem_job_fail(j, CATALOG_E_REJECTED, "BadRequestException", "%s", e.message);
        else if (r < 0)
                filesystem_job_fail(j, r, "", "cannot apply the commit: %s", strerror(-r));
        return r;
}

/* A commit builds on the cached version when its file is still in place, else on the latest
 * read as a load does. Only the no-replace rename of v<N+1> decides, exactly as without the
 * cache: when it loses, or the request does not apply to the cached version, and that version
 * turns out not to be the latest, the commit is done once more on the latest read from disk,
 * which is what it would have met without the cache. */
static void do_commit(FsJob *j) {
        bool from_cache = filesystem_version_cached_is_latest(j, /* check_next= */ false);

        j->cache_drop = j->cached_metadata && !from_cache;
        for (;;) {
                _cleanup_(json_decrefp) json_t *base = NULL, *updated = NULL;
                _cleanup_(freep) char *path = NULL, *published = NULL, *metadata_dir = NULL;
                TableCacheStamp stamp = { 0 };
                int64_t version;
                int r;

                if (from_cache) {
                        version = j->cached_version;
                        path = strdup(j->cached_location);
                        base = json_incref(j->cached_metadata);
                        if (!path) {
                                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                                return;
                        }
                } else {
                        if (filesystem_version_read_latest(j, &version, &path, &base, &stamp) < 0)
                                return;
                        if (filesystem_job_cache_later(j, version, path, base, &stamp) < 0) {
                                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                                return;
                        }
                }
                r = commit_apply(j, base, path, &updated);
                if (r == 0 && json_array_size(json_object_get(j->request, "updates")) == 0) {
                        /* Like the REST server: a commit without updates writes nothing. */
                        filesystem_job_succeed(j, path, TAKE_PTR(base));
                        return;
                }
                if (r == 0)
                        r = filesystem_version_publish(j, version + 1, updated, &published, &stamp);
                if (r == 0) {
                        metadata_dir = filesystem_version_metadata_dir(j->dir);
                        if (metadata_dir)
                                filesystem_version_delete_removed(j, metadata_dir, base, updated,
                                                                  published);
                        if (filesystem_job_cache_later(j, version + 1, published, updated, &stamp) <
                            0)
                                j->cache_drop = true; /* answered all the same */
                        filesystem_job_succeed(j, published, TAKE_PTR(updated));
                        return;
                }
                if (r == -EEXIST) {
                        /* Another writer has v<N+1>: nothing read so far is the latest. */
                        j->cache_drop = true;
                        j->put_metadata = json_decref_null(j->put_metadata);
                }
                if (!from_cache || (r != -EEXIST && r != -ESTALE && r != -EINVAL) ||
                    (r != -EEXIST &&
                     filesystem_version_cached_is_latest(j, /* check_next= */ true)))
                        return;
                /* The cached version was not the latest: forget it and do what a commit
                 * without the cache does. */
                j->cache_drop = true;
                from_cache = false;
                j->result = (CatalogResult){ 0 };
        }
}

static void do_create_namespace(FsJob *j) {
        _cleanup_(freep) char *copy = strdup(j->dir);
        size_t warehouse_len = strlen(j->warehouse);

        if (!copy) {
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        if (json_object_size(j->request) > 0) {
                filesystem_job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                                    "Cannot create namespace %s: metadata is not supported",
                                    j->name);
                return;
        }
        /* Parents are created as needed (mkdirs); only the last level must be new. */
        for (char *p = copy + warehouse_len + 1;; p++) {
                char saved = *p;

                if (saved != '/' && saved != '\0')
                        continue;
                *p = '\0';
                if (mkdir(copy, 0755) < 0) {
                        if (errno != EEXIST) {
                                filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "",
                                                    "cannot create '%s': %s", copy,
                                                    strerror(errno));
                                return;
                        }
                        if (saved == '\0') {
                                filesystem_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                                    "Namespace already exists: %s", j->name);
                                return;
                        }
                }
                *p = saved;
                if (saved == '\0')
                        break;
        }
        j->result.status = 0;
}

static void do_create_table(FsJob *j) {
        _cleanup_(json_decrefp) json_t *md = NULL;
        _cleanup_(freep) char *namespace_dir = strdup(j->dir),
                              *metadata_dir = filesystem_version_metadata_dir(j->dir),
                              *published = NULL;
        TableCacheStamp stamp;
        const char *location;
        char uuid[UUID_STRING_MAX];
        struct stat st;
        Error e = { 0 };
        int r;

        if (!namespace_dir || !metadata_dir) {
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        *strrchr(namespace_dir, '/') = '\0';
        if (stat(namespace_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                filesystem_job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchNamespaceException",
                                    "Namespace does not exist: %.*s",
                                    (int)(strrchr(j->name, '.') - j->name), j->name);
                return;
        }
        if (filesystem_version_scan(metadata_dir) > 0) {
                filesystem_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                    "Table already exists: %s", j->name);
                return;
        }
        if (json_is_true(json_object_get(j->request, "stage-create"))) {
                filesystem_job_fail(
                        j, CATALOG_E_REJECTED, "BadRequestException",
                        "staged table creation is not supported by the filesystem catalog");
                return;
        }
        /* HadoopCatalog: path-based tables live where their path says. */
        location = json_string_value(json_object_get(j->request, "location"));
        if (location) {
                _cleanup_(freep) char *p = NULL;

                if (storage_path_from_location(location, &p, NULL) < 0 || strcmp(p, j->dir) != 0) {
                        filesystem_job_fail(
                                j, CATALOG_E_REJECTED, "BadRequestException",
                                "Cannot set a custom location for a path-based table. Expected %s "
                                "but got %s",
                                j->dir, location);
                        return;
                }
        }
        uuid_v4_string(uuid);
        r = table_update_metadata_create(j->request, j->dir, j->now_ms, uuid, &md, &e);
        if (r == -EINVAL) {
                filesystem_job_fail(j, CATALOG_E_REJECTED, "BadRequestException", "%s", e.message);
                return;
        }
        if (r < 0) {
                filesystem_job_fail(j, r, "", "cannot build table metadata: %s", strerror(-r));
                return;
        }
        if (location && json_object_set_new(md, "location", json_string(j->dir)) < 0) {
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        if ((mkdir(j->dir, 0755) < 0 && errno != EEXIST) ||
            (mkdir(metadata_dir, 0755) < 0 && errno != EEXIST)) {
                filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot create '%s': %s",
                                    metadata_dir, strerror(errno));
                return;
        }
        /* The new directories must survive a crash as well as v1 itself. */
        r = filesystem_version_fsync_dir(namespace_dir);
        if (r == 0)
                r = filesystem_version_fsync_dir(j->dir);
        if (r < 0) {
                filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot fsync '%s': %s", j->dir,
                                    strerror(-r));
                return;
        }
        /* A concurrent create loses the no-replace rename of v1 and gets CONFLICT. */
        r = filesystem_version_publish(j, 1, md, &published, &stamp);
        if (r == -EEXIST) {
                filesystem_job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                                    "Table already exists: %s", j->name);
                return;
        }
        if (r < 0)
                return;
        j->cache_drop = true; /* an older table of the same name may be cached */
        (void)filesystem_job_cache_later(j, 1, published, md, &stamp);
        filesystem_job_succeed(j, published, TAKE_PTR(md));
}

void filesystem_ops_work(uv_work_t *work) {
        FsJob *j = work->data;

        switch (j->op) {
        /* clang-format off */
        case FS_OP_START:            do_start(j);            break;
        case FS_OP_LOAD:             do_load(j);             break;
        case FS_OP_COMMIT:           do_commit(j);           break;
        case FS_OP_CREATE_NAMESPACE: do_create_namespace(j); break;
        case FS_OP_CREATE_TABLE:     do_create_table(j);     break;
        case FS_OP_CLOSE:                                    break;
                /* clang-format on */
        }
}
