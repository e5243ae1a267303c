/* SPDX-License-Identifier: Apache-2.0 */
/* iceberg/manifest_list_append.c over the block scanner of avro/ocf_reader.c: appends read back
 * as the new entries then the parent's, with the metadata manifest_list_write() writes; blocks
 * stay few over many appends; parents that cannot be copied fall back; damaged parents and
 * limits are refused with a reason. */
#include <errno.h>
#include <jansson.h>
#include <zlib.h>

#include "avro/ocf.h"
#include "iceberg/manifest_list.h"
#include "iceberg/manifest_list_append.h"
#include "iceberg-fixture.h"
#include "test.h"

#define MAX_FILE_BYTES (64u << 20)

/* ---- entries ------------------------------------------------------------------------------ */

static const IcebergFixtureSummary test_summaries[] = {
        { .contains_nan = -1,
          .lower = ICEBERG_FIXTURE_BYTES("\x0a\x00\x00\x00"),
          .upper = ICEBERG_FIXTURE_BYTES("\x64\x00\x00\x00") },
        { .contains_null = true, .contains_nan = 0, .lower = ICEBERG_FIXTURE_BYTES("alpha") },
};

/* Entry `index` of a synthetic table: a partitioned data manifest with its row-id range, every
 * fifth (v2 and later) a delete manifest with key metadata; paths padded to `path_len`. */
static ManifestFile *make_files(int version, size_t first, size_t n, size_t path_len) {
        IcebergFixtureManifest *specs = calloc(n > 0 ? n : 1, sizeof(*specs));
        char **paths = calloc(n > 0 ? n : 1, sizeof(*paths));
        ManifestFile *files;

        ASSERT_TRUE(specs && paths);
        for (size_t i = 0; i < n; i++) {
                size_t index = first + i, len;
                bool is_delete = version >= 2 && index % 5 == 4;

                paths[i] = malloc(path_len + 64);
                ASSERT_TRUE(paths[i]);
                len = (size_t)snprintf(paths[i], path_len + 64, "s3://b/t/metadata/m-%zu-", index);
                while (len < path_len)
                        paths[i][len++] = 'x';
                memcpy(paths[i] + len, ".avro", 6);
                specs[i] = (IcebergFixtureManifest){
                        .path = paths[i],
                        .length = 5000 + (int64_t)index,
                        .partition_spec_id = (int32_t)(index % 3),
                        .content = is_delete ? 1 : 0,
                        .sequence_number = (int64_t)index + 1,
                        .min_sequence_number = (int64_t)index / 2 + 1,
                        .added_snapshot_id = 1000000 + (int64_t)index,
                        .file_counts = { (int32_t)index % 7 + 1, 2, 0 },
                        .row_counts = { 100 + (int64_t)index, 3, 0 },
                        .has_partitions = index % 4 != 3,
                        .partitions = index % 4 < 2 ? test_summaries : NULL,
                        .n_partitions = index % 4 < 2 ? ELEMENTSOF(test_summaries) : 0,
                        .key_metadata =
                                is_delete ? (Slice)ICEBERG_FIXTURE_BYTES("\x00\xff") : SLICE_NULL,
                        .has_first_row_id = version >= 3 && !is_delete,
                        .first_row_id = 1000 * (int64_t)index,
                };
        }
        files = iceberg_fixture_manifest_files_new(specs, n);
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
        free(specs);
        return files;
}

