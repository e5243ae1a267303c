/* SPDX-License-Identifier: Apache-2.0 */
/* The live-file index of a queue (one table and branch) and what one attempt of a batch does
 * with it: brought to the attempt's parent snapshot by manifest path (kept manifests keep
 * their files, gone ones drop theirs, new ones are read on the thread pool), then every data
 * file the batch stages is looked up. The index is the queue's (queue.h), the attempt's use of
 * it the batch's (batch.h). */
#pragma once

#include "commit/batch.h"
#include "commit/core.h"
#include "commit/queue.h"

/* Table property turning the check off for one table ("false") or on ("true"); the default is
 * [commit] live-file-index. */
#define TABLE_PROPERTY_LIVE_FILE_INDEX "icecommit.live-file-index.enabled"

/* After the list is assembled (b->list holds the parent's manifests), once per attempt: brings
 * the queue's live-file index to the parent snapshot and looks up the batch's data files,
 * flagging (422 data-file-already-committed, STEP_REFUSE_FLAGGED) the requests naming a live
 * one. STEP_NEXT at once when the check is off or dropped for the table. */
void live_index_check(Batch *b);
/* After the batch's snapshot was committed: the index follows it (adds what was staged). */
void live_index_committed(Batch *b);
void live_index_attempt_deinit(LiveIndexAttempt *a);
