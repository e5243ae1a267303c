/* SPDX-License-Identifier: Apache-2.0 */
/* Whether data written with one Iceberg schema still maps onto a table's current schema, by
 * field id (spec "Schema Evolution"): the check a staged manifest's "schema" metadata gets
 * before its files are committed. Pure: JSON in, verdict out. */
#pragma once

#include <jansson.h>

#include "util/error.h"

enum {
        _SCHEMA_COMPAT_E_SUCCESS,
        SCHEMA_COMPAT_E_INCOMPATIBLE, /* the data does not map: *error names every offending field
                                       */
};

/* Compares `written` (the schema the data was written with) to `current` (the table's current
 * schema), both Iceberg schema JSON objects (spec Appendix C), recursively through structs,
 * list elements, map keys and values. Compatible: the same field ids, renames, new optional
 * fields, new required fields with an initial-default, a required field now optional, and the
 * spec's type promotions (int->long, float->double, decimal(P,S)->decimal(P',S) with P'>=P; in
 * format 3 also date->timestamp/timestamp_ns and unknown->any primitive). Returns 0 when
 * compatible; SCHEMA_COMPAT_E_INCOMPATIBLE with one clause per offending field in *error (a
 * written field dropped, a written name now used by another field id, a type change that is no
 * promotion, an optional field made required, a required field the data lacks without
 * initial-default); -EINVAL for JSON that is not an Iceberg schema (reason in *error); -ENOMEM. */
int schema_compat_check(const json_t *written, const json_t *current, int format_version,
                        Error *error);
