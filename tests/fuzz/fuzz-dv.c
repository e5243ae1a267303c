/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a deletion-vector-v1 blob through puffin/dv.c. Never crash or over-read; a blob
 * read holds only positions below the record count, and what it holds writes back to a blob
 * that reads as the same set. */
#include <stdint.h>
#include <stdlib.h>

#include "puffin/dv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool check_below(uint64_t position, void *userdata) {
        if (position >= *(const uint64_t *)userdata)
                abort();
        return true;
}

static void fuzz_read(const uint8_t *data, size_t size, uint64_t max_position) {
        DvBitmap *dv = NULL, *back = NULL;
        Buf out;
        int r;

        r = dv_read(slice_make(data, size), max_position, &dv, NULL);
        if (r > 0)
                abort();
        if (r < 0)
                return;
        (void)dv_foreach(dv, check_below, &max_position);
        buf_init(&out, 1u << 24);
        if (dv_write(dv, &out) == 0) {
                if (dv_read(buf_slice(&out), max_position, &back, NULL) != 0 ||
                    dv_cardinality(back) != dv_cardinality(dv))
                        abort();
                if (dv_union(back, dv) < 0 || dv_cardinality(back) != dv_cardinality(dv))
                        abort();
        }
        buf_deinit(&out);
        dv_free(back);
        dv_free(dv);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_read(data, size, UINT64_MAX);
        fuzz_read(data, size, 70000);
        return 0;
}
