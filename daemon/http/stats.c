/* SPDX-License-Identifier: Apache-2.0 */
/* HttpStats: every answer counted by status code and timed by route, in the metrics the daemon
 * lends the server. Used by each file that answers: reply.c, and guard.c for the answers it
 * writes to a socket itself. */
#include <stdio.h>

#include "http/http-internal.h"
#include "util/time-util.h"

void http_stats_count_reply(HttpStats *st, int status) {
        char code[8];

        if (!st->metrics)
                return;
        (void)snprintf(code, sizeof(code), "%d", status);
        metrics_add(st->metrics, METRIC_HTTP_REQUESTS, code, 1);
}

void http_stats_time_reply(HttpStats *st, const HttpRoute *route, uint64_t started_ns, int status) {
        char label[512];

        if (!st->metrics)
                return;
        (void)snprintf(label, sizeof(label), "%s" METRICS_LABEL_SEP "%s" METRICS_LABEL_SEP "%d",
                       route ? route->method : "other", route ? route->pattern : "other", status);
        metrics_observe_label(st->metrics, METRIC_HTTP_DURATION, label,
                              (double)(now_monotonic_ns() - started_ns) / 1e9);
}
