/* SPDX-License-Identifier: Apache-2.0 */
/* The live-file index (see live_files.h): a linear-probing hash set of 128-bit file hashes,
 * each with the number of manifests holding it, and the manifests sorted by path with the
 * hashes of their files. Every byte it allocates is charged first to its own bound and to the
 * shared budget, so a table that does not fit is refused before anything is allocated. */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit/live_files.h"
#include "storage/storage.h"
#include "util/checked.h"

/* A set slot; empty while n_holders is 0. */
typedef struct LiveFilesSlot {
        uint64_t lo, hi;
        uint32_t n_holders; /* manifests naming the file (more than one only in a table
                             * that holds one file twice already) */
} LiveFilesSlot;

typedef struct LiveFilesManifest {
        char *path;
        LiveFileHash *files;
        size_t n_files;
} LiveFilesManifest;

struct LiveFiles {
        uint8_t key[SIPHASH_KEY_BYTES];
        BudgetHold hold;      /* its bytes, within its own bound and the shared budget */
        LiveFilesSlot *slots; /* n_slots: 0 or a power of two */
        size_t n_slots;
        size_t n_used;
        LiveFilesManifest *manifests; /* sorted by strcmp of path */
        size_t n_manifests;
        size_t cap_manifests;
};

#define LIVE_FILES_MIN_SLOTS 64u

static_assert(sizeof(LiveFileHash) == 16, "a file hash is 128 bits");

/* Either bound refuses alike: the index does not fit. */
static int live_files_charge(LiveFiles *lf, uint64_t delta) {
        return budget_take(&lf->hold, delta) < 0 ? -E2BIG : 0;
}

static void live_files_release(LiveFiles *lf, uint64_t delta) {
        budget_release(&lf->hold, delta);
}

int live_files_new(const uint8_t key[SIPHASH_KEY_BYTES], uint64_t max_bytes, Budget *budget,
                   LiveFiles **ret_files) {
        LiveFiles *lf = calloc(1, sizeof(*lf));

        if (!lf)
                return -ENOMEM;
        memcpy(lf->key, key, SIPHASH_KEY_BYTES);
        lf->hold = (BudgetHold){ .budget = budget, .max_bytes = max_bytes };
        if (live_files_charge(lf, sizeof(*lf)) < 0) {
                free(lf);
                return -E2BIG;
        }
        *ret_files = lf;
        return 0;
}

LiveFiles *live_files_free(LiveFiles *lf) {
        if (!lf)
                return NULL;
        for (size_t i = 0; i < lf->n_manifests; i++) {
                free(lf->manifests[i].path);
                free(lf->manifests[i].files);
        }
        free(lf->manifests);
        free(lf->slots);
        budget_release_all(&lf->hold);
        free(lf);
        return NULL;
}

int live_files_hash(const LiveFiles *lf, const char *location, LiveFileHash *ret_hash) {
        char *canonical = storage_location_canonical(location);

        if (!canonical)
                return -ENOMEM;
        siphash128(lf->key, canonical, strlen(canonical), &ret_hash->lo, &ret_hash->hi);
        free(canonical);
        return 0;
}

/* The slot holding hash, or the empty slot where it would go. n_slots > 0. */
static size_t live_files_probe(const LiveFilesSlot *slots, size_t n_slots, LiveFileHash h) {
        size_t mask = n_slots - 1, i = (size_t)h.lo & mask;

        while (slots[i].n_holders > 0 && (slots[i].lo != h.lo || slots[i].hi != h.hi))
                i = (i + 1) & mask;
        return i;
}

static void live_files_slot_add(LiveFiles *lf, LiveFileHash h) {
        size_t i = live_files_probe(lf->slots, lf->n_slots, h);

        if (lf->slots[i].n_holders == 0) {
                lf->slots[i] = (LiveFilesSlot){ .lo = h.lo, .hi = h.hi };
                lf->n_used++;
        }
        lf->slots[i].n_holders++;
}

/* Drops one holder of h; an emptied slot is refilled by shifting back the entries after it
 * whose home lies at or before it (linear probing needs no tombstones then). */
static void live_files_slot_drop(LiveFiles *lf, LiveFileHash h) {
        size_t mask = lf->n_slots - 1, i = live_files_probe(lf->slots, lf->n_slots, h), j;

        if (lf->slots[i].n_holders == 0 || --lf->slots[i].n_holders > 0)
                return;
        lf->n_used--;
        for (j = (i + 1) & mask; lf->slots[j].n_holders > 0; j = (j + 1) & mask) {
                size_t home = (size_t)lf->slots[j].lo & mask;

                /* An entry whose home lies cyclically in (i, j] stays where it is. */
                if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
                        continue;
                lf->slots[i] = lf->slots[j];
                i = j;
        }
        lf->slots[i] = (LiveFilesSlot){ 0 };
}

bool live_files_contains(const LiveFiles *lf, LiveFileHash hash) {
        if (lf->n_slots == 0)
                return false;
        return lf->slots[live_files_probe(lf->slots, lf->n_slots, hash)].n_holders > 0;
}

