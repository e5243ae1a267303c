/* SPDX-License-Identifier: Apache-2.0 */
/* The lineage audit's model (table.h): snapshots and refs from metadata, the manifest lists read
 * for them, the row-id ranges of snapshots and manifests (table-internal.h), the gaps between
 * them and the row-id lookup. Row-id ranges are half-open [first, end) internally and reported as
 * first-row-id/last-row-id (inclusive), as in commit receipts. The rules checked are those of
 * docs/design.md section 4 (spec "Row Lineage"); the checks and the report are table_report.c's. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "audit/table-internal.h"
#include "audit/table.h"
#include "iceberg/manifest_list.h"
#include "util/checked.h"

static void audit_snapshot_deinit(AuditSnapshot *s) {
        free(s->list_error);
        manifest_list_files_free(s->manifests, s->n_manifests);
        free(s->sorted);
}

AuditTable *audit_table_free(AuditTable *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_snapshots; i++)
                audit_snapshot_deinit(&t->snapshots[i]);
        free(t->snapshots);
        free(t->refs);
        table_metadata_free(t->table);
        free(t);
        return NULL;
}

static int snapshot_compare(const void *a, const void *b) {
        const AuditSnapshot *x = a, *y = b;

        if (x->sequence_number != y->sequence_number)
                return x->sequence_number < y->sequence_number ? -1 : 1;
        return x->snapshot_id < y->snapshot_id ? -1 : x->snapshot_id > y->snapshot_id;
}

static int audit_snapshot_parse(json_t *o, AuditSnapshot *s, Error *e) {
        json_t *summary = json_object_get(o, "summary");
        int64_t v;

        *s = (AuditSnapshot){ 0 };
        if (table_json_get_i64(o, "snapshot-id", &s->snapshot_id) < 0)
                return error_set(e, -EINVAL, "a snapshot lacks a valid snapshot-id");
        /* v1 metadata may omit sequence numbers: they read as 0. */
        if (table_json_get_i64(o, "sequence-number", &s->sequence_number) < 0)
                s->sequence_number = 0;
        if (table_json_get_i64(o, "timestamp-ms", &s->timestamp_ms) < 0)
                s->timestamp_ms = 0;
        if (table_json_get_i64(o, "parent-snapshot-id", &s->parent_id) == 0)
                s->has_parent_id = true;
        s->operation = json_string_value(json_object_get(summary, "operation"));
        s->manifest_list = json_string_value(json_object_get(o, "manifest-list"));
        if (table_json_get_i64(o, "first-row-id", &s->first_row_id) == 0) {
                s->has_first_row_id = true;
                if (table_json_get_i64(o, "added-rows", &v) < 0 || v < 0 || s->first_row_id < 0 ||
                    checked_add_i64(&v, v, s->first_row_id))
                        return error_set(e, -EINVAL,
                                         "snapshot %" PRId64
                                         " has a first-row-id but no valid added-rows",
                                         s->snapshot_id);
                s->added_rows = v - s->first_row_id;
        }
        return 0;
}

int audit_table_new(TableMetadata *table, const AuditLimits *limits, AuditTable **ret, Error *e) {
        _cleanup_(table_metadata_freep) TableMetadata *owned = table;
        _cleanup_(audit_table_freep) AuditTable *t = NULL;
        json_t *snapshots, *refs, *value;
        const char *name;
        size_t i;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return error_set(e, -ENOMEM, "out of memory");
        t->table = TAKE_PTR(owned);
        t->limits = *limits;

        snapshots = json_object_get(table->metadata, "snapshots");
        if (json_array_size(snapshots) > limits->max_snapshots)
                return error_set(
                        e, -E2BIG,
                        "the table has %zu snapshots, more than audit.max-snapshots=%" PRIu64,
                        json_array_size(snapshots), limits->max_snapshots);
        if (json_array_size(snapshots) > 0) {
                t->snapshots = calloc(json_array_size(snapshots), sizeof(*t->snapshots));
                if (!t->snapshots)
                        return error_set(e, -ENOMEM, "out of memory");
        }
        json_array_foreach (snapshots, i, value) {
                r = audit_snapshot_parse(value, &t->snapshots[t->n_snapshots], e);
                if (r < 0)
                        return r;
                t->n_snapshots++;
        }
        if (t->n_snapshots > 1) /* a table without snapshots has no array: qsort(NULL) is UB */
                qsort(t->snapshots, t->n_snapshots, sizeof(*t->snapshots), snapshot_compare);

        refs = json_object_get(table->metadata, "refs");
        if (json_object_size(refs) > 0) {
                t->refs = calloc(json_object_size(refs), sizeof(*t->refs));
                if (!t->refs)
                        return error_set(e, -ENOMEM, "out of memory");
        }
        json_object_foreach (refs, name, value) {
                AuditRef *ref = &t->refs[t->n_refs];

                if (table_json_get_i64(value, "snapshot-id", &ref->snapshot_id) < 0)
                        return error_set(e, -EINVAL, "ref '%s' lacks a valid snapshot-id", name);
                ref->name = name;
                ref->is_branch =
                        !json_is_string(json_object_get(value, "type")) ||
                        strcmp(json_string_value(json_object_get(value, "type")), "tag") != 0;
                t->n_refs++;
        }
        *ret = TAKE_PTR(t);
        return 0;
}

