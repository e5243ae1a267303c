/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: staged manifests (iceberg/manifest.c over avro/ocf_reader.c and avro-c), the Avro
 * files writers hand us, and the same bytes as a committed manifest the lineage audit reads
 * (iceberg/manifest_entries.c, with the reader's inheritance) and merges into a manifest of
 * EXISTING entries (iceberg/manifest_merge.c), and once more within a request's bounds
 * (path, entry bytes, entries left, bytes held), and as icecommitd's copy of a staged manifest
 * (manifest_staged_copy: the same entries, naming where it was staged). Any input must end in
 * success or an Error, never a crash, a leak or an over-read; an accepted manifest must satisfy the
 * invariants the commit relies on. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/manifest.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_merge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as both inputs of a bin: a merged manifest must read back with every entry EXISTING
 * and nothing left to inherit. */
static void fuzz_merge(const uint8_t *data, size_t size) {
        ManifestFile list_entry = { .path = (char *)"fuzz.avro",
                                    .sequence_number = 7,
                                    .has_added_snapshot_id = true,
                                    .added_snapshot_id = 42,
                                    .has_counts = true,
                                    .has_first_row_id = true,
                                    .first_row_id = 1000 };
        ManifestMergeInput inputs[2] = { { &list_entry, slice_make(data, size) },
                                         { &list_entry, slice_make(data, size) } };
        ManifestMergeTarget target = { .format_version = 3,
                                       .snapshot_id = 43,
                                       .sequence_number = 8,
                                       .location = "merged.avro",
                                       .max_entries = 100000 };
        ManifestFile merged = { 0 };
        ManifestEntry *entries = NULL;
        size_t n = 0;
        Buf out;
        Error e;

        buf_init(&out, 64u << 20);
        if (manifest_merge_write(inputs, 2, &target, &out, &merged, NULL, &e) != 0) {
                buf_deinit(&out);
                return;
        }
        if (merged.has_first_row_id || merged.added_snapshot_id != 43 ||
            merged.length != (int64_t)out.len ||
            manifest_entries_read(buf_slice(&out), 200000, &entries, &n, &e) < 0 ||
            n != (size_t)merged.existing_files_count)
                abort();
        for (size_t i = 0; i < n; i++)
                if (entries[i].status != MANIFEST_ENTRY_EXISTING || !entries[i].has_snapshot_id ||
                    !entries[i].has_sequence_number || !entries[i].has_file_sequence_number)
                        abort();
        manifest_entries_free(entries, n);
        manifest_file_deinit(&merged);
        buf_deinit(&out);
}

/* The same bytes under a request's tight bounds (a short path, one entry left, little room): a
 * refusal gives back every byte it counted, a success holds what it keeps. */
static void fuzz_bounded(const uint8_t *data, size_t size) {
        Budget shared = { .max_bytes = 1u << 20 };
        BudgetHold hold = { .budget = &shared, .max_bytes = 4096 };
        uint64_t left = 1;
        ManifestLimits limits = { .max_entries = 100000,
                                  .max_path_bytes = 32,
                                  .max_entry_bytes = 2048,
                                  .entries_left = &left,
                                  .hold = &hold };
        StagedManifest *m = NULL;
        Error e;
        int r;

        r = manifest_staged_parse(slice_make(data, size), "fuzz.avro", &limits, &m, &e);
        if ((r < 0) != (hold.bytes == 0) || budget_used(&shared) != hold.bytes ||
            (r == 0 && (m->n_files != 1 || left != 0)))
                abort();
        manifest_staged_free(m);
        budget_release_all(&hold);
}

/* icecommitd's copy of an accepted staged manifest parses to the same entries, and names where
 * it was staged; a copy is never copied again (its key is icecommitd's). */
static void fuzz_copy(const uint8_t *data, size_t size, const StagedManifest *original) {
        StagedManifest *m = NULL;
        Buf copy, again;
        Error e;
        int r;

        buf_init(&copy, size + 4096);
        buf_init(&again, size + 8192);
        r = manifest_staged_copy(slice_make(data, size), "s3://b/t/staging/m.avro", &copy, &e);

        if (r < 0) {
                /* A file the parser took is refused only for an icecommit.* key of the
                 * writer's (or memory). */
                if (r != -EINVAL && r != -ENOMEM)
                        abort();
                goto out;
        }
        if (manifest_staged_parse(buf_slice(&copy), NULL, NULL, &m, &e) < 0 ||
            m->n_files != original->n_files || m->added_rows_count != original->added_rows_count ||
            !m->staged_location || strcmp(m->staged_location, "s3://b/t/staging/m.avro") != 0)
                abort();
        for (size_t i = 0; i < m->n_files; i++)
                if (strcmp(m->files[i].path, original->files[i].path) != 0)
                        abort();
        if (manifest_staged_copy(buf_slice(&copy), "x.avro", &again, &e) != -EINVAL)
                abort();
out:
        manifest_staged_free(m);
        buf_deinit(&copy);
        buf_deinit(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ManifestLimits limits = { .max_entries = 100000 };
        StagedManifest *m = NULL;
        int64_t rows = 0;
        Error e;

        ManifestEntry *entries = NULL;
        size_t n_entries = 0;

        if (manifest_entries_read(slice_make(data, size), 100000, &entries, &n_entries, &e) == 0) {
                /* As the audit applies it: a manifest-list entry with a first_row_id. */
                ManifestFile list_entry = { .path = (char *)"fuzz.avro",
                                            .sequence_number = 7,
                                            .has_added_snapshot_id = true,
                                            .added_snapshot_id = 42,
                                            .has_first_row_id = true,
                                            .first_row_id = 1000 };

                for (size_t i = 0; i < n_entries; i++)
                        if (!entries[i].file_path || entries[i].record_count < 0)
                                abort();
                (void)manifest_entries_inherit(entries, n_entries, &list_entry, &e);
                manifest_entries_free(entries, n_entries);
        }

        fuzz_merge(data, size);
        fuzz_bounded(data, size);
        if (manifest_staged_parse(slice_make(data, size), "fuzz.avro", &limits, &m, &e) < 0)
                return 0;
        if (m->n_files == 0 || m->added_files_count != (int32_t)m->n_files ||
            (m->content != MANIFEST_CONTENT_DATA && m->content != MANIFEST_CONTENT_DELETES) ||
            m->format_version < 1 || m->format_version > 3 ||
            (!m->has_partitions && m->n_partitions != 0))
                abort();
        for (size_t i = 0; i < m->n_files; i++) {
                if (!m->files[i].path || !m->files[i].format || m->files[i].record_count < 0 ||
                    m->files[i].file_size_in_bytes < 0)
                        abort();
                rows += m->files[i].record_count;
        }
        if (rows != m->added_rows_count)
                abort();
        fuzz_copy(data, size, m);
        manifest_staged_free(m);
        return 0;
}
