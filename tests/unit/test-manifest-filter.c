/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/manifest_filter.c: committed v2 and v3 manifests (written by manifest_write(), then
 * given statuses, snapshot ids, sequence numbers and first_row_ids as earlier commits leave them)
 * filtered: every field of every entry written checked (DELETED by this snapshot with the
 * original sequence numbers and first_row_id, EXISTING with the inherited ones, everything else
 * as the input datum), the list entry's counts, paths not found, untouched manifests, duplicates,
 * delete manifests, limits and unreadable input; and the result fed into a SnapshotChange. */
#include <errno.h>
#include <jansson.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "avro/records.h"
#include "iceberg/data_file.h"
#include "iceberg/lineage.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_filter.h"
#include "iceberg/manifest_write.h"
#include "iceberg/snapshot_change.h"
#include "iceberg-fixture.h"
#include "test.h"

#define MAX_BYTES (16u << 20)
#define N_FILES 5

/* File i: /wh/t/data/f<i>.parquet, 10 * (i + 1) rows, 1000 + i bytes. */
static void file_path(size_t i, char *buf, size_t len) {
        (void)snprintf(buf, len, "/wh/t/data/f%zu.parquet", i);
}

/* A manifest of N_FILES ADDED data files (snapshot id, sequence numbers, first_row_id null), as
 * the data-files path writes it: the v2 or v3 schema. */
static void base_manifest(int format_version, Buf *out) {
        json_t *schema = json_loads("{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,"
                                    "\"name\":\"id\",\"required\":true,\"type\":\"long\"}]}",
                                    0, NULL),
               *spec = json_loads("{\"spec-id\":0,\"fields\":[]}", 0, NULL);
        DataFile files[N_FILES] = { 0 };
        Error e = { 0 };

        ASSERT_TRUE(schema && spec);
        for (size_t i = 0; i < N_FILES; i++) {
                char path[64];

                file_path(i, path, sizeof(path));
                files[i] = (DataFile){ .location = strdup(path),
                                       .format = DATA_FILE_FORMAT_PARQUET,
                                       .record_count = 10 * ((int64_t)i + 1),
                                       .file_size_in_bytes = 1000 + (int64_t)i };
                if (data_file_resolve(&files[i], schema, spec, &e) < 0)
                        TEST_FAIL("%s", e.message);
        }
        buf_init(out, MAX_BYTES);
        if (manifest_write(&(ManifestWriteSpec){ .format_version = format_version,
                                                 .schema = schema,
                                                 .partition_spec = spec },
                           files, N_FILES, out, &e) < 0)
                TEST_FAIL("%s", e.message);
        for (size_t i = 0; i < N_FILES; i++)
                data_file_deinit(&files[i]);
        json_decref(schema);
        json_decref(spec);
}

/* What an earlier commit left in an entry; 0 (-1 for first_row_id) keeps the null. */
typedef struct EntryEdit {
        int status;
        int64_t snapshot_id, seq, file_seq, first_row_id;
        int content; /* 0: data */
} EntryEdit;

/* The schema's records, data_file nested. */
typedef struct Records {
        FieldsRecord entry, data_file;
} Records;

static void records_of(OcfReader *r, Records *ret) {
        Error e;

        ASSERT_OK(records_schema(r, &ret->entry, &e));
        ASSERT_OK(fields_record_nested(&ret->entry,
                                       fields_index(&ret->entry, MANIFEST_FIELD_DATA_FILE),
                                       &ret->data_file, &e));
}

/* Sets the fields an edit names on a datum (0 / -1: left as they are). */
static void apply_edit(avro_value_t *v, const Records *rec, const EntryEdit *x) {
        avro_value_t df;

        ASSERT_OK(fields_set_int(v, fields_index(&rec->entry, 0), x->status));
        if (x->snapshot_id)
                ASSERT_OK(fields_set_long(v, fields_index(&rec->entry, 1), x->snapshot_id));
        if (x->seq)
                ASSERT_OK(fields_set_long(v, fields_index(&rec->entry, 3), x->seq));
        if (x->file_seq)
                ASSERT_OK(fields_set_long(v, fields_index(&rec->entry, 4), x->file_seq));
        ASSERT_OK(fields_set_value(v, fields_index(&rec->entry, MANIFEST_FIELD_DATA_FILE), &df));
        if (x->first_row_id >= 0)
                ASSERT_OK(
                        fields_set_long(&df,
                                        fields_index(&rec->data_file, MANIFEST_FIELD_FIRST_ROW_ID),
                                        x->first_row_id));
        if (x->content)
                ASSERT_OK(fields_set_int(&df, fields_index(&rec->data_file, MANIFEST_FIELD_CONTENT),
                                         x->content));
}

