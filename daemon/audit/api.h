/* SPDX-License-Identifier: Apache-2.0 */
/* The lineage audit's HTTP routes: GET /v1/namespaces/{ns}/tables/{t}/lineage and
 * GET /v1/namespaces/{ns}/tables/{t}/row-ids/{id} (proto/openapi.yaml). Loads the table through
 * the catalog client, reads manifest lists and manifests on the uv thread pool, answers JSON.
 * Read-only: it never writes to the catalog or to table storage. */
#pragma once

#include <uv.h>

#include "auth/auth.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "http/http.h"
#include "util/cleanup.h"

/* Owned by the daemon, freed after the loop ran dry (the thread-pool jobs and catalog calls
 * it started keep the loop alive until they ended). */
typedef struct AuditApi AuditApi;

/* Registers the routes on `server` (before it starts). Every pointer is borrowed and must
 * outlive the AuditApi; `auth` NULL means no authentication. Returns 0, -ENOMEM or the
 * router's error. */
int audit_api_new(uv_loop_t *loop, HttpServer *server, Auth *auth, Catalog *catalog,
                  const AuditConfig *config, const StorageConfig *storage_config, Storage *storage,
                  AuditApi **ret_api);
/* Frees the API once no audit runs (after uv_run() returned). Accepts NULL; returns NULL. */
AuditApi *audit_api_free(AuditApi *api);
DEFINE_CLEANUP_FUNC(AuditApi, audit_api_free);
