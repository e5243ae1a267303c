/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: staged manifests (iceberg/manifest.c over avro/ocf_reader.c and avro-c), the Avro
 * files writers hand us, and the same bytes as a committed manifest the lineage audit reads
 * (iceberg/manifest_entries.c, with the reader's inheritance). Any input must end in success or
 * an Error, never a crash, a leak or an over-read; an accepted manifest must satisfy the
 * invariants the commit relies on. */
#include <stdint.h>
#include <stdlib.h>

#include "iceberg/manifest.h"
#include "iceberg/manifest_entries.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
        manifest_staged_free(m);
        return 0;
}
