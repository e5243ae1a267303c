/* SPDX-License-Identifier: Apache-2.0 */
/* What operators see of the engine's work (observe.c). */
#pragma once

#include "commit/batch.h"
#include "commit/job.h"

/* After a commit landed: the table's last-commit time and row ids, and the commit's log line
 * (table, branch, keys, snapshot id, attempts, duration; JSON or journal fields too). */
void observe_committed(const Batch *b);
/* From answer_job(): counts a request with an earlier commit without verdict whose
 * outcome is now known (icecommit_unknown_outcomes_resolved_total). */
void observe_job_finished(const Job *j, KeyState state, int status);
/* Before /metrics is exposed: each table's queue depth and oldest request, and the unknown
 * outcomes outstanding (registry entries answered 504, requests in queues being resolved). */
void observe_scrape(CommitEngine *e);
