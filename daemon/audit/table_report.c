/* SPDX-License-Identifier: Apache-2.0 */
/* The lineage audit's report (table_report.h): the checks of docs/design.md section 4 (spec
 * "Row Lineage") over the model table.c built, their findings, and the whole report as JSON.
 * Pure; reads the model only through table.h and table-internal.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "audit/table-internal.h"
#include "audit/table.h"
#include "audit/table_report.h"

/* --- checks ------------------------------------------------------------------------------ */

/* One check of the report: its findings, the first max_findings of them listed. */
typedef struct Check {
        const char *name;
        const char *rule;
        json_t *findings;
        uint64_t n_findings;
        uint64_t max_findings;
        bool is_oom;
} Check;

static void check_init(Check *c, const char *name, const char *rule, uint64_t max_findings) {
        *c = (Check){ .name = name, .rule = rule, .max_findings = max_findings };
        c->findings = json_array();
        c->is_oom = !c->findings;
}

/* Adds a finding {"message": ..., details...}; `details` (stolen, may be NULL) is an object
 * whose members are merged in. */
static _printf_(3, 4) void check_add(Check *c, json_t *details, const char *fmt, ...) {
        char message[1024];
        json_t *f;
        va_list ap;

        c->n_findings++;
        if (c->n_findings > c->max_findings || c->is_oom) {
                json_decref(details);
                return;
        }
        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        f = json_pack("{s:s}", "message", message);
        if (!f || (details && json_object_update(f, details) < 0) ||
            json_array_append_new(c->findings, f) < 0)
                c->is_oom = true;
        json_decref(details);
}

static json_t *check_json(Check *c) {
        json_t *o;

        if (c->is_oom) {
                c->findings = (json_decref(c->findings), NULL);
                return NULL;
        }
        o = json_pack("{s:s, s:s, s:b, s:I, s:o, s:b}", "name", c->name, "rule", c->rule, "ok",
                      c->n_findings == 0, "n-findings", (json_int_t)c->n_findings, "findings",
                      c->findings, "findings-truncated", c->n_findings > c->max_findings);
        c->findings = NULL;
        return o;
}

/* The checks of one report: the findings not yet handed to its JSON. */
static void checks_deinit(Check (*c)[5]) {
        for (size_t k = 0; k < ELEMENTSOF(*c); k++)
                (*c)[k].findings = (json_decref((*c)[k].findings), NULL);
}

/* A row-id range as JSON: first-row-id and last-row-id (inclusive). */
static json_t *range_json(int64_t first, int64_t end) {
        return json_pack("{s:I, s:I}", "first-row-id", (json_int_t)first, "last-row-id",
                         (json_int_t)(end - 1));
}

static json_t *details_two(const char *key, json_t *a, json_t *b, int64_t first, int64_t end) {
        json_t *d = range_json(first, end);

        if (d)
                (void)json_object_set_new(d, key, json_pack("[o, o]", a, b));
        else {
                json_decref(a);
                json_decref(b);
        }
        return d;
}

typedef struct DistinctManifest {
        const char *path;
        int64_t first, end;
        size_t snapshot; /* the first snapshot (sequence order) listing it */
        size_t order;    /* position in the gathering order, for stable sorts */
} DistinctManifest;

/* By path, then range, then gathering order: equal listings end up side by side. */
static int distinct_by_listing(const void *a, const void *b) {
        const DistinctManifest *x = a, *y = b;
        int c = strcmp(x->path, y->path);

        if (c)
                return c;
        if (x->first != y->first)
                return x->first < y->first ? -1 : 1;
        if (x->end != y->end)
                return x->end < y->end ? -1 : 1;
        return x->order < y->order ? -1 : x->order > y->order;
}

static int distinct_by_range(const void *a, const void *b) {
        const DistinctManifest *x = a, *y = b;

        if (x->first != y->first)
                return x->first < y->first ? -1 : 1;
        if (x->end != y->end)
                return x->end < y->end ? -1 : 1;
        return strcmp(x->path, y->path);
}

static json_t *manifest_ref_json(const AuditTable *t, const DistinctManifest *d) {
        return json_pack("{s:s, s:I, s:I, s:I}", "path", d->path, "first-row-id",
                         (json_int_t)d->first, "last-row-id", (json_int_t)(d->end - 1),
                         "first-listed-by-snapshot-id",
                         (json_int_t)t->snapshots[d->snapshot].snapshot_id);
}

