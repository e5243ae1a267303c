/* SPDX-License-Identifier: Apache-2.0 */
/* Metric storage and Prometheus text exposition (format 0.0.4). A handful of families with few
 * label values each, so samples live in small arrays; no hashing is needed. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"

typedef struct MetricInfo {
        const char *name;
        const char *help;
        MetricKind kind;
        const char *label_name;
        const char
                *label2_name; /* a second label: the sample's label is "a" METRICS_LABEL_SEP "b" */
} MetricInfo;

static const MetricInfo metric_info[_METRIC_MAX] = {
        [METRIC_HTTP_REQUESTS] = { "icecommit_http_requests_total",
                                   "HTTP requests answered, by status code.", METRIC_COUNTER,
                                   "code", NULL },
        [METRIC_COMMIT_REQUESTS] = { "icecommit_commit_requests_total",
                                     "Writer commit requests by final outcome.", METRIC_COUNTER,
                                     "outcome", NULL },
        [METRIC_COMMIT_ATTEMPTS] = { "icecommit_commit_attempts_total",
                                     "Catalog commit attempts by outcome.", METRIC_COUNTER,
                                     "outcome", NULL },
        [METRIC_COMMIT_RETRIES] = { "icecommit_commit_retries_total",
                                    "Commit attempts retried, by reason.", METRIC_COUNTER, "reason",
                                    NULL },
        [METRIC_COMMIT_SNAPSHOTS] = { "icecommit_snapshots_committed_total", "Snapshots committed.",
                                      METRIC_COUNTER, NULL, NULL },
        [METRIC_COMMIT_DURATION] = { "icecommit_commit_duration_seconds",
                                     "Time from accepting a writer request to its durable commit.",
                                     METRIC_HISTOGRAM, NULL, NULL },
        [METRIC_BATCH_REQUESTS] = { "icecommit_batch_requests",
                                    "Writer requests per committed snapshot.", METRIC_HISTOGRAM,
                                    NULL, NULL },
        [METRIC_QUEUE_REQUESTS] = { "icecommit_queue_requests",
                                    "Writer requests waiting or in flight.", METRIC_GAUGE, NULL,
                                    NULL },
        [METRIC_ROWS_ASSIGNED] = { "icecommit_row_ids_assigned_total",
                                   "Row ids assigned to committed snapshots (sum of added-rows).",
                                   METRIC_COUNTER, NULL, NULL },
        [METRIC_LINEAGE_BREAKS] = { "icecommit_lineage_breaks_total",
                                    "Committed writer requests whose equality deletes break v3 row "
                                    "lineage (allowed by policy), by table.",
                                    METRIC_COUNTER, "table", NULL },
        [METRIC_CATALOG_READY] = { "icecommit_catalog_ready",
                                   "1 once the catalog configuration was loaded.", METRIC_GAUGE,
                                   NULL, NULL },
        [METRIC_STORAGE_WRITABLE] = { "icecommit_storage_writable",
                                      "0 from a write refused for a reason of the storage until a "
                                      "write or probe succeeds, else 1.",
                                      METRIC_GAUGE, NULL, NULL },
        [METRIC_STORAGE_REQUESTS] = { "icecommit_storage_requests_total",
                                      "Object-store and file requests, by operation and outcome.",
                                      METRIC_COUNTER, "operation", "outcome" },
        [METRIC_STORAGE_BYTES] = { "icecommit_storage_bytes_total",
                                   "Bytes read from and written to table storage, by direction.",
                                   METRIC_COUNTER, "direction", NULL },
        [METRIC_STORAGE_DURATION] = { "icecommit_storage_request_duration_seconds",
                                      "Latency of one object-store or file request.",
                                      METRIC_HISTOGRAM, NULL, NULL },
        [METRIC_LIVE_INDEX_BYTES] = { "icecommit_live_file_index_bytes",
                                      "Memory held by the live-file indexes of all tables.",
                                      METRIC_GAUGE, NULL, NULL },
        [METRIC_LIVE_INDEX_MANIFESTS_READ] = { "icecommit_live_file_index_manifests_read_total",
                                               "Table manifests read into live-file indexes.",
                                               METRIC_COUNTER, NULL, NULL },
        [METRIC_LIVE_INDEX_DROPS] = { "icecommit_live_file_index_drops_total",
                                      "Live-file indexes dropped (the table commits without the "
                                      "check), by reason.",
                                      METRIC_COUNTER, "reason", NULL },
        [METRIC_TABLE_LOADS] = { "icecommit_table_loads_total",
                                 "Tables loaded from the catalog for commits, by why the "
                                 "in-memory state could not be used (first, conflict, unknown, "
                                 "failed, age, commit-response, ...).",
                                 METRIC_COUNTER, "reason", NULL },
        [METRIC_LIVE_FILE_REFUSALS] = { "icecommit_live_file_refusals_total",
                                        "Writer requests refused for naming a data file already "
                                        "live in the table.",
                                        METRIC_COUNTER, NULL, NULL },
        [METRIC_MANIFESTS_MERGED] = { "icecommit_manifests_merged_total",
                                      "Parent manifests replaced by merged manifests in committed "
                                      "snapshots (table property commit.manifest-merge.enabled).",
                                      METRIC_COUNTER, NULL, NULL },
};