/* The index of manifest in the sorted array, or where it would be inserted (*ret_found false). */
static size_t live_files_find(const LiveFiles *lf, const char *manifest, bool *ret_found) {
        size_t lo = 0, hi = lf->n_manifests;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int c = strcmp(lf->manifests[mid].path, manifest);

                if (c == 0) {
                        *ret_found = true;
                        return mid;
                }
                if (c < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        *ret_found = false;
        return lo;
}

bool live_files_has_manifest(const LiveFiles *lf, const char *manifest) {
        bool found;

        (void)live_files_find(lf, manifest, &found);
        return found;
}

int live_files_add_manifest(LiveFiles *lf, const char *manifest, const LiveFileHash *hashes,
                            size_t n_hashes) {
        _cleanup_(freep) LiveFilesSlot *slots = NULL;
        _cleanup_(freep) LiveFileHash *files = NULL;
        _cleanup_(freep) char *path = NULL;
        size_t n_slots = lf->n_slots, cap = lf->cap_manifests, need, path_bytes, file_bytes, pos;
        uint64_t delta;
        bool found;
        int r;

        pos = live_files_find(lf, manifest, &found);
        if (found)
                return -EEXIST;

        /* Grown before any file goes in: at most three quarters of the slots in use, counting
         * every file as new (a file another manifest holds takes no slot, but rarely exists). */
        if (checked_add_size(&need, lf->n_used, n_hashes))
                return -E2BIG;
        while (n_slots == 0 || need > n_slots / 4 * 3) {
                if (checked_mul_size(&n_slots, n_slots ? n_slots : LIVE_FILES_MIN_SLOTS / 2, 2))
                        return -E2BIG;
        }
        if (lf->n_manifests == cap)
                cap = cap ? cap * 2 : 16;
        path_bytes = strlen(manifest) + 1;
        if (checked_mul_size(&file_bytes, n_hashes, sizeof(*hashes)))
                return -E2BIG;
        delta = (uint64_t)(n_slots - lf->n_slots) * sizeof(LiveFilesSlot) +
                (uint64_t)(cap - lf->cap_manifests) * sizeof(LiveFilesManifest) + path_bytes +
                file_bytes;
        r = live_files_charge(lf, delta);
        if (r < 0)
                return r;

        path = strdup(manifest);
        files = n_hashes > 0 ? malloc(file_bytes) : NULL;
        if (n_slots != lf->n_slots)
                slots = calloc(n_slots, sizeof(*slots));
        if (!path || (n_hashes > 0 && !files) || (n_slots != lf->n_slots && !slots)) {
                live_files_release(lf, delta);
                return -ENOMEM;
        }
        if (cap != lf->cap_manifests) {
                LiveFilesManifest *grown = reallocarray(lf->manifests, cap, sizeof(*grown));

                if (!grown) {
                        live_files_release(lf, delta);
                        return -ENOMEM;
                }
                lf->manifests = grown;
                lf->cap_manifests = cap;
        }
        /* Nothing can fail from here on. */
        if (slots) {
                LiveFilesSlot *old = lf->slots;
                size_t n_old = lf->n_slots;

                for (size_t i = 0; i < n_old; i++)
                        if (old[i].n_holders > 0)
                                slots[live_files_probe(slots, n_slots,
                                                       (LiveFileHash){ old[i].lo, old[i].hi })] =
                                        old[i];
                lf->slots = TAKE_PTR(slots);
                lf->n_slots = n_slots;
                free(old);
        }
        if (n_hashes > 0)
                memcpy(files, hashes, file_bytes);
        for (size_t i = 0; i < n_hashes; i++)
                live_files_slot_add(lf, hashes[i]);
        memmove(&lf->manifests[pos + 1], &lf->manifests[pos],
                (lf->n_manifests - pos) * sizeof(*lf->manifests));
        lf->manifests[pos] = (LiveFilesManifest){ TAKE_PTR(path), TAKE_PTR(files), n_hashes };
        lf->n_manifests++;
        return 0;
}

static void live_files_remove_at(LiveFiles *lf, size_t pos) {
        LiveFilesManifest m = lf->manifests[pos];

        for (size_t i = 0; i < m.n_files; i++)
                live_files_slot_drop(lf, m.files[i]);
        live_files_release(lf, strlen(m.path) + 1 + (uint64_t)m.n_files * sizeof(*m.files));
        free(m.path);
        free(m.files);
        memmove(&lf->manifests[pos], &lf->manifests[pos + 1],
                (lf->n_manifests - pos - 1) * sizeof(*lf->manifests));
        lf->n_manifests--;
}

bool live_files_remove_manifest(LiveFiles *lf, const char *manifest) {
        bool found;
        size_t pos = live_files_find(lf, manifest, &found);

        if (found)
                live_files_remove_at(lf, pos);
        return found;
}

static int live_files_compare_strings(const void *a, const void *b) {
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int live_files_retain(LiveFiles *lf, const char *const *manifests, size_t n) {
        _cleanup_(freep) const char **sorted = NULL;
        int removed = 0;

        if (n > 0) {
                sorted = calloc(n, sizeof(*sorted));
                if (!sorted)
                        return -ENOMEM;
                memcpy(sorted, manifests, n * sizeof(*sorted));
                qsort(sorted, n, sizeof(*sorted), live_files_compare_strings);
        }
        for (size_t i = lf->n_manifests; i > 0; i--) {
                const char *path = lf->manifests[i - 1].path;

                if (n > 0 && bsearch(&path, sorted, n, sizeof(*sorted), live_files_compare_strings))
                        continue;
                live_files_remove_at(lf, i - 1);
                if (removed < INT32_MAX)
                        removed++;
        }
        return removed;
}

const char *live_files_find_manifest(const LiveFiles *lf, LiveFileHash hash) {
        for (size_t i = 0; i < lf->n_manifests; i++)
                for (size_t k = 0; k < lf->manifests[i].n_files; k++)
                        if (lf->manifests[i].files[k].lo == hash.lo &&
                            lf->manifests[i].files[k].hi == hash.hi)
                                return lf->manifests[i].path;
        return NULL;
}

size_t live_files_n_files(const LiveFiles *lf) {
        return lf->n_used;
}

size_t live_files_n_manifests(const LiveFiles *lf) {
        return lf->n_manifests;
}

uint64_t live_files_bytes(const LiveFiles *lf) {
        return lf->hold.bytes;
}
