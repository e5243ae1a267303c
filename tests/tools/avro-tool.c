/* SPDX-License-Identifier: Apache-2.0 */
/* icecommit-avro-tool: lets the interop tests (tests/integration/test_avro_interop.py,
 * test_manifest_list_incremental.py) and tests/fuzz/make-corpus.py drive avro/ocf,
 * iceberg/manifest_list and manifest from outside: writes a fixed v3 manifest list (whole or by
 * appends), rewrites a list whole, filters files out of a committed manifest
 * (tests/integration/test_manifest_filter.py) and prints, as JSON, what our readers return for any
 * list or staged manifest. Test-only. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro/ocf.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_filter.h"
#include "iceberg/manifest_list.h"
#include "iceberg/manifest_list_append.h"
#include "iceberg-fixture.h"
#include "tool-io.h"
#include "util/buf.h"
#include "util/parse.h"

/* Says why `path` could not be read or written; returns the exit status for I/O errors. */
static int io_failed(const char *path, int r) {
        fprintf(stderr, "%s: %s\n", path, strerror(-r));
        return 2;
}

static json_t *hex_of(const void *p, size_t len) {
        static const char digits[] = "0123456789abcdef";
        const uint8_t *s = p;
        char *text = malloc(len * 2 + 1);
        json_t *j;

        if (!text)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                text[2 * i] = digits[s[i] >> 4];
                text[2 * i + 1] = digits[s[i] & 15];
        }
        text[len * 2] = 0;
        j = json_string(text);
        free(text);
        return j;
}

static json_t *optional_hex(bool has, const Buf *b) {
        return has ? hex_of(b->data, b->len) : json_null();
}

static json_t *optional_int(bool has, int64_t v) {
        return has ? json_integer(v) : json_null();
}

static json_t *summaries_json(bool has, const PartitionFieldSummary *s, size_t n) {
        json_t *a;

        if (!has)
                return json_null();
        a = json_array();
        for (size_t i = 0; a && i < n; i++)
                json_array_append_new(a, json_pack("{s:b, s:o, s:o, s:o}", "contains_null",
                                                   s[i].contains_null, "contains_nan",
                                                   s[i].has_contains_nan
                                                           ? json_boolean(s[i].contains_nan)
                                                           : json_null(),
                                                   "lower_bound",
                                                   optional_hex(s[i].has_lower_bound,
                                                                &s[i].lower_bound),
                                                   "upper_bound",
                                                   optional_hex(s[i].has_upper_bound,
                                                                &s[i].upper_bound)));
        return a;
}

static json_t *manifest_file_json(const ManifestFile *m) {
        json_t *counts = json_null();

        if (m->has_counts)
                counts = json_pack("{s:i, s:i, s:i, s:I, s:I, s:I}", "added_files_count",
                                   m->added_files_count, "existing_files_count",
                                   m->existing_files_count, "deleted_files_count",
                                   m->deleted_files_count, "added_rows_count",
                                   (json_int_t)m->added_rows_count, "existing_rows_count",
                                   (json_int_t)m->existing_rows_count, "deleted_rows_count",
                                   (json_int_t)m->deleted_rows_count);
        return json_pack("{s:s, s:I, s:i, s:i, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "manifest_path",
                         m->path, "manifest_length", (json_int_t)m->length, "partition_spec_id",
                         m->partition_spec_id, "content", m->content, "sequence_number",
                         (json_int_t)m->sequence_number, "min_sequence_number",
                         (json_int_t)m->min_sequence_number, "added_snapshot_id",
                         optional_int(m->has_added_snapshot_id, m->added_snapshot_id), "counts",
                         counts, "partitions",
                         summaries_json(m->has_partitions, m->partitions, m->n_partitions),
                         "key_metadata", optional_hex(m->has_key_metadata, &m->key_metadata),
                         "first_row_id", optional_int(m->has_first_row_id, m->first_row_id));
}

