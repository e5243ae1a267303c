/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest merging (manifest_merge.h): Java's MergeAppend for the parent's manifests only. The
 * rewrite is manifest_rewriter.c's (datums copied whole, the inherited fields written out); it
 * never guesses a schema: a bin that needs one stays unmerged. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "avro/ocf.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_merge.h"
#include "iceberg/manifest_rewriter.h"
#include "util/checked.h"
#include "util/parse.h"

/* --- table properties ----------------------------------------------------------------------- */

/* Integer.parseInt / Long.parseLong: an optional sign, then decimal digits. */
static int merge_parse_signed(const char *s, int64_t *ret) {
        bool is_negative = s[0] == '-';
        uint64_t v;

        if (s[0] == '-' || s[0] == '+')
                s++;
        if (s[0] == '-' || s[0] == '+' || parse_u64(s, &v) < 0)
                return -EINVAL;
        if (is_negative) {
                if (v > (uint64_t)INT64_MAX + 1)
                        return -EINVAL;
                *ret = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
                return 0;
        }
        if (v > INT64_MAX)
                return -EINVAL;
        *ret = (int64_t)v;
        return 0;
}

int manifest_merge_policy(const TableMetadata *t, ManifestMergePolicy *ret, Error *e) {
        const char *enabled = table_property(t, TABLE_PROPERTY_MANIFEST_MERGE_ENABLED);
        const char *count = table_property(t, TABLE_PROPERTY_MANIFEST_MIN_MERGE_COUNT);
        const char *size = table_property(t, TABLE_PROPERTY_MANIFEST_TARGET_SIZE_BYTES);
        ManifestMergePolicy p = {
                .is_enabled = true,
                .min_count_to_merge = MANIFEST_MERGE_DEFAULT_MIN_COUNT,
                .target_size_bytes = MANIFEST_MERGE_DEFAULT_TARGET_SIZE_BYTES,
        };
        int64_t v;

        /* Boolean.parseBoolean: anything but "true" (any case) is false, never an error. */
        if (enabled)
                p.is_enabled = strcasecmp(enabled, "true") == 0;
        if (count) {
                if (merge_parse_signed(count, &v) < 0 || v < INT32_MIN || v > INT32_MAX)
                        return error_set(e, -EINVAL,
                                         "table property '%s' is '%s', expected an int (as "
                                         "Iceberg Java reads it)",
                                         TABLE_PROPERTY_MANIFEST_MIN_MERGE_COUNT, count);
                p.min_count_to_merge = (int32_t)v;
        }
        if (size) {
                if (merge_parse_signed(size, &v) < 0)
                        return error_set(e, -EINVAL,
                                         "table property '%s' is '%s', expected a long (as "
                                         "Iceberg Java reads it)",
                                         TABLE_PROPERTY_MANIFEST_TARGET_SIZE_BYTES, size);
                p.target_size_bytes = v;
        }
        *ret = p;
        return 0;
}

/* --- the plan ------------------------------------------------------------------------------ */

void manifest_merge_plan_deinit(ManifestMergePlan *p) {
        for (size_t i = 0; i < p->n_bins; i++)
                free(p->bins[i].inputs);
        free(p->bins);
        *p = (ManifestMergePlan){ 0 };
}

static bool merge_is_candidate(const ManifestFile *m) {
        /* Null counts (old v1 lists) are counted later; an entry without a snapshot id has
         * nothing to inherit from. Neither is worth a guess. */
        return m->path && m->has_counts && m->has_added_snapshot_id && m->length >= 0 &&
               (m->content == MANIFEST_CONTENT_DATA || m->content == MANIFEST_CONTENT_DELETES);
}

