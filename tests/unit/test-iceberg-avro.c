/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/ Avro parts: the OCF layer (both codecs, corrupt input), manifest lists (v2/v3
 * round trips with every field, v1 reading, write refusals) and staged manifests (each
 * staging rule, partition summaries). Test manifests are built with our OCF writer from
 * Java-shaped schemas in tests/data/. */
#include <errno.h>
#include <jansson.h>
#include <zlib.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_list.h"
#include "iceberg-fixture.h"
#include "test.h"
#include "util/utf8.h"

#define MAX_FILE_BYTES (64u << 20)

/* ---- helpers ---------------------------------------------------------------------------- */

static json_t *load_json(const char *relative_path) {
        json_error_t jerr;
        size_t len;
        char *text = test_read_source_file(relative_path, &len);
        json_t *j = json_loadb(text, len, 0, &jerr);

        if (!j)
                TEST_FAIL("%s: %s", relative_path, jerr.text);
        free(text);
        return j;
}

static Slice slice_of(const Buf *b) {
        return buf_slice(b);
}

/* Sets every optional (union) field of a record value to null. */
static void set_all_null(avro_value_t *rec) {
        avro_schema_t s = avro_value_get_schema(rec);

        for (size_t i = 0; i < avro_schema_record_size(s); i++)
                if (avro_typeof(avro_schema_record_field_get_by_index(s, (int)i)) == AVRO_UNION)
                        ASSERT_OK(fields_set_null(rec, (int)i));
}

/* A value for one field of a hand-built record; the member that counts follows the field's
 * Avro type (in a union with null, the other branch's). */
typedef struct TestValue {
        bool is_null;
        int64_t n;     /* int, long, boolean */
        const char *s; /* string; bytes: `len` of them */
        size_t len;
        double d;
} TestValue;

/* Sets field `index` of a record value, by the type the schema gives it. */
static void set_value(avro_value_t *rec, int index, const TestValue *tv) {
        avro_schema_t fs = avro_schema_record_field_get_by_index(avro_value_get_schema(rec), index);
        avro_value_t child;

        if (avro_typeof(fs) == AVRO_UNION)
                fs = avro_schema_union_branch(fs, 1);
        if (tv->is_null) {
                ASSERT_OK(fields_set_null(rec, index));
                return;
        }
        switch (avro_typeof(fs)) {
        case AVRO_INT32:
                ASSERT_OK(fields_set_int(rec, index, (int32_t)tv->n));
                break;
        case AVRO_INT64:
                ASSERT_OK(fields_set_long(rec, index, tv->n));
                break;
        case AVRO_BOOLEAN:
                ASSERT_OK(fields_set_bool(rec, index, tv->n != 0));
                break;
        case AVRO_STRING:
                ASSERT_OK(fields_set_string(rec, index, tv->s));
                break;
        case AVRO_BYTES:
                ASSERT_OK(fields_set_bytes(rec, index, tv->s, tv->len));
                break;
        case AVRO_DOUBLE:
                ASSERT_OK(fields_set_value(rec, index, &child));
                ASSERT_EQ(avro_value_set_double(&child, tv->d), 0);
                break;
        default:
                TEST_FAIL("unsupported field type in test");
        }
}

/* A field of a hand-built record, found by its Iceberg field id. */
typedef struct TestField {
        int64_t id;
        TestValue value;
} TestField;

static void set_fields(avro_value_t *rec, const FieldsRecord *fr, const TestField *fields,
                       size_t n) {
        for (size_t i = 0; i < n; i++) {
                int index = fields_index(fr, fields[i].id);

                ASSERT_TRUE(index >= 0);
                set_value(rec, index, &fields[i].value);
        }
}

typedef struct TestEntry {
        int32_t status;
        const char *path;
        int64_t record_count;
        int64_t file_size;
        bool null_record_count;
        bool has_snapshot_id, has_sequence_number, has_file_sequence_number, has_first_row_id;
        int32_t content;
        TestValue part[4];
} TestEntry;

typedef struct TestManifest {
        int version;                  /* entry schema: 2 or 3 */
        const char *format_version;   /* metadata; NULL: absent */
        const char *content;          /* metadata; NULL: absent */
        const char *partition_fields; /* JSON array of the r102 fields; NULL: unpartitioned */
        bool optional_counts;         /* record_count and file_size as ["null","long"] */
        OcfCodec codec;
        const TestEntry *entries;
        size_t n_entries;
} TestManifest;

/* A v3 data manifest of `entries`, with the metadata Java writes; tests change the rest. */
static TestManifest v3_manifest(const TestEntry *entries, size_t n_entries) {
        return (TestManifest){
                .version = 3,
                .format_version = "3",
                .content = "data",
                .entries = entries,
                .n_entries = n_entries,
        };
}

static char *entry_schema_text(const TestManifest *tm) {
        json_t *schema = load_json(tm->version == 2 ? "proto/manifest_entry_v2.avsc"
                                                    : "proto/manifest_entry_v3.avsc");
        json_t *df_fields =
                json_object_get(json_object_get(json_array_get(json_object_get(schema, "fields"),
                                                               4),
                                                "type"),
                                "fields");
        char *text;

        for (size_t i = 0; i < json_array_size(df_fields); i++) {
                json_t *f = json_array_get(df_fields, i);
                json_int_t id = json_integer_value(json_object_get(f, "field-id"));

                if (id == 102 && tm->partition_fields) {
                        json_t *fields = json_loads(tm->partition_fields, 0, NULL);

                        ASSERT_TRUE(fields);
                        ASSERT_OK(
                                json_object_set_new(json_object_get(f, "type"), "fields", fields));
                }
                if ((id == 103 || id == 104) && tm->optional_counts)
                        ASSERT_OK(
                                json_object_set_new(f, "type", json_pack("[s,s]", "null", "long")));
        }
        text = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(schema);
        return text;
}

static void set_partition(avro_value_t *tuple, const TestValue *values) {
        for (size_t i = 0; i < avro_schema_record_size(avro_value_get_schema(tuple)); i++)
                set_value(tuple, (int)i, &values[i]);
}

/* Builds a staged manifest the way Java's ManifestWriter would lay it out. */
static void build_manifest(const TestManifest *tm, Buf *out) {
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        char *schema = entry_schema_text(tm);
        FieldsRecord entry, df_rec;
        avro_value_t v;

        ASSERT_OK(ocf_writer_new(schema, tm->codec, &w));
        free(schema);
        ASSERT_OK(
                fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w), &entry, NULL));
        ASSERT_OK(fields_record_nested(&entry, fields_index(&entry, 2), &df_rec, NULL));

        ASSERT_OK(ocf_writer_set_meta(
                w, "schema",
                slice_from_str("{\"type\":\"struct\",\"schema-id\":0,\"fields\":[{\"id\":1,"
                               "\"name\":\"id\",\"required\":true,\"type\":\"long\"}]}")));
        ASSERT_OK(ocf_writer_set_meta(w, "partition-spec", slice_from_str("[]")));
        ASSERT_OK(ocf_writer_set_meta(w, "partition-spec-id", slice_from_str("0")));
        if (tm->format_version)
                ASSERT_OK(ocf_writer_set_meta(w, "format-version",
                                              slice_from_str(tm->format_version)));
        if (tm->content)
                ASSERT_OK(ocf_writer_set_meta(w, "content", slice_from_str(tm->content)));
        ASSERT_OK(ocf_writer_set_meta(w, "iceberg.schema", slice_from_str("{}")));

        ASSERT_OK(ocf_writer_value_new(w, &v));
        for (size_t i = 0; i < tm->n_entries; i++) {
                const TestEntry *te = &tm->entries[i];
                avro_value_t df, tuple;

                ASSERT_EQ(avro_value_reset(&v), 0);
                set_all_null(&v);
                ASSERT_OK(fields_set_int(&v, fields_index(&entry, 0), te->status));
                if (te->has_snapshot_id)
                        ASSERT_OK(fields_set_long(&v, fields_index(&entry, 1), 77));
                if (te->has_sequence_number)
                        ASSERT_OK(fields_set_long(&v, fields_index(&entry, 3), 5));
                if (te->has_file_sequence_number)
                        ASSERT_OK(fields_set_long(&v, fields_index(&entry, 4), 5));

                ASSERT_OK(fields_set_value(&v, fields_index(&entry, 2), &df));
                set_all_null(&df);
                ASSERT_OK(fields_set_int(&df, fields_index(&df_rec, 134), te->content));
                ASSERT_OK(fields_set_string(&df, fields_index(&df_rec, 100), te->path));
                ASSERT_OK(fields_set_string(&df, fields_index(&df_rec, 101), "PARQUET"));
                if (!te->null_record_count)
                        ASSERT_OK(
                                fields_set_long(&df, fields_index(&df_rec, 103), te->record_count));
                ASSERT_OK(fields_set_long(&df, fields_index(&df_rec, 104), te->file_size));
                if (te->has_first_row_id)
                        ASSERT_OK(fields_set_long(&df, fields_index(&df_rec, 142), 12));
                ASSERT_OK(fields_set_value(&df, fields_index(&df_rec, 102), &tuple));
                set_partition(&tuple, te->part);
                ASSERT_OK(ocf_writer_append(w, &v));
        }
        avro_value_decref(&v);
        buf_init(out, MAX_FILE_BYTES);
        ASSERT_OK(ocf_writer_finish(w, out));
}

/* Builds `tm` into *ret_file and parses it, failing the test on any error. */
static StagedManifest *parse_built_ok(const TestManifest *tm, const char *location, Buf *ret_file) {
        StagedManifest *m = NULL;
        Error e = { 0 };

        build_manifest(tm, ret_file);
        if (manifest_staged_parse(slice_of(ret_file), location, /* limits= */ NULL, &m, &e) < 0)
                TEST_FAIL("%s", e.message);
        return m;
}

/* Builds `tm` and returns what parsing it gives; a refusal must hand out no manifest. */
static int parse_built(const TestManifest *tm, const char *location, const ManifestLimits *limits,
                       Error *e) {
        _cleanup_(buf_deinitp) Buf file;
        StagedManifest *m = NULL;
        int r;

        build_manifest(tm, &file);
        r = manifest_staged_parse(slice_of(&file), location, limits, &m, e);
        if (r < 0)
                ASSERT_TRUE(!m);
        manifest_staged_free(m);
        return r;
}

/* Checks an error message: all of it when `message` is set, a part of it when `contains` is. */
static void assert_message(const Error *e, const char *message, const char *contains) {
        if (message)
                ASSERT_STREQ(e->message, message);
        if (contains)
                ASSERT_CONTAINS(e->message, contains);
}

static const TestEntry good_entry = {
        .status = 1,
        .path = "s3://b/t/data/a.parquet",
        .record_count = 100,
        .file_size = 4096,
};

