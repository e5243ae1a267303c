/* SPDX-License-Identifier: Apache-2.0 */
/* Puffin files (format/puffin-spec.md "File structure"): Magic Blob* Footer, where Footer is
 * Magic FooterPayload FooterPayloadSize Flags Magic. Reads footers from untrusted bytes and
 * writes whole files; knows no blob type and never touches storage. */
#include "puffin/puffin.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "util/checked.h"

static_assert(sizeof(PUFFIN_MAGIC) - 1 == PUFFIN_MAGIC_BYTES, "Puffin magic is 4 bytes");

static uint32_t puffin_le32(const uint8_t *p) {
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void puffin_put_le32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t)v;
        p[1] = (uint8_t)(v >> 8);
        p[2] = (uint8_t)(v >> 16);
        p[3] = (uint8_t)(v >> 24);
}

static bool puffin_is_magic(const uint8_t *p) {
        return memcmp(p, PUFFIN_MAGIC, PUFFIN_MAGIC_BYTES) == 0;
}

void puffin_footer_deinit(PuffinFooter *footer) {
        if (!footer)
                return;
        free(footer->blobs);
        json_decref(footer->root);
        *footer = (PuffinFooter){ 0 };
}

static int puffin_json_string(const json_t *o, const char *key, bool required, Slice *ret, size_t i,
                              Error *error) {
        const json_t *v = json_object_get(o, key);

        if (!v || json_is_null(v)) {
                if (required)
                        return error_set(error, -EBADMSG, "blob %zu: \"%s\" is missing", i, key);
                *ret = SLICE_NULL;
                return 0;
        }
        if (!json_is_string(v))
                return error_set(error, -EBADMSG, "blob %zu: \"%s\" is not a string", i, key);
        *ret = slice_make(json_string_value(v), json_string_length(v));
        return 0;
}

static int puffin_json_int(const json_t *o, const char *key, int64_t min, int64_t *ret, size_t i,
                           Error *error) {
        const json_t *v = json_object_get(o, key);

        if (!v)
                return error_set(error, -EBADMSG, "blob %zu: \"%s\" is missing", i, key);
        if (!json_is_integer(v) || json_integer_value(v) < min)
                return error_set(error, -EBADMSG, "blob %zu: \"%s\" is not an integer >= %" PRId64,
                                 i, key, min);
        *ret = (int64_t)json_integer_value(v);
        return 0;
}

static int puffin_check_fields(const json_t *fields, size_t i, Error *error) {
        const json_t *v;
        size_t k;

        if (!json_is_array(fields))
                return error_set(error, -EBADMSG, "blob %zu: \"fields\" is not an array", i);
        json_array_foreach (fields, k, v)
                if (!json_is_integer(v) || json_integer_value(v) < INT32_MIN ||
                    json_integer_value(v) > INT32_MAX)
                        return error_set(error, -EBADMSG,
                                         "blob %zu: field %zu is not a 32-bit integer", i, k);
        return 0;
}

static int puffin_check_properties(const json_t *props, const char *what, Error *error) {
        const char *key;
        const json_t *v;

        if (!props)
                return 0;
        if (!json_is_object(props))
                return error_set(error, -EBADMSG, "%s: \"properties\" is not an object", what);
        json_object_foreach ((json_t *)props, key, v)
                if (!json_is_string(v))
                        return error_set(error, -EBADMSG, "%s: property \"%s\" is not a string",
                                         what, key);
        return 0;
}

/* One entry of "blobs" (puffin-spec "BlobMetadata"): every required field present, and the
 * blob inside [4, footer_start), between the leading magic and the footer. */