/* Metadata values as text when they are UTF-8, else as "hex:...". */
static json_t *meta_json(const OcfReader *r) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < ocf_reader_n_meta(r); i++) {
                const char *key;
                Slice value;
                json_t *v;

                ocf_reader_meta_at(r, i, &key, &value);
                v = json_stringn((const char *)value.ptr, value.len);
                if (!v) {
                        json_t *h = hex_of(value.ptr, value.len);

                        v = json_sprintf("hex:%s", json_string_value(h));
                        json_decref(h);
                }
                json_object_set_new(o, key, v);
        }
        return o;
}

static int print_json(json_t *j) {
        char *text;

        if (!j)
                return -ENOMEM;
        text = json_dumps(j, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(j);
        if (!text)
                return -ENOMEM;
        puts(text);
        free(text);
        return 0;
}

static int fail_json(const char *what, int r, const Error *e) {
        (void)print_json(
                json_pack("{s:s, s:s, s:i}", "error", e->message, "stage", what, "code", r));
        return 1;
}

static int cmd_read_list(const char *path) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        ManifestListHeader h;
        ManifestFile *files = NULL;
        json_t *out, *list;
        size_t n = 0;
        Error e = { 0 };
        int r;

        r = tool_read_file(path, &file);
        if (r < 0)
                return io_failed(path, r);
        r = ocf_reader_open(buf_slice(&file), &reader, &e);
        if (r < 0)
                return fail_json("ocf", r, &e);
        r = manifest_list_read(buf_slice(&file), &files, &n, &e);
        if (r < 0)
                return fail_json("manifest_list_read", r, &e);

        out = json_pack("{s:s, s:o}", "codec",
                        ocf_reader_codec(reader) == OCF_CODEC_DEFLATE ? "deflate" : "null", "meta",
                        meta_json(reader));
        r = manifest_list_read_header(buf_slice(&file), &h, &e);
        if (r < 0)
                json_object_set_new(out, "header_error", json_string(e.message));
        else
                json_object_set_new(out, "header",
                                    json_pack("{s:i, s:I, s:o, s:I, s:o}", "format_version",
                                              h.format_version, "snapshot_id",
                                              (json_int_t)h.snapshot_id, "parent_snapshot_id",
                                              optional_int(h.has_parent_snapshot_id,
                                                           h.parent_snapshot_id),
                                              "sequence_number", (json_int_t)h.sequence_number,
                                              "first_row_id",
                                              optional_int(h.has_first_row_id, h.first_row_id)));
        list = json_array();
        for (size_t i = 0; i < n; i++)
                json_array_append_new(list, manifest_file_json(&files[i]));
        json_object_set_new(out, "files", list);
        manifest_list_files_free(files, n);
        return print_json(out) < 0 ? 2 : 0;
}

static int cmd_read_manifest(const char *path, const char *location) {
        _cleanup_(buf_deinitp) Buf file;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        json_t *out, *files;
        Error e = { 0 };
        int r;

        r = tool_read_file(path, &file);
        if (r < 0)
                return io_failed(path, r);
        r = manifest_staged_parse(buf_slice(&file), location, /* limits= */ NULL, &m, &e);
        if (r < 0)
                return fail_json("manifest_staged_parse", r, &e);

        files = json_array();
        for (size_t i = 0; i < m->n_files; i++)
                json_array_append_new(files, json_pack("{s:s, s:s, s:I, s:I}", "file_path",
                                                       m->files[i].path, "file_format",
                                                       m->files[i].format, "record_count",
                                                       (json_int_t)m->files[i].record_count,
                                                       "file_size_in_bytes",
                                                       (json_int_t)m->files[i].file_size_in_bytes));
        out = json_pack("{s:i, s:i, s:i, s:s?, s:s?, s:i, s:I, s:I, s:o, s:o}", "format_version",
                        m->format_version, "content", m->content, "partition_spec_id",
                        m->partition_spec_id, "schema", m->schema_json, "partition_spec",
                        m->partition_spec_json, "added_files_count", m->added_files_count,
                        "added_rows_count", (json_int_t)m->added_rows_count, "added_files_size",
                        (json_int_t)m->added_files_size, "partitions",
                        summaries_json(m->has_partitions, m->partitions, m->n_partitions), "files",
                        files);
        return print_json(out) < 0 ? 2 : 0;
}

