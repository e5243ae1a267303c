/* SPDX-License-Identifier: Apache-2.0 */
/* The Parquet footer reader (see footer.h): a cursor over the Thrift compact protocol
 * (thrift/doc/specs/thrift-compact-protocol.md). Every read checks the bytes left; every
 * count is bounded by them (each element takes at least one byte), so the work is linear in
 * the input and the nesting bounded by PARQUET_FOOTER_MAX_DEPTH. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "parquet/footer.h"

/* Compact protocol types (field headers; lists use the same ids, booleans one byte each). */
enum {
        TYPE_STOP = 0,
        TYPE_BOOLEAN_TRUE = 1,
        TYPE_BOOLEAN_FALSE = 2,
        TYPE_BYTE = 3,
        TYPE_I16 = 4,
        TYPE_I32 = 5,
        TYPE_I64 = 6,
        TYPE_DOUBLE = 7,
        TYPE_BINARY = 8,
        TYPE_LIST = 9,
        TYPE_SET = 10,
        TYPE_MAP = 11,
        TYPE_STRUCT = 12,
        TYPE_UUID = 13,
};

typedef struct Cursor {
        const uint8_t *p, *end;
} Cursor;

static size_t cursor_left(const Cursor *c) {
        return (size_t)(c->end - c->p);
}

static int cursor_byte(Cursor *c, uint8_t *ret) {
        if (c->p == c->end)
                return -EBADMSG;
        *ret = *c->p++;
        return 0;
}

static int cursor_skip(Cursor *c, uint64_t n) {
        if (n > cursor_left(c))
                return -EBADMSG;
        c->p += n;
        return 0;
}

