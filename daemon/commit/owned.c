/* SPDX-License-Identifier: Apache-2.0 */
/* The manifests icecommitd writes for one request, once, at intake (docs/design.md section 2.1,
 * step 11): its copy of each staged manifest intake checked, and the manifest of its
 * data-files. The table references these, never a writer's file, so nothing a writer does
 * after the check changes what readers plan. Names no one else uses, create-if-absent writes,
 * and deletion once the request is known not to be committed. */
#define LOG_MODULE "commit"
#include <assert.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/owned.h"
#include "util/uuid.h"
#include "iceberg/manifest.h"
#include "storage/storage.h"
#include "util/log.h"

/* What a copy adds to the staged bytes besides the location: the header key and the varints of
 * its length, the location's and the map block's count (at most 10 bytes each). */
#define OWNED_COPY_META_SLACK (sizeof(MANIFEST_META_STAGED_LOCATION) + 3 * 10)

/* "copy-" and 32 hex digits: the first 128 bits of the SHA-256 of a staged manifest's
 * canonical location. */
static_assert(OWNED_COPY_ID_MAX == 5 + 32 + 1, "copy- + 32 hex digits + NUL");

const char *owned_manifest_location(const Job *j, size_t k) {
        const CommitRequest *r = j->writer->request;

        if (j->owned && j->owned[k].location)
                return j->owned[k].location;
        return r->manifests[k]; /* committed by reference: commit.copy-staged-manifests off */
}

int owned_copy_id(const char *staged_location, char ret[OWNED_COPY_ID_MAX]) {
        static const char hex[] = "0123456789abcdef";
        _cleanup_(freep) char *canonical = storage_location_canonical(staged_location);
        uint8_t digest[EVP_MAX_MD_SIZE];
        unsigned n = 0;

        if (!canonical)
                return -ENOMEM;
        if (EVP_Digest(canonical, strlen(canonical), digest, &n, EVP_sha256(),
                       /* impl= */ NULL) != 1 ||
            n < 16)
                return -ENOMEM; /* OpenSSL fails only when it cannot allocate */
        memcpy(ret, "copy-", 5);
        for (size_t i = 0; i < 16; i++) {
                ret[5 + 2 * i] = hex[digest[i] >> 4];
                ret[5 + 2 * i + 1] = hex[digest[i] & 0xf];
        }
        ret[OWNED_COPY_ID_MAX - 1] = '\0';
        return 0;
}

bool owned_copy_id_of(const char *list_location, char ret[OWNED_COPY_ID_MAX]) {
        const char *slash = strrchr(list_location, '/'), *base = slash ? slash + 1 : list_location;

        if (strncmp(base, "copy-", 5) != 0 || strlen(base) < OWNED_COPY_ID_MAX ||
            base[OWNED_COPY_ID_MAX - 1] != '-')
                return false;
        for (size_t i = 5; i < OWNED_COPY_ID_MAX - 1; i++)
                if (!strchr("0123456789abcdef", base[i]))
                        return false;
        memcpy(ret, base, OWNED_COPY_ID_MAX - 1);
        ret[OWNED_COPY_ID_MAX - 1] = '\0';
        return true;
}

int owned_copy_prepare(Job *j, size_t k, Slice staged, uint64_t max_bytes) {
        const CommitRequest *r = j->writer->request;
        OwnedManifest *o = &j->owned[k];
        char id[OWNED_COPY_ID_MAX], uuid[UUID_STRING_MAX];
        /* The copy is the staged bytes plus one header key naming them: taken from the budget
         * before it is made, so that the bound holds while it is built, then settled. */
        uint64_t want = staged.len + strlen(r->manifests[k]) + OWNED_COPY_META_SLACK;
        int rr;

        rr = budget_take(&j->intake, want);
        if (rr < 0)
                return rr; /* -EFBIG, -EBUSY: job_intake_refuse() words it */
        buf_init(&o->bytes, max_bytes);
        rr = manifest_staged_copy(staged, r->manifests[k], &o->bytes, &j->error);
        if (rr < 0) {
                budget_release(&j->intake, want);
                buf_deinit(&o->bytes);
                return rr;
        }
        /* Held until written, as the bytes read were until parsed (docs/design.md 2.1). */
        buf_trim(&o->bytes);
        if (o->bytes.cap <= want)
                budget_release(&j->intake, want - o->bytes.cap);
        else {
                rr = budget_take(&j->intake, o->bytes.cap - want);
                if (rr < 0) {
                        budget_release(&j->intake, want);
                        buf_deinit(&o->bytes);
                        return rr;
                }
        }
        /* The name tells which staged manifest it copies (the list's check that a staged
         * manifest is committed once reads it back: list_build.c), and a UUID makes it one no other
         * request or daemon uses. */
        rr = owned_copy_id(r->manifests[k], id);
        if (rr < 0)
                return error_set(&j->error, rr, "out of memory");
        uuid_v4_string(uuid);
        if (asprintf(&o->location, "%s/%s-%s.avro", j->table->metadata_dir, id, uuid) < 0) {
                o->location = NULL;
                return error_set(&j->error, -ENOMEM, "out of memory");
        }
        return 0;
}