/* The base manifest with entry i edited by edits[i]: a committed manifest. */
static void committed_manifest(int format_version, const EntryEdit *edits, Buf *out) {
        _cleanup_(buf_deinitp) Buf base;
        OcfReader *reader = NULL;
        OcfWriter *writer = NULL;
        avro_value_t value, *datum;
        Records rec;
        char *schema;
        Error e;

        base_manifest(format_version, &base);
        ASSERT_OK(ocf_reader_open(buf_slice(&base), &reader, &e));
        schema = json_dumps(ocf_reader_schema_json(reader), JSON_COMPACT | JSON_PRESERVE_ORDER);
        ASSERT_OK(ocf_writer_new(schema, OCF_CODEC_DEFLATE, &writer));
        free(schema);
        for (size_t i = 0; i < ocf_reader_n_meta(reader); i++) {
                const char *key;
                Slice v;

                ocf_reader_meta_at(reader, i, &key, &v);
                if (strncmp(key, "avro.", 5) != 0)
                        ASSERT_OK(ocf_writer_set_meta(writer, key, v));
        }
        records_of(reader, &rec);
        ASSERT_OK(ocf_writer_value_new(writer, &value));
        for (size_t i = 0; i < N_FILES; i++) {
                ASSERT_EQ(ocf_reader_read(reader, &datum, &e), 1);
                ASSERT_OK(avro_value_reset(&value));
                ASSERT_EQ(avro_value_copy(&value, datum), 0);
                apply_edit(&value, &rec, &edits[i]);
                ASSERT_OK(ocf_writer_append(writer, &value));
        }
        avro_value_decref(&value);
        buf_init(out, MAX_BYTES);
        ASSERT_OK(ocf_writer_finish(writer, out));
        ocf_writer_free(writer);
        ocf_reader_free(reader);
}

/* Entry by entry, what the rewrite must hold: the input datum `input` with these values. */
typedef struct Want {
        size_t input;
        int status;
        int64_t snapshot_id, seq, file_seq, first_row_id; /* first_row_id -1: null */
} Want;

/* Checks every field of every entry of `out`: the input's datum with the wanted status, snapshot
 * id, sequence numbers and first_row_id, nothing else changed; and that all are explicit. */
