/* SPDX-License-Identifier: Apache-2.0 */
/* Incremental manifest lists (see manifest_list_append.h). A v3 (or v2, v1) append never changes
 * an entry of the parent list, so the parent's encoded entries are reused as they are: only
 * the header and the block of new entries are written, and the blocks after it copied. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "iceberg/manifest_list-internal.h"
#include "iceberg/manifest_list_append.h"

/* Binary-counter coalescing: one new block per commit would leave a table of 100,000 commits
 * with 100,000 tiny blocks (each with its framing, sync marker and deflate stream). The new
 * block absorbs the next one while it holds at least half as many entries; once it stops, the
 * next block holds more than twice its entries. So from the front of the file each block
 * holds more than twice the entries of the one before: a list of N entries has at most
 * log2(N) + 1 blocks below the size cap, whatever the sizes of the commits (absorbing only
 * "at least as many" leaves a block per commit for commits of 5, 4, 3, 2, 1 entries). It is
 * cheap amortized: an absorbed entry lands in a block at least 1.5 times the one it left, so
 * it is inflated and deflated again at most log1.5(entries per full block) times in its life;
 * one append recompresses at most MANIFEST_LIST_APPEND_BLOCK_BYTES. At the cap a block stops
 * absorbing early; the pair it leaves holds more than the cap, so such blocks are few (about
 * twice the list's bytes over the cap). Returns 1 when the block was absorbed, 0 when it is
 * to be copied, <0 with the reason. */
static int manifest_list_append_absorb(const OcfReader *reader, OcfWriter *w, const OcfBlock *block,
                                       Buf *raw, Error *e) {
        int64_t pending_count;
        size_t pending_bytes;
        int r;

        ocf_writer_pending(w, &pending_count, &pending_bytes);
        if (block->count - pending_count > pending_count ||
            pending_bytes >= MANIFEST_LIST_APPEND_BLOCK_BYTES)
                return 0;
        r = ocf_reader_inflate_block(reader, block, raw, e);
        if (r < 0)
                return error_prefix(e, r, "parent manifest list");
        if (raw->len > MANIFEST_LIST_APPEND_BLOCK_BYTES - pending_bytes)
                return 0;
        /* Datums are concatenated as encoded: equal writer schemas encode them alike. */
        r = ocf_writer_append_encoded(w, buf_slice(raw), block->count);
        if (r < 0)
                return error_set(e, r, "cannot absorb block %" PRIu64 " of the parent list: %s",
                                 block->index, strerror(-r));
        return 1;
}

int manifest_list_append(const ManifestListHeader *h, const ManifestFile *new_files, size_t n,
                         Slice parent, Buf *out, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        _cleanup_(buf_deinitp) Buf raw;
        bool is_absorbing = true;
        OcfBlock block = { 0 };
        ListFields lf;
        int64_t version;
        int r;

        buf_init(&raw, OCF_MAX_BLOCK_BYTES);
        r = manifest_list_check(h, new_files, n, e);
        if (r < 0)
                return r;

        r = ocf_reader_open(parent, &reader, e);
        /* Another codec (snappy, zstd...) is no damage; manifest_list_write() says what it can. */
        if (r == -EOPNOTSUPP)
                return error_prefix(e, MANIFEST_LIST_APPEND_E_WHOLE, "parent manifest list");
        if (r < 0)
                return error_prefix(e, r, "parent manifest list");
        r = ocf_reader_meta_i64(reader, "format-version", &version);
        if (r < 0)
                return error_set(e, -EBADMSG, "parent manifest list has an invalid format-version");
        if (r == 0)
                version = 1; /* as manifest_list_read_header(): old v1 writers wrote none */
        if (version != h->format_version)
                return error_set(e, MANIFEST_LIST_APPEND_E_WHOLE,
                                 "parent manifest list has format-version %" PRId64 ", not %d",
                                 version, h->format_version);

        r = manifest_list_writer_open(h, ocf_reader_codec(reader), &w, &lf, e);
        if (r < 0)
                return r;
        /* The copied bytes mean what the parent's schema says; they may only be relabelled with
         * ours when both are the same schema, field ids included (avro-c drops those, so the
         * JSON is compared, as parsed: key order and white space do not count). */
        if (!json_equal(ocf_reader_schema_json(reader), ocf_writer_schema_json(w)))
                return error_set(e, MANIFEST_LIST_APPEND_E_WHOLE,
                                 "parent manifest list has another writer schema than the "
                                 "format %d list we write",
                                 h->format_version);

        r = manifest_list_encode(w, &lf, h->format_version, new_files, n, e);
        if (r < 0)
                return r;

        for (;;) {
                r = ocf_reader_scan_block(reader, &block, e);
                if (r < 0)
                        return error_prefix(e, r, "parent manifest list");
                if (r == 0)
                        break;
                if (is_absorbing) {
                        r = manifest_list_append_absorb(reader, w, &block, &raw, e);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                continue;
                        is_absorbing = false;
                }
                r = ocf_writer_append_block(w, block.count, block.data);
                if (r < 0)
                        return error_set(e, r,
                                         "cannot copy block %" PRIu64 " of the parent list: %s",
                                         block.index, strerror(-r));
        }

        r = ocf_writer_finish(w, out);
        if (r < 0)
                return error_set(e, r, "cannot write the manifest list: %s", strerror(-r));
        return 0;
}