/* The fixed list test_avro_interop.py checks field by field: snapshot 987134631982734 with
 * first-row-id 1000; a staged data manifest whose null first_row_id became 1000, a delete
 * manifest (null first_row_id), a parent data manifest keeping first_row_id 925. */
static const IcebergFixtureSummary list_v3_summaries[] = {
        { .contains_nan = 0,
          .lower = ICEBERG_FIXTURE_BYTES("\x0a\x00\x00\x00"),
          .upper = ICEBERG_FIXTURE_BYTES("\x64\x00\x00\x00") },
        { .contains_null = true, .contains_nan = -1, .lower = ICEBERG_FIXTURE_BYTES("alpha") },
};

static const IcebergFixtureManifest list_v3[] = {
        { .path = "s3://bucket/wh/ns/t/metadata/staged-a-m0.avro",
          .length = 7012,
          .partition_spec_id = 1,
          .sequence_number = 35,
          .min_sequence_number = 35,
          .added_snapshot_id = 987134631982734,
          .file_counts = { 3, 0, 0 },
          .row_counts = { 375, 0, 0 },
          .has_partitions = true,
          .partitions = list_v3_summaries,
          .n_partitions = ELEMENTSOF(list_v3_summaries),
          .has_first_row_id = true,
          .first_row_id = 1000 },
        { .path = "s3://bucket/wh/ns/t/metadata/deletes-m1.avro",
          .length = 5000,
          .content = 1,
          .sequence_number = 34,
          .min_sequence_number = 10,
          .added_snapshot_id = 42,
          .file_counts = { 1, 2, 3 },
          .row_counts = { 4, 5, 6 },
          .has_partitions = true,
          .key_metadata = ICEBERG_FIXTURE_BYTES("\x00\x01\xfe\xff") },
        { .path = "s3://bucket/wh/ns/t/metadata/parent-m2.avro",
          .length = 9000,
          .sequence_number = 1,
          .min_sequence_number = 1,
          .added_snapshot_id = 7,
          .file_counts = { 0, 7, 0 },
          .row_counts = { 0, 75, 0 },
          .has_first_row_id = true,
          .first_row_id = 925 },
};

static int cmd_write_list_v3(const char *path) {
        _cleanup_(buf_deinitp) Buf out;
        ManifestListHeader h = {
                .format_version = 3,
                .snapshot_id = 987134631982734,
                .has_parent_snapshot_id = true,
                .parent_snapshot_id = 987134631982733,
                .sequence_number = 35,
                .has_first_row_id = true,
                .first_row_id = 1000,
        };
        ManifestFile *files = iceberg_fixture_manifest_files_new(list_v3, ELEMENTSOF(list_v3));
        Error e = { 0 };
        int r;

        buf_init(&out, TOOL_MAX_FILE_BYTES);
        r = manifest_list_write(&h, files, ELEMENTSOF(list_v3), &out, &e);
        manifest_list_files_free(files, ELEMENTSOF(list_v3));
        if (r < 0) {
                fprintf(stderr, "write-list-v3: %s\n", e.message);
                return 1;
        }
        r = tool_write_file(path, &out);
        if (r < 0)
                return io_failed(path, r);
        return 0;
}

/* The fixed list again, written by appends: its last entry first, then each entry before it
 * appended alone, `rounds` times over, so that the file has the blocks of many commits. */