/* Every data manifest listing with a range, once per (path, range): one manifest carried by
 * many snapshots with the ids it got once is one assignment. The same path may hold two
 * disjoint ranges legitimately: a manifest written before the upgrade to v3 gets its ids from
 * the first v3 snapshot of each branch that lists it, so main and a branch forked before the
 * upgrade give it two ranges (rules 1.5 and 1.9). Whether a path keeps its range along one
 * branch is checked per parent and child (check_overlaps). */
static int distinct_manifests(const AuditTable *t, DistinctManifest **ret, size_t *ret_n) {
        _cleanup_(freep) DistinctManifest *all = NULL;
        size_t n = 0, n_unique = 0;

        all = calloc(t->n_manifests_read ? t->n_manifests_read : 1, sizeof(*all));
        if (!all)
                return -ENOMEM;
        for (size_t i = 0; i < t->n_snapshots; i++) {
                const AuditSnapshot *s = &t->snapshots[i];

                for (size_t k = 0; k < s->n_manifests; k++) {
                        DistinctManifest d = { .path = s->manifests[k].path,
                                               .snapshot = i,
                                               .order = n };

                        /* A manifest of no rows holds no id (the next one may start at the same
                         * id). */
                        if (d.path && audit_manifest_range(&s->manifests[k], &d.first, &d.end) &&
                            d.end > d.first)
                                all[n++] = d;
                }
        }
        /* Sequence order of gathering makes the first listing of each assignment the kept one. */
        qsort(all, n, sizeof(*all), distinct_by_listing);
        for (size_t k = 0; k < n; k++) {
                const DistinctManifest *u = n_unique ? &all[n_unique - 1] : NULL;

                if (u && strcmp(u->path, all[k].path) == 0 && u->first == all[k].first &&
                    u->end == all[k].end)
                        continue;
                all[n_unique++] = all[k];
        }
        qsort(all, n_unique, sizeof(*all), distinct_by_range);
        *ret = TAKE_PTR(all);
        *ret_n = n_unique;
        return 0;
}

/* Along one branch a manifest keeps the ids it got: a snapshot listing a manifest of its
 * parent with another range re-assigned them. (Across branches it may differ, see
 * distinct_manifests.) */
static void check_ranges_kept(const AuditTable *t, Check *c) {
        for (size_t i = 0; i < t->n_snapshots; i++) {
                const AuditSnapshot *s = &t->snapshots[i], *p = audit_snapshot_parent(t, s);

                if (!p || !p->is_list_read)
                        continue;
                for (size_t k = 0; k < s->n_manifests; k++) {
                        const ManifestFile *m = &s->manifests[k], *pm;
                        int64_t first, end, pfirst, pend;

                        if (!m->path || !audit_manifest_range(m, &first, &end) || first == end)
                                continue;
                        pm = audit_snapshot_find_path(p, m->path);
                        if (!pm || !audit_manifest_range(pm, &pfirst, &pend) || pfirst == pend ||
                            (pfirst == first && pend == end))
                                continue;
                        check_add(c,
                                  json_pack("{s:s, s:[I, I]}", "manifest", m->path, "snapshot-ids",
                                            (json_int_t)p->snapshot_id, (json_int_t)s->snapshot_id),
                                  "manifest '%s' has ids %" PRId64 "..%" PRId64
                                  " in snapshot %" PRId64 " but %" PRId64 "..%" PRId64
                                  " in snapshot %" PRId64
                                  ", its child: a manifest keeps its ids along a branch",
                                  m->path, pfirst, pend - 1, p->snapshot_id, first, end - 1,
                                  s->snapshot_id);
                }
        }
}

/* Check 1: no id is assigned twice. A manifest keeps its range along a branch; snapshot ranges
 * are disjoint; distinct assignments (path and range) are disjoint, on one branch or across
 * branches, since every assignment draws from the one table-wide next-row-id; a manifest that
 * got its ids in a snapshot lies inside that snapshot's range. */