static void assert_bufs_equal(bool has_a, const Buf *a, bool has_b, const Buf *b) {
        ASSERT_EQ(has_a, has_b);
        if (!has_a)
                return;
        ASSERT_EQ(a->len, b->len);
        ASSERT_TRUE(a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* Every field a list of `version` holds. */
static void assert_files_equal(const ManifestFile *a, const ManifestFile *b, int version) {
        ASSERT_STREQ(a->path, b->path);
        ASSERT_EQ(a->length, b->length);
        ASSERT_EQ(a->partition_spec_id, b->partition_spec_id);
        ASSERT_EQ(a->content, b->content);
        if (version >= 2) {
                ASSERT_EQ(a->sequence_number, b->sequence_number);
                ASSERT_EQ(a->min_sequence_number, b->min_sequence_number);
        }
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
        ASSERT_EQ(a->has_first_row_id, b->has_first_row_id);
        if (a->has_first_row_id)
                ASSERT_EQ(a->first_row_id, b->first_row_id);
}

static ManifestListHeader header_for(int version, int64_t snapshot_id) {
        return (ManifestListHeader){
                .format_version = version,
                .snapshot_id = snapshot_id,
                .has_parent_snapshot_id = snapshot_id > 1,
                .parent_snapshot_id = snapshot_id - 1,
                .sequence_number = version >= 2 ? snapshot_id : 0,
                .has_first_row_id = version >= 3,
                .first_row_id = 1000 * snapshot_id,
        };
}

/* ---- files -------------------------------------------------------------------------------- */

/* Datum counts and decompressed sizes of a file's blocks, found by the scanner. */
typedef struct Blocks {
        size_t n;
        int64_t counts[4096];
        size_t raw_bytes[4096];
} Blocks;

static void scan_blocks(const Buf *file, Blocks *ret) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        _cleanup_(buf_deinitp) Buf raw;
        size_t expect_offset;
        OcfBlock block;
        Error e = { 0 };
        int rr;

        buf_init(&raw, OCF_MAX_BLOCK_BYTES);
        ret->n = 0;
        if (ocf_reader_open(buf_slice(file), &r, &e) < 0)
                TEST_FAIL("open: %s", e.message);
        expect_offset = ocf_reader_data_offset(r);
        while ((rr = ocf_reader_scan_block(r, &block, &e)) > 0) {
                /* Blocks follow each other, from the header to the end of the file. */
                ASSERT_EQ(block.index, ret->n);
                ASSERT_EQ(block.offset, expect_offset);
                ASSERT_TRUE(block.data.ptr > file->data + block.offset);
                ASSERT_EQ(block.end, (size_t)(block.data.ptr - file->data) + block.data.len + 16);
                expect_offset = block.end;
                ASSERT_OK(ocf_reader_inflate_block(r, &block, &raw, &e));
                ASSERT_TRUE(ret->n < ELEMENTSOF(ret->counts));
                ret->counts[ret->n] = block.count;
                ret->raw_bytes[ret->n++] = raw.len;
        }
        if (rr < 0)
                TEST_FAIL("scan: %s", e.message);
        ASSERT_EQ(expect_offset, file->len);
}

/* The list's metadata equals what manifest_list_write(h) writes, key for key, value for value;
 * its codec is `codec`; its sync marker is not `parent`'s. */
static void assert_meta_as_written(const Buf *list, const ManifestListHeader *h, OcfCodec codec,
                                   const Buf *parent) {
        _cleanup_(ocf_reader_freep) OcfReader *got = NULL, *want = NULL, *p = NULL;
        _cleanup_(buf_deinitp) Buf whole;
        Error e = { 0 };

        buf_init(&whole, MAX_FILE_BYTES);
        ASSERT_OK(manifest_list_write(h, NULL, 0, &whole, &e));
        ASSERT_OK(ocf_reader_open(buf_slice(list), &got, &e));
        ASSERT_OK(ocf_reader_open(buf_slice(&whole), &want, &e));
        ASSERT_EQ(ocf_reader_n_meta(got), ocf_reader_n_meta(want));
        for (size_t i = 0; i < ocf_reader_n_meta(want); i++) {
                const char *key;
                Slice value, have;

                ocf_reader_meta_at(want, i, &key, &value);
                have = ocf_reader_meta(got, key);
                if (strcmp(key, "avro.codec") == 0) {
                        ASSERT_TRUE(slice_eq_str(have,
                                                 codec == OCF_CODEC_DEFLATE ? "deflate" : "null"));
                        continue;
                }
                if (!have.ptr || have.len != value.len || memcmp(have.ptr, value.ptr, value.len))
                        TEST_FAIL("metadata key '%s' differs", key);
        }
        ASSERT_EQ(ocf_reader_codec(got), codec);

        ASSERT_OK(ocf_reader_open(buf_slice(parent), &p, &e));
        ASSERT_TRUE(memcmp(list->data + ocf_reader_data_offset(got) - 16,
                           parent->data + ocf_reader_data_offset(p) - 16, 16) != 0);
}

/* Appends `n_new` entries starting at `first` to `parent`; the new list replaces *parent. */
static void append_ok(int version, int64_t snapshot_id, size_t first, size_t n_new, size_t path_len,
                      Buf *parent) {
        ManifestListHeader h = header_for(version, snapshot_id);
        ManifestFile *files = make_files(version, first, n_new, path_len);
        Buf out;
        Error e = { 0 };

        buf_init(&out, MAX_FILE_BYTES);
        if (manifest_list_append(&h, files, n_new, buf_slice(parent), &out, &e) != 0)
                TEST_FAIL("append: %s", e.message);
        manifest_list_files_free(files, n_new);
        buf_deinit(parent);
        *parent = out;
}

static void write_ok(int version, int64_t snapshot_id, size_t first, size_t n, size_t path_len,
                     Buf *out) {
        ManifestListHeader h = header_for(version, snapshot_id);
        ManifestFile *files = make_files(version, first, n, path_len);
        Error e = { 0 };

        buf_init(out, MAX_FILE_BYTES);
        if (manifest_list_write(&h, files, n, out, &e) < 0)
                TEST_FAIL("write: %s", e.message);
        manifest_list_files_free(files, n);
}

/* The list holds the entries with these indices, in this order. */
static void assert_entries(const Buf *list, int version, const size_t *indices, size_t n,
                           size_t path_len) {
        ManifestFile *read = NULL;
        size_t n_read = 0;
        Error e = { 0 };

        if (manifest_list_read(buf_slice(list), &read, &n_read, &e) < 0)
                TEST_FAIL("read: %s", e.message);
        ASSERT_EQ(n_read, n);
        for (size_t i = 0; i < n; i++) {
                ManifestFile *want = make_files(version, indices[i], 1, path_len);

                assert_files_equal(want, &read[i], version);
                manifest_list_files_free(want, 1);
        }
        manifest_list_files_free(read, n_read);
}

/* ---- appends ------------------------------------------------------------------------------ */

/* The parent rewritten with the null codec, block for block, as fastavro or another writer may
 * leave it. */
static void to_null_codec(Buf *list) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        _cleanup_(buf_deinitp) Buf raw;
        _cleanup_(freep) char *schema = NULL;
        OcfBlock block;
        Buf copy;
        Error e = { 0 };

        buf_init(&raw, OCF_MAX_BLOCK_BYTES);
        buf_init(&copy, MAX_FILE_BYTES);
        ASSERT_OK(ocf_reader_open(buf_slice(list), &r, &e));
        schema = json_dumps(ocf_reader_schema_json(r), JSON_COMPACT | JSON_PRESERVE_ORDER);
        ASSERT_TRUE(schema);
        ASSERT_OK(ocf_writer_new(schema, OCF_CODEC_NULL, &w));
        for (size_t i = 0; i < ocf_reader_n_meta(r); i++) {
                const char *key;
                Slice value;

                ocf_reader_meta_at(r, i, &key, &value);
                if (strncmp(key, "avro.", 5) != 0)
                        ASSERT_OK(ocf_writer_set_meta(w, key, value));
        }
        while (ocf_reader_scan_block(r, &block, &e) > 0) {
                ASSERT_OK(ocf_reader_inflate_block(r, &block, &raw, &e));
                ASSERT_OK(ocf_writer_append_encoded(w, buf_slice(&raw), block.count));
                ASSERT_OK(ocf_writer_end_block(w));
        }
        ASSERT_OK(ocf_writer_finish(w, &copy));
        buf_deinit(list);
        *list = copy;
}

