/* SPDX-License-Identifier: Apache-2.0 */
/* Puffin files (format/puffin-spec.md): the footer read from untrusted bytes, and whole files
 * written from blobs already encoded. Pure: no I/O; every offset, length and count is checked
 * against the bytes and the file size before use. Knows no blob type (see dv.h). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* "PFA1", at the start of the file and at both ends of the footer. */
#define PUFFIN_MAGIC "PFA1"
#define PUFFIN_MAGIC_BYTES 4
/* After the footer payload: payload size (i32 LE), flags (4 bytes), magic. */
#define PUFFIN_FOOTER_TRAILER_BYTES 12
/* The smallest file: magic, then a footer of magic, payload ("{}" at least), trailer. */
#define PUFFIN_MIN_FILE_BYTES (2 * PUFFIN_MAGIC_BYTES + 2 + PUFFIN_FOOTER_TRAILER_BYTES)
/* Flags byte 0, bit 0: the footer payload is LZ4-compressed (refused: Java writes it plain). */
#define PUFFIN_FLAG_FOOTER_COMPRESSED 0x01u

enum {
        _PUFFIN_E_SUCCESS,
        PUFFIN_E_SHORT, /* the tail holds the trailer, not the whole footer: read *ret_need
                         * bytes from the end of the file, then again */
};

/* One blob as the footer describes it. Strings and JSON values are borrowed from the footer
 * that holds it. */
typedef struct PuffinBlobMeta {
        Slice type;               /* "type" */
        int64_t snapshot_id;      /* "snapshot-id" */
        int64_t sequence_number;  /* "sequence-number" */
        uint64_t offset;          /* "offset": from the start of the file, >= 4 */
        uint64_t length;          /* "length": ends before the footer */
        Slice compression_codec;  /* "compression-codec": ptr NULL when absent or null */
        const json_t *fields;     /* "fields": array of int32 field ids */
        const json_t *properties; /* "properties": object of strings, or NULL */
} PuffinBlobMeta;

/* A parsed footer. Owned by the caller; puffin_footer_deinit frees it. */
typedef struct PuffinFooter {
        json_t *root;          /* the payload, parsed */
        PuffinBlobMeta *blobs; /* in footer order */
        size_t n_blobs;
        uint64_t footer_start;  /* offset of the footer's first magic: blobs end before it */
        uint64_t payload_bytes; /* FooterPayloadSize */
        uint32_t flags;         /* the flags, little-endian as stored */
} PuffinFooter;

/* Parses the footer of a Puffin file of file_size bytes whose last tail.len bytes are tail (the
 * whole file when tail.len == file_size; the leading magic is then checked too). Returns 0 and
 * fills *ret_footer (free with puffin_footer_deinit); PUFFIN_E_SHORT with *ret_need when the tail
 * is too short; -EFBIG when the payload is longer than max_payload_bytes; -EOPNOTSUPP for a
 * compressed footer; -EBADMSG with the reason when the bytes are not a valid Puffin footer or a
 * blob lies outside the file's blob area. */
int puffin_read_footer(Slice tail, uint64_t file_size, uint64_t max_payload_bytes,
                       PuffinFooter *ret_footer, uint64_t *ret_need, Error *error);
/* Frees what the footer holds; the footer is empty afterwards. Accepts an empty footer. */
void puffin_footer_deinit(PuffinFooter *footer);

/* The blob at exactly offset and length, or NULL. */
const PuffinBlobMeta *puffin_find_blob(const PuffinFooter *footer, uint64_t offset,
                                       uint64_t length);
/* The string property key of blob in *ret_value. Returns 0, -ENOENT when absent, -EBADMSG
 * when it is not a string. */
int puffin_blob_property(const PuffinBlobMeta *blob, const char *key, Slice *ret_value);

/* A blob to write: its bytes (already encoded, uncompressed) and its footer entry. */
typedef struct PuffinBlobIn {
        const char *type;
        const int32_t *fields;
        size_t n_fields;
        int64_t snapshot_id;
        int64_t sequence_number;
        Slice data;
        const char *const *properties; /* key, value, key, value, …: 2 * n_properties */
        size_t n_properties;
} PuffinBlobIn;

/* Where a written blob went: the manifest entry's content_offset and content_size_in_bytes. */
typedef struct PuffinBlobOut {
        uint64_t offset;
        uint64_t length;
} PuffinBlobOut;

/* Appends a whole Puffin file to out (empty): magic, the blobs in order, the footer with an
 * uncompressed payload and the file property created-by (when not NULL). ret_blobs (n_blobs
 * entries) gets each blob's offset and length. Returns 0, -EINVAL for an empty type or a
 * property that is NULL, -E2BIG past out's maximum, -ENOMEM. */
int puffin_write(const PuffinBlobIn *blobs, size_t n_blobs, const char *created_by, Buf *out,
                 PuffinBlobOut *ret_blobs);
