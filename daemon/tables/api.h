/* SPDX-License-Identifier: Apache-2.0 */
/* Table management routes of the writer API (proto/openapi.yaml):
 *   POST /v1/namespaces                       create a namespace (idempotent)
 *   POST /v1/namespaces/{namespace}/tables    create a table, and its namespace when missing
 *                                             (idempotent when the same table exists)
 *   POST /v1/namespaces/{namespace}/tables/{table}/upgrade
 *                                             upgrade format version 2 -> 3, or report on it
 *                                             (dry run); see upgrade.h
 * Both go to whichever catalog backend is configured (catalog.h). */
#pragma once

#include <uv.h>

#include "auth/auth.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "http/http.h"
#include "util/cleanup.h"

/* Owned by the daemon, freed after the HTTP server and the catalog have closed. */
typedef struct TablesApi TablesApi;

/* Registers the routes on `server` (before it starts); `auth` (NULL: no authentication),
 * `catalog`, `loop` (thread-pool reads of manifest lists) and both configs are borrowed.
 * Returns 0, -ENOMEM or the router's error. */
int tables_api_new(HttpServer *server, Auth *auth, Catalog *catalog, uv_loop_t *loop,
                   const TablesConfig *config, const StorageConfig *storage_config,
                   Storage *storage, TablesApi **ret_api);
TablesApi *tables_api_free(TablesApi *api);
DEFINE_CLEANUP_FUNC(TablesApi, tables_api_free);
