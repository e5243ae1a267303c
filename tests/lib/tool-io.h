/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files in and out, for the test-only tools of tests/tools (never the daemon: it reads and
 * writes through storage/). */
#pragma once

#include "util/buf.h"

/* The most a tool reads or writes at once. */
#define TOOL_MAX_FILE_BYTES (1u << 30)

/* Reads the file at path into *ret (initialized here, up to TOOL_MAX_FILE_BYTES). Returns 0 or
 * -errno. */
int tool_read_file(const char *path, Buf *ret);
/* Writes b to the file at path, replacing it. Returns 0 or -errno. */
int tool_write_file(const char *path, const Buf *b);
