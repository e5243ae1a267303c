/* SPDX-License-Identifier: Apache-2.0 */
/* Process metrics: counters, gauges and histograms with one optional label, exposed in the
 * Prometheus text format. Owned by the daemon; modules get a borrowed pointer. Loop thread only. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/cleanup.h"

typedef struct Metrics Metrics;

/* Joins the two label values of a two-label family: "get" METRICS_LABEL_SEP "success". */
#define METRICS_LABEL_SEP "\x1f"

typedef enum MetricKind {
        METRIC_COUNTER,
        METRIC_GAUGE,
        METRIC_HISTOGRAM,
} MetricKind;

typedef enum MetricId {
        METRIC_HTTP_REQUESTS,    /* counter{code} */
        METRIC_COMMIT_REQUESTS,  /* counter{outcome}: writer requests by final outcome */
        METRIC_COMMIT_ATTEMPTS,  /* counter{outcome}: catalog commit attempts */
        METRIC_COMMIT_RETRIES,   /* counter{reason} */
        METRIC_COMMIT_SNAPSHOTS, /* counter: snapshots committed */
        METRIC_COMMIT_DURATION,  /* histogram: request accepted -> durable, seconds */
        METRIC_BATCH_REQUESTS,   /* histogram: requests per committed snapshot */
        METRIC_QUEUE_REQUESTS,   /* gauge: requests waiting or in flight */
        METRIC_ROWS_ASSIGNED,    /* counter: row ids assigned (sum of added-rows) */
        METRIC_CATALOG_READY,    /* gauge: 1 once /v1/config was loaded */
        METRIC_STORAGE_WRITABLE, /* gauge: 0 while storage refuses writes */
        METRIC_LINEAGE_BREAKS,   /* counter{table}: committed requests that broke v3 row lineage */
        METRIC_STORAGE_REQUESTS, /* counter{operation,outcome}: one per store round trip */
        METRIC_STORAGE_BYTES,    /* counter{direction}: "read", "written" */
        METRIC_STORAGE_DURATION, /* histogram: seconds per store round trip */
        METRIC_LIVE_INDEX_BYTES, /* gauge: memory of every live-file index */
        METRIC_LIVE_INDEX_MANIFESTS_READ, /* counter: manifests read into live-file indexes */
        METRIC_LIVE_INDEX_DROPS, /* counter{reason}: indexes dropped ("too-large", "unreadable") */
        METRIC_LIVE_FILE_REFUSALS, /* counter: requests refused for a data file already live */
        METRIC_TABLE_LOADS,        /* counter{reason}: tables loaded by commits (no usable state) */
        METRIC_MANIFESTS_MERGED,   /* counter: parent manifests replaced by merged ones */
        _METRIC_MAX,
} MetricId;

int metrics_new(Metrics **ret);
Metrics *metrics_free(Metrics *m);
DEFINE_CLEANUP_FUNC(Metrics, metrics_free);

/* Adds to a counter (or gauge) sample; label may be NULL, and so may m (tests without metrics).
 * Allocation failure only loses the sample: metrics never fail a commit. */
void metrics_add(Metrics *m, MetricId id, const char *label, double value);
void metrics_set(Metrics *m, MetricId id, const char *label, double value);
void metrics_observe(Metrics *m, MetricId id, double value);
/* Reads a counter or gauge sample (0 when never set); for tests. */
double metrics_get(const Metrics *m, MetricId id, const char *label);
/* Appends the Prometheus text exposition of every metric. */
int metrics_expose(const Metrics *m, Buf *out);
