/* SPDX-License-Identifier: Apache-2.0 */
/* The live-file index of a queue (one table and branch) and what one attempt of a batch does
 * with it: brought to the attempt's parent snapshot by manifest path (kept manifests keep
 * their files, gone ones drop theirs, new ones are read on the thread pool), then every data
 * file the batch stages is looked up. The functions are declared in commit/internal.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "commit/live_files.h"
#include "storage/storage.h"
#include "util/error.h"

/* Table property turning the check off for one table ("false") or on ("true"); the default is
 * [commit] live-file-index. */
#define TABLE_PROPERTY_LIVE_FILE_INDEX "icecommit.live-file-index.enabled"

/* Owned by its TableQueue; touched by that queue's one batch at a time (on the thread pool
 * while its work runs, else on the loop). */
typedef struct LiveIndex {
        LiveFiles *files;  /* NULL: not built yet, turned off, or dropped */
        bool is_current;   /* files are those of the snapshot below */
        bool has_snapshot; /* false: the ref had no snapshot (an empty index) */
        int64_t snapshot_id;
        bool is_too_large;  /* dropped over its bound: no check until a restart */
        bool is_unreadable; /* dropped: a manifest of the snapshot below could not
                             * be read; tried again once the ref moves */
} LiveIndex;

/* One attempt's use of the index. Owned by the batch, reset by every attempt. */
typedef struct LiveIndexAttempt {
        bool is_checked; /* the check ran, or was skipped, this attempt */
        bool is_used;    /* the index was consulted: `staged` is complete */
        bool is_planned; /* `missing` was computed */
        size_t *missing; /* list indices of the parent's manifests to read */
        size_t n_missing;
        size_t n_read;          /* of them, read and added */
        StorageReadItem *items; /* the chunk just read, parsed by the thread pool */
        size_t n_items;
        LiveFileHash **staged; /* per staged list entry: the hashes of its data files
                                * (NULL for a delete manifest), for the commit */
        size_t *n_staged_files;
        size_t n_staged;
        int status; /* the thread-pool step's outcome */
        Error error;
        uv_work_t work;
} LiveIndexAttempt;