static void append_reads_back(int version, OcfCodec codec) {
        _cleanup_(buf_deinitp) Buf parent, list;
        ManifestListHeader h = header_for(version, 7);
        const size_t want[] = { 10, 11, 0, 1, 2, 3, 4, 5 };
        Blocks blocks;

        write_ok(version, 6, 0, 6, 20, &parent);
        if (codec == OCF_CODEC_NULL)
                to_null_codec(&parent);
        buf_init(&list, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&list, parent.data, parent.len));
        append_ok(version, 7, 10, 2, 20, &list);
        assert_meta_as_written(&list, &h, codec, &parent);
        assert_entries(&list, version, want, ELEMENTSOF(want), 20);

        /* 2 new entries are fewer than half the parent's block of 6: two blocks. 6 more absorb
         * both: one block. */
        scan_blocks(&list, &blocks);
        ASSERT_EQ(blocks.n, 2);
        ASSERT_EQ(blocks.counts[0], 2);
        ASSERT_EQ(blocks.counts[1], 6);
        append_ok(version, 8, 20, 6, 20, &list);
        scan_blocks(&list, &blocks);
        ASSERT_EQ(blocks.n, 1);
        ASSERT_EQ(blocks.counts[0], 14);
}

TEST(append_v3_reads_back_new_then_parent) {
        append_reads_back(3, OCF_CODEC_DEFLATE);
}

