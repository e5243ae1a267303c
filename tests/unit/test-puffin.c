/* SPDX-License-Identifier: Apache-2.0 */
/* puffin/: deletion vectors against a vector derived from the spec by hand and against Iceberg
 * Java's golden blobs (tests/data/puffin/, read and rewritten byte for byte); unions; Puffin
 * files we write read back whole and from a tail, Java's sample files read; and every refusal
 * (length, magic, CRC, positions past the rows, malformed bitmaps, footers cut or lying). */
#include <errno.h>
#include <string.h>
#include <zlib.h>

#include "puffin/dv.h"
#include "puffin/puffin.h"
#include "util/cleanup.h"
#include "test.h"

DEFINE_CLEANUP_FUNC(DvBitmap, dv_free);

/* {1, 5, 1 << 32 | 3}: length 58 (BE), magic, count 2, key 0 + {1, 5} (cookie 12346, one array
 * container, offset header 16), key 1 + {3}, CRC-32 (BE) of bytes 4..61 (from Python's zlib). */
static const uint8_t known_dv[] = {
        0x00, 0x00, 0x00, 0x3a, 0xd1, 0xd3, 0x39, 0x64, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x3a, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x01, 0x00, 0x10, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 0x00, 0x01, 0x00,
        0x00, 0x00, 0x3a, 0x30, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x10, 0x00, 0x00, 0x00, 0x03, 0x00, 0x4f, 0xe7, 0x48, 0xb1,
};

static DvBitmap *dv_of(const uint64_t *positions, size_t n) {
        DvBitmap *dv = dv_new();

        ASSERT_TRUE(dv != NULL);
        for (size_t i = 0; i < n; i++)
                ASSERT_OK(dv_add(dv, positions[i]));
        return dv;
}

static void assert_write(const DvBitmap *dv, const uint8_t *want, size_t want_len) {
        _cleanup_(buf_deinitp) Buf out;

        buf_init(&out, 1u << 20);
        ASSERT_OK(dv_write(dv, &out));
        ASSERT_EQ(out.len, want_len);
        ASSERT_TRUE(memcmp(out.data, want, want_len) == 0);
}

/* Wraps magic + bitmap in the length and CRC, as a writer would. */
static void frame(const uint8_t *bitmap, size_t len, Buf *out) {
        uint8_t head[8] = { 0, 0, 0, 0, 0xd1, 0xd3, 0x39, 0x64 }, tail[4];
        uint32_t crc, n = (uint32_t)len + 4;

        head[0] = (uint8_t)(n >> 24), head[1] = (uint8_t)(n >> 16);
        head[2] = (uint8_t)(n >> 8), head[3] = (uint8_t)n;
        crc = (uint32_t)crc32(crc32(0, head + 4, 4), bitmap, (uInt)len);
        tail[0] = (uint8_t)(crc >> 24), tail[1] = (uint8_t)(crc >> 16);
        tail[2] = (uint8_t)(crc >> 8), tail[3] = (uint8_t)crc;
        out->len = 0;
        ASSERT_OK(buf_append(out, head, 8));
        ASSERT_OK(buf_append(out, bitmap, len));
        ASSERT_OK(buf_append(out, tail, 4));
}

TEST(known_vector) {
        static const uint64_t positions[] = { 5, UINT64_C(1) << 32 | 3, 1 };
        _cleanup_(dv_freep) DvBitmap *dv = dv_of(positions, 3), *back = NULL;
        Error e = { 0 };

        assert_write(dv, known_dv, sizeof(known_dv));
        ASSERT_OK(dv_read(slice_make(known_dv, sizeof(known_dv)), UINT64_C(1) << 33, &back, &e));
        ASSERT_EQ(dv_cardinality(back), 3);
        ASSERT_TRUE(dv_contains(back, 1) && dv_contains(back, 5));
        ASSERT_TRUE(dv_contains(back, UINT64_C(1) << 32 | 3));
        ASSERT_TRUE(!dv_contains(back, 3) && !dv_contains(back, UINT64_C(1) << 32 | 1));
        /* The smallest record count that holds the highest position. */
        back = dv_free(back);
        ASSERT_OK(dv_read(slice_make(known_dv, sizeof(known_dv)), (UINT64_C(1) << 32) + 4, &back,
                          &e));
}

