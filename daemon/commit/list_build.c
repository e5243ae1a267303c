/* SPDX-License-Identifier: Apache-2.0 */
/* The steps of an attempt that build its manifest list (docs/design.md section 2): the parent's
 * list (the queue's cache or a read), the list assembled on the thread pool (the batch's
 * manifests first, then the parent's; one data file once), the entries with null counts read and
 * counted, row ids assigned, the list serialized (incrementally when the parent is untouched) and
 * written under a name no other attempt uses. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/duplicates.h"
#include "commit/list_build.h"
#include "commit/list_cache.h"
#include "commit/merge.h"
#include "commit/owned.h"
#include "commit/step.h"
#include "iceberg/manifest_list.h"
#include "iceberg/snapshot.h"
#include "util/log.h"
#include "util/time-util.h"

/* The list entry of a staged manifest: counts and partition summaries from its entries; the
 * sequence numbers and snapshot id are filled in per attempt. */
static int list_build_entry_of_staged(const StagedManifest *m, const char *location, int64_t length,
                                      ManifestFile *ret) {
        /* The staged manifest seen as a list entry (nothing of it owned), copied deep. */
        const ManifestFile view = {
                .path = (char *)location,
                .length = length,
                .partition_spec_id = m->partition_spec_id,
                .content = m->content,
                .has_counts = true,
                .added_files_count = m->added_files_count,
                .added_rows_count = m->added_rows_count,
                .has_partitions = m->has_partitions,
                .partitions = m->has_partitions ? m->partitions : NULL,
                .n_partitions = m->has_partitions ? m->n_partitions : 0,
        };

        return manifest_file_copy(&view, ret);
}

/* The counts of a manifest already counted by an earlier attempt of this batch, applied. */
static bool list_build_apply_counted(Batch *b, ManifestFile *m) {
        for (size_t i = 0; i < b->n_counted; i++)
                if (strcmp(b->counted[i].path, m->path) == 0) {
                        manifest_counts_apply(&b->counted[i].counts, m);
                        return true;
                }
        return false;
}

/* Thread pool: the real counts of a manifest-list entry whose counts are null (v1 lists of
 * old writers: "unknown, assume non-zero"). Taking them as 0 would give two manifests the same
 * row-id range (iceberg-go #1627); Java's V3Writer fails on them. Read once per batch. */
static int list_build_count_manifest(Batch *b, ManifestFile *m, const Buf *bytes) {
        const StorageConfig *storage = b->queue->engine->storage_config;
        const ManifestLimits limits = { .max_entries = storage->max_manifest_entries };
        CountedManifest *grown;
        ManifestCounts counts;
        int r;

        if (list_build_apply_counted(b, m))
                return 0;
        r = manifest_count_entries(buf_slice(bytes), &limits, &counts, &b->error);
        if (r < 0)
                return error_prefix(
                        &b->error, r == -ENOMEM || r == -EIO ? r : -EINVAL,
                        "counting the rows of manifest '%s' (its list entry has null counts)",
                        m->path);

        grown = reallocarray(b->counted, b->n_counted + 1, sizeof(*b->counted));
        if (!grown)
                return -ENOMEM;
        b->counted = grown;
        b->counted[b->n_counted].path = strdup(m->path);
        if (!b->counted[b->n_counted].path)
                return -ENOMEM;
        b->counted[b->n_counted++].counts = counts;
        manifest_counts_apply(&counts, m);
        return 0;
}

/* Thread pool, step 1: parse the parent's manifest list (read by the loop), describe the
 * snapshot (iceberg/snapshot_change.h: each request's manifests, then the parent's), and find
 * the entries whose counts must be read from their manifests. */