TEST(append_v2_reads_back_new_then_parent) {
        append_reads_back(2, OCF_CODEC_DEFLATE);
}

TEST(append_v1_reads_back_new_then_parent) {
        append_reads_back(1, OCF_CODEC_DEFLATE);
}

TEST(append_to_null_codec_parent_stays_null) {
        append_reads_back(3, OCF_CODEC_NULL);
}

TEST(append_nothing_copies_the_parent) {
        _cleanup_(buf_deinitp) Buf list;
        const size_t want[] = { 0, 1, 2 };
        Blocks blocks;

        write_ok(3, 1, 0, 3, 20, &list);
        append_ok(3, 2, 0, 0, 20, &list);
        assert_entries(&list, 3, want, ELEMENTSOF(want), 20);
        scan_blocks(&list, &blocks);
        ASSERT_EQ(blocks.n, 1);
}

TEST(append_to_empty_parent) {
        _cleanup_(buf_deinitp) Buf list;
        const size_t want[] = { 5, 6 };

        write_ok(3, 1, 0, 0, 20, &list);
        append_ok(3, 2, 5, 2, 20, &list);
        assert_entries(&list, 3, want, ELEMENTSOF(want), 20);
}

/* Successive appends of `per_commit(i)` entries: after each, at most `max_blocks(entries)`
 * blocks, none of them (but a single entry's) past MANIFEST_LIST_APPEND_BLOCK_BYTES; at the end
 * every entry, newest commit first. */
static void many_appends(size_t n_commits, size_t path_len, size_t (*per_commit)(size_t),
                         double (*max_blocks)(size_t n_entries, size_t raw_bytes)) {
        _cleanup_(buf_deinitp) Buf list;
        size_t *order = NULL, n_entries = 1, max_seen = 0;
        Blocks *blocks = malloc(sizeof(*blocks));

        ASSERT_TRUE(blocks);
        write_ok(3, 1, 0, 1, path_len, &list);
        for (size_t c = 1; c <= n_commits; c++) {
                size_t k = per_commit(c), raw = 0;

                append_ok(3, (int64_t)c + 1, n_entries, k, path_len, &list);
                n_entries += k;
                scan_blocks(&list, blocks);
                for (size_t i = 0; i < blocks->n; i++) {
                        raw += blocks->raw_bytes[i];
                        if (blocks->counts[i] > 1)
                                ASSERT_TRUE(blocks->raw_bytes[i] <=
                                            MANIFEST_LIST_APPEND_BLOCK_BYTES);
                }
                if ((double)blocks->n > max_blocks(n_entries, raw))
                        TEST_FAIL("commit %zu: %zu blocks for %zu entries (%zu bytes)", c,
                                  blocks->n, n_entries, raw);
                if (blocks->n > max_seen)
                        max_seen = blocks->n;
        }
        printf("%zu commits, %zu entries of ~%zu bytes: at most %zu blocks, %zu at the end\n",
               n_commits, n_entries, path_len, max_seen, blocks->n);

        /* Newest first: commit c's entries, then commit c-1's... then entry 0. */
        order = calloc(n_entries, sizeof(*order));
        ASSERT_TRUE(order);
        {
                size_t pos = 0, start = n_entries;

                for (size_t c = n_commits; c >= 1; c--) {
                        size_t k = per_commit(c);

                        start -= k;
                        for (size_t i = 0; i < k; i++)
                                order[pos++] = start + i;
                }
                order[pos++] = 0;
                ASSERT_EQ(pos, n_entries);
        }
        assert_entries(&list, 3, order, n_entries, path_len);
        free(order);
        free(blocks);
}

static size_t one(size_t c) {
        (void)c;
        return 1;
}

static size_t varied(size_t c) {
        return c % 7 == 0 ? 9 : c % 3 + 1;
}

