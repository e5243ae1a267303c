/* SPDX-License-Identifier: Apache-2.0 */
/* The merge step of an attempt (iceberg/manifest_merge.c does the pure part): reuse what an
 * earlier attempt of the batch merged, plan the rest, read the bins, rewrite them on the
 * thread pool, write each under a new name, then put them in the list in place of their
 * inputs. Owns the batch's merged manifests and deletes those that cannot have committed. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commit/merge.h"
#include "commit/step.h"
#include "iceberg/data_file.h"
#include "util/log.h"

static void merge_continue(Batch *b);

bool merge_is_possible(const Batch *b) {
        /* Format 1 entries carry no sequence numbers to write out; one manifest is merged. */
        return b->table->format_version >= 2 && b->change.n_list - b->change.n_added >= 2 &&
               b->queue->engine->config->max_merge_input_bytes > 0;
}

static MergedManifest *merged_deinit(MergedManifest *m) {
        manifest_file_deinit(&m->file);
        for (size_t i = 0; i < m->n_inputs; i++)
                free(m->inputs[i]);
        free(m->inputs);
        *m = (MergedManifest){ 0 };
        return NULL;
}

void merge_attempt_deinit(Batch *b) {
        MergeAttempt *a = &b->merge;

        for (size_t i = 0; i < a->n_items; i++)
                buf_deinit(&a->items[i].data);
        for (size_t k = 0; a->bytes && k < a->plan.n_bins; k++)
                buf_deinit(&a->bytes[k]);
        for (size_t k = 0; a->files && k < a->plan.n_bins; k++)
                manifest_file_deinit(&a->files[k]);
        manifest_merge_plan_deinit(&a->plan);
        free(a->owner);
        free(a->candidates);
        free(a->candidate_files);
        free(a->items);
        free(a->bytes);
        free(a->files);
        free(a->stats);
        free(a->status);
        *a = (MergeAttempt){ 0 };
        for (size_t i = 0; i < b->n_merged; i++)
                b->merged[i].is_used = false;
}

void merge_batch_deinit(Batch *b) {
        CommitEngine *e = b->queue->engine;

        merge_attempt_deinit(b);
        for (size_t i = 0; i < b->n_merged; i++) {
                MergedManifest *m = &b->merged[i];

                /* Known not committed: no attempt that may have landed named it. */
                if (!m->may_be_committed)
                        core_delete_file(e, b->merge_props ? b->merge_props : b->props,
                                         TAKE_PTR(m->file.path));
                merged_deinit(m);
        }
        free(b->merged);
        b->merged = NULL;
        b->n_merged = 0;
        b->merge_props = storage_props_free(b->merge_props);
}

void merge_attempt_outcome(Batch *b, bool is_committed) {
        size_t n_replaced = 0, n_used = 0;

        for (size_t i = 0; i < b->n_merged; i++)
                if (b->merged[i].is_used) {
                        b->merged[i].may_be_committed = true;
                        n_replaced += b->merged[i].n_inputs;
                        n_used++;
                }
        if (!is_committed || n_used == 0)
                return;
        metrics_add(b->queue->engine->metrics, METRIC_MANIFESTS_MERGED, NULL, (double)n_replaced);
        log_info("merged manifests queue='%s' snapshot=%" PRId64 " replaced=%zu created=%zu",
                 b->queue->label, b->snapshot_id, n_replaced, n_used);
}

/* The parent list index of `path` not claimed yet, or SIZE_MAX. */
static size_t merge_find_parent(const Batch *b, const char *path) {
        const SnapshotChange *c = &b->change;

        for (size_t i = c->n_added; i < c->n_list; i++)
                if (!b->merge.owner[i - c->n_added] && strcmp(c->list[i].path, path) == 0)
                        return i;
        return SIZE_MAX;
}

/* A merged manifest of an earlier attempt stands in for its inputs again when every one of
 * them is still in the parent's list with known counts (Java reuses a bin's merged manifest
 * the same way). */
