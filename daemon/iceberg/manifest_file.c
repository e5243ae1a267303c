/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest-list entries in memory (see manifest_file.h): the members each entry owns. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

static int manifest_file_copy_buf(Buf *to, const Buf *from) {
        buf_init(to, from->max);
        return from->len ? buf_append(to, from->data, from->len) : 0;
}

int manifest_file_copy(const ManifestFile *from, ManifestFile *ret) {
        _cleanup_(manifest_file_deinit) ManifestFile m = *from;

        m.path = NULL;
        m.partitions = NULL;
        m.n_partitions = 0;
        buf_init(&m.key_metadata, from->key_metadata.max);
        if (from->path && !(m.path = strdup(from->path)))
                return -ENOMEM;
        if (manifest_file_copy_buf(&m.key_metadata, &from->key_metadata) < 0)
                return -ENOMEM;
        if (from->n_partitions > 0) {
                m.partitions = calloc(from->n_partitions, sizeof(*m.partitions));
                if (!m.partitions)
                        return -ENOMEM;
                m.n_partitions = from->n_partitions;
                for (size_t i = 0; i < from->n_partitions; i++) {
                        const PartitionFieldSummary *f = &from->partitions[i];
                        PartitionFieldSummary *to = &m.partitions[i];

                        /* Field by field: the buffers must never be shared with `from`. */
                        to->contains_null = f->contains_null;
                        to->has_contains_nan = f->has_contains_nan;
                        to->contains_nan = f->contains_nan;
                        to->has_lower_bound = f->has_lower_bound;
                        to->has_upper_bound = f->has_upper_bound;
                        if (manifest_file_copy_buf(&to->lower_bound, &f->lower_bound) < 0 ||
                            manifest_file_copy_buf(&to->upper_bound, &f->upper_bound) < 0)
                                return -ENOMEM;
                }
        }
        *ret = m;
        m = (ManifestFile){ 0 };
        return 0;
}
