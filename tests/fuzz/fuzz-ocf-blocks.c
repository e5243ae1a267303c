/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the OCF block scanner (avro/ocf_reader.c ocf_reader_scan_block and
 * ocf_reader_inflate_block) and manifest_list_append over it, on parent lists we read back from
 * storage. The scanner's blocks must tile the file from the header to its end; an append to a
 * parent that manifest_list_read accepts must read back as the new entry then the parent's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "avro/ocf.h"
#include "iceberg/manifest_list.h"
#include "iceberg/manifest_list_append.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void scan(Slice bytes) {
        OcfReader *r = NULL;
        OcfBlock block;
        size_t offset;
        Error e;
        Buf raw;
        int rr;

        if (ocf_reader_open(bytes, &r, &e) < 0)
                return;
        buf_init(&raw, OCF_MAX_BLOCK_BYTES);
        offset = ocf_reader_data_offset(r);
        while ((rr = ocf_reader_scan_block(r, &block, &e)) > 0) {
                if (block.offset != offset || block.end <= block.offset || block.end > bytes.len ||
                    block.data.ptr < bytes.ptr + block.offset ||
                    block.data.ptr + block.data.len + OCF_SYNC_LEN != bytes.ptr + block.end ||
                    block.count < 0)
                        abort();
                offset = block.end;
                if (ocf_reader_inflate_block(r, &block, &raw, &e) == 0 &&
                    (uint64_t)block.count > (raw.len > 0 ? raw.len : 1))
                        abort();
        }
        if (rr == 0 && offset != bytes.len)
                abort();
        buf_deinit(&raw);
        ocf_reader_free(r);
}

static void append(Slice bytes) {
        ManifestListHeader parent, h;
        ManifestFile *files = NULL, *back = NULL, added = { 0 };
        size_t n = 0, n_back = 0;
        Error e;
        Buf out;
        int rr;

        if (manifest_list_read_header(bytes, &parent, &e) < 0 ||
            manifest_list_read(bytes, &files, &n, &e) < 0)
                return;
        h = (ManifestListHeader){
                .format_version = parent.format_version,
                .snapshot_id = parent.snapshot_id + 1,
                .has_parent_snapshot_id = true,
                .parent_snapshot_id = parent.snapshot_id,
                .sequence_number = parent.sequence_number + 1,
                .has_first_row_id = true,
        };
        added = (ManifestFile){
                .path = (char *)"s3://b/t/metadata/new-m0.avro",
                .length = 1,
                .has_added_snapshot_id = true,
                .added_snapshot_id = h.snapshot_id,
                .has_counts = true,
                .added_files_count = 1,
                .added_rows_count = 1,
                .has_first_row_id = true,
        };
        buf_init(&added.key_metadata, 0);
        buf_init(&out, 64u << 20);
        rr = manifest_list_append(&h, &added, 1, bytes, &out, &e);
        if (rr == 0) {
                if (manifest_list_read(buf_slice(&out), &back, &n_back, &e) < 0 ||
                    n_back != n + 1 || strcmp(back[0].path, added.path) != 0)
                        abort();
                for (size_t i = 0; i < n; i++)
                        if (strcmp(back[i + 1].path, files[i].path) != 0 ||
                            back[i + 1].length != files[i].length ||
                            back[i + 1].has_first_row_id != files[i].has_first_row_id ||
                            back[i + 1].added_rows_count != files[i].added_rows_count)
                                abort();
                manifest_list_files_free(back, n_back);
        } else if (rr > 0 && rr != MANIFEST_LIST_APPEND_E_WHOLE)
                abort();
        buf_deinit(&out);
        manifest_list_files_free(files, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        scan(slice_make(data, size));
        append(slice_make(data, size));
        return 0;
}
