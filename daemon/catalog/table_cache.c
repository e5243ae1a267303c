/* SPDX-License-Identifier: Apache-2.0 */
/* The embedded catalog's table cache (see table_cache.h): a list from the most to the least
 * recently used entry. Lookups walk it: the bound (catalog.cache-tables) keeps that short, and
 * each lookup is one per catalog call, next to a file operation that costs far more. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/table_cache.h"

struct TableCache {
        size_t max_tables;
        size_t n_tables;
        TableCacheEntry *newest, *oldest;
};

int table_cache_new(size_t max_tables, TableCache **ret_cache) {
        TableCache *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->max_tables = max_tables;
        *ret_cache = c;
        return 0;
}

static void entry_unlink(TableCache *c, TableCacheEntry *e) {
        if (e->newer)
                e->newer->older = e->older;
        else
                c->newest = e->older;
        if (e->older)
                e->older->newer = e->newer;
        else
                c->oldest = e->newer;
        e->newer = e->older = NULL;
        c->n_tables--;
}

static void entry_link_newest(TableCache *c, TableCacheEntry *e) {
        e->older = c->newest;
        e->newer = NULL;
        if (c->newest)
                c->newest->newer = e;
        c->newest = e;
        if (!c->oldest)
                c->oldest = e;
        c->n_tables++;
}

static TableCacheEntry *entry_free(TableCacheEntry *e) {
        if (!e)
                return NULL;
        free(e->table);
        free(e->metadata_location);
        json_decref(e->metadata);
        metadata_text_memo_free(e->memo);
        free(e);
        return NULL;
}

TableCache *table_cache_free(TableCache *c) {
        if (!c)
                return NULL;
        while (c->newest) {
                TableCacheEntry *e = c->newest;

                entry_unlink(c, e);
                entry_free(e);
        }
        free(c);
        return NULL;
}

static TableCacheEntry *entry_find(const TableCache *c, const char *table) {
        for (TableCacheEntry *e = c->newest; e; e = e->older)
                if (strcmp(e->table, table) == 0)
                        return e;
        return NULL;
}

const TableCacheEntry *table_cache_get(TableCache *c, const char *table) {
        TableCacheEntry *e = entry_find(c, table);

        if (e && e != c->newest) {
                entry_unlink(c, e);
                entry_link_newest(c, e);
        }
        return e;
}

int table_cache_put(TableCache *c, const char *table, int64_t version,
                    const char *metadata_location, json_t *metadata, const TableCacheStamp *stamp) {
        TableCacheEntry *e = entry_find(c, table);
        char *location;

        if (c->max_tables == 0)
                return 0;
        /* Jobs finish in any order: a load that read v5 must not replace the v6 a commit wrote. */
        if (e && e->version > version)
                return 0;
        location = strdup(metadata_location);
        if (!location) {
                table_cache_drop(c, table);
                return -ENOMEM;
        }
        if (!e) {
                e = calloc(1, sizeof(*e));
                if (!e || !(e->table = strdup(table))) {
                        free(e);
                        free(location);
                        return -ENOMEM;
                }
                if (c->n_tables >= c->max_tables) {
                        TableCacheEntry *oldest = c->oldest;

                        entry_unlink(c, oldest);
                        entry_free(oldest);
                }
        } else
                entry_unlink(c, e);
        free(e->metadata_location);
        e->metadata_location = location;
        json_decref(e->metadata);
        e->metadata = json_incref(metadata);
        e->version = version;
        e->stamp = *stamp;
        entry_link_newest(c, e);
        return 0;
}

MetadataTextMemo *table_cache_take_memo(TableCache *c, const char *table) {
        TableCacheEntry *e = entry_find(c, table);

        return e ? TAKE_PTR(e->memo) : NULL;
}

void table_cache_give_memo(TableCache *c, const char *table, MetadataTextMemo *memo_take) {
        TableCacheEntry *e = entry_find(c, table);

        if (e && !e->memo)
                e->memo = memo_take;
        else
                metadata_text_memo_free(memo_take);
}

void table_cache_drop(TableCache *c, const char *table) {
        TableCacheEntry *e = entry_find(c, table);

        if (!e)
                return;
        entry_unlink(c, e);
        entry_free(e);
}

size_t table_cache_size(const TableCache *c) {
        return c->n_tables;
}