void owned_free(Job *j) {
        /* A job that failed before it took its request has nothing in its slots. */
        for (size_t k = 0; j->owned && j->writer && k <= j->writer->request->n_manifests; k++) {
                free(j->owned[k].location);
                buf_deinit(&j->owned[k].bytes);
        }
        free(j->owned);
        j->owned = NULL;
        free(j->owned_io);
        j->owned_io = NULL;
}

void owned_delete(Job *j, const StorageProps *props) {
        for (size_t k = 0; j->owned && k <= j->writer->request->n_manifests; k++) {
                OwnedManifest *o = &j->owned[k];
                char *location;

                if (!o->is_on_storage)
                        continue;
                location = strdup(o->location);
                if (!location) {
                        log_warning("cannot delete '%s' (out of memory): no snapshot references "
                                    "it, it may be deleted by hand",
                                    o->location);
                        continue;
                }
                o->is_on_storage = false;
                core_delete_file(j->engine, props, location);
        }
}

static void owned_write_pump(Job *j);

static void owned_on_written(StorageResult *result, void *userdata) {
        IoSlot *slot = userdata;
        Job *j = slot->job;
        CommitEngine *e = j->engine;
        OwnedManifest *o = &j->owned[slot->index];

        e->n_in_flight--;
        j->n_owned_done++;
        budget_release(&j->intake, o->bytes.cap);
        buf_deinit(&o->bytes);
        /* Our name is new: an object already there is someone else's, never ours to delete.
         * Any other failure may have left half of ours, which goes with the rest. */
        if (result->status == -EEXIST)
                o->is_on_storage = false;
        if (result->status < 0 && j->owned_status == 0) {
                j->owned_status = result->status;
                (void)error_set(&j->error, result->status, "cannot write '%s': %s", o->location,
                                result->error.message);
        }
        owned_write_pump(j);
        core_maybe_stopped(e);
}

/* Keeps up to s3.max-concurrent-requests writes in flight; when all are answered, goes on
 * (owned_done) or answers the job with the first failure, having deleted what was written. */
static void owned_write_pump(Job *j) {
        CommitEngine *e = j->engine;
        const size_t n = j->writer->request->n_manifests + 1;
        const uint32_t max = e->storage_config->s3.max_concurrent_requests;
        StorageContext ctx = core_storage_context(e, j->props, j->writer->accepted_ns);
        const char *type;
        int status;

        while (j->owned_status == 0 && !e->is_stopping && j->n_owned_next < n &&
               j->n_owned_started - j->n_owned_done < max) {
                size_t k = j->n_owned_next++;
                OwnedManifest *o = &j->owned[k];
                Error error = { 0 };
                int rr;

                if (!o->location)
                        continue;
                j->owned_io[k] = (IoSlot){ .job = j, .index = k };
                o->is_on_storage = true; /* from here on it may be there */
                rr = storage_write(e->storage, &ctx, o->location, buf_slice(&o->bytes),
                                   STORAGE_WRITE_IF_ABSENT, owned_on_written, &j->owned_io[k],
                                   &error);
                if (rr < 0) {
                        o->is_on_storage = false;
                        j->owned_status = rr;
                        (void)error_set(&j->error, rr, "cannot write '%s': %s", o->location,
                                        error.message);
                        break;
                }
                e->n_in_flight++;
                j->n_owned_started++;
        }
        if (j->n_owned_done < j->n_owned_started)
                return; /* the last answer comes back here */
        if (j->owned_status == 0 && e->is_stopping)
                j->owned_status = error_set(&j->error, -ECANCELED, "icecommitd is stopping");
        if (j->owned_status == 0) {
                j->owned_done(j);
                return;
        }
        owned_delete(j, j->props);
        if (j->owned_status == -ECANCELED) {
                j->intake_status = 503;
                j->intake_type = "shutting-down";
                (void)error_set(&j->error, -ECANCELED,
                                "icecommitd is stopping; retry with the same key");
                j->owned_done(j);
                return;
        }
        /* Nothing the writer sent is wrong: a store refusing our own new file is the store's
         * (or our credentials') fault, worth a retry unless it is lasting. */
        status = core_storage_http_status(j->owned_status, &type, "storage-error");
        if (status == 422) {
                status = 503;
                type = "storage-unavailable";
        }
        j->intake_status = status;
        j->intake_type = type;
        (void)error_prefix(&j->error, j->owned_status, "cannot write the request's manifests");
        j->owned_done(j);
}

void owned_write_start(Job *j, void (*done)(Job *j)) {
        const size_t n = j->writer->request->n_manifests + 1;

        j->owned_done = done;
        j->owned_io = calloc(n, sizeof(*j->owned_io));
        if (!j->owned_io) {
                j->intake_status = 503;
                j->intake_type = "out-of-memory";
                (void)error_set(&j->error, -ENOMEM, "out of memory");
                done(j);
                return;
        }
        owned_write_pump(j);
}