static void assert_entries(Slice in, Slice out, const Want *want, size_t n, int content) {
        ManifestEntry *entries = NULL;
        OcfReader *got_reader = NULL, *in_reader = NULL;
        avro_value_t *got, *in_datum;
        Records rec;
        size_t n_entries;
        Error e;

        /* Read without inheritance: every value is in the file. */
        ASSERT_OK(manifest_entries_read(out, 100, &entries, &n_entries, &e));
        ASSERT_EQ(n_entries, n);
        for (size_t i = 0; i < n; i++) {
                char path[64];

                file_path(want[i].input, path, sizeof(path));
                ASSERT_STREQ(entries[i].file_path, path);
                ASSERT_EQ(entries[i].status, want[i].status);
                ASSERT_TRUE(entries[i].has_snapshot_id && entries[i].has_sequence_number &&
                            entries[i].has_file_sequence_number);
                ASSERT_EQ(entries[i].snapshot_id, want[i].snapshot_id);
                ASSERT_EQ(entries[i].sequence_number, want[i].seq);
                ASSERT_EQ(entries[i].file_sequence_number, want[i].file_seq);
                ASSERT_EQ(entries[i].has_first_row_id, want[i].first_row_id >= 0);
                if (want[i].first_row_id >= 0)
                        ASSERT_EQ(entries[i].first_row_id, want[i].first_row_id);
                ASSERT_EQ(entries[i].record_count, 10 * ((int64_t)want[i].input + 1));
                ASSERT_EQ(entries[i].content, content);
        }
        manifest_entries_free(entries, n_entries);

        ASSERT_OK(ocf_reader_open(out, &got_reader, &e));
        records_of(got_reader, &rec);
        for (size_t i = 0; i < n; i++) {
                avro_value_t expected, df;

                ASSERT_EQ(ocf_reader_read(got_reader, &got, &e), 1);
                ASSERT_OK(ocf_reader_open(in, &in_reader, &e));
                for (size_t k = 0; k <= want[i].input; k++)
                        ASSERT_EQ(ocf_reader_read(in_reader, &in_datum, &e), 1);
                avro_value_copy_ref(&expected, in_datum);
                ASSERT_OK(fields_set_int(&expected, fields_index(&rec.entry, 0), want[i].status));
                ASSERT_OK(fields_set_long(&expected, fields_index(&rec.entry, 1),
                                          want[i].snapshot_id));
                ASSERT_OK(fields_set_long(&expected, fields_index(&rec.entry, 3), want[i].seq));
                ASSERT_OK(
                        fields_set_long(&expected, fields_index(&rec.entry, 4), want[i].file_seq));
                ASSERT_OK(fields_set_value(&expected, fields_index(&rec.entry, 2), &df));
                if (want[i].first_row_id >= 0)
                        ASSERT_OK(fields_set_long(&df,
                                                  fields_index(&rec.data_file,
                                                               MANIFEST_FIELD_FIRST_ROW_ID),
                                                  want[i].first_row_id));
                if (!avro_value_equal(&expected, got))
                        TEST_FAIL("entry %zu differs from input %zu beyond the written fields", i,
                                  want[i].input);
                avro_value_decref(&expected);
                in_reader = ocf_reader_free(in_reader);
        }
        ASSERT_EQ(ocf_reader_read(got_reader, &got, &e), 0);
        ocf_reader_free(got_reader);
}

/* The v3 manifest the tests filter: committed by snapshot 111 at sequence 5, rows from 1000.
 *   f0 EXISTING from snapshot 50 (seq 2), first_row_id 500 explicit
 *   f1 ADDED by 111: inherits seq 5 and first_row_id 1000
 *   f2 DELETED by 60: dropped, takes no row id
 *   f3 ADDED by 111: first_row_id 1020
 *   f4 EXISTING from 70 (seq 4, file seq 3) without first_row_id: 1060 */