ssize_t audit_table_find_snapshot(const AuditTable *t, int64_t snapshot_id) {
        for (size_t i = 0; i < t->n_snapshots; i++)
                if (t->snapshots[i].snapshot_id == snapshot_id)
                        return (ssize_t)i;
        return -ENOENT;
}

static const char *manifest_path(const ManifestFile *m) {
        return m->path ? m->path : "";
}

static int manifest_ptr_compare(const void *a, const void *b) {
        return strcmp(manifest_path(*(const ManifestFile *const *)a),
                      manifest_path(*(const ManifestFile *const *)b));
}

int audit_snapshot_take_manifests(AuditTable *t, size_t i, int list_format_version,
                                  bool has_first_row_id, int64_t first_row_id,
                                  ManifestFile *manifests, size_t n, Error *e) {
        AuditSnapshot *s = &t->snapshots[i];

        if (n > t->limits.max_manifests || t->n_manifests_read > t->limits.max_manifests - n) {
                manifest_list_files_free(manifests, n);
                return error_set(e, -E2BIG,
                                 "the manifest lists of the table hold more than "
                                 "audit.max-manifests=%" PRIu64 " entries in total",
                                 t->limits.max_manifests);
        }
        if (n > 0) {
                s->sorted = calloc(n, sizeof(*s->sorted));
                if (!s->sorted) {
                        manifest_list_files_free(manifests, n);
                        return error_set(e, -ENOMEM, "out of memory");
                }
        }
        for (size_t k = 0; k < n; k++)
                s->sorted[k] = &manifests[k];
        qsort(s->sorted, n, sizeof(*s->sorted), manifest_ptr_compare);
        t->n_manifests_read += n;
        s->manifests = manifests;
        s->n_manifests = n;
        s->list_format_version = list_format_version;
        s->list_has_first_row_id = has_first_row_id;
        s->list_first_row_id = first_row_id;
        s->is_list_read = true;
        return 0;
}

int audit_snapshot_set_list_error(AuditTable *t, size_t i, const char *reason) {
        AuditSnapshot *s = &t->snapshots[i];

        free(s->list_error);
        s->list_error = strdup(reason);
        return s->list_error ? 0 : -ENOMEM;
}

int audit_snapshot_set_list(AuditTable *t, size_t i, Slice bytes, Error *e) {
        ManifestListHeader h;
        ManifestFile *files = NULL;
        Error reason;
        size_t n = 0;
        int r;

        r = manifest_list_read_header(bytes, &h, &reason);
        if (r >= 0)
                r = manifest_list_read(bytes, &files, &n, &reason);
        if (r == -ENOMEM)
                return error_set(e, r, "out of memory");
        if (r < 0)
                return audit_snapshot_set_list_error(t, i, reason.message) < 0
                               ? error_set(e, -ENOMEM, "out of memory")
                               : 0;
        return audit_snapshot_take_manifests(t, i, h.format_version, h.has_first_row_id,
                                             h.first_row_id, files, n, e);
}

/* --- ranges ------------------------------------------------------------------------------ */

/* A data manifest's range [first_row_id, + added + existing); false when it has none or it
 * cannot be computed (unknown counts, overflow). */
bool audit_manifest_range(const ManifestFile *m, int64_t *ret_first, int64_t *ret_end) {
        int64_t end;

        if (m->content != MANIFEST_CONTENT_DATA || !m->has_first_row_id || !m->has_counts ||
            m->first_row_id < 0 || m->added_rows_count < 0 || m->existing_rows_count < 0 ||
            checked_add_i64(&end, m->first_row_id, m->added_rows_count) ||
            checked_add_i64(&end, end, m->existing_rows_count))
                return false;
        *ret_first = m->first_row_id;
        *ret_end = end;
        return true;
}

