/* SPDX-License-Identifier: Apache-2.0 */
/* Intake of described data files (a request's `data-files`), on the thread pool: check each
 * file against the table loaded for it and its size on storage (read by intake.c before),
 * build their manifest ONCE (owned.c writes it), and read it back through the staged-manifest
 * parser, so that it passes the very checks a writer's manifest passes and every attempt
 * reuses it like one. Refused: nothing written. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/data_files.h"
#include "util/uuid.h"
#include "iceberg/manifest_write.h"
#include "storage/storage.h"

/* Sets the job's intake failure: the message, its HTTP status and error type. */
static int intake_refuse(Job *j, int r, int status) {
        j->intake_status = r == -ENOMEM ? 503 : status;
        j->intake_type = r == -ENOMEM    ? "out-of-memory"
                         : status >= 500 ? "storage-failed"
                                         : "invalid-data-file";
        return r;
}

/* The reason a location cannot be read at all (a scheme no backend takes, a non-canonical key),
 * before the question whether it is inside the table. */
static int job_location_check(Job *j, const char *what, size_t i, const char *location,
                              const char *type) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        Error e = { 0 };
        int r;

        r = storage_location_parse(location, &l, &e);
        if (r < 0) {
                j->intake_type = r == -ENOMEM ? "out-of-memory" : type;
                j->intake_status = r == -ENOMEM ? 503 : 422;
                return error_set(&j->error, r, "%s[%zu]: %s", what, i, e.message);
        }
        return 0;
}

int data_files_check_locations(Job *j) {
        const CommitRequest *r = j->writer->request;
        const TableMetadata *t = j->table;
        int rr;

        for (size_t i = 0; i < r->n_data_files; i++)
                if ((rr = job_location_check(j, "'data-files'", i, r->data_files[i].location,
                                             "invalid-data-file")) < 0)
                        return rr;
        for (size_t i = 0; i < r->n_manifests; i++)
                if ((rr = job_location_check(j, "staged-manifests", i, r->manifests[i],
                                             "invalid-manifest")) < 0)
                        return rr;

        for (size_t i = 0; i < r->n_data_files; i++)
                if (!storage_location_is_within(r->data_files[i].location, t->location))
                        return intake_refuse(
                                j,
                                error_set(
                                        &j->error, -EINVAL,
                                        "'data-files'[%zu] '%s' is outside the table location '%s'",
                                        i, r->data_files[i].location, t->location),
                                422);
        for (size_t i = 0; i < r->n_manifests; i++)
                if (!storage_location_is_within(r->manifests[i], t->location)) {
                        j->intake_type = "invalid-manifest";
                        j->intake_status = 422;
                        return error_set(
                                &j->error, -EINVAL,
                                "staged-manifests[%zu] '%s' is outside the table location '%s'", i,
                                r->manifests[i], t->location);
                }
        return 0;
}

/* Checks file i against the table (location, spec, values) and its size on storage. */
static int check_file(Job *j, DataFile *f, size_t i, const json_t *schema, const json_t *spec) {
        const TableMetadata *t = j->table;
        uint64_t size = j->file_sizes[i];
        int r;

        if (!storage_location_is_within(f->location, t->location))
                return intake_refuse(
                        j,
                        error_set(&j->error, -EINVAL,
                                  "'data-files'[%zu] '%s' is outside the table location '%s'", i,
                                  f->location, t->location),
                        422);
        r = data_file_resolve(f, schema, spec, &j->error);
        if (r < 0)
                return intake_refuse(j,
                                     error_prefix(&j->error, r, "'data-files'[%zu] '%s'", i,
                                                  f->location),
                                     422);
        if (size != (uint64_t)f->file_size_in_bytes)
                return intake_refuse(
                        j,
                        error_set(&j->error, -EINVAL,
                                  "'data-files'[%zu] '%s' has %" PRIu64
                                  " bytes on storage but file-size-in-bytes says %" PRId64,
                                  i, f->location, size, f->file_size_in_bytes),
                        422);
        return 0;
}

