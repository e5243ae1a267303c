/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/manifest_merge.c: the table properties (Java's PropertyUtil), the plan (groups by
 * content and spec, ListPacker.packEnd with lookback 1, min-count-to-merge on the newest bin)
 * and the rewrite (every field of every live entry kept, EXISTING with explicit snapshot id,
 * sequence numbers and first_row_id, DELETED dropped), on a manifest Iceberg Java wrote. */
#include <errno.h>
#include <jansson.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "avro/records.h"
#include "iceberg/lineage.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_list.h"
#include "iceberg/manifest_merge.h"
#include "test.h"

#define MAX_BYTES (64u << 20)

/* ---- properties ----------------------------------------------------------------------------- */

static TableMetadata *table_with(const char *properties) {
        char text[2048];
        TableMetadata *t = NULL;
        json_t *j;
        Error e;

        (void)snprintf(text, sizeof(text),
                       "{\"metadata-location\": \"/wh/t/metadata/1.metadata.json\", \"metadata\": "
                       "{\"format-version\": 3, \"table-uuid\": \"u\", \"location\": \"/wh/t\", "
                       "\"last-sequence-number\": 1, \"next-row-id\": 0, \"current-schema-id\": 0, "
                       "\"properties\": %s, \"partition-specs\": [{\"spec-id\": 0, \"fields\": "
                       "[]}]}}",
                       properties);
        j = json_loads(text, 0, NULL);
        ASSERT_TRUE(j);
        ASSERT_OK(table_metadata_parse(j, &t, &e));
        json_decref(j);
        return t;
}

TEST(policy_defaults_and_java_parsing) {
        static const struct {
                const char *properties;
                int r;
                bool is_enabled;
                int32_t min_count;
                int64_t target;
        } cases[] = {
                { "{}", 0, true, 100, 8 << 20 },
                { "{\"commit.manifest-merge.enabled\": \"TRUE\"}", 0, true, 100, 8 << 20 },
                /* Boolean.parseBoolean: anything else is false, never an error */
                { "{\"commit.manifest-merge.enabled\": \"yes\"}", 0, false, 100, 8 << 20 },
                { "{\"commit.manifest-merge.enabled\": \"false\"}", 0, false, 100, 8 << 20 },
                { "{\"commit.manifest.min-count-to-merge\": \"4\", "
                  "\"commit.manifest.target-size-bytes\": \"+1024\"}",
                  0, true, 4, 1024 },
                { "{\"commit.manifest.min-count-to-merge\": \"-1\"}", 0, true, -1, 8 << 20 },
                { "{\"commit.manifest.min-count-to-merge\": \"four\"}", -EINVAL, true, 0, 0 },
                { "{\"commit.manifest.min-count-to-merge\": \"2147483648\"}", -EINVAL, true, 0, 0 },
                { "{\"commit.manifest.min-count-to-merge\": \"\"}", -EINVAL, true, 0, 0 },
                { "{\"commit.manifest.target-size-bytes\": \"8MB\"}", -EINVAL, true, 0, 0 },
                { "{\"commit.manifest.target-size-bytes\": \"--1\"}", -EINVAL, true, 0, 0 },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                _cleanup_(table_metadata_freep) TableMetadata *t = table_with(cases[i].properties);
                ManifestMergePolicy p = { 0 };
                Error e = { 0 };

                ASSERT_EQ(manifest_merge_policy(t, &p, &e), cases[i].r);
                if (cases[i].r < 0) {
                        ASSERT_CONTAINS(e.message, "commit.manifest.");
                        continue;
                }
                ASSERT_EQ(p.is_enabled, cases[i].is_enabled);
                ASSERT_EQ(p.min_count_to_merge, cases[i].min_count);
                ASSERT_EQ(p.target_size_bytes, cases[i].target);
        }
}

/* ---- the plan ------------------------------------------------------------------------------- */

typedef struct PlanFile {
        int64_t length;
        int32_t content, spec;
        bool has_counts;
} PlanFile;

/* Plans over files described by (length, content, spec) and returns the bins as text:
 * "1,2|3,4" (inputs of each bin, bins by first input), "" when nothing merges. */