/* The entry of snapshot s's list with this path (the first of several), or NULL. */
const ManifestFile *audit_snapshot_find_path(const AuditSnapshot *s, const char *path) {
        const ManifestFile key = { .path = (char *)path }, *k = &key, **found;

        if (!s->is_list_read || s->n_manifests == 0)
                return NULL;
        found = bsearch(&k, s->sorted, s->n_manifests, sizeof(*s->sorted), manifest_ptr_compare);
        while (found && found > s->sorted && manifest_ptr_compare(found - 1, &k) == 0)
                found--;
        return found ? *found : NULL;
}

static bool snapshot_lists_path(const AuditSnapshot *s, const char *path) {
        return audit_snapshot_find_path(s, path) != NULL;
}

/* The parent of snapshot i, when it is in metadata. */
const AuditSnapshot *audit_snapshot_parent(const AuditTable *t, const AuditSnapshot *s) {
        ssize_t p;

        if (!s->has_parent_id)
                return NULL;
        p = audit_table_find_snapshot(t, s->parent_id);
        return p < 0 ? NULL : &t->snapshots[p];
}

/* Whether manifest m of snapshot s got its ids in s: its ids lie at or above s's first-row-id
 * (older snapshots cannot have assigned those), or s's parent is known and does not list it. */
bool audit_manifest_is_new_in(const AuditTable *t, const AuditSnapshot *s, const ManifestFile *m) {
        const AuditSnapshot *parent;

        if (!s->has_first_row_id)
                return false;
        if (m->has_first_row_id && m->first_row_id >= s->first_row_id)
                return true;
        if (!s->has_parent_id)
                return true;
        parent = audit_snapshot_parent(t, s);
        return parent && parent->is_list_read && !snapshot_lists_path(parent, m->path);
}

/* --- gaps -------------------------------------------------------------------------------- */

static int range_compare(const void *a, const void *b) {
        const AuditRange *x = a, *y = b;

        if (x->first != y->first)
                return x->first < y->first ? -1 : 1;
        if (x->end != y->end)
                return x->end < y->end ? -1 : 1;
        return x->owner < y->owner ? -1 : x->owner > y->owner;
}

int audit_table_ranges(const AuditTable *t, AuditRange **ret, size_t *ret_n) {
        AuditRange *ranges = calloc(t->n_snapshots ? t->n_snapshots : 1, sizeof(*ranges));
        size_t n = 0;

        if (!ranges)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_snapshots; i++)
                if (audit_snapshot_has_range(&t->snapshots[i]))
                        ranges[n++] = (AuditRange){ t->snapshots[i].first_row_id,
                                                    audit_snapshot_end(&t->snapshots[i]), i };
        qsort(ranges, n, sizeof(*ranges), range_compare);
        *ret = ranges;
        *ret_n = n;
        return 0;
}

/* Distinct sequence numbers of listed snapshots strictly between lo and hi. */
static int64_t listed_between(const AuditTable *t, int64_t lo, int64_t hi) {
        int64_t n = 0, last = INT64_MIN;

        for (size_t i = 0; i < t->n_snapshots; i++) {
                int64_t seq = t->snapshots[i].sequence_number;

                if (seq > lo && seq < hi && seq != last)
                        n++;
                last = seq;
        }
        return n;
}

/* A gap [first, end) lies between the snapshot whose range ends at `first` (prev, or none)
 * and the one whose range starts at `end` (next, or none). Each commit moves next-row-id by
 * its added-rows, in sequence-number order: ids between two snapshots were assigned by the
 * snapshots committed between them. When some of those sequence numbers are missing from
 * metadata (expired, removed), they explain the gap; when none is, next-row-id moved without
 * a snapshot: a finding. */
static void gap_explain(const AuditTable *t, const AuditSnapshot *prev, const AuditSnapshot *next,
                        AuditGap *g) {
        int64_t lo = prev ? prev->sequence_number : 0;
        int64_t hi = next ? next->sequence_number : t->table->last_sequence_number + 1;
        int64_t missing = hi - lo - 1 - listed_between(t, lo, hi);

        if (hi <= lo)
                missing = 0;
        g->is_explained = missing > 0;
        if (missing > 0)
                (void)snprintf(g->explanation, sizeof(g->explanation),
                               "assigned by %" PRId64
                               " snapshot(s) with sequence numbers between %" PRId64 " and %" PRId64
                               " that are no longer in the table metadata (expired or removed)",
                               missing, lo, hi);
        else
                (void)snprintf(g->explanation, sizeof(g->explanation),
                               "no snapshot is missing between sequence numbers %" PRId64
                               " and %" PRId64 ": next-row-id advanced by %" PRId64
                               " without a snapshot that assigned these ids",
                               lo, hi, g->end - g->first);
}

