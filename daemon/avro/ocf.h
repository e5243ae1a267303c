/* SPDX-License-Identifier: Apache-2.0 */
/* Avro Object Container Files (Avro spec, "Object Container Files") in memory: the header
 * (magic, metadata map, sync marker) and block framing are ours, because avro-c has no API
 * for container metadata; datums are encoded and decoded by avro-c. Codecs: null, deflate.
 * Pure: no I/O. Every length read from input is checked before it is used. The reader is
 * ocf_reader.c, the writer ocf_writer.c. */
#pragma once

#include <avro.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/slice.h"

typedef enum OcfCodec {
        OCF_CODEC_NULL,
        OCF_CODEC_DEFLATE, /* raw DEFLATE (RFC 1951), no zlib header or trailer */
} OcfCodec;

/* Hard limits for input we do not control. Java flushes a block every ~64 KB and a single
 * manifest entry stays far below a megabyte, so these only ever stop hostile files. */
#define OCF_MAX_BLOCK_BYTES (16u << 20) /* decompressed size of one block */
#define OCF_MAX_META_ENTRIES 1024u      /* header metadata pairs */
#define OCF_MAX_DATUM_NODES (4u << 20)  /* schema nodes visited decoding one datum */

/* Block size at which the writer starts a new block (Java's DataFileWriter default). */
#define OCF_WRITER_BLOCK_BYTES 64000u

/* The container framing both ocf_reader.c and ocf_writer.c follow; nothing for other modules. */
#define OCF_MAGIC "Obj\x01"
#define OCF_MAGIC_LEN 4
#define OCF_SYNC_LEN 16
/* A zigzag varint of a long takes at most 10 bytes (Avro spec, "Binary Encoding"). */
#define OCF_MAX_VARINT_LEN 10

/* A header metadata pair, as the reader and the writer keep them. */
typedef struct OcfMeta {
        char *key;   /* owned, NUL-terminated */
        Slice value; /* reader: borrowed from the input; writer: owned copy */
} OcfMeta;

/* Reads an OCF held in memory. The bytes are borrowed: they must outlive the reader, which
 * hands out slices into them. Owned by whoever opened it. */
typedef struct OcfReader OcfReader;

/* Parses the header: magic "Obj\x01", metadata map, sync marker; parses "avro.schema" with
 * avro-c and with jansson (avro-c drops custom attributes such as Iceberg's "field-id") and
 * checks "avro.codec". Returns 0, -EBADMSG for input that is not a valid OCF, -EOPNOTSUPP for
 * an unsupported codec, -E2BIG past a limit, -ENOMEM; the reason is in *e. */
int ocf_reader_open(Slice bytes, OcfReader **ret_reader, Error *e);
OcfReader *ocf_reader_free(OcfReader *r);
DEFINE_CLEANUP_FUNC(OcfReader, ocf_reader_free);

/* The value of a header metadata key, borrowed from the input; .ptr is NULL when absent. */
Slice ocf_reader_meta(const OcfReader *r, const char *key);
/* Parses a metadata value written as decimal text (Iceberg's "snapshot-id", "format-version"...).
 * Returns 1 with the number, 0 when the key is absent, -EBADMSG when it is no int64. */
int ocf_reader_meta_i64(const OcfReader *r, const char *key, int64_t *ret);
/* Copies a metadata value as a C string (malloc()ed). Returns 1, 0 when absent, -EBADMSG when
 * it contains a NUL byte, -ENOMEM. */
int ocf_reader_meta_strdup(const OcfReader *r, const char *key, char **ret);
/* Number of metadata pairs and the i-th one (key NUL-terminated, both borrowed). */
size_t ocf_reader_n_meta(const OcfReader *r);
void ocf_reader_meta_at(const OcfReader *r, size_t i, const char **ret_key, Slice *ret_value);
/* The writer schema as avro-c sees it and as JSON (with field ids). Both borrowed. */
avro_schema_t ocf_reader_schema(const OcfReader *r);
const json_t *ocf_reader_schema_json(const OcfReader *r);
OcfCodec ocf_reader_codec(const OcfReader *r);

/* Loads the next block: reads count and size, decompresses, checks the sync marker after it.
 * Returns 1 when a block was loaded, 0 at the end of the file, or an error as above with
 * the block index in the message ("block 3: sync marker mismatch"). Datums of a block that
 * were not read are skipped. */
int ocf_reader_next_block(OcfReader *r, Error *e);
/* Datums in the current block not read yet. */
int64_t ocf_reader_block_remaining(const OcfReader *r);

/* One block of a file as stored, found by ocf_reader_scan_block() without decoding it. */
typedef struct OcfBlock {
        uint64_t index; /* 0 for the file's first block */
        int64_t count;  /* datums in it */
        Slice data;     /* its bytes as stored, in the file's codec; borrowed from the input */
        size_t offset;  /* where it starts in the file (its datum count) */
        size_t end;     /* where it ends: after its sync marker */
} OcfBlock;

/* The block scanner: steps over the next block without decompressing it. Checks its framing
 * (count, size, truncation), the sync marker after it and the size limits; a null-codec
 * block's count is checked against its bytes too (a deflate block's by
 * ocf_reader_inflate_block()). Returns 1 with *ret_block (valid while the input is), 0 at the
 * end of the file, or -EBADMSG, -E2BIG with the block index in *e. Datums of the current
 * block not read are skipped; ocf_reader_read() goes on after the scanned block. */