/* Parses a two-entry manifest whose second entry is `te` and expects the error `want`. */
static void expect_entry_rejected(const TestEntry *te, const char *want) {
        TestEntry entries[2] = { good_entry, *te };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        Error e = { 0 };

        ASSERT_EQ(parse_built(&tm, "s3://b/t/metadata/m0.avro", /* limits= */ NULL, &e), -EINVAL);
        ASSERT_CONTAINS(
                e.message,
                "manifest 's3://b/t/metadata/m0.avro': entry 1 (s3://b/t/data/x.parquet): ");
        ASSERT_CONTAINS(e.message, want);
}

/* ---- OCF -------------------------------------------------------------------------------- */

static const char simple_schema[] =
        "{\"type\":\"record\",\"name\":\"r\",\"fields\":["
        "{\"name\":\"id\",\"type\":\"long\",\"field-id\":1},"
        "{\"name\":\"name\",\"type\":\"string\",\"field-id\":2},"
        "{\"name\":\"opt\",\"type\":[\"null\",\"int\"],\"default\":null,\"field-id\":3}]}";

static void build_simple(OcfCodec codec, size_t n, Buf *out) {
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        FieldsRecord rec;
        avro_value_t v;
        char name[300];

        ASSERT_OK(ocf_writer_new(simple_schema, codec, &w));
        ASSERT_OK(fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w), &rec, NULL));
        ASSERT_OK(ocf_writer_set_meta(w, "k1", slice_from_str("v1")));
        ASSERT_OK(ocf_writer_set_meta(w, "empty", slice_make("", 0)));
        ASSERT_EQ(ocf_writer_set_meta(w, "avro.codec", slice_from_str("snappy")), -EINVAL);
        ASSERT_OK(ocf_writer_value_new(w, &v));
        for (size_t i = 0; i < n; i++) {
                /* Long repetitive names: several blocks, and deflate has something to do. */
                memset(name, 'a' + (int)(i % 26), sizeof(name) - 1);
                name[sizeof(name) - 1] = 0;
                ASSERT_OK(fields_set_long(&v, fields_index(&rec, 1), (int64_t)i * 1000003));
                ASSERT_OK(fields_set_string(&v, fields_index(&rec, 2), name));
                if (i % 3 == 0)
                        ASSERT_OK(fields_set_null(&v, fields_index(&rec, 3)));
                else
                        ASSERT_OK(fields_set_int(&v, fields_index(&rec, 3), -(int32_t)i));
                ASSERT_OK(ocf_writer_append(w, &v));
        }
        if (n > 0)
                ASSERT_EQ(ocf_writer_set_meta(w, "late", slice_from_str("x")), -EBUSY);
        avro_value_decref(&v);
        buf_init(out, MAX_FILE_BYTES);
        ASSERT_OK(ocf_writer_finish(w, out));
        ASSERT_EQ(ocf_writer_finish(w, out), -EBUSY);
}

/* n_extra: header pairs beyond build_simple()'s (a copy's). */
static void check_simple(const Buf *file, OcfCodec codec, size_t n, size_t n_extra) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        FieldsRecord rec;
        Error e = { 0 };
        size_t count = 0;
        avro_value_t *v;
        int rr;

        ASSERT_OK(ocf_reader_open(slice_of(file), &r, &e));
        ASSERT_EQ(ocf_reader_codec(r), codec);
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(r, "k1"), "v1"));
        ASSERT_TRUE(ocf_reader_meta(r, "empty").ptr && ocf_reader_meta(r, "empty").len == 0);
        ASSERT_TRUE(!ocf_reader_meta(r, "absent").ptr);
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(r, "avro.codec"),
                                 codec == OCF_CODEC_DEFLATE ? "deflate" : "null"));
        ASSERT_EQ(ocf_reader_n_meta(r), 4 + n_extra);
        ASSERT_OK(fields_record_init(ocf_reader_schema_json(r), ocf_reader_schema(r), &rec, &e));
        ASSERT_EQ(fields_index(&rec, 3), 2);
        ASSERT_EQ(fields_index(&rec, 9), -ENOENT);

        while ((rr = ocf_reader_read(r, &v, &e)) > 0) {
                const char *s;
                size_t len;
                int64_t id;
                int32_t opt;

                ASSERT_EQ(fields_get_long(v, fields_index(&rec, 1), &id, &e), 1);
                ASSERT_EQ(id, (int64_t)count * 1000003);
                ASSERT_EQ(fields_get_string(v, fields_index(&rec, 2), &s, &len, &e), 1);
                ASSERT_EQ(len, 299);
                ASSERT_EQ(s[0], 'a' + (int)(count % 26));
                ASSERT_EQ(fields_get_int(v, fields_index(&rec, 3), &opt, &e),
                          count % 3 == 0 ? 0 : 1);
                if (count % 3)
                        ASSERT_EQ(opt, -(int32_t)count);
                /* Wrong types are errors, never silent conversions. */
                ASSERT_EQ(fields_get_int(v, fields_index(&rec, 2), &opt, &e), -EBADMSG);
                ASSERT_CONTAINS(e.message, "field 'name' is a string, expected int");
                ASSERT_EQ(ocf_reader_datum_index(r), count);
                count++;
        }
        if (rr < 0)
                TEST_FAIL("read failed: %s", e.message);
        ASSERT_EQ(count, n);
}

TEST(ocf_round_trip_null_codec) {
        _cleanup_(buf_deinitp) Buf file;

        build_simple(OCF_CODEC_NULL, 1000, &file);
        ASSERT_TRUE(file.len > 3 * OCF_WRITER_BLOCK_BYTES); /* several blocks */
        check_simple(&file, OCF_CODEC_NULL, 1000, 0);
}

TEST(ocf_round_trip_deflate_codec) {
        _cleanup_(buf_deinitp) Buf file;

        build_simple(OCF_CODEC_DEFLATE, 1000, &file);
        ASSERT_TRUE(file.len < 100000); /* it did compress */
        check_simple(&file, OCF_CODEC_DEFLATE, 1000, 0);
}

TEST(ocf_empty_file_has_no_datums) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        avro_value_t *v;
        Error e = { 0 };

        build_simple(OCF_CODEC_DEFLATE, 0, &file);
        ASSERT_OK(ocf_reader_open(slice_of(&file), &r, &e));
        ASSERT_EQ(ocf_reader_read(r, &v, &e), 0);
        ASSERT_EQ(ocf_reader_next_block(r, &e), 0);
}

/* Hand-built container: the writer refuses avro.* keys, the tests need any header. */
static void put_long(Buf *b, int64_t v) {
        uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);

        while (n & ~(uint64_t)0x7f) {
                ASSERT_OK(buf_append_byte(b, (uint8_t)((n & 0x7f) | 0x80)));
                n >>= 7;
        }
        ASSERT_OK(buf_append_byte(b, (uint8_t)n));
}

static void put_str(Buf *b, const char *s) {
        put_long(b, (int64_t)strlen(s));
        ASSERT_OK(buf_append_str(b, s));
}

static const uint8_t test_sync[16] = "0123456789abcdef";

static void build_raw(Buf *b, const char *schema, const char *codec) {
        buf_init(b, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(b, "Obj\x01", 4));
        put_long(b, codec ? 2 : 1);
        put_str(b, "avro.schema");
        put_str(b, schema);
        if (codec) {
                put_str(b, "avro.codec");
                put_str(b, codec);
        }
        put_long(b, 0);
        ASSERT_OK(buf_append(b, test_sync, 16));
}

static int read_all(const Buf *file, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        avro_value_t *v;
        int rr;

        rr = ocf_reader_open(slice_of(file), &r, e);
        if (rr < 0)
                return rr;
        while ((rr = ocf_reader_read(r, &v, e)) > 0)
                ;
        return rr;
}

/* A hand-built container that must be refused: a header naming `schema` and `codec`, then
 * `longs` zigzag-encoded (a block's datum count and size, then its bytes), then the sync
 * marker if `has_sync`. Reading it fails with `want`; the message is `message` or contains
 * `contains`. */
typedef struct RawCase {
        const char *schema, *codec;
        int64_t longs[4];
        size_t n_longs;
        bool has_sync;
        int want;
        const char *message, *contains;
} RawCase;

static void expect_raw_rejected(const RawCase *c) {
        _cleanup_(buf_deinitp) Buf b;
        Error e = { 0 };

        build_raw(&b, c->schema, c->codec);
        for (size_t i = 0; i < c->n_longs; i++)
                put_long(&b, c->longs[i]);
        if (c->has_sync)
                ASSERT_OK(buf_append(&b, test_sync, 16));
        ASSERT_EQ(read_all(&b, &e), c->want);
        assert_message(&e, c->message, c->contains);
}

