/* SPDX-License-Identifier: Apache-2.0 */
/* File I/O on table storage: local paths and file:// URIs. Blocking: callers run it on the uv
 * thread pool, never on the loop thread. Object stores (s3://) are refused, for now. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

/* Maps an Iceberg location ("/p", "file:/p", "file:///p") to a normalized absolute path
 * (no "//", ".", ".." segments). -EPROTONOSUPPORT for other schemes, -EINVAL for relative
 * paths or "..". */
int storage_path_from_location(const char *location, char **ret_path, Error *error);
/* Whether `location` lies strictly inside the directory `dir_location` (both normalized). */
bool storage_location_is_within(const char *location, const char *dir_location);
/* Reads a whole file of at most max_bytes into out. -EFBIG when larger. */
int storage_read_file(const char *path, uint64_t max_bytes, Buf *out, Error *error);
/* Creates a new file (never replaces one: -EEXIST), writes data, fsyncs file and directory. */
int storage_write_new_file(const char *path, const void *data, size_t len, Error *error);
/* The size of an existing regular file: -ENOENT when it does not exist, -EISDIR/-EINVAL when
 * it is a directory or no regular file, other -errno from stat(2), with the reason in *error. */
int storage_file_size(const char *path, uint64_t *ret_size, Error *error);
/* Deletes a file; a missing one is not an error. */
int storage_delete_file(const char *path);
