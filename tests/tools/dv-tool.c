/* SPDX-License-Identifier: Apache-2.0 */
/* icecommit-dv-tool: lets tests/integration/test_puffin_interop.py drive puffin/ from outside:
 * writes Puffin files of deletion vectors, reads one DV at an offset and length (with the
 * footer's entry for it), and writes the union of two DVs. Prints JSON; test-only. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "puffin/dv.h"
#include "puffin/puffin.h"
#include "tool-io.h"
#include "util/buf.h"
#include "util/parse.h"

#define TOOL_MAX_DVS 2

DEFINE_CLEANUP_FUNC(DvBitmap, dv_free);

static int fail(const char *what, int r, const Error *e) {
        fprintf(stderr, "dv-tool: %s: %s\n", what, e && e->message[0] ? e->message : strerror(-r));
        return r == -EBADMSG ? 1 : 2;
}

static void print_json(json_t *j) {
        char *text = json_dumps(j, JSON_COMPACT);

        if (text)
                puts(text);
        free(text);
        json_decref(j);
}

/* "1,5,4294967299" (or "" for none) into dv. */
static int parse_positions(const char *list, DvBitmap *dv) {
        _cleanup_(freep) char *copy = strdup(list);
        char *save = NULL;
        int r;

        if (!copy)
                return -ENOMEM;
        for (char *s = strtok_r(copy, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
                uint64_t p;

                r = parse_u64(s, &p);
                if (r < 0)
                        return r;
                r = dv_add(dv, p);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Writes one DV per (data file, set) into one Puffin file, as BaseDVFileWriter does. */
static int write_dvs(const char *out_path, const char *const *data_files, DvBitmap **dvs,
                     size_t n) {
        _cleanup_(buf_deinitp) Buf file = { 0 }, blob0 = { 0 }, blob1 = { 0 };
        Buf *blobs[TOOL_MAX_DVS] = { &blob0, &blob1 };
        static const int32_t fields[] = { DV_FIELD_ROW_POSITION };
        char cardinality[TOOL_MAX_DVS][24];
        const char *props[TOOL_MAX_DVS][4];
        PuffinBlobIn in[TOOL_MAX_DVS];
        PuffinBlobOut placed[TOOL_MAX_DVS];
        json_t *list = json_array();
        int r;

        buf_init(&file, TOOL_MAX_FILE_BYTES);
        for (size_t i = 0; i < n; i++) {
                buf_init(blobs[i], TOOL_MAX_FILE_BYTES);
                r = dv_write(dvs[i], blobs[i]);
                if (r < 0) {
                        json_decref(list);
                        return fail("dv_write", r, NULL);
                }
                (void)snprintf(cardinality[i], sizeof(cardinality[i]), "%" PRIu64,
                               dv_cardinality(dvs[i]));
                props[i][0] = "referenced-data-file", props[i][1] = data_files[i];
                props[i][2] = "cardinality", props[i][3] = cardinality[i];
                in[i] = (PuffinBlobIn){ DV_BLOB_TYPE,        fields,   1, -1, -1,
                                        buf_slice(blobs[i]), props[i], 2 };
        }
        r = puffin_write(in, n, "icecommit dv-tool", &file, placed);
        if (r >= 0)
                r = tool_write_file(out_path, &file);
        if (r < 0) {
                json_decref(list);
                return fail(out_path, r, NULL);
        }
        for (size_t i = 0; i < n; i++)
                json_array_append_new(list,
                                      json_pack("{s:s, s:I, s:s, s:I, s:I, s:I}", "path", out_path,
                                                "file-size-in-bytes", (json_int_t)file.len,
                                                "referenced-data-file", data_files[i],
                                                "content-offset", (json_int_t)placed[i].offset,
                                                "content-size-in-bytes",
                                                (json_int_t)placed[i].length, "record-count",
                                                (json_int_t)dv_cardinality(dvs[i])));
        print_json(json_pack("{s:o}", "dvs", list));
        return 0;
}

static int cmd_write(int argc, char **argv) {
        _cleanup_(dv_freep) DvBitmap *a = dv_new(), *b = dv_new();
        DvBitmap *dvs[TOOL_MAX_DVS] = { a, b };
        const char *data_files[TOOL_MAX_DVS] = { argv[1], argc == 5 ? argv[3] : NULL };
        int r;

        if (!a || !b)
                return fail("dv_new", -ENOMEM, NULL);
        r = parse_positions(argv[2], a);
        if (r >= 0 && argc == 5)
                r = parse_positions(argv[4], b);
        if (r < 0)
                return fail("positions", r, NULL);
        return write_dvs(argv[0], data_files, dvs, argc == 5 ? 2 : 1);
}

/* Reads the DV at offset/length of a Puffin file, checking the footer lists it. */
static int read_dv(const char *path, const char *offset_s, const char *length_s, const char *rows_s,
                   DvBitmap **ret, Slice *ret_data_file, Buf *file, PuffinFooter *footer) {
        const PuffinBlobMeta *m;
        uint64_t offset, length, rows, need = 0;
        Error e = { 0 };
        int r;

        if (parse_u64(offset_s, &offset) < 0 || parse_u64(length_s, &length) < 0 ||
            parse_u64(rows_s, &rows) < 0)
                return fail("arguments", -EINVAL, NULL);
        r = tool_read_file(path, file);
        if (r < 0)
                return fail(path, r, NULL);
        r = puffin_read_footer(buf_slice(file), file->len, 1u << 20, footer, &need, &e);
        if (r != 0)
                return fail("footer", r < 0 ? r : -EBADMSG, &e);
        m = puffin_find_blob(footer, offset, length);
        if (!m || !slice_eq_str(m->type, DV_BLOB_TYPE) || m->compression_codec.ptr)
                return fail("footer", -EBADMSG, NULL);
        if (puffin_blob_property(m, "referenced-data-file", ret_data_file) < 0)
                return fail("referenced-data-file", -EBADMSG, NULL);
        r = dv_read(slice_make(file->data + offset, length), rows, ret, &e);
        if (r < 0)
                return fail("dv_read", r, &e);
        return 0;
}

static bool add_position(uint64_t position, void *userdata) {
        return json_array_append_new(userdata, json_integer((json_int_t)position)) == 0;
}

static int cmd_read(char **argv) {
        _cleanup_(puffin_footer_deinit) PuffinFooter footer = { 0 };
        _cleanup_(buf_deinitp) Buf file = { 0 };
        _cleanup_(dv_freep) DvBitmap *dv = NULL;
        Slice data_file;
        json_t *positions = json_array();
        int r;

        r = read_dv(argv[0], argv[1], argv[2], argv[3], &dv, &data_file, &file, &footer);
        if (r != 0) {
                json_decref(positions);
                return r;
        }
        (void)dv_foreach(dv, add_position, positions);
        print_json(json_pack("{s:o, s:I, s:s%}", "positions", positions, "cardinality",
                             (json_int_t)dv_cardinality(dv), "referenced-data-file", data_file.ptr,
                             data_file.len));
        return 0;
}

/* union OUT IN1 OFF1 LEN1 IN2 OFF2 LEN2 ROWS: both DVs of one data file, as one DV. */
static int cmd_union(char **argv) {
        _cleanup_(puffin_footer_deinit) PuffinFooter f1 = { 0 }, f2 = { 0 };
        _cleanup_(buf_deinitp) Buf file1 = { 0 }, file2 = { 0 };
        _cleanup_(dv_freep) DvBitmap *a = NULL, *b = NULL;
        _cleanup_(freep) char *data_file = NULL;
        Slice df1, df2;
        int r;

        r = read_dv(argv[1], argv[2], argv[3], argv[7], &a, &df1, &file1, &f1);
        if (r == 0)
                r = read_dv(argv[4], argv[5], argv[6], argv[7], &b, &df2, &file2, &f2);
        if (r != 0)
                return r;
        if (df1.len != df2.len || memcmp(df1.ptr, df2.ptr, df1.len) != 0)
                return fail("union", -EINVAL, NULL);
        data_file = strndup((const char *)df1.ptr, df1.len);
        if (!data_file)
                return fail("union", -ENOMEM, NULL);
        r = dv_union(a, b);
        if (r < 0)
                return fail("dv_union", r, NULL);
        return write_dvs(argv[0], (const char *const[]){ data_file }, &a, 1);
}

int main(int argc, char **argv) {
        if ((argc == 5 || argc == 7) && strcmp(argv[1], "write") == 0)
                return cmd_write(argc - 2, argv + 2);
        if (argc == 6 && strcmp(argv[1], "read") == 0)
                return cmd_read(argv + 2);
        if (argc == 10 && strcmp(argv[1], "union") == 0)
                return cmd_union(argv + 2);
        fprintf(stderr,
                "usage: icecommit-dv-tool write OUT DATA_FILE POSITIONS [DATA_FILE2 POSITIONS2] |\n"
                "                         read IN OFFSET LENGTH RECORD_COUNT |\n"
                "                         union OUT IN1 OFF1 LEN1 IN2 OFF2 LEN2 RECORD_COUNT\n"
                "POSITIONS: comma-separated row positions. exit: 0 ok, 1 rejected, 2 usage or "
                "I/O\n");
        return 2;
}
