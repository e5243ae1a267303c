/* SPDX-License-Identifier: Apache-2.0 */
/* Deletion vectors: the deletion-vector-v1 blob (puffin-spec "deletion-vector-v1"; Java
 * BitmapPositionDeleteIndex.serialize, RoaringPositionBitmap.serialize) over CRoaring. Every
 * byte of a blob is checked here before CRoaring parses it: CRoaring 0.2's "safe" deserializer
 * bounds its reads but trusts the containers' contents. */
#include "puffin/dv.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <roaring/roaring.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util/checked.h"

/* The 32-bit Roaring format (RoaringFormatSpec): cookies, and the array/bitset threshold. */
#define DV_ROARING_COOKIE_NO_RUNS 12346u
#define DV_ROARING_COOKIE_RUNS 12347u
#define DV_ROARING_MAX_ARRAY 4096u
#define DV_ROARING_BITSET_BYTES 8192u
#define DV_ROARING_MAX_CONTAINERS 65536u
/* The 64-bit count, then per bitmap its key and at least an empty bitmap's 8 bytes. */
#define DV_COUNT_BYTES 8u
#define DV_MIN_BITMAP_BYTES 12u

/* Sorted by key; bitmaps may be empty (read from a file that has them). */
struct DvBitmap {
        uint32_t *keys;
        roaring_bitmap_t **bitmaps;
        size_t n;
        size_t cap;
};