static void merge_reuse(Batch *b) {
        MergeAttempt *a = &b->merge;

        for (size_t m = 0; m < b->n_merged; m++) {
                MergedManifest *mm = &b->merged[m];
                size_t k;

                for (k = 0; k < mm->n_inputs; k++) {
                        size_t i = merge_find_parent(b, mm->inputs[k]);

                        if (i == SIZE_MAX || !b->change.list[i].has_counts)
                                break;
                        a->owner[i - b->change.n_added] = m + 1;
                }
                if (k == mm->n_inputs) {
                        mm->is_used = true;
                        continue;
                }
                /* Not all there: release what this one claimed. */
                for (size_t i = 0; i < b->change.n_list - b->change.n_added; i++)
                        if (a->owner[i] == m + 1)
                                a->owner[i] = 0;
        }
}

/* Rewrites the attempt's snapshot change: every claimed parent entry is replaced, the first of
 * each merged manifest's inputs by its entry, the others dropped (snapshot_change_replace).
 * Index lists into the list that outlive this (to_count) follow. */
static int merge_apply(Batch *b) {
        MergeAttempt *a = &b->merge;
        ManifestFile *copies = calloc(b->n_merged + 1, sizeof(*copies));
        SnapshotChangeSource *sources = calloc(b->n_merged + 1, sizeof(*sources));
        int r = copies && sources ? 0 : -ENOMEM;

        for (size_t m = 0; r == 0 && m < b->n_merged; m++) {
                if (!b->merged[m].is_used)
                        continue;
                r = manifest_file_copy(&b->merged[m].file, &copies[m]);
                /* Added by this snapshot: the list entry takes this attempt's sequence number,
                 * which a retry after a 409 changes (its entries carry their own). */
                copies[m].sequence_number = b->sequence_number;
                sources[m] = (SnapshotChangeSource){
                        .n_replaced = (int64_t)b->merged[m].n_inputs,
                        .n_entries_read = (int64_t)b->merged[m].n_entries_read,
                };
        }
        /* The entries to count have unknown counts, which no merged input has. */
        if (r == 0)
                r = snapshot_change_replace(&b->change, a->owner, copies, sources, b->n_merged,
                                            b->to_count, b->n_to_count);
        for (size_t m = 0; copies && m < b->n_merged; m++)
                manifest_file_deinit(&copies[m]);
        free(copies);
        free(sources);
        return r;
}

/* Ends the step: the list takes the merged manifests, then the attempt goes on. */
static void merge_finish(Batch *b) {
        if (merge_apply(b) < 0) {
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                return;
        }
        step_next(b);
}

static void merge_on_read(StorageReadItem *items, size_t n_items, void *userdata);

/* Returns false when it did all there was to do inline (the caller goes on); true when it goes
 * on by itself (a step outcome). */