/* ULEB128, at most 10 bytes for 64 bits. */
static int cursor_varint(Cursor *c, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64; shift += 7) {
                uint8_t b;

                if (cursor_byte(c, &b) < 0)
                        return -EBADMSG;
                if (shift == 63 && b > 1)
                        return -EBADMSG;
                v |= (uint64_t)(b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -EBADMSG;
}

static int cursor_zigzag(Cursor *c, int64_t *ret) {
        uint64_t v;

        if (cursor_varint(c, &v) < 0)
                return -EBADMSG;
        *ret = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
        return 0;
}

static int cursor_i32(Cursor *c, int32_t *ret) {
        int64_t v;

        if (cursor_zigzag(c, &v) < 0 || v < INT32_MIN || v > INT32_MAX)
                return -EBADMSG;
        *ret = (int32_t)v;
        return 0;
}

/* A list or set header: element type and count, the count bounded by the bytes left. */
static int cursor_list(Cursor *c, uint8_t *ret_type, uint64_t *ret_n) {
        uint8_t b;
        uint64_t n;

        if (cursor_byte(c, &b) < 0)
                return -EBADMSG;
        n = b >> 4;
        if (n == 15 && cursor_varint(c, &n) < 0)
                return -EBADMSG;
        if (n > cursor_left(c))
                return -EBADMSG;
        *ret_type = b & 0x0f;
        *ret_n = n;
        return 0;
}

/* A field header: STOP, or the field's type and id (a delta on the last id, or a zigzag i16). */
static int cursor_field(Cursor *c, int16_t *last_id, uint8_t *ret_type, int16_t *ret_id) {
        uint8_t b;
        int64_t id;

        if (cursor_byte(c, &b) < 0)
                return -EBADMSG;
        *ret_type = b & 0x0f;
        if (*ret_type == TYPE_STOP)
                return 0;
        if (b >> 4)
                id = *last_id + (b >> 4);
        else if (cursor_zigzag(c, &id) < 0)
                return -EBADMSG;
        if (id < INT16_MIN || id > INT16_MAX)
                return -EBADMSG;
        *ret_id = *last_id = (int16_t)id;
        return 0;
}

static int skip_value(Cursor *c, uint8_t type, unsigned depth, bool in_list);

static int skip_struct(Cursor *c, unsigned depth) {
        int16_t last = 0, id;
        uint8_t type;

        if (depth >= PARQUET_FOOTER_MAX_DEPTH)
                return -EBADMSG;
        for (;;) {
                if (cursor_field(c, &last, &type, &id) < 0)
                        return -EBADMSG;
                if (type == TYPE_STOP)
                        return 0;
                if (skip_value(c, type, depth + 1, /* in_list= */ false) < 0)
                        return -EBADMSG;
        }
}

/* Skips one value of a type not read: booleans are in the field header, one byte in a list. */
static int skip_value(Cursor *c, uint8_t type, unsigned depth, bool in_list) {
        uint64_t n, u;
        uint8_t b, elem;

        if (depth >= PARQUET_FOOTER_MAX_DEPTH)
                return -EBADMSG;
        switch (type) {
        case TYPE_BOOLEAN_TRUE:
        case TYPE_BOOLEAN_FALSE:
                return in_list ? cursor_skip(c, 1) : 0;
        case TYPE_BYTE:
                return cursor_skip(c, 1);
        case TYPE_I16:
        case TYPE_I32:
        case TYPE_I64:
                return cursor_varint(c, &u);
        case TYPE_DOUBLE:
                return cursor_skip(c, 8);
        case TYPE_UUID:
                return cursor_skip(c, 16);
        case TYPE_BINARY:
                if (cursor_varint(c, &n) < 0)
                        return -EBADMSG;
                return cursor_skip(c, n);
        case TYPE_LIST:
        case TYPE_SET:
                if (cursor_list(c, &elem, &n) < 0)
                        return -EBADMSG;
                for (uint64_t i = 0; i < n; i++)
                        if (skip_value(c, elem, depth + 1, /* in_list= */ true) < 0)
                                return -EBADMSG;
                return 0;
        case TYPE_MAP:
                if (cursor_varint(c, &n) < 0)
                        return -EBADMSG;
                if (n == 0)
                        return 0;
                if (n > cursor_left(c) / 2 || cursor_byte(c, &b) < 0)
                        return -EBADMSG;
                for (uint64_t i = 0; i < n; i++)
                        if (skip_value(c, b >> 4, depth + 1, true) < 0 ||
                            skip_value(c, b & 0x0f, depth + 1, true) < 0)
                                return -EBADMSG;
                return 0;
        case TYPE_STRUCT:
                return skip_struct(c, depth);
        default:
                return -EBADMSG;
        }
}

/* RowGroup: field 3 num_rows (required). */
static int parse_row_group(Cursor *c, int64_t *ret_rows) {
        int16_t last = 0, id;
        uint8_t type;
        bool has_rows = false;

        for (;;) {
                if (cursor_field(c, &last, &type, &id) < 0)
                        return -EBADMSG;
                if (type == TYPE_STOP)
                        break;
                if (id == 3 && type == TYPE_I64) {
                        if (cursor_zigzag(c, ret_rows) < 0 || *ret_rows < 0)
                                return -EBADMSG;
                        has_rows = true;
                } else if (skip_value(c, type, 3, /* in_list= */ false) < 0)
                        return -EBADMSG;
        }
        return has_rows ? 0 : -EBADMSG;
}

static int parse_file_metadata(Cursor *c, ParquetFooter *f, Error *error) {
        bool has_version = false, has_schema = false, has_rows = false, has_groups = false;
        int16_t last = 0, id;
        uint8_t type, elem;
        uint64_t n;

        for (;;) {
                if (cursor_field(c, &last, &type, &id) < 0)
                        return error_set(error, -EBADMSG, "the footer is not Thrift FileMetaData");
                if (type == TYPE_STOP)
                        break;
                if (id == 1 && type == TYPE_I32) {
                        if (cursor_i32(c, &f->version) < 0)
                                return error_set(error, -EBADMSG,
                                                 "the footer's version is malformed");
                        has_version = true;
                } else if (id == 2 && type == TYPE_LIST) {
                        if (cursor_list(c, &elem, &n) < 0 || elem != TYPE_STRUCT)
                                return error_set(error, -EBADMSG,
                                                 "the footer's schema is malformed");
                        for (uint64_t i = 0; i < n; i++)
                                if (skip_struct(c, 2) < 0)
                                        return error_set(error, -EBADMSG,
                                                         "the footer's schema is malformed");
                        f->n_schema_elements = n;
                        has_schema = true;
                } else if (id == 3 && type == TYPE_I64) {
                        if (cursor_zigzag(c, &f->num_rows) < 0 || f->num_rows < 0)
                                return error_set(error, -EBADMSG,
                                                 "the footer's num_rows is malformed");
                        has_rows = true;
                } else if (id == 4 && type == TYPE_LIST) {
                        if (cursor_list(c, &elem, &n) < 0 || elem != TYPE_STRUCT)
                                return error_set(error, -EBADMSG,
                                                 "the footer's row groups are malformed");
                        f->row_group_rows = 0;
                        for (uint64_t i = 0; i < n; i++) {
                                int64_t rows = 0;

                                if (parse_row_group(c, &rows) < 0)
                                        return error_set(error, -EBADMSG,
                                                         "the footer's row group %" PRIu64
                                                         " is malformed",
                                                         i);
                                if (__builtin_add_overflow(f->row_group_rows, rows,
                                                           &f->row_group_rows))
                                        return error_set(
                                                error, -EBADMSG,
                                                "the footer's row groups hold more than 2^63 rows");
                        }
                        f->n_row_groups = n;
                        has_groups = true;
                } else if (skip_value(c, type, 1, /* in_list= */ false) < 0)
                        return error_set(error, -EBADMSG, "the footer's field %d is malformed", id);
        }
        if (!has_version || !has_schema || !has_rows || !has_groups)
                return error_set(error, -EBADMSG, "the footer lacks a required field (%s)",
                                 !has_version  ? "version"
                                 : !has_schema ? "schema"
                                 : !has_rows   ? "num_rows"
                                               : "row_groups");
        if (f->row_group_rows != f->num_rows)
                return error_set(error, -EBADMSG,
                                 "the footer says num_rows %" PRId64 " but its %" PRIu64
                                 " row groups hold %" PRId64,
                                 f->num_rows, f->n_row_groups, f->row_group_rows);
        return 0;
}

int parquet_footer_parse(Slice tail, uint64_t file_size, uint64_t max_footer_bytes,
                         ParquetFooter *ret_footer, uint64_t *ret_need, Error *error) {
        const uint8_t *trailer;
        ParquetFooter f = { 0 };
        uint64_t length;
        Cursor c;
        int r;

        /* Magic at both ends, a length, and at least the STOP of an empty struct. */
        if (tail.len > file_size)
                return error_set(error, -EBADMSG, "more bytes than the file has");
        if (file_size < 4 + 1 + PARQUET_FOOTER_TRAILER_BYTES ||
            tail.len < PARQUET_FOOTER_TRAILER_BYTES)
                return error_set(error, -EBADMSG, "not a Parquet file: %" PRIu64 " bytes",
                                 file_size);
        trailer = tail.ptr + tail.len - PARQUET_FOOTER_TRAILER_BYTES;
        if (memcmp(trailer + 4, "PARE", 4) == 0)
                return error_set(
                        error, -EBADMSG,
                        "an encrypted Parquet footer (PARE), which icecommitd cannot read");
        if (memcmp(trailer + 4, "PAR1", 4) != 0)
                return error_set(error, -EBADMSG, "not a Parquet file: it does not end in PAR1");
        length = (uint64_t)trailer[0] | (uint64_t)trailer[1] << 8 | (uint64_t)trailer[2] << 16 |
                 (uint64_t)trailer[3] << 24;
        if (length > file_size - 4 - PARQUET_FOOTER_TRAILER_BYTES)
                return error_set(error, -EBADMSG,
                                 "not a Parquet file: a footer of %" PRIu64 " bytes in %" PRIu64,
                                 length, file_size);
        if (length > max_footer_bytes)
                return error_set(error, -EFBIG,
                                 "a Parquet footer of %" PRIu64
                                 " bytes, above the limit of %" PRIu64,
                                 length, max_footer_bytes);
        if (length > tail.len - PARQUET_FOOTER_TRAILER_BYTES) {
                *ret_need = length + PARQUET_FOOTER_TRAILER_BYTES;
                return PARQUET_FOOTER_E_SHORT;
        }
        /* The leading magic is only checked when the tail reaches it (a small file read whole). */
        if (tail.len == file_size && memcmp(tail.ptr, "PAR1", 4) != 0)
                return error_set(error, -EBADMSG,
                                 "not a Parquet file: it does not start with PAR1");

        c = (Cursor){ .p = trailer - length, .end = trailer };
        r = parse_file_metadata(&c, &f, error);
        if (r < 0)
                return r;
        if (c.p != c.end)
                return error_set(error, -EBADMSG, "%zu bytes after the footer's FileMetaData",
                                 cursor_left(&c));
        f.footer_bytes = length;
        *ret_footer = f;
        return 0;
}