TEST(ocf_rejects_corrupt_input) {
        static const RawCase cases[] = {
                { .schema = "\"long\"",
                  .codec = "snappy",
                  .want = -EOPNOTSUPP,
                  .message = "unknown codec 'snappy'" },
                { .schema = "{\"type\":\"nope\"}",
                  .want = -EBADMSG,
                  .contains = "invalid avro.schema" },
                /* avro-c would leak on this one; refused before it parses. */
                { .schema = "[{\"type\":\"record\",\"name\":\"a\",\"fields\":[]},"
                            "{\"type\":\"fixed\",\"name\":\"n.a\",\"size\":1}]",
                  .want = -EBADMSG,
                  .message = "invalid avro.schema: a type name is defined twice" },
                { .schema = "{not json", .want = -EBADMSG, .contains = "avro.schema is not JSON" },
                /* A string whose length claims far more than the block holds: checked before
                 * avro-c would allocate it. One datum of 6 bytes: just the length prefix. */
                { .schema = "\"string\"",
                  .longs = { 1, 6, 1000000000000 },
                  .n_longs = 3,
                  .has_sync = true,
                  .want = -EBADMSG,
                  .contains = "block 0, datum 0: truncated string or invalid length" },
        };
        _cleanup_(buf_deinitp) Buf good, b;
        Error e = { 0 };

        ASSERT_EQ(read_all(&(Buf){ .data = (uint8_t *)"Obj", .len = 3 }, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "bad magic");
        ASSERT_EQ(read_all(&(Buf){ .data = (uint8_t *)"PAR1xxxxxxxx", .len = 12 }, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "not an Avro container file");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                expect_raw_rejected(&cases[i]);

        build_simple(OCF_CODEC_NULL, 1000, &good);

        /* Every truncation is an error, never a crash or a short read taken as the end. */
        for (size_t cut = 1; cut < good.len; cut += 997) {
                Buf t = { .data = good.data, .len = good.len - cut };

                ASSERT_TRUE(read_all(&t, &e) < 0);
        }

        /* The sync marker after the second block. */
        buf_init(&b, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&b, good.data, good.len));
        {
                _cleanup_(ocf_reader_freep) OcfReader *r = NULL;

                ASSERT_OK(ocf_reader_open(slice_of(&b), &r, &e));
                ASSERT_EQ(ocf_reader_next_block(r, &e), 1);
                ASSERT_EQ(ocf_reader_next_block(r, &e), 1);
        }
        /* Corrupt the last byte of the file: the last block's sync marker. */
        b.data[b.len - 1] ^= 0xff;
        ASSERT_EQ(read_all(&b, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, ": sync marker mismatch");
        ASSERT_TRUE(strncmp(e.message, "block ", 6) == 0);
        b.data[b.len - 1] ^= 0xff;
        ASSERT_OK(read_all(&b, &e));

        /* Trailing garbage after the last block. */
        ASSERT_OK(buf_append(&b, "\x02", 1));
        ASSERT_EQ(read_all(&b, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "truncated block header");
}

TEST(ocf_rejects_corrupt_deflate_and_bad_counts) {
        static const RawCase cases[] = {
                /* A block claiming more datums than its bytes can hold. */
                { .schema = "\"long\"",
                  .longs = { 1000, 1, 7 },
                  .n_longs = 3,
                  .has_sync = true,
                  .want = -EBADMSG,
                  .contains = "block 0: 1000 datums cannot fill 1 bytes" },
                /* Bytes left over after the last datum of a block. */
                { .schema = "\"long\"",
                  .longs = { 1, 2, 7, 8 },
                  .n_longs = 4,
                  .has_sync = true,
                  .want = -EBADMSG,
                  .contains = "block 0: 1 bytes after its last datum" },
                /* A block size larger than the file. */
                { .schema = "\"long\"",
                  .longs = { 1, 1 << 30 },
                  .n_longs = 2,
                  .want = -EBADMSG,
                  .contains = "block 0: size 1073741824 exceeds" },
                /* An array block count that would make avro-c loop forever on null items. */
                { .schema = "{\"type\":\"array\",\"items\":\"null\"}",
                  .longs = { 1, 10, INT64_MAX / 2, 0 },
                  .n_longs = 4,
                  .has_sync = true,
                  .want = -E2BIG,
                  .contains = "array block of" },
        };
        _cleanup_(buf_deinitp) Buf good, b;
        Error e = { 0 };

        build_simple(OCF_CODEC_DEFLATE, 10, &good);
        {
                _cleanup_(ocf_reader_freep) OcfReader *r = NULL;

                ASSERT_OK(ocf_reader_open(slice_of(&good), &r, &e));
                ASSERT_EQ(ocf_reader_next_block(r, &e), 1);
                ASSERT_EQ(ocf_reader_block_remaining(r), 10);
        }
        /* Flip bits in the middle of the compressed block. */
        buf_init(&b, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&b, good.data, good.len));
        b.data[b.len - 16 - 20] ^= 0x55;
        b.data[b.len - 16 - 21] ^= 0xaa;
        ASSERT_TRUE(read_all(&b, &e) < 0);
        ASSERT_CONTAINS(e.message, "block 0");

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                expect_raw_rejected(&cases[i]);
}

TEST(ocf_rejects_deflate_bomb) {
        _cleanup_(buf_deinitp) Buf b;
        uint8_t *zeros = calloc(1, OCF_MAX_BLOCK_BYTES + 1024);
        uint8_t *packed = malloc(OCF_MAX_BLOCK_BYTES / 100);
        z_stream z = { 0 };
        Error e = { 0 };

        ASSERT_TRUE(zeros && packed);
        ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = zeros;
        z.avail_in = OCF_MAX_BLOCK_BYTES + 1024;
        z.next_out = packed;
        z.avail_out = OCF_MAX_BLOCK_BYTES / 100;
        ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);

        build_raw(&b, "\"boolean\"", "deflate");
        put_long(&b, 1);
        put_long(&b, (int64_t)z.total_out);
        ASSERT_OK(buf_append(&b, packed, z.total_out));
        ASSERT_OK(buf_append(&b, test_sync, 16));
        (void)deflateEnd(&z);
        free(zeros);
        free(packed);
        ASSERT_EQ(read_all(&b, &e), -E2BIG);
        ASSERT_CONTAINS(e.message, "block 0: decompressed size exceeds");
}

/* ---- manifest lists --------------------------------------------------------------------- */

/* Three entries: a partitioned data manifest, a delete manifest, an unpartitioned data
 * manifest with key metadata. */
static const IcebergFixtureSummary sample_summaries[] = {
        { .contains_nan = -1,
          .lower = ICEBERG_FIXTURE_BYTES("\x0a\x00\x00\x00"),
          .upper = ICEBERG_FIXTURE_BYTES("\x64\x00\x00\x00") },
        { .contains_null = true, .contains_nan = 0, .lower = ICEBERG_FIXTURE_BYTES("alpha") },
};

static const IcebergFixtureManifest sample_manifests[] = {
        { .path = "s3://b/t/metadata/staged-1-m0.avro",
          .length = 7012,
          .partition_spec_id = 1,
          .sequence_number = 35,
          .min_sequence_number = 35,
          .added_snapshot_id = 987134631982734,
          .file_counts = { 3, 0, 0 },
          .row_counts = { 375, 0, 0 },
          .has_partitions = true,
          .partitions = sample_summaries,
          .n_partitions = ELEMENTSOF(sample_summaries),
          .has_first_row_id = true,
          .first_row_id = 1000 },
        { .path = "s3://b/t/metadata/deletes-m1.avro",
          .length = 5000,
          .content = 1,
          .sequence_number = 34,
          .min_sequence_number = 10,
          .added_snapshot_id = 42,
          .file_counts = { 1, 2, 3 },
          .row_counts = { 4, 5, 6 },
          .has_partitions = true },
        { .path = "s3://b/t/metadata/old-m2.avro",
          .length = 9000,
          .sequence_number = 1,
          .min_sequence_number = 1,
          .added_snapshot_id = INT64_MAX,
          .file_counts = { INT32_MAX, 7, 0 },
          .row_counts = { 925, INT64_MAX / 4, 0 },
          .key_metadata = ICEBERG_FIXTURE_BYTES("\x00\x01\xfe\xff"),
          .has_first_row_id = true,
          .first_row_id = 925 },
};

static ManifestFile *sample_files(size_t *ret_n) {
        *ret_n = ELEMENTSOF(sample_manifests);
        return iceberg_fixture_manifest_files_new(sample_manifests, ELEMENTSOF(sample_manifests));
}

static void assert_bufs_equal(bool has_a, const Buf *a, bool has_b, const Buf *b) {
        ASSERT_EQ(has_a, has_b);
        if (!has_a)
                return;
        ASSERT_EQ(a->len, b->len);
        ASSERT_TRUE(a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void assert_files_equal(const ManifestFile *a, const ManifestFile *b, int version) {
        ASSERT_STREQ(a->path, b->path);
        ASSERT_EQ(a->length, b->length);
        ASSERT_EQ(a->partition_spec_id, b->partition_spec_id);
        ASSERT_EQ(a->content, b->content);
        ASSERT_EQ(a->sequence_number, b->sequence_number);
        ASSERT_EQ(a->min_sequence_number, b->min_sequence_number);
        ASSERT_EQ(a->has_added_snapshot_id, b->has_added_snapshot_id);
        ASSERT_EQ(a->added_snapshot_id, b->added_snapshot_id);
        ASSERT_EQ(a->has_counts, b->has_counts);
        ASSERT_EQ(a->added_files_count, b->added_files_count);
        ASSERT_EQ(a->existing_files_count, b->existing_files_count);
        ASSERT_EQ(a->deleted_files_count, b->deleted_files_count);
        ASSERT_EQ(a->added_rows_count, b->added_rows_count);
        ASSERT_EQ(a->existing_rows_count, b->existing_rows_count);
        ASSERT_EQ(a->deleted_rows_count, b->deleted_rows_count);
        ASSERT_EQ(a->has_partitions, b->has_partitions);
        ASSERT_EQ(a->n_partitions, b->n_partitions);
        for (size_t i = 0; i < a->n_partitions; i++) {
                const PartitionFieldSummary *x = &a->partitions[i], *y = &b->partitions[i];

                ASSERT_EQ(x->contains_null, y->contains_null);
                ASSERT_EQ(x->has_contains_nan, y->has_contains_nan);
                ASSERT_EQ(x->contains_nan, y->contains_nan);
                assert_bufs_equal(x->has_lower_bound, &x->lower_bound, y->has_lower_bound,
                                  &y->lower_bound);
                assert_bufs_equal(x->has_upper_bound, &x->upper_bound, y->has_upper_bound,
                                  &y->upper_bound);
        }
        assert_bufs_equal(a->has_key_metadata, &a->key_metadata, b->has_key_metadata,
                          &b->key_metadata);
        if (version >= 3) {
                ASSERT_EQ(a->has_first_row_id, b->has_first_row_id);
                ASSERT_EQ(a->first_row_id, b->first_row_id);
        } else
                ASSERT_TRUE(!b->has_first_row_id);
}

static void round_trip_list(int version) {
        _cleanup_(buf_deinitp) Buf out;
        ManifestListHeader h = {
                .format_version = version,
                .snapshot_id = 987134631982734,
                .has_parent_snapshot_id = version == 3,
                .parent_snapshot_id = 987134631982733, .sequence_number = 35,
                .has_first_row_id = version == 3, .first_row_id = 1000,
        }, got;
        ManifestFile *files, *read = NULL;
        size_t n, n_read = 0;
        Error e = { 0 };

        files = sample_files(&n);
        buf_init(&out, MAX_FILE_BYTES);
        if (manifest_list_write(&h, files, n, &out, &e) < 0)
                TEST_FAIL("write: %s", e.message);
        if (manifest_list_read(slice_of(&out), &read, &n_read, &e) < 0)
                TEST_FAIL("read: %s", e.message);
        ASSERT_EQ(n_read, n);
        for (size_t i = 0; i < n; i++)
                assert_files_equal(&files[i], &read[i], version);

        ASSERT_OK(manifest_list_read_header(slice_of(&out), &got, &e));
        ASSERT_EQ(got.format_version, version);
        ASSERT_EQ(got.snapshot_id, h.snapshot_id);
        ASSERT_EQ(got.has_parent_snapshot_id, h.has_parent_snapshot_id);
        if (h.has_parent_snapshot_id)
                ASSERT_EQ(got.parent_snapshot_id, h.parent_snapshot_id);
        ASSERT_EQ(got.sequence_number, 35);
        ASSERT_EQ(got.has_first_row_id, version == 3);
        if (version == 3)
                ASSERT_EQ(got.first_row_id, 1000);

        /* Exactly Java's metadata keys, and deflate. */
        {
                _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
                static const char *const keys_v3[] = { "avro.schema",     "avro.codec",
                                                       "snapshot-id",     "parent-snapshot-id",
                                                       "sequence-number", "first-row-id",
                                                       "format-version",  "iceberg.schema" };
                json_t *schema;

                ASSERT_OK(ocf_reader_open(slice_of(&out), &r, &e));
                ASSERT_EQ(ocf_reader_codec(r), OCF_CODEC_DEFLATE);
                ASSERT_EQ(ocf_reader_n_meta(r), version == 3 ? 8 : 7);
                for (size_t i = 0; i < ELEMENTSOF(keys_v3); i++)
                        if (version == 3 || strcmp(keys_v3[i], "first-row-id") != 0)
                                ASSERT_TRUE(ocf_reader_meta(r, keys_v3[i]).ptr);
                if (!h.has_parent_snapshot_id)
                        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(r, "parent-snapshot-id"), "null"));
                ASSERT_TRUE(slice_eq_str(ocf_reader_meta(r, "format-version"),
                                         version == 3 ? "3" : "2"));
                ASSERT_TRUE(slice_eq_str(ocf_reader_meta(r, "snapshot-id"), "987134631982734"));

                /* The Iceberg schema: struct of fields 500-520 with Iceberg types. */
                schema = json_loadb((const char *)ocf_reader_meta(r, "iceberg.schema").ptr,
                                    ocf_reader_meta(r, "iceberg.schema").len, 0, NULL);
                ASSERT_TRUE(schema);
                ASSERT_STREQ(json_string_value(json_object_get(schema, "type")), "struct");
                ASSERT_EQ(json_integer_value(json_object_get(schema, "schema-id")), 0);
                ASSERT_EQ(json_array_size(json_object_get(schema, "fields")),
                          version == 3 ? 16 : 15);
                {
                        json_t *f0 = json_array_get(json_object_get(schema, "fields"), 0);
                        json_t *parts = json_array_get(json_object_get(schema, "fields"), 13);
                        json_t *list = json_object_get(parts, "type");
                        json_t *elem = json_object_get(list, "element");

                        ASSERT_EQ(json_integer_value(json_object_get(f0, "id")), 500);
                        ASSERT_STREQ(json_string_value(json_object_get(f0, "name")),
                                     "manifest_path");
                        ASSERT_TRUE(json_is_true(json_object_get(f0, "required")));
                        ASSERT_STREQ(json_string_value(json_object_get(f0, "type")), "string");
                        ASSERT_EQ(json_integer_value(json_object_get(parts, "id")), 507);
                        ASSERT_TRUE(json_is_false(json_object_get(parts, "required")));
                        ASSERT_STREQ(json_string_value(json_object_get(list, "type")), "list");
                        ASSERT_EQ(json_integer_value(json_object_get(list, "element-id")), 508);
                        ASSERT_TRUE(json_is_true(json_object_get(list, "element-required")));
                        ASSERT_STREQ(json_string_value(json_object_get(
                                             json_array_get(json_object_get(elem, "fields"), 2),
                                             "type")),
                                     "binary");
                }
                json_decref(schema);
        }

        manifest_list_files_free(files, n);
        manifest_list_files_free(read, n_read);
}

TEST(manifest_list_v3_round_trip_every_field) {
        round_trip_list(3);
}

TEST(manifest_list_v2_round_trip_every_field) {
        round_trip_list(2);
}

/* Format 1 (Java's V1Writer, for v1 tables with snapshot-id inheritance): fields 500-514 and
 * 519 only, no sequence-number key; read back, content is data and sequence numbers are 0. */
TEST(manifest_list_v1_round_trip) {
        _cleanup_(buf_deinitp) Buf out;
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        ManifestListHeader h = {
                .format_version = 1, .snapshot_id = 77, .has_parent_snapshot_id = true,
                .parent_snapshot_id = 76, .sequence_number = 9,
        }, got;
        ManifestFile *files, *read = NULL;
        size_t n, n_read = 0;
        json_t *schema;
        Error e = { 0 };

        files = sample_files(&n);
        /* Drop the delete manifest (index 1): v1 holds data only. */
        manifest_file_deinit(&files[1]);
        files[1] = files[2];
        n = 2;
        buf_init(&out, MAX_FILE_BYTES);
        if (manifest_list_write(&h, files, n, &out, &e) < 0)
                TEST_FAIL("write: %s", e.message);
        ASSERT_OK(manifest_list_read(slice_of(&out), &read, &n_read, &e));
        ASSERT_EQ(n_read, 2);
        for (size_t i = 0; i < n; i++) {
                ManifestFile want = files[i];

                want.sequence_number = want.min_sequence_number = 0;
                assert_files_equal(&want, &read[i], 1);
                ASSERT_EQ(read[i].content, MANIFEST_CONTENT_DATA);
        }
        ASSERT_EQ(read[1].added_files_count, INT32_MAX);
        ASSERT_EQ(read[1].existing_rows_count, INT64_MAX / 4);

        ASSERT_OK(manifest_list_read_header(slice_of(&out), &got, &e));
        ASSERT_EQ(got.format_version, 1);
        ASSERT_EQ(got.snapshot_id, 77);
        ASSERT_EQ(got.parent_snapshot_id, 76);
        ASSERT_EQ(got.sequence_number, 0);
        ASSERT_TRUE(!got.has_first_row_id);

        ASSERT_OK(ocf_reader_open(slice_of(&out), &reader, &e));
        ASSERT_EQ(ocf_reader_n_meta(reader), 6);
        ASSERT_TRUE(!ocf_reader_meta(reader, "sequence-number").ptr);
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(reader, "format-version"), "1"));
        schema = json_loadb((const char *)ocf_reader_meta(reader, "iceberg.schema").ptr,
                            ocf_reader_meta(reader, "iceberg.schema").len, 0, NULL);
        ASSERT_TRUE(schema);
        {
                static const int64_t ids[] = { 500, 501, 502, 503, 504, 505,
                                               506, 507, 512, 513, 514, 519 };
                json_t *fields = json_object_get(schema, "fields");

                ASSERT_EQ(json_array_size(fields), ELEMENTSOF(ids));
                for (size_t i = 0; i < ELEMENTSOF(ids); i++)
                        ASSERT_EQ(json_integer_value(
                                          json_object_get(json_array_get(fields, i), "id")),
                                  ids[i]);
                /* added_snapshot_id is required (ManifestFile.SNAPSHOT_ID), counts optional. */
                ASSERT_TRUE(json_is_true(json_object_get(json_array_get(fields, 3), "required")));
                ASSERT_TRUE(json_is_false(json_object_get(json_array_get(fields, 4), "required")));
        }
        json_decref(schema);

        manifest_list_files_free(files, n);
        manifest_list_files_free(read, n_read);
}