/* Commits of 20, 19, ... 1 entries, again and again: each smaller than the block before. */
static size_t shrinking(size_t c) {
        return 20 - (c - 1) % 20;
}

static size_t floor_log2(size_t n) {
        size_t k = 0;

        while (n >>= 1)
                k++;
        return k;
}

/* Below the cap each block holds more than twice the entries of the one before it. */
static double log_bound(size_t n_entries, size_t raw_bytes) {
        (void)raw_bytes;
        return (double)floor_log2(n_entries) + 1;
}

/* At the cap: each pair of blocks it stopped holds more than the cap, and the counter in front
 * adds ~log2(entries per block) (~40 here: under 2^6). */
static double capped_bound(size_t n_entries, size_t raw_bytes) {
        (void)n_entries;
        return 2.0 * (double)raw_bytes / MANIFEST_LIST_APPEND_BLOCK_BYTES + 2 * 6 + 2;
}

TEST(append_many_keeps_blocks_logarithmic) {
        many_appends(300, 20, one, log_bound);
}

TEST(append_many_varied_keeps_blocks_logarithmic) {
        many_appends(150, 20, varied, log_bound);
}

TEST(append_many_shrinking_keeps_blocks_logarithmic) {
        many_appends(100, 20, shrinking, log_bound);
}

TEST(append_many_large_entries_stay_under_the_block_cap) {
        /* ~1.6 KB entries: ~40 to a block of the cap. */
        many_appends(250, 1500, one, capped_bound);
}

/* ---- fallbacks ---------------------------------------------------------------------------- */

static void expect_whole(const Buf *parent, int version, const char *contains) {
        ManifestListHeader h = header_for(version, 9);
        ManifestFile *files = make_files(version, 50, 1, 20);
        _cleanup_(buf_deinitp) Buf out;
        Error e = { 0 };

        buf_init(&out, MAX_FILE_BYTES);
        ASSERT_EQ(manifest_list_append(&h, files, 1, buf_slice(parent), &out, &e),
                  MANIFEST_LIST_APPEND_E_WHOLE);
        ASSERT_CONTAINS(e.message, contains);
        ASSERT_EQ(out.len, 0);
        manifest_list_files_free(files, 1);
}

TEST(append_falls_back_on_another_format_version) {
        _cleanup_(buf_deinitp) Buf v2, v1;

        /* An upgrade's first commit: the v2 parent's entries get first_row_ids. */
        write_ok(2, 1, 0, 3, 20, &v2);
        expect_whole(&v2, 3, "format-version 2, not 3");
        write_ok(1, 1, 0, 3, 20, &v1);
        expect_whole(&v1, 2, "format-version 1, not 2");
}

/* A hand-built container: any schema, codec and metadata. */
static void put_long(Buf *b, int64_t v) {
        uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);

        while (n & ~(uint64_t)0x7f) {
                ASSERT_OK(buf_append_byte(b, (uint8_t)((n & 0x7f) | 0x80)));
                n >>= 7;
        }
        ASSERT_OK(buf_append_byte(b, (uint8_t)n));
}

static void put_bytes(Buf *b, Slice s) {
        put_long(b, (int64_t)s.len);
        ASSERT_OK(buf_append(b, s.ptr, s.len));
}

static const uint8_t test_sync[16] = "0123456789abcdef";

/* The header of `model` (a list we wrote) with avro.schema and avro.codec replaced when given. */
static void build_header(Buf *b, const Buf *model, const char *schema, const char *codec) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        Error e = { 0 };

        ASSERT_OK(ocf_reader_open(buf_slice(model), &r, &e));
        buf_init(b, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(b, "Obj\x01", 4));
        put_long(b, (int64_t)ocf_reader_n_meta(r));
        for (size_t i = 0; i < ocf_reader_n_meta(r); i++) {
                const char *key;
                Slice value;

                ocf_reader_meta_at(r, i, &key, &value);
                if (schema && strcmp(key, "avro.schema") == 0)
                        value = slice_from_str(schema);
                if (codec && strcmp(key, "avro.codec") == 0)
                        value = slice_from_str(codec);
                put_bytes(b, slice_from_str(key));
                put_bytes(b, value);
        }
        put_long(b, 0);
        ASSERT_OK(buf_append(b, test_sync, 16));
}

