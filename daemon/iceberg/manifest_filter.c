/* SPDX-License-Identifier: Apache-2.0 */
/* Removing files from a committed manifest (manifest_filter.h). Two passes as in merging: the
 * entries read with inheritance applied (manifest_entries.c) decide what is written, then the
 * datums are copied in the same order (manifest_rewriter.c). The rules are Java's
 * ManifestFilterManager.filterManifestWithDeletedFiles (only live entries are read back,
 * so DELETED ones are dropped; ManifestWriter.delete keeps the original sequence numbers). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "avro/ocf.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_filter.h"
#include "iceberg/manifest_rewriter.h"
#include "util/cleanup.h"

void manifest_filter_result_deinit(ManifestFilterResult *r) {
        manifest_file_deinit(&r->file);
        for (size_t i = 0; i < r->n_removed; i++)
                free(r->removed[i].path);
        free(r->removed);
        *r = (ManifestFilterResult){ 0 };
}

/* A requested path and its place in ManifestFilterPaths, sorted by path for lookups. */
typedef struct FilterKey {
        const char *path;
        size_t index;
} FilterKey;

static int filter_key_compare(const void *a, const void *b) {
        return strcmp(((const FilterKey *)a)->path, ((const FilterKey *)b)->path);
}

typedef struct FilterState {
        const FilterKey *keys; /* sorted */
        size_t n_keys;
        const size_t *matches; /* per entry: first key of its path, SIZE_MAX for none */
        bool *found;           /* a copy of the caller's, applied on success */
        int64_t snapshot_id;
        ManifestFilterResult result;
} FilterState;

/* The first key equal to path, or SIZE_MAX. */
static size_t filter_lookup(const FilterKey *keys, size_t n_keys, const char *path) {
        const FilterKey key = { .path = path };
        const FilterKey *k = bsearch(&key, keys, n_keys, sizeof(*keys), filter_key_compare);

        if (!k)
                return SIZE_MAX;
        while (k > keys && strcmp(k[-1].path, path) == 0)
                k--;
        return (size_t)(k - keys);
}

/* Marks every requested copy of the path found; true when it was found before (a duplicate). */
static bool filter_mark_found(FilterState *st, size_t first) {
        bool was_found = st->found[st->keys[first].index];

        for (size_t k = first;
             k < st->n_keys && strcmp(st->keys[k].path, st->keys[first].path) == 0; k++)
                st->found[st->keys[k].index] = true;
        return was_found;
}

static int filter_add_removed(FilterState *st, const ManifestEntry *x, int64_t file_size) {
        ManifestFilterResult *res = &st->result;
        ManifestFilterRemoved *grown;

        grown = reallocarray(res->removed, res->n_removed + 1, sizeof(*res->removed));
        if (!grown)
                return -ENOMEM;
        res->removed = grown;
        grown[res->n_removed] = (ManifestFilterRemoved){
                .path = strdup(x->file_path),
                .content = x->content,
                .record_count = x->record_count,
                .file_size = file_size,
        };
        if (!grown[res->n_removed].path)
                return -ENOMEM;
        res->n_removed++;
        return 0;
}

static int filter_decide(void *userdata, const ManifestFieldsLayout *l, avro_value_t *datum,
                         const ManifestEntry *x, size_t index, ManifestRewriteAction *ret,
                         Error *e) {
        FilterState *st = userdata;
        ManifestEntryFields f = { 0 };
        int r;

        /* Deleted by an earlier snapshot: Java reads back only live entries. */
        if (x->status == MANIFEST_ENTRY_DELETED) {
                *ret = (ManifestRewriteAction){ .is_written = false };
                return 0;
        }
        if (st->matches[index] == SIZE_MAX) {
                *ret = (ManifestRewriteAction){ .is_written = true,
                                                .status = MANIFEST_ENTRY_EXISTING };
                return 0;
        }
        *ret = (ManifestRewriteAction){ .is_written = true,
                                        .status = MANIFEST_ENTRY_DELETED,
                                        .deleting_snapshot_id = st->snapshot_id };
        if (filter_mark_found(st, st->matches[index])) {
                st->result.n_duplicates++;
                return 0;
        }
        /* The summary's removed-files-size: the one field the first pass does not keep. */
        r = manifest_fields_read(l, datum, &f, e, MANIFEST_FIELD_DATA_FILE,
                                 MANIFEST_FIELD_FILE_SIZE);
        if (r < 0)
                return error_prefix(e, r, "entry %zu", index);
        if (!f.file_size_in_bytes.is_set || f.file_size_in_bytes.number < 0)
                return error_set(e, -EBADMSG, "entry %zu: file_size_in_bytes is null or negative",
                                 index);
        if (filter_add_removed(st, x, f.file_size_in_bytes.number) < 0)
                return error_set(e, -ENOMEM, "out of memory");
        return 0;
}

/* The sorted keys and, per entry, the first key of its path; *ret_n_matched live entries
 * match. */