static void check_overlaps(const AuditTable *t, const AuditRange *ranges, size_t n_ranges,
                           const DistinctManifest *dm, size_t n_dm, Check *c) {
        int64_t max_end = INT64_MIN;
        size_t owner = 0;

        check_ranges_kept(t, c);

        for (size_t k = 0; k < n_ranges; k++) {
                const AuditSnapshot *a = &t->snapshots[owner], *b = &t->snapshots[ranges[k].owner];

                if (k > 0 && ranges[k].first < max_end) {
                        int64_t end = ranges[k].end < max_end ? ranges[k].end : max_end;

                        check_add(c,
                                  details_two("snapshot-ids", json_integer(a->snapshot_id),
                                              json_integer(b->snapshot_id), ranges[k].first, end),
                                  "snapshots %" PRId64 " (sequence %" PRId64 ") and %" PRId64
                                  " (sequence %" PRId64 ") both hold row ids %" PRId64 "..%" PRId64,
                                  a->snapshot_id, a->sequence_number, b->snapshot_id,
                                  b->sequence_number, ranges[k].first, end - 1);
                }
                if (ranges[k].end > max_end) {
                        max_end = ranges[k].end;
                        owner = ranges[k].owner;
                }
        }

        max_end = INT64_MIN;
        owner = 0;
        for (size_t k = 0; k < n_dm; k++) {
                if (k > 0 && dm[k].first < max_end) {
                        int64_t end = dm[k].end < max_end ? dm[k].end : max_end;

                        check_add(c,
                                  details_two("manifests", manifest_ref_json(t, &dm[owner]),
                                              manifest_ref_json(t, &dm[k]), dm[k].first, end),
                                  "manifests '%s' and '%s' both hold row ids %" PRId64 "..%" PRId64,
                                  dm[owner].path, dm[k].path, dm[k].first, end - 1);
                }
                if (dm[k].end > max_end) {
                        max_end = dm[k].end;
                        owner = k;
                }
        }

        for (size_t i = 0; i < t->n_snapshots; i++) {
                const AuditSnapshot *s = &t->snapshots[i];

                if (!s->has_first_row_id)
                        continue;
                for (size_t k = 0; k < s->n_manifests; k++) {
                        const ManifestFile *m = &s->manifests[k];
                        int64_t first, end;

                        if (!audit_manifest_range(m, &first, &end) || first == end ||
                            !audit_manifest_is_new_in(t, s, m))
                                continue;
                        if (first >= s->first_row_id && end <= audit_snapshot_end(s))
                                continue;
                        check_add(c,
                                  json_pack("{s:I, s:s, s:I, s:I}", "snapshot-id",
                                            (json_int_t)s->snapshot_id, "manifest", m->path,
                                            "first-row-id", (json_int_t)first, "last-row-id",
                                            (json_int_t)(end - 1)),
                                  "manifest '%s' got its ids in snapshot %" PRId64
                                  " but holds %" PRId64 "..%" PRId64
                                  ", outside the snapshot's range %" PRId64 "..%" PRId64
                                  " (first-row-id %" PRId64 ", added-rows %" PRId64 ")",
                                  m->path, s->snapshot_id, first, end - 1, s->first_row_id,
                                  audit_snapshot_end(s) - 1, s->first_row_id, s->added_rows);
                }
        }
}

/* Check 2: next-row-id lies above every id a snapshot or manifest holds. */
static void check_next_row_id(const AuditTable *t, const AuditRange *ranges, size_t n_ranges,
                              const DistinctManifest *dm, size_t n_dm, Check *c) {
        int64_t next = t->table->next_row_id;

        for (size_t k = 0; k < n_ranges; k++) {
                const AuditSnapshot *s = &t->snapshots[ranges[k].owner];

                if (ranges[k].end > next)
                        check_add(c,
                                  json_pack("{s:I, s:I}", "snapshot-id", (json_int_t)s->snapshot_id,
                                            "last-row-id", (json_int_t)(ranges[k].end - 1)),
                                  "snapshot %" PRId64 " holds row ids up to %" PRId64
                                  ", not below next-row-id %" PRId64,
                                  s->snapshot_id, ranges[k].end - 1, next);
        }
        for (size_t k = 0; k < n_dm; k++)
                if (dm[k].end > next)
                        check_add(c,
                                  json_pack("{s:s, s:I}", "manifest", dm[k].path, "last-row-id",
                                            (json_int_t)(dm[k].end - 1)),
                                  "manifest '%s' holds row ids up to %" PRId64
                                  ", not below next-row-id %" PRId64,
                                  dm[k].path, dm[k].end - 1, next);
}

