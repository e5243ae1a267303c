/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: the versions of a filesystem catalog's table on disk
 * (filesystem_version.c), read and published for the operations of filesystem_ops.c. Blocking
 * I/O, thread pool only. Nothing outside catalog/ includes this. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "catalog/filesystem_job-internal.h"
#include "catalog/table_cache.h"

/* "<table_dir>/metadata", malloc'ed; NULL when out of memory. */
char *filesystem_version_metadata_dir(const char *table_dir);

/* Whether the job's cached version is still the table's latest: its file is the one that was
 * read or written and, when check_next, no v<N+1> exists. */
bool filesystem_version_cached_is_latest(const FsJob *j, bool check_next);

/* The highest v<N>.metadata.json in metadata_dir: 0 when there is none, -errno when the
 * directory cannot be listed. */
int64_t filesystem_version_scan(const char *metadata_dir);

/* Finds and parses the latest metadata of the table in j->dir (version-hint.text, else a
 * listing, then forward while v<N+1> exists). Returns 0 with the version, its path (owned),
 * its metadata (owned) and stamp, or fails the job (NOT_FOUND, -EBADMSG, UNAVAILABLE) and
 * returns -1. */
int filesystem_version_read_latest(FsJob *j, int64_t *ret_version, char **ret_path,
                                   json_t **ret_metadata, TableCacheStamp *ret_stamp);

/* fsync() of a directory, for new entries in it. Returns 0 or -errno. */
int filesystem_version_fsync_dir(const char *dir);

/* Writes data to a new unique file "<dir>/.<uuid><suffix>" (O_EXCL), fsyncs it and returns its
 * path (owned). Returns 0 or -errno (then no file is left). */
int filesystem_version_write_temp(const char *dir, const char *suffix, const char *data, size_t len,
                                  char **ret_path);

/* After a commit from base to updated was published as `current`: deletes the previous
 * metadata files that dropped out of the metadata-log when the table asks for it; failures are
 * counted in the job, never its outcome. */
void filesystem_version_delete_removed(FsJob *j, const char *metadata_dir, const json_t *base,
                                       const json_t *updated, const char *current);

/* Publishes `metadata` as v<version> of the table in j->dir by no-replace rename, then updates
 * the hint. Returns 0 (and the new file's path, owned, and stamp), or fails the job and returns
 * -EEXIST (CONFLICT: another writer took v<version>) or another -errno. */
int filesystem_version_publish(FsJob *j, int64_t version, const json_t *metadata, char **ret_path,
                               TableCacheStamp *ret_stamp);
