/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded catalog on object storage: the filesystem catalog's Hadoop layout
 * (<warehouse>/<namespace levels>/<table>/metadata/v<N>.metadata.json plus version-hint.text)
 * in an S3 bucket, for catalog.warehouse = s3://bucket/path. A commit creates v<N+1> with a
 * conditional PUT (If-None-Match: *), so of several daemons on one bucket exactly one wins each
 * version, as the no-replace rename does on local disks. Namespaces are empty marker objects
 * "<namespace>/". Same call shapes and outcomes as catalog.h; all I/O through storage.h on the
 * loop. Never retries a commit itself. */
#pragma once

#include <uv.h>

#include "catalog/catalog.h"
#include "config/config.h"
#include "storage/storage.h"

/* Owned by the daemon through Catalog; storage is borrowed and must outlive it. */
typedef struct BucketCatalog BucketCatalog;

/* Creates an idle catalog over catalog_config_warehouse(config), an s3:// location. Returns 0,
 * -EINVAL (not an object-store location) or -ENOMEM. */
int bucket_catalog_new(uv_loop_t *loop, const CatalogConfig *config, Storage *storage,
                       BucketCatalog **ret);

extern const CatalogBackend bucket_catalog_backend;