static int puffin_parse_blob(const json_t *o, size_t i, uint64_t footer_start, PuffinBlobMeta *b,
                             Error *error) {
        int64_t offset = 0, length = 0;
        char what[32];
        int r;

        if (!json_is_object(o))
                return error_set(error, -EBADMSG, "blob %zu is not an object", i);
        r = puffin_json_string(o, "type", /* required= */ true, &b->type, i, error);
        if (r < 0)
                return r;
        if (b->type.len == 0)
                return error_set(error, -EBADMSG, "blob %zu: \"type\" is empty", i);
        b->fields = json_object_get(o, "fields");
        r = puffin_check_fields(b->fields, i, error);
        if (r < 0)
                return r;
        r = puffin_json_int(o, "snapshot-id", INT64_MIN, &b->snapshot_id, i, error);
        if (r < 0)
                return r;
        r = puffin_json_int(o, "sequence-number", INT64_MIN, &b->sequence_number, i, error);
        if (r < 0)
                return r;
        r = puffin_json_int(o, "offset", PUFFIN_MAGIC_BYTES, &offset, i, error);
        if (r < 0)
                return r;
        r = puffin_json_int(o, "length", 0, &length, i, error);
        if (r < 0)
                return r;
        if ((uint64_t)offset > footer_start || (uint64_t)length > footer_start - (uint64_t)offset)
                return error_set(error, -EBADMSG,
                                 "blob %zu: offset=%" PRId64 " length=%" PRId64
                                 " is outside the blobs, which end at %" PRIu64,
                                 i, offset, length, footer_start);
        b->offset = (uint64_t)offset;
        b->length = (uint64_t)length;
        r = puffin_json_string(o, "compression-codec", /* required= */ false, &b->compression_codec,
                               i, error);
        if (r < 0)
                return r;
        b->properties = json_object_get(o, "properties");
        (void)snprintf(what, sizeof(what), "blob %zu", i);
        return puffin_check_properties(b->properties, what, error);
}

static int puffin_parse_payload(Slice payload, PuffinFooter *f, Error *error) {
        const json_t *blobs;
        json_error_t jerr;
        int r;

        f->root = json_loadb((const char *)payload.ptr, payload.len, JSON_REJECT_DUPLICATES, &jerr);
        if (!f->root)
                return error_set(error, -EBADMSG,
                                 "footer payload is not JSON: %s (line %d column %d)", jerr.text,
                                 jerr.line, jerr.column);
        if (!json_is_object(f->root))
                return error_set(error, -EBADMSG, "footer payload is not a JSON object");
        blobs = json_object_get(f->root, "blobs");
        if (!json_is_array(blobs))
                return error_set(error, -EBADMSG, "footer has no \"blobs\" array");
        r = puffin_check_properties(json_object_get(f->root, "properties"), "footer", error);
        if (r < 0)
                return r;

        f->n_blobs = json_array_size(blobs);
        if (f->n_blobs > 0) {
                f->blobs = calloc(f->n_blobs, sizeof(*f->blobs));
                if (!f->blobs)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < f->n_blobs; i++) {
                r = puffin_parse_blob(json_array_get(blobs, i), i, f->footer_start, &f->blobs[i],
                                      error);
                if (r < 0)
                        return r;
        }
        return 0;
}

