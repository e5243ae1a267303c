/* SPDX-License-Identifier: Apache-2.0 */
/* The filesystem catalog (see filesystem.h). Each call becomes one FsJob: the loop thread
 * validates and copies the inputs, a thread-pool worker does all file I/O and fills the
 * result, and the after-work callback (loop thread) answers and frees the job. */
#define LOG_MODULE "catalog"

#include <limits.h>
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "catalog/filesystem.h"
#include "catalog/hadoop_layout.h"
#include "catalog/table_cache.h"
#include "iceberg/table_update.h"
#include "storage/local.h"
#include "storage/storage.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/uuid.h"

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

typedef enum FsOp {
        FS_OP_START,
        FS_OP_LOAD,
        FS_OP_COMMIT,
        FS_OP_CREATE_NAMESPACE,
        FS_OP_CREATE_TABLE,
        FS_OP_CLOSE, /* no I/O: answers close() from the loop */
} FsOp;

/* Owned by the catalog from queueing until its after-work callback frees it. The worker only
 * reads the immutable catalog fields and writes the job. */
typedef struct FsJob {
        uv_work_t work;
        FsCatalog *catalog;
        FsOp op;
        char *dir;       /* the namespace (create namespace) or table directory */
        char *name;      /* "ns.t" for messages */
        json_t *request; /* owned copy: commit or create request, namespace properties */
        int64_t now_ms;
        /* Load and commit: the table's cached latest version when the job was queued (NULL
         * metadata: none), which the worker checks against the files before it builds on it. */
        int64_t cached_version;
        char *cached_location;
        json_t *cached_metadata;
        TableCacheStamp cached_stamp;
        /* Set by the worker for the loop: what to cache next (NULL metadata: nothing), or
         * whether to forget the table. */
        bool cache_drop;
        int64_t put_version;
        char *put_location;
        json_t *put_metadata;
        TableCacheStamp put_stamp;
        MetadataTextMemo *memo;   /* commit: lent by the cache (or new), given back on the loop */
        CatalogResult result;     /* body owned until the callback returned */
        char warning[512];        /* a non-fatal failure (version hint), logged on the loop */
        unsigned n_delete_failed; /* previous metadata files that could not be deleted */
        char delete_warning[512]; /* ... the first failure */
        CatalogCallback cb;
        void *userdata;
} FsJob;

static FsJob *job_free(FsJob *j) {
        if (!j)
                return NULL;
        free(j->dir);
        free(j->name);
        json_decref(j->request);
        free(j->cached_location);
        json_decref(j->cached_metadata);
        free(j->put_location);
        json_decref(j->put_metadata);
        metadata_text_memo_free(j->memo);
        json_decref(j->result.body);
        free(j);
        return NULL;
}
DEFINE_CLEANUP_FUNC(FsJob, job_free);

