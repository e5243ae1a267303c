/* SPDX-License-Identifier: Apache-2.0 */
/* A snapshot described before it is written (snapshot_change.h), and what is derived from it:
 * the list's bytes, the row ids, the summary and the history record. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/lineage.h"
#include "iceberg/manifest_list_append.h"
#include "iceberg/snapshot.h"
#include "iceberg/snapshot_change.h"
#include "util/buf.h"
#include "util/cleanup.h"

int snapshot_change_reserve(SnapshotChange *c, size_t n_parts, size_t n_list) {
        c->list = calloc(n_list + 1, sizeof(*c->list));
        c->sources = calloc(n_list + 1, sizeof(*c->sources));
        c->parts = calloc(n_parts + 1, sizeof(*c->parts));
        if (!c->list || !c->sources || !c->parts)
                return -ENOMEM;
        c->cap = n_list;
        return 0;
}

void snapshot_change_begin_part(SnapshotChange *c, const char *recorded_key,
                                const json_t *properties, const StagedManifest *const *staged) {
        c->parts[c->n_parts++] = (SnapshotChangePart){
                .recorded_key = recorded_key,
                .properties = properties,
                .staged = staged,
                .first = c->n_list,
        };
}

void snapshot_change_add(SnapshotChange *c, ManifestFile *file) {
        c->list[c->n_list] = *file;
        c->sources[c->n_list++] = (SnapshotChangeSource){
                .origin = SNAPSHOT_CHANGE_ADDED,
                .part = c->n_parts - 1,
        };
        c->parts[c->n_parts - 1].n++;
        c->n_added = c->n_list;
        *file = (ManifestFile){ 0 };
}

void snapshot_change_keep_parent(SnapshotChange *c, bool has_parent, int64_t parent_snapshot_id,
                                 int format_version, ManifestFile *parent, size_t n_parent) {
        c->has_base = has_parent;
        c->base_snapshot_id = parent_snapshot_id;
        /* Its encoded blocks can be copied unless this change fills in what an entry lacks:
         * counts (counted from the manifest) or a v3 data manifest's first_row_id. */
        c->is_parent_untouched = has_parent;
        for (size_t i = 0; i < n_parent; i++) {
                const ManifestFile *m = &parent[i];

                if (!m->has_counts || (format_version >= 3 && m->content == MANIFEST_CONTENT_DATA &&
                                       !m->has_first_row_id))
                        c->is_parent_untouched = false;
                c->list[c->n_list] = *m;
                c->sources[c->n_list++] = (SnapshotChangeSource){ .origin = SNAPSHOT_CHANGE_KEPT };
        }
        if (n_parent > 0) /* a first snapshot has no parent list: parent may be NULL */
                memset(parent, 0, n_parent * sizeof(*parent));
}

int snapshot_change_replace(SnapshotChange *c, const size_t *owner, ManifestFile *merged,
                            const SnapshotChangeSource *merged_sources, size_t n_merged,
                            size_t *indices, size_t n_indices) {
        size_t n_kept = c->n_list - c->n_added, n = c->n_added;
        _cleanup_(freep) size_t *map = calloc(n_kept + 1, sizeof(*map));
        _cleanup_(freep) bool *placed = calloc(n_merged + 1, sizeof(*placed));
        ManifestFile *list = calloc(c->n_list + 1, sizeof(*list));
        SnapshotChangeSource *sources = calloc(c->n_list + 1, sizeof(*sources));

        if (!map || !placed || !list || !sources) {
                free(list);
                free(sources);
                return -ENOMEM;
        }
        /* Each merged manifest takes the place of its first input; its other inputs go. */
        for (size_t i = 0; i < n_kept; i++) {
                size_t k = owner[i];

                map[i] = SIZE_MAX;
                if (!k) {
                        map[i] = n++;
                        continue;
                }
                c->is_parent_untouched = false; /* the parent's blocks no longer hold the list */
                if (placed[k - 1])
                        continue;
                placed[k - 1] = true;
                map[i] = n++;
        }
        memcpy(list, c->list, c->n_added * sizeof(*list));
        memcpy(sources, c->sources, c->n_added * sizeof(*sources));
        for (size_t i = 0; i < n_kept; i++) {
                size_t k = owner[i];

                if (k) {
                        manifest_file_deinit(&c->list[c->n_added + i]);
                        if (map[i] != SIZE_MAX) {
                                list[map[i]] = merged[k - 1];
                                sources[map[i]] = merged_sources[k - 1];
                                sources[map[i]].origin = SNAPSHOT_CHANGE_MERGED;
                                merged[k - 1] = (ManifestFile){ 0 };
                        }
                } else {
                        list[map[i]] = c->list[c->n_added + i];
                        sources[map[i]] = c->sources[c->n_added + i];
                }
        }
        for (size_t k = 0; k < n_indices; k++)
                if (indices[k] >= c->n_added)
                        indices[k] = map[indices[k] - c->n_added];
        free(c->list);
        free(c->sources);
        c->list = list;
        c->sources = sources;
        c->n_list = n;
        return 0;
}

