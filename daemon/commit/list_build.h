/* SPDX-License-Identifier: Apache-2.0 */
/* The steps of an attempt that build and write its manifest list (list_build.c). Each ends with
 * one outcome (step.h). */
#pragma once

#include "commit/batch.h"

/* What the list is built on: the snapshot's numbers, the parent snapshot and list, the list's
 * name. */
void list_build_plan(Batch *b);
/* The parent's manifest list: the queue's cache when it is the parent (list_cache.c), else read
 * into b->parent_bytes; nothing when the branch has no snapshot. */
void list_build_parent(Batch *b);
/* Thread pool: parses the parent's list, puts the batch's manifests first and the parent's
 * after, flags the requests naming what the table or the batch holds already (one data file
 * once; STEP_REFUSE_FLAGGED), and finds the entries with null counts; with nothing to count or
 * merge, also assigns row ids and serializes the list. */
void list_build_assemble(Batch *b);
/* Unless the list is serialized already: reads and counts the entries with null counts, assigns
 * row ids (v3) and serializes the list (incrementally when the parent's entries are unchanged). */
void list_build_finish(Batch *b);
/* Writes the list (create-if-absent) under this attempt's own name. */
void list_build_write(Batch *b);