static bool collect(uint64_t position, void *userdata) {
        Buf *b = userdata;

        return buf_append(b, &position, sizeof(position)) == 0;
}

/* Java's TestBitmapPositionDeleteIndex resources: read, then written again byte for byte. */
static void java_golden(const char *name, uint64_t cardinality, const uint64_t *positions,
                        size_t n) {
        _cleanup_(freep) char *data = NULL;
        _cleanup_(dv_freep) DvBitmap *dv = NULL;
        _cleanup_(buf_deinitp) Buf got;
        char path[256];
        Error e = { 0 };
        size_t len;

        (void)snprintf(path, sizeof(path), "tests/data/puffin/%s-position-index.bin", name);
        data = test_read_source_file(path, &len);
        ASSERT_TRUE(data != NULL);
        ASSERT_OK(dv_read(slice_make(data, len), UINT64_C(1) << 40, &dv, &e));
        ASSERT_EQ(dv_cardinality(dv), cardinality);
        buf_init(&got, 1u << 24);
        ASSERT_TRUE(dv_foreach(dv, collect, &got));
        ASSERT_EQ(got.len, cardinality * sizeof(uint64_t));
        for (size_t i = 0; i < n; i++)
                ASSERT_EQ(((const uint64_t *)(const void *)got.data)[i], positions[i]);
        assert_write(dv, (const uint8_t *)data, len);
}

TEST(java_golden_vectors) {
        static const uint64_t alternating[] = { 1, 3, 5, 7, 9 };
        static const uint64_t small_large[] = { 100, 101, (UINT64_C(1) << 31) + 99,
                                                (UINT64_C(1) << 31) + 100 };

        java_golden("empty", 0, NULL, 0);
        java_golden("small-alternating-values", 5, alternating, 5);
        java_golden("small-and-large-values", 4, small_large, 4);
        /* Array, bitset and run containers, in two keys. */
        java_golden("all-container-types", 132561, NULL, 0);
}

