/* SPDX-License-Identifier: Apache-2.0 */
/* HttpRateLimit: lets a warning that can repeat for every connection or request through once
 * per interval, counting the ones it held back. Below every other file of daemon/http/, which
 * all log such warnings. */
#include "http/http-internal.h"

bool http_ratelimit_test(HttpRateLimit *rl, uv_loop_t *loop, uint64_t *ret_n_suppressed) {
        uint64_t now = uv_now(loop);

        if (now < rl->next_ms) {
                rl->n_suppressed++;
                return false;
        }
        rl->next_ms = now + HTTP_RATELIMIT_INTERVAL_MS;
        *ret_n_suppressed = rl->n_suppressed;
        rl->n_suppressed = 0;
        return true;
}