/* Check 3: every snapshot made with row lineage (and every later one) has a first-row-id, a
 * v3 manifest list that agrees with it, and a first_row_id on each data manifest. */
static void check_first_row_ids(const AuditTable *t, Check *c) {
        bool is_lineage_started = false;
        int64_t started_seq = 0;

        for (size_t i = 0; i < t->n_snapshots; i++) {
                const AuditSnapshot *s = &t->snapshots[i];

                if (!s->has_first_row_id) {
                        if (is_lineage_started && s->sequence_number > started_seq)
                                check_add(c,
                                          json_pack("{s:I}", "snapshot-id",
                                                    (json_int_t)s->snapshot_id),
                                          "snapshot %" PRId64 " (sequence %" PRId64
                                          ") has no first-row-id, but "
                                          "row lineage started at sequence %" PRId64,
                                          s->snapshot_id, s->sequence_number, started_seq);
                        continue;
                }
                if (!is_lineage_started) {
                        is_lineage_started = true;
                        started_seq = s->sequence_number;
                }
                if (!s->is_list_read)
                        continue;
                if (s->list_format_version < 3)
                        check_add(c,
                                  json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)s->snapshot_id,
                                            "manifest-list",
                                            s->manifest_list ? s->manifest_list : ""),
                                  "snapshot %" PRId64
                                  " has a first-row-id but a format %d manifest list",
                                  s->snapshot_id, s->list_format_version);
                else if (!s->list_has_first_row_id || s->list_first_row_id != s->first_row_id)
                        check_add(c,
                                  json_pack("{s:I, s:s}", "snapshot-id", (json_int_t)s->snapshot_id,
                                            "manifest-list",
                                            s->manifest_list ? s->manifest_list : ""),
                                  "the manifest list of snapshot %" PRId64
                                  " does not carry its first-row-id %" PRId64,
                                  s->snapshot_id, s->first_row_id);
                for (size_t k = 0; k < s->n_manifests; k++) {
                        const ManifestFile *m = &s->manifests[k];

                        if (m->content == MANIFEST_CONTENT_DATA && !m->has_first_row_id)
                                check_add(c,
                                          json_pack("{s:I, s:s}", "snapshot-id",
                                                    (json_int_t)s->snapshot_id, "manifest",
                                                    m->path ? m->path : ""),
                                          "snapshot %" PRId64
                                          " lists data manifest '%s' without a first_row_id",
                                          s->snapshot_id, m->path ? m->path : "");
                }
        }
}

static json_t *gap_json(const AuditGap *g) {
        json_t *o = range_json(g->first, g->end);

        if (o && json_object_update_new(o, json_pack("{s:I, s:b, s:s}", "rows",
                                                     (json_int_t)(g->end - g->first), "explained",
                                                     g->is_explained, "explanation",
                                                     g->explanation)) < 0)
                o = (json_decref(o), NULL);
        return o;
}

/* An array of JSON arrays, each slot owned until set to NULL. */
typedef struct JsonArrays {
        json_t **items;
        size_t n_items;
} JsonArrays;

static void json_arrays_deinit(JsonArrays *a) {
        if (a->items)
                for (size_t i = 0; i < a->n_items; i++)
                        json_decref(a->items[i]);
        a->items = (free(a->items), NULL);
}

/* Per snapshot: the refs whose ancestry holds it (walking parent ids, at most n steps); one
 * array per snapshot, t->n_snapshots of them (owned). */
static json_t **refs_per_snapshot(const AuditTable *t) {
        _cleanup_(json_arrays_deinit) JsonArrays arrays = { .n_items = t->n_snapshots };

        arrays.items = calloc(t->n_snapshots ? t->n_snapshots : 1, sizeof(*arrays.items));
        if (!arrays.items)
                return NULL;
        for (size_t i = 0; i < t->n_snapshots; i++)
                if (!(arrays.items[i] = json_array()))
                        return NULL;
        for (size_t r = 0; r < t->n_refs; r++) {
                ssize_t i = audit_table_find_snapshot(t, t->refs[r].snapshot_id);

                for (size_t steps = 0; i >= 0 && steps < t->n_snapshots; steps++) {
                        if (json_array_append_new(arrays.items[i], json_string(t->refs[r].name)) <
                            0)
                                return NULL;
                        if (!t->snapshots[i].has_parent_id)
                                break;
                        i = audit_table_find_snapshot(t, t->snapshots[i].parent_id);
                }
        }
        return TAKE_PTR(arrays.items);
}