/* Adds a bin of group[first..first+n) (reversed back into list order) to the plan. */
static int merge_plan_add(ManifestMergePlan *p, const size_t *group, size_t first, size_t n) {
        ManifestMergeBin *grown = reallocarray(p->bins, p->n_bins + 1, sizeof(*p->bins));
        size_t *inputs;

        if (!grown)
                return -ENOMEM;
        p->bins = grown;
        inputs = calloc(n, sizeof(*inputs));
        if (!inputs)
                return -ENOMEM;
        memcpy(inputs, &group[first], n * sizeof(*inputs));
        p->bins[p->n_bins++] = (ManifestMergeBin){ .inputs = inputs, .n_inputs = n };
        p->n_inputs += n;
        return 0;
}

/* ListPacker(target, lookback 1, largestBinFirst false).packEnd over one group: walking from
 * the end, an item joins the open bin while the bin's weight stays <= target, else the bin is
 * closed and a new one opened. So every bin is a run of adjacent manifests and the under-filled
 * one is the first, holding the newest manifest: it is merged the next time (Java's reason for
 * packing from the end). */
static int merge_plan_group(ManifestMergePlan *p, const ManifestFile *files, const size_t *group,
                            size_t n, const ManifestMergePolicy *policy) {
        size_t lo = n, end = n; /* the open bin: group[lo..end) */
        int64_t weight = 0;
        int r;

        for (size_t k = n; k-- > 0;) {
                int64_t w = files[group[k]].length, sum;

                /* Bin.canAdd: binWeight + weight <= targetWeight. */
                if (lo == end ||
                    (!checked_add_i64(&sum, weight, w) && sum <= policy->target_size_bytes)) {
                        weight = lo == end ? w : sum;
                        lo = k;
                        continue;
                }
                /* group[lo..end) is closed and cannot hold the group's first manifest. */
                if (end - lo > 1 && (r = merge_plan_add(p, group, lo, end - lo)) < 0)
                        return r;
                end = lo;
                lo = k;
                weight = w;
        }
        /* The last bin holds the group's first (newest) manifest: merged only from
         * min-count-to-merge manifests on. */
        if (end - lo > 1 && (int64_t)(end - lo) >= (int64_t)policy->min_count_to_merge)
                return merge_plan_add(p, group, lo, end - lo);
        return 0;
}

static int merge_bin_compare(const void *a, const void *b) {
        const ManifestMergeBin *x = a, *y = b;

        return x->inputs[0] < y->inputs[0] ? -1 : x->inputs[0] > y->inputs[0];
}

int manifest_merge_plan(const ManifestFile *files, size_t n, const ManifestMergePolicy *policy,
                        ManifestMergePlan *ret) {
        _cleanup_(freep) size_t *group = NULL;
        _cleanup_(freep) bool *is_grouped = NULL;
        ManifestMergePlan p = { 0 };
        int r;

        *ret = (ManifestMergePlan){ 0 };
        if (!policy->is_enabled || n < 2)
                return 0;
        group = calloc(n, sizeof(*group));
        is_grouped = calloc(n, sizeof(*is_grouped));
        if (!group || !is_grouped)
                return -ENOMEM;
        /* Groups by (content, spec), each in list order: data never mixes with deletes. */
        for (size_t i = 0; i < n; i++) {
                size_t n_group = 0;

                if (is_grouped[i] || !merge_is_candidate(&files[i]))
                        continue;
                for (size_t k = i; k < n; k++)
                        if (!is_grouped[k] && merge_is_candidate(&files[k]) &&
                            files[k].content == files[i].content &&
                            files[k].partition_spec_id == files[i].partition_spec_id) {
                                is_grouped[k] = true;
                                group[n_group++] = k;
                        }
                r = merge_plan_group(&p, files, group, n_group, policy);
                if (r < 0) {
                        manifest_merge_plan_deinit(&p);
                        return r;
                }
        }
        if (p.n_bins > 1)
                qsort(p.bins, p.n_bins, sizeof(*p.bins), merge_bin_compare);
        *ret = p;
        return 0;
}

/* --- partition summaries -------------------------------------------------------------------- */