static int64_t now_ms(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void job_fail(FsJob *j, int status, const char *error_type, const char *fmt, ...)
        _printf_(4, 5);
static void job_fail(FsJob *j, int status, const char *error_type, const char *fmt, ...) {
        va_list ap;

        j->result.status = status;
        snprintf(j->result.error_type, sizeof(j->result.error_type), "%s", error_type);
        va_start(ap, fmt);
        vsnprintf(j->result.message, sizeof(j->result.message), fmt, ap);
        va_end(ap);
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

static char *path_join(const char *dir, const char *file) {
        char *p;

        return asprintf(&p, "%s/%s", dir, file) < 0 ? NULL : p;
}

static bool file_exists(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* True only when stat says there is nothing at path; any other failure proves nothing. */
static bool path_is_absent(const char *path) {
        struct stat st;

        return stat(path, &st) < 0 && errno == ENOENT;
}

static json_t *json_decref_null(json_t *v) {
        json_decref(v);
        return NULL;
}

static void stamp_from_stat(const struct stat *st, TableCacheStamp *ret) {
        *ret = (TableCacheStamp){
                .dev = (uint64_t)st->st_dev,
                .ino = (uint64_t)st->st_ino,
                .size = (uint64_t)st->st_size,
                .mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec,
        };
}

/* Whether the file at path is still the one the stamp describes (one stat). */
static bool stamp_matches(const char *path, const TableCacheStamp *stamp) {
        TableCacheStamp now;
        struct stat st;

        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                return false;
        stamp_from_stat(&st, &now);
        return memcmp(&now, stamp, sizeof(now)) == 0;
}

/* Records what the loop caches once the job is answered. */
static int job_cache_later(FsJob *j, int64_t version, const char *location, json_t *metadata,
                           const TableCacheStamp *stamp) {
        char *copy = strdup(location);

        if (!copy)
                return -ENOMEM;
        free(j->put_location);
        j->put_location = copy;
        json_decref(j->put_metadata);
        j->put_metadata = json_incref(metadata);
        j->put_version = version;
        j->put_stamp = *stamp;
        return 0;
}

/* Whether the cached version is still the table's latest: its file is the one that was read or
 * written (a table dropped and created again has other files of the same names) and, when
 * check_next, no v<N+1> exists. A commit needs no check_next: its no-replace rename of v<N+1>
 * is the proof. */
static bool cached_is_latest(const FsJob *j, bool check_next) {
        _cleanup_(freep) char *next = NULL;

        if (!j->cached_metadata || !stamp_matches(j->cached_location, &j->cached_stamp))
                return false;
        if (!check_next)
                return true;
        next = hadoop_layout_version_location(j->dir, j->cached_version + 1);
        return next && path_is_absent(next);
}

/* ---- reading the latest version (worker) ------------------------------------------------- */

static int64_t version_hint_read(const char *metadata_dir) {
        _cleanup_(freep) char *path = path_join(metadata_dir, VERSION_HINT);
        _cleanup_(buf_deinitp) Buf b = { 0 };

        buf_init(&b, 64);
        if (!path || storage_local_read_file(path, 64, &b, NULL) < 0)
                return -1;
        return hadoop_layout_hint_parse(buf_str(&b), b.len);
}

/* The highest v<N>.metadata.json in metadata_dir: 0 when there is none, -errno when the
 * directory cannot be listed. */
static int64_t version_scan(const char *metadata_dir) {
        DIR *d = opendir(metadata_dir);
        struct dirent *e;
        int64_t best = 0;

        if (!d)
                return -errno;
        while ((e = readdir(d)))
                if (hadoop_layout_version_from_name(e->d_name) > best)
                        best = hadoop_layout_version_from_name(e->d_name);
        closedir(d);
        return best;
}

/* Finds and parses the latest metadata of the table in j->dir. Returns 0, or fails the job
 * (NOT_FOUND, -EBADMSG, UNAVAILABLE) and returns -1. */
static int table_read_latest(FsJob *j, int64_t *ret_version, char **ret_path, json_t **ret_metadata,
                             TableCacheStamp *ret_stamp) {
        _cleanup_(freep) char *metadata_dir = path_join(j->dir, "metadata"), *path = NULL;
        _cleanup_(buf_deinitp) Buf b = { 0 };
        json_error_t json_error;
        struct stat st;
        int64_t version;
        json_t *md;
        Error e;
        int r;

        if (!metadata_dir)
                return job_fail(j, -ENOMEM, "", "out of memory"), -1;
        version = version_hint_read(metadata_dir);
        if (version < 0 || !(path = hadoop_layout_version_location(j->dir, version)) ||
            !file_exists(path)) {
                /* No usable hint: list the directory, as findVersion() does. */
                version = version_scan(metadata_dir);
                if (version == -ENOENT || version == -ENOTDIR || version == 0)
                        return job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchTableException",
                                        "Table does not exist: %s", j->name),
                               -1;
                if (version < 0)
                        return job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot list '%s': %s",
                                        metadata_dir, strerror((int)-version)),
                               -1;
        }
        /* The hint may lag behind the last commit: step forward while v<N+1> exists. */
        for (;;) {
                _cleanup_(freep) char *next = hadoop_layout_version_location(j->dir, version + 1);

                if (!next)
                        return job_fail(j, -ENOMEM, "", "out of memory"), -1;
                if (!file_exists(next))
                        break;
                version++;
        }
        free(path);
        path = hadoop_layout_version_location(j->dir, version);
        if (!path)
                return job_fail(j, -ENOMEM, "", "out of memory"), -1;

        buf_init(&b, j->catalog->max_metadata_bytes);
        r = storage_local_read_file(path, j->catalog->max_metadata_bytes, &b, &e);
        if (r == -ENOENT)
                return job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchTableException",
                                "Table does not exist: %s", j->name),
                       -1;
        if (r == -EFBIG)
                return job_fail(j, -E2BIG, "", "%s", e.message), -1;
        if (r == -ENOMEM)
                return job_fail(j, -ENOMEM, "", "out of memory"), -1;
        if (r < 0)
                return job_fail(j, CATALOG_E_UNAVAILABLE, "", "%s", e.message), -1;
        /* Versions are never rewritten in place: the file read is the one stat finds. */
        if (stat(path, &st) < 0)
                return job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot stat '%s': %s", path,
                                strerror(errno)),
                       -1;
        md = json_loadb((const char *)b.data, b.len, JSON_REJECT_DUPLICATES, &json_error);
        if (!json_is_object(md)) {
                json_decref(md);
                return job_fail(j, -EBADMSG, "", "'%s' is not table metadata: line %d: %s", path,
                                json_error.line, md ? "not an object" : json_error.text),
                       -1;
        }
        stamp_from_stat(&st, ret_stamp);
        *ret_version = version;
        *ret_path = TAKE_PTR(path);
        *ret_metadata = md;
        return 0;
}

