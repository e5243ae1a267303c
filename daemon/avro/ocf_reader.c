/* SPDX-License-Identifier: Apache-2.0 */
/* Reading Avro Object Container Files in memory (see ocf.h). Reading never trusts a length:
 * every datum is walked against its schema first (ocf_datum_check) because avro-c 1.11
 * allocates whatever a length prefix claims and loops over whatever an array count claims. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "avro/ocf.h"
#include "util/parse.h"

#define OCF_MAX_SCHEMA_DEPTH 64u
/* Compressed input is at most this; zlib counts in uInt. */
#define OCF_MAX_COMPRESSED_BYTES (OCF_MAX_BLOCK_BYTES + OCF_MAX_BLOCK_BYTES / 8)
static_assert(OCF_MAX_COMPRESSED_BYTES <= UINT32_MAX && sizeof(uInt) >= 4,
              "block sizes fit zlib's uInt");

/* avro-c 1.11 (Debian) keeps its last error text in one process-wide buffer, not per thread.
 * Schema parsing, the one avro-c call on input whose message we report, holds this lock
 * until the text is copied; datums never reach avro-c unchecked, so their decoding does
 * not report avro-c's text and runs unlocked. */
static pthread_mutex_t ocf_avro_error_lock = PTHREAD_MUTEX_INITIALIZER;

struct OcfReader {
        Slice bytes;        /* borrowed: the whole file */
        size_t pos;         /* next unread byte of `bytes` */
        size_t data_offset; /* where the first block starts */
        OcfMeta *meta;
        size_t n_meta;
        uint8_t sync[OCF_SYNC_LEN];
        OcfCodec codec;
        avro_schema_t schema;
        json_t *schema_json;
        avro_value_iface_t *iface;
        avro_value_t value;
        bool has_value;
        avro_reader_t avro_reader;

        Buf block; /* the current block, decompressed */
        size_t block_pos;
        int64_t block_remaining; /* datums not read yet */
        uint64_t n_blocks;       /* blocks loaded so far; the current one is n_blocks - 1 */
        uint64_t n_datums;       /* datums returned so far */
        size_t max_datum_bytes;  /* 0: a datum may fill its block */
        const char *max_datum_name;
};

static bool ocf_is_printable(Slice s) {
        for (size_t i = 0; i < s.len; i++)
                if (s.ptr[i] < 0x20 || s.ptr[i] > 0x7e)
                        return false;
        return true;
}

/* A bounded view over input bytes; every read checks what is left first. */
typedef struct Cursor {
        const uint8_t *p;
        size_t left;
} Cursor;

static int cursor_read_long(Cursor *c, int64_t *ret) {
        uint64_t v = 0;

        for (unsigned i = 0; i < OCF_MAX_VARINT_LEN; i++) {
                uint8_t b;

                if (c->left == 0)
                        return -EBADMSG;
                b = *c->p++;
                c->left--;
                /* The tenth byte may only carry the top bit of the 64-bit value. */
                if (i == OCF_MAX_VARINT_LEN - 1 && b > 1)
                        return -EOVERFLOW;
                v |= (uint64_t)(b & 0x7f) << (7 * i);
                if (!(b & 0x80)) {
                        *ret = (int64_t)((v >> 1) ^ (~(v & 1) + 1));
                        return 0;
                }
        }
        return -EOVERFLOW;
}

static int cursor_read_bytes(Cursor *c, size_t n, const uint8_t **ret) {
        if (n > c->left)
                return -EBADMSG;
        *ret = c->p;
        c->p += n;
        c->left -= n;
        return 0;
}

/* Reads an Avro `bytes`/`string`: a long length, then that many bytes. */
static int cursor_read_slice(Cursor *c, Slice *ret) {
        const uint8_t *p;
        int64_t n;
        int r;

        r = cursor_read_long(c, &n);
        if (r < 0)
                return r;
        if (n < 0 || (uint64_t)n > c->left)
                return -EBADMSG;
        r = cursor_read_bytes(c, (size_t)n, &p);
        if (r < 0)
                return r;
        *ret = slice_make(p, (size_t)n);
        return 0;
}

typedef struct DatumCheck {
        uint64_t nodes_left;
        Error *e;
} DatumCheck;

static int ocf_datum_check(avro_schema_t s, Cursor *c, unsigned depth, DatumCheck *dc);

