/* SPDX-License-Identifier: Apache-2.0 */
/* Private to daemon/catalog/: one call of the filesystem catalog (filesystem_job.c), which
 * filesystem.c creates, queues and answers on the loop, and whose I/O filesystem_ops.c and
 * filesystem_version.c do on the thread pool. Nothing outside catalog/ includes this. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "catalog/table_cache.h"
#include "iceberg/metadata_text.h"
#include "util/cleanup.h"

typedef enum FsOp {
        FS_OP_START,
        FS_OP_LOAD,
        FS_OP_COMMIT,
        FS_OP_CREATE_NAMESPACE,
        FS_OP_CREATE_TABLE,
        FS_OP_CLOSE, /* no I/O: answers close() from the loop */
} FsOp;

/* Owned by the catalog from queueing until its after-work callback frees it. The worker only
 * writes the job and reads nothing of the catalog but the immutable fields copied here. */
typedef struct FsJob {
        uv_work_t work;
        struct FsCatalog *catalog; /* for the loop side only */
        const char *warehouse;     /* the catalog's (borrowed), immutable while it lives */
        uint64_t max_metadata_bytes;
        FsOp op;
        char *dir;       /* the namespace (create namespace) or table directory */
        char *name;      /* "ns.t" for messages */
        json_t *request; /* owned copy: commit or create request, namespace properties */
        int64_t now_ms;
        /* Load and commit: the table's cached latest version when the job was queued (NULL
         * metadata: none), which the worker checks against the files before it builds on it. */
        int64_t cached_version;
        char *cached_location;
        json_t *cached_metadata;
        TableCacheStamp cached_stamp;
        /* Set by the worker for the loop: what to cache next (NULL metadata: nothing), or
         * whether to forget the table. */
        bool cache_drop;
        int64_t put_version;
        char *put_location;
        json_t *put_metadata;
        TableCacheStamp put_stamp;
        MetadataTextMemo *memo;   /* commit: lent by the cache (or new), given back on the loop */
        CatalogResult result;     /* body owned until the callback returned */
        char warning[512];        /* a non-fatal failure (version hint), logged on the loop */
        unsigned n_delete_failed; /* previous metadata files that could not be deleted */
        char delete_warning[512]; /* ... the first failure */
        CatalogCallback cb;
        void *userdata;
} FsJob;

/* Frees the job and all it holds (or NULL). Returns NULL. */
FsJob *filesystem_job_free(FsJob *j);
DEFINE_CLEANUP_FUNC(FsJob, filesystem_job_free);

/* Sets the job's outcome to a failure: status, the Java exception name (may be "") and the
 * message. */
void filesystem_job_fail(FsJob *j, int status, const char *error_type, const char *fmt, ...)
        _printf_(4, 5);

/* Sets the job's outcome to success with the body {"metadata-location", "metadata"}; takes
 * metadata_take. Out of memory fails the job. */
void filesystem_job_succeed(FsJob *j, const char *metadata_location, json_t *metadata_take);

/* Records what the loop caches once the job is answered (a new reference to metadata).
 * Returns 0 or -ENOMEM. */
int filesystem_job_cache_later(FsJob *j, int64_t version, const char *location, json_t *metadata,
                               const TableCacheStamp *stamp);