static char *plan_text(const PlanFile *pf, size_t n, int32_t min_count, int64_t target) {
        ManifestFile files[32] = { 0 };
        ManifestMergePolicy policy = { .is_enabled = true,
                                       .min_count_to_merge = min_count,
                                       .target_size_bytes = target };
        ManifestMergePlan plan;
        char *out = calloc(1, 512);
        size_t len = 0, n_inputs = 0;

        ASSERT_TRUE(out && n <= 32);
        for (size_t i = 0; i < n; i++)
                files[i] = (ManifestFile){ .path = (char *)"m",
                                           .length = pf[i].length,
                                           .content = pf[i].content,
                                           .partition_spec_id = pf[i].spec,
                                           .has_counts = !pf[i].has_counts,
                                           .has_added_snapshot_id = true };
        ASSERT_OK(manifest_merge_plan(files, n, &policy, &plan));
        for (size_t b = 0; b < plan.n_bins; b++) {
                ASSERT_TRUE(plan.bins[b].n_inputs > 1);
                for (size_t k = 0; k < plan.bins[b].n_inputs; k++)
                        len += (size_t)snprintf(out + len, 512 - len, "%s%zu",
                                                k   ? ","
                                                : b ? "|"
                                                    : "",
                                                plan.bins[b].inputs[k]);
                n_inputs += plan.bins[b].n_inputs;
        }
        ASSERT_EQ(plan.n_inputs, n_inputs);
        manifest_merge_plan_deinit(&plan);
        return out;
}

#define PLAN_EQ(expected, files, min_count, target)                                                \
        do {                                                                                       \
                char *_got = plan_text(files, sizeof(files) / sizeof(*files), min_count, target);  \
                ASSERT_STREQ(_got, expected);                                                      \
                free(_got);                                                                        \
        } while (0)

/* has_counts is inverted in PlanFile (zero-initialized = known counts). */
TEST(plan_min_count_on_the_newest_bin) {
        static const PlanFile five[] = { { .length = 10 },
                                         { .length = 10 },
                                         { .length = 10 },
                                         { .length = 10 },
                                         { .length = 10 } };

        /* One bin holding the newest manifest: merged only from min-count manifests on. */
        PLAN_EQ("", five, 100, 8 << 20);
        PLAN_EQ("", five, 6, 8 << 20);
        PLAN_EQ("0,1,2,3,4", five, 5, 8 << 20);
        PLAN_EQ("0,1,2,3,4", five, 4, 8 << 20);
        /* A bin of one is never rewritten, whatever the count. */
        PLAN_EQ("", ((const PlanFile[]){ { .length = 10 } }), 0, 8 << 20);
}

TEST(plan_packs_from_the_end_with_lookback_one) {
        static const PlanFile five[] = { { .length = 10 },
                                         { .length = 10 },
                                         { .length = 10 },
                                         { .length = 10 },
                                         { .length = 10 } };
        /* ListPacker.packEnd([1,2,3,4,5], target 5): [[1], [2,3], [4], [5]]. */
        static const PlanFile java[] = {
                { .length = 1 }, { .length = 2 }, { .length = 3 }, { .length = 4 }, { .length = 5 }
        };
        /* Bigger than the target: alone in its bin, and it closes the bin before it. */
        static const PlanFile big[] = { { .length = 10 }, { .length = 10 }, { .length = 100 },
                                        { .length = 10 }, { .length = 10 }, { .length = 10 } };

        /* From the end: [3,4] (20), [1,2] (20), [0]: the newest is alone, under-filled. */
        PLAN_EQ("1,2|3,4", five, 100, 25);
        PLAN_EQ("1,2", java, 1, 5);
        /* Exactly the target fits (binWeight + weight <= targetWeight). */
        PLAN_EQ("0,1|2,3,4", five, 2, 30);
        PLAN_EQ("3,4,5", big, 100, 30);
        PLAN_EQ("0,1|3,4,5", big, 2, 30);
        /* A negative target (Java takes any long): every manifest alone. */
        PLAN_EQ("", five, 1, -1);
}