static int64_t merge_le_signed(const uint8_t *p, size_t len) {
        uint64_t v = 0;

        for (size_t i = len; i > 0; i--)
                v = (v << 8) | p[i - 1];
        if (len < 8 && (v >> (len * 8 - 1)) & 1)
                v |= ~UINT64_C(0) << (len * 8); /* sign-extend */
        return (int64_t)v;
}

static int merge_cmp_i64(int64_t a, int64_t b) {
        return a < b ? -1 : a > b;
}

/* Float.compare / Double.compare: -0.0 below 0.0, NaN above everything. */
static int merge_cmp_double(double a, double b) {
        if (isnan(a) || isnan(b))
                return isnan(a) - isnan(b);
        if (a < b)
                return -1;
        if (a > b)
                return 1;
        return (int)(signbit(b) != 0) - (int)(signbit(a) != 0);
}

static int merge_cmp_unsigned_bytes(Slice a, Slice b) {
        size_t n = a.len < b.len ? a.len : b.len;
        int c = n ? memcmp(a.ptr, b.ptr, n) : 0;

        if (c != 0)
                return c < 0 ? -1 : 1;
        return a.len < b.len ? -1 : a.len > b.len;
}

/* Decodes one UTF-8 code point (input we wrote or Java wrote: invalid bytes count as
 * themselves, which keeps the order total). */
static uint32_t merge_utf8_next(Slice s, size_t *i) {
        const uint8_t *p = s.ptr + *i;
        size_t left = s.len - *i;
        uint32_t cp = p[0];
        size_t n = cp < 0x80 ? 1 : cp >= 0xf0 ? 4 : cp >= 0xe0 ? 3 : cp >= 0xc0 ? 2 : 1;

        if (n > left)
                n = 1;
        if (n > 1) {
                cp &= 0xffu >> (n + 1);
                for (size_t k = 1; k < n; k++)
                        cp = (cp << 6) | (p[k] & 0x3fu);
        }
        *i += n;
        return cp;
}

/* Java compares strings by UTF-16 code unit (Comparators.charSequences): a code point above
 * U+FFFF sorts by its high surrogate (0xD800..0xDBFF), below U+E000..U+FFFF. */
static uint32_t merge_utf16_key(uint32_t cp) {
        return cp >= 0x10000 ? 0xd800u + ((cp - 0x10000) >> 10) : cp;
}

static int merge_cmp_string(Slice a, Slice b) {
        size_t i = 0, k = 0;

        while (i < a.len && k < b.len) {
                uint32_t x = merge_utf8_next(a, &i), y = merge_utf8_next(b, &k);

                if (x == y)
                        continue;
                if (merge_utf16_key(x) != merge_utf16_key(y))
                        return merge_utf16_key(x) < merge_utf16_key(y) ? -1 : 1;
                return x < y ? -1 : 1; /* same high surrogate: the low one orders as the cp */
        }
        return (i < a.len) - (k < b.len);
}

/* Unscaled decimals: big-endian two's complement of any length. */
static int merge_cmp_decimal(Slice a, Slice b) {
        bool na = a.len && (a.ptr[0] & 0x80), nb = b.len && (b.ptr[0] & 0x80);
        size_t n = a.len > b.len ? a.len : b.len;

        if (na != nb)
                return na ? -1 : 1;
        for (size_t i = 0; i < n; i++) {
                uint8_t fill = na ? 0xff : 0x00;
                uint8_t x = i + a.len >= n ? a.ptr[i + a.len - n] : fill;
                uint8_t y = i + b.len >= n ? b.ptr[i + b.len - n] : fill;

                if (x != y)
                        return x < y ? -1 : 1;
        }
        return 0;
}

