/* SPDX-License-Identifier: Apache-2.0 */
/* Table metadata as the text of a vN.metadata.json: exactly what json_dumps(JSON_COMPACT)
 * writes (Java's TableMetadataParser layout), but with a memory of the history. The arrays
 * that grow with every commit (snapshots, snapshot-log) are remembered element by element: the
 * next version, built by copy-on-write (table_update_apply), shares those elements, and only
 * the new ones are encoded. Pure: no I/O; any thread, one at a time per memo. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/cleanup.h"

/* Owned by whoever holds it (the table cache, or a job that took it from there). It keeps a
 * reference to every element it remembers, so that an element's address cannot be reused by
 * another value while it is a key. */
typedef struct MetadataTextMemo MetadataTextMemo;

/* An empty memo; NULL when out of memory. */
MetadataTextMemo *metadata_text_memo_new(void);
MetadataTextMemo *metadata_text_memo_free(MetadataTextMemo *m);
DEFINE_CLEANUP_FUNC(MetadataTextMemo, metadata_text_memo_free);
/* Bytes of text the memo holds, for accounting. */
size_t metadata_text_memo_bytes(const MetadataTextMemo *m);

/* Appends the compact JSON text of `metadata` (an object) to out, reusing and updating the memo
 * (NULL: none). Returns 0, -EINVAL for values jansson cannot encode, -E2BIG past out's maximum
 * or -ENOMEM; on failure the memo is still consistent. */
int metadata_text_dump(const json_t *metadata, MetadataTextMemo *memo, Buf *out);
