/* SPDX-License-Identifier: Apache-2.0 */
/* The commit engine: one queue per table and branch, group commit, optimistic attempts with
 * backoff, the idempotency-key registry. Owns every submitted WriterRequest until answered. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "config/config.h"
#include "metrics/metrics.h"
#include "storage/storage.h"
#include "writer/api.h"

typedef struct CommitEngine CommitEngine;

/* All pointers are borrowed and must outlive the engine. */
int commit_engine_new(uv_loop_t *loop, const CommitConfig *config,
                      const StorageConfig *storage_config, Storage *storage, Catalog *catalog,
                      Metrics *metrics, CommitEngine **ret);
/* Hooks for writer_api_register(), bound to this engine. */
const WriterHooks *commit_engine_hooks(void);
/* Fails waiting requests with 503 and stops starting attempts; in-flight ones finish. Calls
 * done once nothing is in flight (or at once). */
void commit_engine_stop(CommitEngine *e, void (*done)(void *userdata), void *userdata);
CommitEngine *commit_engine_free(CommitEngine *e);
/* Starts every batch that lingers (commit.linger-ms) now; returns how many. Public so that
 * lingering is tested without a clock. */
unsigned commit_engine_flush(CommitEngine *e);
/* The wait after attempt `attempt` (from 1) failed: commit.min-backoff-ms * 2^(attempt-1)
 * capped at commit.max-backoff-ms, plus up to 10% jitter drawn from `random`. Pure; public so
 * that its bounds are tested without a clock. */
uint64_t commit_engine_backoff_ms(const CommitConfig *config, unsigned attempt, uint64_t random);
DEFINE_CLEANUP_FUNC(CommitEngine, commit_engine_free);
