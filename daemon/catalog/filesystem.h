/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded catalog: Iceberg's Hadoop-catalog layout in a local warehouse directory,
 * <warehouse>/<namespace levels>/<table>/metadata/v<N>.metadata.json plus version-hint.text.
 * A commit is an atomic no-replace rename to v<N+1>, so two committers (processes or threads)
 * can never both win. Same call shapes and outcomes as the REST client (catalog.h); every blocking
 * step runs on the uv thread pool. Never retries and logs only the ignored version-hint failures.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "config/config.h"

/* Owned by the daemon through Catalog (catalog.h), which reaches it only through
 * filesystem_catalog_backend; tests may do the same. */
typedef struct FsCatalog FsCatalog;

/* Creates an idle catalog over catalog_config_warehouse(config) (a local absolute path or file://
 * URI; config->max_response_bytes bounds the metadata files it reads). Returns 0, -EINVAL (no
 * warehouse, not local or not absolute) or -ENOMEM. */
int filesystem_catalog_new(uv_loop_t *loop, const CatalogConfig *config, FsCatalog **ret_catalog);

/* Frees a catalog whose close completed, or one never started (or NULL). Returns NULL. */
FsCatalog *filesystem_catalog_free(FsCatalog *c);

/* This catalog behind the catalog interface (catalog.h). What each call does here:
 * - start: creates the warehouse directory if needed and checks that it is writable; cb gets
 *   success or CATALOG_E_UNAVAILABLE with the reason. is_ready: once a start succeeded.
 *   supports_idempotency: never.
 * - load_table reads the latest metadata: version-hint.text (else the highest
 *   v<N>.metadata.json), then steps forward while v<N+1> exists, as HadoopTableOperations
 *   does. Body on success: {"metadata-location": path, "metadata": {...}}. CATALOG_E_NOT_FOUND
 *   for a missing table, -EBADMSG for unreadable metadata, CATALOG_E_UNAVAILABLE for I/O
 *   errors.
 * - commit_table applies a CommitTableRequest (borrowed, copied before returning) to the
 *   latest version N and publishes v<N+1> by a no-replace rename. Body on success as for load.
 *   CATALOG_E_CONFLICT when a requirement failed or another committer published v<N+1> first
 *   (reload, retry); CATALOG_E_REJECTED for an invalid update (message says which);
 *   CATALOG_E_NOT_FOUND; CATALOG_E_UNAVAILABLE when nothing was published;
 *   CATALOG_E_STATE_UNKNOWN when v<N+1> was renamed into place but could not be made durable.
 *   idempotency_key is ignored.
 * - create_namespace creates the namespace directory (and missing parents). An existing one
 *   is CATALOG_E_CONFLICT ("Namespace already exists"); non-empty properties are
 *   CATALOG_E_REJECTED, as HadoopCatalog does not store them.
 * - create_table writes v1.metadata.json of a new table from a CreateTableRequest (borrowed)
 *   named `name`, at <warehouse>/<namespace>/<name>. CATALOG_E_CONFLICT when the table
 *   exists, CATALOG_E_NOT_FOUND when the namespace does not, CATALOG_E_REJECTED for an invalid
 *   request or a location other than the default one. Body as for load.
 * - close refuses new calls (-ESHUTDOWN), waits for the work in flight (whose callbacks still
 *   run), then calls done(userdata) from the loop (done may be NULL).
 * Every call returns <0 without calling cb: -EINVAL for an empty namespace or a name that is
 * "", ".", ".." or contains '/', -ESHUTDOWN after close, -ENOMEM; else 0 and cb is called
 * exactly once, from the loop. */
extern const CatalogBackend filesystem_catalog_backend;
