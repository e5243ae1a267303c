/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest list a queue's last commit wrote, the next attempt's parent (list_cache.c). */
#pragma once

#include <stdbool.h>

#include "commit/batch.h"

/* After a commit: the list it wrote (b->list, b->list_bytes, taken) becomes the queue's cache
 * when it fits commit.manifest-list-cache-max-bytes. */
void list_cache_keep(Batch *b);
/* When the attempt's parent is the cached list: moves it into b->parent_bytes/parent_files
 * (has_parent_files) and returns true. The cache is empty afterwards either way. */
bool list_cache_take(Batch *b);
