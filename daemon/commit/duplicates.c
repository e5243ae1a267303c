/* SPDX-License-Identifier: Apache-2.0 */
/* Sorting data-file names to find one file named twice (see duplicates.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "commit/duplicates.h"
#include "storage/storage.h"

int duplicates_add(Duplicates *d, const char *location, size_t owner, size_t manifest,
                   size_t entry) {
        char *canonical;

        if (d->n_refs == d->cap) {
                size_t cap = d->cap ? d->cap * 2 : 64;
                DuplicatesRef *grown = reallocarray(d->refs, cap, sizeof(*grown));

                if (!grown)
                        return -ENOMEM;
                d->refs = grown;
                d->cap = cap;
        }
        canonical = storage_location_canonical(location);
        if (!canonical)
                return -ENOMEM;
        d->refs[d->n_refs++] = (DuplicatesRef){ canonical, owner, manifest, entry };
        return 0;
}

static int duplicates_compare(const void *a, const void *b) {
        const DuplicatesRef *x = a, *y = b;
        int c = strcmp(x->canonical, y->canonical);

        if (c != 0)
                return c;
        if (x->owner != y->owner)
                return x->owner < y->owner ? -1 : 1;
        if (x->manifest != y->manifest)
                return x->manifest < y->manifest ? -1 : 1;
        return x->entry < y->entry ? -1 : x->entry > y->entry;
}

void duplicates_sort(Duplicates *d) {
        if (d->n_refs > 1)
                qsort(d->refs, d->n_refs, sizeof(*d->refs), duplicates_compare);
}

bool duplicates_next(const Duplicates *d, size_t *pos, const DuplicatesRef **ret_first,
                     const DuplicatesRef **ret_again) {
        for (size_t i = *pos ? *pos : 1; i < d->n_refs; i++) {
                size_t first = i - 1;

                if (strcmp(d->refs[first].canonical, d->refs[i].canonical) != 0)
                        continue;
                /* The earliest name of this file heads its run. */
                while (first > 0 && strcmp(d->refs[first - 1].canonical, d->refs[i].canonical) == 0)
                        first--;
                *ret_first = &d->refs[first];
                *ret_again = &d->refs[i];
                *pos = i + 1;
                return true;
        }
        *pos = d->n_refs;
        return false;
}

void duplicates_deinit(Duplicates *d) {
        for (size_t i = 0; i < d->n_refs; i++)
                free(d->refs[i].canonical);
        free(d->refs);
        *d = (Duplicates){ 0 };
}