static int cmd_write_list_appended(const char *path, const char *rounds_text) {
        _cleanup_(buf_deinitp) Buf list;
        ManifestFile *files = iceberg_fixture_manifest_files_new(list_v3, ELEMENTSOF(list_v3));
        ManifestListHeader h = { .format_version = 3, .has_first_row_id = true };
        size_t last = ELEMENTSOF(list_v3) - 1;
        uint64_t rounds = 0;
        Error e = { 0 };
        int r;

        buf_init(&list, TOOL_MAX_FILE_BYTES);
        r = parse_u64(rounds_text, &rounds) < 0 || rounds < 1 || rounds > 100000
                    ? error_set(&e, -EINVAL, "ROUNDS must be 1..100000")
                    : manifest_list_write(&h, &files[last], 1, &list, &e);
        for (size_t i = 0; r >= 0 && i < rounds * last; i++) {
                Buf next;

                h.snapshot_id++;
                h.has_parent_snapshot_id = true;
                h.parent_snapshot_id = h.snapshot_id - 1;
                buf_init(&next, TOOL_MAX_FILE_BYTES);
                r = manifest_list_append(&h, &files[last - 1 - i % last], 1, buf_slice(&list),
                                         &next, &e);
                buf_deinit(&list);
                list = next;
        }
        manifest_list_files_free(files, ELEMENTSOF(list_v3));
        if (r != 0) {
                fprintf(stderr, "write-list-appended: %d: %s\n", r, e.message);
                return 1;
        }
        r = tool_write_file(path, &list);
        return r < 0 ? io_failed(path, r) : 0;
}

/* Reads a list and writes its header and entries again with manifest_list_write(): the list
 * written whole that an incremental one must equal. */
static int cmd_rewrite_list(const char *in, const char *out_path) {
        _cleanup_(buf_deinitp) Buf file, out;
        ManifestListHeader h;
        ManifestFile *files = NULL;
        size_t n = 0;
        Error e = { 0 };
        int r;

        r = tool_read_file(in, &file);
        if (r < 0)
                return io_failed(in, r);
        r = manifest_list_read_header(buf_slice(&file), &h, &e);
        if (r < 0)
                return fail_json("manifest_list_read_header", r, &e);
        r = manifest_list_read(buf_slice(&file), &files, &n, &e);
        if (r < 0)
                return fail_json("manifest_list_read", r, &e);
        buf_init(&out, TOOL_MAX_FILE_BYTES);
        r = manifest_list_write(&h, files, n, &out, &e);
        manifest_list_files_free(files, n);
        if (r < 0)
                return fail_json("manifest_list_write", r, &e);
        r = tool_write_file(out_path, &out);
        return r < 0 ? io_failed(out_path, r) : 0;
}

/* A location as a local path: "file:" dropped. */
static const char *local_path(const char *location) {
        return strncmp(location, "file:", 5) == 0 ? location + 5 : location;
}

static json_t *filter_result_json(const ManifestFilterResult *res, const bool *found, size_t n) {
        json_t *removed = json_array(), *found_json = json_array();

        for (size_t i = 0; removed && i < res->n_removed; i++)
                json_array_append_new(removed, json_pack("{s:s, s:i, s:I, s:I}", "path",
                                                         res->removed[i].path, "content",
                                                         res->removed[i].content, "record_count",
                                                         (json_int_t)res->removed[i].record_count,
                                                         "file_size",
                                                         (json_int_t)res->removed[i].file_size));
        for (size_t i = 0; found_json && i < n; i++)
                json_array_append_new(found_json, json_boolean(found[i]));
        return json_pack("{s:b, s:o, s:o, s:o, s:I, s:I}", "untouched", false, "file",
                         manifest_file_json(&res->file), "removed", removed, "found", found_json,
                         "n_duplicates", (json_int_t)res->n_duplicates, "n_entries_read",
                         (json_int_t)res->n_entries_read);
}

/* Filters the files `paths` out of manifest number INDEX of the list LIST (read where its
 * manifest_path says), as snapshot SNAPSHOT_ID at SEQUENCE of a FORMAT_VERSION table; writes
 * the new manifest to OUT (also its location in the new list entry) and prints the result. */
