/* SPDX-License-Identifier: Apache-2.0 */
/* One accepted writer request (Job) and what it holds from intake to its answer: its parsed
 * manifests, the reads and probes of intake, the manifests icecommitd writes for it (owned.c).
 * Every file of the engine that works on a request includes this; job.c holds the one rule of
 * intake they share (the byte bounds). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "commit/core.h"
#include "iceberg/manifest.h"
#include "iceberg/table.h"
#include "storage/storage.h"
#include "util/budget.h"
#include "util/buf.h"
#include "util/error.h"
#include "writer/api.h"

typedef struct Batch Batch;
typedef struct Job Job;

/* One storage operation of a job's or batch's fan-out: which item it is for. */
typedef struct IoSlot {
        Job *job;
        Batch *batch;
        size_t index;
} IoSlot;

/* One data file a staged manifest names, to be sized on storage at intake (probe.c). */
typedef struct Probe {
        size_t manifest, entry; /* staged-manifests[manifest] entry */
        char *root;             /* the table root it lies under (owned) */
        int64_t size;           /* its file_size_in_bytes */
} Probe;

/* A manifest icecommitd writes for one request, once, at intake, under a name no one else
 * uses (owned.c): its copy of a staged manifest, or the manifest of its data-files. The table
 * references it, never the writer's file. Owned by its job. */
typedef struct OwnedManifest {
        char *location;     /* NULL: not ours (the staged manifest committed by reference) */
        Buf bytes;          /* its bytes, until written */
        bool is_on_storage; /* written (or maybe half-written): delete it when the request is
                             * known not to be committed */
} OwnedManifest;

/* One accepted writer request. Owned by its queue (pending list) or its batch. */
struct Job {
        CommitEngine *engine;
        WriterRequest *writer;
        KeyEntry *entry;
        StagedManifest **manifests; /* parsed at intake, reused unchanged by every attempt */
        int64_t *manifest_lengths;
        size_t n_manifests;   /* the request's staged ones, then the one for data-files */
        TableMetadata *table; /* loaded at intake for data-files or object storage */
        StorageProps *props;  /* the storage settings that load gave, or NULL */
        Buf *manifest_bytes;  /* the staged manifests as read, until parsed */
        uint64_t *file_sizes; /* the data-files' sizes on storage */
        uint8_t *file_reads;  /* tail reads of each data-file's footer so far */
        Probe *probes;        /* staged manifests' data files to size, after parsing */
        uint64_t probe_bytes; /* what they (and probe_io) count in intake */
        size_t n_probes, n_probes_started, n_probes_done;
        IoSlot *probe_io;
        int probe_status; /* the first failed probe's status, 0 if none */
        void (*probes_done)(Job *j);
        IoSlot *io; /* intake reads: manifests, then data-file sizes */
        size_t n_io, n_io_started, n_io_done;
        int io_status; /* the first failed read's status, 0 if none */
        /* Per manifest (n_manifests + 1 slots: the staged ones, then the data-files' one):
         * what icecommitd writes for it at intake, committed in its place. */
        OwnedManifest *owned;
        IoSlot *owned_io;
        size_t n_owned_next, n_owned_started, n_owned_done;
        int owned_status; /* the first failed write's status, 0 if none */
        void (*owned_done)(Job *j);
        bool may_be_committed;    /* an attempt got no verdict: keep what is owned */
        bool resolves_unknown;    /* a retry of a key whose commit got no verdict before */
        int intake_status;        /* HTTP status of an intake failure, 0 if fine */
        bool breaks_lineage;      /* equality deletes on a v3 table, allowed by policy */
        const char *refusal_type; /* set on the thread pool when this attempt found the
                                   * request naming what the table or the batch holds
                                   * already; answered (422) by the loop, reason in error */
        const char *intake_type;  /* its error type; NULL: "invalid-manifest" */
        /* What the request holds at intake (docs/design.md section 2.1): its manifests' bytes
         * until parsed, what parsing keeps until the request is answered, the data-files
         * manifest until written, the probe list until probed; within its own bound
         * (commit.intake-max-request-bytes) and the engine's intake_budget. */
        BudgetHold intake;
        Error error;
        uv_work_t work;
        Job *next;
};

/* Sets the job's intake failure after a budget_take() on j->intake refused (r: -EFBIG, the
 * request's own bound: 413 request-too-large; -EBUSY, the daemon's: 503 server-busy), naming
 * `what` and the bound. Returns r. Any thread (the job is its thread's). */
int job_intake_refuse(Job *j, int r, const char *what);