/* Orders two single values of type t; -EBADMSG for a wrong size, -EOPNOTSUPP (uuid). */
static int merge_value_compare(const IcebergType *t, Slice a, Slice b, int *ret) {
        switch (t->id) {
        case ICEBERG_TYPE_BOOLEAN:
                if (a.len != 1 || b.len != 1)
                        return -EBADMSG;
                *ret = merge_cmp_i64(a.ptr[0] != 0, b.ptr[0] != 0);
                return 0;
        case ICEBERG_TYPE_INT:
        case ICEBERG_TYPE_DATE:
                if (a.len != 4 || b.len != 4)
                        return -EBADMSG;
                *ret = merge_cmp_i64(merge_le_signed(a.ptr, 4), merge_le_signed(b.ptr, 4));
                return 0;
        case ICEBERG_TYPE_LONG:
        case ICEBERG_TYPE_TIME:
        case ICEBERG_TYPE_TIMESTAMP:
        case ICEBERG_TYPE_TIMESTAMPTZ:
        case ICEBERG_TYPE_TIMESTAMP_NS:
        case ICEBERG_TYPE_TIMESTAMPTZ_NS:
                /* Java also reads an int-sized long bound (a promoted column). */
                if ((a.len != 8 && a.len != 4) || (b.len != 8 && b.len != 4))
                        return -EBADMSG;
                *ret = merge_cmp_i64(merge_le_signed(a.ptr, a.len), merge_le_signed(b.ptr, b.len));
                return 0;
        case ICEBERG_TYPE_FLOAT: {
                float x, y;

                if (a.len != 4 || b.len != 4)
                        return -EBADMSG;
                memcpy(&x, a.ptr, 4); /* little-endian hosts only: see the static_assert */
                memcpy(&y, b.ptr, 4);
                *ret = merge_cmp_double(x, y);
                return 0;
        }
        case ICEBERG_TYPE_DOUBLE: {
                double x, y;

                if (a.len != 8 || b.len != 8)
                        return -EBADMSG;
                memcpy(&x, a.ptr, 8);
                memcpy(&y, b.ptr, 8);
                *ret = merge_cmp_double(x, y);
                return 0;
        }
        case ICEBERG_TYPE_STRING:
                *ret = merge_cmp_string(a, b);
                return 0;
        case ICEBERG_TYPE_FIXED:
        case ICEBERG_TYPE_BINARY:
                *ret = merge_cmp_unsigned_bytes(a, b);
                return 0;
        case ICEBERG_TYPE_DECIMAL:
                *ret = merge_cmp_decimal(a, b);
                return 0;
        case ICEBERG_TYPE_UUID:
        default:
                /* Java versions differ on UUID order (signed halves, then unsigned bytes): a
                 * bound that is too narrow for one of them would prune wrongly. */
                return -EOPNOTSUPP;
        }
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "single values are little-endian and read with memcpy");

static int merge_bound(bool *has, Buf *bound, bool from_has, const Buf *from, const IcebergType *t,
                       int want) {
        int c, r;

        if (!from_has)
                return 0;
        if (*has) {
                r = merge_value_compare(t, buf_slice(bound), buf_slice(from), &c);
                if (r < 0)
                        return r;
                if (c == 0 || (c < 0) == (want < 0))
                        return 0; /* ours is already the least (want < 0) or greatest */
        }
        bound->len = 0;
        if (buf_append(bound, from->data, from->len) < 0)
                return -ENOMEM;
        *has = true;
        return 0;
}

int manifest_merge_summary(PartitionFieldSummary *into, const PartitionFieldSummary *from,
                           const IcebergType *type) {
        int r;

        if (type->id == ICEBERG_TYPE_UUID)
                return -EOPNOTSUPP;
        r = merge_bound(&into->has_lower_bound, &into->lower_bound, from->has_lower_bound,
                        &from->lower_bound, type, -1);
        if (r == 0)
                r = merge_bound(&into->has_upper_bound, &into->upper_bound, from->has_upper_bound,
                                &from->upper_bound, type, 1);
        if (r < 0)
                return r;
        into->contains_null = into->contains_null || from->contains_null;
        into->has_contains_nan = into->has_contains_nan && from->has_contains_nan;
        into->contains_nan = into->has_contains_nan && (into->contains_nan || from->contains_nan);
        return 0;
}