static bool merge_start(Batch *b) {
        CommitEngine *e = b->queue->engine;
        MergeAttempt *a = &b->merge;
        size_t n_parent = b->change.n_list - b->change.n_added, n = 0, n_used = 0;
        ManifestMergePolicy policy;
        uint64_t budget = e->config->max_merge_input_bytes;
        _cleanup_(freep) const char **locations = NULL;
        int r;

        if (a->is_done)
                return false;
        a->is_done = true;
        if (b->table->format_version < 2)
                return false;
        /* Where Iceberg Java's append fails (NumberFormatException, whether or not merging is
         * on or anything would merge), so does ours. */
        r = manifest_merge_policy(b->table, &policy, &b->error);
        if (r < 0) {
                step_fail(b, KEY_FAILED, 422, "invalid-table-property", "%s", b->error.message);
                return true;
        }
        if (!policy.is_enabled || !merge_is_possible(b) || b->list_bytes.data)
                return false;

        a->owner = calloc(n_parent, sizeof(*a->owner));
        a->candidates = calloc(n_parent, sizeof(*a->candidates));
        a->candidate_files = calloc(n_parent, sizeof(*a->candidate_files));
        if (!a->owner || !a->candidates || !a->candidate_files)
                goto oom;
        merge_reuse(b);
        for (size_t m = 0; m < b->n_merged; m++)
                n_used += b->merged[m].is_used;
        for (size_t i = 0; i < n_parent; i++)
                if (!a->owner[i]) {
                        a->candidates[a->n_candidates] = b->change.n_added + i;
                        a->candidate_files[a->n_candidates++] =
                                b->change.list[b->change.n_added + i];
                }
        if (manifest_merge_plan(a->candidate_files, a->n_candidates, &policy, &a->plan) < 0)
                goto oom;

        /* [commit] max-merge-input-bytes: the first bins (the newest) that fit, the rest wait
         * for a later commit. */
        for (size_t k = 0; k < a->plan.n_bins; k++) {
                uint64_t bytes = 0;

                for (size_t i = 0; i < a->plan.bins[k].n_inputs; i++)
                        bytes += (uint64_t)a->candidate_files[a->plan.bins[k].inputs[i]].length;
                if (bytes > budget) {
                        for (size_t d = k; d < a->plan.n_bins; d++) {
                                a->plan.n_inputs -= a->plan.bins[d].n_inputs;
                                free(a->plan.bins[d].inputs);
                        }
                        a->plan.n_bins = k;
                        break;
                }
                budget -= bytes;
        }
        if (a->plan.n_bins == 0) {
                if (n_used == 0)
                        return false;
                if (merge_apply(b) < 0) {
                        step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                        return true;
                }
                return false;
        }

        a->bytes = calloc(a->plan.n_bins, sizeof(*a->bytes));
        a->files = calloc(a->plan.n_bins, sizeof(*a->files));
        a->stats = calloc(a->plan.n_bins, sizeof(*a->stats));
        a->status = calloc(a->plan.n_bins, sizeof(*a->status));
        locations = calloc(a->plan.n_inputs, sizeof(*locations));
        if (!a->bytes || !a->files || !a->stats || !a->status || !locations)
                goto oom;
        for (size_t k = 0; k < a->plan.n_bins; k++)
                for (size_t i = 0; i < a->plan.bins[k].n_inputs; i++)
                        locations[n++] = a->candidate_files[a->plan.bins[k].inputs[i]].path;
        {
                StorageContext ctx = core_storage_context(e, b->props, b->started_ns);

                r = storage_read_many(e->storage, &ctx, locations, n,
                                      e->storage_config->max_manifest_bytes,
                                      e->storage_config->s3.max_concurrent_requests, merge_on_read,
                                      b);
        }
        if (r < 0) {
                step_storage_failed(b, r, "cannot read the manifests to merge");
                return true;
        }
        e->n_in_flight++;
        return true;

oom:
        step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
        return true;
}

void merge_step(Batch *b) {
        if (!merge_start(b))
                step_next(b);
}

static void merge_work(uv_work_t *w);
static void merge_work_after(uv_work_t *w, int status);

static void merge_on_read(StorageReadItem *items, size_t n_items, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;
        MergeAttempt *a = &b->merge;
        int r;

        e->n_in_flight--;
        /* The items stay the reader's: take their bytes. */
        a->items = calloc(n_items ? n_items : 1, sizeof(*a->items));
        if (!a->items) {
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                core_maybe_stopped(e);
                return;
        }
        a->n_items = n_items;
        for (size_t i = 0; i < n_items; i++) {
                a->items[i].status = items[i].status;
                a->items[i].error = items[i].error;
                a->items[i].data = items[i].data;
                buf_init(&items[i].data, 0);
        }
        a->work.data = b;
        r = uv_queue_work(e->loop, &a->work, merge_work, merge_work_after);
        if (r < 0) {
                step_fail(b, KEY_FAILED, 503, "internal", "cannot queue work: %s", uv_strerror(r));
                core_maybe_stopped(e);
                return;
        }
        e->n_in_flight++;
}

/* Thread pool: the result types of spec `spec_id`'s fields, for the summaries; NULL when
 * one is unknown (the merged manifest then has null partitions). */
