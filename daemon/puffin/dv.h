/* SPDX-License-Identifier: Apache-2.0 */
/* Deletion vectors (Puffin blob "deletion-vector-v1", format/puffin-spec.md): a set of 64-bit
 * row positions of one data file, as a portable 64-bit Roaring bitmap (CRoaring's 32-bit
 * bitmaps keyed by the high 32 bits). Reads untrusted blobs, checking every byte before CRoaring
 * sees it; writes the bytes Iceberg Java writes. Pure: no I/O. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

#define DV_BLOB_TYPE "deletion-vector-v1"
/* Written as 4 little-endian bytes D1 D3 39 64 (Java: int 1681511377, little-endian). */
#define DV_MAGIC 0x6439D3D1u
/* Java's MetadataColumns.ROW_POSITION (_pos): the one field id of a DV blob. */
#define DV_FIELD_ROW_POSITION 2147483645
/* Java's RoaringPositionBitmap.MAX_POSITION: key Integer.MAX_VALUE - 1, low bits 0x80000000.
 * Java refuses keys above Integer.MAX_VALUE - 1 when reading. */
#define DV_MAX_POSITION UINT64_C(0x7FFFFFFE80000000)
#define DV_MAX_KEY UINT32_C(0x7FFFFFFE)
/* The length prefix and the CRC around magic + bitmap. */
#define DV_FRAME_BYTES 8

/* A set of positions. Owned by whoever created it; dv_free frees it. */
typedef struct DvBitmap DvBitmap;

/* An empty set, or NULL when out of memory. */
DvBitmap *dv_new(void);
DvBitmap *dv_free(DvBitmap *dv);

/* Adds a position. Returns 0, -ERANGE above DV_MAX_POSITION, -ENOMEM. */
int dv_add(DvBitmap *dv, uint64_t position);
bool dv_contains(const DvBitmap *dv, uint64_t position);
uint64_t dv_cardinality(const DvBitmap *dv);
/* Adds every position of from to into. Returns 0 or -ENOMEM (into may then hold part of it). */
int dv_union(DvBitmap *into, const DvBitmap *from);
/* Calls cb for each position, ascending, until it returns false. Returns false when cb did. */
bool dv_foreach(const DvBitmap *dv, bool (*cb)(uint64_t position, void *userdata), void *userdata);

/* Reads a whole deletion-vector-v1 blob (the bytes at the manifest entry's content_offset, its
 * content_size_in_bytes long) of a data file with max_position rows (its record_count). Returns
 * 0 and *ret_dv (the caller frees it); -EBADMSG with the reason for a length that does not match,
 * a wrong magic, a wrong CRC, a malformed bitmap, or a position >= max_position; -ENOMEM. */
int dv_read(Slice blob, uint64_t max_position, DvBitmap **ret_dv, Error *error);
/* Appends the deletion-vector-v1 blob of dv to out, byte for byte as Iceberg Java writes it:
 * run containers where smaller, one 32-bit bitmap per key from 0 to the highest. Returns 0,
 * -E2BIG past out's maximum or when the blob would pass 4 GiB, -ENOMEM. */
int dv_write(const DvBitmap *dv, Buf *out);
