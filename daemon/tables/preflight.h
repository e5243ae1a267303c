/* SPDX-License-Identifier: Apache-2.0 */
/* The pre-flight report of a format upgrade (v2 -> v3), pure: which branches exist and what their
 * manifest lists hold, who wrote the newest snapshots, where equality deletes are, which
 * manifests have unknown row counts. Built from table metadata and the lists read; no I/O. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "iceberg/table.h"
#include "util/error.h"
#include "util/slice.h"

/* The body of POST /v1/namespaces/{namespace}/tables/{table}/upgrade. */
typedef struct UpgradeRequest {
        int format_version; /* "format-version": the version asked for (1 to 3) */
        bool dry_run;       /* "dry-run": report only, change nothing */
} UpgradeRequest;

/* One branch head of the table, and its manifest list once read. */
typedef struct UpgradeBranch {
        const char *name; /* borrowed from the metadata */
        int64_t snapshot_id;
        const json_t *snapshot; /* borrowed; NULL when the metadata lacks it */
        char *list_location;    /* owned; NULL when there is no snapshot or list */
        ManifestFile *files;    /* owned, filled by whoever reads the list */
        size_t n_files;
} UpgradeBranch;

/* Parses the body: {"format-version": 3, "dry-run": true|false}, both required, nothing else.
 * Returns 0 or -EINVAL with the reason. */
int preflight_request_parse(Slice body, UpgradeRequest *ret, Error *error);

/* The branches of the table ("refs" of type branch), "main" first, then by name. Tags are left
 * out: nothing commits to them. Returns 0, -EINVAL (a branch whose head is not a snapshot of
 * the table, or whose snapshot has no manifest-list), -ENOMEM. */
int preflight_branches_collect(const TableMetadata *t, UpgradeBranch **ret_branches, size_t *ret_n,
                               Error *error);
UpgradeBranch *preflight_branches_free(UpgradeBranch *branches, size_t n);

/* Builds the report (proto/openapi.yaml UpgradeReport) from the metadata, the branches with
 * their lists read, and the newest `lookback` snapshots' summaries. "status" is set by the
 * caller. NULL on allocation failure. */
json_t *preflight_report_build(const TableMetadata *t, const UpgradeBranch *branches, size_t n,
                               int target_format_version, uint32_t lookback);
