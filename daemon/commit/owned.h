/* SPDX-License-Identifier: Apache-2.0 */
/* What icecommitd writes for a request at intake and commits in its place (owned.c). */
#pragma once

#include <stdbool.h>

#include "commit/job.h"
#include "util/slice.h"

/* "copy-" and 32 hex digits, and the NUL. */
#define OWNED_COPY_ID_MAX 38
/* Where the job's k-th manifest is committed from: icecommitd's copy of a staged one (or the
 * staged one itself when not copied), or the one written for its data-files. */
const char *owned_manifest_location(const Job *j, size_t k);
/* What names a staged manifest's copies (the first 128 bits of the SHA-256 of its canonical
 * location): "copy-" and 32 hex digits. Returns 0 or -ENOMEM. */
int owned_copy_id(const char *staged_location, char ret[OWNED_COPY_ID_MAX]);
/* The copy id a manifest list entry's file name starts with, if it is one of our copies. */
bool owned_copy_id_of(const char *list_location, char ret[OWNED_COPY_ID_MAX]);
/* Thread pool: builds icecommitd's copy of staged manifest k (its bytes as read) into
 * j->owned[k], at most max_bytes, and its new location in the table's metadata directory.
 * The copy's bytes are taken from j->intake before it is made. Returns 0, -EFBIG or -EBUSY
 * when the request's or the daemon's intake bound refuses them (the caller words it:
 * job_intake_refuse()), or another <0 with the reason in j->error (manifest_staged_copy()'s
 * codes). */
int owned_copy_prepare(Job *j, size_t k, Slice staged, uint64_t max_bytes);
/* Loop: writes every owned manifest (create-if-absent), s3.max-concurrent-requests at a time,
 * then calls done(j) once; on a failure it first deletes what was written and sets
 * j->intake_status, j->intake_type and j->error (the caller answers). */
void owned_write_start(Job *j, void (*done)(Job *j));
/* Deletes the owned manifests that may be on storage: the request is known not committed. */
void owned_delete(Job *j, const StorageProps *props);
void owned_free(Job *j);
