/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest list a queue's last commit wrote, kept in memory as the next attempt's parent
 * (docs/design.md section 12): the bytes as on storage (copied block by block by an
 * incremental list) and the entries as decoded, so that a table's commits neither read nor
 * decode their parent list again; commit.manifest-list-cache-max-bytes bounds all queues'. */
#include <stdlib.h>
#include <string.h>

#include "commit/list_cache.h"
#include "commit/queue.h"

/* After a commit: the list it wrote is the branch's head, the next attempt's parent. Kept, with
 * its entries as this attempt built them (exactly what decoding the file gives), when it fits
 * commit.manifest-list-cache-max-bytes. */
void list_cache_keep(Batch *b) {
        TableQueue *q = b->queue;
        CommitEngine *e = q->engine;
        ListCache *c = &q->list_cache;
        SnapshotChange *ch = &b->change;
        uint64_t size = b->list_bytes.len + ch->n_list * (sizeof(*ch->list) + 128);

        queue_list_cache_clear(q);
        for (size_t i = 0; i < ch->n_list; i++)
                size += strlen(ch->list[i].path);
        if (!b->list_bytes.data || size > e->config->list_cache_max_bytes ||
            e->list_cache_bytes > e->config->list_cache_max_bytes - size)
                return;
        c->location = TAKE_PTR(b->list_location);
        c->bytes = b->list_bytes;
        buf_init(&b->list_bytes, 0);
        c->files = TAKE_PTR(ch->list);
        c->n_files = ch->n_list;
        ch->n_list = 0;
        c->size = size;
        e->list_cache_bytes += size;
}

/* The parent of this attempt is the list the queue's last commit wrote: take it from the cache
 * (the next commit's cache is this attempt's list). Returns whether it was there. */
bool list_cache_take(Batch *b) {
        TableQueue *q = b->queue;
        ListCache *c = &q->list_cache;
        bool hit = c->location && b->parent_list_location &&
                   strcmp(c->location, b->parent_list_location) == 0;

        if (hit) {
                b->parent_bytes = c->bytes;
                buf_init(&c->bytes, 0);
                b->parent_files = TAKE_PTR(c->files);
                b->n_parent_files = c->n_files;
                c->n_files = 0;
                b->has_parent_files = true;
        }
        /* Either taken, or another writer's list is the parent now: nothing to keep. */
        queue_list_cache_clear(q);
        return hit;
}
