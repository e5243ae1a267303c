/* SPDX-License-Identifier: Apache-2.0 */
/* The attempts of a queue's batch (attempt.c): group commit, the steps of an attempt, retries. */
#pragma once

#include "commit/batch.h"
#include "commit/queue.h"
#include "util/cleanup.h"

/* Starts the next batch of a queue when none is in flight (group commit): after
 * commit.linger-ms, from the loop. */
void attempt_kick(TableQueue *q);
/* Starts every batch that lingers (commit.linger-ms) now; returns how many. */
unsigned attempt_flush(CommitEngine *e);
/* The wait after attempt `attempt` (from 1) failed: commit.min-backoff-ms * 2^(attempt-1)
 * capped at commit.max-backoff-ms, plus up to 10% jitter drawn from `random`. Pure. */
uint64_t attempt_backoff_bound_ms(const CommitConfig *config, unsigned attempt, uint64_t random);
/* Answers every request of the batch with the same error and ends it. */
void attempt_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...)
        _printf_(5, 6);
