/* SPDX-License-Identifier: Apache-2.0 */
/* Intake's questions to storage about the data files a request names (issue 10, confinement):
 * each file a staged manifest names must lie under one of the table's roots, then exist with
 * the size its entry states (a stat or HEAD each, beneath that root, so that a symlink out of
 * the table answers exactly like a path outside it); a described Parquet file's footer must
 * hold its record-count. Once per request, before it is queued: attempts never ask again. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/probe.h"
#include "parquet/footer.h"
#include "storage/storage.h"

char *probe_confinement_root(const TableMetadata *t, const char *path) {
        static const char *const properties[] = { "write.data.path", "write.folder-storage.path",
                                                  "write.object-storage.path" };
        const char *allowed;

        if (storage_location_is_within(path, t->location))
                return strdup(t->location);
        for (size_t i = 0; i < ELEMENTSOF(properties); i++) {
                const char *p = table_property(t, properties[i]);

                if (p && storage_location_is_within(path, p))
                        return strdup(p);
        }
        allowed = table_property(t, TABLE_PROPERTY_ALLOWED_PREFIXES);
        while (allowed && *allowed) {
                const char *end = strchr(allowed, ',');
                size_t n = end ? (size_t)(end - allowed) : strlen(allowed);
                _cleanup_(freep) char *prefix = strndup(allowed, n);

                if (prefix && prefix[0] && storage_location_is_within(path, prefix))
                        return TAKE_PTR(prefix);
                allowed = end ? end + 1 : NULL;
        }
        return NULL;
}

void probe_outside_message(const Job *j, size_t k, size_t e, char *out, size_t size) {
        const StagedManifest *m = j->manifests[k];

        (void)snprintf(
                out, size,
                "staged-manifests[%zu] '%s' entry %zu '%s' is outside the table location '%s' (and "
                "write.data.path and the table property %s)",
                k, j->writer->request->manifests[k], e, m->files[e].path, j->table->location,
                TABLE_PROPERTY_ALLOWED_PREFIXES);
}

static int probe_refuse(Job *j, int r, int status, const char *type) {
        j->intake_status = r == -ENOMEM ? 503 : status;
        j->intake_type = r == -ENOMEM ? "out-of-memory" : type;
        return r;
}

void probe_list_free(Job *j) {
        for (size_t i = 0; i < j->n_probes; i++)
                free(j->probes[i].root);
        free(j->probes);
        j->probes = NULL;
        j->n_probes = 0;
        free(j->probe_io);
        j->probe_io = NULL;
        budget_release(&j->intake, j->probe_bytes);
        j->probe_bytes = 0;
}

/* Counts n more bytes of the probe list in the request's intake. */
static int probe_hold(Job *j, uint64_t n) {
        int r = budget_take(&j->intake, n);

        if (r < 0)
                return job_intake_refuse(j, r, "the list of data files to size on storage");
        j->probe_bytes += n;
        return 0;
}

int probe_plan(Job *j) {
        const CommitConfig *c = j->engine->config;
        size_t n_staged = j->writer->request->n_manifests, n = 0;
        char message[2048];
        int r;

        /* Staged manifests hold ADDED entries only (manifest_staged_parse refuses EXISTING
         * and DELETED ones): every entry is a file this request brings. Their number was bounded
         * while they were decoded (commit.max-verified-files-per-request). */
        for (size_t k = 0; k < n_staged; k++)
                n += j->manifests[k]->n_files;
        if (c->verify_data_files) {
                /* The list and, while sizing, one I/O slot per file (probe_start). */
                r = probe_hold(j, (n + 1) * (sizeof(*j->probes) + sizeof(*j->probe_io)));
                if (r < 0)
                        return r;
        }
        j->probes = calloc(n + 1, sizeof(*j->probes));
        if (!j->probes)
                return probe_refuse(j, error_set(&j->error, -ENOMEM, "out of memory"), 503, NULL);
        for (size_t k = 0; k < n_staged; k++) {
                const StagedManifest *m = j->manifests[k];

                for (size_t e = 0; e < m->n_files; e++) {
                        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
                        Error why = { 0 };
                        char *root;

                        /* A path no backend can take (a control character, an unsupported
                         * scheme) is refused for what it is, not as a place outside. */
                        r = storage_location_parse(m->files[e].path, &l, &why);
                        if (r < 0)
                                return probe_refuse(
                                        j,
                                        error_set(&j->error, r,
                                                  "staged-manifests[%zu] '%s' entry %zu: %s", k,
                                                  j->writer->request->manifests[k], e, why.message),
                                        422, "invalid-manifest");
                        root = probe_confinement_root(j->table, m->files[e].path);
                        if (!root) {
                                /* Said without asking storage anything about the file. */
                                probe_outside_message(j, k, e, message, sizeof(message));
                                return probe_refuse(j, error_set(&j->error, -EXDEV, "%s", message),
                                                    422, "invalid-manifest");
                        }
                        if (!c->verify_data_files) {
                                free(root);
                                continue;
                        }
                        r = probe_hold(j, strlen(root) + 1);
                        if (r < 0) {
                                free(root);
                                return r;
                        }
                        j->probes[j->n_probes++] = (Probe){
                                .manifest = k,
                                .entry = e,
                                .root = root,
                                .size = m->files[e].file_size_in_bytes,
                        };
                }
        }
        return 0;
}

static void probe_pump(Job *j);