int data_files_intake(Job *j, uint64_t max_manifest_bytes, const ManifestLimits *limits) {
        CommitRequest *r = j->writer->request;
        const TableMetadata *t = j->table;
        _cleanup_(buf_deinitp) Buf out;
        _cleanup_(freep) char *location = NULL;
        char uuid[UUID_STRING_MAX];
        const json_t *schema, *spec;
        StagedManifest *m = NULL;
        int32_t spec_id;
        int rr;

        buf_init(&out, max_manifest_bytes); /* before any return: the cleanup frees it */
        schema = table_current_schema(t);
        if (!json_is_object(schema))
                return intake_refuse(j,
                                     error_set(&j->error, -EINVAL,
                                               "the table metadata has no current schema"),
                                     422);
        if (table_default_spec_id(t, &spec_id) < 0)
                return intake_refuse(j,
                                     error_set(&j->error, -EINVAL,
                                               "the table metadata has no default-spec-id"),
                                     422);
        if (r->data_files[0].has_spec_id)
                spec_id = r->data_files[0].spec_id;
        /* One manifest holds the files of one spec (its partition record is the spec's). */
        for (size_t i = 0; i < r->n_data_files; i++) {
                int32_t id = r->data_files[i].has_spec_id ? r->data_files[i].spec_id : spec_id;

                if (id != spec_id)
                        return intake_refuse(
                                j,
                                error_set(&j->error, -EINVAL,
                                          "'data-files'[%zu] uses partition spec %" PRId32
                                          " but 'data-files'[0] spec %" PRId32
                                          ": describe the files of one spec per request",
                                          i, id, spec_id),
                                422);
        }
        spec = table_partition_spec(t, spec_id);
        if (!spec)
                return intake_refuse(j,
                                     error_set(&j->error, -EINVAL,
                                               "'data-files': partition spec %" PRId32
                                               " is not in the table",
                                               spec_id),
                                     422);
        for (size_t i = 0; i < r->n_data_files; i++) {
                rr = check_file(j, &r->data_files[i], i, schema, spec);
                if (rr < 0)
                        return rr;
        }

        rr = manifest_write(&(ManifestWriteSpec){ .format_version = t->format_version >= 3 ? 3 : 2,
                                                  .schema = schema,
                                                  .partition_spec = spec },
                            r->data_files, r->n_data_files, &out, &j->error);
        if (rr < 0)
                return intake_refuse(j, error_prefix(&j->error, rr, "'data-files'"),
                                     rr == -E2BIG ? 413 : 422);
        /* Held until written: it counts as the staged manifests' bytes do until parsed. */
        rr = budget_take(&j->intake, out.cap);
        if (rr < 0)
                return job_intake_refuse(j, rr, "'data-files': the manifest written for them");
        rr = manifest_staged_parse(buf_slice(&out), /* location= */ NULL, limits, &m, &j->error);
        if (rr < 0)
                budget_release(&j->intake, out.cap);
        if (rr == -EFBIG || rr == -EBUSY)
                return job_intake_refuse(j, rr, "'data-files': the manifest written for them");
        if (rr < 0)
                return intake_refuse(j,
                                     error_prefix(&j->error, rr,
                                                  "'data-files': the manifest written for them"),
                                     422);

        /* Where Java puts manifests: the metadata directory, a name no other request uses. */
        uuid_v4_string(uuid);
        if (asprintf(&location, "%s/%s-m0.avro", t->metadata_dir, uuid) < 0) {
                location = NULL;
                manifest_staged_free(m);
                budget_release(&j->intake, out.cap);
                return intake_refuse(j, error_set(&j->error, -ENOMEM, "out of memory"), 503);
        }
        j->manifests[j->n_manifests] = m;
        j->manifest_lengths[j->n_manifests] = (int64_t)out.len;
        j->owned[j->n_manifests] = (OwnedManifest){ .location = TAKE_PTR(location), .bytes = out };
        j->n_manifests++;
        buf_init(&out, 0);
        return 0;
}
