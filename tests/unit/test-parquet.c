/* SPDX-License-Identifier: Apache-2.0 */
/* parquet/footer.c: footers pyarrow wrote (tests/data/parquet/, from tests/fuzz/make-corpus.py)
 * give their row counts, read whole or from a short tail; hand-made footers check every refusal
 * (truncation, bad lengths and magic, deep nesting, counts past the bytes, counts that disagree)
 * and that unknown fields of every type are skipped. */
#include <errno.h>
#include <string.h>

#include "parquet/footer.h"
#include "util/cleanup.h"
#include "test.h"

static int parse_file(const char *name, ParquetFooter *f) {
        char path[256];
        _cleanup_(freep) char *data = NULL;
        size_t len;
        uint64_t need = 0;
        int r;

        (void)snprintf(path, sizeof(path), "tests/data/parquet/%s.parquet", name);
        data = test_read_source_file(path, &len);
        ASSERT_TRUE(data != NULL);
        /* First the 16-byte tail: too short for any footer, it names the tail that is enough. */
        r = parquet_footer_parse(slice_make(data + len - 16, 16), len, 1u << 20, f, &need, NULL);
        ASSERT_EQ(r, PARQUET_FOOTER_E_SHORT);
        ASSERT_TRUE(need > 16 && need <= len);
        r = parquet_footer_parse(slice_make(data + len - need, need), len, 1u << 20, f, &need,
                                 NULL);
        ASSERT_OK(r);
        ASSERT_EQ(f->footer_bytes + 8, need);
        /* The whole file gives the same (and checks the leading magic too). */
        ASSERT_OK(parquet_footer_parse(slice_make(data, len), len, 1u << 20, f, &need, NULL));
        /* A limit below the footer's length: -EFBIG, however much was read. */
        ASSERT_EQ(parquet_footer_parse(slice_make(data, len), len, f->footer_bytes - 1, f, &need,
                                       NULL),
                  -EFBIG);
        return parquet_footer_parse(slice_make(data, len), len, 1u << 20, f, &need, NULL);
}

TEST(pyarrow_footers) {
        ParquetFooter f;

        ASSERT_OK(parse_file("three-rows", &f));
        ASSERT_EQ(f.num_rows, 3);
        ASSERT_EQ(f.n_row_groups, 1u);
        ASSERT_EQ(f.row_group_rows, 3);
        ASSERT_EQ(f.n_schema_elements, 3u); /* the root and two columns */
        ASSERT_TRUE(f.version == 1 || f.version == 2);

        ASSERT_OK(parse_file("row-groups", &f));
        ASSERT_EQ(f.num_rows, 1000);
        ASSERT_EQ(f.n_row_groups, 8u); /* row_group_size=128 */

        ASSERT_OK(parse_file("empty", &f));
        ASSERT_EQ(f.num_rows, 0);
}

/* "PAR1" + footer + its length (little-endian) + "PAR1", into out; returns the length. */
static size_t make_file(const uint8_t *footer, size_t n, uint8_t *out) {
        memcpy(out, "PAR1", 4);
        memcpy(out + 4, footer, n);
        out[4 + n] = (uint8_t)n;
        out[5 + n] = (uint8_t)(n >> 8);
        out[6 + n] = 0;
        out[7 + n] = 0;
        memcpy(out + 8 + n, "PAR1", 4);
        return n + 12;
}

static int parse_bytes(const uint8_t *footer, size_t n, ParquetFooter *f, char *message) {
        uint8_t file[4096];
        size_t len = make_file(footer, n, file);
        uint64_t need = 0;
        Error e = { 0 };
        int r;

        r = parquet_footer_parse(slice_make(file, len), len, 1u << 20, f, &need, &e);
        if (message)
                (void)snprintf(message, 1024, "%s", e.message);
        return r;
}

/* version 1, a schema of one (empty) element, num_rows 3, one row group of 3 rows. */
#define GOOD_HEAD 0x15, 0x02, 0x19, 0x1c, 0x00, 0x16, 0x06
#define GOOD_GROUPS 0x19, 0x1c, 0x36, 0x06, 0x00

TEST(hand_made_footer_and_unknown_fields) {
        static const uint8_t good[] = { GOOD_HEAD, GOOD_GROUPS, 0x00 };
        /* After the row groups: field 5 binary "ab", field 6 a map<binary,binary> of one entry,
         * field 7 double, field 8 true, field 9 a list of two booleans, field 10 a set of i32,
         * field 11 a struct holding an i16 and a uuid (type 13), field 300 (long form) byte. */
        static const uint8_t unknown[] = {
                GOOD_HEAD, GOOD_GROUPS, 0x18, 0x02, 'a',  'b',  0x1b, 0x01, 0x88, 0x01, 'k',  0x01,
                'v',       0x17,        0,    0,    0,    0,    0,    0,    0xf0, 0x3f, 0x11, 0x19,
                0x21,      0x01,        0x02, 0x1a, 0x15, 0x04, 0x1c, 0x14, 0x02, 0x1d, 1,    2,
                3,         4,           5,    6,    7,    8,    9,    10,   11,   12,   13,   14,
                15,        16,          0x00, 0x03, 0xd8, 0x04, 0x7f, 0x00,
        };
        ParquetFooter f;

        ASSERT_OK(parse_bytes(good, sizeof(good), &f, NULL));
        ASSERT_EQ(f.num_rows, 3);
        ASSERT_EQ(f.version, 1);
        ASSERT_OK(parse_bytes(unknown, sizeof(unknown), &f, NULL));
        ASSERT_EQ(f.num_rows, 3);
        ASSERT_EQ(f.n_row_groups, 1u);
}