int snapshot_change_rewrite(SnapshotChange *c, size_t index, ManifestFile *rewritten) {
        if (index >= c->n_list || c->sources[index].origin != SNAPSHOT_CHANGE_KEPT)
                return -EINVAL;
        manifest_file_deinit(&c->list[index]);
        c->list[index] = *rewritten;
        *rewritten = (ManifestFile){ 0 };
        c->sources[index] = (SnapshotChangeSource){
                .origin = SNAPSHOT_CHANGE_REWRITTEN,
                .n_replaced = 1,
        };
        c->is_parent_untouched = false;
        return 0;
}

int snapshot_change_remove(SnapshotChange *c, const char *path, const char *manifest,
                           int32_t content, int64_t record_count, int64_t file_size) {
        SnapshotChangeRemoval *grown, *r;

        grown = reallocarray(c->removed, c->n_removed + 1, sizeof(*c->removed));
        if (!grown)
                return -ENOMEM;
        c->removed = grown;
        r = &c->removed[c->n_removed];
        *r = (SnapshotChangeRemoval){
                .path = strdup(path),
                .manifest = manifest ? strdup(manifest) : NULL,
                .content = content,
                .record_count = record_count,
                .file_size = file_size,
        };
        if (!r->path || (manifest && !r->manifest)) {
                free(r->path);
                free(r->manifest);
                return -ENOMEM;
        }
        c->n_removed++;
        return 0;
}

void snapshot_change_deinit(SnapshotChange *c) {
        for (size_t i = 0; c->list && i < c->n_list; i++)
                manifest_file_deinit(&c->list[i]);
        free(c->list);
        free(c->sources);
        free(c->parts);
        for (size_t i = 0; i < c->n_removed; i++) {
                free(c->removed[i].path);
                free(c->removed[i].manifest);
        }
        free(c->removed);
        *c = (SnapshotChange){ 0 };
}

int snapshot_change_assign_row_ids(SnapshotChange *c, int64_t first_row_id,
                                   int64_t *ret_next_row_id, Error *e) {
        return lineage_assign(c->list, c->n_list, first_row_id, ret_next_row_id, e);
}

int snapshot_change_write_list(const SnapshotChange *c, const ManifestListHeader *h,
                               Slice parent_bytes, Buf *out, bool *ret_incremental, Error *e) {
        int r = MANIFEST_LIST_APPEND_E_WHOLE;

        *ret_incremental = false;
        /* A parent entry manifest_list_write() refuses is refused the same way: by it. */
        if (c->is_parent_untouched &&
            manifest_list_check(h, c->list + c->n_added, c->n_list - c->n_added, NULL) == 0) {
                r = manifest_list_append(h, c->list, c->n_added, parent_bytes, out, e);
                *ret_incremental = r == 0;
        }
        if (r == MANIFEST_LIST_APPEND_E_WHOLE)
                r = manifest_list_write(h, c->list, c->n_list, out, e);
        return r;
}