int puffin_read_footer(Slice tail, uint64_t file_size, uint64_t max_payload_bytes,
                       PuffinFooter *ret_footer, uint64_t *ret_need, Error *error) {
        _cleanup_(puffin_footer_deinit) PuffinFooter f = { 0 };
        const uint8_t *trailer, *footer;
        uint64_t footer_bytes;
        int32_t payload_size;
        int r;

        if (tail.len > file_size) /* a caller bug, refused all the same */
                return error_set(error, -EBADMSG, "tail of %zu bytes is longer than the file",
                                 tail.len);
        if (file_size < PUFFIN_MIN_FILE_BYTES)
                return error_set(error, -EBADMSG,
                                 "file of %" PRIu64 " bytes is shorter than any Puffin file",
                                 file_size);
        if (tail.len < PUFFIN_FOOTER_TRAILER_BYTES) {
                *ret_need = PUFFIN_FOOTER_TRAILER_BYTES;
                return PUFFIN_E_SHORT;
        }

        trailer = tail.ptr + tail.len - PUFFIN_FOOTER_TRAILER_BYTES;
        if (!puffin_is_magic(trailer + 8))
                return error_set(error, -EBADMSG, "file does not end with the Puffin magic");
        payload_size = (int32_t)puffin_le32(trailer);
        f.flags = puffin_le32(trailer + 4);
        if (payload_size < 0)
                return error_set(error, -EBADMSG, "footer payload size %" PRId32 " is negative",
                                 payload_size);
        if ((uint64_t)payload_size > max_payload_bytes)
                return error_set(error, -EFBIG,
                                 "footer payload of %" PRId32
                                 " bytes is over the limit of %" PRIu64,
                                 payload_size, max_payload_bytes);
        /* Only byte 0 bit 0 is defined; other bits are ignored, as the spec says. */
        if (f.flags & PUFFIN_FLAG_FOOTER_COMPRESSED)
                return error_set(error, -EOPNOTSUPP,
                                 "footer payload is compressed (LZ4), which is not supported");
        f.payload_bytes = (uint64_t)payload_size;
        footer_bytes = PUFFIN_MAGIC_BYTES + f.payload_bytes + PUFFIN_FOOTER_TRAILER_BYTES;
        if (footer_bytes > file_size - PUFFIN_MAGIC_BYTES)
                return error_set(error, -EBADMSG,
                                 "footer of %" PRIu64 " bytes does not fit in a file of %" PRIu64
                                 " bytes",
                                 footer_bytes, file_size);
        if (tail.len < footer_bytes) {
                *ret_need = footer_bytes;
                return PUFFIN_E_SHORT;
        }

        footer = tail.ptr + tail.len - footer_bytes;
        if (!puffin_is_magic(footer))
                return error_set(error, -EBADMSG, "footer does not start with the Puffin magic");
        if (tail.len == file_size && !puffin_is_magic(tail.ptr))
                return error_set(error, -EBADMSG, "file does not start with the Puffin magic");
        f.footer_start = file_size - footer_bytes;

        r = puffin_parse_payload(slice_make(footer + PUFFIN_MAGIC_BYTES, f.payload_bytes), &f,
                                 error);
        if (r < 0)
                return r;

        *ret_footer = f;
        f = (PuffinFooter){ 0 };
        return 0;
}

const PuffinBlobMeta *puffin_find_blob(const PuffinFooter *footer, uint64_t offset,
                                       uint64_t length) {
        for (size_t i = 0; i < footer->n_blobs; i++)
                if (footer->blobs[i].offset == offset && footer->blobs[i].length == length)
                        return &footer->blobs[i];
        return NULL;
}

int puffin_blob_property(const PuffinBlobMeta *blob, const char *key, Slice *ret_value) {
        const json_t *v = blob->properties ? json_object_get(blob->properties, key) : NULL;

        if (!v)
                return -ENOENT;
        if (!json_is_string(v))
                return -EBADMSG;
        *ret_value = slice_make(json_string_value(v), json_string_length(v));
        return 0;
}

