/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/manifest_fields.c: the manifest entry field table against the entry schemas we embed
 * (proto/manifest_entry_v{2,3}.avsc, Java's), and the one reader and writer over it: a deletion
 * vector's fields 143-145 written and read back, a v2 entry without them, a field whose type is
 * not the table's refused. */
#include <errno.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "avro/records.h"
#include "iceberg/data_file.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_write.h"
#include "proto_schemas.h"
#include "test.h"

static const char *const schema_text =
        "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"}]}";
static const char *const spec_text = "{\"spec-id\":0,\"fields\":[]}";

/* The Avro type of a schema field: its non-null branch; whether it is a union with null. */
static const json_t *avsc_type(const json_t *field, bool *ret_is_optional) {
        const json_t *t = json_object_get(field, "type");

        *ret_is_optional = false;
        if (json_is_array(t)) {
                ASSERT_EQ(json_array_size(t), 2);
                ASSERT_STREQ(json_string_value(json_array_get(t, 0)), "null");
                *ret_is_optional = true;
                t = json_array_get(t, 1);
        }
        return json_is_object(t) ? json_object_get(t, "type") : t;
}

static const char *avro_type_name(avro_type_t t) {
        switch (t) {
        case AVRO_INT32:
                return "int";
        case AVRO_INT64:
                return "long";
        case AVRO_STRING:
                return "string";
        case AVRO_BYTES:
                return "bytes";
        case AVRO_RECORD:
                return "record";
        case AVRO_ARRAY:
                return "array";
        default:
                return "?";
        }
}

/* Every field of one record of the schema is the table's, as the table says for `version`. */
static size_t check_record(const json_t *record, ManifestFieldRecord which, int version) {
        const json_t *field;
        size_t i;

        json_array_foreach (json_object_get(record, "fields"), i, field) {
                const ManifestFieldDef *def = manifest_fields_def(
                        (int32_t)json_integer_value(json_object_get(field, "field-id")));
                bool is_optional;
                const json_t *type = avsc_type(field, &is_optional);

                if (!def)
                        TEST_FAIL("v%d field '%s' is not in the table", version,
                                  json_string_value(json_object_get(field, "name")));
                ASSERT_STREQ(def->name, json_string_value(json_object_get(field, "name")));
                ASSERT_EQ(def->record, which);
                ASSERT_STREQ(avro_type_name(def->type), json_string_value(type));
                ASSERT_TRUE(def->versions & MANIFEST_VERSION_BIT(version));
                ASSERT_EQ(is_optional, !(def->required_in & MANIFEST_VERSION_BIT(version)));
                if (def->id == MANIFEST_FIELD_DATA_FILE)
                        ASSERT_EQ(check_record(json_object_get(field, "type"),
                                               MANIFEST_RECORD_DATA_FILE, version),
                                  version == 3 ? 20 : 17);
        }
        return i;
}

TEST(table_matches_the_embedded_entry_schemas) {
        const ManifestFieldDef *table = manifest_fields_table();
        const char *texts[] = { proto_manifest_entry_v2_avsc, proto_manifest_entry_v3_avsc };

        for (int v = 2; v <= 3; v++) {
                json_t *schema = json_loads(texts[v - 2], 0, NULL);
                size_t n_entry = 0, n_data_file = 0;

                ASSERT_TRUE(schema);
                /* Both ways: every field the table has in version v is in the schema. */
                for (size_t i = 0; i < MANIFEST_N_ROWS; i++)
                        if ((table[i].versions & MANIFEST_VERSION_BIT(v)) &&
                            table[i].record == MANIFEST_RECORD_ENTRY)
                                n_entry++;
                        else if (table[i].versions & MANIFEST_VERSION_BIT(v))
                                n_data_file++;
                ASSERT_EQ(n_entry, 5);
                ASSERT_EQ(n_data_file, v == 3 ? 20 : 17);
                ASSERT_EQ(check_record(schema, MANIFEST_RECORD_ENTRY, v), n_entry);
                json_decref(schema);
        }
        for (size_t i = 0; i < MANIFEST_N_ROWS; i++) {
                ASSERT_TRUE(manifest_fields_def(table[i].id) == &table[i]);
                ASSERT_EQ(table[i].required_in & ~table[i].versions, 0);
        }
        ASSERT_TRUE(manifest_fields_def(141) == NULL); /* reserved: spec_id */
}

/* A manifest of one entry in the v`version` layout, filled by manifest_fields_write() from *f
 * and `edit_schema` applied to the schema first (NULL: none). */
