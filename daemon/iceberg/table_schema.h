/* SPDX-License-Identifier: Apache-2.0 */
/* Schemas, partition specs and sort orders inside table metadata JSON: validated as Iceberg
 * Java 1.11's builders do, for table_update.c (add-schema, add-spec, add-sort-order, create).
 * Pure: no I/O, inputs never modified. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/error.h"

#define PARTITION_FIELD_ID_START 1000 /* PartitionSpec.PARTITION_DATA_ID_START */

/* Every field id of a schema (fields, list elements, map keys and values), sorted. */
typedef struct SchemaFieldIds {
        int32_t *ids;
        size_t n, cap;
} SchemaFieldIds;

void table_schema_field_ids_deinit(SchemaFieldIds *s);
bool table_schema_field_ids_has(const SchemaFieldIds *s, int64_t id);

/* Validates `schema` (struct type, field ids unique and > 0, names, known types, v3-only types
 * only in format_version 3, identifier-field-ids) and collects its ids into *ids (the caller
 * deinits it). -EINVAL with the field and rule, -ENOMEM. */
int table_schema_field_ids_collect(const json_t *schema, int format_version, SchemaFieldIds *ids,
                                   Error *error);

/* The same, for callers that only need the verdict and the highest field id. */
int table_schema_validate(const json_t *schema, int format_version, int32_t *ret_highest_id,
                          Error *error);

/* The schema with that id in metadata "schemas" (borrowed), or NULL. */
const json_t *table_schema_by_id(const json_t *md, int64_t schema_id);
/* The current schema of metadata (borrowed), or NULL. */
const json_t *table_schema_current(const json_t *md);
/* The ids of the current schema; -EINVAL naming `what` when there is none. */
int table_schema_current_ids(const json_t *md, int format_version, SchemaFieldIds *ids,
                             const char *what, Error *error);

/* Returns a copy of `spec` with "spec-id" set and every field's "field-id" assigned (kept when
 * given; else the id an existing spec uses for the same source and transform, as Java's
 * freshSpec does in v2+; else *last_partition_id + 1, which it advances), validated against
 * `ids` and `schema` (names unique, transforms known, sources primitive fields outside lists and
 * maps). -EINVAL with the field and rule, -ENOMEM. */
int table_schema_partition_spec_fresh(const json_t *spec, const json_t *existing_specs,
                                      int format_version, int32_t spec_id,
                                      const SchemaFieldIds *ids, const json_t *schema,
                                      int32_t *last_partition_id, json_t **ret_spec, Error *error);

/* Validates a sort order (order-id, fields with known transforms, directions, null orders and
 * sources in `ids`). -EINVAL. */
int table_schema_sort_order_validate(const json_t *order, const SchemaFieldIds *ids, Error *error);
