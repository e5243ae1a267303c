/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest-list entries in memory (see manifest_file.h): the members each entry owns. */
#include <stdlib.h>

#include "iceberg/manifest_file.h"

void manifest_file_deinit(ManifestFile *m) {
        if (!m)
                return;
        free(m->path);
        for (size_t i = 0; i < m->n_partitions; i++) {
                buf_deinit(&m->partitions[i].lower_bound);
                buf_deinit(&m->partitions[i].upper_bound);
        }
        free(m->partitions);
        buf_deinit(&m->key_metadata);
        *m = (ManifestFile){ 0 };
}
