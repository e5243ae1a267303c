/* SPDX-License-Identifier: Apache-2.0 */
/* One queue per table and branch (queue.c): the requests waiting, the batch in flight, its
 * retry timer, and what the queue keeps of its branch between batches (the live-file index, the
 * last manifest list). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "commit/core.h"
#include "commit/job.h"
#include "commit/live_files.h"
#include "iceberg/manifest_file.h"
#include "util/buf.h"
#include "writer/request.h"

/* The manifest list a queue's last commit wrote: the next attempt's parent, as it is on
 * storage (bytes) and decoded (files), so that it is neither read nor decoded again. */
typedef struct ListCache {
        char *location; /* NULL: nothing kept */
        Buf bytes;
        ManifestFile *files;
        size_t n_files;
        uint64_t size; /* what it counts against commit.manifest-list-cache-max-bytes */
} ListCache;
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

struct TableQueue {
        CommitEngine *engine;
        char *name;  /* "ns\x1ftable@branch" (request.h) */
        char *label; /* the same, printable for logs: "ns.table@branch" */
        Job *head, *tail;
        Batch *batch;           /* in flight, at most one */
        uv_timer_t retry_timer; /* the batch's next attempt; with no batch, the idle timeout */
        TableState *state;      /* the table's, shared with its other branches' queues */
        LiveIndex live;         /* the data files live in the table's branch */
        ListCache list_cache;
        TableQueue *next;
};

/* The queue of the request's table and branch, made (empty) if there is none. NULL: out of
 * memory. */
TableQueue *queue_get(CommitEngine *e, const CommitRequest *r);
/* Starts the queue's idle timeout (nothing waiting, no batch): commit.queue-idle-ms later the
 * queue is dropped with what it holds. */
void queue_idle(TableQueue *q);
/* Frees what a queue's list cache holds and empties it. */
void queue_list_cache_clear(TableQueue *q);
/* Publishes the memory every queue's live-file index holds (icecommit_live_index_bytes). */
void queue_live_index_publish(CommitEngine *e);
/* Frees a queue's live-file index and gives its memory back. */
void queue_live_index_drop(CommitEngine *e, LiveIndex *ix);
/* While stopping: closes every queue's timer; each close frees its queue and calls
 * core_maybe_stopped(). */
void queue_close_all(CommitEngine *e);
