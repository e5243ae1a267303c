/* SPDX-License-Identifier: Apache-2.0 */
/* The data files a request names, checked on storage at intake (probe.c). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "commit/job.h"
#include "iceberg/table.h"
#include "storage/storage.h"

/* The root of the table a data file lies under: its location, write.data.path (or the older
 * write.folder-storage.path, write.object-storage.path), or an entry of the table property
 * icecommit.allowed-prefixes; NULL when none (or out of memory). Owned by the caller. */
char *probe_confinement_root(const TableMetadata *t, const char *path);
/* The refusal of staged manifest k's entry e as outside the table: the same words whether the
 * path is outside or a symlink leads out, so that nothing about the file shows. */
void probe_outside_message(const Job *j, size_t k, size_t e, char *out, size_t size);
/* Thread pool, after parsing: refuses an entry of a staged manifest outside the table and
 * lists the data files to size (commit.verify-data-files) in j->probes, counted in j->intake.
 * On failure sets intake_status/_type and j->error. */
int probe_plan(Job *j);
/* Loop: sizes the listed files beneath their roots, s3.max-concurrent-requests at a time, then
 * calls done(j) once; a missing file, a wrong size or a storage fault sets j->intake_status,
 * j->intake_type and j->error first (the caller answers). */
void probe_start(Job *j, void (*done)(Job *j));
/* Frees the list (and its I/O slots) and gives back what it counted. */
void probe_list_free(Job *j);
/* Whether 'data-files'[i] gets its footer checked (a PARQUET file, commit.check-parquet-footers).
 */
bool probe_wants_footer(const Job *j, size_t i);
/* Checks 'data-files'[i]'s record-count against the footer in a tail read. Returns 0,
 * PARQUET_FOOTER_E_SHORT with the tail length that holds the footer, or <0 having set
 * intake_status/_type and j->error (not Parquet, a footer too long or malformed, a mismatch). */
int probe_footer_check(Job *j, size_t i, const StorageResult *result, uint64_t *ret_need);
