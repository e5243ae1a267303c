/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest-list entries for tests, each described by one table row: shared by the unit test
 * (tests/unit/test-iceberg-avro.c) and the interop tool (tests/tools/avro-tool.c) so neither
 * fills ManifestFile and its owned members by hand. Test-only: aborts when out of memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/manifest_file.h"
#include "util/slice.h"

/* A byte-string literal as a Slice initializer, NUL bytes included:
 * ICEBERG_FIXTURE_BYTES("\x0a\x00\x00\x00") is 4 bytes. */
#define ICEBERG_FIXTURE_BYTES(s)                                                                   \
        { (const uint8_t *)(s), sizeof(s) - 1 }

/* One partition field summary (r508). */
typedef struct IcebergFixtureSummary {
        bool contains_null; /* 509 */
        int contains_nan;   /* 518: 0 or 1, -1 for null */
        Slice lower, upper; /* 510, 511: .ptr NULL for null */
} IcebergFixtureSummary;

/* One manifest-list entry (manifest_file, fields 500-520). added_snapshot_id and the counts
 * are always present, as every list we write requires. */
typedef struct IcebergFixtureManifest {
        const char *path;
        int64_t length;
        int32_t partition_spec_id;
        int32_t content;
        int64_t sequence_number;
        int64_t min_sequence_number;
        int64_t added_snapshot_id;
        int32_t file_counts[3]; /* added, existing, deleted: 504-506 */
        int64_t row_counts[3];  /* added, existing, deleted: 512-514 */
        bool has_partitions;
        const IcebergFixtureSummary *partitions; /* borrowed, n_partitions of them */
        size_t n_partitions;
        Slice key_metadata; /* .ptr NULL: none */
        bool has_first_row_id;
        int64_t first_row_id;
} IcebergFixtureManifest;

/* Builds the `n` entries `specs` describe, each owning copies of its path, summaries and key
 * metadata; the caller frees them with manifest_list_files_free(). Never returns NULL. */
ManifestFile *iceberg_fixture_manifest_files_new(const IcebergFixtureManifest *specs, size_t n);