TEST(manifest_list_empty_round_trip) {
        _cleanup_(buf_deinitp) Buf out;
        ManifestListHeader h = { .format_version = 3, .snapshot_id = 1, .has_first_row_id = true };
        ManifestFile *read = (ManifestFile *)1;
        size_t n = 99;
        Error e = { 0 };

        buf_init(&out, MAX_FILE_BYTES);
        ASSERT_OK(manifest_list_write(&h, NULL, 0, &out, &e));
        ASSERT_OK(manifest_list_read(slice_of(&out), &read, &n, &e));
        ASSERT_EQ(n, 0);
        ASSERT_TRUE(!read);
}

TEST(manifest_list_write_refuses_what_java_refuses) {
        _cleanup_(buf_deinitp) Buf out;
        ManifestListHeader h = {
                .format_version = 3, .snapshot_id = 1, .has_first_row_id = true, .first_row_id = 5
        };
        ManifestFile *files;
        size_t n;
        Error e = { 0 };

        files = sample_files(&n);
        buf_init(&out, MAX_FILE_BYTES);

        h.format_version = 1;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        ASSERT_STREQ(e.message,
                     "manifest list entry 1 (s3://b/t/metadata/deletes-m1.avro): a format 1 "
                     "list cannot hold delete manifests");
        h.format_version = 4;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        h.format_version = 3;

        h.has_first_row_id = false;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "first-row-id");
        h.has_first_row_id = true;

        files[0].has_first_row_id = false;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        ASSERT_STREQ(
                e.message,
                "manifest list entry 0 (s3://b/t/metadata/staged-1-m0.avro): data manifest has no "
                "first_row_id");
        files[0].has_first_row_id = true;

        files[1].has_first_row_id = true;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        ASSERT_CONTAINS(
                e.message,
                "entry 1 (s3://b/t/metadata/deletes-m1.avro): delete manifest has a first_row_id");
        files[1].has_first_row_id = false;

        /* v2: no lineage, but counts stay required. */
        h.format_version = 2;
        files[0].has_first_row_id = false;
        files[2].has_counts = false;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        ASSERT_CONTAINS(e.message,
                        "entry 2 (s3://b/t/metadata/old-m2.avro): file and row counts are unknown");
        files[2].has_counts = true;

        files[1].has_added_snapshot_id = false;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "added_snapshot_id");
        files[1].has_added_snapshot_id = true;

        files[1].content = 2;
        ASSERT_EQ(manifest_list_write(&h, files, n, &out, &e), -EINVAL);
        files[1].content = 1;

        ASSERT_EQ(out.len, 0); /* nothing written on refusal */
        ASSERT_OK(manifest_list_write(&h, files, n, &out, &e));
        manifest_list_files_free(files, n);
}

