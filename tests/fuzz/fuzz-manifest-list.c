/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: manifest lists (iceberg/manifest_list.c over avro/ocf_reader.c and avro-c), which
 * we read back from the catalog's table. Whatever reads must also write (v2, and v3 when the
 * lineage rules allow) and read back to the same entries; its first entries read alone are
 * the same entries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/manifest_list.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool bufs_equal(bool has_a, const Buf *a, bool has_b, const Buf *b) {
        if (has_a != has_b)
                return false;
        return !has_a ||
               (a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0));
}

static bool files_equal(const ManifestFile *a, const ManifestFile *b, int version) {
        if (strcmp(a->path, b->path) != 0 || a->length != b->length ||
            a->partition_spec_id != b->partition_spec_id || a->content != b->content ||
            a->sequence_number != b->sequence_number ||
            a->min_sequence_number != b->min_sequence_number ||
            a->added_snapshot_id != b->added_snapshot_id || a->has_counts != b->has_counts ||
            a->added_files_count != b->added_files_count ||
            a->existing_files_count != b->existing_files_count ||
            a->deleted_files_count != b->deleted_files_count ||
            a->added_rows_count != b->added_rows_count ||
            a->existing_rows_count != b->existing_rows_count ||
            a->deleted_rows_count != b->deleted_rows_count ||
            a->has_partitions != b->has_partitions || a->n_partitions != b->n_partitions ||
            !bufs_equal(a->has_key_metadata, &a->key_metadata, b->has_key_metadata,
                        &b->key_metadata))
                return false;
        if (version == 3 &&
            (a->has_first_row_id != b->has_first_row_id || a->first_row_id != b->first_row_id))
                return false;
        for (size_t i = 0; i < a->n_partitions; i++) {
                const PartitionFieldSummary *x = &a->partitions[i], *y = &b->partitions[i];

                if (x->contains_null != y->contains_null ||
                    x->has_contains_nan != y->has_contains_nan ||
                    x->contains_nan != y->contains_nan ||
                    !bufs_equal(x->has_lower_bound, &x->lower_bound, y->has_lower_bound,
                                &y->lower_bound) ||
                    !bufs_equal(x->has_upper_bound, &x->upper_bound, y->has_upper_bound,
                                &y->upper_bound))
                        return false;
        }
        return true;
}

static void round_trip(int version, const ManifestFile *files, size_t n) {
        ManifestListHeader h = { .format_version = version,
                                 .snapshot_id = 1,
                                 .has_first_row_id = true };
        ManifestFile *back = NULL;
        size_t n_back = 0;
        Buf out;
        Error e;

        buf_init(&out, 64u << 20);
        if (manifest_list_write(&h, files, n, &out, &e) == 0) {
                if (manifest_list_read(buf_slice(&out), &back, &n_back, &e) < 0 || n_back != n)
                        abort();
                for (size_t i = 0; i < n; i++)
                        if (!files_equal(&files[i], &back[i], version))
                                abort();
                manifest_list_files_free(back, n_back);
        }
        buf_deinit(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ManifestListHeader h;
        ManifestFile *files = NULL;
        size_t n = 0;
        Error e;

        (void)manifest_list_read_header(slice_make(data, size), &h, &e);
        if (manifest_list_read(slice_make(data, size), &files, &n, &e) < 0)
                return 0;
        /* The first entries alone (a receipt rebuilt from the table) are the same entries. */
        for (size_t want = 1; want <= n + 1; want = want * 2 + 1) {
                ManifestFile *first = NULL;
                size_t n_first = 0;

                if (manifest_list_read_first(slice_make(data, size), want, &first, &n_first, &e) <
                            0 ||
                    n_first != (want < n ? want : n))
                        abort();
                for (size_t i = 0; i < n_first; i++)
                        if (!files_equal(&files[i], &first[i], 3))
                                abort();
                manifest_list_files_free(first, n_first);
        }
        round_trip(2, files, n);
        round_trip(3, files, n);
        manifest_list_files_free(files, n);
        return 0;
}
