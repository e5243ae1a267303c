/* SPDX-License-Identifier: Apache-2.0 */
/* Writing Avro Object Container Files in memory (see ocf.h): datums are encoded by avro-c
 * into blocks of about OCF_WRITER_BLOCK_BYTES; the header, which needs every metadata pair,
 * is written last, in front of the blocks, by ocf_writer_finish(). */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <zlib.h>

#include "avro/ocf.h"

/* A block is compressed in one call; zlib counts in uInt. */
static_assert(OCF_MAX_BLOCK_BYTES <= UINT32_MAX && sizeof(uInt) >= 4, "blocks fit zlib's uInt");

struct OcfWriter {
        char *schema_text; /* compact JSON written as avro.schema */
        json_t *schema_json;
        avro_schema_t schema;
        avro_value_iface_t *iface;
        avro_writer_t avro_writer;
        OcfCodec codec;
        uint8_t sync[OCF_SYNC_LEN];
        OcfMeta *meta;
        size_t n_meta;
        Buf raw; /* datums of the block being filled */
        int64_t raw_count;
        Buf blocks;  /* finished blocks, framed */
        Buf scratch; /* compression output */
        bool started;
        bool finished;
};

OcfWriter *ocf_writer_free(OcfWriter *w) {
        if (!w)
                return NULL;
        for (size_t i = 0; i < w->n_meta; i++) {
                free(w->meta[i].key);
                free((void *)(uintptr_t)w->meta[i].value.ptr);
        }
        free(w->meta);
        free(w->schema_text);
        json_decref(w->schema_json);
        if (w->iface)
                avro_value_iface_decref(w->iface);
        if (w->schema)
                avro_schema_decref(w->schema);
        if (w->avro_writer)
                avro_writer_free(w->avro_writer);
        buf_deinit(&w->raw);
        buf_deinit(&w->blocks);
        buf_deinit(&w->scratch);
        free(w);
        return NULL;
}