/* CRoaring's 64-bit portable test files (also in Java's resources): sparse keys are read. */
TEST(portable_64_bitmaps) {
        _cleanup_(freep) char *data = NULL;
        _cleanup_(dv_freep) DvBitmap *dv = NULL;
        _cleanup_(buf_deinitp) Buf blob;
        Error e = { 0 };
        size_t len;

        buf_init(&blob, 1u << 20);
        data = test_read_source_file("tests/data/puffin/64mapspreadvals.bin", &len);
        ASSERT_TRUE(data != NULL);
        frame((const uint8_t *)data, len, &blob);
        ASSERT_OK(dv_read(buf_slice(&blob), UINT64_MAX, &dv, &e));
        ASSERT_EQ(dv_cardinality(dv), 100);
        ASSERT_TRUE(dv_contains(dv, UINT64_C(9) << 32 | 9));
        /* The highest position, 9 << 32 | 9, must be below the record count. */
        dv = dv_free(dv);
        ASSERT_EQ(dv_read(buf_slice(&blob), UINT64_C(9) << 32 | 9, &dv, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "beyond the data file's");
}

TEST(union_and_limits) {
        static const uint64_t a_pos[] = { 1, 2, UINT64_C(1) << 33 };
        static const uint64_t b_pos[] = { 2, 3, UINT64_C(1) << 32, 70000 };
        _cleanup_(dv_freep) DvBitmap *a = dv_of(a_pos, 3), *b = dv_of(b_pos, 4), *back = NULL;
        _cleanup_(buf_deinitp) Buf out;
        Error e = { 0 };

        ASSERT_OK(dv_union(a, b));
        ASSERT_EQ(dv_cardinality(a), 6);
        ASSERT_EQ(dv_cardinality(b), 4);
        buf_init(&out, 1u << 20);
        ASSERT_OK(dv_write(a, &out));
        ASSERT_OK(dv_read(buf_slice(&out), (UINT64_C(1) << 33) + 1, &back, &e));
        ASSERT_EQ(dv_cardinality(back), 6);
        for (size_t i = 0; i < 4; i++)
                ASSERT_TRUE(dv_contains(back, b_pos[i]));

        /* Positions Java cannot hold, and a blob that would be gigabytes of empty bitmaps. */
        ASSERT_EQ(dv_add(a, DV_MAX_POSITION + 1), -ERANGE);
        ASSERT_OK(dv_add(a, DV_MAX_POSITION));
        out.len = 0;
        ASSERT_EQ(dv_write(a, &out), -E2BIG);
        ASSERT_EQ(out.len, 0);
}

static int read_bytes(const uint8_t *p, size_t len, uint64_t max_position, Error *e) {
        _cleanup_(dv_freep) DvBitmap *dv = NULL;
        int r = dv_read(slice_make(p, len), max_position, &dv, e);

        ASSERT_TRUE(r < 0 || dv != NULL);
        return r;
}

TEST(dv_refusals) {
        uint8_t b[sizeof(known_dv)];
        Error e = { 0 };

        memcpy(b, known_dv, sizeof(b));
        ASSERT_EQ(read_bytes(b, sizeof(b) - 1, UINT64_MAX, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "length 58 does not match the blob's 65 bytes");
        ASSERT_EQ(read_bytes(b, 12, UINT64_MAX, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "too short");

        b[4] = 0x64; /* the magic written big-endian */
        ASSERT_EQ(read_bytes(b, sizeof(b), UINT64_MAX, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "magic 64 d3 39 64 is not d1 d3 39 64");

        memcpy(b, known_dv, sizeof(b));
        b[38] = 0x06; /* position 5 -> 6: the CRC no longer matches */
        ASSERT_EQ(read_bytes(b, sizeof(b), UINT64_MAX, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "CRC 4fe748b1 does not match its bytes");

        /* 1 << 32 | 3 is the highest position: a data file of that many rows lacks it. */
        ASSERT_EQ(read_bytes(known_dv, sizeof(known_dv), UINT64_C(1) << 32 | 3, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "position 4294967299 is beyond the data file's 4294967299 rows");
        ASSERT_EQ(read_bytes(known_dv, sizeof(known_dv), 5, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "bitmap 0 (key 0): position 5 is beyond");
        ASSERT_EQ(read_bytes(known_dv, sizeof(known_dv), 0, &e), -EBADMSG);
}

/* Bitmaps that are framed correctly but malformed inside: each refused before CRoaring. */
TEST(dv_malformed_bitmaps) {
        static const struct {
                const char *name, *message;
                uint8_t bytes[40];
                size_t len;
        } cases[] = {
                { "count past the bytes", "cannot hold 2 bitmaps", { 2, 0, 0, 0, 0, 0, 0, 0 }, 8 },
                { "keys not ascending",
                  "bitmap keys are not ascending",
                  { 2, 0, 0, 0, 0, 0, 0, 0, 1,    0,    0, 0, 0x3a, 0x30, 0, 0,
                    0, 0, 0, 0, 1, 0, 0, 0, 0x3a, 0x30, 0, 0, 0,    0,    0, 0 },
                  32 },
                { "key too large",
                  "key 2147483647 is too large",
                  { 1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0x3a, 0x30, 0, 0, 0, 0, 0, 0 },
                  20 },
                { "unknown cookie",
                  "cookie 12345 is unknown",
                  { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x39, 0x30, 0, 0, 0, 0, 0, 0 },
                  20 },
                { "array not ascending",
                  "array container is not ascending",
                  { 1, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0x3a, 0x30, 0, 0,
                    1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 5,    0,    5, 0 },
                  32 },
                { "array cut short",
                  "array container cut short",
                  { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0x3a, 0x30, 0,
                    0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0,    5,    0 },
                  30 },
                /* cookie 12347, one run container {0xfff0 .. 0x1000f}: leaves its 16 bits */
                { "run past the container",
                  "overlaps or leaves the container",
                  { 1, 0, 0, 0, 0, 0,    0, 0, 0, 0,    0,    0,    0x3b, 0x30,
                    0, 0, 1, 0, 0, 0x1f, 0, 1, 0, 0xf0, 0xff, 0x1f, 0 },
                  27 },
                { "run cardinality",
                  "run container holds 2 values, its header says 3",
                  { 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x3b, 0x30,
                    0, 0, 1, 0, 0, 2, 0, 1, 0, 4, 0, 1, 0 },
                  27 },
                { "trailing bytes", "1 bytes follow", { 0, 0, 0, 0, 0, 0, 0, 0, 0 }, 9 },
                { "container keys",
                  "container keys are not ascending",
                  { 1, 0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0x3a, 0x30, 0, 0, 2, 0, 0, 0,
                    1, 0, 0, 0, 1, 0, 0, 0, 24, 0, 0, 0, 26,   0,    0, 0, 1, 0, 1, 0 },
                  40 },
        };
        _cleanup_(buf_deinitp) Buf blob;
        Error e = { 0 };

        buf_init(&blob, 1u << 20);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                frame(cases[i].bytes, cases[i].len, &blob);
                ASSERT_EQ(read_bytes(blob.data, blob.len, UINT64_MAX, &e), -EBADMSG);
                if (!strstr(e.message, cases[i].message))
                        TEST_FAIL("%s: \"%s\" lacks \"%s\"", cases[i].name, e.message,
                                  cases[i].message);
        }
}

/* A bitset container whose header says one value more than its bits hold. */
TEST(dv_bitset_cardinality) {
        _cleanup_(buf_deinitp) Buf bitmap, blob;
        static const uint8_t head[] = { 1, 0, 0, 0, 0, 0, 0, 0, 0,    0,    0,  0, 0x3a, 0x30,
                                        0, 0, 1, 0, 0, 0, 0, 0, 0x00, 0x10, 16, 0, 0,    0 };
        Error e = { 0 };

        buf_init(&bitmap, 1u << 20);
        buf_init(&blob, 1u << 20);
        ASSERT_OK(buf_append(&bitmap, head, sizeof(head))); /* cardinality 0x1001 = 4097 */
        for (size_t i = 0; i < 8192; i++)
                ASSERT_OK(buf_append_byte(&bitmap, i < 512 ? 0xff : 0)); /* 4096 bits */
        frame(bitmap.data, bitmap.len, &blob);
        ASSERT_EQ(read_bytes(blob.data, blob.len, UINT64_MAX, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "bitset container holds 4096 values, its header says 4097");
        bitmap.data[sizeof(head) + 512] = 0x80; /* value 4103: now 4097 of them */
        frame(bitmap.data, bitmap.len, &blob);
        ASSERT_EQ(read_bytes(blob.data, blob.len, 4103, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "position 4103 is beyond");
        ASSERT_OK(read_bytes(blob.data, blob.len, 4104, &e));
}

static const char *const dv_props_a[] = { "referenced-data-file", "s3://b/t/data/a.parquet",
                                          "cardinality", "3" };
static const char *const dv_props_b[] = { "referenced-data-file", "s3://b/t/data/b.parquet",
                                          "cardinality", "1" };
static const int32_t dv_fields[] = { DV_FIELD_ROW_POSITION };

/* Two DVs in one file, as BaseDVFileWriter writes them; read back whole and from a tail. */
TEST(puffin_round_trip) {
        static const uint64_t one[] = { 7 };
        _cleanup_(dv_freep) DvBitmap *b = dv_of(one, 1), *back = NULL;
        _cleanup_(buf_deinitp) Buf dv_b, file;
        _cleanup_(puffin_footer_deinit) PuffinFooter f = { 0 };
        PuffinBlobIn in[2] = {
                { DV_BLOB_TYPE, dv_fields, 1, -1, -1, slice_make(known_dv, sizeof(known_dv)),
                  dv_props_a, 2 },
                { DV_BLOB_TYPE, dv_fields, 1, -1, -1, SLICE_NULL, dv_props_b, 2 },
        };
        PuffinBlobOut placed[2];
        const PuffinBlobMeta *m;
        uint64_t need = 0;
        Slice v;
        Error e = { 0 };
        const char *json;

        buf_init(&dv_b, 1u << 20);
        buf_init(&file, 1u << 20);
        ASSERT_OK(dv_write(b, &dv_b));
        in[1].data = buf_slice(&dv_b);
        ASSERT_OK(puffin_write(in, 2, "icecommit test", &file, placed));
        ASSERT_EQ(placed[0].offset, 4);
        ASSERT_EQ(placed[0].length, sizeof(known_dv));
        ASSERT_EQ(placed[1].offset, 4 + sizeof(known_dv));
        ASSERT_EQ(placed[1].length, dv_b.len);
        ASSERT_TRUE(memcmp(file.data, "PFA1", 4) == 0);
        ASSERT_TRUE(memcmp(file.data + 4, known_dv, sizeof(known_dv)) == 0);

        /* Java's FileMetadataParser field order, compact. */
        json = (const char *)file.data + placed[1].offset + placed[1].length + 4;
        ASSERT_TRUE(strncmp(json,
                            "{\"blobs\":[{\"type\":\"deletion-vector-v1\",\"fields\":[2147483645],"
                            "\"snapshot-id\":-1,\"sequence-number\":-1,\"offset\":4,\"length\":66,"
                            "\"properties\":{\"referenced-data-file\":\"s3://b/t/data/a.parquet\","
                            "\"cardinality\":\"3\"}},",
                            180) == 0);

        ASSERT_EQ(puffin_read_footer(slice_make(file.data + file.len - 16, 16), file.len, 1u << 20,
                                     &f, &need, &e),
                  PUFFIN_E_SHORT);
        ASSERT_TRUE(need > 16 && need < file.len);
        ASSERT_OK(puffin_read_footer(slice_make(file.data + file.len - need, need), file.len,
                                     1u << 20, &f, &need, &e));
        ASSERT_EQ(f.n_blobs, 2);
        ASSERT_EQ(f.footer_start, placed[1].offset + placed[1].length);
        puffin_footer_deinit(&f);
        ASSERT_OK(puffin_read_footer(buf_slice(&file), file.len, 1u << 20, &f, &need, &e));
        ASSERT_TRUE(puffin_find_blob(&f, 4, 65) == NULL);
        m = puffin_find_blob(&f, placed[1].offset, placed[1].length);
        ASSERT_TRUE(m == &f.blobs[1]);
        ASSERT_TRUE(slice_eq_str(m->type, DV_BLOB_TYPE));
        ASSERT_EQ(m->snapshot_id, -1);
        ASSERT_EQ(m->sequence_number, -1);
        ASSERT_TRUE(m->compression_codec.ptr == NULL);
        ASSERT_EQ(json_array_size(m->fields), 1);
        ASSERT_EQ(json_integer_value(json_array_get(m->fields, 0)), 2147483645);
        ASSERT_OK(puffin_blob_property(m, "referenced-data-file", &v));
        ASSERT_TRUE(slice_eq_str(v, "s3://b/t/data/b.parquet"));
        ASSERT_EQ(puffin_blob_property(m, "nope", &v), -ENOENT);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(f.root, "properties"), "created-by")),
                     "icecommit test");
        ASSERT_OK(dv_read(slice_make(file.data + m->offset, m->length), 8, &back, &e));
        ASSERT_EQ(dv_cardinality(back), 1);
        ASSERT_TRUE(dv_contains(back, 7));

        /* Nothing appended on failure. */
        in[1].properties = (const char *const[]){ "k", NULL };
        in[1].n_properties = 1;
        file.len = 3;
        ASSERT_EQ(puffin_write(in, 2, NULL, &file, placed), -EINVAL);
        ASSERT_EQ(file.len, 3);
}

static int read_file_footer(const char *name, PuffinFooter *f) {
        _cleanup_(freep) char *data = NULL;
        char path[256];
        uint64_t need = 0;
        size_t len;

        (void)snprintf(path, sizeof(path), "tests/data/puffin/%s.bin", name);
        data = test_read_source_file(path, &len);
        ASSERT_TRUE(data != NULL);
        return puffin_read_footer(slice_make(data, len), len, 1u << 20, f, &need, NULL);
}

/* Java's TestPuffinFormat resources. */
TEST(puffin_java_files) {
        _cleanup_(puffin_footer_deinit) PuffinFooter f = { 0 };
        Slice v;

        ASSERT_OK(read_file_footer("empty-puffin-uncompressed", &f));
        ASSERT_EQ(f.n_blobs, 0);
        ASSERT_EQ(f.footer_start, 4);
        puffin_footer_deinit(&f);

        ASSERT_OK(read_file_footer("sample-metric-data-uncompressed", &f));
        ASSERT_EQ(f.n_blobs, 2);
        ASSERT_TRUE(slice_eq_str(f.blobs[0].type, "some-blob"));
        ASSERT_EQ(f.blobs[0].offset, 4);
        ASSERT_EQ(f.blobs[0].length, 9);
        ASSERT_EQ(f.blobs[1].offset, 13);
        ASSERT_EQ(f.blobs[1].length, 83);
        ASSERT_EQ(f.blobs[1].snapshot_id, 2);
        ASSERT_EQ(f.blobs[1].sequence_number, 1);
        ASSERT_EQ(puffin_blob_property(&f.blobs[0], "x", &v), -ENOENT);
        puffin_footer_deinit(&f);

        ASSERT_OK(read_file_footer("sample-metric-data-compressed-zstd", &f));
        ASSERT_TRUE(slice_eq_str(f.blobs[1].compression_codec, "zstd"));
}

/* A file of magic, blob bytes, then a footer with payload json and the given flags. */
static void make_file(const char *blob, const char *json, uint32_t flags, Buf *out) {
        uint8_t trailer[12];
        uint32_t n = (uint32_t)strlen(json);

        for (int i = 0; i < 4; i++) {
                trailer[i] = (uint8_t)(n >> (8 * i));
                trailer[4 + i] = (uint8_t)(flags >> (8 * i));
        }
        memcpy(trailer + 8, "PFA1", 4);
        out->len = 0;
        ASSERT_OK(buf_append_str(out, "PFA1"));
        ASSERT_OK(buf_append_str(out, blob));
        ASSERT_OK(buf_append_str(out, "PFA1"));
        ASSERT_OK(buf_append_str(out, json));
        ASSERT_OK(buf_append(out, trailer, 12));
}

static int footer_of(const Buf *file, uint64_t file_size, Error *e) {
        _cleanup_(puffin_footer_deinit) PuffinFooter f = { 0 };
        uint64_t need = 0;

        return puffin_read_footer(buf_slice(file), file_size, 128, &f, &need, e);
}

#define BLOB_JSON(offset, length)                                                                  \
        "{\"blobs\":[{\"type\":\"t\",\"fields\":[1],\"snapshot-id\":-1,\"sequence-number\":-1,"    \
        "\"offset\":" #offset ",\"length\":" #length "}]}"

TEST(puffin_refusals) {
        static const struct {
                const char *json, *message;
                int code;
        } cases[] = {
                { BLOB_JSON(4, 6), NULL, 0 },
                { BLOB_JSON(4, 7), "offset=4 length=7 is outside the blobs, which end at 10",
                  -EBADMSG },
                { BLOB_JSON(11, 0), "offset=11 length=0 is outside", -EBADMSG },
                { BLOB_JSON(3, 1), "\"offset\" is not an integer >= 4", -EBADMSG },
                { BLOB_JSON(4, -1), "\"length\" is not an integer >= 0", -EBADMSG },
                { "{\"blobs\":[{\"type\":\"t\",\"fields\":[1],\"offset\":4,\"length\":1}]}",
                  "blob 0: \"snapshot-id\" is missing", -EBADMSG },
                { "{\"blobs\":[{\"type\":\"t\",\"fields\":[4294967296],\"snapshot-id\":1,"
                  "\"sequence-number\":1,\"offset\":4,\"length\":1}]}",
                  "field 0 is not a 32-bit integer", -EBADMSG },
                { "{\"blobs\":{}}", "no \"blobs\" array", -EBADMSG },
                { "{\"blobs\":[],\"blobs\":[]}", "not JSON", -EBADMSG },
                { "[1]", "not a JSON object", -EBADMSG },
                { "{\"blobs\":[],\"properties\":{\"a\":1}}", "property \"a\" is not a string",
                  -EBADMSG },
        };
        _cleanup_(buf_deinitp) Buf file;
        Error e = { 0 };

        buf_init(&file, 1u << 20);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                make_file("blobby", cases[i].json, 0, &file);
                e.message[0] = 0;
                if (footer_of(&file, file.len, &e) != cases[i].code ||
                    (cases[i].message && !strstr(e.message, cases[i].message)))
                        TEST_FAIL("case %zu: \"%s\"", i, e.message);
        }

        make_file("blobby", "{\"blobs\":[]}", 1, &file);
        ASSERT_EQ(footer_of(&file, file.len, &e), -EOPNOTSUPP);
        ASSERT_CONTAINS(e.message, "compressed (LZ4)");
        make_file("blobby", "{\"blobs\":[]}", 0x100, &file); /* unknown flags are ignored */
        ASSERT_OK(footer_of(&file, file.len, &e));

        make_file("",
                  "{\"blobs\":[], \"properties\": {\"pad\": \"" /* 134 bytes > limit 128 */
                  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}}",
                  0, &file);
        ASSERT_EQ(footer_of(&file, file.len, &e), -EFBIG);

        make_file("blobby", "{\"blobs\":[]}", 0, &file);
        file.data[0] = 'X';
        ASSERT_EQ(footer_of(&file, file.len, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "does not start with the Puffin magic");
        file.data[0] = 'P';
        file.data[10] = 'X'; /* the footer's own magic */
        ASSERT_EQ(footer_of(&file, file.len, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "footer does not start with the Puffin magic");
        file.data[10] = 'P';
        file.data[file.len - 12] = 0x7f; /* a payload size past the start of the file */
        ASSERT_EQ(footer_of(&file, file.len, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "does not fit in a file of 38 bytes");
        file.data[file.len - 9] = 0xff; /* negative */
        ASSERT_EQ(footer_of(&file, file.len, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "is negative");

        /* Truncated: the file cut before its end has no trailing magic; a file shorter than any
         * Puffin file; a tail longer than the file. */
        make_file("blobby", "{\"blobs\":[]}", 0, &file);
        ASSERT_EQ(footer_of(&file, file.len - 1, &e), -EBADMSG);
        file.len--;
        ASSERT_EQ(footer_of(&file, file.len, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "does not end with the Puffin magic");
        file.len = 19;
        ASSERT_EQ(footer_of(&file, file.len, &e), -EBADMSG);
        ASSERT_CONTAINS(e.message, "shorter than any Puffin file");
}