static void job_succeed(FsJob *j, const char *metadata_location, json_t *metadata_take) {
        /* The body shares the metadata with the cache: nobody changes either (catalog.h). */
        j->result.status = 0;
        j->result.body = json_pack("{s:s, s:o}", "metadata-location", metadata_location, "metadata",
                                   metadata_take);
        if (!j->result.body)
                job_fail(j, -ENOMEM, "", "out of memory");
}

/* ---- publishing a version (worker) -------------------------------------------------------- */

static int fsync_dir(const char *dir) {
        _cleanup_(closep) int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

/* Writes data to a new unique file in dir (O_EXCL), fsyncs it and returns its path. */
static int temp_file_write(const char *dir, const char *suffix, const char *data, size_t len,
                           char **ret_path) {
        _cleanup_(freep) char *path = NULL;
        _cleanup_(closep) int fd = -1;
        char uuid[UUID_STRING_MAX];
        int r = 0;

        uuid_v4_string(uuid);
        if (asprintf(&path, "%s/.%s%s", dir, uuid, suffix) < 0)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return -errno;
        while (len > 0) {
                ssize_t k = write(fd, data, len);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = -errno;
                        break;
                }
                data += k;
                len -= (size_t)k;
        }
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (r == 0 && close(TAKE_FD(fd)) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlink(path);
                return r;
        }
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* Moves tmp to final unless final exists (-EEXIST). Filesystems without RENAME_NOREPLACE get
 * link() + unlink(), which has the same no-replace guarantee. */
static int rename_noreplace(const char *tmp, const char *final) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_NOREPLACE) == 0)
                return 0;
        if (errno != EINVAL && errno != ENOSYS)
                return -errno;
        if (link(tmp, final) < 0)
                return -errno;
        (void)unlink(tmp);
        return 0;
}

/* The hint only speeds up reads (readers step forward from it): failures are reported in
 * j->warning, never as the outcome. */
static void version_hint_write(FsJob *j, const char *metadata_dir, int64_t version) {
        _cleanup_(freep) char *tmp = NULL, *hint = path_join(metadata_dir, VERSION_HINT);
        char text[32];
        int r, n;

        n = snprintf(text, sizeof(text), "%" PRId64, version);
        if (!hint) {
                snprintf(j->warning, sizeof(j->warning), "out of memory");
                return;
        }
        r = temp_file_write(metadata_dir, "-version-hint.temp", text, (size_t)n, &tmp);
        if (r == 0 && rename(tmp, hint) < 0) {
                r = -errno;
                (void)unlink(tmp);
        }
        if (r == 0) {
                /* Hadoop's local filesystem (Java's HadoopCatalog) keeps a checksum sidecar next
                 * to the hint; once the hint changed it no longer matches, and Java would log a
                 * checksum error on every read before falling back to listing. */
                _cleanup_(freep) char *crc = path_join(metadata_dir, "." VERSION_HINT ".crc");

                if (crc)
                        (void)unlink(crc);
        }
        if (r < 0)
                snprintf(j->warning, sizeof(j->warning), "cannot update '%s' to %" PRId64 ": %s",
                         hint, version, strerror(-r));
}

/* Deletes the previous metadata files that dropped out of the metadata-log with this commit
 * when write.metadata.delete-after-commit.enabled is "true", as Java's
 * HadoopTableOperations.deleteRemovedMetadataFiles: after the commit succeeded, never the
 * current file, failures only counted (logged on the loop). Only files in the table's own
 * metadata directory are touched, whatever a log entry names; with them go the checksum
 * sidecars Hadoop's local filesystem writes next to them (.<name>.crc). */