TEST(manifest_list_reads_v1_by_field_id) {
        /* Entry 0: every count known, under the v1 names (added_data_files_count...), and one
         * partition summary (r508). */
        static const TestField entry0[] = {
                { 500, { .s = "file:/t/m0.avro" } },
                { 501, { .n = 123 } },
                { 502, { .n = 0 } },
                { 503, { .n = 17 } },
                { 504, { .n = 2 } },
                { 505, { .n = 3 } },
                { 506, { .n = 0 } },
                { 512, { .n = 20 } },
                { 513, { .n = 30 } },
                { 514, { .n = 0 } },
        };
        static const TestField summary0[] = {
                { 509, { .n = true } },
                { 510, { .is_null = true } },
                { 511, { .s = "\x01\x00\x00\x00", .len = 4 } },
        };
        /* Entry 1: one row count null (Java tables upgraded from v1): all counts unknown. */
        static const TestField entry1[] = {
                { 500, { .s = "file:/t/m1.avro" } },
                { 501, { .n = 456 } },
                { 502, { .n = 3 } },
                { 504, { .n = 2 } },
                { 505, { .n = 3 } },
                { 506, { .n = 0 } },
                { 512, { .n = 20 } },
                { 514, { .n = 0 } },
        };
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        _cleanup_(buf_deinitp) Buf out;
        char *schema = test_read_source_file("tests/data/manifest_list_v1.avsc", NULL);
        ManifestFile *files = NULL;
        ManifestListHeader h;
        FieldsRecord rec, summary;
        avro_value_t v, parts, item;
        size_t n = 0;
        Error e = { 0 };

        ASSERT_OK(ocf_writer_new(schema, OCF_CODEC_NULL, &w));
        free(schema);
        ASSERT_OK(ocf_writer_set_meta(w, "snapshot-id", slice_from_str("17")));
        ASSERT_OK(fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w), &rec, &e));
        ASSERT_OK(fields_record_nested(&rec, fields_index(&rec, 507), &summary, &e));
        ASSERT_OK(ocf_writer_value_new(w, &v));

        set_all_null(&v);
        set_fields(&v, &rec, entry0, ELEMENTSOF(entry0));
        ASSERT_OK(fields_set_value(&v, fields_index(&rec, 507), &parts));
        ASSERT_EQ(avro_value_append(&parts, &item, NULL), 0);
        set_fields(&item, &summary, summary0, ELEMENTSOF(summary0));
        ASSERT_OK(ocf_writer_append(w, &v));

        ASSERT_EQ(avro_value_reset(&v), 0);
        set_all_null(&v);
        set_fields(&v, &rec, entry1, ELEMENTSOF(entry1));
        ASSERT_OK(ocf_writer_append(w, &v));
        avro_value_decref(&v);
        buf_init(&out, MAX_FILE_BYTES);
        ASSERT_OK(ocf_writer_finish(w, &out));

        if (manifest_list_read(slice_of(&out), &files, &n, &e) < 0)
                TEST_FAIL("read: %s", e.message);
        ASSERT_EQ(n, 2);
        ASSERT_STREQ(files[0].path, "file:/t/m0.avro");
        ASSERT_EQ(files[0].length, 123);
        ASSERT_EQ(files[0].content, 0);
        ASSERT_EQ(files[0].sequence_number, 0);
        ASSERT_EQ(files[0].min_sequence_number, 0);
        ASSERT_TRUE(files[0].has_added_snapshot_id);
        ASSERT_EQ(files[0].added_snapshot_id, 17);
        ASSERT_TRUE(files[0].has_counts);
        ASSERT_EQ(files[0].added_files_count, 2);
        ASSERT_EQ(files[0].existing_files_count, 3);
        ASSERT_EQ(files[0].added_rows_count, 20);
        ASSERT_EQ(files[0].existing_rows_count, 30);
        ASSERT_TRUE(files[0].has_partitions);
        ASSERT_EQ(files[0].n_partitions, 1);
        ASSERT_TRUE(files[0].partitions[0].contains_null);
        ASSERT_TRUE(!files[0].partitions[0].has_contains_nan); /* v1 has no field 518 */
        ASSERT_TRUE(!files[0].partitions[0].has_lower_bound);
        ASSERT_TRUE(files[0].partitions[0].has_upper_bound);
        ASSERT_EQ(files[0].partitions[0].upper_bound.len, 4);
        ASSERT_TRUE(!files[0].has_first_row_id);

        ASSERT_EQ(files[1].partition_spec_id, 3);
        ASSERT_TRUE(!files[1].has_added_snapshot_id);
        ASSERT_TRUE(!files[1].has_counts);
        ASSERT_EQ(files[1].added_files_count, 0); /* unknown counts are all zero, never partial */
        ASSERT_EQ(files[1].added_rows_count, 0);
        ASSERT_TRUE(!files[1].has_partitions);
        manifest_list_files_free(files, n);

        ASSERT_OK(manifest_list_read_header(slice_of(&out), &h, &e));
        ASSERT_EQ(h.format_version, 1);
        ASSERT_EQ(h.snapshot_id, 17);
        ASSERT_TRUE(!h.has_parent_snapshot_id);
}

TEST(manifest_list_read_rejects_bad_files) {
        _cleanup_(buf_deinitp) Buf simple, list;
        ManifestListHeader h = { .format_version = 3, .snapshot_id = 1, .has_first_row_id = true };
        ManifestFile *files = NULL, *sample;
        size_t n = 0, n_sample;
        Error e = { 0 };

        /* An Avro file that is no manifest list. */
        build_simple(OCF_CODEC_NULL, 3, &simple);
        ASSERT_EQ(manifest_list_read(slice_of(&simple), &files, &n, &e), -EBADMSG);
        ASSERT_STREQ(e.message,
                     "manifest list: manifest list schema lacks field 500 (manifest_path)");

        sample = sample_files(&n_sample);
        buf_init(&list, MAX_FILE_BYTES);
        ASSERT_OK(manifest_list_write(&h, sample, n_sample, &list, &e));
        manifest_list_files_free(sample, n_sample);
        for (size_t cut = 1; cut < list.len; cut += 7) {
                Slice s = slice_make(list.data, list.len - cut);

                ASSERT_TRUE(manifest_list_read(s, &files, &n, &e) < 0);
                ASSERT_CONTAINS(e.message, "manifest list");
        }
        for (size_t i = 4; i < list.len; i += 13) {
                list.data[i] ^= 0x5a;
                if (manifest_list_read(slice_of(&list), &files, &n, &e) == 0)
                        manifest_list_files_free(files, n); /* a flip may land in a value */
                list.data[i] ^= 0x5a;
        }
}

/* ---- staged manifests ------------------------------------------------------------------- */

TEST(manifest_staged_v3_unpartitioned) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        TestEntry entries[3] = { good_entry, good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));

        tm.codec = OCF_CODEC_DEFLATE;
        entries[1].path = "s3://b/t/data/b.parquet";
        entries[1].record_count = 0;
        entries[2].path = "s3://b/t/data/c.parquet";
        entries[2].record_count = 275;
        entries[2].file_size = 1;
        m = parse_built_ok(&tm, "m.avro", &file);
        ASSERT_EQ(m->format_version, 3);
        ASSERT_EQ(m->content, 0);
        ASSERT_EQ(m->partition_spec_id, 0);
        ASSERT_CONTAINS(m->schema_json, "\"schema-id\":0");
        ASSERT_STREQ(m->partition_spec_json, "[]");
        ASSERT_EQ(m->added_files_count, 3);
        ASSERT_EQ(m->added_rows_count, 375);
        ASSERT_EQ(m->added_files_size, 4096 * 2 + 1);
        ASSERT_TRUE(m->has_partitions); /* unpartitioned: an empty array */
        ASSERT_EQ(m->n_partitions, 0);
        ASSERT_EQ(m->n_files, 3);
        ASSERT_STREQ(m->files[0].path, "s3://b/t/data/a.parquet");
        ASSERT_STREQ(m->files[1].path, "s3://b/t/data/b.parquet");
        ASSERT_STREQ(m->files[2].format, "PARQUET");
        ASSERT_EQ(m->files[2].record_count, 275);
        ASSERT_EQ(m->files[2].file_size_in_bytes, 1);
}

TEST(manifest_staged_v2_null_codec) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        TestManifest tm = {
                .version = 2,
                .format_version = "2",
                .content = "data",
                .codec = OCF_CODEC_NULL,
                .entries = &good_entry,
                .n_entries = 1,
        };

        m = parse_built_ok(&tm, /* location= */ NULL, &file);
        ASSERT_EQ(m->format_version, 2);
        ASSERT_EQ(m->added_rows_count, 100);
}

static void assert_bound(const PartitionFieldSummary *s, const char *lower, size_t lower_len,
                         const char *upper, size_t upper_len) {
        ASSERT_TRUE(s->has_lower_bound && s->has_upper_bound);
        ASSERT_EQ(s->lower_bound.len, lower_len);
        ASSERT_EQ(s->upper_bound.len, upper_len);
        ASSERT_TRUE(memcmp(s->lower_bound.data, lower, lower_len) == 0);
        ASSERT_TRUE(memcmp(s->upper_bound.data, upper, upper_len) == 0);
}

TEST(manifest_staged_partition_summaries) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        /* identity(int), day(ts) -> date, identity(string), hour -> int, identity(timestamptz),
         * in Java's Avro shapes: optional fields, field ids from 1000. */
        static const char parts[] =
                "[{\"name\":\"id_bucket\",\"type\":[\"null\",\"int\"],"
                "\"default\":null,\"field-id\":1000},"
                "{\"name\":\"ts_day\","
                "\"type\":[\"null\",{\"type\":\"int\",\"logicalType\":\"date\"}],"
                "\"default\":null,\"field-id\":1001},"
                "{\"name\":\"region\",\"type\":[\"null\",\"string\"],"
                "\"default\":null,\"field-id\":1002},"
                "{\"name\":\"ts\","
                "\"type\":[\"null\",{\"type\":\"long\",\"logicalType\":\"timestamp-micros\","
                "\"adjust-to-utc\":true}],\"default\":null,\"field-id\":1003}]";
        TestEntry entries[3] = { good_entry, good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        Error e = { 0 };

        tm.partition_fields = parts;
        entries[0].part[0] = (TestValue){ .n = 5 };
        entries[0].part[1] = (TestValue){ .n = 19000 };
        entries[0].part[2] = (TestValue){ .s = "eu-west" };
        entries[0].part[3] = (TestValue){ .n = -1 };
        entries[1].part[0] = (TestValue){ .n = -3 };
        entries[1].part[1] = (TestValue){ .is_null = true };
        entries[1].part[2] = (TestValue){ .s = "eu" }; /* prefix sorts first */
        entries[1].part[3] = (TestValue){ .n = 1700000000000000 };
        entries[2].part[0] = (TestValue){ .n = 300 };
        entries[2].part[1] = (TestValue){ .n = 18999 };
        entries[2].part[2] = (TestValue){ .s = "\xc3\xa9t\xc3\xa9" }; /* UTF-8 sorts after ASCII */
        entries[2].part[3] = (TestValue){ .is_null = true };
        m = parse_built_ok(&tm, /* location= */ NULL, &file);

        ASSERT_TRUE(m->has_partitions);
        ASSERT_EQ(m->n_partitions, 4);
        for (size_t i = 0; i < 4; i++) {
                ASSERT_TRUE(m->partitions[i].has_contains_nan);
                ASSERT_TRUE(!m->partitions[i].contains_nan);
        }
        ASSERT_TRUE(!m->partitions[0].contains_null);
        assert_bound(&m->partitions[0], "\xfd\xff\xff\xff", 4, "\x2c\x01\x00\x00", 4);
        ASSERT_TRUE(m->partitions[1].contains_null);
        assert_bound(&m->partitions[1], "\x37\x4a\x00\x00", 4, "\x38\x4a\x00\x00", 4);
        ASSERT_TRUE(!m->partitions[2].contains_null);
        assert_bound(&m->partitions[2], "eu", 2, "\xc3\xa9t\xc3\xa9", 5);
        ASSERT_TRUE(m->partitions[3].contains_null);
        assert_bound(&m->partitions[3], "\xff\xff\xff\xff\xff\xff\xff\xff", 8,
                     "\x00\x40\x1e\x18\x24\x0a\x06\x00", 8);

        /* The summaries go into the list unchanged. */
        {
                _cleanup_(buf_deinitp) Buf list;
                ManifestListHeader h = { .format_version = 3,
                                         .snapshot_id = 9,
                                         .has_first_row_id = true };
                ManifestFile mf = {
                        .path = (char *)"s3://b/t/metadata/m.avro",
                        .length = (int64_t)file.len,
                        .has_added_snapshot_id = true,
                        .added_snapshot_id = 9,
                        .has_counts = true,
                        .added_files_count = m->added_files_count,
                        .added_rows_count = m->added_rows_count,
                        .has_partitions = true,
                        .partitions = m->partitions,
                        .n_partitions = m->n_partitions,
                        .has_first_row_id = true,
                };
                ManifestFile *back = NULL;
                size_t n = 0;

                buf_init(&list, MAX_FILE_BYTES);
                ASSERT_OK(manifest_list_write(&h, &mf, 1, &list, &e));
                ASSERT_OK(manifest_list_read(slice_of(&list), &back, &n, &e));
                assert_files_equal(&mf, &back[0], 3);
                manifest_list_files_free(back, n);
        }
}

