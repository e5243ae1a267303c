/* SPDX-License-Identifier: Apache-2.0 */
/* The merge step of an attempt (merge.c): the parent's manifests merged as Iceberg Java's
 * MergeAppend does (docs/design.md section 2.9). */
#pragma once

#include <stdbool.h>

#include "commit/batch.h"
#include "iceberg/snapshot.h"

/* Whether this attempt may merge the parent's manifests (the list is then built only after
 * the merge step). Pure; any thread. */
bool merge_is_possible(const Batch *b);
/* Once per attempt, before the list is counted and written: reuses the batch's merged
 * manifests whose inputs are all still in the parent's list, plans the rest by the table's
 * commit.manifest-merge properties, reads, rewrites (thread pool) and writes the bins, and
 * replaces their inputs in the attempt's snapshot change. Ends with one outcome (step.h). */
void merge_step(Batch *b);
/* After a commit that landed (is_committed) or got no verdict: this attempt's merged
 * manifests are never deleted. */
void merge_attempt_outcome(Batch *b, bool is_committed);
void merge_attempt_deinit(Batch *b);
/* At the batch's end: deletes the merged manifests no list that may have committed names. */
void merge_batch_deinit(Batch *b);