TEST(plan_keeps_content_and_specs_apart) {
        /* data spec 0, deletes spec 0, data spec 1, interleaved; min-count 2 */
        static const PlanFile mixed[] = {
                { 10, MANIFEST_CONTENT_DATA, 0, false },
                { 10, MANIFEST_CONTENT_DELETES, 0, false },
                { 10, MANIFEST_CONTENT_DATA, 1, false },
                { 10, MANIFEST_CONTENT_DATA, 0, false },
                { 10, MANIFEST_CONTENT_DELETES, 0, false },
                { 10, MANIFEST_CONTENT_DATA, 1, false },
                { 10, MANIFEST_CONTENT_DATA, 0, false },
        };
        /* unknown counts (old v1 lists) take no part */
        static const PlanFile unknown[] = {
                { .length = 10 }, { 10, 0, 0, true }, { .length = 10 }, { .length = 10 }
        };

        PLAN_EQ("0,3,6|1,4|2,5", mixed, 2, 8 << 20);
        PLAN_EQ("0,3,6", mixed, 3, 8 << 20);
        PLAN_EQ("0,2,3", unknown, 2, 8 << 20);
}

TEST(plan_merges_nothing_when_disabled) {
        ManifestFile files[3] = {
                { .path = (char *)"a",
                  .length = 1,
                  .has_counts = true,
                  .has_added_snapshot_id = true },
                { .path = (char *)"b",
                  .length = 1,
                  .has_counts = true,
                  .has_added_snapshot_id = true },
                { .path = (char *)"c",
                  .length = 1,
                  .has_counts = true,
                  .has_added_snapshot_id = true },
        };
        ManifestMergePolicy off = { .is_enabled = false,
                                    .min_count_to_merge = 1,
                                    .target_size_bytes = 100 };
        ManifestMergePlan plan;

        ASSERT_OK(manifest_merge_plan(files, 3, &off, &plan));
        ASSERT_EQ(plan.n_bins, 0);
        off.is_enabled = true;
        ASSERT_OK(manifest_merge_plan(files, 3, &off, &plan));
        ASSERT_EQ(plan.n_bins, 1);
        manifest_merge_plan_deinit(&plan);
}

/* ---- partition summaries -------------------------------------------------------------------- */

static PartitionFieldSummary summary(const char *lower, size_t lower_len, const char *upper,
                                     size_t upper_len, bool contains_null) {
        PartitionFieldSummary s = { .contains_null = contains_null, .has_contains_nan = true };

        buf_init(&s.lower_bound, 1024);
        buf_init(&s.upper_bound, 1024);
        if (lower) {
                s.has_lower_bound = true;
                ASSERT_OK(buf_append(&s.lower_bound, lower, lower_len));
        }
        if (upper) {
                s.has_upper_bound = true;
                ASSERT_OK(buf_append(&s.upper_bound, upper, upper_len));
        }
        return s;
}

static void summary_deinit(PartitionFieldSummary *s) {
        buf_deinit(&s->lower_bound);
        buf_deinit(&s->upper_bound);
}

static void assert_merged(IcebergTypeId type, PartitionFieldSummary a, PartitionFieldSummary b,
                          const char *lower, size_t lower_len, const char *upper,
                          size_t upper_len) {
        IcebergType t = { .id = type };

        ASSERT_OK(manifest_merge_summary(&a, &b, &t));
        ASSERT_TRUE(a.has_lower_bound && a.lower_bound.len == lower_len &&
                    memcmp(a.lower_bound.data, lower, lower_len) == 0);
        ASSERT_TRUE(a.has_upper_bound && a.upper_bound.len == upper_len &&
                    memcmp(a.upper_bound.data, upper, upper_len) == 0);
        summary_deinit(&a);
        summary_deinit(&b);
}