json_t *audit_table_refs_containing(const AuditTable *t, size_t i) {
        json_t *names = json_array();

        for (size_t r = 0; names && r < t->n_refs; r++) {
                ssize_t k = audit_table_find_snapshot(t, t->refs[r].snapshot_id);

                for (size_t steps = 0; k >= 0 && steps < t->n_snapshots; steps++) {
                        if ((size_t)k == i) {
                                if (json_array_append_new(names, json_string(t->refs[r].name)) < 0)
                                        names = (json_decref(names), NULL);
                                break;
                        }
                        if (!t->snapshots[k].has_parent_id)
                                break;
                        k = audit_table_find_snapshot(t, t->snapshots[k].parent_id);
                }
        }
        return names;
}

static json_t *nullable_i64(bool has, int64_t v) {
        return has ? json_integer(v) : json_null();
}

static json_t *snapshot_json(const AuditTable *t, const AuditSnapshot *s,
                             json_t *refs /* stolen */) {
        json_t *assigned = json_array();
        int64_t assigned_rows = 0;
        json_t *o;

        for (size_t k = 0; assigned && k < s->n_manifests; k++) {
                const ManifestFile *m = &s->manifests[k];
                int64_t first, end;

                if (!audit_manifest_range(m, &first, &end) || !audit_manifest_is_new_in(t, s, m))
                        continue;
                assigned_rows += end - first;
                if (json_array_append_new(assigned,
                                          json_pack("{s:s, s:I, s:I, s:I, s:I}", "path", m->path,
                                                    "first-row-id", (json_int_t)first,
                                                    "last-row-id", (json_int_t)(end - 1),
                                                    "added-rows", (json_int_t)m->added_rows_count,
                                                    "existing-rows",
                                                    (json_int_t)m->existing_rows_count)) < 0)
                        assigned = (json_decref(assigned), NULL);
        }
        o = json_pack("{s:I, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:s?, s:o, s:b, s:o, s:o, "
                      "s:I, s:o, s:o}",
                      "snapshot-id", (json_int_t)s->snapshot_id, "parent-snapshot-id",
                      nullable_i64(s->has_parent_id, s->parent_id), "sequence-number",
                      (json_int_t)s->sequence_number, "timestamp-ms", (json_int_t)s->timestamp_ms,
                      "operation", s->operation ? json_string(s->operation) : json_null(),
                      "first-row-id", nullable_i64(s->has_first_row_id, s->first_row_id),
                      "added-rows", nullable_i64(s->has_first_row_id, s->added_rows), "last-row-id",
                      nullable_i64(audit_snapshot_has_range(s), audit_snapshot_end(s) - 1), "refs",
                      refs, "manifest-list", s->manifest_list, "manifest-list-format-version",
                      nullable_i64(s->is_list_read, s->list_format_version), "manifest-list-read",
                      s->is_list_read, "manifest-list-has-row-lineage",
                      s->is_list_read ? json_boolean(s->list_format_version >= 3) : json_null(),
                      "manifests", nullable_i64(s->is_list_read, (int64_t)s->n_manifests),
                      "assigned-rows", (json_int_t)assigned_rows, "reserved-unused-rows",
                      nullable_i64(s->has_first_row_id && s->is_list_read,
                                   s->added_rows - assigned_rows),
                      "manifests-assigned", assigned);
        return o;
}

