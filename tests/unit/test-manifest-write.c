/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/single_value.c, data_file.c, manifest_write.c: JSON single values into Iceberg's
 * binary form (Appendix D) with exact bytes; a manifest for described files read back through
 * our own OCF reader and the staged-manifest parser, value by value; v2 and v3 layouts. */
#include <errno.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "iceberg/data_file.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_write.h"
#include "test.h"

/* id long, name string, day date, price decimal(9, 2), n int, tags list<string>. */
static const char *const schema_text =
        "{\"type\":\"struct\",\"schema-id\":4,\"fields\":["
        "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
        "{\"id\":2,\"name\":\"name\",\"required\":false,\"type\":\"string\"},"
        "{\"id\":3,\"name\":\"day\",\"required\":false,\"type\":\"date\"},"
        "{\"id\":4,\"name\":\"price\",\"required\":false,\"type\":\"decimal(9, 2)\"},"
        "{\"id\":5,\"name\":\"n\",\"required\":false,\"type\":\"int\"},"
        "{\"id\":6,\"name\":\"tags\",\"required\":false,\"type\":{\"type\":\"list\",\"element-id\":"
        "7,"
        "\"element\":\"string\",\"element-required\":false}}]}";

static const char *const spec_text =
        "{\"spec-id\":2,\"fields\":["
        "{\"name\":\"n\",\"transform\":\"identity\",\"source-id\":5,\"field-id\":1000},"
        "{\"name\":\"day_day\",\"transform\":\"day\",\"source-id\":3,\"field-id\":1001},"
        "{\"name\":\"name\",\"transform\":\"identity\",\"source-id\":2,\"field-id\":1002},"
        "{\"name\":\"price\",\"transform\":\"identity\",\"source-id\":4,\"field-id\":1003},"
        "{\"name\":\"id_bucket\",\"transform\":\"bucket[16]\",\"source-id\":1,\"field-id\":1004}]}";

/* The binary single value of `json` as type `type`, as lowercase hex ("" when refused). */
static void expect_binary(const char *type, const char *json, const char *hex) {
        json_t *t = json_string(type), *v = json_loads(json, JSON_DECODE_ANY, NULL);
        _cleanup_(buf_deinitp) Buf out;
        IcebergType it;
        Error e = { 0 };
        char got[256] = "";

        ASSERT_TRUE(t && v);
        buf_init(&out, 1024);
        ASSERT_OK(iceberg_type_parse(t, &it, &e));
        if (single_value_from_json(&it, v, &out, &e) < 0)
                TEST_FAIL("%s %s: %s", type, json, e.message);
        for (size_t i = 0; i < out.len && 2 * i + 2 < sizeof(got); i++)
                (void)snprintf(got + 2 * i, 3, "%02x", out.data[i]);
        if (strcmp(got, hex) != 0)
                TEST_FAIL("%s %s: got %s, want %s", type, json, got, hex);
        json_decref(t);
        json_decref(v);
}

