/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: staged manifests (iceberg/manifest.c over iceberg/ocf_read.c and avro-c), the Avro
 * files writers hand us. Any input must end in success or an Error, never a crash, a leak or
 * an over-read; an accepted manifest must satisfy the invariants the commit relies on. */
#include <stdint.h>
#include <stdlib.h>

#include "iceberg/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        ManifestLimits limits = { .max_entries = 100000 };
        StagedManifest *m = NULL;
        int64_t rows = 0;
        Error e;

        if (staged_manifest_parse(slice_make(data, size), "fuzz.avro", &limits, &m, &e) < 0)
                return 0;
        if (m->n_files == 0 || m->added_files_count != (int32_t)m->n_files || m->content != 0 ||
            (m->format_version != 2 && m->format_version != 3) ||
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
        staged_manifest_free(m);
        return 0;
}