static void removed_metadata_delete(FsJob *j, const char *metadata_dir, const json_t *base,
                                    const json_t *updated, const char *current) {
        _cleanup_(json_decrefp) json_t *files = NULL;
        const json_t *file;
        size_t i;

        if (!table_update_deletes_after_commit(updated))
                return;
        if (table_update_removed_metadata_files(base, updated, &files) < 0) {
                j->n_delete_failed++;
                snprintf(j->delete_warning, sizeof(j->delete_warning), "out of memory");
                return;
        }
        json_array_foreach (files, i, file) {
                _cleanup_(freep) char *path = NULL, *crc = NULL;
                const char *slash;

                if (storage_path_from_location(json_string_value(file), &path, NULL) < 0 ||
                    !storage_location_is_within(path, metadata_dir) || strcmp(path, current) == 0 ||
                    strchr(path + strlen(metadata_dir) + 1, '/'))
                        continue;
                if (unlink(path) < 0 && errno != ENOENT) {
                        if (j->n_delete_failed++ == 0)
                                snprintf(j->delete_warning, sizeof(j->delete_warning),
                                         "cannot delete '%s': %s", path, strerror(errno));
                        continue;
                }
                slash = strrchr(path, '/');
                if (asprintf(&crc, "%.*s/.%s.crc", (int)(slash - path), path, slash + 1) >= 0)
                        (void)unlink(crc);
        }
}

/* Publishes `metadata` as v<version> of the table in j->dir. Returns 0 (and the new file's
 * path and stamp), or fails the job and returns -EEXIST (CONFLICT: another writer took
 * v<version>) or another -errno. */
static int version_publish(FsJob *j, int64_t version, const json_t *metadata, char **ret_path,
                           TableCacheStamp *ret_stamp) {
        _cleanup_(freep) char *metadata_dir = path_join(j->dir, "metadata"), *final = NULL,
                              *tmp = NULL;
        _cleanup_(buf_deinitp) Buf text = { 0 };
        struct stat st;
        int r;

        final = hadoop_layout_version_location(j->dir, version);
        if (!metadata_dir || !final) {
                job_fail(j, -ENOMEM, "", "out of memory");
                return -ENOMEM;
        }
        /* Compact, as Java's TableMetadataParser writes it; the memo encodes only what is new
         * since the version it last wrote (no memo: all of it). */
        if (!j->memo && j->op == FS_OP_COMMIT)
                j->memo = metadata_text_memo_new();
        buf_init(&text, SIZE_MAX - 1);
        r = metadata_text_dump(metadata, j->memo, &text);
        if (r < 0) {
                job_fail(j, r, "", "cannot encode the new metadata: %s", strerror(-r));
                return r;
        }
        r = temp_file_write(metadata_dir, METADATA_SUFFIX ".tmp", (const char *)text.data, text.len,
                            &tmp);
        if (r < 0) {
                job_fail(j, CATALOG_E_UNAVAILABLE, "",
                         "cannot write a new metadata file in '%s': %s", metadata_dir,
                         strerror(-r));
                return r;
        }
        r = rename_noreplace(tmp, final);
        if (r == -EEXIST) {
                (void)unlink(tmp);
                job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException",
                         "Version %" PRId64 " already exists: %s", version, final);
                return r;
        }
        if (r < 0) {
                (void)unlink(tmp);
                job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot rename '%s' to '%s': %s", tmp, final,
                         strerror(-r));
                return r;
        }
        /* v<N+1> is visible now; until the directory entry is durable the outcome is open. */
        r = fsync_dir(metadata_dir);
        if (r < 0) {
                job_fail(j, CATALOG_E_STATE_UNKNOWN, "",
                         "'%s' was published but fsync of '%s' failed: %s", final, metadata_dir,
                         strerror(-r));
                return r;
        }
        version_hint_write(j, metadata_dir, version);
        /* Without a stamp the version is not cached, which costs a read, never correctness. */
        if (stat(final, &st) == 0)
                stamp_from_stat(&st, ret_stamp);
        else
                *ret_stamp = (TableCacheStamp){ 0 };
        *ret_path = TAKE_PTR(final);
        return 0;
}