/* Upper bounds shared by both histograms: seconds for latency, counts for batch sizes. */
static const double histogram_bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                           2.5,   5,    10,    30,   60,  256,  1024 };
#define N_BOUNDS (sizeof(histogram_bounds) / sizeof(histogram_bounds[0]))

typedef struct Sample {
        char *label;
        double value;
} Sample;

typedef struct Family {
        Sample *samples;
        size_t n_samples;
        uint64_t buckets[N_BOUNDS];
        uint64_t count;
        double sum;
} Family;

struct Metrics {
        Family families[_METRIC_MAX];
};

int metrics_new(Metrics **ret) {
        Metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

Metrics *metrics_free(Metrics *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < _METRIC_MAX; i++) {
                for (size_t j = 0; j < m->families[i].n_samples; j++)
                        free(m->families[i].samples[j].label);
                free(m->families[i].samples);
        }
        free(m);
        return NULL;
}

static Sample *metrics_sample(Metrics *m, MetricId id, const char *label) {
        Family *f = &m->families[id];
        Sample *samples;
        char *copy = NULL;

        for (size_t i = 0; i < f->n_samples; i++)
                if ((!label && !f->samples[i].label) ||
                    (label && f->samples[i].label && strcmp(label, f->samples[i].label) == 0))
                        return &f->samples[i];
        if (label && !(copy = strdup(label)))
                return NULL;
        samples = reallocarray(f->samples, f->n_samples + 1, sizeof(*samples));
        if (!samples) {
                free(copy);
                return NULL;
        }
        f->samples = samples;
        f->samples[f->n_samples] = (Sample){ copy, 0 };
        return &f->samples[f->n_samples++];
}

void metrics_add(Metrics *m, MetricId id, const char *label, double value) {
        Sample *s = m ? metrics_sample(m, id, label) : NULL;

        if (s)
                s->value += value;
}

void metrics_set(Metrics *m, MetricId id, const char *label, double value) {
        Sample *s = m ? metrics_sample(m, id, label) : NULL;

        if (s)
                s->value = value;
}

void metrics_observe(Metrics *m, MetricId id, double value) {
        Family *f;

        if (!m)
                return;
        f = &m->families[id];
        for (size_t i = 0; i < N_BOUNDS; i++)
                if (value <= histogram_bounds[i])
                        f->buckets[i]++;
        f->count++;
        f->sum += value;
}

double metrics_get(const Metrics *m, MetricId id, const char *label) {
        const Family *f = &m->families[id];

        for (size_t i = 0; i < f->n_samples; i++)
                if ((!label && !f->samples[i].label) ||
                    (label && f->samples[i].label && strcmp(label, f->samples[i].label) == 0))
                        return f->samples[i].value;
        return 0;
}

/* Exposition format: label values escape backslash, double quote and line feed (a table
 * name is the writer's). */
static int metrics_append_label_value(Buf *out, const char *v) {
        int r = 0;

        for (; *v && r == 0; v++)
                r = *v == '\\'   ? buf_append_str(out, "\\\\")
                    : *v == '"'  ? buf_append_str(out, "\\\"")
                    : *v == '\n' ? buf_append_str(out, "\\n")
                                 : buf_append_byte(out, (uint8_t)*v);
        return r;
}

int metrics_expose(const Metrics *m, Buf *out) {
        static const char *const kind_name[] = { "counter", "gauge", "histogram" };
        int r = 0;

        for (size_t i = 0; i < _METRIC_MAX && r == 0; i++) {
                const MetricInfo *info = &metric_info[i];
                const Family *f = &m->families[i];

                r = buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", info->name, info->help,
                               info->name, kind_name[info->kind]);
                if (info->kind == METRIC_HISTOGRAM) {
                        for (size_t b = 0; b < N_BOUNDS && r == 0; b++)
                                r = buf_printf(out, "%s_bucket{le=\"%g\"} %llu\n", info->name,
                                               histogram_bounds[b],
                                               (unsigned long long)f->buckets[b]);
                        if (r == 0)
                                r = buf_printf(out,
                                               "%s_bucket{le=\"+Inf\"} %llu\n%s_sum "
                                               "%.17g\n%s_count %llu\n",
                                               info->name, (unsigned long long)f->count, info->name,
                                               f->sum, info->name, (unsigned long long)f->count);
                        continue;
                }
                if (f->n_samples == 0 && !info->label_name)
                        r = buf_printf(out, "%s 0\n", info->name);
                for (size_t j = 0; j < f->n_samples && r == 0; j++) {
                        if (f->samples[j].label) {
                                const char *label = f->samples[j].label;
                                const char *sep = info->label2_name
                                                          ? strchr(label, METRICS_LABEL_SEP[0])
                                                          : NULL;

                                r = buf_printf(out, "%s{%s=\"", info->name, info->label_name);
                                if (r == 0)
                                        r = sep ? buf_append(out, label, (size_t)(sep - label))
                                                : metrics_append_label_value(out, label);
                                if (r == 0 && sep) {
                                        r = buf_printf(out, "\",%s=\"", info->label2_name);
                                        if (r == 0)
                                                r = metrics_append_label_value(out, sep + 1);
                                }
                                if (r == 0)
                                        r = buf_printf(out, "\"} %.17g\n", f->samples[j].value);
                        } else
                                r = buf_printf(out, "%s %.17g\n", info->name, f->samples[j].value);
                }
        }
        return r;
}