static uint16_t dv_le16(const uint8_t *p) {
        return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t dv_le32(const uint8_t *p) {
        return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t dv_be32(const uint8_t *p) {
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void dv_put_le32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (8 * i));
}

static void dv_put_be32(uint8_t *p, uint32_t v) {
        for (int i = 0; i < 4; i++)
                p[i] = (uint8_t)(v >> (24 - 8 * i));
}

DvBitmap *dv_new(void) {
        return calloc(1, sizeof(DvBitmap));
}

DvBitmap *dv_free(DvBitmap *dv) {
        if (!dv)
                return NULL;
        for (size_t i = 0; i < dv->n; i++)
                roaring_bitmap_free(dv->bitmaps[i]);
        free(dv->keys);
        free(dv->bitmaps);
        free(dv);
        return NULL;
}

DEFINE_CLEANUP_FUNC(DvBitmap, dv_free);
DEFINE_CLEANUP_FUNC(roaring_bitmap_t, roaring_bitmap_free);

/* The index of key, or where it would be inserted. */
static size_t dv_find(const DvBitmap *dv, uint32_t key) {
        size_t lo = 0, hi = dv->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (dv->keys[mid] < key)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int dv_reserve(DvBitmap *dv) {
        uint32_t *keys;
        roaring_bitmap_t **bitmaps;
        size_t cap;

        if (dv->n < dv->cap)
                return 0;
        cap = dv->cap ? dv->cap * 2 : 4;
        keys = realloc(dv->keys, cap * sizeof(*keys));
        if (!keys)
                return -ENOMEM;
        dv->keys = keys;
        bitmaps = realloc(dv->bitmaps, cap * sizeof(*bitmaps));
        if (!bitmaps)
                return -ENOMEM;
        dv->bitmaps = bitmaps;
        dv->cap = cap;
        return 0;
}

/* Inserts bitmap (taken) at index i under key. On failure the caller still owns it. */
static int dv_insert_take(DvBitmap *dv, size_t i, uint32_t key, roaring_bitmap_t *bitmap) {
        int r;

        r = dv_reserve(dv);
        if (r < 0)
                return r;
        memmove(dv->keys + i + 1, dv->keys + i, (dv->n - i) * sizeof(*dv->keys));
        memmove(dv->bitmaps + i + 1, dv->bitmaps + i, (dv->n - i) * sizeof(*dv->bitmaps));
        dv->keys[i] = key;
        dv->bitmaps[i] = bitmap;
        dv->n++;
        return 0;
}

/* The bitmap of key, created empty when missing; NULL when out of memory. */
static roaring_bitmap_t *dv_bitmap_of(DvBitmap *dv, uint32_t key) {
        _cleanup_(roaring_bitmap_freep) roaring_bitmap_t *b = NULL;
        size_t i = dv_find(dv, key);

        if (i < dv->n && dv->keys[i] == key)
                return dv->bitmaps[i];
        b = roaring_bitmap_create();
        if (!b || dv_insert_take(dv, i, key, b) < 0)
                return NULL;
        return TAKE_PTR(b);
}

int dv_add(DvBitmap *dv, uint64_t position) {
        roaring_bitmap_t *b;

        if (position > DV_MAX_POSITION)
                return -ERANGE;
        b = dv_bitmap_of(dv, (uint32_t)(position >> 32));
        if (!b)
                return -ENOMEM;
        roaring_bitmap_add(b, (uint32_t)position);
        return 0;
}

bool dv_contains(const DvBitmap *dv, uint64_t position) {
        size_t i = dv_find(dv, (uint32_t)(position >> 32));

        return position <= DV_MAX_POSITION && i < dv->n &&
               dv->keys[i] == (uint32_t)(position >> 32) &&
               roaring_bitmap_contains(dv->bitmaps[i], (uint32_t)position);
}

uint64_t dv_cardinality(const DvBitmap *dv) {
        uint64_t n = 0;

        /* At most 2^31 keys of at most 2^32 positions each: no overflow. */
        for (size_t i = 0; i < dv->n; i++)
                n += roaring_bitmap_get_cardinality(dv->bitmaps[i]);
        return n;
}

int dv_union(DvBitmap *into, const DvBitmap *from) {
        for (size_t i = 0; i < from->n; i++) {
                roaring_bitmap_t *b = dv_bitmap_of(into, from->keys[i]);

                if (!b)
                        return -ENOMEM;
                roaring_bitmap_or_inplace(b, from->bitmaps[i]);
        }
        return 0;
}

bool dv_foreach(const DvBitmap *dv, bool (*cb)(uint64_t position, void *userdata), void *userdata) {
        for (size_t i = 0; i < dv->n; i++)
                if (!roaring_iterate64(dv->bitmaps[i], cb, (uint64_t)dv->keys[i] << 32, userdata))
                        return false;
        return true;
}

/* What one container of a 32-bit bitmap holds, checked. */
typedef struct DvContainer {
        uint32_t cardinality;
        uint16_t max;
} DvContainer;

static int dv_check_run(Slice in, size_t *at, DvContainer *c, Error *error) {
        uint32_t n_runs, total = 0;
        int32_t prev_end = -1;

        if (in.len - *at < 2)
                return error_set(error, -EBADMSG, "run container cut short");
        n_runs = dv_le16(in.ptr + *at);
        *at += 2;
        if (n_runs == 0 || (in.len - *at) / 4 < n_runs)
                return error_set(error, -EBADMSG, "run container of %" PRIu32 " runs cut short",
                                 n_runs);
        for (uint32_t k = 0; k < n_runs; k++, *at += 4) {
                int32_t start = dv_le16(in.ptr + *at), end = start + dv_le16(in.ptr + *at + 2);

                /* Runs ascending, apart, and inside the container's 16 bits. */
                if (start <= prev_end || end > UINT16_MAX)
                        return error_set(error, -EBADMSG,
                                         "run %" PRIu32 " overlaps or leaves the container", k);
                total += (uint32_t)(end - start + 1);
                prev_end = end;
        }
        if (total != c->cardinality)
                return error_set(error, -EBADMSG,
                                 "run container holds %" PRIu32 " values, its header says %" PRIu32,
                                 total, c->cardinality);
        c->max = (uint16_t)prev_end;
        return 0;
}

static int dv_check_bitset(Slice in, size_t *at, DvContainer *c, Error *error) {
        uint32_t total = 0;

        if (in.len - *at < DV_ROARING_BITSET_BYTES)
                return error_set(error, -EBADMSG, "bitset container cut short");
        for (uint32_t w = 0; w < DV_ROARING_BITSET_BYTES; w++) {
                uint8_t byte = in.ptr[*at + w];

                total += (uint32_t)__builtin_popcount(byte);
                if (byte)
                        c->max = (uint16_t)(w * 8 + 31 - (uint32_t)__builtin_clz(byte));
        }
        *at += DV_ROARING_BITSET_BYTES;
        if (total != c->cardinality)
                return error_set(error, -EBADMSG,
                                 "bitset container holds %" PRIu32
                                 " values, its header says %" PRIu32,
                                 total, c->cardinality);
        return 0;
}

static int dv_check_array(Slice in, size_t *at, DvContainer *c, Error *error) {
        int32_t prev = -1;

        if ((in.len - *at) / 2 < c->cardinality)
                return error_set(error, -EBADMSG, "array container cut short");
        for (uint32_t k = 0; k < c->cardinality; k++, *at += 2) {
                int32_t v = dv_le16(in.ptr + *at);

                if (v <= prev)
                        return error_set(error, -EBADMSG, "array container is not ascending");
                prev = v;
        }
        c->max = (uint16_t)prev;
        return 0;
}

/* Walks one 32-bit bitmap in the portable format at the start of in, as CRoaring and Java
 * RoaringBitmap write it: its size, cardinality and largest value (when not empty). */
static int dv_check_roaring32(Slice in, size_t *ret_size, uint64_t *ret_cardinality,
                              uint32_t *ret_max, Error *error) {
        const uint8_t *run_bitset = NULL, *headers;
        uint32_t cookie, n, prev_key = 0;
        uint64_t cardinality = 0;
        size_t at = 4;
        int r;

        if (in.len < 4)
                return error_set(error, -EBADMSG, "bitmap cut short");
        cookie = dv_le32(in.ptr);
        if ((cookie & 0xFFFFu) == DV_ROARING_COOKIE_RUNS) {
                n = (cookie >> 16) + 1;
                run_bitset = in.ptr + at;
                if (in.len - at < (n + 7) / 8)
                        return error_set(error, -EBADMSG, "bitmap cut short in its run bitset");
                at += (n + 7) / 8;
        } else if (cookie == DV_ROARING_COOKIE_NO_RUNS) {
                if (in.len - at < 4)
                        return error_set(error, -EBADMSG, "bitmap cut short");
                n = dv_le32(in.ptr + at);
                at += 4;
                if (n > DV_ROARING_MAX_CONTAINERS)
                        return error_set(error, -EBADMSG, "bitmap of %" PRIu32 " containers", n);
        } else
                return error_set(error, -EBADMSG, "bitmap cookie %" PRIu32 " is unknown", cookie);

        /* Descriptive header (key, cardinality - 1), then the offset header, which is skipped
         * as CRoaring and Java skip it: the containers follow one another. */
        if ((in.len - at) / 4 < n)
                return error_set(error, -EBADMSG, "bitmap cut short in its header");
        headers = in.ptr + at;
        at += (size_t)n * 4;
        if (!run_bitset || n >= 4) {
                if ((in.len - at) / 4 < n)
                        return error_set(error, -EBADMSG, "bitmap cut short in its offsets");
                at += (size_t)n * 4;
        }

        for (uint32_t i = 0; i < n; i++) {
                uint32_t key = dv_le16(headers + 4 * i);
                DvContainer c = { .cardinality = (uint32_t)dv_le16(headers + 4 * i + 2) + 1 };

                if (i > 0 && key <= prev_key)
                        return error_set(error, -EBADMSG, "container keys are not ascending");
                prev_key = key;
                if (run_bitset && (run_bitset[i / 8] >> (i % 8)) & 1)
                        r = dv_check_run(in, &at, &c, error);
                else if (c.cardinality > DV_ROARING_MAX_ARRAY)
                        r = dv_check_bitset(in, &at, &c, error);
                else
                        r = dv_check_array(in, &at, &c, error);
                if (r < 0)
                        return error_prefix(error, r, "container %" PRIu32, i);
                cardinality += c.cardinality;
                *ret_max = key << 16 | c.max;
        }

        *ret_size = at;
        *ret_cardinality = cardinality;
        return 0;
}

/* One 32-bit bitmap of the 64-bit one: checked, parsed by CRoaring, added under key. */
static int dv_read_bitmap(Slice in, uint32_t key, uint64_t max_position, DvBitmap *dv,
                          size_t *ret_size, Error *error) {
        _cleanup_(roaring_bitmap_freep) roaring_bitmap_t *b = NULL;
        uint64_t cardinality = 0;
        uint32_t max = 0;
        size_t size = 0;
        int r;

        r = dv_check_roaring32(in, &size, &cardinality, &max, error);
        if (r < 0)
                return r;
        if (cardinality > 0 && ((uint64_t)key << 32 | max) >= max_position)
                return error_set(error, -EBADMSG,
                                 "position %" PRIu64 " is beyond the data file's %" PRIu64 " rows",
                                 (uint64_t)key << 32 | max, max_position);

        b = roaring_bitmap_portable_deserialize_safe((const char *)in.ptr, size);
        if (!b) /* out of memory, or bytes CRoaring reads otherwise than the check above */
                return error_set(error, -EBADMSG, "bitmap refused by CRoaring");
        if (roaring_bitmap_get_cardinality(b) != cardinality)
                return error_set(error, -EBADMSG, "bitmap does not hold what its header says");
        r = dv_insert_take(dv, dv->n, key, b);
        if (r < 0)
                return r;
        TAKE_PTR(b);
        *ret_size = size;
        return 0;
}

/* The portable 64-bit Roaring bitmap: count (u64 LE), then per bitmap key (u32 LE, ascending)
 * and a 32-bit bitmap. Nothing may follow it. */
static int dv_read_bitmaps(Slice in, uint64_t max_position, DvBitmap *dv, Error *error) {
        uint64_t count;
        size_t at = DV_COUNT_BYTES;
        int r;

        if (in.len < DV_COUNT_BYTES)
                return error_set(error, -EBADMSG, "deletion vector cut short in its count");
        count = (uint64_t)dv_le32(in.ptr) | (uint64_t)dv_le32(in.ptr + 4) << 32;
        if (count > (in.len - at) / DV_MIN_BITMAP_BYTES)
                return error_set(error, -EBADMSG,
                                 "deletion vector of %zu bytes cannot hold %" PRIu64 " bitmaps",
                                 in.len, count);

        for (uint64_t i = 0; i < count; i++) {
                uint32_t key;
                size_t size = 0;

                if (in.len - at < 4)
                        return error_set(error, -EBADMSG, "deletion vector cut short");
                key = dv_le32(in.ptr + at);
                at += 4;
                if (i > 0 && key <= dv->keys[dv->n - 1])
                        return error_set(error, -EBADMSG, "bitmap keys are not ascending");
                if (key > DV_MAX_KEY)
                        return error_set(error, -EBADMSG, "bitmap key %" PRIu32 " is too large",
                                         key);
                r = dv_read_bitmap(slice_make(in.ptr + at, in.len - at), key, max_position, dv,
                                   &size, error);
                if (r < 0)
                        return error_prefix(error, r, "bitmap %" PRIu64 " (key %" PRIu32 ")", i,
                                            key);
                at += size;
        }
        if (at != in.len)
                return error_set(error, -EBADMSG, "%zu bytes follow the deletion vector's bitmaps",
                                 in.len - at);
        return 0;
}

int dv_read(Slice blob, uint64_t max_position, DvBitmap **ret_dv, Error *error) {
        _cleanup_(dv_freep) DvBitmap *dv = NULL;
        uint32_t length, crc_stored, crc;
        Slice body;
        int r;

        /* length (BE), magic, the 8-byte count at least, CRC (BE) */
        if (blob.len < DV_FRAME_BYTES + 4 + DV_COUNT_BYTES)
                return error_set(error, -EBADMSG, "deletion vector blob of %zu bytes is too short",
                                 blob.len);
        length = dv_be32(blob.ptr);
        if (length != blob.len - DV_FRAME_BYTES)
                return error_set(error, -EBADMSG,
                                 "deletion vector length %" PRIu32
                                 " does not match the blob's %zu bytes (expected %zu)",
                                 length, blob.len, blob.len - DV_FRAME_BYTES);
        if (dv_le32(blob.ptr + 4) != DV_MAGIC)
                return error_set(error, -EBADMSG,
                                 "deletion vector magic %02x %02x %02x %02x is not d1 d3 39 64",
                                 blob.ptr[4], blob.ptr[5], blob.ptr[6], blob.ptr[7]);
        /* zlib's crc32 takes a uInt length: the length above is a u32. */
        crc = (uint32_t)crc32(0, blob.ptr + 4, length);
        crc_stored = dv_be32(blob.ptr + blob.len - 4);
        if (crc != crc_stored)
                return error_set(error, -EBADMSG,
                                 "deletion vector CRC %08" PRIx32
                                 " does not match its bytes (%08" PRIx32 ")",
                                 crc_stored, crc);

        dv = dv_new();
        if (!dv)
                return -ENOMEM;
        body = slice_make(blob.ptr + 8, length - 4);
        r = dv_read_bitmaps(body, max_position, dv, error);
        if (r < 0)
                return r;
        *ret_dv = TAKE_PTR(dv);
        return 0;
}

/* Java writes one bitmap per key from 0 to the highest, run-length encoded where smaller. */
typedef struct DvPlan {
        roaring_bitmap_t **optimized; /* per index of the DvBitmap, NULL for an empty bitmap */
        size_t n;                     /* entries of optimized */
        size_t n_keys;                /* highest non-empty key + 1, or 0 */
        size_t bytes;                 /* magic + the 64-bit bitmap */
} DvPlan;

static void dv_plan_deinit(DvPlan *p) {
        for (size_t i = 0; i < p->n; i++)
                roaring_bitmap_free(p->optimized[i]);
        free(p->optimized);
}

/* Sizes first (a single high key means 2^31 empty bitmaps: refused before any allocation). */
static int dv_plan(const DvBitmap *dv, size_t max_bytes, DvPlan *p) {
        size_t bytes = 4 + DV_COUNT_BYTES, n_used = 0, n_empty;

        for (size_t i = 0; i < dv->n; i++)
                if (!roaring_bitmap_is_empty(dv->bitmaps[i])) {
                        p->n_keys = (size_t)dv->keys[i] + 1;
                        n_used++;
                }
        n_empty = p->n_keys - n_used;
        if (n_empty > (max_bytes - bytes) / DV_MIN_BITMAP_BYTES)
                return -E2BIG;
        bytes += n_empty * DV_MIN_BITMAP_BYTES;

        p->optimized = calloc(dv->n ? dv->n : 1, sizeof(*p->optimized));
        if (!p->optimized)
                return -ENOMEM;
        p->n = dv->n;
        for (size_t i = 0; i < dv->n; i++) {
                roaring_bitmap_t *b;

                if (roaring_bitmap_is_empty(dv->bitmaps[i]))
                        continue;
                b = roaring_bitmap_copy(dv->bitmaps[i]);
                if (!b)
                        return -ENOMEM;
                p->optimized[i] = b;
                roaring_bitmap_run_optimize(b);
                if (checked_add_size(&bytes, bytes, 4 + roaring_bitmap_portable_size_in_bytes(b)))
                        return -E2BIG;
        }
        if (bytes > max_bytes)
                return -E2BIG;
        p->bytes = bytes;
        return 0;
}

int dv_write(const DvBitmap *dv, Buf *out) {
        _cleanup_(dv_plan_deinit) DvPlan plan = { 0 };
        _cleanup_(roaring_bitmap_freep) roaring_bitmap_t *empty = NULL;
        uint8_t *p, *start;
        size_t i = 0;
        int r;

        r = dv_plan(dv, UINT32_MAX, &plan);
        if (r < 0)
                return r;
        r = buf_reserve(out, plan.bytes + DV_FRAME_BYTES);
        if (r < 0)
                return r;
        empty = roaring_bitmap_create();
        if (!empty)
                return -ENOMEM;

        p = out->data + out->len;
        dv_put_be32(p, (uint32_t)plan.bytes);
        start = p + 4;
        dv_put_le32(start, DV_MAGIC);
        dv_put_le32(start + 4, (uint32_t)plan.n_keys);
        dv_put_le32(start + 8, (uint32_t)((uint64_t)plan.n_keys >> 32));
        p = start + 4 + DV_COUNT_BYTES;
        for (size_t key = 0; key < plan.n_keys; key++) {
                const roaring_bitmap_t *b = empty;

                while (i < dv->n && dv->keys[i] < key)
                        i++;
                if (i < dv->n && dv->keys[i] == key && plan.optimized[i])
                        b = plan.optimized[i];
                dv_put_le32(p, (uint32_t)key);
                p += 4;
                p += roaring_bitmap_portable_serialize(b, (char *)p);
        }
        assert((size_t)(p - start) == plan.bytes);
        dv_put_be32(p, (uint32_t)crc32(0, start, (uInt)plan.bytes));
        out->len += plan.bytes + DV_FRAME_BYTES;
        out->data[out->len] = 0;
        return 0;
}