static void write_one(int version, const ManifestEntryFields *f, void (*edit_schema)(json_t *),
                      Buf *out) {
        json_t *spec_schema = json_loads(schema_text, 0, NULL),
               *spec = json_loads(spec_text, 0, NULL), *schema;
        ManifestWriteSpec ws = { .format_version = version,
                                 .schema = spec_schema,
                                 .partition_spec = spec };
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        ManifestFieldsLayout l;
        FieldsRecord entry;
        avro_value_t value, df;
        char *text;
        Error e;

        ASSERT_OK(manifest_write_schema(&ws, &schema, &e));
        if (edit_schema)
                edit_schema(schema);
        text = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
        ASSERT_OK(ocf_writer_new(text, OCF_CODEC_NULL, &w));
        ASSERT_OK(fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w), &entry, &e));
        manifest_fields_layout_init(&entry, &l);
        ASSERT_OK(manifest_fields_layout_nest(&l, &e));
        ASSERT_OK(ocf_writer_value_new(w, &value));
        ASSERT_OK(manifest_fields_write(&l, &value, f, &df));
        ASSERT_OK(ocf_writer_append(w, &value));
        avro_value_decref(&value);
        buf_init(out, 1u << 20);
        ASSERT_OK(ocf_writer_finish(w, out));
        free(text);
        json_decref(schema);
        json_decref(spec_schema);
        json_decref(spec);
}

/* Reads the one entry of `bytes` with manifest_fields_read_all(); *f borrows from *ret_reader. */
static int read_one(const Buf *bytes, OcfReader **ret_reader, ManifestEntryFields *f,
                    bool *ret_has_144, Error *e) {
        ManifestFieldsLayout l;
        FieldsRecord entry;
        avro_value_t *datum;

        ASSERT_OK(ocf_reader_open(buf_slice(bytes), ret_reader, e));
        ASSERT_OK(records_schema(*ret_reader, &entry, e));
        manifest_fields_layout_init(&entry, &l);
        ASSERT_OK(manifest_fields_layout_nest(&l, e));
        *ret_has_144 = manifest_fields_index(&l, MANIFEST_FIELD_CONTENT_OFFSET) >= 0;
        ASSERT_EQ(ocf_reader_read(*ret_reader, &datum, e), 1);
        *f = (ManifestEntryFields){ 0 };
        return manifest_fields_read_all(&l, datum, f, e);
}

static const ManifestEntryFields deletion_vector = {
        .status = { .is_set = true, .number = MANIFEST_ENTRY_ADDED },
        .content = { .is_set = true, .number = 1 },
        .file_path = { .is_set = true, .str = "s3://b/t/data/dv-1.puffin" },
        .file_format = { .is_set = true, .str = "PUFFIN" },
        .record_count = { .is_set = true, .number = 3 },
        .file_size_in_bytes = { .is_set = true, .number = 812 },
        .referenced_data_file = { .is_set = true, .str = "s3://b/t/data/f-1.parquet" },
        .content_offset = { .is_set = true, .number = 4 },
        .content_size_in_bytes = { .is_set = true, .number = 59 },
};

