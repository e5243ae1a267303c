/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: the bucket catalog and its jobs (bucket_job.c), which bucket.c
 * starts, bucket_version.c (finding and reading the latest version) and bucket_commit.c
 * (publishing the next) move on, and bucket_job.c answers. Loop thread, except for the
 * thread-pool steps noted on BucketJob. Nothing outside catalog/ includes this. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "catalog/table_cache.h"
#include "iceberg/metadata_text.h"
#include "storage/storage.h"
#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"

typedef struct BucketCatalog BucketCatalog;

/* Version files listed at most when the hint is unusable (a table with more is read from the
 * highest of the first ones, then stepped forward by HEAD). */
#define BUCKET_MAX_LISTED_VERSIONS 100000

/* Owned by the daemon through Catalog: bucket.c creates, closes and frees it. Here, beside its
 * jobs, because every job reaches it. */
struct BucketCatalog {
        uv_loop_t *loop;
        Storage *storage;
        char *warehouse; /* s3://bucket/path, no trailing '/' */
        uint64_t max_metadata_bytes;
        TableCache *cache; /* loop thread only: jobs get references to their table's entry */
        bool is_ready;
        bool is_closing;
        unsigned n_jobs;
        uv_work_t close_work; /* answers close() from the loop */
        void (*close_done)(void *userdata);
        void *close_userdata;
};

typedef enum BucketOp {
        BUCKET_OP_START,
        BUCKET_OP_LOAD,
        BUCKET_OP_COMMIT,
        BUCKET_OP_CREATE_NAMESPACE,
        BUCKET_OP_CREATE_TABLE,
} BucketOp;

/* Owned by the catalog from its start until it answers. While a thread-pool step runs, the
 * loop does not touch the job; the step reads the job's inputs and the immutable metadata it
 * shares with the cache, and writes only the job. */
typedef struct BucketJob {
        BucketCatalog *catalog;
        BucketOp op;
        char *dir;  /* the table's (or namespace's) location */
        char *name; /* "ns.t" for messages */
        json_t *request;
        int64_t now_ms;
        /* Load and commit: the table's cached version when the job started (NULL metadata:
         * none). from_cache once a HEAD found its object the size it had: the commit then
         * builds on it, and only the conditional create of v<N+1> proves it was the latest. */
        int64_t cached_version;
        char *cached_location;
        json_t *cached_metadata;
        uint64_t cached_size;
        bool from_cache;
        int64_t version;         /* the latest found (or cached) */
        char *metadata_location; /* ... its file */
        json_t *metadata;        /* ... parsed; shared with the cache, never changed */
        Buf read;                /* ... its bytes, until parsed */
        json_t *updated;         /* a version being published */
        Buf text;                /* ... its text */
        bool is_noop;            /* a commit without updates: nothing to write */
        MetadataTextMemo *memo;  /* commit: lent by the cache (or new), given back at the answer */
        json_t *removed;         /* metadata files that dropped out of the log, to delete */
        size_t n_removed_done;
        unsigned n_delete_failed;
        char delete_warning[sizeof(((Error *)NULL)->message)]; /* ... the first failure */
        char *publish_location;
        int64_t publish_version;
        char hint[32]; /* the version hint being written */
        size_t level;  /* create namespace: the marker being written */
        size_t n_levels;
        char **markers;
        int work_status; /* the pool step's outcome: 0 or what it failed the job with */
        uv_work_t work;
        CatalogResult result;
        CatalogCallback cb;
        void *userdata;
        /* The latest version is in metadata (bucket_version.c): set by bucket.c. */
        void (*on_found)(struct BucketJob *j);
        bool in_call; /* inside the call that started it: answer later */
        uv_work_t defer;
} BucketJob;

/* Frees the job and all it holds (or NULL). Returns NULL. */
BucketJob *bucket_job_free(BucketJob *j);
DEFINE_CLEANUP_FUNC(BucketJob, bucket_job_free);

/* Completes the catalog's close once it is closing and no job is left. */
void bucket_job_maybe_closed(BucketCatalog *c);

/* Answers the job with j->result (through the loop when still inside the starting call), gives
 * its memo back to the cache, frees it and counts it done. */
void bucket_job_answer(BucketJob *j);

/* Records a failure without answering (also from a pool step). */
void bucket_job_set_failure(BucketJob *j, int status, const char *type, const char *fmt, ...)
        _printf_(4, 5);
/* Records a failure and answers. */
void bucket_job_fail(BucketJob *j, int status, const char *type, const char *fmt, ...)
        _printf_(4, 5);
/* Answers a storage failure while reading: the table's files are not there, or the store is
 * not. */
void bucket_job_fail_read(BucketJob *j, const StorageResult *r);
/* Answers a storage call that could not start (r from it, reason in e); returns r. */
int bucket_job_submit_error(BucketJob *j, int r, const Error *e);
/* Answers success with {"metadata-location", "metadata"}; takes metadata_take. */
void bucket_job_succeed(BucketJob *j, const char *metadata_location, json_t *metadata_take);

/* Queues the job's thread-pool step; fails the job when it cannot. The step reports in
 * j->work_status. */
void bucket_job_queue_work(BucketJob *j, uv_work_cb work, uv_after_work_cb after_work);

/* Forgets the table's cached version when it is `version` or older. */
void bucket_job_cache_drop(BucketCatalog *c, const char *table, int64_t version);
/* Caches `metadata` (a new reference) as the job's table's `version`, at `location`, whose
 * object is `size` bytes; out of memory leaves it uncached. */
void bucket_job_cache_put(BucketJob *j, int64_t version, const char *location, json_t *metadata,
                          uint64_t size);