static void expect_refused(const char *type, const char *json, const char *message) {
        json_t *t = json_string(type), *v = json_loads(json, JSON_DECODE_ANY, NULL);
        _cleanup_(buf_deinitp) Buf out;
        IcebergType it;
        Error e = { 0 };

        buf_init(&out, 1024);
        ASSERT_OK(iceberg_type_parse(t, &it, &e));
        ASSERT_EQ(single_value_from_json(&it, v, &out, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, message);
        json_decref(t);
        json_decref(v);
}

TEST(single_values_have_the_spec_binary_form) {
        expect_binary("boolean", "true", "01");
        expect_binary("int", "42", "2a000000");
        expect_binary("int", "-1", "ffffffff");
        expect_binary("long", "100", "6400000000000000");
        expect_binary("float", "1.5", "0000c03f");
        expect_binary("double", "-2.25", "00000000000002c0");
        expect_binary("date", "\"2024-02-29\"", "464d0000"); /* 19782 days */
        expect_binary("date", "\"1969-12-31\"", "ffffffff");
        expect_binary("time", "\"00:00:01.5\"", "60e3160000000000"); /* 1500000 us */
        /* 1510871468123456 us */
        expect_binary("timestamp", "\"2017-11-16T22:31:08.123456\"", "40a5282d215e0500");
        expect_binary("timestamptz", "\"2017-11-16T22:31:08.123456+00:00\"", "40a5282d215e0500");
        expect_binary("timestamp_ns", "\"1970-01-01T00:00:00.000000001\"", "0100000000000000");
        expect_binary("string", "\"ab\\u00e9\"", "6162c3a9");
        expect_binary("uuid", "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"",
                      "f79c3e09677c4bbda4793f349cb785e7");
        expect_binary("fixed[2]", "\"0aFF\"", "0aff");
        expect_binary("binary", "\"\"", "");
        /* Decimals: unscaled value, big-endian two's complement, fewest bytes (BigInteger). */
        expect_binary("decimal(9, 2)", "\"-12.50\"", "fb1e");
        expect_binary("decimal(9,2)", "\"1.28\"", "0080");
        expect_binary("decimal(9, 2)", "\"1.00\"", "64");
        expect_binary("decimal(9, 2)", "\"0.00\"", "00");
        expect_binary("decimal(38, 0)", "\"-1\"", "ff");

        expect_refused("int", "2147483648",
                       "expected an integer from -2147483648 to 2147483647 for type int");
        expect_refused("long", "1.5", "expected an integer for type long");
        expect_refused("date", "\"2023-02-29\"",
                       "expected a date string 'YYYY-MM-DD' for type date");
        expect_refused("timestamptz", "\"2017-11-16T22:31:08+01:00\"",
                       "expected a UTC timestamp string");
        expect_refused("timestamp", "\"2017-11-16T22:31:08.1234567\"", "for type timestamp");
        expect_refused("decimal(9, 2)", "\"1.2\"", "exactly the type's scale");
        expect_refused("decimal(3, 2)", "\"12.34\"", "for type decimal(3, 2)");
        expect_refused("fixed[2]", "\"0a\"", "two per byte");
        expect_refused("uuid", "\"f79c3e09-677c-4bbd-a479-3f349cb785eZ\"",
                       "expected a UUID string");
        expect_refused("boolean", "1", "expected true or false");
}

/* The binary single value of Iceberg Java's hex (ContentFileParser's bounds) as `type`. */
static int hex_to_binary(const char *type, const char *hex, char got[static 256], Error *e) {
        json_t *t = json_string(type), *v = json_string(hex);
        _cleanup_(buf_deinitp) Buf out;
        IcebergType it;
        int r;

        ASSERT_TRUE(t && v);
        buf_init(&out, 1024);
        ASSERT_OK(iceberg_type_parse(t, &it, e));
        got[0] = 0;
        r = single_value_from_hex(&it, v, &out, e);
        for (size_t i = 0; r == 0 && i < out.len && 2 * i + 2 < 256; i++)
                (void)snprintf(got + 2 * i, 3, "%02x", out.data[i]);
        json_decref(t);
        json_decref(v);
        return r;
}

/* The typed JSON form and Java's hex form of one value give the same bytes, `hex`. */
static void expect_both_forms(const char *type, const char *json, const char *java_hex,
                              const char *hex) {
        char got[256];
        Error e = { 0 };

        expect_binary(type, json, hex);
        if (hex_to_binary(type, java_hex, got, &e) < 0)
                TEST_FAIL("%s '%s': %s", type, java_hex, e.message);
        if (strcmp(got, hex) != 0)
                TEST_FAIL("%s '%s': got %s, want %s", type, java_hex, got, hex);
}

static void expect_hex_refused(const char *type, const char *java_hex, const char *message) {
        char got[256];
        Error e = { 0 };

        ASSERT_EQ(hex_to_binary(type, java_hex, got, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, message);
}

TEST(java_hex_bounds_give_the_same_bytes_as_typed_values) {
        /* Java's BaseEncoding.base16() writes uppercase; lowercase is read too. */
        expect_both_forms("boolean", "false", "00", "00");
        expect_both_forms("boolean", "true", "01", "01");
        expect_both_forms("int", "-1", "FFFFFFFF", "ffffffff");
        expect_both_forms("long", "100", "6400000000000000", "6400000000000000");
        expect_both_forms("float", "1.5", "0000C03F", "0000c03f");
        expect_both_forms("double", "-2.25", "00000000000002C0", "00000000000002c0");
        expect_both_forms("date", "\"2024-02-29\"", "464D0000", "464d0000");
        expect_both_forms("time", "\"00:00:01.5\"", "60E3160000000000", "60e3160000000000");
        expect_both_forms("timestamp", "\"2017-11-16T22:31:08.123456\"", "40A5282D215E0500",
                          "40a5282d215e0500");
        expect_both_forms("timestamptz", "\"2017-11-16T22:31:08.123456+00:00\"", "40a5282d215e0500",
                          "40a5282d215e0500");
        expect_both_forms("timestamp_ns", "\"1970-01-01T00:00:00.000000001\"", "0100000000000000",
                          "0100000000000000");
        expect_both_forms("timestamptz_ns", "\"1970-01-01T00:00:00.000000002+00:00\"",
                          "0200000000000000", "0200000000000000");
        expect_both_forms("string", "\"ab\\u00e9\"", "6162C3A9", "6162c3a9");
        expect_both_forms("string", "\"\"", "", "");
        expect_both_forms("uuid", "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"",
                          "F79C3E09677C4BBDA4793F349CB785E7", "f79c3e09677c4bbda4793f349cb785e7");
        expect_both_forms("fixed[2]", "\"0aFF\"", "0AFF", "0aff");
        expect_both_forms("binary", "\"00ff10\"", "00FF10", "00ff10");
        expect_both_forms("decimal(9, 2)", "\"-12.50\"", "FB1E", "fb1e");
        expect_both_forms("decimal(9, 2)", "\"1.28\"", "0080", "0080");
        expect_both_forms("decimal(38, 0)", "\"-1\"", "FF", "ff");
        /* Sign-extended input is re-encoded in the fewest bytes (spec: decimal). */
        expect_both_forms("decimal(9, 2)", "\"1.00\"", "00000064", "64");
        expect_both_forms("decimal(9, 2)", "\"-12.50\"", "FFFFFB1E", "fb1e");

        expect_hex_refused("int", "2A", "expected 4 bytes, little-endian for type int");
        expect_hex_refused("long", "2A000000", "expected 8 bytes, little-endian for type long");
        expect_hex_refused("date", "2024-02-29", "hexadecimal digits, two per byte");
        expect_hex_refused("int", "ABC", "two per byte");
        expect_hex_refused("boolean", "02", "expected 1 byte, 00 or 01");
        expect_hex_refused("float", "0000C07F", "a float that is not NaN");
        expect_hex_refused("double", "000000000000F87F", "a double that is not NaN");
        /* 86400000000 us = 24:00:00 */
        expect_hex_refused("time", "006A22DC14000000", "microseconds from midnight");
        expect_hex_refused("string", "C328", "valid UTF-8");
        expect_hex_refused("uuid", "F79C3E09677C4BBD", "16 bytes");
        expect_hex_refused("fixed[2]", "0A", "exactly the type's length");
        expect_hex_refused("decimal(3, 2)", "03E8", "within the type's precision"); /* 10.00 */
        expect_hex_refused("decimal(9, 2)", "", "1 to 16 bytes");
        expect_hex_refused("decimal(38, 0)", "0000000000000000000000000000000000", "1 to 16");
        {
                json_t *t = json_string("long"), *v = json_integer(5);
                _cleanup_(buf_deinitp) Buf out;
                IcebergType it;
                Error e = { 0 };

                buf_init(&out, 64);
                ASSERT_OK(iceberg_type_parse(t, &it, &e));
                ASSERT_EQ(single_value_from_hex(&it, v, &out, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, "expected a string of hexadecimal digits");
                ASSERT_EQ(out.len, 0);
                json_decref(t);
                json_decref(v);
        }
}

typedef struct Fixture {
        json_t *schema, *spec;
        DataFile file;
} Fixture;

static void fixture_init(Fixture *fx, const char *partition, const char *lower) {
        fx->schema = json_loads(schema_text, 0, NULL);
        fx->spec = json_loads(spec_text, 0, NULL);
        ASSERT_TRUE(fx->schema && fx->spec);
        fx->file = (DataFile){
                .location = strdup("/wh/t/data/a.parquet"),
                .format = DATA_FILE_FORMAT_PARQUET,
                .record_count = 7,
                .file_size_in_bytes = 1234,
                .partition = json_loads(partition, 0, NULL),
        };
        fx->file.value_counts = (DataFileCounts){ .is_present = true, .n = 2 };
        fx->file.value_counts.ids = calloc(2, sizeof(int32_t));
        fx->file.value_counts.values = calloc(2, sizeof(int64_t));
        fx->file.value_counts.ids[0] = 1;
        fx->file.value_counts.ids[1] = 7;
        fx->file.value_counts.values[0] = 7;
        fx->file.value_counts.values[1] = 11;
        if (lower) {
                json_t *m = json_loads(lower, 0, NULL);
                size_t i, n = json_array_size(json_object_get(m, "keys"));
                json_t *k;

                ASSERT_TRUE(m);
                fx->file.lower_bounds = (DataFileBounds){ .is_present = true, .n = n };
                fx->file.lower_bounds.ids = calloc(n, sizeof(int32_t));
                fx->file.lower_bounds.json = calloc(n, sizeof(json_t *));
                json_array_foreach (json_object_get(m, "keys"), i, k) {
                        fx->file.lower_bounds.ids[i] = (int32_t)json_integer_value(k);
                        fx->file.lower_bounds.json[i] =
                                json_incref(json_array_get(json_object_get(m, "values"), i));
                }
                json_decref(m);
        }
}

static void fixture_deinit(Fixture *fx) {
        data_file_deinit(&fx->file);
        json_decref(fx->schema);
        json_decref(fx->spec);
}

static int resolve(Fixture *fx, Error *e) {
        return data_file_resolve(&fx->file, fx->schema, fx->spec, e);
}

static void expect_bytes(const void *p, size_t len, const char *hex) {
        char got[128] = "";

        for (size_t i = 0; i < len && 2 * i + 2 < sizeof(got); i++)
                (void)snprintf(got + 2 * i, 3, "%02x", ((const uint8_t *)p)[i]);
        ASSERT_STREQ(got, hex);
}

TEST(manifest_round_trip_v3) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        _cleanup_(buf_deinitp) Buf out;
        FieldsRecord entry, df, part;
        avro_value_t *value, dfv, tuple, v, array, element, key, val;
        const void *p;
        const char *s;
        size_t len, n;
        int32_t i32;
        int64_t i64;
        Fixture fx;
        Error e = { 0 };

        fixture_init(&fx, "[42, \"2024-02-29\", \"ab\", \"-12.50\", null]",
                     "{\"keys\": [1, 2, 3, 4, 5], \"values\": [100, \"abc\", \"2024-02-29\", "
                     "\"-12.50\", 42]}");
        if (resolve(&fx, &e) < 0)
                TEST_FAIL("%s", e.message);
        buf_init(&out, 1u << 20);
        if (manifest_write(&(ManifestWriteSpec){ .format_version = 3,
                                                 .schema = fx.schema,
                                                 .partition_spec = fx.spec },
                           &fx.file, 1, &out, &e) < 0)
                TEST_FAIL("%s", e.message);

        ASSERT_OK(ocf_reader_open(buf_slice(&out), &reader, &e));
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(reader, "format-version"), "3"));
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(reader, "content"), "data"));
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(reader, "partition-spec-id"), "2"));
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(reader, "schema-id"), "4"));
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(reader, "schema"), schema_text));
        {
                /* Avro.java's iceberg.schema of the entries: maps as Iceberg map types. */
                Slice is = ocf_reader_meta(reader, "iceberg.schema");
                _cleanup_(freep) char *text = strndup((const char *)is.ptr, is.len);

                ASSERT_CONTAINS(text, "{\"id\":109,\"name\":\"value_counts\",\"required\":false,"
                                      "\"type\":{\"type\":\"map\","
                                      "\"key-id\":119,\"key\":\"int\",\"value-id\":120,\"value\":"
                                      "\"long\",\"value-required\":true}");
                ASSERT_CONTAINS(text, "{\"id\":1003,\"name\":\"price\",\"required\":false,\"type\":"
                                      "\"decimal(9, 2)\"}");
        }
        ASSERT_EQ(ocf_reader_codec(reader), OCF_CODEC_DEFLATE);
        ASSERT_OK(fields_record_init(ocf_reader_schema_json(reader), ocf_reader_schema(reader),
                                     &entry, &e));
        ASSERT_OK(fields_record_nested(&entry, fields_index(&entry, 2), &df, &e));
        ASSERT_OK(fields_record_nested(&df, fields_index(&df, 102), &part, &e));
        /* The partition record: the spec's fields in order, field-id = partition field id. */
        ASSERT_EQ(avro_schema_record_size(part.schema), 5);
        ASSERT_EQ(fields_index(&part, 1000), 0);
        ASSERT_EQ(fields_index(&part, 1003), 3);
        ASSERT_STREQ(fields_name(&part, 1), "day_day");
        ASSERT_TRUE(fields_index(&df, 142) >= 0); /* first_row_id: v3 only */

        ASSERT_EQ(ocf_reader_read(reader, &value, &e), 1);
        ASSERT_EQ(fields_get_int(value, fields_index(&entry, 0), &i32, &e), 1);
        ASSERT_EQ(i32, 1); /* ADDED */
        ASSERT_EQ(fields_get_long(value, fields_index(&entry, 1), &i64, &e),
                  0); /* snapshot_id null */
        ASSERT_EQ(fields_get_long(value, fields_index(&entry, 3), &i64, &e), 0);
        ASSERT_EQ(fields_get_long(value, fields_index(&entry, 4), &i64, &e), 0);
        ASSERT_EQ(fields_get_value(value, fields_index(&entry, 2), &dfv, &e), 1);
        ASSERT_EQ(fields_get_long(&dfv, fields_index(&df, 142), &i64, &e),
                  0); /* first_row_id null */
        ASSERT_EQ(fields_get_string(&dfv, fields_index(&df, 100), &s, &len, &e), 1);
        ASSERT_STREQ(s, "/wh/t/data/a.parquet");
        ASSERT_EQ(fields_get_string(&dfv, fields_index(&df, 101), &s, &len, &e), 1);
        ASSERT_STREQ(s, "PARQUET");
        ASSERT_EQ(fields_get_long(&dfv, fields_index(&df, 103), &i64, &e), 1);
        ASSERT_EQ(i64, 7);
        ASSERT_EQ(fields_get_long(&dfv, fields_index(&df, 104), &i64, &e), 1);
        ASSERT_EQ(i64, 1234);

        ASSERT_EQ(fields_get_value(&dfv, fields_index(&df, 102), &tuple, &e), 1);
        ASSERT_EQ(fields_get_int(&tuple, 0, &i32, &e), 1);
        ASSERT_EQ(i32, 42);
        ASSERT_EQ(fields_get_int(&tuple, 1, &i32, &e), 1);
        ASSERT_EQ(i32, 19782); /* 2024-02-29 */
        ASSERT_EQ(fields_get_string(&tuple, 2, &s, &len, &e), 1);
        ASSERT_STREQ(s, "ab");
        ASSERT_EQ(fields_get_value(&tuple, 3, &v, &e), 1);
        ASSERT_EQ(avro_value_get_fixed(&v, &p, &len), 0);
        expect_bytes(p, len, "fffffb1e"); /* decimal(9, 2) on fixed[4], sign-extended */
        ASSERT_EQ(fields_get_int(&tuple, 4, &i32, &e), 0); /* null bucket */

        ASSERT_EQ(fields_get_value(&dfv, fields_index(&df, 109), &array, &e), 1);
        ASSERT_EQ(avro_value_get_size(&array, &n), 0);
        ASSERT_EQ(n, 2);
        ASSERT_EQ(avro_value_get_by_index(&array, 1, &element, NULL), 0);
        ASSERT_EQ(avro_value_get_by_index(&element, 0, &key, NULL), 0);
        ASSERT_EQ(avro_value_get_by_index(&element, 1, &val, NULL), 0);
        ASSERT_EQ(avro_value_get_int(&key, &i32), 0);
        ASSERT_EQ(i32, 7);
        ASSERT_EQ(avro_value_get_long(&val, &i64), 0);
        ASSERT_EQ(i64, 11);
        ASSERT_EQ(fields_get_value(&dfv, fields_index(&df, 110), &array, &e), 0); /* absent: null */

        ASSERT_EQ(fields_get_value(&dfv, fields_index(&df, 125), &array, &e), 1);
        ASSERT_EQ(avro_value_get_size(&array, &n), 0);
        ASSERT_EQ(n, 5);
        {
                static const char *const want[] = { "6400000000000000", "616263", "464d0000",
                                                    "fb1e", "2a000000" };

                for (size_t k = 0; k < 5; k++) {
                        ASSERT_EQ(avro_value_get_by_index(&array, k, &element, NULL), 0);
                        ASSERT_EQ(avro_value_get_by_index(&element, 0, &key, NULL), 0);
                        ASSERT_EQ(avro_value_get_by_index(&element, 1, &val, NULL), 0);
                        ASSERT_EQ(avro_value_get_int(&key, &i32), 0);
                        ASSERT_EQ(i32, (int32_t)k + 1);
                        ASSERT_EQ(avro_value_get_bytes(&val, &p, &len), 0);
                        expect_bytes(p, len, want[k]);
                }
        }
        ASSERT_EQ(ocf_reader_read(reader, &value, &e), 0);

        /* The staged-manifest parser accepts it and sums it up: the checks both paths share. */
        if (manifest_staged_parse(buf_slice(&out), "ours", NULL, &m, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_EQ(m->format_version, 3);
        ASSERT_EQ(m->partition_spec_id, 2);
        ASSERT_EQ(m->added_files_count, 1);
        ASSERT_EQ(m->added_rows_count, 7);
        ASSERT_EQ(m->added_files_size, 1234);
        ASSERT_STREQ(m->files[0].path, "/wh/t/data/a.parquet");
        ASSERT_STREQ(
                m->partition_spec_json,
                "[{\"name\":\"n\",\"transform\":\"identity\",\"source-id\":5,\"field-id\":1000},"
                "{\"name\":\"day_day\",\"transform\":\"day\",\"source-id\":3,\"field-id\":1001},"
                "{\"name\":\"name\",\"transform\":\"identity\",\"source-id\":2,\"field-id\":1002},"
                "{\"name\":\"price\",\"transform\":\"identity\",\"source-id\":4,\"field-id\":1003},"
                "{\"name\":\"id_bucket\",\"transform\":\"bucket[16]\",\"source-id\":1,\"field-id\":"
                "1004}]");
        fixture_deinit(&fx);
}

/* fixed[L] partition values as Avro bytes (the one layout Iceberg Java 1.11 and spec readers
 * read alike, see manifest_write.c); uuid stays Java's named fixed type. */
TEST(fixed_partition_values_are_avro_bytes) {
        static const char *const fixed_schema =
                "{\"type\":\"struct\",\"schema-id\":0,\"fields\":["
                "{\"id\":1,\"name\":\"id\",\"required\":true,\"type\":\"long\"},"
                "{\"id\":2,\"name\":\"fx\",\"required\":false,\"type\":\"fixed[4]\"},"
                "{\"id\":3,\"name\":\"fy\",\"required\":false,\"type\":\"fixed[4]\"},"
                "{\"id\":4,\"name\":\"u\",\"required\":false,\"type\":\"uuid\"}]}";
        static const char *const fixed_spec =
                "{\"spec-id\":0,\"fields\":["
                "{\"name\":\"fx\",\"transform\":\"identity\",\"source-id\":2,\"field-id\":1000},"
                "{\"name\":\"fy\",\"transform\":\"identity\",\"source-id\":3,\"field-id\":1001},"
                "{\"name\":\"u\",\"transform\":\"identity\",\"source-id\":4,\"field-id\":1002}]}";
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        _cleanup_(buf_deinitp) Buf out;
        json_t *schema = json_loads(fixed_schema, 0, NULL), *spec = json_loads(fixed_spec, 0, NULL),
               *avro = NULL;
        FieldsRecord entry, df, part;
        avro_value_t *value, dfv, tuple, v;
        const void *p;
        size_t len;
        char *text;
        Error e = { 0 };
        DataFile file = {
                .location = strdup("/wh/t/data/a.parquet"),
                .format = DATA_FILE_FORMAT_PARQUET,
                .record_count = 2,
                .file_size_in_bytes = 99,
                .partition = json_loads("[\"0aff0001\", null, "
                                        "\"f79c3e09-677c-4bbd-a479-3f349cb785e7\"]",
                                        0, NULL),
        };
        ManifestWriteSpec ws = { .format_version = 3, .schema = schema, .partition_spec = spec };

        ASSERT_TRUE(schema && spec && file.location && file.partition);
        ASSERT_OK(manifest_write_schema(&ws, &avro, &e));
        text = json_dumps(avro, JSON_COMPACT);
        ASSERT_TRUE(text);
        ASSERT_CONTAINS(text, "{\"name\":\"fx\",\"type\":[\"null\",\"bytes\"],\"default\":null,"
                              "\"field-id\":1000}");
        ASSERT_CONTAINS(text, "{\"name\":\"fy\",\"type\":[\"null\",\"bytes\"]");
        ASSERT_CONTAINS(text, "\"name\":\"uuid_fixed\",\"size\":16");
        ASSERT_TRUE(!strstr(text, "fixed_4"));
        free(text);
        json_decref(avro);

        if (data_file_resolve(&file, schema, spec, &e) < 0)
                TEST_FAIL("%s", e.message);
        buf_init(&out, 1u << 20);
        if (manifest_write(&ws, &file, 1, &out, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_OK(ocf_reader_open(buf_slice(&out), &reader, &e));
        ASSERT_OK(fields_record_init(ocf_reader_schema_json(reader), ocf_reader_schema(reader),
                                     &entry, &e));
        ASSERT_OK(fields_record_nested(&entry, fields_index(&entry, 2), &df, &e));
        ASSERT_OK(fields_record_nested(&df, fields_index(&df, 102), &part, &e));
        ASSERT_EQ(ocf_reader_read(reader, &value, &e), 1);
        ASSERT_EQ(fields_get_value(value, fields_index(&entry, 2), &dfv, &e), 1);
        ASSERT_EQ(fields_get_value(&dfv, fields_index(&df, 102), &tuple, &e), 1);
        ASSERT_EQ(fields_get_bytes(&tuple, fields_index(&part, 1000), &p, &len, &e), 1);
        expect_bytes(p, len, "0aff0001");
        ASSERT_EQ(fields_get_bytes(&tuple, fields_index(&part, 1001), &p, &len, &e), 0); /* null */
        ASSERT_EQ(fields_get_value(&tuple, fields_index(&part, 1002), &v, &e), 1);
        ASSERT_EQ(avro_value_get_fixed(&v, &p, &len), 0);
        expect_bytes(p, len, "f79c3e09677c4bbda4793f349cb785e7");
        ASSERT_EQ(ocf_reader_read(reader, &value, &e), 0);

        /* Read back as a staged manifest: what the data-files path does before committing it. */
        if (manifest_staged_parse(buf_slice(&out), "ours", NULL, &m, &e) < 0)
                TEST_FAIL("%s", e.message);
        ASSERT_EQ(m->added_rows_count, 2);

        data_file_deinit(&file);
        json_decref(schema);
        json_decref(spec);
}

TEST(v2_layout_has_no_row_lineage_fields) {
        json_t *schema = json_loads(schema_text, 0, NULL),
               *spec = json_loads("{\"spec-id\":0,\"fields\":[]}", 0, NULL);
        json_t *v2 = NULL, *v3 = NULL;
        Error e = { 0 };

        ASSERT_OK(manifest_write_schema(&(ManifestWriteSpec){ .format_version = 2,
                                                              .schema = schema,
                                                              .partition_spec = spec },
                                        &v2, &e));
        ASSERT_OK(manifest_write_schema(&(ManifestWriteSpec){ .format_version = 3,
                                                              .schema = schema,
                                                              .partition_spec = spec },
                                        &v3, &e));
        {
                char *a = json_dumps(v2, JSON_COMPACT), *b = json_dumps(v3, JSON_COMPACT);

                ASSERT_TRUE(!strstr(a, "\"first_row_id\"") && !strstr(a, "\"field-id\":142"));
                ASSERT_TRUE(!strstr(a, "\"field-id\":144") && !strstr(a, "\"field-id\":145"));
                ASSERT_CONTAINS(a, "\"name\":\"referenced_data_file\"");
                ASSERT_CONTAINS(b, "{\"name\":\"first_row_id\",\"type\":[\"null\",\"long\"]");
                ASSERT_CONTAINS(b, "\"field-id\":142");
                ASSERT_CONTAINS(b, "\"field-id\":145");
                ASSERT_CONTAINS(a, "\"name\":\"r102\",\"fields\":[]");
                free(a);
                free(b);
        }
        json_decref(v2);
        v2 = NULL;
        ASSERT_EQ(manifest_write_schema(&(ManifestWriteSpec){ .format_version = 1,
                                                              .schema = schema,
                                                              .partition_spec = spec },
                                        &v2, &e),
                  -EINVAL);
        ASSERT_TRUE(v2 == NULL);
        json_decref(v3);
        json_decref(schema);
        json_decref(spec);
}

TEST(resolve_refusals_name_the_rule) {
        static const struct {
                const char *partition, *lower, *message;
                int code;
        } cases[] = {
                { "[1, \"2024-01-01\", \"a\", \"1.00\"]", NULL,
                  "'partition' has 4 values, partition spec 2 has 5 fields", -EINVAL },
                { "[\"x\", \"2024-01-01\", \"a\", \"1.00\", 3]", NULL,
                  "'partition'[0] (field 'n'): expected an integer from -2147483648 to 2147483647 "
                  "for type int",
                  -EINVAL },
                { "[1, 19000, \"a\", \"1.00\", 3]", NULL,
                  "'partition'[1] (field 'day_day'): expected a date string 'YYYY-MM-DD' for type "
                  "date",
                  -EINVAL },
                { "[1, \"2024-01-01\", \"a\", \"1.0\", 3]", NULL,
                  "'partition'[3] (field 'price'): expected a decimal", -EINVAL },
                { "[1, null, null, null, null]", "{\"keys\": [99], \"values\": [1]}",
                  "'lower-bounds' has field id 99, which the table schema does not have", -EINVAL },
                { "[1, null, null, null, null]", "{\"keys\": [6], \"values\": [1]}",
                  "'lower-bounds' has field id 6, which has no primitive type", -EINVAL },
                { "[1, null, null, null, null]", "{\"keys\": [7], \"values\": [1]}",
                  "'lower-bounds' value for field id 7: expected a string for type string",
                  -EINVAL },
                { "[1, null, null, null, null]", "{\"keys\": [3], \"values\": [\"2024-13-01\"]}",
                  "'lower-bounds' value for field id 3: expected a date string", -EINVAL },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                Fixture fx;
                Error e = { 0 };

                fixture_init(&fx, cases[i].partition, cases[i].lower);
                ASSERT_EQ(resolve(&fx, &e), cases[i].code);
                ASSERT_CONTAINS(e.message, cases[i].message);
                fixture_deinit(&fx);
        }

        /* Missing partition values for a partitioned spec; statistics for unknown columns. */
        {
                Fixture fx;
                Error e = { 0 };

                fixture_init(&fx, "null", NULL);
                ASSERT_EQ(resolve(&fx, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, "'partition' is missing: partition spec 2 has 5 fields");
                fixture_deinit(&fx);
                fixture_init(&fx, "[1, null, null, null, null]", NULL);
                fx.file.value_counts.ids[1] = 8;
                ASSERT_EQ(resolve(&fx, &e), -EINVAL);
                ASSERT_CONTAINS(
                        e.message,
                        "'value-counts' has field id 8, which the table schema does not have");
                fixture_deinit(&fx);
        }
}

/* Bounds as Iceberg Java's ContentFileParser writes them (hex of binary single values) beside
 * the typed form: one value that reads one way only decides for the file, nothing is guessed. */
TEST(bounds_encoding_is_detected_per_file_or_given) {
        static const char *const partition = "[1, null, null, null, null]";
        static const struct {
                const char *lower;
                DataFileBoundsEncoding encoding;
                const char *hex[5]; /* resolved lower bounds, in key order */
                const char *message;
        } cases[] = {
                /* Java's form: the long decides, the string "6162" is then 2 bytes "ab". */
                { "{\"keys\": [1, 2, 3, 4], \"values\": [\"6400000000000000\", \"6162\", "
                  "\"464D0000\", \"FB1E\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { "6400000000000000", "6162", "464d0000", "fb1e" },
                  NULL },
                /* Typed: the number decides, "6162" is the string of 4 characters. */
                { "{\"keys\": [1, 2], \"values\": [100, \"6162\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { "6400000000000000", "36313632" },
                  NULL },
                /* Typed by its shape alone: a string that is no hex. */
                { "{\"keys\": [2], \"values\": [\"row-1\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { "726f772d31" },
                  NULL },
                /* "6162" alone could be either: refused unless the request says which. */
                { "{\"keys\": [2], \"values\": [\"6162\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { NULL },
                  "'lower-bounds' value for field id 2 reads both as a typed JSON value and as "
                  "binary hex (Iceberg Java's encoding), with different values, and no other "
                  "bound of the file tells which: give the request \"bounds-encoding\"" },
                { "{\"keys\": [2], \"values\": [\"6162\"]}",
                  DATA_FILE_BOUNDS_BINARY,
                  { "6162" },
                  NULL },
                { "{\"keys\": [2], \"values\": [\"6162\"]}",
                  DATA_FILE_BOUNDS_TYPED,
                  { "36313632" },
                  NULL },
                /* A typed date has dashes: never hex. */
                { "{\"keys\": [3], \"values\": [\"2024-02-29\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { "464d0000" },
                  NULL },
                /* One file, two encodings. */
                { "{\"keys\": [1, 3], \"values\": [100, \"464D0000\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { NULL },
                  "'lower-bounds' value for field id 1 is a typed JSON value but 'lower-bounds' "
                  "value for field id 3 is binary hex (Iceberg Java's encoding): give all bounds "
                  "of a file in one encoding" },
                /* Given binary, a typed value is refused with the binary form's rule. */
                { "{\"keys\": [1], \"values\": [100]}",
                  DATA_FILE_BOUNDS_BINARY,
                  { NULL },
                  "'lower-bounds' value for field id 1 (binary hex, Iceberg Java's encoding): "
                  "expected a string of hexadecimal digits" },
                { "{\"keys\": [1, 5], \"values\": [\"6400000000000000\", \"0100\"]}",
                  DATA_FILE_BOUNDS_AUTO,
                  { NULL },
                  "'lower-bounds' value for field id 5 (binary hex, Iceberg Java's encoding): "
                  "expected 4 bytes, little-endian for type int" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                Fixture fx;
                Error e = { 0 };
                int r;

                fixture_init(&fx, partition, cases[i].lower);
                fx.file.bounds_encoding = cases[i].encoding;
                r = resolve(&fx, &e);
                if (cases[i].message) {
                        ASSERT_EQ(r, -EINVAL);
                        ASSERT_CONTAINS(e.message, cases[i].message);
                } else {
                        if (r < 0)
                                TEST_FAIL("case %zu: %s", i, e.message);
                        for (size_t k = 0; k < fx.file.lower_bounds.n; k++)
                                expect_bytes(fx.file.lower_bounds.bytes[k].data,
                                             fx.file.lower_bounds.bytes[k].len, cases[i].hex[k]);
                }
                fixture_deinit(&fx);
        }

        /* The upper bounds count too: a typed lower and a Java upper bound are two encodings. */
        {
                Fixture fx;
                Error e = { 0 };

                fixture_init(&fx, partition, "{\"keys\": [1], \"values\": [100]}");
                fx.file.upper_bounds = (DataFileBounds){ .is_present = true, .n = 1 };
                fx.file.upper_bounds.ids = calloc(1, sizeof(int32_t));
                fx.file.upper_bounds.json = calloc(1, sizeof(json_t *));
                ASSERT_TRUE(fx.file.upper_bounds.ids && fx.file.upper_bounds.json);
                fx.file.upper_bounds.ids[0] = 1;
                fx.file.upper_bounds.json[0] = json_string("C800000000000000");
                ASSERT_EQ(resolve(&fx, &e), -EINVAL);
                ASSERT_CONTAINS(e.message, "but 'upper-bounds' value for field id 1 is binary hex");
                fixture_deinit(&fx);
        }
}
