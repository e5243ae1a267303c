/* SPDX-License-Identifier: Apache-2.0 */
/* The storage roots (docs/design.md section 9): the locations an operator lets icecommitd read
 * and write table files under ([storage] allowed-roots, else the warehouse). Pure: a list parsed
 * once, whether a location lies within it, and the check of a table's location and of the table
 * properties that name storage locations against it. Never asks storage anything. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "storage/storage.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Immutable once built. Owned by whoever built it; the daemon hands its copy to
 * storage_set_roots(). */
typedef struct StorageRoots {
        StorageLocation *roots; /* parsed: local paths normalized, s3a:// and s3n:// as s3:// */
        size_t n_roots;
        char *text; /* "'/wh', 's3://bucket/prefix'": the roots as messages name them */
} StorageRoots;

/* The roots from n locations (each a local path, file: URI or s3:// location). Returns 0,
 * -ENOMEM, or -EINVAL with the location and the reason in *error (none at all is -EINVAL). */
int storage_roots_new(const char *const *locations, size_t n, StorageRoots **ret, Error *error);
/* The same from a comma-separated list, spaces around each entry ignored ([storage]
 * allowed-roots). An empty entry is -EINVAL. */
int storage_roots_parse(const char *list, StorageRoots **ret, Error *error);
StorageRoots *storage_roots_free(StorageRoots *r);
DEFINE_CLEANUP_FUNC(StorageRoots, storage_roots_free);

/* Whether a location (parsed by storage_location_parse()) is a root or lies beneath one,
 * compared canonically, segment by segment: "/wh2" is not beneath "/wh"; s3, s3a and s3n are one
 * store. NULL roots contain nothing. */
bool storage_roots_contain_parsed(const StorageRoots *r, const StorageLocation *l);

/* Whether a table property (or a namespace property, which some catalogs hand down to tables)
 * steers where a table's files lie: any write.*.path (write.data.path, write.metadata.path, the
 * older write.folder-storage.path and write.object-storage.path, and whatever a later Iceberg
 * adds under that pattern) and icecommit.allowed-prefixes. Setting one at creation needs the
 * right `admin`. */
bool storage_roots_property_steers(const char *key);

/* Checks a table's (or a table-to-be's) location (may be NULL: the catalog chooses) and the
 * properties that name storage locations (a JSON object of strings, may be NULL):
 * write.data.path, write.metadata.path, write.folder-storage.path, write.object-storage.path
 * and each entry of icecommit.allowed-prefixes must lie within the roots. Returns 0, or -EPERM
 * with the first offending location, what names it and the roots in *error; -EAGAIN while the
 * roots are not known yet (r NULL). Reads nothing. */
int storage_roots_check_table(const StorageRoots *r, const char *location, const json_t *properties,
                              Error *error);

/* The answer of every route that reads a table's files (commits, receipts, audits, upgrades)
 * to a table storage_roots_check_table() refuses: 0 when it is within the roots; else the HTTP
 * status and type, 403 table-outside-roots (the writer cannot fix it: an operator allows the
 * root, or the table's properties change) or 503 while the roots are not known (or out of
 * memory), with the message in *error, the same whatever was asked of the table. */
int storage_roots_refuse_table(const StorageRoots *r, const char *location,
                               const json_t *properties, const char **ret_type, Error *error);
