/* SPDX-License-Identifier: Apache-2.0 */
/* Inside the commit engine: the structures engine.c (intake, queues, keys, shutdown) and
 * batch.c (attempts of one batch) share. Nothing outside commit/ includes this. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "commit/engine.h"
#include "commit/registry.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_file.h"
#include "iceberg/table.h"
#include "util/uuid.h"

typedef struct TableQueue TableQueue;

/* A parent manifest whose list entry had null (unknown) counts, counted from its entries. */
typedef struct CountedManifest {
        char *path;
        ManifestCounts counts;
} CountedManifest;

typedef struct Batch Batch;

/* One accepted writer request. Owned by its queue (pending list) or its batch. */
typedef struct Job {
        CommitEngine *engine;
        WriterRequest *writer;
        KeyEntry *entry;
        StagedManifest **manifests;     /* parsed at intake, reused unchanged by every attempt */
        int64_t *manifest_lengths;
        size_t n_manifests;             /* the request's staged ones, then the one for data-files */
        size_t list_offset;             /* index of its first manifest in the attempt's list */
        TableMetadata *table;           /* loaded at intake for data-files, NULL otherwise */
        char *generated_location;       /* the manifest written for data-files, or NULL */
        char *generated_path;           /* its local path; NULL once handed to deletion */
        bool may_be_committed;          /* an attempt got no verdict: keep generated_path */
        int intake_status;              /* HTTP status of an intake failure, 0 if fine */
        bool breaks_lineage;            /* equality deletes on a v3 table, allowed by policy */
        const char *intake_type;        /* its error type; NULL: "invalid-manifest" */
        Error error;
        uv_work_t work;
        struct Job *next;
} Job;

struct TableQueue {
        CommitEngine *engine;
        char *name;
        Job *head, *tail;
        Batch *batch;                   /* in flight, at most one */
        uv_timer_t retry_timer;
        TableQueue *next;
};

struct Batch {
        TableQueue *queue;
        Job **jobs;
        size_t n_jobs;
        int64_t snapshot_id;            /* chosen once, reused by every attempt */
        char commit_uuid[UUID_STRING_MAX];
        unsigned attempt;
        uint64_t started_ns;
        TableMetadata *table;
        TableBranch head;               /* the branch as loaded; not existing = created by this commit */
        TableBranch parent;             /* the head, or for a new branch main's head (as Java does) */
        char *parent_list_location;
        int64_t sequence_number;
        int64_t first_row_id;
        int64_t next_row_id;
        int64_t timestamp_ms;
        ManifestFile *list;             /* staged manifests first, then the parent's */
        size_t n_list;
        size_t n_staged;
        char *list_location;            /* as sent to the catalog */
        char *list_path;                /* local path of the same file */
        json_t *commit_request;         /* this attempt's CommitTableRequest, kept for replays */
        char commit_key[UUID_STRING_MAX]; /* its Idempotency-Key ("" when none was sent) */
        bool has_unknown;               /* an attempt got no verdict: it may have landed */
        CountedManifest *counted;       /* manifests counted from their entries, kept across
                                         * attempts so that a retry does not read them again */
        size_t n_counted;
        int work_status;
        Error error;
        uv_work_t work;
};

struct CommitEngine {
        uv_loop_t *loop;
        const CommitConfig *config;
        const StorageConfig *storage;
        Catalog *catalog;
        Metrics *metrics;
        KeyRegistry *keys;
        TableQueue *queues;
        size_t n_queued;                /* accepted requests not yet answered */
        unsigned n_in_flight;           /* thread-pool jobs and catalog calls */
        unsigned n_open_handles;
        bool is_stopping;
        bool is_closing_handles;
        void (*stop_done)(void *userdata);
        void *stop_userdata;
};

/* engine.c */
json_t *engine_error_body(int status, const char *type, const char *message);
void job_free(Job *j);
/* Answers the job's writer and every waiter on its key, records the outcome, frees the job. */
void job_finish(Job *j, KeyState state, int status, json_t *body);
void job_fail(Job *j, int status, const char *type, const char *fmt, ...) _printf_(4, 5);
/* Deletes a manifest list known not to be committed, on the thread pool (path stolen). */
void engine_delete_file_async(CommitEngine *e, char *path);
/* Calls the stop callback once stopping and nothing is in flight any more. */
void engine_maybe_stopped(CommitEngine *e);

/* data_files.c */
/* Location of the job's k-th manifest: a staged one, or the one written for its data-files. */
const char *job_manifest_location(const Job *j, size_t k);
/* Thread pool: checks the request's data-files against j->table and storage, writes their
 * manifest and appends it, parsed, to j->manifests. On failure sets intake_status/_type and
 * j->error and writes nothing. */
int job_intake_data_files(Job *j, uint64_t max_manifest_bytes);

/* batch.c */
/* Starts the next batch of a queue when none is in flight (group commit). */
void batch_queue_kick(TableQueue *q);
/* Answers every job of the batch with the same error and ends it. */
void batch_fail(Batch *b, KeyState state, int status, const char *type, const char *fmt, ...)
        _printf_(5, 6);