static int list_build_assemble_list(Batch *b) {
        SnapshotChange *c = &b->change;
        size_t n_added = 0, n_missing = 0;
        int r;

        if (b->parent_list_location && !b->has_parent_files) {
                r = manifest_list_read(buf_slice(&b->parent_bytes), &b->parent_files,
                                       &b->n_parent_files, &b->error);
                if (r < 0)
                        return error_prefix(&b->error, r, "parent manifest list '%s'",
                                            b->parent_list_location);
                /* parent_bytes stays until the list is written: it may be copied. */
        }

        for (size_t i = 0; i < b->n_jobs; i++)
                n_added += b->jobs[i]->n_manifests;
        if (snapshot_change_reserve(c, b->n_jobs, n_added + b->n_parent_files) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < b->n_jobs; i++) {
                const Job *j = b->jobs[i];
                const CommitRequest *req = j->writer->request;

                snapshot_change_begin_part(c, req->recorded_key, req->snapshot_properties,
                                           (const StagedManifest *const *)j->manifests);
                for (size_t k = 0; k < j->n_manifests; k++) {
                        ManifestFile f;

                        r = list_build_entry_of_staged(j->manifests[k],
                                                       owned_manifest_location(j, k),
                                                       j->manifest_lengths[k], &f);
                        if (r < 0)
                                return r;
                        /* Inherited by the entries through the list (spec: sequence numbers and
                         * snapshot id of ADDED entries come from the manifest list). */
                        f.sequence_number = b->sequence_number;
                        f.min_sequence_number = b->sequence_number;
                        f.has_added_snapshot_id = true;
                        f.added_snapshot_id = b->snapshot_id;
                        snapshot_change_add(c, &f);
                }
        }
        /* The parent's entries follow, as they are (the change takes them over). */
        snapshot_change_keep_parent(c, b->parent.exists, b->parent.snapshot_id,
                                    b->table->format_version, b->parent_files, b->n_parent_files);
        free(b->parent_files);
        b->parent_files = NULL;
        b->n_parent_files = 0;

        /* Every list written needs counts; a v3 list also derives row-id ranges from them. */
        for (size_t i = 0; i < c->n_list; i++)
                if (!c->list[i].has_counts && !list_build_apply_counted(b, &c->list[i]))
                        n_missing++;
        if (n_missing == 0)
                return 0;
        b->to_count = calloc(n_missing, sizeof(*b->to_count));
        b->count_bytes = calloc(n_missing, sizeof(*b->count_bytes));
        b->io = calloc(n_missing, sizeof(*b->io));
        if (!b->to_count || !b->count_bytes || !b->io)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_list; i++)
                if (!c->list[i].has_counts)
                        b->to_count[b->n_to_count++] = i;
        return 0;
}

/* Where a job's k-th manifest's entry e stands, for messages. */
static void list_build_describe(const Job *j, size_t k, char *out, size_t size) {
        if (k < j->writer->request->n_manifests)
                (void)snprintf(out, size, "staged-manifests[%zu] '%s'", k,
                               j->writer->request->manifests[k]);
        else
                (void)snprintf(out, size, "'data-files'");
}

static const char *list_build_last_component(const char *location) {
        const char *slash = strrchr(location, '/');

        return slash ? slash + 1 : location;
}