/* Records the first failure of a probe as the job's answer. */
static void probe_fail(Job *j, const Probe *p, int status, const char *why) {
        const StagedManifest *m = j->manifests[p->manifest];
        const char *path = m->files[p->entry].path,
                   *location = j->writer->request->manifests[p->manifest];
        char message[2048];
        const char *type;
        int http;

        if (j->probe_status != 0)
                return;
        j->probe_status = status;
        switch (status) {
        case -EXDEV:
                /* A symlink out of the table: the same words as a path outside it, no more. */
                probe_outside_message(j, p->manifest, p->entry, message, sizeof(message));
                (void)error_set(&j->error, status, "%s", message);
                http = 422;
                type = "invalid-manifest";
                break;
        case -ENOENT:
                (void)error_set(
                        &j->error, status,
                        "staged-manifests[%zu] '%s' entry %zu: data file '%s' does not exist",
                        p->manifest, location, p->entry, path);
                http = 422;
                type = "invalid-manifest";
                break;
        default:
                http = core_storage_http_status(status, &type, "invalid-manifest");
                (void)error_set(&j->error, status,
                                "staged-manifests[%zu] '%s' entry %zu: data file '%s': %s",
                                p->manifest, location, p->entry, path, why);
                break;
        }
        j->intake_status = http;
        j->intake_type = type;
}

static void probe_on_size(StorageResult *result, void *userdata) {
        IoSlot *slot = userdata;
        Job *j = slot->job;
        CommitEngine *e = j->engine;
        const Probe *p = &j->probes[slot->index];

        e->n_in_flight--;
        j->n_probes_done++;
        if (result->status < 0)
                probe_fail(j, p, result->status, result->error.message);
        else if (result->size != (uint64_t)p->size && j->probe_status == 0) {
                const StagedManifest *m = j->manifests[p->manifest];

                j->probe_status = -EBADMSG;
                j->intake_status = 422;
                j->intake_type = "invalid-manifest";
                (void)error_set(&j->error, -EBADMSG,
                                "staged-manifests[%zu] '%s' entry %zu: data file '%s' has %" PRIu64
                                " bytes, the manifest says %" PRId64,
                                p->manifest, j->writer->request->manifests[p->manifest], p->entry,
                                m->files[p->entry].path, result->size, p->size);
        }
        probe_pump(j);
        core_maybe_stopped(e);
}

/* Keeps s3.max-concurrent-requests sizes in flight; then goes on, or answers the failure. */
static void probe_pump(Job *j) {
        CommitEngine *e = j->engine;
        const uint32_t max = e->storage_config->s3.max_concurrent_requests;

        while (j->probe_status == 0 && !e->is_stopping && j->n_probes_started < j->n_probes &&
               j->n_probes_started - j->n_probes_done < max) {
                size_t i = j->n_probes_started;
                const Probe *p = &j->probes[i];
                StorageContext ctx = core_storage_context(e, j->props, j->writer->accepted_ns);
                Error error = { 0 };
                int r;

                ctx.root = p->root;
                j->probe_io[i] = (IoSlot){ .job = j, .index = i };
                r = storage_size(e->storage, &ctx, j->manifests[p->manifest]->files[p->entry].path,
                                 probe_on_size, &j->probe_io[i], &error);
                if (r < 0) {
                        probe_fail(j, p, r, error.message);
                        break;
                }
                j->n_probes_started++;
                e->n_in_flight++;
        }
        if (j->n_probes_done < j->n_probes_started)
                return; /* the last answer comes back here */
        if (j->probe_status == 0 && e->is_stopping) {
                j->intake_status = 503;
                j->intake_type = "shutting-down";
                (void)error_set(&j->error, -ECANCELED,
                                "icecommitd is stopping; retry with the same key");
        }
        probe_list_free(j);
        j->probes_done(j);
}

void probe_start(Job *j, void (*done)(Job *j)) {
        j->probes_done = done;
        if (j->n_probes == 0) {
                probe_list_free(j);
                done(j);
                return;
        }
        j->probe_io = calloc(j->n_probes, sizeof(*j->probe_io));
        if (!j->probe_io) {
                j->intake_status = 503;
                j->intake_type = "out-of-memory";
                (void)error_set(&j->error, -ENOMEM, "out of memory");
                probe_list_free(j);
                done(j);
                return;
        }
        probe_pump(j);
}

bool probe_wants_footer(const Job *j, size_t i) {
        return j->engine->config->check_parquet_footers &&
               j->writer->request->data_files[i].format == DATA_FILE_FORMAT_PARQUET;
}

int probe_footer_check(Job *j, size_t i, const StorageResult *result, uint64_t *ret_need) {
        const DataFile *f = &j->writer->request->data_files[i];
        const CommitConfig *c = j->engine->config;
        ParquetFooter footer;
        Error error = { 0 };
        int r;

        /* Parsed on the loop: linear in the footer, which commit.max-parquet-footer-bytes bounds.
         */
        r = parquet_footer_parse(buf_slice(&result->data), result->size,
                                 c->max_parquet_footer_bytes, &footer, ret_need, &error);
        if (r == PARQUET_FOOTER_E_SHORT)
                return r;
        if (r < 0)
                return probe_refuse(j,
                                    error_set(&j->error, -EBADMSG,
                                              "'data-files'[%zu] '%s' is described as PARQUET: %s",
                                              i, f->location, error.message),
                                    422, "invalid-data-file");
        if (footer.num_rows != f->record_count)
                return probe_refuse(j,
                                    error_set(&j->error, -EBADMSG,
                                              "'data-files'[%zu] '%s' has record-count %" PRId64
                                              " but its Parquet footer says %" PRId64 " rows",
                                              i, f->location, f->record_count, footer.num_rows),
                                    422, "invalid-data-file");
        return 0;
}
