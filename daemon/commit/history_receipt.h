/* SPDX-License-Identifier: Apache-2.0 */
/* The receipt of a key the table history records, rebuilt from storage (history_receipt.c). */
#pragma once

#include <jansson.h>

#include "commit/job.h"
#include "iceberg/table.h"
#include "storage/storage.h"

typedef struct HistoryReceipt HistoryReceipt;
/* What history_receipt_start() rebuilds a receipt from; borrowed for the call. */
typedef struct HistoryReceiptArgs {
        const json_t *snapshot;   /* the snapshot whose record holds the key */
        const char *recorded_key; /* as recorded: "principal/key" with auth */
        const char *key;          /* as the writer sent it */
        const json_t *namespace;  /* the table's namespace levels, a JSON array */
        const char *table;
        const char *root;         /* the table location, which staged manifests lie beneath */
        const char *metadata_dir; /* the table's, which icecommitd's own manifests lie beneath */
        const StorageProps *props;
} HistoryReceiptArgs;
/* Called once from the loop: the receipt (owned), or NULL with a retryable failure (status <0,
 * the reason in error). */
typedef void (*HistoryReceiptFn)(json_t *receipt, int status, const Error *error, void *userdata);
/* Rebuilds the receipt of a key a snapshot records: the request's list entries and manifests
 * read from storage. A snapshot that records the key without the rest (an older icecommitd),
 * or whose files are gone, gives the receipt without manifests. Returns 0 (done will be
 * called, never from inside this call), -ENOENT (the snapshot does not record the key),
 * -ENOMEM or a storage error. */
int history_receipt_start(CommitEngine *e, const HistoryReceiptArgs *a, HistoryReceiptFn done,
                          void *userdata);
/* The response header that tells a receipt was found in the table history. */
#define HISTORY_RECEIPT_HEADER "Icecommit-Found-In-History"
/* Answers job j (taken; out of every queue and batch) with the receipt of its key, which
 * snapshot records: 200 with HISTORY_RECEIPT_HEADER, or 503 when it cannot be read now. */
void history_receipt_answer_job(Job *j, const json_t *snapshot, const TableMetadata *t,
                                const StorageProps *props);