int audit_table_gaps(const AuditTable *t, AuditGap **ret_gaps, size_t *ret_n) {
        _cleanup_(freep) AuditRange *ranges = NULL;
        _cleanup_(freep) AuditGap *gaps = NULL;
        const AuditSnapshot *prev = NULL;
        int64_t covered = 0, next_row_id = t->table->next_row_id;
        size_t n_ranges, n = 0;

        if (audit_table_ranges(t, &ranges, &n_ranges) < 0)
                return -ENOMEM;
        gaps = calloc(n_ranges + 1, sizeof(*gaps));
        if (!gaps)
                return -ENOMEM;
        for (size_t k = 0; k <= n_ranges && covered < next_row_id; k++) {
                const AuditSnapshot *s = k < n_ranges ? &t->snapshots[ranges[k].owner] : NULL;
                int64_t first = s ? ranges[k].first : next_row_id;

                if (first > next_row_id)
                        first = next_row_id;
                if (first > covered) {
                        gaps[n] = (AuditGap){ .first = covered, .end = first };
                        gap_explain(t, prev, s, &gaps[n]);
                        n++;
                }
                if (s && ranges[k].end > covered) {
                        covered = ranges[k].end;
                        prev = s;
                }
        }
        *ret_gaps = TAKE_PTR(gaps);
        *ret_n = n;
        return 0;
}

/* --- row-id lookup ----------------------------------------------------------------------- */

int audit_table_locate_snapshot(const AuditTable *t, int64_t row_id, size_t *ret_index,
                                AuditGap *ret_gap) {
        _cleanup_(freep) AuditGap *gaps = NULL;
        size_t n;

        if (row_id >= t->table->next_row_id)
                return AUDIT_ROW_AT_OR_ABOVE_NEXT;
        /* Sequence order: the earliest snapshot holding the id assigned it. */
        for (size_t i = 0; i < t->n_snapshots; i++) {
                const AuditSnapshot *s = &t->snapshots[i];

                if (audit_snapshot_has_range(s) && row_id >= s->first_row_id &&
                    row_id < audit_snapshot_end(s)) {
                        *ret_index = i;
                        return AUDIT_ROW_IN_SNAPSHOT;
                }
        }
        if (audit_table_gaps(t, &gaps, &n) < 0)
                return -ENOMEM;
        for (size_t k = 0; k < n; k++)
                if (row_id >= gaps[k].first && row_id < gaps[k].end) {
                        *ret_gap = gaps[k];
                        return AUDIT_ROW_IN_GAP;
                }
        /* Unreachable for a consistent gap computation; report it as a gap of one id. */
        *ret_gap = (AuditGap){ .first = row_id, .end = row_id + 1 };
        (void)snprintf(ret_gap->explanation, sizeof(ret_gap->explanation), "held by no snapshot");
        return AUDIT_ROW_IN_GAP;
}

ssize_t audit_snapshot_find_manifest(const AuditSnapshot *s, int64_t row_id) {
        ssize_t found = -ENOENT;

        for (size_t k = 0; k < s->n_manifests; k++) {
                int64_t first, end;

                if (!audit_manifest_range(&s->manifests[k], &first, &end) || row_id < first ||
                    row_id >= end)
                        continue;
                if (s->has_first_row_id && first >= s->first_row_id)
                        return (ssize_t)k;
                if (found < 0)
                        found = (ssize_t)k;
        }
        return found;
}

ssize_t audit_entries_find_row(const ManifestEntry *entries, size_t n, int64_t row_id) {
        ssize_t found = -ENOENT;

        for (size_t k = 0; k < n; k++) {
                const ManifestEntry *x = &entries[k];

                if (x->content != 0 || x->status == MANIFEST_ENTRY_DELETED ||
                    !x->has_first_row_id || row_id < x->first_row_id ||
                    row_id - x->first_row_id >= x->record_count)
                        continue;
                if (x->is_first_row_id_inherited)
                        return (ssize_t)k;
                if (found < 0)
                        found = (ssize_t)k;
        }
        return found;
}