TEST(malformed_footers) {
        static const uint8_t disagree[] = { 0x15, 0x02, 0x19,        0x1c, 0x00,
                                            0x16, 0x08, GOOD_GROUPS, 0x00 };
        static const uint8_t no_rows[] = { 0x15, 0x02, 0x19, 0x1c, 0x00, 0x26,
                                           0x19, 0x1c, 0x36, 0x06, 0x00, 0x00 };
        static const uint8_t no_stop[] = { GOOD_HEAD, GOOD_GROUPS };
        static const uint8_t trailing[] = { GOOD_HEAD, GOOD_GROUPS, 0x00, 0x00 };
        static const uint8_t huge_list[] = { GOOD_HEAD, 0x19, 0xfc, 0xff, 0xff, 0xff, 0x0f, 0x00 };
        static const uint8_t long_varint[] = { 0x15, 0x82, 0x82, 0x82, 0x82, 0x82, 0x82,
                                               0x82, 0x82, 0x82, 0x82, 0x02, 0x00 };
        static const uint8_t i32_overflow[] = { 0x15, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00 };
        static const uint8_t bad_type[] = { GOOD_HEAD, GOOD_GROUPS, 0x1e, 0x00 };
        static const uint8_t negative_rows[] = { 0x15, 0x02, 0x19,        0x1c, 0x00,
                                                 0x16, 0x05, GOOD_GROUPS, 0x00 };
        uint8_t deep[200];
        ParquetFooter f;
        char message[1024];
        size_t n = 0;

        ASSERT_EQ(parse_bytes(disagree, sizeof(disagree), &f, message), -EBADMSG);
        ASSERT_CONTAINS(message, "num_rows 4 but its 1 row groups hold 3");
        ASSERT_EQ(parse_bytes(no_rows, sizeof(no_rows), &f, message), -EBADMSG);
        ASSERT_CONTAINS(message, "num_rows");
        ASSERT_EQ(parse_bytes(no_stop, sizeof(no_stop), &f, NULL), -EBADMSG);
        ASSERT_EQ(parse_bytes(trailing, sizeof(trailing), &f, message), -EBADMSG);
        ASSERT_CONTAINS(message, "after the footer");
        ASSERT_EQ(parse_bytes(huge_list, sizeof(huge_list), &f, NULL), -EBADMSG);
        ASSERT_EQ(parse_bytes(long_varint, sizeof(long_varint), &f, NULL), -EBADMSG);
        ASSERT_EQ(parse_bytes(i32_overflow, sizeof(i32_overflow), &f, NULL), -EBADMSG);
        ASSERT_EQ(parse_bytes(bad_type, sizeof(bad_type), &f, NULL), -EBADMSG);
        ASSERT_EQ(parse_bytes(negative_rows, sizeof(negative_rows), &f, NULL), -EBADMSG);

        /* 60 nested structs in an unknown field: past PARQUET_FOOTER_MAX_DEPTH. */
        deep[n++] = 0x1c;
        for (int i = 0; i < 60; i++)
                deep[n++] = 0x1c;
        for (int i = 0; i < 62; i++)
                deep[n++] = 0x00;
        ASSERT_EQ(parse_bytes(deep, n, &f, NULL), -EBADMSG);
}

TEST(not_parquet) {
        static const uint8_t good[] = { GOOD_HEAD, GOOD_GROUPS, 0x00 };
        static const char csv[] = "id,name\n1,a\n2,b\n3,c\n";
        uint8_t file[256];
        size_t len = make_file(good, sizeof(good), file);
        ParquetFooter f;
        uint64_t need = 0;
        Error e = { 0 };

        ASSERT_EQ(parquet_footer_parse(slice_make(csv, strlen(csv)), strlen(csv), 1u << 20, &f,
                                       &need, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "does not end in PAR1");
        ASSERT_EQ(parquet_footer_parse(slice_make("PAR1", 4), 4, 1u << 20, &f, &need, &e),
                  -EBADMSG);
        ASSERT_EQ(parquet_footer_parse(slice_make("", 0), 0, 1u << 20, &f, &need, &e), -EBADMSG);

        file[0] = 'X'; /* the leading magic, checked when the tail is the whole file */
        ASSERT_EQ(parquet_footer_parse(slice_make(file, len), len, 1u << 20, &f, &need, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "start with PAR1");
        ASSERT_OK(
                parquet_footer_parse(slice_make(file + 1, len - 1), len, 1u << 20, &f, &need, &e));

        file[0] = 'P';
        file[len - 8] = 0xff; /* a length past the start of the file */
        ASSERT_EQ(parquet_footer_parse(slice_make(file, len), len, 1u << 20, &f, &need, &e),
                  -EBADMSG);
        memcpy(file + len - 4, "PARE", 4);
        ASSERT_EQ(parquet_footer_parse(slice_make(file, len), len, 1u << 20, &f, &need, &e),
                  -EBADMSG);
        ASSERT_CONTAINS(e.message, "encrypted");
        /* More bytes than the file is long: a caller bug, refused all the same. */
        ASSERT_EQ(parquet_footer_parse(slice_make(file, len), len - 1, 1u << 20, &f, &need, &e),
                  -EBADMSG);
}