TEST(manifest_staged_unsupported_partition_type_gives_null_summaries) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        static const char parts[] =
                "[{\"name\":\"a\",\"type\":[\"null\",\"int\"],\"default\":null,\"field-id\":1000},"
                "{\"name\":\"score\",\"type\":[\"null\",\"double\"],"
                "\"default\":null,\"field-id\":1001}]";
        TestEntry entry = good_entry;
        TestManifest tm = v3_manifest(&entry, 1);

        tm.partition_fields = parts;
        entry.part[0] = (TestValue){ .n = 1 };
        entry.part[1] = (TestValue){ .d = 0.5 };
        m = parse_built_ok(&tm, /* location= */ NULL, &file);
        ASSERT_TRUE(!m->has_partitions);
        ASSERT_EQ(m->n_partitions, 0);
        ASSERT_EQ(m->n_files, 1);
}

/* good_entry at another path with one field changed must break the staging rule `want`. */
#define EXPECT_ENTRY_REJECTED(field, value, want)                                                  \
        do {                                                                                       \
                TestEntry _te = good_entry;                                                        \
                                                                                                   \
                _te.path = "s3://b/t/data/x.parquet";                                              \
                _te.field = (value);                                                               \
                expect_entry_rejected(&_te, want);                                                 \
        } while (0)

TEST(manifest_staged_rejects_each_entry_rule) {
        EXPECT_ENTRY_REJECTED(status, 0, "status EXISTING, only ADDED entries can be staged");
        EXPECT_ENTRY_REJECTED(status, 2, "status DELETED, only ADDED entries can be staged");
        EXPECT_ENTRY_REJECTED(status, 7, "unknown status 7");
        EXPECT_ENTRY_REJECTED(has_snapshot_id, true,
                              "snapshot_id is 77, staged entries must leave it null");
        EXPECT_ENTRY_REJECTED(has_sequence_number, true,
                              "sequence_number is 5, staged entries must leave it null");
        EXPECT_ENTRY_REJECTED(has_file_sequence_number, true,
                              "file_sequence_number is 5, staged entries must leave it null");
        EXPECT_ENTRY_REJECTED(
                content, 1,
                "content 1 (position deletes) in a data manifest, only data files belong there");
        EXPECT_ENTRY_REJECTED(content, 2, "content 2 (equality deletes) in a data manifest");
        EXPECT_ENTRY_REJECTED(has_first_row_id, true,
                              "first_row_id is 12, ADDED entries must leave it null");
        EXPECT_ENTRY_REJECTED(record_count, -1, "record_count is -1, it must not be negative");
        EXPECT_ENTRY_REJECTED(file_size, -5, "file_size_in_bytes is -5, it must not be negative");
}

/* A path longer than commit.max-path-bytes is refused while the manifest is decoded, naming the
 * manifest, the entry and the limit; at the limit it is taken. */