TEST(summaries_merge_by_the_type_order) {
        IcebergType uuid = { .id = ICEBERG_TYPE_UUID };
        PartitionFieldSummary a, b;

        /* ints, little-endian: -1 < 3 < 256 */
        assert_merged(ICEBERG_TYPE_INT, summary("\x03\0\0\0", 4, "\x00\x01\0\0", 4, false),
                      summary("\xff\xff\xff\xff", 4, "\x04\0\0\0", 4, false), "\xff\xff\xff\xff", 4,
                      "\x00\x01\0\0", 4);
        /* longs */
        assert_merged(ICEBERG_TYPE_TIMESTAMP,
                      summary("\x05\0\0\0\0\0\0\0", 8, "\x05\0\0\0\0\0\0\x01", 8, false),
                      summary("\x06\0\0\0\0\0\0\0", 8, "\x06\0\0\0\0\0\0\0", 8, false),
                      "\x05\0\0\0\0\0\0\0", 8, "\x05\0\0\0\0\0\0\x01", 8);
        /* strings by UTF-16 code unit (Java): U+1F600 (high surrogate D83D) sorts below U+FFFD */
        assert_merged(ICEBERG_TYPE_STRING, summary("\xef\xbf\xbd", 3, "\xef\xbf\xbd", 3, false),
                      summary("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80", 4, false),
                      "\xf0\x9f\x98\x80", 4, "\xef\xbf\xbd", 3);
        /* a prefix sorts first */
        assert_merged(ICEBERG_TYPE_STRING, summary("ab", 2, "ab", 2, false),
                      summary("a", 1, "abc", 3, false), "a", 1, "abc", 3);
        /* decimals: big-endian two's complement of any length: -1 (ff) < 1 (0001) */
        assert_merged(ICEBERG_TYPE_DECIMAL, summary("\x00\x01", 2, "\x00\x01", 2, false),
                      summary("\xff", 1, "\x7f", 1, false), "\xff", 1, "\x7f", 1);
        /* doubles: -0.0 below 0.0 */
        {
                double neg_zero = -0.0, zero = 0.0, two = 2.0;
                char nz[8], z[8], t[8];

                memcpy(nz, &neg_zero, 8);
                memcpy(z, &zero, 8);
                memcpy(t, &two, 8);
                assert_merged(ICEBERG_TYPE_DOUBLE, summary(z, 8, t, 8, false),
                              summary(nz, 8, z, 8, false), nz, 8, t, 8);
        }

        /* An all-null input has no bounds: the other's stay; nulls are or-ed. */
        a = summary("\x02\0\0\0", 4, "\x02\0\0\0", 4, false);
        b = summary(NULL, 0, NULL, 0, true);
        b.has_contains_nan = false;
        ASSERT_OK(manifest_merge_summary(&a, &b, &(IcebergType){ .id = ICEBERG_TYPE_INT }));
        ASSERT_TRUE(a.contains_null && a.has_lower_bound && a.lower_bound.data[0] == 2);
        ASSERT_TRUE(!a.has_contains_nan); /* unknown in one: unknown */
        summary_deinit(&b);
        /* A wrong size, and uuid, are refused: the caller writes null partitions. */
        b = summary("\x01", 1, "\x01", 1, false);
        ASSERT_EQ(manifest_merge_summary(&a, &b, &(IcebergType){ .id = ICEBERG_TYPE_INT }),
                  -EBADMSG);
        ASSERT_EQ(manifest_merge_summary(&a, &b, &uuid), -EOPNOTSUPP);
        summary_deinit(&a);
        summary_deinit(&b);
}

/* ---- the rewrite ---------------------------------------------------------------------------- */

/* The Java staged manifest: two ADDED data files (5 rows each), every data_file field set or
 * null as Java writes them. */
static uint8_t *java_manifest(size_t *ret_len) {
        return (uint8_t *)test_read_source_file("tests/data/java-staged-manifest-v3.avro", ret_len);
}

typedef struct EntryEdit {
        int status;            /* -1: as read */
        int64_t snapshot_id;   /* 0: null */
        int64_t seq, file_seq; /* 0: null */
        int64_t first_row_id;  /* -1: null */
} EntryEdit;

/* Writes a manifest of the Java manifest's schema and metadata (format-version replaced when
 * given) whose entries are its datums, taken in turn (wrapping around), with `edits` applied. */
