/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: a Parquet file's tail through parquet/footer.c, read whole and as the short tail
 * intake reads first. Never crash or over-read; a parsed footer fits in the file and its row
 * groups add up to num_rows; a short tail asks for more than it had, within the limit. */
#include <stdint.h>
#include <stdlib.h>

#include "parquet/footer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_tail(const uint8_t *data, size_t size, size_t tail_len, uint64_t max_footer) {
        ParquetFooter f;
        uint64_t need = 0;
        int r;

        r = parquet_footer_parse(slice_make(data + size - tail_len, tail_len), size, max_footer, &f,
                                 &need, NULL);
        if (r == 0 && (f.num_rows != f.row_group_rows || f.num_rows < 0 ||
                       f.footer_bytes + 12 > size || f.footer_bytes + 8 > tail_len))
                abort();
        if (r == PARQUET_FOOTER_E_SHORT &&
            (need <= tail_len || need > max_footer + 8 || need > size))
                abort();
        if (r > 0 && r != PARQUET_FOOTER_E_SHORT)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        fuzz_tail(data, size, size, 1u << 20);
        fuzz_tail(data, size, size < 64 ? size : 64, 1u << 20);
        fuzz_tail(data, size, size, 16);
        return 0;
}