/* Array and map bodies: blocks of `count` items; a negative count is followed by the
 * block's byte size (Avro spec, "Complex Types"). */
static int ocf_datum_check_items(avro_schema_t s, Cursor *c, unsigned depth, DatumCheck *dc) {
        bool is_map = avro_typeof(s) == AVRO_MAP;
        avro_schema_t items = is_map ? avro_schema_map_values(s) : avro_schema_array_items(s);
        int64_t count;
        int r;

        for (;;) {
                r = cursor_read_long(c, &count);
                if (r < 0)
                        return error_set(dc->e, -EBADMSG, "truncated %s block count",
                                         is_map ? "map" : "array");
                if (count == 0)
                        return 0;
                if (count < 0) {
                        int64_t size;

                        if (count == INT64_MIN)
                                return error_set(dc->e, -EBADMSG, "invalid %s block count",
                                                 is_map ? "map" : "array");
                        count = -count;
                        r = cursor_read_long(c, &size);
                        if (r < 0 || size < 0 || (uint64_t)size > c->left)
                                return error_set(dc->e, -EBADMSG, "invalid %s block size",
                                                 is_map ? "map" : "array");
                }
                /* Every item costs at least one node; this bounds items of zero-byte types. */
                if ((uint64_t)count > dc->nodes_left)
                        return error_set(dc->e, -E2BIG,
                                         "%s block of %" PRId64 " items is too large",
                                         is_map ? "map" : "array", count);
                for (int64_t i = 0; i < count; i++) {
                        if (is_map) {
                                Slice key;

                                if (cursor_read_slice(c, &key) < 0)
                                        return error_set(dc->e, -EBADMSG, "truncated map key");
                        }
                        r = ocf_datum_check(items, c, depth + 1, dc);
                        if (r < 0)
                                return r;
                }
        }
}

/* Walks one datum of schema `s`, checking every length, count, index and range the way
 * avro-c will read it, so that avro-c never sees bytes it could overread or over-allocate. */
