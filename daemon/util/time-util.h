/* SPDX-License-Identifier: Apache-2.0 */
/* Clock readings: monotonic for durations and timeouts, real time for Iceberg timestamps. */
#pragma once

#include <stdint.h>
#include <time.h>

static inline uint64_t now_monotonic_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int64_t now_realtime_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