static IcebergType *merge_partition_types(const Batch *b, int32_t spec_id, size_t *ret_n) {
        const json_t *spec = table_partition_spec(b->table, spec_id);
        const json_t *schema = table_current_schema(b->table);
        const json_t *fields = spec ? json_object_get(spec, "fields") : NULL;
        size_t n = json_array_size(fields);
        IcebergType *types;
        Error e;

        if (!schema || !json_is_array(fields))
                return NULL;
        types = calloc(n + 1, sizeof(*types));
        for (size_t i = 0; types && i < n; i++)
                if (data_file_partition_type(schema, json_array_get(fields, i), &types[i], &e) <
                    0) {
                        free(types);
                        return NULL;
                }
        *ret_n = n;
        return types;
}

/* Thread pool: one bin. 0, or a reason to leave it unmerged (logged by the loop), or -ENOMEM. */
static int merge_bin(Batch *b, size_t k, size_t first_item, Error *e) {
        const StorageConfig *sc = b->queue->engine->storage_config;
        MergeAttempt *a = &b->merge;
        const ManifestMergeBin *bin = &a->plan.bins[k];
        _cleanup_(freep) ManifestMergeInput *inputs = calloc(bin->n_inputs, sizeof(*inputs));
        _cleanup_(freep) IcebergType *types = NULL;
        _cleanup_(freep) char *location = NULL;
        ManifestMergeTarget target;
        size_t n_types = 0;
        int r;

        if (!inputs)
                return -ENOMEM;
        for (size_t i = 0; i < bin->n_inputs; i++) {
                const StorageReadItem *item = &a->items[first_item + i];
                const ManifestFile *f = &a->candidate_files[bin->inputs[i]];

                if (item->status < 0)
                        return error_set(e, -EIO, "cannot read '%s': %s", f->path,
                                         item->error.message);
                inputs[i] = (ManifestMergeInput){ f, buf_slice(&item->data) };
        }
        if (asprintf(&location, "%s/merged-%s-%u-%zu.avro", b->table->metadata_dir, b->commit_uuid,
                     b->attempt, k) < 0) {
                location = NULL;
                return -ENOMEM;
        }
        types = merge_partition_types(b, inputs[0].file->partition_spec_id, &n_types);
        target = (ManifestMergeTarget){
                .format_version = b->table->format_version,
                .snapshot_id = b->snapshot_id,
                .sequence_number = b->sequence_number,
                .location = location,
                .partition_types = types,
                .n_partition_types = n_types,
                .max_entries = sc->max_manifest_entries,
        };
        /* It must stay readable by the next attempt, and by the daemon's own readers. */
        buf_init(&a->bytes[k], (size_t)sc->max_manifest_bytes);
        r = manifest_merge_write(inputs, bin->n_inputs, &target, &a->bytes[k], &a->files[k],
                                 &a->stats[k], e);
        return r == -ENOMEM ? r : r != 0 ? (r > 0 ? r : -EINVAL) : 0;
}

static void merge_work(uv_work_t *w) {
        Batch *b = w->data;
        MergeAttempt *a = &b->merge;
        size_t first_item = 0;

        a->work_status = 0;
        for (size_t k = 0; k < a->plan.n_bins; k++) {
                int r = merge_bin(b, k, first_item, &a->error);

                first_item += a->plan.bins[k].n_inputs;
                if (r == -ENOMEM) {
                        a->work_status = r;
                        return;
                }
                a->status[k] = r;
                /* The first reason is enough for the log. */
                if (r != 0 && a->error.message[0] && !b->error.message[0])
                        (void)error_set(&b->error, r, "bin %zu: %s", k, a->error.message);
                a->error.message[0] = 0;
        }
        for (size_t i = 0; i < a->n_items; i++)
                buf_deinit(&a->items[i].data);
}

static void merge_work_after(uv_work_t *w, int status) {
        Batch *b = w->data;
        CommitEngine *e = b->queue->engine;
        MergeAttempt *a = &b->merge;
        size_t n_skipped = 0;

        e->n_in_flight--;
        if (status < 0 || a->work_status < 0) {
                step_fail(b, KEY_FAILED, 503, "out-of-memory",
                          "cannot merge the parent's manifests: out of memory");
                core_maybe_stopped(e);
                return;
        }
        for (size_t k = 0; k < a->plan.n_bins; k++)
                n_skipped += a->status[k] != 0;
        /* Merging is an optimization: a bin that cannot be merged stays as it is. */
        if (n_skipped > 0)
                log_info("manifest merge queue='%s' kept %zu of %zu bin(s) unmerged: %s",
                         b->queue->label, n_skipped, a->plan.n_bins, b->error.message);
        b->error.message[0] = 0;
        merge_continue(b);
        core_maybe_stopped(e);
}