static int puffin_blob_json(const PuffinBlobIn *in, uint64_t offset, json_t **ret) {
        _cleanup_(json_decrefp) json_t *o = NULL;
        json_t *fields, *props = NULL;

        if (!in->type || !in->type[0] || offset > INT64_MAX || in->data.len > INT64_MAX)
                return -EINVAL;
        fields = json_array();
        o = json_object();
        if (!o || !fields || json_object_set_new(o, "type", json_string(in->type)) < 0 ||
            json_object_set_new(o, "fields", fields) < 0)
                return -ENOMEM;
        for (size_t k = 0; k < in->n_fields; k++)
                if (json_array_append_new(fields, json_integer(in->fields[k])) < 0)
                        return -ENOMEM;
        /* The order Java's FileMetadataParser writes. */
        if (json_object_set_new(o, "snapshot-id", json_integer(in->snapshot_id)) < 0 ||
            json_object_set_new(o, "sequence-number", json_integer(in->sequence_number)) < 0 ||
            json_object_set_new(o, "offset", json_integer((json_int_t)offset)) < 0 ||
            json_object_set_new(o, "length", json_integer((json_int_t)in->data.len)) < 0)
                return -ENOMEM;
        if (in->n_properties > 0) {
                props = json_object();
                if (!props || json_object_set_new(o, "properties", props) < 0)
                        return -ENOMEM;
        }
        for (size_t k = 0; k < in->n_properties; k++) {
                const char *key = in->properties[2 * k], *value = in->properties[2 * k + 1];

                if (!key || !value)
                        return -EINVAL;
                if (json_object_set_new(props, key, json_string(value)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int puffin_footer_json(const PuffinBlobIn *blobs, size_t n_blobs,
                              const PuffinBlobOut *placed, const char *created_by, char **ret) {
        _cleanup_(json_decrefp) json_t *root = NULL;
        json_t *arr, *props;
        char *text;
        int r;

        arr = json_array();
        root = json_object();
        if (!root || !arr || json_object_set_new(root, "blobs", arr) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_blobs; i++) {
                json_t *o;

                r = puffin_blob_json(&blobs[i], placed[i].offset, &o);
                if (r < 0)
                        return r;
                if (json_array_append_new(arr, o) < 0)
                        return -ENOMEM;
        }
        if (created_by) {
                props = json_object();
                if (!props || json_object_set_new(root, "properties", props) < 0 ||
                    json_object_set_new(props, "created-by", json_string(created_by)) < 0)
                        return -ENOMEM;
        }
        text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!text)
                return -ENOMEM;
        *ret = text;
        return 0;
}

static int puffin_append_all(const PuffinBlobIn *blobs, size_t n_blobs, const char *created_by,
                             size_t base, Buf *out, PuffinBlobOut *placed) {
        _cleanup_(freep) char *payload = NULL;
        uint8_t trailer[PUFFIN_FOOTER_TRAILER_BYTES];
        size_t payload_len;
        int r;

        r = buf_append(out, PUFFIN_MAGIC, PUFFIN_MAGIC_BYTES);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n_blobs; i++) {
                placed[i] =
                        (PuffinBlobOut){ .offset = out->len - base, .length = blobs[i].data.len };
                r = buf_append(out, blobs[i].data.ptr, blobs[i].data.len);
                if (r < 0)
                        return r;
        }

        r = puffin_footer_json(blobs, n_blobs, placed, created_by, &payload);
        if (r < 0)
                return r;
        payload_len = strlen(payload);
        if (payload_len > INT32_MAX)
                return -E2BIG;
        puffin_put_le32(trailer, (uint32_t)payload_len);
        puffin_put_le32(trailer + 4, 0); /* flags: payload not compressed */
        memcpy(trailer + 8, PUFFIN_MAGIC, PUFFIN_MAGIC_BYTES);
        r = buf_append(out, PUFFIN_MAGIC, PUFFIN_MAGIC_BYTES);
        if (r >= 0)
                r = buf_append(out, payload, payload_len);
        if (r >= 0)
                r = buf_append(out, trailer, sizeof(trailer));
        return r;
}

int puffin_write(const PuffinBlobIn *blobs, size_t n_blobs, const char *created_by, Buf *out,
                 PuffinBlobOut *ret_blobs) {
        _cleanup_(freep) PuffinBlobOut *placed = NULL;
        size_t base = out->len;
        int r;

        if (n_blobs > 0) {
                placed = calloc(n_blobs, sizeof(*placed));
                if (!placed)
                        return -ENOMEM;
        }
        r = puffin_append_all(blobs, n_blobs, created_by, base, out, placed);
        if (r < 0) {
                out->len = base; /* nothing appended on failure */
                if (out->data)
                        out->data[base] = 0;
                return r;
        }
        if (n_blobs > 0)
                memcpy(ret_blobs, placed, n_blobs * sizeof(*placed));
        return 0;
}