/* The schema of a v3 list we write, with `edit` applied to its JSON. */
static char *edited_schema(const Buf *model, void (*edit)(json_t *schema)) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        json_t *copy;
        char *text;
        Error e = { 0 };

        ASSERT_OK(ocf_reader_open(buf_slice(model), &r, &e));
        copy = json_deep_copy(ocf_reader_schema_json(r));
        ASSERT_TRUE(copy);
        edit(copy);
        text = json_dumps(copy, JSON_COMPACT | JSON_PRESERVE_ORDER);
        ASSERT_TRUE(text);
        json_decref(copy);
        return text;
}

static void change_a_field_id(json_t *schema) {
        json_t *f = json_array_get(json_object_get(schema, "fields"), 1);

        ASSERT_OK(json_object_set_new(f, "field-id", json_integer(599)));
}

static void add_a_doc(json_t *schema) {
        json_t *f = json_array_get(json_object_get(schema, "fields"), 1);

        ASSERT_OK(json_object_set_new(f, "doc", json_string("written elsewhere")));
}

static void reorder_keys(json_t *schema) {
        /* The same schema, its first field's keys in another order. */
        json_t *f = json_array_get(json_object_get(schema, "fields"), 0);
        json_t *name = json_incref(json_object_get(f, "name"));

        ASSERT_OK(json_object_del(f, "name"));
        ASSERT_OK(json_object_set_new(f, "name", name));
}

TEST(append_falls_back_on_another_schema) {
        _cleanup_(buf_deinitp) Buf model, other, doc, same;
        _cleanup_(freep) char *ids = NULL, *with_doc = NULL, *reordered = NULL;
        ManifestListHeader h = header_for(3, 9);
        _cleanup_(buf_deinitp) Buf out;
        Error e = { 0 };

        write_ok(3, 1, 0, 0, 20, &model);
        ids = edited_schema(&model, change_a_field_id);
        build_header(&other, &model, ids, NULL);
        expect_whole(&other, 3, "another writer schema");
        with_doc = edited_schema(&model, add_a_doc);
        build_header(&doc, &model, with_doc, NULL);
        expect_whole(&doc, 3, "another writer schema");

        /* Key order and spacing are no difference. */
        reordered = edited_schema(&model, reorder_keys);
        build_header(&same, &model, reordered, NULL);
        buf_init(&out, MAX_FILE_BYTES);
        ASSERT_OK(manifest_list_append(&h, NULL, 0, buf_slice(&same), &out, &e));
}

TEST(append_falls_back_on_another_codec) {
        _cleanup_(buf_deinitp) Buf model, snappy;

        write_ok(3, 1, 0, 0, 20, &model);
        build_header(&snappy, &model, NULL, "snappy");
        expect_whole(&snappy, 3, "unknown codec 'snappy'");
}

/* ---- refusals ----------------------------------------------------------------------------- */

static void expect_refused(const Buf *parent, int want, const char *contains) {
        ManifestListHeader h = header_for(3, 9);
        ManifestFile *files = make_files(3, 50, 1, 20);
        _cleanup_(buf_deinitp) Buf out;
        Error e = { 0 };

        buf_init(&out, MAX_FILE_BYTES);
        ASSERT_EQ(manifest_list_append(&h, files, 1, buf_slice(parent), &out, &e), want);
        ASSERT_CONTAINS(e.message, contains);
        ASSERT_EQ(out.len, 0);
        manifest_list_files_free(files, 1);
}

TEST(append_refuses_damaged_parents) {
        _cleanup_(buf_deinitp) Buf list, cut, flipped, sized, header_cut, magic;
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        OcfBlock block;
        size_t start;
        Error e = { 0 };

        write_ok(3, 1, 0, 40, 20, &list);
        ASSERT_OK(ocf_reader_open(buf_slice(&list), &r, &e));
        start = ocf_reader_data_offset(r);

        buf_init(&cut, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&cut, list.data, list.len - 30));
        expect_refused(&cut, -EBADMSG, "parent manifest list: block 0: size");

        buf_init(&flipped, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&flipped, list.data, list.len));
        flipped.data[flipped.len - 3] ^= 0x41;
        expect_refused(&flipped, -EBADMSG, "block 0: sync marker mismatch");

        /* The block's size claims more than the file holds: count 40, size 10^6. */
        ASSERT_EQ(ocf_reader_scan_block(r, &block, &e), 1);
        buf_init(&sized, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&sized, list.data, start));
        put_long(&sized, 40);
        put_long(&sized, 1000000);
        ASSERT_OK(buf_append(&sized, block.data.ptr,
                             list.len - (size_t)(block.data.ptr - list.data)));
        expect_refused(&sized, -EBADMSG, "block 0: size 1000000 exceeds the");

        buf_init(&header_cut, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&header_cut, list.data, start - 5));
        expect_refused(&header_cut, -EBADMSG, "truncated header sync marker");

        buf_init(&magic, MAX_FILE_BYTES);
        ASSERT_OK(buf_append(&magic, "Obj\x02", 4));
        ASSERT_OK(buf_append(&magic, list.data + 4, list.len - 4));
        expect_refused(&magic, -EBADMSG, "bad magic");
}