int ocf_writer_new(const char *schema_json, OcfCodec codec, OcfWriter **ret_writer) {
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        ssize_t n;

        assert(schema_json);
        if (codec != OCF_CODEC_NULL && codec != OCF_CODEC_DEFLATE)
                return -EINVAL;

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->codec = codec;
        buf_init(&w->raw, OCF_MAX_BLOCK_BYTES);
        buf_init(&w->blocks, SIZE_MAX / 2);
        buf_init(&w->scratch, SIZE_MAX / 2);

        w->schema_json = json_loads(schema_json, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
        if (!w->schema_json)
                return -EINVAL;
        /* One line like Java writes it; key order kept so the text reads like the source. */
        w->schema_text =
                json_dumps(w->schema_json, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        if (!w->schema_text)
                return -ENOMEM;
        if (avro_schema_from_json_length(w->schema_text, strlen(w->schema_text), &w->schema) != 0) {
                w->schema = NULL;
                return -EINVAL;
        }
        w->iface = avro_generic_class_from_schema(w->schema);
        if (!w->iface)
                return -EINVAL;

        n = getrandom(w->sync, sizeof(w->sync), 0);
        if (n < 0)
                return -errno;
        if ((size_t)n != sizeof(w->sync))
                return -EIO;

        *ret_writer = TAKE_PTR(w);
        return 0;
}

avro_schema_t ocf_writer_schema(const OcfWriter *w) {
        return w->schema;
}

const json_t *ocf_writer_schema_json(const OcfWriter *w) {
        return w->schema_json;
}

int ocf_writer_value_new(OcfWriter *w, avro_value_t *ret_value) {
        return avro_generic_value_new(w->iface, ret_value) == 0 ? 0 : -ENOMEM;
}

int ocf_writer_set_meta(OcfWriter *w, const char *key, Slice value) {
        uint8_t *copy;
        OcfMeta *m;

        if (w->started || w->finished)
                return -EBUSY;
        if (strncmp(key, "avro.", 5) == 0)
                return -EINVAL;

        copy = malloc(value.len ? value.len : 1);
        if (!copy)
                return -ENOMEM;
        if (value.len)
                memcpy(copy, value.ptr, value.len);

        for (size_t i = 0; i < w->n_meta; i++)
                if (strcmp(w->meta[i].key, key) == 0) {
                        free((void *)(uintptr_t)w->meta[i].value.ptr);
                        w->meta[i].value = slice_make(copy, value.len);
                        return 0;
                }

        m = reallocarray(w->meta, w->n_meta + 1, sizeof(*w->meta));
        if (!m) {
                free(copy);
                return -ENOMEM;
        }
        w->meta = m;
        m[w->n_meta].key = strdup(key);
        if (!m[w->n_meta].key) {
                free(copy);
                return -ENOMEM;
        }
        m[w->n_meta].value = slice_make(copy, value.len);
        w->n_meta++;
        return 0;
}

static int buf_append_long(Buf *b, int64_t v) {
        uint8_t tmp[OCF_MAX_VARINT_LEN];
        uint64_t n = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); /* zigzag */
        size_t len = 0;

        while (n & ~(uint64_t)0x7f) {
                tmp[len++] = (uint8_t)((n & 0x7f) | 0x80);
                n >>= 7;
        }
        tmp[len++] = (uint8_t)n;
        return buf_append(b, tmp, len);
}

static int buf_append_avro_bytes(Buf *b, const void *p, size_t n) {
        int r;

        r = buf_append_long(b, (int64_t)n);
        if (r < 0)
                return r;
        return buf_append(b, p, n);
}

static int ocf_deflate(Slice in, Buf *out) {
        z_stream z = { 0 };
        uLong bound;
        int zr, r;

        out->len = 0;
        /* Raw DEFLATE, as the Avro spec's "deflate" codec requires. */
        if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        bound = deflateBound(&z, (uLong)in.len);
        r = buf_reserve(out, bound);
        if (r < 0) {
                (void)deflateEnd(&z);
                return r;
        }
        z.next_in = (Bytef *)(uintptr_t)in.ptr;
        z.avail_in = (uInt)in.len;
        z.next_out = out->data;
        z.avail_out = (uInt)bound;
        zr = deflate(&z, Z_FINISH);
        out->len = bound - z.avail_out;
        out->data[out->len] = 0;
        (void)deflateEnd(&z);
        return zr == Z_STREAM_END ? 0 : -EIO;
}

/* Frames one block: datum count, byte size, the bytes, this file's sync marker. */
static int ocf_writer_frame_block(OcfWriter *w, int64_t count, Slice data) {
        int r;

        r = buf_append_long(&w->blocks, count);
        if (r >= 0)
                r = buf_append_long(&w->blocks, (int64_t)data.len);
        if (r >= 0)
                r = buf_append(&w->blocks, data.ptr, data.len);
        if (r >= 0)
                r = buf_append(&w->blocks, w->sync, sizeof(w->sync));
        return r;
}

int ocf_writer_end_block(OcfWriter *w) {
        Slice data = buf_slice(&w->raw);
        int r;

        if (w->finished)
                return -EBUSY;
        if (w->raw_count == 0)
                return 0;
        if (w->codec == OCF_CODEC_DEFLATE) {
                r = ocf_deflate(data, &w->scratch);
                if (r < 0)
                        return r;
                data = buf_slice(&w->scratch);
        }
        r = ocf_writer_frame_block(w, w->raw_count, data);
        if (r < 0)
                return r;
        w->raw.len = 0;
        w->raw_count = 0;
        return 0;
}

int ocf_writer_append(OcfWriter *w, avro_value_t *value) {
        size_t size;
        int r;

        if (w->finished)
                return -EBUSY;
        w->started = true;

        if (avro_value_sizeof(value, &size) != 0)
                return -EIO;
        r = buf_reserve(&w->raw, size);
        if (r < 0)
                return r;
        if (!w->avro_writer) {
                w->avro_writer =
                        avro_writer_memory((const char *)w->raw.data + w->raw.len, (int64_t)size);
                if (!w->avro_writer)
                        return -ENOMEM;
        } else
                avro_writer_memory_set_dest(w->avro_writer, (const char *)w->raw.data + w->raw.len,
                                            (int64_t)size);
        if (avro_value_write(w->avro_writer, value) != 0)
                return -EIO;
        w->raw.len += size;
        w->raw.data[w->raw.len] = 0;
        w->raw_count++;

        if (w->raw.len >= OCF_WRITER_BLOCK_BYTES)
                return ocf_writer_end_block(w);
        return 0;
}

int ocf_writer_append_encoded(OcfWriter *w, Slice datums, int64_t count) {
        int r;

        if (w->finished)
                return -EBUSY;
        if (count < 0 || count > INT64_MAX - w->raw_count)
                return -EINVAL;
        w->started = true;
        /* raw's maximum is OCF_MAX_BLOCK_BYTES: what every reader of ours accepts. */
        r = buf_append(&w->raw, datums.ptr, datums.len);
        if (r < 0)
                return r;
        w->raw_count += count;
        return 0;
}

int ocf_writer_append_block(OcfWriter *w, int64_t count, Slice stored) {
        int r;

        if (w->finished)
                return -EBUSY;
        if (count < 0)
                return -EINVAL;
        w->started = true;
        r = ocf_writer_end_block(w);
        if (r < 0)
                return r;
        return ocf_writer_frame_block(w, count, stored);
}

void ocf_writer_pending(const OcfWriter *w, int64_t *ret_count, size_t *ret_bytes) {
        *ret_count = w->raw_count;
        *ret_bytes = w->raw.len;
}

static int ocf_writer_write_header(OcfWriter *w, Buf *out) {
        const char *codec = w->codec == OCF_CODEC_DEFLATE ? "deflate" : "null";
        int r;

        r = buf_append(out, OCF_MAGIC, OCF_MAGIC_LEN);
        if (r < 0)
                return r;
        /* The metadata map as a single block: count, then key/value pairs, then 0. */
        r = buf_append_long(out, (int64_t)w->n_meta + 2);
        if (r < 0)
                return r;
        r = buf_append_avro_bytes(out, "avro.schema", strlen("avro.schema"));
        if (r >= 0)
                r = buf_append_avro_bytes(out, w->schema_text, strlen(w->schema_text));
        if (r >= 0)
                r = buf_append_avro_bytes(out, "avro.codec", strlen("avro.codec"));
        if (r >= 0)
                r = buf_append_avro_bytes(out, codec, strlen(codec));
        for (size_t i = 0; r >= 0 && i < w->n_meta; i++) {
                r = buf_append_avro_bytes(out, w->meta[i].key, strlen(w->meta[i].key));
                if (r >= 0)
                        r = buf_append_avro_bytes(out, w->meta[i].value.ptr, w->meta[i].value.len);
        }
        if (r >= 0)
                r = buf_append_long(out, 0);
        if (r >= 0)
                r = buf_append(out, w->sync, sizeof(w->sync));
        return r;
}

int ocf_writer_copy_with_meta(const OcfReader *r, const OcfMeta *extra, size_t n_extra, Buf *out) {
        const size_t n_meta = ocf_reader_n_meta(r), start = out->len;
        const Slice file = ocf_reader_bytes(r);
        const size_t data = ocf_reader_data_offset(r);
        int rr = 0;

        for (size_t i = 0; i < n_extra; i++) {
                if (strncmp(extra[i].key, "avro.", 5) == 0)
                        return -EINVAL;
                if (ocf_reader_meta(r, extra[i].key).ptr)
                        return -EEXIST;
        }
        /* The map as one block, as the writer writes its own: the reader took the pairs of
         * every block of the original, and a pair's meaning does not depend on its block. */
        rr = buf_append(out, OCF_MAGIC, OCF_MAGIC_LEN);
        if (rr >= 0)
                rr = buf_append_long(out, (int64_t)(n_meta + n_extra));
        for (size_t i = 0; rr >= 0 && i < n_meta + n_extra; i++) {
                const char *key;
                Slice value;

                if (i < n_meta)
                        ocf_reader_meta_at(r, i, &key, &value);
                else {
                        key = extra[i - n_meta].key;
                        value = extra[i - n_meta].value;
                }
                rr = buf_append_avro_bytes(out, key, strlen(key));
                if (rr >= 0)
                        rr = buf_append_avro_bytes(out, value.ptr, value.len);
        }
        if (rr >= 0)
                rr = buf_append_long(out, 0);
        if (rr >= 0)
                rr = buf_append(out, ocf_reader_sync(r), OCF_SYNC_LEN);
        if (rr >= 0)
                rr = buf_append(out, file.ptr + data, file.len - data);
        if (rr < 0) {
                out->len = start;
                if (out->data)
                        out->data[start] = 0;
                return rr;
        }
        return 0;
}

int ocf_writer_finish(OcfWriter *w, Buf *out) {
        size_t start = out->len;
        int r;

        if (w->finished)
                return -EBUSY;
        r = ocf_writer_end_block(w);
        if (r < 0)
                return r;
        w->finished = true;
        r = ocf_writer_write_header(w, out);
        if (r >= 0)
                r = buf_append(out, w->blocks.data, w->blocks.len);
        if (r < 0) {
                /* Leave *out as it was: a half-written file is worse than none. */
                out->len = start;
                if (out->data)
                        out->data[start] = 0;
                return r;
        }
        return 0;
}