const char *snapshot_change_operation(const SnapshotChange *c) {
        static const char *const names[] = {
                [SNAPSHOT_OPERATION_APPEND] = "append",
                [SNAPSHOT_OPERATION_OVERWRITE] = "overwrite",
                [SNAPSHOT_OPERATION_DELETE] = "delete",
                [SNAPSHOT_OPERATION_REPLACE] = "replace",
        };
        bool adds = c->n_added > 0;

        if (c->operation != SNAPSHOT_OPERATION_DERIVED)
                return names[c->operation];
        /* BaseOverwriteFiles.operation(): removals with nothing added are a delete, with
         * something added an overwrite. */
        if (c->n_removed > 0)
                return adds ? "overwrite" : "delete";
        return NULL; /* BaseRowDelta.operation(), from the added files (snapshot.c) */
}

/* What the parts add and the change removes, and its manifest counts. */
static void snapshot_change_counts(const SnapshotChange *c, SnapshotAdded *added) {
        for (size_t p = 0; p < c->n_parts; p++)
                for (size_t k = 0; k < c->parts[p].n; k++) {
                        const StagedManifest *m = c->parts[p].staged[k];

                        /* A delete manifest holds only equality deletes (staging rules): its
                         * rows are deletes, never added records (Java SnapshotSummary). */
                        if (m->content == MANIFEST_CONTENT_DELETES) {
                                added->equality_delete_files += m->n_equality_delete_files;
                                added->equality_deletes += m->added_rows_count;
                        } else {
                                added->data_files += m->added_files_count;
                                added->records += m->added_rows_count;
                        }
                        added->files_size += m->added_files_size;
                }
        for (size_t i = 0; i < c->n_removed; i++)
                if (c->removed[i].content == MANIFEST_CONTENT_DATA) {
                        added->removed_data_files++;
                        added->removed_records += c->removed[i].record_count;
                        added->removed_files_size += c->removed[i].file_size;
                }
        /* Java counts list entries added by this snapshot as created: merged ones too. */
        for (size_t i = 0; i < c->n_list; i++)
                switch (c->sources[i].origin) {
                case SNAPSHOT_CHANGE_ADDED:
                        added->manifests_created++;
                        break;
                case SNAPSHOT_CHANGE_KEPT:
                        added->manifests_kept++;
                        break;
                case SNAPSHOT_CHANGE_MERGED:
                case SNAPSHOT_CHANGE_REWRITTEN:
                        /* SnapshotProducer.buildManifestCountSummary: written by this snapshot,
                         * in place of what they replace. */
                        added->manifests_created++;
                        added->manifests_replaced += c->sources[i].n_replaced;
                        added->entries_processed += c->sources[i].n_entries_read;
                        break;
                }
        added->operation = snapshot_change_operation(c);
}

int snapshot_change_summary(const SnapshotChange *c, const json_t *parent_summary,
                            const char *branch, unsigned attempt, json_t **ret_summary, Error *e) {
        _cleanup_(buf_deinitp) Buf keys = { 0 }, counts = { 0 };
        _cleanup_(freep) char *key_list = NULL, *count_list = NULL;
        _cleanup_(json_decrefp) json_t *properties = json_object();
        SnapshotAdded added = { 0 };
        SnapshotRecord record;
        int r = properties ? 0 : -ENOMEM;

        /* "principal/key" per request, comma-separated, and its manifests' count. The record
         * is what makes a retry safe: it must be complete or absent. The counts place each
         * request's manifests in the list (they come first, in this order), for its receipt. */
        buf_init(&keys, SIZE_MAX);
        buf_init(&counts, SIZE_MAX);
        for (size_t p = 0; r == 0 && p < c->n_parts; p++) {
                r = buf_printf(&keys, "%s%s", p ? "," : "", c->parts[p].recorded_key);
                if (r == 0)
                        r = buf_printf(&counts, "%s%zu", p ? "," : "", c->parts[p].n);
                if (r == 0 && json_object_update(properties, (json_t *)c->parts[p].properties) < 0)
                        r = -ENOMEM;
        }
        if (r == 0) {
                key_list = (char *)buf_steal(&keys, NULL);
                count_list = (char *)buf_steal(&counts, NULL);
        }
        if (r < 0 || !key_list || !count_list)
                return r < 0 ? r : -ENOMEM;
        snapshot_change_counts(c, &added);
        record = (SnapshotRecord){
                .keys = key_list,
                .manifest_counts = count_list,
                .branch = branch,
                .attempt = attempt,
        };
        return snapshot_summary_build(parent_summary, &added, properties, &record, ret_summary, e);
}