static void write_edited(Slice java, const EntryEdit *edits, size_t n, const char *format_version,
                         Buf *out) {
        OcfReader *reader = NULL, *datums = NULL;
        OcfWriter *writer = NULL;
        FieldsRecord rec, df_rec;
        avro_value_t value;
        char *schema;
        Error e;
        int data_file, first_row_id;

        ASSERT_OK(ocf_reader_open(java, &reader, &e));
        schema = json_dumps(ocf_reader_schema_json(reader), JSON_COMPACT | JSON_PRESERVE_ORDER);
        ASSERT_OK(ocf_writer_new(schema, OCF_CODEC_DEFLATE, &writer));
        free(schema);
        for (size_t i = 0; i < ocf_reader_n_meta(reader); i++) {
                const char *key;
                Slice v;

                ocf_reader_meta_at(reader, i, &key, &v);
                if (strncmp(key, "avro.", 5) == 0)
                        continue;
                if (format_version && strcmp(key, "format-version") == 0)
                        v = (Slice){ (const uint8_t *)format_version, strlen(format_version) };
                ASSERT_OK(ocf_writer_set_meta(writer, key, v));
        }
        ASSERT_OK(records_schema(reader, &rec, &e));
        data_file = fields_index(&rec, MANIFEST_FIELD_DATA_FILE);
        ASSERT_OK(fields_record_nested(&rec, data_file, &df_rec, &e));
        first_row_id = fields_index(&df_rec, MANIFEST_FIELD_FIRST_ROW_ID);
        ASSERT_OK(ocf_writer_value_new(writer, &value));
        for (size_t i = 0; i < n; i++) {
                avro_value_t *datum, df;
                int r = datums ? ocf_reader_read(datums, &datum, &e) : 0;

                if (r == 0) { /* wrap around */
                        ocf_reader_free(datums);
                        ASSERT_OK(ocf_reader_open(java, &datums, &e));
                        r = ocf_reader_read(datums, &datum, &e);
                }
                ASSERT_EQ(r, 1);
                ASSERT_OK(avro_value_reset(&value));
                ASSERT_EQ(avro_value_copy(&value, datum), 0);
                if (edits[i].status >= 0)
                        ASSERT_OK(fields_set_int(&value, fields_index(&rec, 0), edits[i].status));
                if (edits[i].snapshot_id)
                        ASSERT_OK(fields_set_long(&value, fields_index(&rec, 1),
                                                  edits[i].snapshot_id));
                if (edits[i].seq)
                        ASSERT_OK(fields_set_long(&value, fields_index(&rec, 3), edits[i].seq));
                if (edits[i].file_seq)
                        ASSERT_OK(
                                fields_set_long(&value, fields_index(&rec, 4), edits[i].file_seq));
                ASSERT_OK(fields_set_value(&value, data_file, &df));
                if (edits[i].first_row_id >= 0)
                        ASSERT_OK(fields_set_long(&df, first_row_id, edits[i].first_row_id));
                ASSERT_OK(ocf_writer_append(writer, &value));
        }
        avro_value_decref(&value);
        buf_init(out, MAX_BYTES);
        ASSERT_OK(ocf_writer_finish(writer, out));
        ocf_writer_free(writer);
        ocf_reader_free(datums);
        ocf_reader_free(reader);
}

/* The i-th datum of the Java manifest (wrapping), copied into `value` of `schema`. */
static void java_datum(Slice java, size_t i, avro_value_t *value) {
        OcfReader *reader = NULL;
        avro_value_t *datum = NULL;
        Error e;

        ASSERT_OK(ocf_reader_open(java, &reader, &e));
        for (size_t k = 0; k <= i % 2; k++)
                ASSERT_EQ(ocf_reader_read(reader, &datum, &e), 1);
        ASSERT_OK(avro_value_reset(value));
        ASSERT_EQ(avro_value_copy(value, datum), 0);
        ocf_reader_free(reader);
}

