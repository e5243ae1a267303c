/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: finding and reading the latest version of a bucket catalog's table
 * (bucket_version.c) for loads and commits. Nothing outside catalog/ includes this. */
#pragma once

#include "catalog/bucket_job-internal.h"

/* Starts a load or commit job: from the table's cached version when its object is unchanged,
 * else from the latest found in the bucket. Ends in j->on_found with j->version,
 * j->metadata_location and j->metadata set, or answers the job with the failure. */
void bucket_version_begin(BucketJob *j);

/* The cached version the job built on was not the latest: forgets it, drops what the job built
 * on it, and finds the latest as a job without the cache does, once. */
void bucket_version_retry_from_latest(BucketJob *j);
