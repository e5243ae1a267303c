/* SPDX-License-Identifier: Apache-2.0 */
/* Bytes of memory held against bounds: a Budget shared by every holder (and by threads: the loop
 * and the thread pool charge it at once), and a BudgetHold, one holder's part of it with a bound
 * of its own. One thread at a time per hold; the budget itself is safe from any thread. */
#pragma once

#include <stdatomic.h>
#include <stdint.h>

/* What all holders may take together. Owned by whoever makes the holders; outlives them. */
typedef struct Budget {
        _Atomic uint64_t used;
        uint64_t max_bytes;
} Budget;

/* One holder's bytes: at most max_bytes, and charged to budget (NULL: its own bound only). */
typedef struct BudgetHold {
        Budget *budget;
        uint64_t max_bytes;
        uint64_t bytes;
} BudgetHold;

/* Takes n more bytes. Returns 0; -EFBIG when the holder would pass its own bound, -EBUSY when
 * the shared budget is spent (others hold it: it comes back as they release). On failure
 * nothing is taken. */
int budget_take(BudgetHold *h, uint64_t n);
/* Gives back n of the bytes the holder holds. */
void budget_release(BudgetHold *h, uint64_t n);
/* Gives back everything the holder holds (at the end of its life; safe twice). */
void budget_release_all(BudgetHold *h);
/* What all holders hold together now. */
uint64_t budget_used(const Budget *b);
