/* SPDX-License-Identifier: Apache-2.0 */
/* A request's receipt (receipt.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "commit/batch.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_file.h"

/* What a receipt says, from the committing attempt or rebuilt from the table. */
typedef struct ReceiptSource {
        const char *key;         /* as the writer sent it */
        const json_t *namespace; /* its levels, a JSON array */
        const char *table;
        const char *branch; /* NULL: not recorded */
        int64_t snapshot_id;
        int64_t sequence_number;
        bool has_first_row_id; /* a v3 snapshot */
        int64_t first_row_id;
        size_t n_requests;                   /* in the snapshot */
        unsigned attempt;                    /* the attempt that built it; 0: not recorded */
        bool has_manifests;                  /* false: the request's manifests are not known */
        const ManifestFile *manifests;       /* the request's list entries, in list order */
        const StagedManifest *const *staged; /* their entries, the same order */
        size_t n_manifests;
} ReceiptSource;
/* The receipt s describes. NULL when out of memory. */
json_t *receipt_from(const ReceiptSource *s);
/* The receipt of the batch's i-th request, committed by b's attempt: its part of the attempt's
 * snapshot change. NULL when out of memory. */
json_t *receipt_build(const Batch *b, size_t i);
