/* SPDX-License-Identifier: Apache-2.0 */
/* Table and namespace creation requests of the writer API (proto/openapi.yaml), pure: parsing a
 * body into the catalog's CreateTableRequest, and deciding whether a table that already exists
 * is the one asked for (creation is idempotent). No I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/cleanup.h"
#include "util/error.h"
#include "util/slice.h"

/* The format version a table gets when the request names none. */
#define TABLE_CREATE_DEFAULT_FORMAT_VERSION 3

/* Parses the body of POST /v1/namespaces/{namespace}/tables: "name" (required), "schema"
 * (required, an Iceberg struct schema), "partition-spec", "write-order", "location",
 * "properties" (string values), "format-version" (1, 2 or 3; default 3). Returns the
 * CreateTableRequest to send to the catalog (format version as the "format-version" property,
 * as the REST spec carries it) and the name, or -EINVAL with the reason. */
int create_table_request_parse(Slice body, json_t **ret_request, const char **ret_name,
                               Error *error);

/* Parses the body of POST /v1/namespaces: {"namespace": ["level", ...], "properties": {...}}.
 * Returns the levels (owned, NULL-terminated) and the properties (owned, may be NULL), or
 * -EINVAL with the reason. */
int create_namespace_request_parse(Slice body, char ***ret_levels, size_t *ret_n_levels,
                                   json_t **ret_properties, Error *error);

/* What in a create request says where files lie, and so needs the right `admin` besides
 * `create` (docs/design.md section 9): the table request's "location", else the first of its
 * properties that steers storage (storage_roots_property_steers()); for a namespace's properties
 * (may be NULL; some catalogs derive a table's default location from its namespace's), its
 * "location" or such a property. The name (borrowed from the request), or NULL: the catalog
 * chooses, and `create` is enough. */
const char *create_table_request_steers(const json_t *request);
const char *create_namespace_properties_steer(const json_t *properties);

/* Whether `metadata` (an existing table's metadata object) is what `request` (from
 * create_table_request_parse) asks for: the same format version, the same schema (names, types,
 * nullability and nesting; field ids are the catalog's to assign), the same partition fields
 * (source column, transform and name) and every requested property with the same value.
 * Returns 0 when it is, -EEXIST with the first difference in `error` when not, or -EINVAL for
 * metadata that cannot be read. */
int create_table_request_matches(const json_t *request, const json_t *metadata, Error *error);