static int ocf_datum_check(avro_schema_t s, Cursor *c, unsigned depth, DatumCheck *dc) {
        const uint8_t *p;
        int64_t v;
        Slice sl;
        int r;

        if (depth > OCF_MAX_SCHEMA_DEPTH)
                return error_set(dc->e, -E2BIG, "datum nests deeper than %u levels",
                                 OCF_MAX_SCHEMA_DEPTH);
        if (dc->nodes_left == 0)
                return error_set(dc->e, -E2BIG, "datum has more than %u values",
                                 OCF_MAX_DATUM_NODES);
        dc->nodes_left--;

        switch (avro_typeof(s)) {
        case AVRO_NULL:
                return 0;
        case AVRO_BOOLEAN:
                if (cursor_read_bytes(c, 1, &p) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated boolean");
                if (*p > 1)
                        return error_set(dc->e, -EBADMSG, "invalid boolean byte %u", *p);
                return 0;
        case AVRO_INT32:
                r = cursor_read_long(c, &v);
                if (r < 0)
                        return error_set(dc->e, -EBADMSG, "truncated or overlong int");
                if (v < INT32_MIN || v > INT32_MAX)
                        return error_set(dc->e, -EBADMSG, "int value %" PRId64 " out of range", v);
                return 0;
        case AVRO_INT64:
                if (cursor_read_long(c, &v) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated or overlong long");
                return 0;
        case AVRO_FLOAT:
                if (cursor_read_bytes(c, 4, &p) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated float");
                return 0;
        case AVRO_DOUBLE:
                if (cursor_read_bytes(c, 8, &p) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated double");
                return 0;
        case AVRO_STRING:
        case AVRO_BYTES:
                if (cursor_read_slice(c, &sl) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated %s or invalid length",
                                         avro_typeof(s) == AVRO_STRING ? "string" : "bytes");
                return 0;
        case AVRO_FIXED:
                v = avro_schema_fixed_size(s);
                if (v < 0 || cursor_read_bytes(c, (size_t)v, &p) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated fixed");
                return 0;
        case AVRO_ENUM:
                if (cursor_read_long(c, &v) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated enum");
                if (v < 0 || v >= avro_schema_enum_number_of_symbols(s))
                        return error_set(dc->e, -EBADMSG, "enum index %" PRId64 " out of range", v);
                return 0;
        case AVRO_UNION:
                if (cursor_read_long(c, &v) < 0)
                        return error_set(dc->e, -EBADMSG, "truncated union index");
                if (v < 0 || (uint64_t)v >= avro_schema_union_size(s))
                        return error_set(dc->e, -EBADMSG, "union index %" PRId64 " out of range",
                                         v);
                return ocf_datum_check(avro_schema_union_branch(s, (int)v), c, depth + 1, dc);
        case AVRO_RECORD:
                for (size_t i = 0, n = avro_schema_record_size(s); i < n; i++) {
                        r = ocf_datum_check(avro_schema_record_field_get_by_index(s, (int)i), c,
                                            depth + 1, dc);
                        if (r < 0)
                                return r;
                }
                return 0;
        case AVRO_ARRAY:
        case AVRO_MAP:
                return ocf_datum_check_items(s, c, depth, dc);
        case AVRO_LINK:
                return ocf_datum_check(avro_schema_link_target(s), c, depth + 1, dc);
        default:
                return error_set(dc->e, -EBADMSG, "unsupported schema type %d",
                                 (int)avro_typeof(s));
        }
}

OcfReader *ocf_reader_free(OcfReader *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_meta; i++)
                free(r->meta[i].key);
        free(r->meta);
        if (r->has_value)
                avro_value_decref(&r->value);
        if (r->iface)
                avro_value_iface_decref(r->iface);
        if (r->schema)
                avro_schema_decref(r->schema);
        if (r->avro_reader)
                avro_reader_free(r->avro_reader);
        json_decref(r->schema_json);
        buf_deinit(&r->block);
        free(r);
        return NULL;
}

static int ocf_reader_parse_meta(OcfReader *r, Cursor *c, Error *e) {
        for (;;) {
                int64_t count;

                if (cursor_read_long(c, &count) < 0)
                        return error_set(e, -EBADMSG, "truncated header metadata");
                if (count == 0)
                        return 0;
                if (count < 0) {
                        int64_t size;

                        if (count == INT64_MIN)
                                return error_set(e, -EBADMSG, "invalid header metadata count");
                        count = -count;
                        if (cursor_read_long(c, &size) < 0 || size < 0)
                                return error_set(e, -EBADMSG, "invalid header metadata block size");
                }
                if ((uint64_t)count > OCF_MAX_META_ENTRIES - r->n_meta)
                        return error_set(e, -E2BIG, "header has more than %u metadata entries",
                                         OCF_MAX_META_ENTRIES);
                for (int64_t i = 0; i < count; i++) {
                        OcfMeta *m;
                        Slice key, value;

                        if (cursor_read_slice(c, &key) < 0 || cursor_read_slice(c, &value) < 0)
                                return error_set(e, -EBADMSG, "truncated header metadata");
                        if (memchr(key.ptr, 0, key.len))
                                return error_set(e, -EBADMSG,
                                                 "header metadata key contains a NUL byte");
                        for (size_t j = 0; j < r->n_meta; j++)
                                if (slice_eq_str(key, r->meta[j].key))
                                        return error_set(e, -EBADMSG,
                                                         "duplicate header metadata key '%.*s'",
                                                         (int)key.len, (const char *)key.ptr);
                        m = reallocarray(r->meta, r->n_meta + 1, sizeof(*r->meta));
                        if (!m)
                                return -ENOMEM;
                        r->meta = m;
                        m[r->n_meta].key = strndup((const char *)key.ptr, key.len);
                        if (!m[r->n_meta].key)
                                return -ENOMEM;
                        m[r->n_meta].value = value;
                        r->n_meta++;
                }
        }
}

/* avro-c 1.11 leaks the half-built schema when a named type is defined twice ("Cannot save
 * record schema"), so such schemas are refused before avro-c sees them. Names are compared
 * without their namespace: stricter than Avro, never a problem for Iceberg, whose record
 * names derive from field ids (r102, k117_v118). */
static int ocf_schema_check_names(const json_t *j, const char ***names, size_t *n_names,
                                  unsigned depth) {
        const char *type, *name, *dot;
        const json_t *v;
        size_t i;
        int r;

        if (depth > 2 * OCF_MAX_SCHEMA_DEPTH)
                return -E2BIG;
        if (json_is_array(j)) {
                json_array_foreach (j, i, v) {
                        r = ocf_schema_check_names(v, names, n_names, depth + 1);
                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (!json_is_object(j))
                return 0;

        v = json_object_get(j, "type");
        if (json_is_object(v) || json_is_array(v))
                return ocf_schema_check_names(v, names, n_names, depth + 1);
        type = json_string_value(v);
        name = json_string_value(json_object_get(j, "name"));
        if (type && name &&
            (strcmp(type, "record") == 0 || strcmp(type, "error") == 0 ||
             strcmp(type, "enum") == 0 || strcmp(type, "fixed") == 0)) {
                const char **p;

                dot = strrchr(name, '.');
                name = dot ? dot + 1 : name;
                for (i = 0; i < *n_names; i++)
                        if (strcmp((*names)[i], name) == 0)
                                return -EEXIST;
                p = reallocarray(*names, *n_names + 1, sizeof(**names));
                if (!p)
                        return -ENOMEM;
                *names = p;
                p[(*n_names)++] = name;
        }
        json_array_foreach (json_object_get(j, "fields"), i, v) {
                r = ocf_schema_check_names(json_object_get(v, "type"), names, n_names, depth + 1);
                if (r < 0)
                        return r;
        }
        r = ocf_schema_check_names(json_object_get(j, "items"), names, n_names, depth + 1);
        if (r >= 0)
                r = ocf_schema_check_names(json_object_get(j, "values"), names, n_names, depth + 1);
        return r;
}

static int ocf_schema_check(const json_t *schema, Error *e) {
        const char **names = NULL;
        size_t n_names = 0;
        int r;

        r = ocf_schema_check_names(schema, &names, &n_names, 0);
        free(names);
        if (r == -EEXIST)
                return error_set(e, -EBADMSG, "invalid avro.schema: a type name is defined twice");
        if (r == -E2BIG)
                return error_set(e, -E2BIG, "avro.schema nests too deep");
        if (r < 0)
                return error_set(e, r, "out of memory");
        return 0;
}

static int ocf_reader_parse_schema(OcfReader *r, Error *e) {
        json_error_t jerr;
        Slice text, codec;
        int rr;

        codec = ocf_reader_meta(r, "avro.codec");
        if (!codec.ptr || slice_eq_str(codec, "null"))
                r->codec = OCF_CODEC_NULL;
        else if (slice_eq_str(codec, "deflate"))
                r->codec = OCF_CODEC_DEFLATE;
        else if (codec.len <= 64 && ocf_is_printable(codec))
                return error_set(e, -EOPNOTSUPP, "unknown codec '%.*s'", (int)codec.len,
                                 (const char *)codec.ptr);
        else
                return error_set(e, -EOPNOTSUPP, "unknown codec (%zu bytes of binary)", codec.len);

        text = ocf_reader_meta(r, "avro.schema");
        if (!text.ptr)
                return error_set(e, -EBADMSG, "header has no avro.schema");
        /* jansson keeps the attributes avro-c drops (field-id, element-id, logicalType). */
        r->schema_json = json_loadb((const char *)text.ptr, text.len,
                                    JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
        if (!r->schema_json)
                return error_set(e, -EBADMSG, "avro.schema is not JSON: line %d column %d: %s",
                                 jerr.line, jerr.column, jerr.text);
        rr = ocf_schema_check(r->schema_json, e);
        if (rr < 0)
                return rr;
        (void)pthread_mutex_lock(&ocf_avro_error_lock);
        rr = 0;
        if (avro_schema_from_json_length((const char *)text.ptr, text.len, &r->schema) != 0) {
                r->schema = NULL;
                rr = error_set(e, -EBADMSG, "invalid avro.schema: %s", avro_strerror());
        } else {
                r->iface = avro_generic_class_from_schema(r->schema);
                if (!r->iface)
                        rr = error_set(e, -EBADMSG, "unusable avro.schema: %s", avro_strerror());
        }
        (void)pthread_mutex_unlock(&ocf_avro_error_lock);
        if (rr < 0)
                return rr;
        if (avro_generic_value_new(r->iface, &r->value) != 0)
                return -ENOMEM;
        r->has_value = true;
        r->avro_reader = avro_reader_memory("", 0);
        if (!r->avro_reader)
                return -ENOMEM;
        return 0;
}

int ocf_reader_open(Slice bytes, OcfReader **ret_reader, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *r = NULL;
        const uint8_t *p;
        Cursor c;
        int rr;

        if (bytes.len < OCF_MAGIC_LEN || memcmp(bytes.ptr, OCF_MAGIC, OCF_MAGIC_LEN) != 0)
                return error_set(e, -EBADMSG, "not an Avro container file (bad magic)");

        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->bytes = bytes;
        buf_init(&r->block, OCF_MAX_BLOCK_BYTES);

        c = (Cursor){ bytes.ptr + OCF_MAGIC_LEN, bytes.len - OCF_MAGIC_LEN };
        rr = ocf_reader_parse_meta(r, &c, e);
        if (rr < 0)
                return rr == -ENOMEM ? error_set(e, rr, "out of memory") : rr;
        if (cursor_read_bytes(&c, OCF_SYNC_LEN, &p) < 0)
                return error_set(e, -EBADMSG, "truncated header sync marker");
        memcpy(r->sync, p, OCF_SYNC_LEN);
        r->pos = r->data_offset = bytes.len - c.left;

        rr = ocf_reader_parse_schema(r, e);
        if (rr < 0)
                return rr == -ENOMEM ? error_set(e, rr, "out of memory") : rr;

        *ret_reader = TAKE_PTR(r);
        return 0;
}

Slice ocf_reader_meta(const OcfReader *r, const char *key) {
        for (size_t i = 0; i < r->n_meta; i++)
                if (strcmp(r->meta[i].key, key) == 0)
                        return r->meta[i].value;
        return SLICE_NULL;
}

int ocf_reader_meta_i64(const OcfReader *r, const char *key, int64_t *ret) {
        Slice v = ocf_reader_meta(r, key);
        char text[32];

        if (!v.ptr)
                return 0;
        if (v.len == 0 || v.len >= sizeof(text) || memchr(v.ptr, 0, v.len))
                return -EBADMSG;
        memcpy(text, v.ptr, v.len);
        text[v.len] = 0;
        return parse_i64(text, ret) < 0 ? -EBADMSG : 1;
}

int ocf_reader_meta_strdup(const OcfReader *r, const char *key, char **ret) {
        Slice v = ocf_reader_meta(r, key);
        char *s;

        if (!v.ptr)
                return 0;
        if (memchr(v.ptr, 0, v.len))
                return -EBADMSG;
        s = strndup((const char *)v.ptr, v.len);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 1;
}

size_t ocf_reader_n_meta(const OcfReader *r) {
        return r->n_meta;
}

void ocf_reader_meta_at(const OcfReader *r, size_t i, const char **ret_key, Slice *ret_value) {
        assert(i < r->n_meta);
        *ret_key = r->meta[i].key;
        *ret_value = r->meta[i].value;
}

avro_schema_t ocf_reader_schema(const OcfReader *r) {
        return r->schema;
}

const json_t *ocf_reader_schema_json(const OcfReader *r) {
        return r->schema_json;
}

OcfCodec ocf_reader_codec(const OcfReader *r) {
        return r->codec;
}

int64_t ocf_reader_block_remaining(const OcfReader *r) {
        return r->block_remaining;
}

void ocf_reader_limit_datum_bytes(OcfReader *r, size_t max_bytes, const char *name) {
        r->max_datum_bytes = max_bytes;
        r->max_datum_name = name;
}

uint64_t ocf_reader_datum_index(const OcfReader *r) {
        return r->n_datums ? r->n_datums - 1 : 0;
}

/* Inflates raw DEFLATE (window bits -15: no zlib header, no adler32 trailer) into *out, never
 * producing more than `max` bytes. */
static int ocf_inflate(Slice in, Buf *out, size_t max, uint64_t block, Error *e) {
        z_stream z = { 0 };
        int zr, r = 0;

        out->len = 0;
        if (inflateInit2(&z, -15) != Z_OK)
                return error_set(e, -ENOMEM, "block %" PRIu64 ": cannot initialize inflate", block);
        z.next_in = (Bytef *)(uintptr_t)in.ptr;
        z.avail_in = (uInt)in.len;

        for (;;) {
                size_t room = out->cap > out->len ? out->cap - out->len - 1 : 0;

                if (room > max - out->len)
                        room = max - out->len;
                if (room == 0) {
                        size_t want = out->len > 65536 ? out->len : 65536;

                        if (out->len >= max) {
                                r = error_set(e, -E2BIG,
                                              "block %" PRIu64
                                              ": decompressed size exceeds %zu bytes",
                                              block, max);
                                break;
                        }
                        if (want > max - out->len)
                                want = max - out->len;
                        r = buf_reserve(out, want);
                        if (r < 0) {
                                r = error_set(e, r, "block %" PRIu64 ": out of memory", block);
                                break;
                        }
                        continue;
                }
                z.next_out = out->data + out->len;
                z.avail_out = (uInt)room;
                zr = inflate(&z, Z_NO_FLUSH);
                out->len += room - z.avail_out;
                /* Bytes after the end of the stream are ignored, as Java's and zlib's readers
                 * do: fastavro keeps 3 of the 4 zlib adler32 trailer bytes in every block. */
                if (zr == Z_STREAM_END)
                        break;
                if (zr == Z_OK)
                        continue;
                if (zr == Z_BUF_ERROR && z.avail_in == 0) {
                        r = error_set(e, -EBADMSG, "block %" PRIu64 ": truncated deflate stream",
                                      block);
                        break;
                }
                if (zr == Z_BUF_ERROR)
                        continue;
                r = error_set(e, zr == Z_MEM_ERROR ? -ENOMEM : -EBADMSG,
                              "block %" PRIu64 ": invalid deflate data: %s", block,
                              z.msg ? z.msg : "unknown error");
                break;
        }
        (void)inflateEnd(&z);
        if (out->data)
                out->data[out->len] = 0;
        return r;
}

/* Each datum takes at least one byte unless its schema encodes to nothing; a larger count is
 * either corrupt or an attempt to make us loop. */
static int ocf_check_count(uint64_t block, int64_t count, size_t raw_len, Error *e) {
        if ((uint64_t)count > (raw_len > 0 ? raw_len : 1) || (count == 0 && raw_len > 0))
                return error_set(e, -EBADMSG,
                                 "block %" PRIu64 ": %" PRId64 " datums cannot fill %zu bytes",
                                 block, count, raw_len);
        return 0;
}

int ocf_reader_scan_block(OcfReader *r, OcfBlock *ret_block, Error *e) {
        uint64_t block = r->n_blocks;
        const uint8_t *data, *sync;
        int64_t count, size;
        Cursor c;
        int rr;

        /* Whatever was left of the current block is skipped. */
        r->block_remaining = 0;
        r->block_pos = 0;
        r->block.len = 0;

        c = (Cursor){ r->bytes.ptr + r->pos, r->bytes.len - r->pos };
        if (c.left == 0)
                return 0;
        if (cursor_read_long(&c, &count) < 0 || cursor_read_long(&c, &size) < 0)
                return error_set(e, -EBADMSG, "block %" PRIu64 ": truncated block header", block);
        if (count < 0 || size < 0)
                return error_set(e, -EBADMSG, "block %" PRIu64 ": negative datum count or size",
                                 block);
        if ((uint64_t)size > c.left)
                return error_set(e, -EBADMSG,
                                 "block %" PRIu64 ": size %" PRId64 " exceeds the %zu bytes left",
                                 block, size, c.left);
        (void)cursor_read_bytes(&c, (size_t)size, &data);
        if (cursor_read_bytes(&c, OCF_SYNC_LEN, &sync) < 0)
                return error_set(e, -EBADMSG, "block %" PRIu64 ": truncated sync marker", block);
        if (memcmp(sync, r->sync, OCF_SYNC_LEN) != 0)
                return error_set(e, -EBADMSG, "block %" PRIu64 ": sync marker mismatch", block);

        if (r->codec == OCF_CODEC_DEFLATE) {
                /* Incompressible input grows a little under deflate (5 bytes per stored block). */
                if ((uint64_t)size > OCF_MAX_COMPRESSED_BYTES)
                        return error_set(e, -E2BIG,
                                         "block %" PRIu64 ": compressed size %" PRId64 " too large",
                                         block, size);
        } else {
                if ((uint64_t)size > OCF_MAX_BLOCK_BYTES)
                        return error_set(e, -E2BIG,
                                         "block %" PRIu64 ": size %" PRId64 " exceeds %u bytes",
                                         block, size, OCF_MAX_BLOCK_BYTES);
                /* Stored as is: the count can be checked without decompressing. */
                rr = ocf_check_count(block, count, (size_t)size, e);
                if (rr < 0)
                        return rr;
        }

        *ret_block = (OcfBlock){
                .index = block,
                .count = count,
                .data = slice_make(data, (size_t)size),
                .offset = r->pos,
                .end = r->bytes.len - c.left,
        };
        r->pos = ret_block->end;
        r->n_blocks++;
        return 1;
}

int ocf_reader_inflate_block(const OcfReader *r, const OcfBlock *block, Buf *out, Error *e) {
        size_t max = out->max < OCF_MAX_BLOCK_BYTES ? out->max : OCF_MAX_BLOCK_BYTES;
        int rr;

        out->len = 0;
        if (out->data)
                out->data[0] = 0;
        if (block->data.len > 0 && r->codec == OCF_CODEC_DEFLATE) {
                rr = ocf_inflate(block->data, out, max, block->index, e);
                if (rr < 0)
                        return rr;
        } else if (block->data.len > 0) {
                if (block->data.len > max)
                        return error_set(e, -E2BIG, "block %" PRIu64 ": size %zu exceeds %zu bytes",
                                         block->index, block->data.len, max);
                rr = buf_append(out, block->data.ptr, block->data.len);
                if (rr < 0)
                        return error_set(e, rr, "block %" PRIu64 ": out of memory", block->index);
        }
        rr = ocf_check_count(block->index, block->count, out->len, e);
        if (rr < 0)
                return rr;

        /* An empty block still gets storage: datums of zero-byte schemas point into it. */
        rr = buf_reserve(out, 0);
        if (rr < 0)
                return error_set(e, rr, "block %" PRIu64 ": out of memory", block->index);
        return 0;
}

int ocf_reader_next_block(OcfReader *r, Error *e) {
        OcfBlock block = { 0 }; /* gcc -O3 cannot tell that scan_block() fills it on 1 */
        int rr;

        rr = ocf_reader_scan_block(r, &block, e);
        if (rr <= 0)
                return rr;
        rr = ocf_reader_inflate_block(r, &block, &r->block, e);
        if (rr < 0)
                return rr;
        r->block_remaining = block.count;
        return 1;
}

size_t ocf_reader_data_offset(const OcfReader *r) {
        return r->data_offset;
}

Slice ocf_reader_bytes(const OcfReader *r) {
        return r->bytes;
}

const uint8_t *ocf_reader_sync(const OcfReader *r) {
        return r->sync;
}

int ocf_reader_read(OcfReader *r, avro_value_t **ret_value, Error *e) {
        uint64_t block;
        DatumCheck dc;
        Cursor c;
        size_t len;
        int rr;

        while (r->block_remaining == 0) {
                /* A block whose datums are all read must have no bytes left over. */
                if (r->n_blocks > 0 && r->block_pos != r->block.len)
                        return error_set(e, -EBADMSG,
                                         "block %" PRIu64 ": %zu bytes after its last datum",
                                         r->n_blocks - 1, r->block.len - r->block_pos);
                rr = ocf_reader_next_block(r, e);
                if (rr <= 0)
                        return rr;
        }
        block = r->n_blocks - 1;

        c = (Cursor){ r->block.data + r->block_pos, r->block.len - r->block_pos };
        dc = (DatumCheck){ .nodes_left = OCF_MAX_DATUM_NODES, .e = e };
        rr = ocf_datum_check(r->schema, &c, 0, &dc);
        if (rr < 0)
                return error_prefix(e, rr, "block %" PRIu64 ", datum %" PRIu64, block, r->n_datums);
        len = r->block.len - r->block_pos - c.left;
        if (r->max_datum_bytes > 0 && len > r->max_datum_bytes)
                return error_set(e, -E2BIG,
                                 "block %" PRIu64 ", datum %" PRIu64
                                 ": %zu bytes, above the limit of %zu (%s)",
                                 block, r->n_datums, len, r->max_datum_bytes, r->max_datum_name);

        /* avro-c reads exactly the bytes the check accepted. */
        avro_reader_memory_set_source(r->avro_reader, (const char *)r->block.data + r->block_pos,
                                      (int64_t)len);
        if (avro_value_read(r->avro_reader, &r->value) != 0)
                return error_set(e, -EBADMSG,
                                 "block %" PRIu64 ", datum %" PRIu64 ": avro-c cannot decode it",
                                 block, r->n_datums);
        r->block_pos += len;
        r->block_remaining--;
        r->n_datums++;
        *ret_value = &r->value;
        return 1;
}