static int filter_match(const ManifestFilterPaths *remove, const ManifestEntry *entries,
                        size_t n_entries, FilterKey **ret_keys, size_t **ret_matches,
                        size_t *ret_n_matched) {
        _cleanup_(freep) FilterKey *keys = calloc(remove->n_paths + 1, sizeof(*keys));
        _cleanup_(freep) size_t *matches = calloc(n_entries + 1, sizeof(*matches));
        size_t n_matched = 0;

        if (!keys || !matches)
                return -ENOMEM;
        for (size_t i = 0; i < remove->n_paths; i++)
                keys[i] = (FilterKey){ .path = remove->paths[i], .index = i };
        if (remove->n_paths > 1)
                qsort(keys, remove->n_paths, sizeof(*keys), filter_key_compare);
        for (size_t k = 0; k < n_entries; k++) {
                matches[k] = entries[k].status == MANIFEST_ENTRY_DELETED
                                     ? SIZE_MAX
                                     : filter_lookup(keys, remove->n_paths, entries[k].file_path);
                n_matched += matches[k] != SIZE_MAX;
        }
        *ret_keys = TAKE_PTR(keys);
        *ret_matches = TAKE_PTR(matches);
        *ret_n_matched = n_matched;
        return 0;
}

/* The rewritten manifest's list entry: the input's, with what this snapshot wrote. */
static int filter_list_entry(const ManifestFile *file, const ManifestFilterTarget *target,
                             const ManifestRewriter *w, int64_t length, ManifestFile *ret) {
        ManifestFile f;

        if (manifest_file_copy(file, &f) < 0)
                return -ENOMEM;
        free(f.path);
        f.path = strdup(target->location);
        if (!f.path) {
                manifest_file_deinit(&f);
                return -ENOMEM;
        }
        f.length = length;
        f.sequence_number = target->sequence_number;
        /* ManifestWriter: no live entry leaves it unassigned; the list writer then gives the
         * commit's sequence number. */
        f.min_sequence_number =
                w->existing_files ? w->min_sequence_number : target->sequence_number;
        f.has_added_snapshot_id = true;
        f.added_snapshot_id = target->snapshot_id;
        f.has_counts = true;
        f.added_files_count = 0;
        f.added_rows_count = 0;
        f.existing_files_count = w->existing_files;
        f.existing_rows_count = w->existing_rows;
        f.deleted_files_count = w->deleted_files;
        f.deleted_rows_count = w->deleted_rows;
        /* The partition summaries stay the input's: they cover every entry written. */
        f.has_first_row_id = false;
        f.first_row_id = 0;
        *ret = f;
        return 0;
}

/* The second pass: copies the entries as filter_decide() says into *out. */
static int filter_rewrite(Slice bytes, const ManifestFile *file, const ManifestFilterTarget *target,
                          const ManifestEntry *entries, size_t n_entries, FilterState *st, Buf *out,
                          Error *e) {
        _cleanup_(manifest_rewriter_deinit) ManifestRewriter w = { 0 };
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        size_t before = out->len;
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r < 0)
                return r;
        r = manifest_rewriter_init(&w, reader,
                                   target->format_version >= 3 &&
                                           file->content == MANIFEST_CONTENT_DATA,
                                   e);
        if (r == MANIFEST_REWRITER_E_INCOMPATIBLE)
                return MANIFEST_FILTER_E_INCOMPATIBLE;
        if (r == 0)
                r = manifest_rewriter_copy(&w, reader, entries, n_entries, filter_decide, st, e);
        if (r == 0)
                r = manifest_rewriter_finish(&w, out, e);
        if (r < 0)
                return r;
        st->result.n_entries_read = w.n_read;
        r = filter_list_entry(file, target, &w, (int64_t)(out->len - before), &st->result.file);
        if (r < 0) {
                out->len = before;
                return error_set(e, r, "out of memory");
        }
        return 0;
}

int manifest_filter_write(Slice bytes, const ManifestFile *file, const ManifestFilterPaths *remove,
                          const ManifestFilterTarget *target, Buf *out, ManifestFilterResult *ret,
                          Error *e) {
        _cleanup_(freep) FilterKey *keys = NULL;
        _cleanup_(freep) size_t *matches = NULL;
        _cleanup_(freep) bool *found = NULL;
        FilterState st = { .snapshot_id = target->snapshot_id };
        ManifestEntry *entries = NULL;
        size_t n_entries = 0, n_matched = 0;
        int r;

        r = manifest_entries_read(bytes, target->max_entries, &entries, &n_entries, e);
        if (r == 0)
                r = manifest_entries_inherit(entries, n_entries, file, e);
        if (r == 0 && filter_match(remove, entries, n_entries, &keys, &matches, &n_matched) < 0)
                r = error_set(e, -ENOMEM, "out of memory");
        if (r == 0 && n_matched == 0)
                r = error_set(e, MANIFEST_FILTER_E_UNTOUCHED, "no file to remove is live in it");
        if (r == 0) {
                found = calloc(remove->n_paths + 1, sizeof(*found));
                if (!found)
                        r = error_set(e, -ENOMEM, "out of memory");
        }
        if (r == 0) {
                memcpy(found, remove->found, remove->n_paths * sizeof(*found));
                st.keys = keys;
                st.n_keys = remove->n_paths;
                st.matches = matches;
                st.found = found;
                r = filter_rewrite(bytes, file, target, entries, n_entries, &st, out, e);
        }
        manifest_entries_free(entries, n_entries);
        if (r != 0) {
                manifest_filter_result_deinit(&st.result);
                return r == MANIFEST_FILTER_E_UNTOUCHED || r == MANIFEST_FILTER_E_INCOMPATIBLE
                               ? r
                               : error_prefix(e, r, "manifest '%s'", file->path);
        }
        memcpy(remove->found, found, remove->n_paths * sizeof(*found));
        *ret = st.result;
        return 0;
}
