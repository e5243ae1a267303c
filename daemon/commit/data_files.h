/* SPDX-License-Identifier: Apache-2.0 */
/* The data-files a request describes in JSON, checked and written as one manifest at intake
 * (data_files.c). */
#pragma once

#include "commit/job.h"
#include "iceberg/manifest.h"

/* Before the intake reads: refuses data-files outside the table location
 * (nothing is asked of storage for them). On failure sets intake_status/_type
 * and j->error. */
int data_files_check_locations(Job *j);
/* Thread pool: checks the request's data-files against j->table and their sizes on storage
 * (j->file_sizes), builds their manifest into the last of j->owned (written by the loop after;
 * its capacity counted in j->intake until then) and appends it, parsed within `limits`, to
 * j->manifests. On failure sets intake_status/_type and j->error. */
int data_files_intake(Job *j, uint64_t max_manifest_bytes, const ManifestLimits *limits);