/* ---- the operations (worker) ------------------------------------------------------------- */

static void do_start(FsJob *j) {
        const char *warehouse = j->catalog->warehouse;
        _cleanup_(freep) char *copy = strdup(warehouse), *probe = NULL;
        int r;

        if (!copy) {
                job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        /* mkdir -p */
        for (char *p = copy + 1;; p++) {
                char saved = *p;

                if (saved != '/' && saved != '\0')
                        continue;
                *p = '\0';
                if (mkdir(copy, 0755) < 0 && errno != EEXIST) {
                        job_fail(j, CATALOG_E_UNAVAILABLE, "",
                                 "cannot create warehouse directory '%s': %s", copy,
                                 strerror(errno));
                        return;
                }
                *p = saved;
                if (saved == '\0')
                        break;
        }
        r = temp_file_write(warehouse, "-probe.tmp", "", 0, &probe);
        if (r < 0) {
                job_fail(j, CATALOG_E_UNAVAILABLE, "",
                         "warehouse directory '%s' is not writable: %s", warehouse, strerror(-r));
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
        if (cached_is_latest(j, /* check_next= */ true)) {
                job_succeed(j, j->cached_location, json_incref(j->cached_metadata));
                return;
        }
        j->cache_drop = j->cached_metadata != NULL;
        if (table_read_latest(j, &version, &path, &md, &stamp) < 0)
                return;
        if (job_cache_later(j, version, path, md, &stamp) < 0) {
                json_decref(md);
                job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        job_succeed(j, path, md);
}

/* Applies the job's request to `base` (version N at base_path). Returns 0 with the new
 * metadata, or fails the job and returns -ESTALE (CONFLICT), -EINVAL (REJECTED) or -errno. */
static int commit_apply(FsJob *j, const json_t *base, const char *base_path, json_t **ret_updated) {
        Error e = { 0 };
        int r;

        r = table_update_apply(base, j->request, j->now_ms, base_path, ret_updated, &e);
        if (r == -ESTALE)
                job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException", "%s", e.message);
        else if (r == -EINVAL)
                job_fail(j, CATALOG_E_REJECTED, "BadRequestException", "%s", e.message);
        else if (r < 0)
                job_fail(j, r, "", "cannot apply the commit: %s", strerror(-r));
        return r;
}

/* A commit builds on the cached version when its file is still in place, else on the latest
 * read as a load does. Only the no-replace rename of v<N+1> decides, exactly as without the
 * cache: when it loses, or the request does not apply to the cached version, and that version
 * turns out not to be the latest, the commit is done once more on the latest read from disk,
 * which is what it would have met without the cache. */
static void do_commit(FsJob *j) {
        bool from_cache = cached_is_latest(j, /* check_next= */ false);

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
                                job_fail(j, -ENOMEM, "", "out of memory");
                                return;
                        }
                } else {
                        if (table_read_latest(j, &version, &path, &base, &stamp) < 0)
                                return;
                        if (job_cache_later(j, version, path, base, &stamp) < 0) {
                                job_fail(j, -ENOMEM, "", "out of memory");
                                return;
                        }
                }
                r = commit_apply(j, base, path, &updated);
                if (r == 0 && json_array_size(json_object_get(j->request, "updates")) == 0) {
                        /* Like the REST server: a commit without updates writes nothing. */
                        job_succeed(j, path, TAKE_PTR(base));
                        return;
                }
                if (r == 0)
                        r = version_publish(j, version + 1, updated, &published, &stamp);
                if (r == 0) {
                        metadata_dir = path_join(j->dir, "metadata");
                        if (metadata_dir)
                                removed_metadata_delete(j, metadata_dir, base, updated, published);
                        if (job_cache_later(j, version + 1, published, updated, &stamp) < 0)
                                j->cache_drop = true; /* answered all the same */
                        job_succeed(j, published, TAKE_PTR(updated));
                        return;
                }
                if (r == -EEXIST) {
                        /* Another writer has v<N+1>: nothing read so far is the latest. */
                        j->cache_drop = true;
                        j->put_metadata = json_decref_null(j->put_metadata);
                }
                if (!from_cache || (r != -EEXIST && r != -ESTALE && r != -EINVAL) ||
                    (r != -EEXIST && cached_is_latest(j, /* check_next= */ true)))
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
        size_t warehouse_len = strlen(j->catalog->warehouse);

        if (!copy) {
                job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        if (json_object_size(j->request) > 0) {
                job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                         "Cannot create namespace %s: metadata is not supported", j->name);
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
                                job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot create '%s': %s",
                                         copy, strerror(errno));
                                return;
                        }
                        if (saved == '\0') {
                                job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
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
                              *metadata_dir = path_join(j->dir, "metadata"), *published = NULL;
        TableCacheStamp stamp;
        const char *location;
        char uuid[UUID_STRING_MAX];
        struct stat st;
        Error e = { 0 };
        int r;

        if (!namespace_dir || !metadata_dir) {
                job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        *strrchr(namespace_dir, '/') = '\0';
        if (stat(namespace_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchNamespaceException",
                         "Namespace does not exist: %.*s", (int)(strrchr(j->name, '.') - j->name),
                         j->name);
                return;
        }
        if (version_scan(metadata_dir) > 0) {
                job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                         "Table already exists: %s", j->name);
                return;
        }
        if (json_is_true(json_object_get(j->request, "stage-create"))) {
                job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                         "staged table creation is not supported by the filesystem catalog");
                return;
        }
        /* HadoopCatalog: path-based tables live where their path says. */
        location = json_string_value(json_object_get(j->request, "location"));
        if (location) {
                _cleanup_(freep) char *p = NULL;

                if (storage_path_from_location(location, &p, NULL) < 0 || strcmp(p, j->dir) != 0) {
                        job_fail(j, CATALOG_E_REJECTED, "BadRequestException",
                                 "Cannot set a custom location for a path-based table. Expected %s "
                                 "but got %s",
                                 j->dir, location);
                        return;
                }
        }
        uuid_v4_string(uuid);
        r = table_update_metadata_create(j->request, j->dir, j->now_ms, uuid, &md, &e);
        if (r == -EINVAL) {
                job_fail(j, CATALOG_E_REJECTED, "BadRequestException", "%s", e.message);
                return;
        }
        if (r < 0) {
                job_fail(j, r, "", "cannot build table metadata: %s", strerror(-r));
                return;
        }
        if (location && json_object_set_new(md, "location", json_string(j->dir)) < 0) {
                job_fail(j, -ENOMEM, "", "out of memory");
                return;
        }
        if ((mkdir(j->dir, 0755) < 0 && errno != EEXIST) ||
            (mkdir(metadata_dir, 0755) < 0 && errno != EEXIST)) {
                job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot create '%s': %s", metadata_dir,
                         strerror(errno));
                return;
        }
        /* The new directories must survive a crash as well as v1 itself. */
        r = fsync_dir(namespace_dir);
        if (r == 0)
                r = fsync_dir(j->dir);
        if (r < 0) {
                job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot fsync '%s': %s", j->dir,
                         strerror(-r));
                return;
        }
        /* A concurrent create loses the no-replace rename of v1 and gets CONFLICT. */
        r = version_publish(j, 1, md, &published, &stamp);
        if (r == -EEXIST) {
                job_fail(j, CATALOG_E_CONFLICT, "AlreadyExistsException",
                         "Table already exists: %s", j->name);
                return;
        }
        if (r < 0)
                return;
        j->cache_drop = true; /* an older table of the same name may be cached */
        (void)job_cache_later(j, 1, published, md, &stamp);
        job_succeed(j, published, TAKE_PTR(md));
}

static void job_work(uv_work_t *work) {
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

/* ---- the loop side ------------------------------------------------------------------------ */

static void job_after_work(uv_work_t *work, int status) {
        _cleanup_(job_freep) FsJob *j = work->data;
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
        j->op = op;
        j->cb = cb;
        j->userdata = userdata;
        j->now_ms = now_ms();
        j->work.data = j;
        *ret = j;
        return 0;
}

static int job_queue(FsJob *j) {
        int r = uv_queue_work(j->catalog->loop, &j->work, job_work, job_after_work);

        if (r < 0)
                return r;
        j->catalog->n_jobs++;
        return 0;
}

/* Creates, fills and queues a job; on failure nothing was queued and cb will not run. */
static int job_start(FsCatalog *c, FsOp op, const char *const *namespace, size_t n_namespace,
                     const char *last, const json_t *request, CatalogCallback cb, void *userdata) {
        _cleanup_(job_freep) FsJob *j = NULL;
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
        _cleanup_(job_freep) FsJob *j = NULL;
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
                job_free(j);
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
