/* SPDX-License-Identifier: Apache-2.0 */
/* Blocking file I/O on local paths (normalized, from storage_path_from_location()). Only for
 * the uv thread pool: storage.c's local backend, and the embedded filesystem catalog's own
 * thread-pool work. Everything else goes through the asynchronous storage.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

/* Reads a whole regular file of at most max_bytes into out. -EFBIG when larger. */
int storage_local_read_file(const char *path, uint64_t max_bytes, Buf *out, Error *error);
/* The same beneath root (a normalized directory path; NULL: anywhere): resolved with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS) from root, so that a path not under root or
 * a symlink out of it is -EXDEV; a kernel without openat2 gets storage_local_open_walk(). */
int storage_local_read_beneath(const char *root, const char *path, uint64_t max_bytes, Buf *out,
                               Error *error);
/* The last max_tail_bytes (>= 1) of a regular file beneath root (as above), or all of it when it
 * is smaller, and its size. -EAGAIN when it shrank while read. */
int storage_local_read_tail(const char *root, const char *path, uint64_t max_tail_bytes,
                            uint64_t *ret_size, Buf *out, Error *error);
/* The fallback of the _beneath functions: opens relative (no "", "." or ".." components) from
 * root_fd one component at a time with O_NOFOLLOW, refusing every symlink with -EXDEV, the last
 * component with flags. Exported for the tests. */
int storage_local_open_walk(int root_fd, const char *relative, int flags, int *ret_fd);
/* Creates a new file (never replaces one: -EEXIST), writes data, fsyncs file and directory. */
int storage_local_write_new_file(const char *path, const void *data, size_t len, Error *error);
/* The size of an existing regular file: -ENOENT when it does not exist, -EISDIR/-EINVAL when
 * it is a directory or no regular file, other -errno from stat(2), with the reason in *error. */
int storage_local_file_size(const char *path, uint64_t *ret_size, Error *error);
/* The same beneath root (see storage_local_read_beneath()); opened O_PATH, never read. */
int storage_local_size_beneath(const char *root, const char *path, uint64_t *ret_size,
                               Error *error);
/* Deletes a file; a missing one is not an error. */
int storage_local_delete_file(const char *path);
/* The regular files whose path starts with `prefix` (one directory level: the prefix's
 * directory is listed), sorted: the first max_names, *ret_truncated when there were more.
 * -ENOENT when the directory is missing. */
int storage_local_list(const char *prefix, size_t max_names, char ***ret_names, size_t *ret_n,
                       bool *ret_truncated, Error *error);