TEST(rewrite_keeps_every_field_and_writes_inherited_values) {
        size_t java_len;
        uint8_t *java_bytes = java_manifest(&java_len);
        Slice java = { java_bytes, java_len };
        /* B: EXISTING with explicit values (kept), DELETED (dropped), ADDED with nulls
         * (inherits B's list entry), EXISTING with explicit seqs but no first_row_id (inherits
         * the running sum, which skips the DELETED entry and the explicit one) */
        static const EntryEdit b_edits[] = {
                { MANIFEST_ENTRY_EXISTING, 99, 1, 1, 50 },
                { MANIFEST_ENTRY_DELETED, 98, 1, 1, -1 },
                { -1, 0, 0, 0, -1 },
                { MANIFEST_ENTRY_EXISTING, 97, 1, 2, -1 },
        };
        Buf b_bytes;
        ManifestFile files[2] = {
                /* A: the Java manifest as committed by snapshot 111 at sequence 2, rows 100.. */
                { .path = (char *)"/wh/t/metadata/a.avro",
                  .content = MANIFEST_CONTENT_DATA,
                  .sequence_number = 2,
                  .min_sequence_number = 2,
                  .has_added_snapshot_id = true,
                  .added_snapshot_id = 111,
                  .has_counts = true,
                  .added_files_count = 2,
                  .added_rows_count = 10,
                  .has_first_row_id = true,
                  .first_row_id = 100 },
                /* B: committed by snapshot 222 at sequence 3, rows 300.. */
                { .path = (char *)"/wh/t/metadata/b.avro",
                  .content = MANIFEST_CONTENT_DATA,
                  .sequence_number = 3,
                  .min_sequence_number = 1,
                  .has_added_snapshot_id = true,
                  .added_snapshot_id = 222,
                  .has_counts = true,
                  .has_first_row_id = true,
                  .first_row_id = 300 },
        };
        /* What each written entry must be: (input datum, status, snapshot, seq, fseq, frid) */
        static const struct {
                size_t datum;
                int64_t snapshot_id, seq, file_seq, first_row_id;
        } want[] = {
                { 0, 111, 2, 2, 100 }, { 1, 111, 2, 2, 105 }, { 0, 99, 1, 1, 50 },
                { 0, 222, 3, 3, 300 }, { 1, 97, 1, 2, 305 },
        };
        ManifestMergeTarget target = {
                .format_version = 3,
                .snapshot_id = 333,
                .sequence_number = 4,
                .location = "/wh/t/metadata/merged.avro",
                .max_entries = 100,
        };
        ManifestMergeInput inputs[2];
        ManifestMergeStats stats;
        ManifestFile merged = { 0 };
        ManifestEntry *entries = NULL;
        OcfReader *reader = NULL;
        avro_value_t expected, *got;
        FieldsRecord rec, df_rec;
        OcfWriter *scratch = NULL;
        size_t n_entries;
        Buf out;
        Error e;
        int64_t next_row_id;

        write_edited(java, b_edits, 4, NULL, &b_bytes);
        inputs[0] = (ManifestMergeInput){ &files[0], java };
        inputs[1] = (ManifestMergeInput){ &files[1], buf_slice(&b_bytes) };
        buf_init(&out, MAX_BYTES);
        ASSERT_OK(manifest_merge_write(inputs, 2, &target, &out, &merged, &stats, &e));
        ASSERT_EQ(stats.n_entries_read, 6);
        ASSERT_EQ(stats.n_entries_written, 5);

        /* The list entry: this snapshot's, all EXISTING, no first_row_id of its own. */
        ASSERT_STREQ(merged.path, "/wh/t/metadata/merged.avro");
        ASSERT_EQ(merged.length, out.len);
        ASSERT_EQ(merged.added_snapshot_id, 333);
        ASSERT_EQ(merged.sequence_number, 4);
        ASSERT_EQ(merged.min_sequence_number, 1);
        ASSERT_EQ(merged.added_files_count, 0);
        ASSERT_EQ(merged.existing_files_count, 5);
        ASSERT_EQ(merged.existing_rows_count, 25);
        ASSERT_EQ(merged.deleted_files_count, 0);
        ASSERT_TRUE(!merged.has_first_row_id);
        ASSERT_TRUE(!merged.has_partitions); /* no types given */

        /* Every entry as read through the rules: nothing left to inherit. */
        ASSERT_OK(manifest_entries_read(buf_slice(&out), 100, &entries, &n_entries, &e));
        ASSERT_EQ(n_entries, 5);
        for (size_t i = 0; i < n_entries; i++) {
                ASSERT_EQ(entries[i].status, MANIFEST_ENTRY_EXISTING);
                ASSERT_TRUE(entries[i].has_snapshot_id && entries[i].has_sequence_number &&
                            entries[i].has_file_sequence_number && entries[i].has_first_row_id);
                ASSERT_EQ(entries[i].snapshot_id, want[i].snapshot_id);
                ASSERT_EQ(entries[i].sequence_number, want[i].seq);
                ASSERT_EQ(entries[i].file_sequence_number, want[i].file_seq);
                ASSERT_EQ(entries[i].first_row_id, want[i].first_row_id);
        }
        manifest_entries_free(entries, n_entries);

        /* Every other field exactly as the input's datum: the whole datum compared. */
        ASSERT_OK(ocf_reader_open(buf_slice(&out), &reader, &e));
        ASSERT_STREQ((const char *)ocf_reader_meta(reader, "content").ptr, "data");
        ASSERT_TRUE(ocf_reader_meta(reader, "partition-spec").ptr);
        {
                char *schema = json_dumps(ocf_reader_schema_json(reader),
                                          JSON_COMPACT | JSON_PRESERVE_ORDER);

                ASSERT_OK(ocf_writer_new(schema, OCF_CODEC_NULL, &scratch));
                free(schema);
        }
        ASSERT_OK(ocf_writer_value_new(scratch, &expected));
        ASSERT_OK(records_schema(reader, &rec, &e));
        ASSERT_OK(fields_record_nested(&rec, fields_index(&rec, MANIFEST_FIELD_DATA_FILE), &df_rec,
                                       &e));
        for (size_t i = 0; i < 5; i++) {
                avro_value_t df;

                ASSERT_EQ(ocf_reader_read(reader, &got, &e), 1);
                java_datum(java, want[i].datum, &expected);
                ASSERT_OK(fields_set_int(&expected, fields_index(&rec, 0), 0));
                ASSERT_OK(fields_set_long(&expected, fields_index(&rec, 1), want[i].snapshot_id));
                ASSERT_OK(fields_set_long(&expected, fields_index(&rec, 3), want[i].seq));
                ASSERT_OK(fields_set_long(&expected, fields_index(&rec, 4), want[i].file_seq));
                ASSERT_OK(fields_set_value(&expected, fields_index(&rec, 2), &df));
                ASSERT_OK(fields_set_long(&df, fields_index(&df_rec, MANIFEST_FIELD_FIRST_ROW_ID),
                                          want[i].first_row_id));
                if (!avro_value_equal(&expected, got))
                        TEST_FAIL("merged entry %zu differs from its input beyond the inherited "
                                  "fields",
                                  i);
        }
        ASSERT_EQ(ocf_reader_read(reader, &got, &e), 0);
        avro_value_decref(&expected);
        ocf_writer_free(scratch);
        ocf_reader_free(reader);

        /* The merged manifest takes a new range of all its rows (Java: merging consumes id
         * space); its entries keep their own ids. */
        ASSERT_OK(lineage_assign(&merged, 1, 1000, &next_row_id, &e));
        ASSERT_EQ(merged.first_row_id, 1000);
        ASSERT_EQ(next_row_id, 1025);

        manifest_file_deinit(&merged);
        buf_deinit(&out);
        buf_deinit(&b_bytes);
        free(java_bytes);
}

