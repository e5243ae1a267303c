/* SPDX-License-Identifier: Apache-2.0 */
/* Byte budgets (see budget.h). The shared count is taken with a compare-and-swap, so that two
 * threads cannot both take its last bytes. */
#include <assert.h>
#include <errno.h>

#include "util/budget.h"

int budget_take(BudgetHold *h, uint64_t n) {
        Budget *b = h->budget;
        uint64_t used;

        if (h->bytes > h->max_bytes || n > h->max_bytes - h->bytes)
                return -EFBIG;
        if (b) {
                used = atomic_load(&b->used);
                do {
                        if (used > b->max_bytes || n > b->max_bytes - used)
                                return -EBUSY;
                } while (!atomic_compare_exchange_weak(&b->used, &used, used + n));
        }
        h->bytes += n;
        return 0;
}

void budget_release(BudgetHold *h, uint64_t n) {
        assert(n <= h->bytes);
        h->bytes -= n;
        if (h->budget)
                atomic_fetch_sub(&h->budget->used, n);
}

void budget_release_all(BudgetHold *h) {
        budget_release(h, h->bytes);
}

uint64_t budget_used(const Budget *b) {
        return atomic_load(&b->used);
}
