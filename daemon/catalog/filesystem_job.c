/* SPDX-License-Identifier: Apache-2.0 */
/* One call of the filesystem catalog (filesystem_job-internal.h): its state between the loop
 * and the thread pool, how a worker records its outcome and what the loop caches afterwards.
 * No I/O; logs nothing. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/filesystem_job-internal.h"

FsJob *filesystem_job_free(FsJob *j) {
        if (!j)
                return NULL;
        free(j->dir);
        free(j->name);
        json_decref(j->request);
        free(j->cached_location);
        json_decref(j->cached_metadata);
        free(j->put_location);
        json_decref(j->put_metadata);
        metadata_text_memo_free(j->memo);
        json_decref(j->result.body);
        free(j);
        return NULL;
}

void filesystem_job_fail(FsJob *j, int status, const char *error_type, const char *fmt, ...) {
        va_list ap;

        j->result.status = status;
        snprintf(j->result.error_type, sizeof(j->result.error_type), "%s", error_type);
        va_start(ap, fmt);
        vsnprintf(j->result.message, sizeof(j->result.message), fmt, ap);
        va_end(ap);
}

void filesystem_job_succeed(FsJob *j, const char *metadata_location, json_t *metadata_take) {
        /* The body shares the metadata with the cache: nobody changes either (catalog.h). */
        j->result.status = 0;
        j->result.body = json_pack("{s:s, s:o}", "metadata-location", metadata_location, "metadata",
                                   metadata_take);
        if (!j->result.body)
                filesystem_job_fail(j, -ENOMEM, "", "out of memory");
}

/* Records what the loop caches once the job is answered. */
int filesystem_job_cache_later(FsJob *j, int64_t version, const char *location, json_t *metadata,
                               const TableCacheStamp *stamp) {
        char *copy = strdup(location);

        if (!copy)
                return -ENOMEM;
        free(j->put_location);
        j->put_location = copy;
        json_decref(j->put_metadata);
        j->put_metadata = json_incref(metadata);
        j->put_version = version;
        j->put_stamp = *stamp;
        return 0;
}