TEST(manifest_staged_bounds_entry_paths) {
        static const ManifestLimits limits = { .max_entries = 100, .max_path_bytes = 4096 };
        char long_path[5001], at_limit[4097];
        TestEntry entries[2] = { good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        Error e = { 0 };

        memset(long_path, 'a', sizeof(long_path) - 1);
        long_path[sizeof(long_path) - 1] = '\0';
        memcpy(long_path, "s3://b/t/", 9);
        entries[1].path = long_path;
        ASSERT_EQ(parse_built(&tm, "s3://b/t/metadata/m0.avro", &limits, &e), -E2BIG);
        ASSERT_CONTAINS(e.message, "manifest 's3://b/t/metadata/m0.avro': entry 1 ('s3://b/t/aaa");
        ASSERT_CONTAINS(e.message,
                        "file_path is 5000 bytes, above the limit of 4096 (commit.max-path-bytes)");

        memcpy(at_limit, long_path, 4096);
        at_limit[4096] = '\0';
        entries[1].path = at_limit;
        ASSERT_OK(parse_built(&tm, NULL, &limits, &e));
}

/* One entry's encoded bytes are bounded as a whole, before avro-c decodes it: here by a long
 * partition value, which would be kept in the manifest's partition summary. */
TEST(manifest_staged_bounds_entry_bytes) {
        static const char parts[] = "[{\"name\":\"region\",\"type\":[\"null\",\"string\"],"
                                    "\"default\":null,\"field-id\":1000}]";
        ManifestLimits limits = { .max_entries = 100, .max_entry_bytes = 4096 };
        _cleanup_(freep) char *value = calloc(1, 5000);
        TestEntry entries[2] = { good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        Error e = { 0 };

        ASSERT_TRUE(value);
        memset(value, 'r', 4999);
        tm.partition_fields = parts;
        entries[0].part[0] = (TestValue){ .s = "eu" };
        entries[1].part[0] = (TestValue){ .s = value };
        ASSERT_EQ(parse_built(&tm, "m0.avro", &limits, &e), -E2BIG);
        ASSERT_CONTAINS(e.message, "manifest 'm0.avro': block 0, datum 1: ");
        ASSERT_CONTAINS(e.message, "above the limit of 4096 (storage.max-manifest-entry-bytes)");
        limits.max_entry_bytes = 8192;
        ASSERT_OK(parse_built(&tm, "m0.avro", &limits, &e));
}

/* The request's budget of data files is spent entry by entry across its manifests: the entry
 * past it stops the decoding with -EDQUOT before anything of it is read (the entries after it
 * are not even valid: decoding them would be another error). */
TEST(manifest_staged_stops_at_the_requests_entry_budget) {
        TestEntry entries[6] = { good_entry, good_entry, good_entry,
                                 good_entry, good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        uint64_t left = 3;
        ManifestLimits limits = { .max_entries = 100, .entries_left = &left };
        Error e = { 0 };

        entries[3].status = 0; /* EXISTING: refused, were it decoded */
        entries[4].status = 2;
        entries[5].has_snapshot_id = true;
        ASSERT_EQ(parse_built(&tm, "m1.avro", &limits, &e), -EDQUOT);
        ASSERT_CONTAINS(e.message,
                        "manifest 'm1.avro': entry 3: the request names more data files");
        ASSERT_EQ(left, 0);

        /* Exactly the budget: taken, and nothing left for the next manifest of the request. */
        left = 4;
        tm.n_entries = 3;
        ASSERT_OK(parse_built(&tm, "m1.avro", &limits, &e));
        ASSERT_EQ(left, 1);
        ASSERT_OK(parse_built(&(TestManifest){ .version = 3,
                                               .format_version = "3",
                                               .content = "data",
                                               .entries = entries,
                                               .n_entries = 1 },
                              "m2.avro", &limits, &e));
        ASSERT_EQ(left, 0);
        ASSERT_EQ(parse_built(&tm, "m3.avro", &limits, &e), -EDQUOT);
        ASSERT_CONTAINS(e.message, "manifest 'm3.avro': entry 0:");
}

/* What a parsed manifest keeps is counted as it is kept: held once parsed, given back when the
 * parse fails; the request's own bound is -EFBIG, the shared one -EBUSY. */
TEST(manifest_staged_counts_what_it_keeps) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        TestEntry entries[3] = { good_entry, good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        Budget shared = { .max_bytes = 1 << 20 };
        BudgetHold hold = { .budget = &shared, .max_bytes = 1 << 20 };
        ManifestLimits limits = { .max_entries = 100, .hold = &hold };
        uint64_t kept = 0;
        Error e = { 0 };

        build_manifest(&tm, &file);
        ASSERT_OK(manifest_staged_parse(slice_of(&file), NULL, &limits, &m, &e));
        kept = sizeof(*m) + strlen(m->schema_json) + 1 + strlen(m->partition_spec_json) + 1;
        for (size_t i = 0; i < m->n_files; i++)
                kept += sizeof(m->files[i]) + strlen(m->files[i].path) + 1 +
                        strlen(m->files[i].format) + 1;
        ASSERT_EQ(hold.bytes, kept);
        ASSERT_EQ(budget_used(&shared), kept);
        m = manifest_staged_free(m);
        budget_release_all(&hold);

        /* Room for the manifest and two entries: the third is refused, nothing stays held. */
        hold.max_bytes = kept - 1;
        ASSERT_EQ(manifest_staged_parse(slice_of(&file), "m0.avro", &limits, &m, &e), -EFBIG);
        ASSERT_CONTAINS(e.message, "manifest 'm0.avro': entry 2: no room to hold");
        ASSERT_TRUE(!m);
        ASSERT_EQ(hold.bytes, 0);
        ASSERT_EQ(budget_used(&shared), 0);

        /* The same when others hold the shared budget. */
        hold.max_bytes = 1 << 20;
        shared.max_bytes = kept - 1;
        ASSERT_EQ(manifest_staged_parse(slice_of(&file), "m0.avro", &limits, &m, &e), -EBUSY);
        ASSERT_CONTAINS(e.message, "the daemon's intake budget is spent");
        ASSERT_EQ(budget_used(&shared), 0);
}

/* In a delete manifest: position deletes (and deletion vectors) are refused, equality deletes
 * need equality_ids (the test builder writes none), data files do not belong. */
TEST(staged_delete_manifest_entry_rules) {
        static const struct {
                int32_t content;
                const char *want;
        } cases[] = {
                { 0, "entry 0 (s3://b/t/data/a.parquet): a data file in a delete manifest" },
                { 1, "entry 0 (s3://b/t/data/a.parquet): content 1 (position deletes): position "
                     "delete "
                     "files and deletion vectors cannot be staged, only equality deletes" },
                { 2,
                  "entry 0 (s3://b/t/data/a.parquet): equality delete file without equality_ids" },
                { 5, "entry 0 (s3://b/t/data/a.parquet): unknown content 5" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                TestEntry entry = good_entry;
                TestManifest tm = v3_manifest(&entry, 1);
                Error e = { 0 };

                tm.content = "deletes";
                entry.content = cases[i].content;
                ASSERT_EQ(parse_built(&tm, /* location= */ NULL, /* limits= */ NULL, &e), -EINVAL);
                ASSERT_STREQ(e.message, cases[i].want);
        }
}

TEST(manifest_staged_rejects_null_record_count) {
        TestEntry entry = good_entry;
        TestManifest tm = v3_manifest(&entry, 1);
        Error e = { 0 };

        tm.optional_counts = true;
        entry.null_record_count = true;
        ASSERT_EQ(parse_built(&tm, /* location= */ NULL, /* limits= */ NULL, &e), -EINVAL);
        ASSERT_STREQ(e.message,
                     "entry 0 (s3://b/t/data/a.parquet): record_count is null, it must be known");
}

TEST(manifest_staged_rejects_bad_metadata_and_sizes) {
        static const struct {
                const char *format_version, *content;
                size_t n_entries;
                uint64_t max_entries;
                int want;
                const char *message, *contains;
        } cases[] = {
                { "3", "data", 3, 2, -E2BIG,
                  .message = "manifest 'm.avro': manifest has more than 2 entries" },
                { "3", "data", 0, 3, -EINVAL,
                  .message = "manifest 'm.avro': manifest has no entries" },
                { "0", "data", 3, 3, -EINVAL,
                  .message = "manifest 'm.avro': format-version 0 is not supported (1, 2 or 3)" },
                { NULL, "data", 3, 3, -EINVAL, .contains = "no format-version metadata" },
                { "4", "data", 3, 3, -EINVAL, .contains = "format-version 4 is not supported" },
                { "x", "data", 3, 3, -EINVAL, .message = NULL }, /* the code alone */
                { "3", "deletes", 3, 3, -EINVAL,
                  .message = "manifest 'm.avro': entry 0 (s3://b/t/data/a.parquet): a data file in "
                             "a delete manifest" },
                { "3", "dvs", 3, 3, -EINVAL,
                  .message = "manifest 'm.avro': manifest content 'dvs' is neither 'data' nor "
                             "'deletes'" },
                { "3", NULL, 3, 3, -EINVAL, .contains = "no content metadata" },
        };
        TestEntry entries[3] = { good_entry, good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        StagedManifest *m = NULL;
        Error e = { 0 };

        ASSERT_OK(parse_built(&tm, "m.avro", &(ManifestLimits){ .max_entries = 3 }, &e));
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                tm.format_version = cases[i].format_version;
                tm.content = cases[i].content;
                tm.n_entries = cases[i].n_entries;
                ASSERT_EQ(parse_built(&tm, "m.avro",
                                      &(ManifestLimits){ .max_entries = cases[i].max_entries }, &e),
                          cases[i].want);
                assert_message(&e, cases[i].message, cases[i].contains);
        }

        ASSERT_EQ(manifest_staged_parse(slice_from_str("PAR1 not avro"), "x.parquet", NULL, &m, &e),
                  -EBADMSG);
        ASSERT_STREQ(e.message, "manifest 'x.parquet': not an Avro container file (bad magic)");
        ASSERT_TRUE(!m);

        /* A manifest list is Avro but no manifest. */
        {
                _cleanup_(buf_deinitp) Buf list;
                ManifestListHeader h = { .format_version = 2, .snapshot_id = 1 };

                buf_init(&list, MAX_FILE_BYTES);
                ASSERT_OK(manifest_list_write(&h, NULL, 0, &list, &e));
                ASSERT_EQ(manifest_staged_parse(slice_of(&list), NULL, NULL, &m, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, "no content metadata");
        }
}

TEST(manifest_staged_truncations_are_errors) {
        _cleanup_(buf_deinitp) Buf file;
        TestEntry entries[2] = { good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        Error e = { 0 };

        tm.codec = OCF_CODEC_DEFLATE;
        build_manifest(&tm, &file);
        for (size_t cut = 1; cut < file.len; cut += 5) {
                StagedManifest *m = NULL;

                ASSERT_TRUE(manifest_staged_parse(slice_make(file.data, file.len - cut), NULL, NULL,
                                                  &m, &e) < 0);
                ASSERT_TRUE(!m);
        }
}

/* ---- files written by the reference implementation (Iceberg Java 1.11, tests/peers) ------- */

static Buf read_data_file(const char *name) {
        char path[256];
        size_t len;
        char *data;
        Buf b;

        (void)snprintf(path, sizeof(path), "tests/data/%s", name);
        data = test_read_source_file(path, &len);
        buf_init(&b, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&b, data, len));
        free(data);
        return b;
}

TEST(java_manifest_list_v3_reads_back) {
        _cleanup_(buf_deinitp) Buf file = read_data_file("java-manifest-list-v3.avro");
        ManifestListHeader h;
        ManifestFile *files = NULL;
        size_t n = 0;
        Error e = { 0 };

        /* Two FastAppends: the second snapshot's list holds its own manifest, then the parent's. */
        if (manifest_list_read(slice_of(&file), &files, &n, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_EQ(n, 2);
        ASSERT_CONTAINS(files[0].path, "/metadata/3a586993-fa86-480c-9a8c-3ae1d51f1bc2-m0.avro");
        ASSERT_EQ(files[0].length, 8128);
        ASSERT_EQ(files[0].content, 0);
        ASSERT_EQ(files[0].sequence_number, 2);
        ASSERT_EQ(files[0].min_sequence_number, 2);
        ASSERT_EQ(files[0].added_snapshot_id, 6836166531555070744);
        ASSERT_TRUE(files[0].has_counts);
        ASSERT_EQ(files[0].added_files_count, 1);
        ASSERT_EQ(files[0].added_rows_count, 7);
        ASSERT_EQ(files[0].n_partitions, 1);
        assert_bound(&files[0].partitions[0], "\x04\x00\x00\x00", 4, "\x04\x00\x00\x00", 4);
        ASSERT_TRUE(files[0].partitions[0].has_contains_nan &&
                    !files[0].partitions[0].contains_nan);
        ASSERT_TRUE(!files[0].has_key_metadata);
        ASSERT_TRUE(files[0].has_first_row_id);
        ASSERT_EQ(files[0].first_row_id, 5);
        ASSERT_EQ(files[1].length, 8119);
        ASSERT_EQ(files[1].sequence_number, 1);
        ASSERT_EQ(files[1].added_snapshot_id, 1658810095336783773);
        ASSERT_EQ(files[1].added_rows_count, 5);
        assert_bound(&files[1].partitions[0], "\x03\x00\x00\x00", 4, "\x03\x00\x00\x00", 4);
        ASSERT_EQ(files[1].first_row_id, 0);

        ASSERT_OK(manifest_list_read_header(slice_of(&file), &h, &e));
        ASSERT_EQ(h.format_version, 3);
        ASSERT_EQ(h.snapshot_id, 6836166531555070744);
        ASSERT_TRUE(h.has_parent_snapshot_id);
        ASSERT_EQ(h.parent_snapshot_id, 1658810095336783773);
        ASSERT_EQ(h.sequence_number, 2);
        ASSERT_TRUE(h.has_first_row_id);
        ASSERT_EQ(h.first_row_id, 5);

        /* What we write for the same entries carries Java's exact metadata values. */
        {
                _cleanup_(ocf_reader_freep) OcfReader *java = NULL, *ours = NULL;
                _cleanup_(buf_deinitp) Buf out;
                const char *keys[] = { "avro.schema", "iceberg.schema" };

                buf_init(&out, MAX_FILE_BYTES);
                ASSERT_OK(manifest_list_write(&h, files, n, &out, &e));
                ASSERT_OK(ocf_reader_open(slice_of(&file), &java, &e));
                ASSERT_OK(ocf_reader_open(slice_of(&out), &ours, &e));
                for (size_t i = 0; i < ELEMENTSOF(keys); i++) {
                        Slice a = ocf_reader_meta(java, keys[i]),
                              b = ocf_reader_meta(ours, keys[i]);

                        ASSERT_EQ(a.len, b.len);
                        ASSERT_TRUE(memcmp(a.ptr, b.ptr, a.len) == 0);
                }
                for (size_t i = 0; i < ocf_reader_n_meta(java); i++) {
                        const char *key;
                        Slice a, b;

                        ocf_reader_meta_at(java, i, &key, &a);
                        b = ocf_reader_meta(ours, key);
                        ASSERT_TRUE(b.ptr);
                        /* The other keys hold the same numbers as a round trip of Java's. */
                        ASSERT_EQ(a.len, b.len);
                        ASSERT_TRUE(memcmp(a.ptr, b.ptr, a.len) == 0 ||
                                    strcmp(key, "avro.schema") == 0);
                }
                ASSERT_EQ(ocf_reader_n_meta(java), ocf_reader_n_meta(ours));
        }
        manifest_list_files_free(files, n);
}

TEST(java_staged_manifest_v3_reads_back) {
        _cleanup_(buf_deinitp) Buf file = read_data_file("java-staged-manifest-v3.avro");
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        Error e = { 0 };

        /* tests/peers `stage --files 2 --rows 5 --bucket 3` on a table partitioned by
         * identity(bucket int): ManifestFiles.write(3, spec, out, null). */
        if (manifest_staged_parse(slice_of(&file), NULL, NULL, &m, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_EQ(m->format_version, 3);
        ASSERT_EQ(m->content, 0);
        ASSERT_EQ(m->partition_spec_id, 0);
        ASSERT_STREQ(m->partition_spec_json,
                     "[{\"name\":\"bucket\",\"transform\":\"identity\",\"source-id\":3,"
                     "\"field-id\":1000}]");
        ASSERT_CONTAINS(m->schema_json, "\"name\":\"bucket\"");
        ASSERT_EQ(m->added_files_count, 2);
        ASSERT_EQ(m->added_rows_count, 10);
        ASSERT_EQ(m->added_files_size, 1946);
        ASSERT_EQ(m->n_files, 2);
        ASSERT_CONTAINS(m->files[0].path,
                        "/data/bucket=3/peer-e7a46ac3-891b-4c26-a4e2-315dcb3e9010.parquet");
        ASSERT_STREQ(m->files[0].format, "PARQUET");
        ASSERT_EQ(m->files[1].record_count, 5);
        ASSERT_EQ(m->files[1].file_size_in_bytes, 973);
        ASSERT_TRUE(m->has_partitions);
        ASSERT_EQ(m->n_partitions, 1);
        ASSERT_TRUE(!m->partitions[0].contains_null);
        assert_bound(&m->partitions[0], "\x03\x00\x00\x00", 4, "\x03\x00\x00\x00", 4);
}

/* The table references icecommitd's copy of a staged manifest (commit/owned.c): the same
 * file with one header key added, so every block, and so every entry, is the writer's as it
 * was checked. */
TEST(ocf_copy_with_meta_keeps_the_blocks_byte_for_byte) {
        for (int codec = OCF_CODEC_NULL; codec <= OCF_CODEC_DEFLATE; codec++) {
                _cleanup_(buf_deinitp) Buf file, copy;
                _cleanup_(ocf_reader_freep) OcfReader *r = NULL, *c = NULL;
                const OcfMeta extra[] = { { .key = (char *)"added",
                                            .value = slice_from_str("x") } };
                const OcfMeta clash[] = { { .key = (char *)"k1", .value = slice_from_str("y") } };
                const OcfMeta reserved[] = { { .key = (char *)"avro.codec",
                                               .value = slice_from_str("null") } };
                size_t data, copy_data;
                Error e = { 0 };

                build_simple((OcfCodec)codec, 500, &file);
                ASSERT_OK(ocf_reader_open(slice_of(&file), &r, &e));
                buf_init(&copy, MAX_FILE_BYTES);
                ASSERT_EQ(ocf_writer_copy_with_meta(r, clash, 1, &copy), -EEXIST);
                ASSERT_EQ(ocf_writer_copy_with_meta(r, reserved, 1, &copy), -EINVAL);
                ASSERT_EQ(copy.len, 0);
                ASSERT_OK(ocf_writer_copy_with_meta(r, extra, 1, &copy));

                check_simple(&copy, (OcfCodec)codec, 500, 1); /* every datum reads the same */
                ASSERT_OK(ocf_reader_open(slice_of(&copy), &c, &e));
                ASSERT_EQ(ocf_reader_n_meta(c), ocf_reader_n_meta(r) + 1);
                ASSERT_TRUE(slice_eq_str(ocf_reader_meta(c, "added"), "x"));
                ASSERT_TRUE(memcmp(ocf_reader_sync(c), ocf_reader_sync(r), OCF_SYNC_LEN) == 0);
                data = ocf_reader_data_offset(r);
                copy_data = ocf_reader_data_offset(c);
                ASSERT_EQ(copy.len - copy_data, file.len - data);
                ASSERT_TRUE(memcmp(copy.data + copy_data, file.data + data, file.len - data) == 0);

                /* Past the buffer's maximum: nothing appended. */
                buf_deinit(&copy);
                buf_init(&copy, file.len);
                ASSERT_EQ(ocf_writer_copy_with_meta(r, extra, 1, &copy), -E2BIG);
                ASSERT_EQ(copy.len, 0);
        }
}

TEST(manifest_staged_copy_names_where_it_was_staged) {
        static const TestEntry entries[] = {
                { .status = 1, .path = "/wh/t/data/a.parquet", .record_count = 3, .file_size = 10 },
                { .status = 1, .path = "/wh/t/data/b.parquet", .record_count = 4, .file_size = 11 },
        };
        TestManifest tm = v3_manifest(entries, 2);
        _cleanup_(buf_deinitp) Buf file, copy, again;
        _cleanup_(manifest_staged_freep) StagedManifest *original = NULL, *copied = NULL;
        Error e = { 0 };

        original = parse_built_ok(&tm, "/wh/t/staging/m.avro", &file);
        ASSERT_TRUE(!original->staged_location);
        buf_init(&copy, MAX_FILE_BYTES);
        ASSERT_OK(manifest_staged_copy(slice_of(&file), "/wh/t/staging/m.avro", &copy, &e));
        if (manifest_staged_parse(slice_of(&copy), NULL, NULL, &copied, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_STREQ(copied->staged_location, "/wh/t/staging/m.avro");
        ASSERT_EQ(copied->n_files, 2);
        ASSERT_STREQ(copied->files[1].path, "/wh/t/data/b.parquet");
        ASSERT_EQ(copied->added_rows_count, 7);
        ASSERT_EQ(copied->added_files_size, 21);

        /* A writer's manifest that already has a key of icecommitd's is refused: it would
         * speak for icecommitd in receipts rebuilt from the table. */
        buf_init(&again, MAX_FILE_BYTES);
        ASSERT_EQ(manifest_staged_copy(slice_of(&copy), "/elsewhere.avro", &again, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "icecommit.");
        ASSERT_EQ(again.len, 0);
        /* Not Avro at all: refused as the parser would. */
        ASSERT_EQ(manifest_staged_copy(slice_from_str("not avro"), "/x.avro", &again, &e),
                  -EBADMSG);
}

TEST(java_committed_manifest_is_not_a_staged_one) {
        _cleanup_(buf_deinitp) Buf file = read_data_file("java-committed-manifest-v3.avro");
        StagedManifest *m = NULL;
        Error e = { 0 };

        /* A manifest Java wrote while committing carries its snapshot id on ADDED entries. */
        ASSERT_EQ(manifest_staged_parse(slice_of(&file), "m0.avro", NULL, &m, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "manifest 'm0.avro': entry 0 (");
        ASSERT_CONTAINS(e.message,
                        "): snapshot_id is 1658810095336783773, staged entries must leave it null");
}

/* A manifest whose list entry has null counts is counted from its entries: per status, DELETED
 * rows apart (they take no row ids). */
TEST(manifest_count_entries_by_status) {
        TestEntry entries[5] = { good_entry, good_entry, good_entry, good_entry, good_entry };
        TestManifest tm = v3_manifest(entries, ELEMENTSOF(entries));
        _cleanup_(buf_deinitp) Buf file, java;
        ManifestCounts c;
        Error e = { 0 };

        entries[0].record_count = 10;
        entries[1].status = 0, entries[1].record_count = 20, entries[1].has_snapshot_id = true;
        entries[2].status = 0, entries[2].record_count = 30, entries[2].has_snapshot_id = true;
        entries[3].status = 2, entries[3].record_count = 40, entries[3].has_snapshot_id = true;
        entries[4].record_count = 0;
        buf_init(&file, MAX_FILE_BYTES);
        build_manifest(&tm, &file);
        ASSERT_OK(manifest_count_entries(slice_of(&file), /* limits= */ NULL, &c, &e));
        ASSERT_EQ(c.added_files, 2);
        ASSERT_EQ(c.existing_files, 2);
        ASSERT_EQ(c.deleted_files, 1);
        ASSERT_EQ(c.added_rows, 10);
        ASSERT_EQ(c.existing_rows, 50);
        ASSERT_EQ(c.deleted_rows, 40);

        {
                ManifestFile m = { .has_counts = false };

                manifest_counts_apply(&c, &m);
                ASSERT_TRUE(m.has_counts);
                ASSERT_EQ(m.added_rows_count + m.existing_rows_count, 60);
                ASSERT_EQ(m.deleted_files_count, 1);
        }

        ASSERT_EQ(manifest_count_entries(slice_of(&file), &(ManifestLimits){ .max_entries = 4 }, &c,
                                         &e),
                  -E2BIG);
        ASSERT_CONTAINS(e.message, "more than 4 entries");

        entries[2].null_record_count = true;
        tm.optional_counts = true;
        buf_deinit(&file);
        buf_init(&file, MAX_FILE_BYTES);
        build_manifest(&tm, &file);
        ASSERT_EQ(manifest_count_entries(slice_of(&file), NULL, &c, &e), -EBADMSG);
        ASSERT_STREQ(e.message, "entry 2: record_count is null or negative");

        /* A manifest Java committed (one ADDED entry of 5 rows). */
        java = read_data_file("java-committed-manifest-v3.avro");
        ASSERT_OK(manifest_count_entries(slice_of(&java), NULL, &c, &e));
        ASSERT_EQ(c.added_files, 1);
        ASSERT_EQ(c.added_rows, 5);
        ASSERT_EQ(c.existing_rows + c.deleted_rows, 0);
}

TEST(ocf_deflate_ignores_bytes_after_the_stream) {
        _cleanup_(buf_deinitp) Buf b;
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        uint8_t datum[] = { 0x54 }, zbuf[64];
        uLongf zlen = sizeof(zbuf);
        avro_value_t *v;
        int64_t got;
        Error e = { 0 };

        /* fastavro writes zlib.compress(block)[2:-1]: raw deflate plus 3 adler32 bytes. */
        ASSERT_EQ(compress(zbuf, &zlen, datum, sizeof(datum)), Z_OK);
        build_raw(&b, "\"long\"", "deflate");
        put_long(&b, 1);
        put_long(&b, (int64_t)zlen - 3);
        ASSERT_OK(buf_append(&b, zbuf + 2, zlen - 3));
        ASSERT_OK(buf_append(&b, test_sync, 16));
        ASSERT_OK(ocf_reader_open(slice_of(&b), &r, &e));
        ASSERT_EQ(ocf_reader_read(r, &v, &e), 1);
        ASSERT_EQ(avro_value_get_long(v, &got), 0);
        ASSERT_EQ(got, 42);
        ASSERT_EQ(ocf_reader_read(r, &v, &e), 0);
}

TEST(fields_utf8_validation) {
        static const char *const good[] = { "",
                                            "s3://b/x.parquet",
                                            "\xc3\xa9t\xc3\xa9",
                                            "\xe2\x82\xac",
                                            "\xf0\x9f\x98\x80",
                                            "\xf4\x8f\xbf\xbf" };
        static const char *const bad[] = {
                "\xff",             /* never in UTF-8 */
                "\xc0\xaf",         /* overlong '/' */
                "\xe0\x80\xaf",     /* overlong '/' */
                "\xed\xa0\x80",     /* surrogate */
                "\xf4\x90\x80\x80", /* above U+10FFFF */
                "\xe2\x82",         /* truncated */
                "a\x80",            /* lone continuation byte */
        };

        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                ASSERT_TRUE(utf8_is_valid(good[i], strlen(good[i])));
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_TRUE(!utf8_is_valid(bad[i], strlen(bad[i])));
        ASSERT_TRUE(utf8_ascii_is_printable("deflate", 7));
        ASSERT_TRUE(!utf8_ascii_is_printable("a\nb", 3));
}

TEST(manifest_staged_rejects_paths_that_are_not_utf8) {
        TestEntry entry = good_entry;
        TestManifest tm = v3_manifest(&entry, 1);
        Error e = { 0 };

        /* Messages carry the path into JSON replies: it must be text. */
        entry.path = "s3://b/\xff\xfe.parquet";
        ASSERT_EQ(parse_built(&tm, /* location= */ NULL, /* limits= */ NULL, &e), -EBADMSG);
        ASSERT_STREQ(e.message, "entry 0: field 'file_path' is not valid UTF-8");
}

TEST(ocf_empty_block_of_zero_byte_datums) {
        _cleanup_(buf_deinitp) Buf b;
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        avro_value_t *v;
        Error e = { 0 };

        /* A null datum encodes to nothing: one datum, zero bytes (a libFuzzer find: the empty
         * block had no storage and the datum pointer was computed from NULL). */
        build_raw(&b, "\"null\"", NULL);
        put_long(&b, 1);
        put_long(&b, 0);
        ASSERT_OK(buf_append(&b, test_sync, 16));
        ASSERT_OK(ocf_reader_open(slice_of(&b), &r, &e));
        ASSERT_EQ(ocf_reader_read(r, &v, &e), 1);
        ASSERT_EQ(avro_value_get_type(v), AVRO_NULL);
        ASSERT_EQ(ocf_reader_read(r, &v, &e), 0);
}

TEST(ocf_binary_codec_name_is_not_echoed) {
        expect_raw_rejected(&(RawCase){ .schema = "\"long\"",
                                        .codec = "zs\x01td",
                                        .want = -EOPNOTSUPP,
                                        .message = "unknown codec (5 bytes of binary)" });
}