static const EntryEdit v3_edits[N_FILES] = {
        { MANIFEST_ENTRY_EXISTING, 50, 2, 2, 500, 0 }, { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
        { MANIFEST_ENTRY_DELETED, 60, 3, 3, -1, 0 },   { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
        { MANIFEST_ENTRY_EXISTING, 70, 4, 3, -1, 0 },
};

static ManifestFile v3_list_entry(void) {
        return (ManifestFile){ .path = (char *)"/wh/t/metadata/m.avro",
                               .length = 1,
                               .partition_spec_id = 0,
                               .content = MANIFEST_CONTENT_DATA,
                               .sequence_number = 5,
                               .min_sequence_number = 2,
                               .has_added_snapshot_id = true,
                               .added_snapshot_id = 111,
                               .has_counts = true,
                               .added_files_count = 2,
                               .existing_files_count = 2,
                               .deleted_files_count = 1,
                               .added_rows_count = 60,
                               .existing_rows_count = 60,
                               .deleted_rows_count = 30,
                               .has_first_row_id = true,
                               .first_row_id = 1000 };
}

static const ManifestFilterTarget v3_target = {
        .format_version = 3,
        .snapshot_id = 999,
        .sequence_number = 9,
        .location = "/wh/t/metadata/filtered.avro",
        .max_entries = 100,
};

TEST(v3_removed_entries_are_deleted_with_their_original_values) {
        _cleanup_(buf_deinitp) Buf in, out;
        const char *paths[] = { "/wh/t/data/f4.parquet", "/wh/t/data/nope.parquet",
                                "/wh/t/data/f1.parquet" };
        bool found[3] = { false, false, false };
        ManifestFilterPaths remove = { paths, 3, found };
        ManifestFile file = v3_list_entry();
        ManifestFilterResult res = { 0 };
        static const Want want[] = {
                { 0, MANIFEST_ENTRY_EXISTING, 50, 2, 2, 500 },
                { 1, MANIFEST_ENTRY_DELETED, 999, 5, 5, 1000 },
                { 3, MANIFEST_ENTRY_EXISTING, 111, 5, 5, 1020 },
                { 4, MANIFEST_ENTRY_DELETED, 999, 4, 3, 1060 },
        };
        Error e;

        committed_manifest(3, v3_edits, &in);
        buf_init(&out, MAX_BYTES);
        if (manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e) != 0)
                TEST_FAIL("%s", e.message);
        assert_entries(buf_slice(&in), buf_slice(&out), want, 4, 0);

        /* Which paths were found: the caller names the one that is not in the manifest. */
        ASSERT_TRUE(found[0] && !found[1] && found[2]);
        ASSERT_EQ(res.n_removed, 2);
        ASSERT_STREQ(res.removed[0].path, "/wh/t/data/f1.parquet");
        ASSERT_EQ(res.removed[0].content, MANIFEST_CONTENT_DATA);
        ASSERT_EQ(res.removed[0].record_count, 20);
        ASSERT_EQ(res.removed[0].file_size, 1001);
        ASSERT_STREQ(res.removed[1].path, "/wh/t/data/f4.parquet");
        ASSERT_EQ(res.removed[1].record_count, 50);
        ASSERT_EQ(res.removed[1].file_size, 1004);
        ASSERT_EQ(res.n_duplicates, 0);
        ASSERT_EQ(res.n_entries_read, 5);

        /* The list entry: this snapshot's; EXISTING f0 and f3, DELETED f1 and f4. */
        ASSERT_STREQ(res.file.path, "/wh/t/metadata/filtered.avro");
        ASSERT_EQ(res.file.length, out.len);
        ASSERT_EQ(res.file.content, MANIFEST_CONTENT_DATA);
        ASSERT_EQ(res.file.partition_spec_id, 0);
        ASSERT_TRUE(res.file.has_added_snapshot_id);
        ASSERT_EQ(res.file.added_snapshot_id, 999);
        ASSERT_EQ(res.file.sequence_number, 9);
        ASSERT_EQ(res.file.min_sequence_number, 2); /* of the live entries: f0's */
        ASSERT_TRUE(res.file.has_counts);
        ASSERT_EQ(res.file.added_files_count, 0);
        ASSERT_EQ(res.file.added_rows_count, 0);
        ASSERT_EQ(res.file.existing_files_count, 2);
        ASSERT_EQ(res.file.existing_rows_count, 50);
        ASSERT_EQ(res.file.deleted_files_count, 2);
        ASSERT_EQ(res.file.deleted_rows_count, 70);
        ASSERT_TRUE(!res.file.has_first_row_id);

        /* Read as a reader would once the list gave it a new range: nothing is inherited. */
        {
                ManifestEntry *entries = NULL;
                size_t n;

                res.file.has_first_row_id = true;
                res.file.first_row_id = 7000;
                ASSERT_OK(manifest_entries_read(buf_slice(&out), 100, &entries, &n, &e));
                ASSERT_OK(manifest_entries_inherit(entries, n, &res.file, &e));
                for (size_t i = 0; i < n; i++) {
                        ASSERT_TRUE(!entries[i].is_first_row_id_inherited);
                        ASSERT_EQ(entries[i].first_row_id, want[i].first_row_id);
                        ASSERT_EQ(entries[i].sequence_number, want[i].seq);
                }
                manifest_entries_free(entries, n);
        }
        manifest_filter_result_deinit(&res);
}

TEST(v2_manifests_are_filtered_without_first_row_ids) {
        _cleanup_(buf_deinitp) Buf in, out;
        static const EntryEdit edits[N_FILES] = {
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
                { MANIFEST_ENTRY_EXISTING, 40, 1, 1, -1, 0 },
                { MANIFEST_ENTRY_DELETED, 41, 2, 2, -1, 0 },
                { MANIFEST_ENTRY_ADDED, 33, 0, 0, -1, 0 },
                { MANIFEST_ENTRY_EXISTING, 42, 2, 1, -1, 0 },
        };
        const char *paths[] = { "/wh/t/data/f0.parquet", "/wh/t/data/f1.parquet" };
        bool found[2] = { false, false };
        ManifestFilterPaths remove = { paths, 2, found };
        ManifestFile file = v3_list_entry();
        ManifestFilterTarget target = v3_target;
        ManifestFilterResult res = { 0 };
        static const Want want[] = {
                { 0, MANIFEST_ENTRY_DELETED, 999, 5, 5, -1 },
                { 1, MANIFEST_ENTRY_DELETED, 999, 1, 1, -1 },
                { 3, MANIFEST_ENTRY_EXISTING, 33, 5, 5, -1 },
                { 4, MANIFEST_ENTRY_EXISTING, 42, 2, 1, -1 },
        };
        Error e;

        committed_manifest(2, edits, &in);
        file.has_first_row_id = false;
        target.format_version = 2;
        buf_init(&out, MAX_BYTES);
        if (manifest_filter_write(buf_slice(&in), &file, &remove, &target, &out, &res, &e) != 0)
                TEST_FAIL("%s", e.message);
        assert_entries(buf_slice(&in), buf_slice(&out), want, 4, 0);
        ASSERT_TRUE(found[0] && found[1]);
        ASSERT_EQ(res.file.existing_files_count, 2);
        ASSERT_EQ(res.file.existing_rows_count, 90);
        ASSERT_EQ(res.file.deleted_files_count, 2);
        ASSERT_EQ(res.file.deleted_rows_count, 30);
        ASSERT_EQ(res.file.min_sequence_number, 2);
        manifest_filter_result_deinit(&res);

        /* The same v2-schema manifest in a format 3 table: no first_row_id to write into. */
        found[0] = found[1] = false;
        target.format_version = 3;
        ASSERT_EQ(manifest_filter_write(buf_slice(&in), &file, &remove, &target, &out, &res, &e),
                  MANIFEST_FILTER_E_INCOMPATIBLE);
        ASSERT_CONTAINS(e.message, "first_row_id");
        ASSERT_TRUE(!found[0] && !found[1]);
}

TEST(delete_manifests_never_get_a_first_row_id) {
        _cleanup_(buf_deinitp) Buf in, out;
        /* Equality delete files (content 2), committed by 111 at sequence 5. */
        static const EntryEdit edits[N_FILES] = {
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 2 },
                { MANIFEST_ENTRY_EXISTING, 40, 1, 1, -1, 2 },
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 2 },
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 2 },
                { MANIFEST_ENTRY_DELETED, 42, 2, 1, -1, 2 },
        };
        const char *paths[] = { "/wh/t/data/f1.parquet" };
        bool found[1] = { false };
        ManifestFilterPaths remove = { paths, 1, found };
        ManifestFile file = v3_list_entry();
        ManifestFilterResult res = { 0 };
        static const Want want[] = {
                { 0, MANIFEST_ENTRY_EXISTING, 111, 5, 5, -1 },
                { 1, MANIFEST_ENTRY_DELETED, 999, 1, 1, -1 },
                { 2, MANIFEST_ENTRY_EXISTING, 111, 5, 5, -1 },
                { 3, MANIFEST_ENTRY_EXISTING, 111, 5, 5, -1 },
        };
        Error e;

        committed_manifest(3, edits, &in);
        file.content = MANIFEST_CONTENT_DELETES;
        file.has_first_row_id = false;
        buf_init(&out, MAX_BYTES);
        if (manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e) != 0)
                TEST_FAIL("%s", e.message);
        assert_entries(buf_slice(&in), buf_slice(&out), want, 4, 2);
        ASSERT_EQ(res.file.content, MANIFEST_CONTENT_DELETES);
        ASSERT_EQ(res.n_removed, 1);
        ASSERT_EQ(res.removed[0].content, 2);
        ASSERT_EQ(res.removed[0].record_count, 20);
        ASSERT_EQ(res.file.existing_rows_count, 10 + 30 + 40);
        manifest_filter_result_deinit(&res);
}