static void merge_summaries_free(PartitionFieldSummary *s, size_t n) {
        for (size_t i = 0; s && i < n; i++) {
                buf_deinit(&s[i].lower_bound);
                buf_deinit(&s[i].upper_bound);
        }
        free(s);
}

/* The merged list entry's summaries; leaves has_partitions false (null: "may match") when a
 * type or an input's summary is unknown. */
static int merge_partitions(const ManifestMergeInput *inputs, size_t n,
                            const ManifestMergeTarget *t, ManifestFile *out) {
        size_t n_fields = t->n_partition_types;
        PartitionFieldSummary *s;
        int r = 0;

        if (!t->partition_types)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (!inputs[i].file->has_partitions || inputs[i].file->n_partitions != n_fields)
                        return 0;
        s = calloc(n_fields ? n_fields : 1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        for (size_t f = 0; f < n_fields; f++) {
                /* Bounds of a partition value are short (at most a truncated string or a
                 * decimal); the inputs' own sizes bound them. */
                buf_init(&s[f].lower_bound, SIZE_MAX);
                buf_init(&s[f].upper_bound, SIZE_MAX);
                s[f].has_contains_nan = true;
        }
        for (size_t i = 0; r == 0 && i < n; i++)
                for (size_t f = 0; r == 0 && f < n_fields; f++)
                        r = manifest_merge_summary(&s[f], &inputs[i].file->partitions[f],
                                                   &t->partition_types[f]);
        if (r < 0) {
                merge_summaries_free(s, n_fields);
                return r == -ENOMEM ? r : 0;
        }
        out->has_partitions = true;
        out->partitions = s;
        out->n_partitions = n_fields;
        return 0;
}

/* --- the rewrite ---------------------------------------------------------------------------- */

static bool merge_slice_eq(Slice a, Slice b) {
        return (!a.ptr) == (!b.ptr) && a.len == b.len &&
               (a.len == 0 || !memcmp(a.ptr, b.ptr, a.len));
}

/* Whether every input can be written with the first one's schema and metadata. */
static int merge_check_inputs(OcfReader **readers, size_t n, Error *e) {
        static const char *const same_meta[] = { "format-version", "content", "partition-spec-id" };

        for (size_t i = 1; i < n; i++) {
                if (!json_equal(ocf_reader_schema_json(readers[0]),
                                ocf_reader_schema_json(readers[i])))
                        return error_set(e, MANIFEST_MERGE_E_INCOMPATIBLE,
                                         "input %zu has another writer schema than input 0", i);
                for (size_t k = 0; k < sizeof(same_meta) / sizeof(*same_meta); k++)
                        if (!merge_slice_eq(ocf_reader_meta(readers[0], same_meta[k]),
                                            ocf_reader_meta(readers[i], same_meta[k])))
                                return error_set(e, MANIFEST_MERGE_E_INCOMPATIBLE,
                                                 "input %zu has another '%s' than input 0", i,
                                                 same_meta[k]);
        }
        return 0;
}

/* Every live entry EXISTING with its inherited values; DELETED ones dropped (all are of earlier
 * snapshots: gone for good). */
static int merge_decide(void *userdata, const ManifestFieldsLayout *l, avro_value_t *datum,
                        const ManifestEntry *x, size_t index, ManifestRewriteAction *ret,
                        Error *e) {
        (void)userdata, (void)l, (void)datum, (void)index, (void)e;
        *ret = (ManifestRewriteAction){
                .is_written = x->status != MANIFEST_ENTRY_DELETED,
                .status = MANIFEST_ENTRY_EXISTING,
        };
        return 0;
}

static void merge_readers_free(OcfReader **readers, size_t n) {
        for (size_t i = 0; readers && i < n; i++)
                ocf_reader_free(readers[i]);
        free(readers);
}

/* Opens every input and the rewriter; the rewriter's "incompatible" becomes the merge's. */
static int merge_open(const ManifestMergeInput *inputs, size_t n, const ManifestMergeTarget *target,
                      OcfReader **readers, ManifestRewriter *w, Error *e) {
        int r = 0;

        for (size_t i = 0; r == 0 && i < n; i++) {
                r = ocf_reader_open(inputs[i].bytes, &readers[i], e);
                if (r < 0)
                        r = error_prefix(e, r, "input %zu '%s'", i, inputs[i].file->path);
        }
        if (r == 0)
                r = merge_check_inputs(readers, n, e);
        if (r == 0)
                r = manifest_rewriter_init(w, readers[0],
                                           target->format_version >= 3 &&
                                                   inputs[0].file->content == MANIFEST_CONTENT_DATA,
                                           e);
        return r == MANIFEST_REWRITER_E_INCOMPATIBLE ? MANIFEST_MERGE_E_INCOMPATIBLE : r;
}

int manifest_merge_write(const ManifestMergeInput *inputs, size_t n,
                         const ManifestMergeTarget *target, Buf *out, ManifestFile *ret_file,
                         ManifestMergeStats *ret_stats, Error *e) {
        _cleanup_(manifest_rewriter_deinit) ManifestRewriter w = { 0 };
        _cleanup_(manifest_file_deinit) ManifestFile f = { 0 };
        OcfReader **readers;
        uint64_t n_total = 0;
        int r;

        if (n == 0)
                return error_set(e, -EINVAL, "a merge needs inputs");
        readers = calloc(n, sizeof(*readers));
        if (!readers)
                return error_set(e, -ENOMEM, "out of memory");
        r = merge_open(inputs, n, target, readers, &w, e);

        for (size_t i = 0; r == 0 && i < n; i++) {
                ManifestEntry *entries = NULL;
                size_t n_entries = 0;

                /* A first pass for inheritance (the rules live in manifest_entries.c, shared with
                 * the audit), a second to copy: the datums come in the same order. */
                r = manifest_entries_read(inputs[i].bytes, target->max_entries - n_total, &entries,
                                          &n_entries, e);
                if (r == 0)
                        r = manifest_entries_inherit(entries, n_entries, inputs[i].file, e);
                if (r == 0)
                        r = manifest_rewriter_copy(&w, readers[i], entries, n_entries, merge_decide,
                                                   NULL, e);
                if (r < 0)
                        (void)error_prefix(e, r, "input %zu manifest '%s'", i,
                                           inputs[i].file->path);
                n_total += n_entries;
                manifest_entries_free(entries, n_entries);
        }
        merge_readers_free(readers, n);
        if (r != 0)
                return r;
        if (w.existing_files == 0)
                return error_set(e, MANIFEST_MERGE_E_INCOMPATIBLE, "no live entry to keep");

        f = (ManifestFile){
                .partition_spec_id = inputs[0].file->partition_spec_id,
                .content = inputs[0].file->content,
                .sequence_number = target->sequence_number,
                .min_sequence_number = w.min_sequence_number,
                .has_added_snapshot_id = true,
                .added_snapshot_id = target->snapshot_id,
                .has_counts = true,
                .existing_files_count = w.existing_files,
                .existing_rows_count = w.existing_rows,
        };
        f.path = strdup(target->location);
        if (!f.path)
                return error_set(e, -ENOMEM, "out of memory");
        r = merge_partitions(inputs, n, target, &f);
        if (r < 0)
                return error_set(e, r, "out of memory");
        {
                size_t before = out->len;

                r = manifest_rewriter_finish(&w, out, e);
                if (r < 0)
                        return r;
                f.length = (int64_t)(out->len - before);
        }
        *ret_file = f;
        f = (ManifestFile){ 0 };
        if (ret_stats)
                *ret_stats = (ManifestMergeStats){ .n_entries_read = w.n_read,
                                                   .n_entries_written = w.n_written };
        return 0;
}
