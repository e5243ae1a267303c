/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/iceberg/: one requirement of a commit request (table_requirement.c), which
 * table_update.c checks before any update. Nothing outside iceberg/ includes this. */
#pragma once

#include <jansson.h>

#include "util/error.h"

/* Checks requirement `req` ({"type": "assert-...", ...}) against metadata `md`: 0; -ESTALE
 * when the table moved on (Java's CommitFailedException); -EINVAL for an unknown type or a
 * malformed requirement. The message in `error`. */
int table_requirement_check(const json_t *md, const json_t *req, Error *error);