static void merge_on_written(StorageResult *result, void *userdata);

/* Writes the merged bins one by one, each under its own name, never replacing a file. */
static void merge_continue(Batch *b) {
        CommitEngine *e = b->queue->engine;
        MergeAttempt *a = &b->merge;
        StorageContext ctx = core_storage_context(e, b->props, b->started_ns);
        int r;

        while (a->n_written < a->plan.n_bins && a->status[a->n_written] != 0)
                a->n_written++;
        if (a->n_written == a->plan.n_bins) {
                merge_finish(b);
                return;
        }
        r = storage_write(e->storage, &ctx, a->files[a->n_written].path,
                          buf_slice(&a->bytes[a->n_written]), STORAGE_WRITE_IF_ABSENT,
                          merge_on_written, b, &b->error);
        if (r < 0) {
                step_storage_failed(b, r, b->error.message);
                return;
        }
        e->n_in_flight++;
}

/* The written bin joins the batch's merged manifests, claiming its inputs for this list. */
static int merge_cache_add(Batch *b, size_t k) {
        MergeAttempt *a = &b->merge;
        const ManifestMergeBin *bin = &a->plan.bins[k];
        MergedManifest *grown, *m;

        grown = reallocarray(b->merged, b->n_merged + 1, sizeof(*b->merged));
        if (!grown)
                return -ENOMEM;
        b->merged = grown;
        m = &b->merged[b->n_merged];
        *m = (MergedManifest){ .n_entries_read = a->stats[k].n_entries_read, .is_used = true };
        m->inputs = calloc(bin->n_inputs, sizeof(*m->inputs));
        if (!m->inputs)
                return -ENOMEM;
        for (size_t i = 0; i < bin->n_inputs; i++) {
                m->inputs[i] = strdup(a->candidate_files[bin->inputs[i]].path);
                if (!m->inputs[i]) {
                        m->n_inputs = i;
                        merged_deinit(m);
                        return -ENOMEM;
                }
        }
        m->n_inputs = bin->n_inputs;
        m->file = a->files[k];
        a->files[k] = (ManifestFile){ 0 };
        b->n_merged++;
        for (size_t i = 0; i < bin->n_inputs; i++)
                a->owner[a->candidates[bin->inputs[i]] - b->change.n_added] = b->n_merged;
        return 0;
}

static void merge_on_written(StorageResult *result, void *userdata) {
        Batch *b = userdata;
        CommitEngine *e = b->queue->engine;
        MergeAttempt *a = &b->merge;
        size_t k = a->n_written++;
        StorageProps *props = NULL;

        e->n_in_flight--;
        buf_deinit(&a->bytes[k]);
        if (result->status < 0) {
                /* A failed write may have left the object: ours, and in no list. */
                log_info("manifest merge queue='%s' cannot write '%s' (%s), keeping its inputs",
                         b->queue->label, a->files[k].path, result->error.message);
                if (result->status != -EEXIST)
                        core_delete_file(e, b->props, TAKE_PTR(a->files[k].path));
                merge_continue(b);
                core_maybe_stopped(e);
                return;
        }
        /* Deleting them later (maybe after this attempt's settings are gone) needs these. */
        if (b->props && storage_props_copy(b->props, &props) == 0) {
                storage_props_free(b->merge_props);
                b->merge_props = props;
        }
        if (merge_cache_add(b, k) < 0) {
                core_delete_file(e, b->props, TAKE_PTR(a->files[k].path));
                step_fail(b, KEY_FAILED, 503, "out-of-memory", "out of memory");
                core_maybe_stopped(e);
                return;
        }
        merge_continue(b);
        core_maybe_stopped(e);
}
