/* SPDX-License-Identifier: Apache-2.0 */
/* One batch: the requests of one table and branch committed together in one snapshot, and
 * what its attempts keep (docs/design.md section 2). attempt.c owns it and drives its attempts
 * through the steps (checks.c, list_build.c, live_index.c, merge.c, landing.c); each step ends
 * by reporting a StepOutcome (step.h), never by calling the driver. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

#include "commit/job.h"
#include "commit/live_files.h"
#include "commit/queue.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_file.h"
#include "iceberg/manifest_merge.h"
#include "iceberg/snapshot_change.h"
#include "iceberg/table.h"
#include "storage/storage.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/uuid.h"

typedef struct StepOutcome StepOutcome;

/* A parent manifest whose list entry had null (unknown) counts, counted from its entries. */
typedef struct CountedManifest {
        char *path;
        ManifestCounts counts;
} CountedManifest;

/* A manifest a batch merged from parent manifests (merge.c): written once and kept across the
 * batch's attempts, so that a retry reuses it while its inputs are all still in the parent's
 * list. Owned by the batch; deleted at its end unless a list naming it may have committed. */
typedef struct MergedManifest {
        ManifestFile file; /* its list entry (no first_row_id); file.path: where it lies */
        char **inputs;     /* the parent's manifests it replaces, in list order */
        size_t n_inputs;
        uint64_t n_entries_read;
        bool is_used;          /* in this attempt's list */
        bool may_be_committed; /* in a list that committed or got no verdict */
} MergedManifest;

/* One attempt's merge step (merge.c), reset by every attempt. */
typedef struct MergeAttempt {
        bool is_done;                  /* ran (or was skipped) this attempt */
        size_t *owner;                 /* per parent list entry: 1 + index of the merged
                                        * manifest replacing it, 0 if none */
        ManifestMergePlan plan;        /* over candidates: the entries no merged one claims */
        size_t *candidates;            /* ... as list indices */
        ManifestFile *candidate_files; /* shallow copies for the plan, not owned */
        size_t n_candidates;
        StorageReadItem *items; /* the plan's inputs as read, bins in order */
        size_t n_items;
        Buf *bytes;          /* per bin: the merged manifest until written */
        ManifestFile *files; /* per bin: its list entry until cached */
        ManifestMergeStats *stats;
        int *status;      /* per bin: 0 merged, else left unmerged (the reason logged) */
        size_t n_written; /* bins handled by the write step so far */
        int work_status;
        Error error;
        uv_work_t work;
} MergeAttempt;

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

struct Batch {
        TableQueue *queue;
        size_t step; /* the attempt's step running (attempt.c) */
        /* Where every step reports how it ended (step.c): set by the driver. */
        void (*step_done)(Batch *b, const StepOutcome *o);
        Job **jobs;
        size_t n_jobs, max_jobs; /* max_jobs: room in jobs */
        int64_t snapshot_id;     /* chosen once, reused by every attempt */
        char commit_uuid[UUID_STRING_MAX];
        unsigned attempt;
        unsigned built_attempt; /* the attempt that built commit_request (replays resend it) */
        uint64_t started_ns;
        TableMetadata *table;
        StorageProps *props; /* this attempt's storage settings from its load */
        TableBranch head;    /* the branch as loaded; not existing = created by this commit */
        TableBranch parent;  /* the head, or for a new branch main's head (as Java does) */
        char *parent_list_location;
        int64_t sequence_number;
        int64_t first_row_id;
        int64_t next_row_id;
        int64_t timestamp_ms;
        /* This attempt's snapshot: the only input of its list, row ids, summary, record and
         * receipts (its parts are the batch's jobs, in order). */
        SnapshotChange change;
        char *list_location;        /* as sent to the catalog */
        char *list_cleanup;         /* the same, while ours to delete; NULL once committed
                                     * or handed to deletion */
        Buf parent_bytes;           /* the parent's manifest list as read, until the new one */
        ManifestFile *parent_files; /* ... and parsed */
        size_t n_parent_files;
        bool has_parent_files; /* parent_files came with parent_bytes (the list cache) */
        size_t *to_count;      /* indices into list of manifests to count, this attempt */
        Buf *count_bytes;      /* ... and their bytes */
        size_t n_to_count;
        IoSlot *io;
        size_t n_io_started, n_io_done;
        int io_status;
        Buf list_bytes;                   /* the new manifest list, until written */
        json_t *commit_request;           /* this attempt's CommitTableRequest, kept for replays */
        char commit_key[UUID_STRING_MAX]; /* its Idempotency-Key ("" when none was sent) */
        bool has_unknown;                 /* an attempt got no verdict: it may have landed */
        bool on_state;                    /* this attempt's table is the table state's */
        bool needs_fresh_table;           /* a check on the state would refuse: load first */
        CountedManifest *counted;         /* manifests counted from their entries, kept across
                                           * attempts so that a retry does not read them again */
        size_t n_counted;
        int work_status;
        LiveIndexAttempt live;  /* this attempt's check against the live files */
        MergedManifest *merged; /* every manifest this batch merged, across attempts */
        size_t n_merged;
        StorageProps *merge_props; /* the storage settings to delete them with */
        MergeAttempt merge;
        Error error;
        uv_work_t work;
};

/* Takes request i out of the batch (answered, or to be answered, by the caller). */
static inline void batch_remove_job(Batch *b, size_t i) {
        memmove(&b->jobs[i], &b->jobs[i + 1], (b->n_jobs - i - 1) * sizeof(*b->jobs));
        b->n_jobs--;
}