static int list_build_compare_strings(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Thread pool: one data file once (issue: a manifest registered twice, or two requests naming
 * one file, would give the same rows two row-id ranges). Flags the later request of each clash
 * (refusal_type, error); returns 1 when any was flagged, 0, or -ENOMEM. */
static int list_build_find_repeats(Batch *b) {
        _cleanup_(duplicates_deinit) Duplicates manifests = { 0 }, files = { 0 };
        _cleanup_(freep) const char **bases = NULL;
        _cleanup_(freep) char(*ids)[OWNED_COPY_ID_MAX] = NULL;
        const DuplicatesRef *first, *again;
        size_t pos = 0, n_bases = 0, n_ids = 0;
        int r = 0, found = 0;

        /* Staged manifests: the parent's entries (owner 0, so they sort first; in the list
         * after the staged ones) against the batch's. A staged manifest is in the table as
         * itself (committed by reference) or as a copy of ours, whose name starts with the id of
         * its staged location (owned.c): both are looked for. A parent may list 100,000
         * manifests and the batch a few: only the parent's entries whose last path component,
         * or copy id, is one of the batch's are compared, spelled canonically (which never
         * changes a file's last component). */
        bases = calloc(2 * b->change.n_added + 1, sizeof(*bases));
        ids = calloc(b->change.n_added + 1, sizeof(*ids));
        if (!bases || !ids)
                return -ENOMEM;
        for (size_t i = 0; r == 0 && i < b->n_jobs; i++)
                for (size_t k = 0; r == 0 && k < b->jobs[i]->writer->request->n_manifests; k++) {
                        const char *location = b->jobs[i]->writer->request->manifests[k];

                        bases[n_bases++] = list_build_last_component(location);
                        r = duplicates_add(&manifests, location, i + 1, k, 0);
                        if (r == 0)
                                r = owned_copy_id(location, ids[n_ids]);
                        if (r == 0) {
                                bases[n_bases++] = ids[n_ids];
                                r = duplicates_add(&manifests, ids[n_ids++], i + 1, k, 0);
                        }
                }
        qsort(bases, n_bases, sizeof(*bases), list_build_compare_strings);
        for (size_t i = b->change.n_added; r == 0 && i < b->change.n_list; i++) {
                const char *base = list_build_last_component(b->change.list[i].path);
                char id[OWNED_COPY_ID_MAX];

                if (bsearch(&base, bases, n_bases, sizeof(*bases), list_build_compare_strings))
                        r = duplicates_add(&manifests, b->change.list[i].path, 0, i, 0);
                base = id;
                if (r == 0 && owned_copy_id_of(b->change.list[i].path, id) &&
                    bsearch(&base, bases, n_bases, sizeof(*bases), list_build_compare_strings))
                        r = duplicates_add(&manifests, id, 0, i, 0);
        }
        /* Data files: each request's against the others' (within one request: at intake). */
        for (size_t i = 0; r == 0 && i < b->n_jobs; i++)
                for (size_t k = 0; r == 0 && k < b->jobs[i]->n_manifests; k++)
                        for (size_t e = 0; r == 0 && e < b->jobs[i]->manifests[k]->n_files; e++)
                                r = duplicates_add(&files, b->jobs[i]->manifests[k]->files[e].path,
                                                   i, k, e);
        if (r < 0)
                return r;
        duplicates_sort(&manifests);
        duplicates_sort(&files);
        while (duplicates_next(&manifests, &pos, &first, &again)) {
                Job *j;
                char where[512];

                if (first->owner != 0 || again->owner == 0)
                        continue;
                j = b->jobs[again->owner - 1];
                if (j->refusal_type)
                        continue;
                list_build_describe(j, again->manifest, where, sizeof(where));
                j->refusal_type = "manifest-already-committed";
                (void)error_set(&j->error, -EEXIST,
                                "%s is already in the table (added by snapshot %" PRId64
                                "): its files would be "
                                "committed twice",
                                where, b->change.list[first->manifest].added_snapshot_id);
                found = 1;
        }
        pos = 0;
        while (duplicates_next(&files, &pos, &first, &again)) {
                Job *j = b->jobs[again->owner];
                char where[512];

                if (first->owner == again->owner || j->refusal_type ||
                    b->jobs[first->owner]->refusal_type)
                        continue;
                list_build_describe(j, again->manifest, where, sizeof(where));
                j->refusal_type = "duplicate-data-file";
                (void)error_set(
                        &j->error, -EEXIST,
                        "%s entry %zu '%s' is a data file another request of this batch commits "
                        "(as '%s'); retry once that one is answered",
                        where, again->entry,
                        j->manifests[again->manifest]->files[again->entry].path,
                        b->jobs[first->owner]
                                ->manifests[first->manifest]
                                ->files[first->entry]
                                .path);
                found = 1;
        }
        return found;
}

/* Thread pool, step 2: count what was read, assign row ids and serialize the new list: the
 * batch's entries in front of the parent's blocks, copied as they are, when the parent's entries
 * are untouched (iceberg/manifest_list_append.h), instead of decoding and encoding every entry
 * of the table again. */
static int list_build_finish_list(Batch *b) {
        const CommitEngine *e = b->queue->engine;
        SnapshotChange *c = &b->change;
        ManifestListHeader header;
        bool incremental;
        int r;

        for (size_t i = 0; i < b->n_to_count; i++) {
                r = list_build_count_manifest(b, &c->list[b->to_count[i]], &b->count_bytes[i]);
                if (r < 0)
                        return r;
                buf_deinit(&b->count_bytes[i]);
        }
        if (b->table->format_version >= 3) {
                r = snapshot_change_assign_row_ids(c, b->first_row_id, &b->next_row_id, &b->error);
                if (r < 0)
                        return r;
        }
        header = (ManifestListHeader){
                .format_version = b->table->format_version,
                .snapshot_id = b->snapshot_id,
                .has_parent_snapshot_id = b->parent.exists,
                .parent_snapshot_id = b->parent.snapshot_id,
                .sequence_number = b->sequence_number,
                .has_first_row_id = b->table->format_version >= 3,
                .first_row_id = b->first_row_id,
        };
        /* The list must stay readable by the next attempt, whose parent read has this bound. */
        buf_init(&b->list_bytes, (size_t)e->storage_config->max_manifest_bytes);
        r = snapshot_change_write_list(c, &header, buf_slice(&b->parent_bytes), &b->list_bytes,
                                       &incremental, &b->error);
        if (r == 0 && incremental)
                log_debug("manifest list written incrementally queue='%s' new=%zu parent=%zu",
                          b->queue->label, c->n_added, c->n_list - c->n_added);
        else if (r == 0 && b->parent_list_location)
                log_debug("manifest list written whole queue='%s': %s", b->queue->label,
                          c->is_parent_untouched ? b->error.message
                                                 : "this attempt changed parent entries "
                                                   "(counts, row ids or a merge)");
        buf_deinit(&b->parent_bytes);
        return r;
}

static void list_build_assemble_work(uv_work_t *w) {
        Batch *b = w->data;

        b->work_status = list_build_assemble_list(b);
        if (b->work_status == 0)
                b->work_status = list_build_find_repeats(b);
        /* A merge step changes the list first (merge.c). */
        if (b->work_status == 0 && b->n_to_count == 0 && !merge_is_possible(b))
                b->work_status = list_build_finish_list(b);
}

static void list_build_finish_work(uv_work_t *w) {
        Batch *b = w->data;

        b->work_status = list_build_finish_list(b);
}

static void list_build_work_after(uv_work_t *w, int status) {
        Batch *b = w->data;
        CommitEngine *e = b->queue->engine;
        int r = status < 0 ? status : b->work_status;

        e->n_in_flight--;
        if (r == 1)
                step_report(b, STEP_REFUSE_FLAGGED);
        else if (r < 0 && (r == -ENOMEM || status < 0))
                /* The list is unusable: a definite failure, nothing sent. */
                step_fail(b, KEY_FAILED, 503, "storage-failed",
                          "cannot build the manifest list: %s",
                          b->error.message[0] ? b->error.message : strerror(-r));
        else if (r < 0)
                step_fail(b, KEY_FAILED, 422, "invalid-table-state", "%s", b->error.message);
        else
                step_next(b);
        core_maybe_stopped(e);
}

static void list_build_queue(Batch *b, uv_work_cb work) {
        int r = step_queue_work(b, work, list_build_work_after);

        if (r < 0)
                step_fail(b, KEY_FAILED, 503, "internal", "cannot queue work: %s", uv_strerror(r));
}

/* What the attempt's list is built on: the snapshot's numbers (sequence number, first row id,
 * a snapshot id no snapshot has), the parent (the branch's head, or for a new branch main's) and
 * its manifest list, and the new list's name. */
void list_build_plan(Batch *b) {
        const CommitRequest *first;
        json_t *list;
        int r;

        /* Every request of an attempt that landed was found above; should the snapshot id be
         * taken anyway, the requests left need another (the catalog would refuse a second
         * snapshot with that id). */
        if (table_snapshot(b->table, b->snapshot_id)) {
                log_notice("queue='%s' snapshot id %" PRId64 " is taken, choosing another",
                           b->queue->label, b->snapshot_id);
                b->snapshot_id = snapshot_id_generate();
        }
        /* Table-wide, whatever the branch: sequence number and next-row-id (spec: branches).
         * Format 1 has no sequence numbers: its files read as 0. */
        b->sequence_number = b->table->format_version == 1 ? 0 : b->table->last_sequence_number + 1;
        b->first_row_id = b->table->next_row_id;
        b->next_row_id = b->first_row_id;
        b->timestamp_ms = now_realtime_ms();
        /* A new branch starts from main's head, as Iceberg Java's SnapshotUtil.latestSnapshot
         * does; the commit still asserts that the branch does not exist yet. */
        b->parent = b->head;
        first = b->jobs[0]->writer->request; /* the first may have been answered */
        if (!b->head.exists && strcmp(first->branch, "main") != 0) {
                r = table_branch(b->table, "main", &b->parent, &b->error);
                if (r < 0) {
                        step_fail(b, KEY_FAILED, 400, "bad-branch", "%s", b->error.message);
                        return;
                }
        }
        list = b->parent.snapshot ? json_object_get(b->parent.snapshot, "manifest-list") : NULL;
        if (b->parent.exists && !json_is_string(list)) {
                step_fail(b, KEY_FAILED, 502, "catalog-bad-metadata",
                          "parent snapshot %" PRId64 " has no manifest-list",
                          b->parent.snapshot_id);
                return;
        }
        if (list && !(b->parent_list_location = strdup(json_string_value(list)))) {
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        if (asprintf(&b->list_location, "%s/snap-%" PRId64 "-%u-%s.avro", b->table->metadata_dir,
                     b->snapshot_id, b->attempt, b->commit_uuid) < 0) {
                b->list_location = NULL;
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        b->list_cleanup = strdup(b->list_location);
        if (!b->list_cleanup) {
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        step_next(b);
}

static void list_build_on_parent_read(StorageResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;

        e->n_in_flight--;
        if (result->status < 0)
                step_storage_failed(b, result->status, result->error.message);
        else {
                b->parent_bytes = result->data;
                buf_init(&result->data, 0);
                step_next(b);
        }
        core_maybe_stopped(e);
}

void list_build_parent(Batch *b) {
        CommitEngine *e = b->queue->engine;
        StorageContext ctx = core_storage_context(e, b->props, b->started_ns);
        int r;

        if (list_cache_take(b) || !b->parent_list_location) {
                step_next(b);
                return;
        }
        r = storage_read(e->storage, &ctx, b->parent_list_location,
                         e->storage_config->max_manifest_bytes, list_build_on_parent_read, b,
                         &b->error);
        if (r < 0) {
                step_storage_failed(b, r, b->error.message);
                return;
        }
        e->n_in_flight++;
}

void list_build_assemble(Batch *b) {
        list_build_queue(b, list_build_assemble_work);
}

static void list_build_count_pump(Batch *b);

static void list_build_on_count_read(StorageResult *result, void *userdata) {
        IoSlot *slot = userdata;
        Batch *b = slot->batch;
        CommitEngine *e = b->queue->engine;

        e->n_in_flight--;
        b->n_io_done++;
        if (result->status < 0 && b->io_status == 0) {
                b->io_status = result->status;
                (void)error_set(&b->error, result->status,
                                "counting the rows of manifest '%s' (its list entry has "
                                "null counts): %s",
                                b->change.list[b->to_count[slot->index]].path,
                                result->error.message);
        } else if (result->status == 0) {
                b->count_bytes[slot->index] = result->data;
                buf_init(&result->data, 0);
        }
        list_build_count_pump(b);
        core_maybe_stopped(e);
}

/* Reads the manifests to count, a few at a time; then counts them on the thread pool. */
static void list_build_count_pump(Batch *b) {
        CommitEngine *e = b->queue->engine;
        StorageContext ctx = core_storage_context(e, b->props, b->started_ns);
        int r;

        while (b->io_status == 0 && b->n_io_started < b->n_to_count &&
               b->n_io_started - b->n_io_done < e->storage_config->s3.max_concurrent_requests) {
                size_t i = b->n_io_started;

                b->io[i] = (IoSlot){ .batch = b, .index = i };
                r = storage_read(e->storage, &ctx, b->change.list[b->to_count[i]].path,
                                 e->storage_config->max_manifest_bytes, list_build_on_count_read,
                                 &b->io[i], &b->error);
                if (r < 0) {
                        b->io_status = r;
                        break;
                }
                b->n_io_started++;
                e->n_in_flight++;
        }
        if (b->n_io_done < b->n_io_started)
                return;
        if (b->io_status != 0) {
                step_storage_failed(b, b->io_status, b->error.message);
                return;
        }
        list_build_queue(b, list_build_finish_work);
}

void list_build_finish(Batch *b) {
        if (b->list_bytes.data) {
                step_next(b);
                return;
        }
        list_build_count_pump(b);
}

static void list_build_on_list_written(StorageResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;

        e->n_in_flight--;
        if (result->status < 0) {
                char message[sizeof(b->error.message) + 64];

                (void)snprintf(message, sizeof(message), "cannot write the manifest list: %s",
                               result->error.message);
                step_storage_failed(b, result->status == -EEXIST ? -EAGAIN : result->status,
                                    message);
        } else
                step_next(b);
        core_maybe_stopped(e);
}

/* The list is built: write it under a name no other attempt uses, never replacing one. */
void list_build_write(Batch *b) {
        CommitEngine *e = b->queue->engine;
        StorageContext ctx = core_storage_context(e, b->props, b->started_ns);
        int r;

        r = storage_write(e->storage, &ctx, b->list_location, buf_slice(&b->list_bytes),
                          STORAGE_WRITE_IF_ABSENT, list_build_on_list_written, b, &b->error);
        if (r < 0) {
                step_storage_failed(b, r, b->error.message);
                return;
        }
        e->n_in_flight++;
}
