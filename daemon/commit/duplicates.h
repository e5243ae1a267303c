/* SPDX-License-Identifier: Apache-2.0 */
/* One data file once: the files a request or a batch names, each under one spelling
 * (storage_location_canonical), sorted so that two names of one file stand side by side. Pure
 * and thread-safe: the engine runs it on the thread pool. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* One data file named by manifest `manifest`, entry `entry`, of request `owner`. */
typedef struct DuplicatesRef {
        char *canonical;
        size_t owner, manifest, entry;
} DuplicatesRef;

typedef struct Duplicates {
        DuplicatesRef *refs;
        size_t n_refs;
        size_t cap;
} Duplicates;

/* Adds a file; -ENOMEM. */
int duplicates_add(Duplicates *d, const char *location, size_t owner, size_t manifest,
                   size_t entry);
/* Sorts by file, then owner, manifest and entry: of two names of one file the first is the one
 * that came first. */
void duplicates_sort(Duplicates *d);
/* After sorting: the next pair from position *pos on whose second names the file of the first
 * (the earliest name of that file); false when there is none. Advances *pos. */
bool duplicates_next(const Duplicates *d, size_t *pos, const DuplicatesRef **ret_first,
                     const DuplicatesRef **ret_again);
void duplicates_deinit(Duplicates *d);
