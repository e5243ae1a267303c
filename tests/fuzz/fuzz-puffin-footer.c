/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a Puffin file through puffin/puffin.c, read whole and as a short tail. Never
 * crash or over-read; every blob of a parsed footer lies between the leading magic and the
 * footer; a short tail asks for more than it had, within the file. */
#include <stdint.h>
#include <stdlib.h>

#include "puffin/puffin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_tail(const uint8_t *data, size_t size, size_t tail_len, uint64_t max_payload) {
        PuffinFooter f = { 0 };
        uint64_t need = 0;
        int r;

        r = puffin_read_footer(slice_make(data + size - tail_len, tail_len), size, max_payload, &f,
                               &need, NULL);
        if (r == 0) {
                if (f.footer_start < 4 || f.footer_start > size || f.payload_bytes > max_payload)
                        abort();
                for (size_t i = 0; i < f.n_blobs; i++) {
                        const PuffinBlobMeta *b = &f.blobs[i];
                        Slice v;

                        if (b->offset < 4 || b->offset > f.footer_start ||
                            b->length > f.footer_start - b->offset ||
                            puffin_find_blob(&f, b->offset, b->length) == NULL)
                                abort();
                        (void)puffin_blob_property(b, "referenced-data-file", &v);
                }
        }
        if (r == PUFFIN_E_SHORT && (need <= tail_len || need > size))
                abort();
        if (r > 0 && r != PUFFIN_E_SHORT)
                abort();
        puffin_footer_deinit(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_tail(data, size, size, 1u << 20);
        fuzz_tail(data, size, size < 64 ? size : 64, 1u << 20);
        fuzz_tail(data, size, size, 16);
        return 0;
}
