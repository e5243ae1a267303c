/* SPDX-License-Identifier: Apache-2.0 */
/* Process metrics: counters, gauges and histograms with up to three labels, exposed in the
 * Prometheus text format. Owned by the daemon; modules get a borrowed pointer. Loop thread only. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/cleanup.h"

typedef struct Metrics Metrics;

/* Joins the label values of a family with several labels: "get" METRICS_LABEL_SEP "success". */
#define METRICS_LABEL_SEP "\x1f"
#define METRICS_MAX_LABELS 3
/* The table label of every table beyond metrics.max-table-labels. */
#define METRICS_TABLE_OTHER "other"

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
        METRIC_STORAGE_DURATION, /* histogram{operation,outcome}: seconds per store round trip */
        METRIC_LIVE_INDEX_BYTES, /* gauge: memory of every live-file index */
        METRIC_INTAKE_BYTES, /* gauge: bytes requests hold at intake (commit.intake-max-bytes) */
        METRIC_RECEIPT_CACHE_BYTES,       /* gauge: bytes of the finished requests remembered */
        METRIC_LIVE_INDEX_MANIFESTS_READ, /* counter: manifests read into live-file indexes */
        METRIC_LIVE_INDEX_DROPS, /* counter{reason}: indexes dropped ("too-large", "unreadable") */
        METRIC_LIVE_FILE_REFUSALS, /* counter: requests refused for a data file already live */
        METRIC_TABLE_LOADS,        /* counter{reason}: tables loaded by commits (no usable state) */
        METRIC_MANIFESTS_MERGED,   /* counter: parent manifests replaced by merged ones */
        METRIC_BUILD_INFO,         /* gauge{version,revision}: always 1 */
        METRIC_PROCESS_CPU,        /* counter: user + system CPU seconds (read at scrape) */
        METRIC_PROCESS_RESIDENT,   /* gauge: resident memory bytes */
        METRIC_PROCESS_VIRTUAL,    /* gauge: virtual memory bytes */
        METRIC_PROCESS_OPEN_FDS,   /* gauge */
        METRIC_PROCESS_MAX_FDS,    /* gauge: RLIMIT_NOFILE's soft limit */
        METRIC_PROCESS_START_TIME, /* gauge: Unix time the process started, seconds */
        METRIC_CATALOG_REQUESTS,   /* counter{operation,outcome}: one per catalog call */
        METRIC_CATALOG_DURATION,   /* histogram{operation,outcome}: seconds per catalog call */
        METRIC_HTTP_DURATION,      /* histogram{method,route,code}: request in -> answer out */
        METRIC_TABLE_QUEUE_REQUESTS, /* gauge{table}: requests waiting or in flight */
        METRIC_TABLE_OLDEST_AGE,     /* gauge{table}: seconds the oldest of them has waited */
        METRIC_TABLE_LAST_COMMIT,    /* gauge{table}: Unix time of the last committed snapshot */
        METRIC_TABLE_ROWS_ASSIGNED,  /* counter{table}: row ids assigned */
        METRIC_UNKNOWN_OUTSTANDING,  /* gauge: requests whose commit got no verdict, unresolved */
        METRIC_UNKNOWN_RESOLVED,     /* counter{resolution}: "committed", "not-committed" */
        _METRIC_MAX,
} MetricId;

int metrics_new(Metrics **ret);
Metrics *metrics_free(Metrics *m);
DEFINE_CLEANUP_FUNC(Metrics, metrics_free);

/* Bounds the values of every table label (metrics.max-table-labels): the first `max` tables
 * seen keep their name, every later one is counted as METRICS_TABLE_OTHER. */
void metrics_set_max_table_labels(Metrics *m, size_t max);
/* The label value for a table, "ns.table" (a name as the engine keeps it, levels joined by
 * METRICS_LABEL_SEP, is shown with dots), or METRICS_TABLE_OTHER beyond the bound or when out of
 * memory. Borrowed from m (or static): valid until metrics_free(). m may be NULL. */
const char *metrics_table_label(Metrics *m, const char *table);

/* Adds to a counter (or gauge) sample; label may be NULL, and so may m (tests without metrics).
 * Allocation failure only loses the sample: metrics never fail a commit. */
void metrics_add(Metrics *m, MetricId id, const char *label, double value);
void metrics_set(Metrics *m, MetricId id, const char *label, double value);
/* Sets every sample of a labelled gauge to 0 (before the values of a scrape are filled in). */
void metrics_reset(Metrics *m, MetricId id);
/* Counts one observation in an unlabelled histogram, or in one sample of a labelled one. */
void metrics_observe(Metrics *m, MetricId id, double value);
void metrics_observe_label(Metrics *m, MetricId id, const char *label, double value);
/* Reads a counter or gauge sample, or a histogram sample's count (0 when never set); tests. */
double metrics_get(const Metrics *m, MetricId id, const char *label);
/* Reads the process_* values from /proc/self, then appends the Prometheus text exposition of
 * every metric. */
int metrics_expose(Metrics *m, Buf *out);

/* process.c */
typedef struct MetricsProcess {
        double cpu_seconds;
        double resident_bytes;
        double virtual_bytes;
        double open_fds;
        double max_fds;
        double start_time_seconds;
} MetricsProcess;

/* Reads this process's figures from /proc/self (and /proc/stat for the boot time). Returns 0,
 * or -errno when /proc cannot be read (then nothing is written). */
int metrics_process_read(MetricsProcess *ret);
