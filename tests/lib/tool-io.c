/* SPDX-License-Identifier: Apache-2.0 */
/* Whole files in and out for the test-only tools (tool-io.h). */
#include <errno.h>
#include <stdio.h>

#include "tool-io.h"
#include "util/cleanup.h"

int tool_read_file(const char *path, Buf *ret) {
        _cleanup_(fclosep) FILE *f = NULL;
        uint8_t chunk[65536];
        size_t n;
        int r;

        buf_init(ret, TOOL_MAX_FILE_BYTES);
        f = fopen(path, "rbe");
        if (!f)
                return -errno;
        while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
                r = buf_append(ret, chunk, n);
                if (r < 0)
                        return r;
        }
        return ferror(f) ? -EIO : 0;
}

int tool_write_file(const char *path, const Buf *b) {
        FILE *f = fopen(path, "wbe");

        if (!f)
                return -errno;
        if (fwrite(b->data, 1, b->len, f) != b->len) {
                fclose(f);
                return -EIO;
        }
        return fclose(f) == 0 ? 0 : -errno;
}
