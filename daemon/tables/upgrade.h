/* SPDX-License-Identifier: Apache-2.0 */
/* POST /v1/namespaces/{namespace}/tables/{table}/upgrade: upgrades a format 2 table to 3 through
 * the catalog (update upgrade-format-version), after a pre-flight report (preflight.h) that a
 * dry run answers alone. Reads manifest lists through storage and parses them on the thread
 * pool; never writes table files. */
#pragma once

#include <uv.h>

#include "auth/auth.h"
#include "catalog/catalog.h"
#include "config/config.h"
#include "http/http.h"
#include "storage/storage.h"

/* What the handler needs; owned by TablesApi, every pointer borrowed from the daemon. */
typedef struct UpgradeContext {
        Auth *auth; /* NULL: no authentication */
        Catalog *catalog;
        uv_loop_t *loop;
        const TablesConfig *config;
        const StorageConfig *storage_config;
        Storage *storage;
} UpgradeContext;

/* The route handler; userdata is an UpgradeContext that outlives every request. */
void upgrade_handle(HttpRequest *r, void *userdata);