TEST(append_refuses_what_write_refuses) {
        _cleanup_(buf_deinitp) Buf list, out;
        ManifestListHeader h = header_for(3, 2);
        ManifestFile *files = make_files(3, 10, 2, 20);
        Error e = { 0 };

        write_ok(3, 1, 0, 2, 20, &list);
        buf_init(&out, MAX_FILE_BYTES);
        files[1].has_first_row_id = false;
        ASSERT_EQ(manifest_list_append(&h, files, 2, buf_slice(&list), &out, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "manifest list entry 1");
        ASSERT_CONTAINS(e.message, "data manifest has no first_row_id");
        files[1].has_first_row_id = true;
        h.has_first_row_id = false;
        ASSERT_EQ(manifest_list_append(&h, files, 2, buf_slice(&list), &out, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "needs the snapshot's first-row-id");
        ASSERT_EQ(out.len, 0);
        manifest_list_files_free(files, 2);
}

/* A block past the container limits: stored (null codec) over OCF_MAX_BLOCK_BYTES, and a
 * deflate block that inflates past it when absorbed. */
TEST(append_honours_the_block_limits) {
        _cleanup_(buf_deinitp) Buf model, big, bomb;
        uint8_t *zeros = calloc(1, OCF_MAX_BLOCK_BYTES + 1024);
        uint8_t *packed = malloc(OCF_MAX_BLOCK_BYTES / 100);
        z_stream z = { 0 };

        ASSERT_TRUE(zeros && packed);
        write_ok(3, 1, 0, 0, 20, &model);
        build_header(&big, &model, NULL, "null");
        put_long(&big, 1);
        put_long(&big, OCF_MAX_BLOCK_BYTES + 1);
        ASSERT_OK(buf_append(&big, zeros, OCF_MAX_BLOCK_BYTES + 1));
        ASSERT_OK(buf_append(&big, test_sync, 16));
        expect_refused(&big, -E2BIG, "block 0: size 16777217 exceeds 16777216 bytes");

        ASSERT_EQ(deflateInit2(&z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
        z.next_in = zeros;
        z.avail_in = OCF_MAX_BLOCK_BYTES + 1024;
        z.next_out = packed;
        z.avail_out = OCF_MAX_BLOCK_BYTES / 100;
        ASSERT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
        build_header(&bomb, &model, NULL, NULL);
        put_long(&bomb, 1);
        put_long(&bomb, (int64_t)z.total_out);
        ASSERT_OK(buf_append(&bomb, packed, z.total_out));
        ASSERT_OK(buf_append(&bomb, test_sync, 16));
        (void)deflateEnd(&z);
        free(zeros);
        free(packed);
        expect_refused(&bomb, -E2BIG, "block 0: decompressed size exceeds");
}

TEST(append_honours_the_output_maximum) {
        _cleanup_(buf_deinitp) Buf list, out;
        ManifestListHeader h = header_for(3, 2);
        ManifestFile *files = make_files(3, 10, 1, 20);
        Error e = { 0 };

        write_ok(3, 1, 0, 50, 20, &list);
        buf_init(&out, list.len / 2);
        ASSERT_OK(buf_append(&out, "kept", 4));
        ASSERT_EQ(manifest_list_append(&h, files, 1, buf_slice(&list), &out, &e), -E2BIG);
        ASSERT_EQ(out.len, 4);
        ASSERT_TRUE(memcmp(out.data, "kept", 4) == 0);
        manifest_list_files_free(files, 1);
}