static int cmd_filter_manifest(char **argv, int argc) {
        _cleanup_(buf_deinitp) Buf list, manifest, out;
        _cleanup_(freep) bool *found = NULL;
        ManifestFile *files = NULL;
        ManifestFilterResult res = { 0 };
        uint64_t index, snapshot_id, sequence, format_version;
        size_t n = 0, n_paths = (size_t)argc - 6;
        Error e = { 0 };
        int r;

        if (parse_u64(argv[1], &index) < 0 || parse_u64(argv[3], &snapshot_id) < 0 ||
            parse_u64(argv[4], &sequence) < 0 || parse_u64(argv[5], &format_version) < 0 ||
            snapshot_id > INT64_MAX || sequence > INT64_MAX || format_version > 3) {
                fprintf(stderr, "filter-manifest: INDEX, SNAPSHOT_ID, SEQUENCE, FORMAT_VERSION\n");
                return 2;
        }
        r = tool_read_file(argv[0], &list);
        if (r < 0)
                return io_failed(argv[0], r);
        r = manifest_list_read(buf_slice(&list), &files, &n, &e);
        if (r < 0)
                return fail_json("manifest_list_read", r, &e);
        if (index >= n) {
                manifest_list_files_free(files, n);
                fprintf(stderr, "filter-manifest: the list has %zu manifests\n", n);
                return 2;
        }
        r = tool_read_file(local_path(files[index].path), &manifest);
        if (r < 0) {
                r = io_failed(files[index].path, r);
                manifest_list_files_free(files, n);
                return r;
        }
        found = calloc(n_paths + 1, sizeof(*found));
        buf_init(&out, TOOL_MAX_FILE_BYTES);
        r = !found ? -ENOMEM
                   : manifest_filter_write(buf_slice(&manifest), &files[index],
                                           &(ManifestFilterPaths){ (const char *const *)&argv[6],
                                                                   n_paths, found },
                                           &(ManifestFilterTarget){
                                                   .format_version = (int)format_version,
                                                   .snapshot_id = (int64_t)snapshot_id,
                                                   .sequence_number = (int64_t)sequence,
                                                   .location = argv[2],
                                                   .max_entries = 1000000 },
                                           &out, &res, &e);
        manifest_list_files_free(files, n);
        if (r == MANIFEST_FILTER_E_UNTOUCHED)
                return print_json(json_pack("{s:b}", "untouched", true)) < 0 ? 2 : 0;
        if (r != 0)
                return fail_json("manifest_filter_write", r, &e);
        r = tool_write_file(argv[2], &out);
        if (r >= 0)
                r = print_json(filter_result_json(&res, found, n_paths)) < 0 ? 2 : 0;
        else
                r = io_failed(argv[2], r);
        manifest_filter_result_deinit(&res);
        return r;
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "write-list-v3") == 0)
                return cmd_write_list_v3(argv[2]);
        if (argc == 4 && strcmp(argv[1], "write-list-appended") == 0)
                return cmd_write_list_appended(argv[2], argv[3]);
        if (argc == 3 && strcmp(argv[1], "read-list") == 0)
                return cmd_read_list(argv[2]);
        if (argc == 4 && strcmp(argv[1], "rewrite-list") == 0)
                return cmd_rewrite_list(argv[2], argv[3]);
        if ((argc == 3 || argc == 4) && strcmp(argv[1], "read-manifest") == 0)
                return cmd_read_manifest(argv[2], argc == 4 ? argv[3] : NULL);
        if (argc >= 9 && strcmp(argv[1], "filter-manifest") == 0)
                return cmd_filter_manifest(argv + 2, argc - 2);
        fprintf(stderr,
                "usage: icecommit-avro-tool write-list-v3 OUT | write-list-appended OUT ROUNDS |\n"
                "                           read-list IN | rewrite-list IN OUT |\n"
                "                           read-manifest IN [LOCATION] |\n"
                "                           filter-manifest LIST INDEX OUT SNAPSHOT_ID SEQUENCE\n"
                "                                           FORMAT_VERSION PATH...\n"
                "exit: 0 ok, 1 the file was rejected (JSON with \"error\" on stdout),\n"
                "      2 usage or I/O\n");
        return 2;
}