int ocf_reader_scan_block(OcfReader *r, OcfBlock *ret_block, Error *e);
/* Decompresses a scanned block into *out (replacing its content), never past OCF_MAX_BLOCK_BYTES
 * or out's maximum (-E2BIG), and checks its count against its bytes. The result is the
 * block's datums, encoded. Returns 0, -EBADMSG, -E2BIG or -ENOMEM with the reason in *e. */
int ocf_reader_inflate_block(const OcfReader *r, const OcfBlock *block, Buf *out, Error *e);
/* Where the file's first block starts: the header's length. */
size_t ocf_reader_data_offset(const OcfReader *r);
/* The file the reader reads (borrowed) and its sync marker (OCF_SYNC_LEN bytes, borrowed). */
Slice ocf_reader_bytes(const OcfReader *r);
const uint8_t *ocf_reader_sync(const OcfReader *r);

/* Decodes the next datum, loading blocks as needed. Returns 1 and a value borrowed from the
 * reader (valid until the next call), 0 at the end of the file, or <0 with the reason. The
 * datum's bytes are checked against its schema before avro-c sees them. */
int ocf_reader_read(OcfReader *r, avro_value_t **ret_value, Error *e);
/* Refuses (-E2BIG, naming `name`, which must outlive the reader) every later datum of more
 * than max_bytes encoded bytes, before avro-c decodes it; 0: none but the block's bound. */
void ocf_reader_limit_datum_bytes(OcfReader *r, size_t max_bytes, const char *name);
/* Index of the datum last returned by ocf_reader_read(), counted over the whole file. */
uint64_t ocf_reader_datum_index(const OcfReader *r);

/* Writes an OCF into memory. Owned by its creator. */
typedef struct OcfWriter OcfWriter;

/* Creates a writer for a schema given as JSON text, which is written to "avro.schema"
 * verbatim in content (compacted) so that custom attributes (field ids) survive. Returns 0,
 * -EINVAL for a schema avro-c or jansson rejects (see avro_strerror()), -ENOMEM, or the
 * -errno of getrandom() for the sync marker. */
int ocf_writer_new(const char *schema_json, OcfCodec codec, OcfWriter **ret_writer);
OcfWriter *ocf_writer_free(OcfWriter *w);
DEFINE_CLEANUP_FUNC(OcfWriter, ocf_writer_free);

/* The schema (borrowed) and its JSON (borrowed), to build values and find fields by id. */
avro_schema_t ocf_writer_schema(const OcfWriter *w);
const json_t *ocf_writer_schema_json(const OcfWriter *w);
/* Creates an empty generic value of the writer's schema; the caller avro_value_decref()s it. */
int ocf_writer_value_new(OcfWriter *w, avro_value_t *ret_value);

/* Sets a metadata pair (a copy is kept). Only before the first datum (-EBUSY after);
 * "avro.*" keys are reserved (-EINVAL); setting a key twice replaces the value. */
int ocf_writer_set_meta(OcfWriter *w, const char *key, Slice value);
/* Encodes one datum (a value of the writer's schema). Returns 0, -EIO with avro_strerror()
 * set when avro-c cannot encode it, -E2BIG, -ENOMEM. */
int ocf_writer_append(OcfWriter *w, avro_value_t *value);
/* Appends datums already encoded in the writer's schema (the decompressed content of a block
 * of a file whose writer schema equals this one; not checked) to the block being filled. Never
 * ends a block: the caller chooses where blocks end (ocf_writer_end_block()). Returns 0,
 * -EBUSY once finished, -E2BIG when the block would pass OCF_MAX_BLOCK_BYTES, -ENOMEM. */
int ocf_writer_append_encoded(OcfWriter *w, Slice datums, int64_t count);
/* Ends the block being filled (nothing when it is empty). Returns 0, -EBUSY, -EIO, -ENOMEM. */
int ocf_writer_end_block(OcfWriter *w);
/* Appends a block stored in the writer's codec (another file's block as
 * ocf_reader_scan_block() found it) byte for byte, followed by this file's sync marker, after
 * ending the block being filled. Returns 0, -EBUSY, -EINVAL (negative count), -ENOMEM. */
int ocf_writer_append_block(OcfWriter *w, int64_t count, Slice stored);
/* Datums and encoded bytes in the block being filled. */
void ocf_writer_pending(const OcfWriter *w, int64_t *ret_count, size_t *ret_bytes);
/* Appends to *out the file r reads with n_extra more header metadata pairs after its own: the
 * same magic, pairs (in their order, as stored), sync marker and blocks, byte for byte, so that
 * every datum reads the same. Returns 0, -EEXIST when the file has a key of extra already,
 * -EINVAL for an "avro.*" key, -E2BIG when *out would pass its maximum, -ENOMEM; *out is left
 * as it was on failure. */
int ocf_writer_copy_with_meta(const OcfReader *r, const OcfMeta *extra, size_t n_extra, Buf *out);
/* Appends the whole file (header, then the blocks) to *out. The writer is spent afterwards
 * (-EBUSY on further calls). Returns 0, -E2BIG when *out would pass its maximum, -ENOMEM. */
int ocf_writer_finish(OcfWriter *w, Buf *out);
