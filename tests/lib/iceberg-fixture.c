/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest-list entries for tests (see iceberg-fixture.h). */
#include <stdlib.h>
#include <string.h>

#include "iceberg-fixture.h"

/* Bounds and key metadata are a few bytes; the cap only has to hold what tests write. */
#define ICEBERG_FIXTURE_MAX_BYTES 1024u

/* Every Buf of an entry is initialized, present or not: manifest_file_deinit() frees them all. */
static void iceberg_fixture_bytes_init(Buf *b, Slice bytes) {
        buf_init(b, ICEBERG_FIXTURE_MAX_BYTES);
        if (bytes.ptr && buf_append(b, bytes.ptr, bytes.len) < 0)
                abort();
}

static void iceberg_fixture_summary_init(PartitionFieldSummary *s,
                                         const IcebergFixtureSummary *spec) {
        *s = (PartitionFieldSummary){
                .contains_null = spec->contains_null,
                .has_contains_nan = spec->contains_nan >= 0,
                .contains_nan = spec->contains_nan > 0,
                .has_lower_bound = spec->lower.ptr != NULL,
                .has_upper_bound = spec->upper.ptr != NULL,
        };
        iceberg_fixture_bytes_init(&s->lower_bound, spec->lower);
        iceberg_fixture_bytes_init(&s->upper_bound, spec->upper);
}

static void iceberg_fixture_manifest_init(ManifestFile *f, const IcebergFixtureManifest *spec) {
        *f = (ManifestFile){
                .path = strdup(spec->path),
                .length = spec->length,
                .partition_spec_id = spec->partition_spec_id,
                .content = spec->content,
                .sequence_number = spec->sequence_number,
                .min_sequence_number = spec->min_sequence_number,
                .has_added_snapshot_id = true,
                .added_snapshot_id = spec->added_snapshot_id,
                .has_counts = true,
                .added_files_count = spec->file_counts[0],
                .existing_files_count = spec->file_counts[1],
                .deleted_files_count = spec->file_counts[2],
                .added_rows_count = spec->row_counts[0],
                .existing_rows_count = spec->row_counts[1],
                .deleted_rows_count = spec->row_counts[2],
                .has_partitions = spec->has_partitions,
                .n_partitions = spec->n_partitions,
                .has_key_metadata = spec->key_metadata.ptr != NULL,
                .has_first_row_id = spec->has_first_row_id,
                .first_row_id = spec->first_row_id,
        };
        if (!f->path)
                abort();
        if (spec->n_partitions > 0) {
                f->partitions = calloc(spec->n_partitions, sizeof(*f->partitions));
                if (!f->partitions)
                        abort();
        }
        for (size_t i = 0; i < spec->n_partitions; i++)
                iceberg_fixture_summary_init(&f->partitions[i], &spec->partitions[i]);
        iceberg_fixture_bytes_init(&f->key_metadata, spec->key_metadata);
}

ManifestFile *iceberg_fixture_manifest_files_new(const IcebergFixtureManifest *specs, size_t n) {
        ManifestFile *files = calloc(n > 0 ? n : 1, sizeof(*files));

        if (!files)
                abort();
        for (size_t i = 0; i < n; i++)
                iceberg_fixture_manifest_init(&files[i], &specs[i]);
        return files;
}
