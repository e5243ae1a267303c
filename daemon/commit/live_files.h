/* SPDX-License-Identifier: Apache-2.0 */
/* The live data files of one table ref, compactly: the 128-bit keyed hash (SipHash-2-4) of
 * each file's canonical location in an open-addressing set, and per manifest the hashes of the
 * live files it holds, so that a manifest that leaves the table takes its files with it. Pure;
 * one thread at a time per object (the budget is shared safely between threads). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/budget.h"
#include "util/cleanup.h"
#include "util/siphash.h"

/* The hash of one canonical location. With a secret random key and 128 bits, two files share
 * one only by chance (about n^2 / 2^129 for n files: never, in practice), and no writer can
 * search for a path that collides with another writer's: a hit is taken as the same file. */
typedef struct LiveFileHash {
        uint64_t lo, hi;
} LiveFileHash;

typedef struct LiveFiles LiveFiles;

/* Creates an empty index hashing with `key` (copied), taking at most max_bytes itself and
 * charging budget (the memory all indexes may take together: borrowed for its lifetime; NULL:
 * no shared bound). -ENOMEM, or -E2BIG when even the empty index does not fit. */
int live_files_new(const uint8_t key[SIPHASH_KEY_BYTES], uint64_t max_bytes, Budget *budget,
                   LiveFiles **ret_files);
/* Frees the index and gives its bytes back to the budget. NULL is fine; returns NULL. */
LiveFiles *live_files_free(LiveFiles *lf);
DEFINE_CLEANUP_FUNC(LiveFiles, live_files_free);

/* The hash of `location` under its canonical spelling (storage_location_canonical): every
 * spelling of one file hashes alike. -ENOMEM. */
int live_files_hash(const LiveFiles *lf, const char *location, LiveFileHash *ret_hash);

/* Records the live files of a manifest (hashes copied; a file it names twice is held twice, and
 * let go twice by its removal). Returns 0; -EEXIST when the manifest is known already; -E2BIG when
 * the index would outgrow its own bound or the budget; -ENOMEM. On failure nothing changed. */
int live_files_add_manifest(LiveFiles *lf, const char *manifest, const LiveFileHash *hashes,
                            size_t n_hashes);
/* Forgets a manifest: its files stay live only if another manifest holds them too. Returns
 * whether it was known. */
bool live_files_remove_manifest(LiveFiles *lf, const char *manifest);
bool live_files_has_manifest(const LiveFiles *lf, const char *manifest);
/* Forgets every manifest not among manifests[0..n) (exact strings, as the manifest list
 * spells them). Returns how many were forgotten, or -ENOMEM (nothing changed). */
int live_files_retain(LiveFiles *lf, const char *const *manifests, size_t n);

/* Whether a file is live: held by at least one manifest. */
bool live_files_contains(const LiveFiles *lf, LiveFileHash hash);
/* A manifest that holds the file, or NULL: a scan of every manifest, for messages. */
const char *live_files_find_manifest(const LiveFiles *lf, LiveFileHash hash);

size_t live_files_n_files(const LiveFiles *lf); /* distinct live files */
size_t live_files_n_manifests(const LiveFiles *lf);
uint64_t live_files_bytes(const LiveFiles *lf); /* as charged to its bounds */
