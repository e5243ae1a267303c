/* SPDX-License-Identifier: Apache-2.0 */
/* What every part of the commit engine shares: the engine's state (its configuration, storage,
 * catalog, metrics, registry and budgets, what is in flight) and the services built on it alone
 * (deleting a file known not committed, the storage context of a request, freeing a table's
 * metadata off the loop, the writer-API status of a storage failure, the storage roots), and the
 * test that ends a stop. It knows no queue, batch or request. Nothing outside commit/ includes it.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "commit/registry.h"
#include "config/config.h"
#include "iceberg/table.h"
#include "metrics/metrics.h"
#include "storage/storage.h"
#include "util/budget.h"
#include "util/error.h"
#include "util/siphash.h"

typedef struct CommitEngine CommitEngine;
typedef struct TableQueue TableQueue;
typedef struct TableState TableState;

struct CommitEngine {
        uv_loop_t *loop;
        const CommitConfig *config;
        const StorageConfig *storage_config;
        Storage *storage;
        Catalog *catalog;
        Metrics *metrics;
        KeyRegistry *keys;
        TableQueue *queues;
        TableState *states;
        size_t n_queued;      /* accepted requests not yet answered */
        unsigned n_in_flight; /* thread-pool jobs and catalog calls */
        unsigned n_batches;   /* batches started and not ended */
        unsigned n_open_handles;
        Budget live_budget;                  /* shared by every queue's index */
        Budget intake_budget;                /* every request's intake (Job.intake) */
        uint64_t list_cache_bytes;           /* every queue's ListCache */
        uint8_t live_key[SIPHASH_KEY_BYTES]; /* their hash key: random, drawn once */
        bool has_live_key;
        bool is_stopping;
        bool is_closing_handles;
        /* Called by core_maybe_stopped() once stopping and nothing is in flight: closes what
         * the engine holds open and, once all is closed, calls stop_done (engine.c). */
        void (*on_quiet)(CommitEngine *e);
        void (*stop_done)(void *userdata);
        void *stop_userdata;
};

/* Deletes a file known not to be committed (location stolen; NULL is ignored), in the
 * background; props (borrowed for the call) sign an object-store delete. */
void core_delete_file(CommitEngine *e, const StorageProps *props, char *location);
/* The storage context of an operation for a request accepted at accepted_ns: the commit's
 * deadline (commit.total-timeout-ms). */
StorageContext core_storage_context(const CommitEngine *e, const StorageProps *props,
                                    uint64_t accepted_ns);
/* The writer-API answer to a failed storage operation: HTTP status and error type. A transient
 * failure is 503 (retry with the same key), never a 4xx. */
int core_storage_http_status(int status, const char **ret_type, const char *permanent_type);
/* storage_roots_refuse_table() for a loaded table, with the engine's roots. */
int core_check_table_roots(const CommitEngine *e, const TableMetadata *t, const char **ret_type,
                           Error *error);
/* Drops a reference; the last one of a tree is freed on the thread pool, never the loop. */
void core_release_json(CommitEngine *e, json_t *json);
/* Frees a table, its metadata tree as core_release_json() does (t may be NULL). */
void core_release_table(CommitEngine *e, TableMetadata *t);
/* After anything in flight ends: once stopping and nothing is in flight any more (no batch,
 * no call, no thread-pool job), hands over to e->on_quiet. */
void core_maybe_stopped(CommitEngine *e);
