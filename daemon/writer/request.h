/* SPDX-License-Identifier: Apache-2.0 */
/* A writer's commit request (POST .../commits) parsed and checked, before any file is read.
 * Pure: JSON in, struct out, with the reason for every refusal. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "iceberg/data_file.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/slice.h"

#define COMMIT_KEY_MAX 128

typedef struct CommitRequestLimits {
        size_t max_manifests;
        size_t max_data_files;       /* commit.max-data-files-per-request */
        size_t max_path_bytes;       /* commit.max-path-bytes: each location */
        size_t max_properties;       /* commit.max-snapshot-properties */
        size_t max_properties_bytes; /* commit.max-snapshot-properties-bytes: keys and values */
} CommitRequestLimits;

/* The table a request is for, from the URL path. */
typedef struct CommitTarget {
        char **namespace; /* levels, from the path's %1F-separated namespace */
        size_t n_namespace;
        char *table;
} CommitTarget;

typedef struct CommitRequest {
        CommitTarget target;
        char *idempotency_key;
        char *branch;     /* default "main" */
        char **manifests; /* staged manifest locations, request order */
        size_t n_manifests;
        DataFile *data_files; /* described files, request order: one manifest at intake */
        size_t n_data_files;
        json_t *data_files_json;     /* as sent, for the fingerprint */
        char *bounds_encoding;       /* "typed", "binary" or NULL (detected per file) */
        json_t *snapshot_properties; /* owned object of strings */
        char *fingerprint;           /* canonical JSON of all the above: same key, same body */
        char *queue_name;            /* "ns\x1ftable@branch": one queue per table and branch */
        char *table_name;            /* "ns\x1ftable": the table, whatever the branch */
        char *key_scope;    /* "[principal\x1d]ns\x1etable": where its idempotency key counts */
        char *principal;    /* who sent it; NULL when authentication is off */
        char *recorded_key; /* the key as snapshot summaries record it: "[principal/]key" */
} CommitRequest;

/* Parses and checks a request body for table `table` in `namespace_param` (levels separated
 * by 0x1F). It needs `staged-manifests`, `data-files` or both. Returns -EINVAL with a message
 * naming the field and rule, -E2BIG above a limit, -ENAMETOOLONG for a location (of a staged
 * manifest or a data file) longer than limits->max_path_bytes. */
int request_parse(const char *namespace_param, const char *table, Slice body,
                  const CommitRequestLimits *limits, CommitRequest **ret, Error *error);
CommitRequest *request_free(CommitRequest *r);
/* Makes the request `principal`'s (copied): its key then counts for that principal only, in
 * memory (key_scope) and in table history (recorded_key). Returns 0 or -ENOMEM. */
int request_set_principal(CommitRequest *r, const char *principal);
/* The scope of idempotency keys on a table: "<namespace_param>\x1e<table>", prefixed by
 * "<principal>\x1d" when `principal` is not NULL (malloc'ed; NULL when out of memory). */
char *request_key_scope(const char *principal, const char *namespace_param, const char *table);
/* The key as a snapshot summary records it: "<principal>/<key>", or the key alone when
 * `principal` is NULL ('/' is in neither a key nor a principal). Malloc'ed; NULL: no memory. */
char *request_key_recorded(const char *principal, const char *key);
/* Parses a namespace path parameter (levels separated by 0x1F) and a table name: each 1 to 255
 * bytes of UTF-8 without control characters. Returns -EINVAL with the reason, or -ENOMEM. */
int request_target_parse(const char *namespace_param, const char *table, CommitTarget *ret,
                         Error *error);
void request_target_deinit(CommitTarget *t);
/* The namespace levels as a JSON array of strings (new reference), NULL when out of memory. */
json_t *request_target_namespace_json(const CommitTarget *t);
DEFINE_CLEANUP_FUNC(CommitRequest, request_free);

/* Whether a string is a valid idempotency key: 1 to 128 of [A-Za-z0-9._:-]. Keys are stored
 * comma-separated in snapshot summaries, so commas are excluded. */
bool request_key_is_valid(const char *key);
