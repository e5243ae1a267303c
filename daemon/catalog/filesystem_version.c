/* SPDX-License-Identifier: Apache-2.0 */
/* The versions of a filesystem catalog's table on disk (filesystem_version-internal.h), worker
 * side: the Hadoop layout's files read (version-hint.text, listing, v<N>.metadata.json) and
 * written (a new version by no-replace rename, the hint, the deletion of files that dropped out
 * of the metadata-log). Blocking I/O: thread pool only. Fails the job it is given, logs
 * nothing. */
#include <limits.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog/filesystem_version-internal.h"
#include "catalog/hadoop_layout.h"
#include "iceberg/table_update.h"
#include "storage/local.h"
#include "storage/storage.h"
#include "util/buf.h"
#include "util/uuid.h"

#define VERSION_HINT HADOOP_LAYOUT_VERSION_HINT
#define METADATA_SUFFIX HADOOP_LAYOUT_METADATA_SUFFIX

static char *path_join(const char *dir, const char *file) {
        char *p;

        return asprintf(&p, "%s/%s", dir, file) < 0 ? NULL : p;
}

char *filesystem_version_metadata_dir(const char *table_dir) {
        return path_join(table_dir, "metadata");
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

/* Whether the cached version is still the table's latest: its file is the one that was read or
 * written (a table dropped and created again has other files of the same names) and, when
 * check_next, no v<N+1> exists. A commit needs no check_next: its no-replace rename of v<N+1>
 * is the proof. */
bool filesystem_version_cached_is_latest(const FsJob *j, bool check_next) {
        _cleanup_(freep) char *next = NULL;

        if (!j->cached_metadata || !stamp_matches(j->cached_location, &j->cached_stamp))
                return false;
        if (!check_next)
                return true;
        next = hadoop_layout_version_location(j->dir, j->cached_version + 1);
        return next && path_is_absent(next);
}

/* ---- reading the latest version ------------------------------------------------------------ */

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
int64_t filesystem_version_scan(const char *metadata_dir) {
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
int filesystem_version_read_latest(FsJob *j, int64_t *ret_version, char **ret_path,
                                   json_t **ret_metadata, TableCacheStamp *ret_stamp) {
        _cleanup_(freep) char *metadata_dir = path_join(j->dir, "metadata"), *path = NULL;
        _cleanup_(buf_deinitp) Buf b = { 0 };
        json_error_t json_error;
        struct stat st;
        int64_t version;
        json_t *md;
        Error e;
        int r;

        if (!metadata_dir)
                return filesystem_job_fail(j, -ENOMEM, "", "out of memory"), -1;
        version = version_hint_read(metadata_dir);
        if (version < 0 || !(path = hadoop_layout_version_location(j->dir, version)) ||
            !file_exists(path)) {
                /* No usable hint: list the directory, as findVersion() does. */
                version = filesystem_version_scan(metadata_dir);
                if (version == -ENOENT || version == -ENOTDIR || version == 0)
                        return filesystem_job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchTableException",
                                                   "Table does not exist: %s", j->name),
                               -1;
                if (version < 0)
                        return filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "",
                                                   "cannot list '%s': %s", metadata_dir,
                                                   strerror((int)-version)),
                               -1;
        }
        /* The hint may lag behind the last commit: step forward while v<N+1> exists. */
        for (;;) {
                _cleanup_(freep) char *next = hadoop_layout_version_location(j->dir, version + 1);

                if (!next)
                        return filesystem_job_fail(j, -ENOMEM, "", "out of memory"), -1;
                if (!file_exists(next))
                        break;
                version++;
        }
        free(path);
        path = hadoop_layout_version_location(j->dir, version);
        if (!path)
                return filesystem_job_fail(j, -ENOMEM, "", "out of memory"), -1;

        buf_init(&b, j->max_metadata_bytes);
        r = storage_local_read_file(path, j->max_metadata_bytes, &b, &e);
        if (r == -ENOENT)
                return filesystem_job_fail(j, CATALOG_E_NOT_FOUND, "NoSuchTableException",
                                           "Table does not exist: %s", j->name),
                       -1;
        if (r == -EFBIG)
                return filesystem_job_fail(j, -E2BIG, "", "%s", e.message), -1;
        if (r == -ENOMEM)
                return filesystem_job_fail(j, -ENOMEM, "", "out of memory"), -1;
        if (r < 0)
                return filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "", "%s", e.message), -1;
        /* Versions are never rewritten in place: the file read is the one stat finds. */
        if (stat(path, &st) < 0)
                return filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot stat '%s': %s",
                                           path, strerror(errno)),
                       -1;
        md = json_loadb((const char *)b.data, b.len, JSON_REJECT_DUPLICATES, &json_error);
        if (!json_is_object(md)) {
                json_decref(md);
                return filesystem_job_fail(j, -EBADMSG, "",
                                           "'%s' is not table metadata: line %d: %s", path,
                                           json_error.line, md ? "not an object" : json_error.text),
                       -1;
        }
        stamp_from_stat(&st, ret_stamp);
        *ret_version = version;
        *ret_path = TAKE_PTR(path);
        *ret_metadata = md;
        return 0;
}

