/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded catalog's memory of tables: per table, the parsed metadata of the latest version
 * the catalog read or wrote, its number and what its file looked like, for at most a configured
 * number of tables (least recently used out). Loop thread only. Cached metadata is immutable:
 * it is shared, read-only, with thread-pool jobs and with whoever holds a body it was answered
 * in; a commit builds a new version by copy-on-write (table_update_apply). */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "iceberg/metadata_text.h"
#include "util/cleanup.h"

/* How a version's file looked when it was read or written, to notice a file of the same name
 * that is another one (a table dropped and created again): local files by device, inode, size
 * and modification time, objects by size (the rest 0). */
typedef struct TableCacheStamp {
        uint64_t dev, ino, size;
        int64_t mtime_ns;
} TableCacheStamp;

/* One table, owned by the cache; borrowed pointers stay valid until the next put or drop. */
typedef struct TableCacheEntry {
        char *table;             /* the table's directory or location: the key */
        int64_t version;         /* N of v<N>.metadata.json */
        char *metadata_location; /* its file */
        json_t *metadata;        /* a reference; never changed */
        TableCacheStamp stamp;
        MetadataTextMemo *memo; /* the text of its history, or NULL (lent to a commit) */
        struct TableCacheEntry *newer, *older;
} TableCacheEntry;

/* Owned by its catalog. */
typedef struct TableCache TableCache;

/* A cache of at most max_tables tables (0: every put is a no-op). Returns 0 or -ENOMEM. */
int table_cache_new(size_t max_tables, TableCache **ret_cache);
TableCache *table_cache_free(TableCache *c);
DEFINE_CLEANUP_FUNC(TableCache, table_cache_free);

/* The table's entry (borrowed, now the most recently used) or NULL. */
const TableCacheEntry *table_cache_get(TableCache *c, const char *table);
/* Keeps `metadata` (a new reference is taken) as the table's version `version`, unless a newer
 * version is kept already; evicts the least recently used table when full. Returns 0 or
 * -ENOMEM (then the table is not cached at all). */
int table_cache_put(TableCache *c, const char *table, int64_t version,
                    const char *metadata_location, json_t *metadata, const TableCacheStamp *stamp);
/* Takes the table's memo of metadata text, for a commit that writes its next version: NULL when
 * the table is not cached or another commit has it. The caller owns it until it gives it back. */
MetadataTextMemo *table_cache_take_memo(TableCache *c, const char *table);
/* Gives a memo (may be NULL) back to the table's entry, or frees it when the table is no longer
 * cached or has one again. */
void table_cache_give_memo(TableCache *c, const char *table, MetadataTextMemo *memo_take);
/* Forgets the table (no-op when not cached). */
void table_cache_drop(TableCache *c, const char *table);
/* Tables cached now. */
size_t table_cache_size(const TableCache *c);