TEST(deletion_vector_fields_are_written_and_read_back) {
        _cleanup_(buf_deinitp) Buf bytes = { 0 };
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        ManifestEntry *entries = NULL;
        ManifestEntryFields f;
        size_t n = 0;
        bool has_144;
        Error e;

        write_one(3, &deletion_vector, NULL, &bytes);
        if (read_one(&bytes, &reader, &f, &has_144, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_TRUE(has_144);
        ASSERT_TRUE(f.referenced_data_file.is_set);
        ASSERT_STREQ(f.referenced_data_file.str, "s3://b/t/data/f-1.parquet");
        ASSERT_EQ(f.referenced_data_file.len, strlen("s3://b/t/data/f-1.parquet"));
        ASSERT_TRUE(f.content_offset.is_set);
        ASSERT_EQ(f.content_offset.number, 4);
        ASSERT_TRUE(f.content_size_in_bytes.is_set);
        ASSERT_EQ(f.content_size_in_bytes.number, 59);
        ASSERT_EQ(f.content.number, 1);
        ASSERT_EQ(f.record_count.number, 3);
        ASSERT_TRUE(!f.snapshot_id.is_set && !f.first_row_id.is_set && !f.equality_ids.is_set);
        ASSERT_TRUE(f.partition.is_set && avro_value_get_type(&f.partition.value) == AVRO_RECORD);

        /* ... and carried by the reader of committed entries. */
        if (manifest_entries_read(buf_slice(&bytes), 10, &entries, &n, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(entries[0].referenced_data_file, "s3://b/t/data/f-1.parquet");
        ASSERT_TRUE(entries[0].has_content_offset && entries[0].has_content_size_in_bytes);
        ASSERT_EQ(entries[0].content_offset, 4);
        ASSERT_EQ(entries[0].content_size_in_bytes, 59);
        manifest_entries_free(entries, n);
}

TEST(v2_entry_without_them_reads_absent) {
        json_t *spec_schema = json_loads(schema_text, 0, NULL),
               *spec = json_loads(spec_text, 0, NULL);
        ManifestWriteSpec ws = { .format_version = 2,
                                 .schema = spec_schema,
                                 .partition_spec = spec };
        DataFile file = { .location = (char *)"s3://b/t/data/f-1.parquet",
                          .format = DATA_FILE_FORMAT_PARQUET,
                          .record_count = 10,
                          .file_size_in_bytes = 1000 };
        _cleanup_(buf_deinitp) Buf bytes = { 0 };
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        ManifestEntry *entries = NULL;
        ManifestEntryFields f;
        size_t n = 0;
        bool has_144;
        Error e;

        /* The writer of described files (manifest_write.c), v2 layout: Java's, which has 143. */
        buf_init(&bytes, 1u << 20);
        ASSERT_OK(manifest_write(&ws, &file, 1, &bytes, &e));
        if (read_one(&bytes, &reader, &f, &has_144, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_TRUE(!has_144);
        ASSERT_TRUE(!f.referenced_data_file.is_set);
        ASSERT_TRUE(!f.content_offset.is_set);
        ASSERT_TRUE(!f.content_size_in_bytes.is_set);
        ASSERT_TRUE(!f.first_row_id.is_set);
        ASSERT_TRUE(f.status.is_set && f.status.number == MANIFEST_ENTRY_ADDED);
        ASSERT_TRUE(f.content.is_set && f.content.number == 0);
        ASSERT_EQ(f.file_size_in_bytes.number, 1000);
        ASSERT_STREQ(f.file_format.str, "PARQUET");
        ASSERT_EQ(f.file_format.len, strlen("PARQUET"));

        if (manifest_entries_read(buf_slice(&bytes), 10, &entries, &n, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_EQ(n, 1);
        ASSERT_TRUE(!entries[0].referenced_data_file && !entries[0].has_content_offset &&
                    !entries[0].has_content_size_in_bytes);
        manifest_entries_free(entries, n);
        json_decref(spec_schema);
        json_decref(spec);
}

/* data_file.content_offset (144) declared a string: not the table's long. */
static void content_offset_as_string(json_t *schema) {
        json_t *field;
        size_t i;

        json_array_foreach (json_object_get(schema, "fields"), i, field) {
                json_t *df_field;
                size_t k;

                if (json_integer_value(json_object_get(field, "field-id")) !=
                    MANIFEST_FIELD_DATA_FILE)
                        continue;
                json_array_foreach (json_object_get(json_object_get(field, "type"), "fields"), k,
                                    df_field)
                        if (json_integer_value(json_object_get(df_field, "field-id")) ==
                            MANIFEST_FIELD_CONTENT_OFFSET)
                                ASSERT_OK(
                                        json_object_set_new(df_field, "type",
                                                            json_pack("[s,s]", "null", "string")));
        }
}

TEST(type_mismatch_is_refused) {
        ManifestEntryFields dv = deletion_vector;
        _cleanup_(buf_deinitp) Buf bytes = { 0 };
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        ManifestEntry *entries = NULL;
        ManifestEntryFields f;
        size_t n = 0;
        bool has_144;
        Error e;

        /* The table says long: the writer refuses a string for it. */
        dv.content_offset = (ManifestFieldValue){ .is_set = true, .str = "4" };
        /* Written by hand: the string "4" in field 144. */
        {
                json_t *spec_schema = json_loads(schema_text, 0, NULL),
                       *spec = json_loads(spec_text, 0, NULL), *schema;
                ManifestWriteSpec ws = { .format_version = 3,
                                         .schema = spec_schema,
                                         .partition_spec = spec };
                _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
                ManifestFieldsLayout l;
                FieldsRecord entry;
                avro_value_t value, df;
                char *text;

                ASSERT_OK(manifest_write_schema(&ws, &schema, &e));
                content_offset_as_string(schema);
                text = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
                ASSERT_OK(ocf_writer_new(text, OCF_CODEC_NULL, &w));
                ASSERT_OK(fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w),
                                             &entry, &e));
                manifest_fields_layout_init(&entry, &l);
                ASSERT_OK(manifest_fields_layout_nest(&l, &e));
                ASSERT_OK(ocf_writer_value_new(w, &value));
                ASSERT_EQ(manifest_fields_write(&l, &value, &dv, &df), -EINVAL);
                dv.content_offset.is_set = false;
                ASSERT_OK(manifest_fields_write(&l, &value, &dv, &df));
                ASSERT_OK(
                        fields_set_string(&df,
                                          manifest_fields_index(&l, MANIFEST_FIELD_CONTENT_OFFSET),
                                          "4"));
                ASSERT_OK(ocf_writer_append(w, &value));
                avro_value_decref(&value);
                buf_init(&bytes, 1u << 20);
                ASSERT_OK(ocf_writer_finish(w, &bytes));
                free(text);
                json_decref(schema);
                json_decref(spec_schema);
                json_decref(spec);
        }

        ASSERT_EQ(read_one(&bytes, &reader, &f, &has_144, &e), -EBADMSG);
        ASSERT_STREQ(e.message, "field 'content_offset' is a string, expected long");
        /* Read so far, in table order; nothing after it. */
        ASSERT_TRUE(f.referenced_data_file.is_set && !f.content_size_in_bytes.is_set);

        ASSERT_EQ(manifest_entries_read(buf_slice(&bytes), 10, &entries, &n, &e), -EBADMSG);
        ASSERT_STREQ(e.message, "entry 0: field 'content_offset' is a string, expected long");
}