/* ---- publishing a version ------------------------------------------------------------------ */

int filesystem_version_fsync_dir(const char *dir) {
        _cleanup_(closep) int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

/* Writes data to a new unique file in dir (O_EXCL), fsyncs it and returns its path. */
int filesystem_version_write_temp(const char *dir, const char *suffix, const char *data, size_t len,
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
        r = filesystem_version_write_temp(metadata_dir, "-version-hint.temp", text, (size_t)n,
                                          &tmp);
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
void filesystem_version_delete_removed(FsJob *j, const char *metadata_dir, const json_t *base,
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
int filesystem_version_publish(FsJob *j, int64_t version, const json_t *metadata, char **ret_path,
                               TableCacheStamp *ret_stamp) {
        _cleanup_(freep) char *metadata_dir = path_join(j->dir, "metadata"), *final = NULL,
                              *tmp = NULL;
        _cleanup_(buf_deinitp) Buf text = { 0 };
        struct stat st;
        int r;

        final = hadoop_layout_version_location(j->dir, version);
        if (!metadata_dir || !final) {
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
                return -ENOMEM;
        }
        /* Compact, as Java's TableMetadataParser writes it; the memo encodes only what is new
         * since the version it last wrote (no memo: all of it). */
        if (!j->memo && j->op == FS_OP_COMMIT)
                j->memo = metadata_text_memo_new();
        buf_init(&text, SIZE_MAX - 1);
        r = metadata_text_dump(metadata, j->memo, &text);
        if (r < 0) {
                filesystem_job_fail(j, r, "", "cannot encode the new metadata: %s", strerror(-r));
                return r;
        }
        r = filesystem_version_write_temp(metadata_dir, METADATA_SUFFIX ".tmp",
                                          (const char *)text.data, text.len, &tmp);
        if (r < 0) {
                filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "",
                                    "cannot write a new metadata file in '%s': %s", metadata_dir,
                                    strerror(-r));
                return r;
        }
        r = rename_noreplace(tmp, final);
        if (r == -EEXIST) {
                (void)unlink(tmp);
                filesystem_job_fail(j, CATALOG_E_CONFLICT, "CommitFailedException",
                                    "Version %" PRId64 " already exists: %s", version, final);
                return r;
        }
        if (r < 0) {
                (void)unlink(tmp);
                filesystem_job_fail(j, CATALOG_E_UNAVAILABLE, "", "cannot rename '%s' to '%s': %s",
                                    tmp, final, strerror(-r));
                return r;
        }
        /* v<N+1> is visible now; until the directory entry is durable the outcome is open. */
        r = filesystem_version_fsync_dir(metadata_dir);
        if (r < 0) {
                filesystem_job_fail(j, CATALOG_E_STATE_UNKNOWN, "",
                                    "'%s' was published but fsync of '%s' failed: %s", final,
                                    metadata_dir, strerror(-r));
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