TEST(untouched_duplicates_and_all_removed) {
        _cleanup_(buf_deinitp) Buf in, out;
        /* f2 is DELETED in the input: not live, so not found. */
        const char *none[] = { "/wh/t/data/nope.parquet", "/wh/t/data/f2.parquet",
                               "/wh/t/data/f1.parquet.bak", "/wh/t/data/F1.parquet" };
        const char *twice[] = { "/wh/t/data/f3.parquet", "/wh/t/data/f3.parquet" };
        const char *live[] = { "/wh/t/data/f0.parquet", "/wh/t/data/f1.parquet",
                               "/wh/t/data/f3.parquet", "/wh/t/data/f4.parquet" };
        bool found[4] = { false, false, false, false };
        ManifestFilterPaths remove = { none, 4, found };
        ManifestFile file = v3_list_entry();
        ManifestFilterResult res = { 0 };
        Error e;

        committed_manifest(3, v3_edits, &in);
        buf_init(&out, MAX_BYTES);
        ASSERT_EQ(manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e),
                  MANIFEST_FILTER_E_UNTOUCHED);
        ASSERT_EQ(out.len, 0);
        ASSERT_TRUE(!found[0] && !found[1] && !found[2] && !found[3]);
        remove.n_paths = 0;
        ASSERT_EQ(manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e),
                  MANIFEST_FILTER_E_UNTOUCHED);

        /* A path named twice is found once; named again for another manifest holding it (here
         * the same one), it is a duplicate: DELETED, but not removed twice. */
        remove = (ManifestFilterPaths){ twice, 2, found };
        ASSERT_OK(
                manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e));
        ASSERT_TRUE(found[0] && found[1]);
        ASSERT_EQ(res.n_removed, 1);
        ASSERT_EQ(res.n_duplicates, 0);
        manifest_filter_result_deinit(&res);
        out.len = 0;
        ASSERT_OK(
                manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e));
        ASSERT_EQ(res.n_removed, 0);
        ASSERT_EQ(res.n_duplicates, 1);
        ASSERT_EQ(res.file.deleted_files_count, 1);
        manifest_filter_result_deinit(&res);

        /* Every live file removed: a manifest of DELETED entries (kept for this snapshot by the
         * caller), min_sequence_number the commit's (no live entry). */
        memset(found, 0, sizeof(found));
        remove = (ManifestFilterPaths){ live, 4, found };
        out.len = 0;
        ASSERT_OK(
                manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e));
        ASSERT_EQ(res.file.existing_files_count, 0);
        ASSERT_EQ(res.file.existing_rows_count, 0);
        ASSERT_EQ(res.file.deleted_files_count, 4);
        ASSERT_EQ(res.file.deleted_rows_count, 10 + 20 + 40 + 50);
        ASSERT_EQ(res.file.min_sequence_number, 9);
        manifest_filter_result_deinit(&res);
}

