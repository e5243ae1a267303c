/* SPDX-License-Identifier: Apache-2.0 */
/* Table metadata as a catalog keeps it: applying a REST CommitTableRequest (requirements, then
 * updates, with the checks of Iceberg Java's TableMetadata.Builder) and building the first
 * metadata of a table from a CreateTableRequest. Pure: no I/O, inputs are never modified. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/error.h"

/* Table properties of the metadata log, with Iceberg Java's names and defaults
 * (TableProperties): entries kept in metadata-log, and whether a commit deletes the files that
 * dropped out of it. */
#define TABLE_UPDATE_PROPERTY_PREVIOUS_VERSIONS_MAX "write.metadata.previous-versions-max"
#define TABLE_UPDATE_PREVIOUS_VERSIONS_MAX_DEFAULT 100
#define TABLE_UPDATE_PROPERTY_DELETE_AFTER_COMMIT "write.metadata.delete-after-commit.enabled"

/* Applies `commit_request` ({"requirements": [...], "updates": [...]}) to `metadata` (the JSON
 * object of a vN.metadata.json) and returns the new metadata in *ret_new_metadata (owned).
 * last-updated-ms becomes now_ms (never earlier than before); previous_metadata_location, when
 * not NULL, is appended to metadata-log (trimmed to write.metadata.previous-versions-max).
 * Returns 0; -ESTALE when a requirement failed or the request carries values the table has
 * moved past (sequence number, first-row-id), as Java's 409 CommitFailedException: reload and
 * retry; -EINVAL when the request or the metadata is invalid (a 400); -ENOMEM. The message in
 * `error` names the requirement or update and the values. Copy-on-write: the result shares
 * every member the request leaves alone with `metadata` (which is never changed), so the cost
 * does not grow with the table's history beyond copying the pointers of the containers an
 * update changes; callers must treat both as immutable once shared. */
int table_update_apply(const json_t *metadata, const json_t *commit_request, int64_t now_ms,
                       const char *previous_metadata_location, json_t **ret_new_metadata,
                       Error *error);

/* Whether the metadata's write.metadata.delete-after-commit.enabled is "true" (any case; unset,
 * Java's default, and any other value are false). */
bool table_update_deletes_after_commit(const json_t *metadata);
/* The metadata files of base's metadata-log that are not in updated's (same file and
 * timestamp, as Java's deleteRemovedMetadataFiles compares them): a new array of the location
 * strings in *ret_files (owned), maybe empty. Returns 0 or -ENOMEM. */
int table_update_removed_metadata_files(const json_t *base, const json_t *updated,
                                        json_t **ret_files);

/* Builds the metadata of a new table from a CreateTableRequest (name, schema, partition-spec,
 * write-order, properties; "location" overrides `location`). The format version comes from
 * properties["format-version"] (1 to 3, 2 when absent, as the REST server) and is not kept in
 * the stored properties. Field ids of the schema are kept as given (validated: unique, > 0).
 * Returns 0, -EINVAL with the field and rule that failed, or -ENOMEM. */
int table_update_metadata_create(const json_t *create_request, const char *location, int64_t now_ms,
                                 const char *uuid, json_t **ret_metadata, Error *error);
