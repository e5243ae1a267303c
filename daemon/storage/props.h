/* SPDX-License-Identifier: Apache-2.0 */
/* Inside storage/: reading one setting of StorageProps (storage.h) for one location. */
#pragma once

#include "storage/storage.h"

/* The value of `key` (e.g. "s3.access-key-id") for `location`: the longest-prefix
 * storage-credentials entry, else the merged properties; NULL when unset (p may be NULL). */
const char *storage_props_get(const StorageProps *p, const char *location, const char *key);
