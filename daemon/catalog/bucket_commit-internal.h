/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: publishing the next version of a bucket catalog's table
 * (bucket_commit.c), for commits and creations. Nothing outside catalog/ includes this. */
#pragma once

#include "catalog/bucket_job-internal.h"

/* Builds the version to publish as v<j->publish_version> on the thread pool (a commit applies
 * j->request to j->metadata first; a creation has it in j->updated), then publishes it by
 * conditional create, writes the hint, deletes the metadata files that dropped out of the log,
 * and answers. A commit built on a cached version that was not the latest starts again from
 * the latest (bucket_version.c). */
void bucket_commit_build(BucketJob *j);