TEST(limits_and_unreadable_input) {
        _cleanup_(buf_deinitp) Buf in, out, small;
        const char *paths[] = { "/wh/t/data/f1.parquet" };
        bool found[1] = { false };
        ManifestFilterPaths remove = { paths, 1, found };
        ManifestFile file = v3_list_entry();
        ManifestFilterTarget target = v3_target;
        ManifestFilterResult res = { 0 };
        static const EntryEdit null_seq[N_FILES] = {
                { MANIFEST_ENTRY_EXISTING, 50, 0, 0, -1, 0 },
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
                { MANIFEST_ENTRY_ADDED, 0, 0, 0, -1, 0 },
        };
        Error e;

        committed_manifest(3, v3_edits, &in);
        buf_init(&out, MAX_BYTES);

        /* More entries than the bound. */
        target.max_entries = N_FILES - 1;
        ASSERT_EQ(manifest_filter_write(buf_slice(&in), &file, &remove, &target, &out, &res, &e),
                  -E2BIG);
        ASSERT_TRUE(!found[0]);

        /* An output past its bound: nothing appended. */
        buf_init(&small, 64);
        ASSERT_EQ(manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &small, &res,
                                        &e),
                  -E2BIG);
        ASSERT_EQ(small.len, 0);
        ASSERT_TRUE(!found[0]);

        /* Not a manifest, a truncated one. */
        ASSERT_EQ(manifest_filter_write((Slice){ (const uint8_t *)"Obj\x01garbage", 11 }, &file,
                                        &remove, &v3_target, &out, &res, &e),
                  -EBADMSG);
        ASSERT_EQ(manifest_filter_write((Slice){ in.data, in.len - 20 }, &file, &remove, &v3_target,
                                        &out, &res, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "m.avro");
        ASSERT_EQ(out.len, 0);
        ASSERT_TRUE(!found[0]);
        buf_deinit(&in);

        /* An EXISTING entry without sequence numbers: nothing to write out. */
        committed_manifest(3, null_seq, &in);
        ASSERT_EQ(manifest_filter_write(buf_slice(&in), &file, &remove, &v3_target, &out, &res, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "sequence numbers");
        ASSERT_EQ(out.len, 0);
        ASSERT_TRUE(!found[0]);
}

static const char *summary_get(const json_t *summary, const char *key) {
        return json_string_value(json_object_get(summary, key));
}

/* What the commit path will do: filter the manifest holding the files, record the result in the
 * change, assign row ids, summarize. */
TEST(the_result_feeds_a_snapshot_change) {
        _cleanup_(buf_deinitp) Buf in, out;
        _cleanup_(json_decrefp) json_t *parent_summary = json_loads(
                "{\"operation\": \"append\", \"total-records\": \"200\", \"total-data-files\": "
                "\"5\", \"total-files-size\": \"5000\", \"total-delete-files\": \"0\", "
                "\"total-position-deletes\": \"0\", \"total-equality-deletes\": \"0\"}",
                0, NULL);
        _cleanup_(json_decrefp) json_t *summary = NULL;
        const char *paths[] = { "/wh/t/data/f1.parquet", "/wh/t/data/f4.parquet" };
        bool found[2] = { false, false };
        ManifestFilterPaths remove = { paths, 2, found };
        static const IcebergFixtureManifest other = {
                .path = "/wh/t/metadata/other.avro",
                .length = 4000,
                .sequence_number = 1,
                .min_sequence_number = 1,
                .added_snapshot_id = 10,
                .file_counts = { 1, 0, 0 },
                .row_counts = { 80, 0, 0 },
                .has_first_row_id = true,
                .first_row_id = 0,
        };
        ManifestFile *parent = calloc(2, sizeof(*parent));
        ManifestFile *kept = iceberg_fixture_manifest_files_new(&other, 1);
        ManifestFilterResult res = { 0 };
        SnapshotChange c = { 0 };
        int64_t next_row_id;
        Error e;

        ManifestFile m = v3_list_entry();

        ASSERT_TRUE(parent && kept);
        ASSERT_OK(manifest_file_copy(&m, &parent[0]));
        parent[1] = kept[0];
        free(kept);

        committed_manifest(3, v3_edits, &in);
        buf_init(&out, MAX_BYTES);
        ASSERT_OK(snapshot_change_reserve(&c, 0, 2));
        snapshot_change_keep_parent(&c, true, 111, 3, parent, 2);
        free(parent);

        if (manifest_filter_write(buf_slice(&in), &c.list[0], &remove, &v3_target, &out, &res,
                                  &e) != 0)
                TEST_FAIL("%s", e.message);
        for (size_t i = 0; i < res.n_removed; i++)
                ASSERT_OK(snapshot_change_remove(&c, res.removed[i].path, c.list[0].path,
                                                 res.removed[i].content,
                                                 res.removed[i].record_count,
                                                 res.removed[i].file_size));
        ASSERT_OK(snapshot_change_rewrite(&c, 0, &res.file));
        manifest_filter_result_deinit(&res);

        /* The rewritten manifest takes a new range of its existing rows (f0 and f3: 50); the
         * kept one keeps its own; DELETED entries take none. */
        ASSERT_OK(snapshot_change_assign_row_ids(&c, 5000, &next_row_id, &e));
        ASSERT_TRUE(c.list[0].has_first_row_id);
        ASSERT_EQ(c.list[0].first_row_id, 5000);
        ASSERT_EQ(c.list[1].first_row_id, 0);
        ASSERT_EQ(next_row_id, 5050);

        ASSERT_OK(snapshot_change_summary(&c, parent_summary, "main", 1, &summary, &e));
        ASSERT_STREQ(summary_get(summary, "operation"), "delete");
        ASSERT_STREQ(summary_get(summary, "deleted-data-files"), "2");
        ASSERT_STREQ(summary_get(summary, "deleted-records"), "70");
        ASSERT_STREQ(summary_get(summary, "removed-files-size"), "2005");
        ASSERT_STREQ(summary_get(summary, "total-records"), "130");
        ASSERT_STREQ(summary_get(summary, "total-data-files"), "3");
        ASSERT_STREQ(summary_get(summary, "manifests-created"), "1");
        ASSERT_STREQ(summary_get(summary, "manifests-kept"), "1");
        ASSERT_STREQ(summary_get(summary, "manifests-replaced"), "1");
        ASSERT_TRUE(!json_object_get(summary, "added-records"));
        snapshot_change_deinit(&c);
}