TEST(rewrite_refuses_to_guess) {
        size_t java_len;
        uint8_t *java_bytes = java_manifest(&java_len);
        Slice java = { java_bytes, java_len };
        static const EntryEdit plain[] = { { -1, 0, 0, 0, -1 }, { -1, 0, 0, 0, -1 } };
        static const EntryEdit deleted[] = { { MANIFEST_ENTRY_DELETED, 9, 1, 1, -1 } };
        static const EntryEdit existing_null_seq[] = { { MANIFEST_ENTRY_EXISTING, 9, 0, 0, -1 } };
        ManifestFile file = { .path = (char *)"/wh/t/metadata/a.avro",
                              .content = MANIFEST_CONTENT_DATA,
                              .sequence_number = 2,
                              .has_added_snapshot_id = true,
                              .added_snapshot_id = 1,
                              .has_counts = true,
                              .has_first_row_id = true };
        ManifestMergeTarget target = { .format_version = 3,
                                       .snapshot_id = 2,
                                       .sequence_number = 3,
                                       .location = "/m.avro",
                                       .max_entries = 100 };
        ManifestFile merged = { 0 };
        ManifestMergeInput inputs[2];
        Buf other, out;
        Error e;

        buf_init(&out, MAX_BYTES);
        /* Metadata that differs: another format-version. */
        write_edited(java, plain, 2, "2", &other);
        inputs[0] = (ManifestMergeInput){ &file, java };
        inputs[1] = (ManifestMergeInput){ &file, buf_slice(&other) };
        ASSERT_EQ(manifest_merge_write(inputs, 2, &target, &out, &merged, NULL, &e),
                  MANIFEST_MERGE_E_INCOMPATIBLE);
        ASSERT_CONTAINS(e.message, "format-version");
        buf_deinit(&other);

        /* Nothing live: nothing to write. */
        write_edited(java, deleted, 1, NULL, &other);
        inputs[1] = (ManifestMergeInput){ &file, buf_slice(&other) };
        ASSERT_EQ(manifest_merge_write(&inputs[1], 1, &target, &out, &merged, NULL, &e),
                  MANIFEST_MERGE_E_INCOMPATIBLE);
        buf_deinit(&other);

        /* An EXISTING entry without sequence numbers: nothing to inherit them from. */
        write_edited(java, existing_null_seq, 1, NULL, &other);
        inputs[1] = (ManifestMergeInput){ &file, buf_slice(&other) };
        ASSERT_EQ(manifest_merge_write(&inputs[1], 1, &target, &out, &merged, NULL, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "sequence numbers");
        buf_deinit(&other);

        /* The entry bound covers the whole bin. */
        target.max_entries = 3;
        inputs[1] = inputs[0];
        ASSERT_EQ(manifest_merge_write(inputs, 2, &target, &out, &merged, NULL, &e), -E2BIG);
        ASSERT_EQ(out.len, 0);
        buf_deinit(&out);
        free(java_bytes);
}

TEST(rewrite_merges_partition_summaries) {
        size_t java_len;
        uint8_t *java_bytes = java_manifest(&java_len);
        Slice java = { java_bytes, java_len };
        PartitionFieldSummary sa = summary("\x03\0\0\0", 4, "\x03\0\0\0", 4, false);
        PartitionFieldSummary sb = summary("\x01\0\0\0", 4, "\x02\0\0\0", 4, true);
        ManifestFile files[2] = {
                { .path = (char *)"a",
                  .content = 0,
                  .sequence_number = 1,
                  .has_added_snapshot_id = true,
                  .added_snapshot_id = 1,
                  .has_counts = true,
                  .has_partitions = true,
                  .partitions = &sa,
                  .n_partitions = 1,
                  .has_first_row_id = true },
                { .path = (char *)"b",
                  .content = 0,
                  .sequence_number = 2,
                  .has_added_snapshot_id = true,
                  .added_snapshot_id = 2,
                  .has_counts = true,
                  .has_partitions = true,
                  .partitions = &sb,
                  .n_partitions = 1,
                  .has_first_row_id = true,
                  .first_row_id = 10 },
        };
        IcebergType types[1] = { { .id = ICEBERG_TYPE_INT } };
        ManifestMergeTarget target = { .format_version = 3,
                                       .snapshot_id = 3,
                                       .sequence_number = 3,
                                       .location = "/m.avro",
                                       .partition_types = types,
                                       .n_partition_types = 1,
                                       .max_entries = 100 };
        ManifestMergeInput inputs[2] = { { &files[0], java }, { &files[1], java } };
        ManifestFile merged = { 0 };
        Buf out, list;
        ManifestFile *back = NULL;
        size_t n_back;
        Error e;

        buf_init(&out, MAX_BYTES);
        ASSERT_OK(manifest_merge_write(inputs, 2, &target, &out, &merged, NULL, &e));
        ASSERT_TRUE(merged.has_partitions && merged.n_partitions == 1);
        ASSERT_TRUE(merged.partitions[0].contains_null);
        ASSERT_EQ(merged.partitions[0].lower_bound.data[0], 1);
        ASSERT_EQ(merged.partitions[0].upper_bound.data[0], 3);
        ASSERT_EQ(merged.min_sequence_number, 1);

        /* The entry goes into a v3 list as it is, once lineage gave it a range. */
        merged.first_row_id = 20;
        merged.has_first_row_id = true;
        buf_init(&list, MAX_BYTES);
        ASSERT_OK(manifest_list_write(&(ManifestListHeader){ .format_version = 3,
                                                             .snapshot_id = 3,
                                                             .sequence_number = 3,
                                                             .has_first_row_id = true,
                                                             .first_row_id = 20 },
                                      &merged, 1, &list, &e));
        ASSERT_OK(manifest_list_read(buf_slice(&list), &back, &n_back, &e));
        ASSERT_EQ(n_back, 1);
        ASSERT_EQ(back[0].existing_files_count, 4);
        ASSERT_EQ(back[0].existing_rows_count, 20);
        manifest_list_files_free(back, n_back);

        /* An input without summaries: null partitions for the merged one ("may match"). */
        manifest_file_deinit(&merged);
        files[1].has_partitions = false;
        buf_deinit(&out);
        buf_init(&out, MAX_BYTES);
        ASSERT_OK(manifest_merge_write(inputs, 2, &target, &out, &merged, NULL, &e));
        ASSERT_TRUE(!merged.has_partitions);
        manifest_file_deinit(&merged);

        summary_deinit(&sa);
        summary_deinit(&sb);
        buf_deinit(&out);
        buf_deinit(&list);
        free(java_bytes);
}
