/* SPDX-License-Identifier: Apache-2.0 */
/* A human-readable reason travelling beside an int return code: parsers and validators fill
 * it so that the edge (an HTTP handler, main.c) can tell the user which file, entry or rule
 * failed. Fixed size so that filling it can never fail. */
#pragma once

#include <stdarg.h>

#include "util/cleanup.h"

typedef struct Error {
        char message[1024];
} Error;

/* Writes the message (when e is not NULL) and returns `code`, for `return error_set(...)`. */
int error_set(Error *e, int code, const char *fmt, ...) _printf_(3, 4);
/* Prepends "prefix: " to the existing message, for adding context on the way up. */
int error_prefix(Error *e, int code, const char *fmt, ...) _printf_(3, 4);