json_t *audit_table_report(const AuditTable *t) {
        _cleanup_(freep) AuditRange *ranges = NULL;
        _cleanup_(freep) DistinctManifest *dm = NULL;
        _cleanup_(freep) AuditGap *gaps = NULL;
        _cleanup_(json_decrefp) json_t *report = NULL;
        _cleanup_(json_arrays_deinit) JsonArrays per_snapshot = { .n_items = t->n_snapshots };
        json_t *snapshots, *refs, *gap_list, *checks;
        size_t n_ranges, n_dm, n_gaps;
        bool is_lineage = t->table->format_version >= 3;
        bool ok = true;
        _cleanup_(checks_deinit) Check c[5] = { 0 };

        check_init(
                &c[0], "no-overlapping-ranges",
                "a manifest keeps its ids along a branch; snapshot ranges are disjoint; distinct "
                "assignments of ids to data manifests are disjoint; a manifest lies inside the "
                "range of "
                "the snapshot that assigned its ids",
                t->limits.max_findings);
        check_init(&c[1], "next-row-id-above-assigned",
                   "next-row-id is above every id a snapshot or manifest holds",
                   t->limits.max_findings);
        check_init(&c[2], "data-manifests-have-first-row-id",
                   "snapshots made with row lineage have a v3 manifest list carrying their "
                   "first-row-id and "
                   "a first_row_id on every data manifest",
                   t->limits.max_findings);
        check_init(&c[3], "gaps-explained",
                   "ids of [0, next-row-id) held by no snapshot were assigned by snapshots no "
                   "longer in metadata",
                   t->limits.max_findings);
        check_init(&c[4], "manifest-lists-readable",
                   "the manifest list of every snapshot can be read", t->limits.max_findings);

        if (audit_table_ranges(t, &ranges, &n_ranges) < 0 ||
            distinct_manifests(t, &dm, &n_dm) < 0 ||
            (is_lineage ? audit_table_gaps(t, &gaps, &n_gaps) : (n_gaps = 0, 0)) < 0)
                return NULL;
        if (is_lineage) {
                check_overlaps(t, ranges, n_ranges, dm, n_dm, &c[0]);
                check_next_row_id(t, ranges, n_ranges, dm, n_dm, &c[1]);
                check_first_row_ids(t, &c[2]);
        }
        for (size_t i = 0; i < n_gaps; i++)
                if (!gaps[i].is_explained)
                        check_add(&c[3], range_json(gaps[i].first, gaps[i].end),
                                  "ids %" PRId64 "..%" PRId64 ": %s", gaps[i].first,
                                  gaps[i].end - 1, gaps[i].explanation);
        for (size_t i = 0; i < t->n_snapshots; i++) {
                const AuditSnapshot *s = &t->snapshots[i];

                if (s->list_error || !s->manifest_list)
                        check_add(&c[4],
                                  json_pack("{s:I}", "snapshot-id", (json_int_t)s->snapshot_id),
                                  "the manifest list of snapshot %" PRId64 " cannot be read: %s",
                                  s->snapshot_id,
                                  s->list_error ? s->list_error : "the snapshot names none");
        }

        report = json_pack("{s:s?, s:i, s:b, s:o, s:I}", "table-uuid", t->table->uuid,
                           "format-version", t->table->format_version, "row-lineage", is_lineage,
                           "next-row-id", nullable_i64(is_lineage, t->table->next_row_id),
                           "last-sequence-number", (json_int_t)t->table->last_sequence_number);
        refs = json_object();
        snapshots = json_array();
        gap_list = json_array();
        checks = json_array();
        if (!report || json_object_set_new(report, "refs", refs) < 0 ||
            json_object_set_new(report, "snapshots", snapshots) < 0 ||
            json_object_set_new(report, "gaps", gap_list) < 0 ||
            json_object_set_new(report, "checks", checks) < 0)
                return NULL;
        for (size_t r = 0; r < t->n_refs; r++)
                if (json_object_set_new(refs, t->refs[r].name,
                                        json_pack("{s:s, s:I}", "type",
                                                  t->refs[r].is_branch ? "branch" : "tag",
                                                  "snapshot-id",
                                                  (json_int_t)t->refs[r].snapshot_id)) < 0)
                        return NULL;
        per_snapshot.items = refs_per_snapshot(t);
        if (!per_snapshot.items)
                return NULL;
        for (size_t i = 0; i < t->n_snapshots; i++) {
                json_t *s = snapshot_json(t, &t->snapshots[i], TAKE_PTR(per_snapshot.items[i]));

                if (json_array_append_new(snapshots, s) < 0)
                        return NULL; /* cleanup drops the later snapshots' refs */
        }
        for (size_t i = 0; i < n_gaps; i++)
                if (json_array_append_new(gap_list, gap_json(&gaps[i])) < 0)
                        return NULL;
        for (size_t k = 0; k < ELEMENTSOF(c); k++) {
                ok = ok && c[k].n_findings == 0;
                if (json_array_append_new(checks, check_json(&c[k])) < 0)
                        return NULL;
        }
        if (json_object_set_new(report, "ok", json_boolean(ok)) < 0)
                return NULL;
        return TAKE_PTR(report);
}
