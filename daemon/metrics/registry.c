/* SPDX-License-Identifier: Apache-2.0 */
/* Metric storage and Prometheus text exposition (format 0.0.4). A few dozen families with few
 * label values each (table labels bounded by metrics.max-table-labels), so samples live in
 * small arrays; no hashing is needed. */
#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics.h"
#include "metrics/revision.h"

typedef struct MetricInfo {
        const char *name;
        const char *help;
        MetricKind kind;
        /* A sample's label holds one value per name, joined by METRICS_LABEL_SEP. */
        const char *labels[METRICS_MAX_LABELS];
        bool is_count; /* a histogram of counts (batch sizes), not of seconds */
} MetricInfo;

#define INFO(id, n, h, k, ...) [id] = { .name = n, .help = h, .kind = k, .labels = { __VA_ARGS__ } }

static const MetricInfo metric_info[_METRIC_MAX] = {
        INFO(METRIC_HTTP_REQUESTS, "icecommit_http_requests_total",
             "HTTP requests answered, by status code.", METRIC_COUNTER, "code"),
        INFO(METRIC_COMMIT_REQUESTS, "icecommit_commit_requests_total",
             "Writer commit requests by final outcome.", METRIC_COUNTER, "outcome"),
        INFO(METRIC_COMMIT_ATTEMPTS, "icecommit_commit_attempts_total",
             "Catalog commit attempts by outcome.", METRIC_COUNTER, "outcome"),
        INFO(METRIC_COMMIT_RETRIES, "icecommit_commit_retries_total",
             "Commit attempts retried, by reason.", METRIC_COUNTER, "reason"),
        INFO(METRIC_COMMIT_SNAPSHOTS, "icecommit_snapshots_committed_total", "Snapshots committed.",
             METRIC_COUNTER, NULL),
        INFO(METRIC_COMMIT_DURATION, "icecommit_commit_duration_seconds",
             "Time from accepting a writer request to its durable commit.", METRIC_HISTOGRAM, NULL),
        [METRIC_BATCH_REQUESTS] = { "icecommit_batch_requests",
                                    "Writer requests per committed snapshot.",
                                    METRIC_HISTOGRAM,
                                    { NULL },
                                    .is_count = true },
        INFO(METRIC_QUEUE_REQUESTS, "icecommit_queue_requests",
             "Writer requests waiting or in flight.", METRIC_GAUGE, NULL),
        INFO(METRIC_ROWS_ASSIGNED, "icecommit_row_ids_assigned_total",
             "Row ids assigned to committed snapshots (sum of added-rows).", METRIC_COUNTER, NULL),
        INFO(METRIC_LINEAGE_BREAKS, "icecommit_lineage_breaks_total",
             "Committed writer requests whose equality deletes break v3 row lineage (allowed by "
             "policy), by table.",
             METRIC_COUNTER, "table"),
        INFO(METRIC_CATALOG_READY, "icecommit_catalog_ready",
             "1 once the catalog configuration was loaded.", METRIC_GAUGE, NULL),
        INFO(METRIC_STORAGE_WRITABLE, "icecommit_storage_writable",
             "0 from a write refused for a reason of the storage until a write or probe "
             "succeeds, else 1.",
             METRIC_GAUGE, NULL),
        INFO(METRIC_STORAGE_REQUESTS, "icecommit_storage_requests_total",
             "Object-store and file requests, by operation and outcome.", METRIC_COUNTER,
             "operation", "outcome"),
        INFO(METRIC_STORAGE_BYTES, "icecommit_storage_bytes_total",
             "Bytes read from and written to table storage, by direction.", METRIC_COUNTER,
             "direction"),
        INFO(METRIC_STORAGE_DURATION, "icecommit_storage_request_duration_seconds",
             "Latency of one object-store or file request, by operation and outcome.",
             METRIC_HISTOGRAM, "operation", "outcome"),
        INFO(METRIC_LIVE_INDEX_BYTES, "icecommit_live_file_index_bytes",
             "Memory held by the live-file indexes of all tables.", METRIC_GAUGE, NULL),
        INFO(METRIC_INTAKE_BYTES, "icecommit_intake_bytes",
             "Bytes writer requests hold at intake: manifests read, parsed, being checked.",
             METRIC_GAUGE, NULL),
        INFO(METRIC_RECEIPT_CACHE_BYTES, "icecommit_receipt_cache_bytes",
             "Bytes of the finished requests remembered for replays and GET /v1/commits.",
             METRIC_GAUGE, NULL),
        INFO(METRIC_LIVE_INDEX_MANIFESTS_READ, "icecommit_live_file_index_manifests_read_total",
             "Table manifests read into live-file indexes.", METRIC_COUNTER, NULL),
        INFO(METRIC_LIVE_INDEX_DROPS, "icecommit_live_file_index_drops_total",
             "Live-file indexes dropped (the table commits without the check), by reason.",
             METRIC_COUNTER, "reason"),
        INFO(METRIC_TABLE_LOADS, "icecommit_table_loads_total",
             "Tables loaded from the catalog for commits, by why the in-memory state could not "
             "be used (first, conflict, unknown, failed, age, commit-response, ...).",
             METRIC_COUNTER, "reason"),
        INFO(METRIC_LIVE_FILE_REFUSALS, "icecommit_live_file_refusals_total",
             "Writer requests refused for naming a data file already live in the table.",
             METRIC_COUNTER, NULL),
        INFO(METRIC_MANIFESTS_MERGED, "icecommit_manifests_merged_total",
             "Parent manifests replaced by merged manifests in committed snapshots (table "
             "property commit.manifest-merge.enabled).",
             METRIC_COUNTER, NULL),
        INFO(METRIC_BUILD_INFO, "icecommit_build_info",
             "Always 1; the labels say which icecommitd this is.", METRIC_GAUGE, "version",
             "revision"),
        INFO(METRIC_PROCESS_CPU, "process_cpu_seconds_total",
             "Total user and system CPU time spent in seconds.", METRIC_COUNTER, NULL),
        INFO(METRIC_PROCESS_RESIDENT, "process_resident_memory_bytes",
             "Resident memory size in bytes.", METRIC_GAUGE, NULL),
        INFO(METRIC_PROCESS_VIRTUAL, "process_virtual_memory_bytes",
             "Virtual memory size in bytes.", METRIC_GAUGE, NULL),
        INFO(METRIC_PROCESS_OPEN_FDS, "process_open_fds", "Number of open file descriptors.",
             METRIC_GAUGE, NULL),
        INFO(METRIC_PROCESS_MAX_FDS, "process_max_fds", "Maximum number of open file descriptors.",
             METRIC_GAUGE, NULL),
        INFO(METRIC_PROCESS_START_TIME, "process_start_time_seconds",
             "Start time of the process since unix epoch in seconds.", METRIC_GAUGE, NULL),
        INFO(METRIC_CATALOG_REQUESTS, "icecommit_catalog_requests_total",
             "Catalog calls (loads, commits, creations), by operation and outcome.", METRIC_COUNTER,
             "operation", "outcome"),
        INFO(METRIC_CATALOG_DURATION, "icecommit_catalog_request_duration_seconds",
             "Latency of one catalog call, retries of the client included, by operation and "
             "outcome.",
             METRIC_HISTOGRAM, "operation", "outcome"),
        INFO(METRIC_HTTP_DURATION, "icecommit_http_request_duration_seconds",
             "Time from dispatching a request (headers and body received) to its answer, by "
             "method, route pattern and status code (\"other\" outside the routes).",
             METRIC_HISTOGRAM, "method", "route", "code"),
        INFO(METRIC_TABLE_QUEUE_REQUESTS, "icecommit_table_queue_requests",
             "Writer requests waiting or in flight, by table.", METRIC_GAUGE, "table"),
        INFO(METRIC_TABLE_OLDEST_AGE, "icecommit_table_oldest_request_age_seconds",
             "How long the oldest request waiting or in flight has been accepted, by table (0 "
             "with none).",
             METRIC_GAUGE, "table"),
        INFO(METRIC_TABLE_LAST_COMMIT, "icecommit_table_last_commit_timestamp_seconds",
             "Unix time of the last snapshot this daemon committed, by table.", METRIC_GAUGE,
             "table"),
        INFO(METRIC_TABLE_ROWS_ASSIGNED, "icecommit_table_row_ids_assigned_total",
             "Row ids assigned to committed snapshots, by table.", METRIC_COUNTER, "table"),
        INFO(METRIC_UNKNOWN_OUTSTANDING, "icecommit_unknown_outcomes_outstanding",
             "Writer requests whose commit got no verdict and that are not resolved yet: being "
             "resolved by the daemon, or answered 504 until their writer retries.",
             METRIC_GAUGE, NULL),
        INFO(METRIC_UNKNOWN_RESOLVED, "icecommit_unknown_outcomes_resolved_total",
             "Writer requests with an earlier commit without verdict whose outcome became known, "
             "by resolution (committed, not-committed).",
             METRIC_COUNTER, "resolution"),
};

/* Seconds for latency (1 ms .. 2 min), counts for batch sizes (powers of two). */
static const double seconds_bounds[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                         0.5,   1,      2.5,   5,    10,    30,   60,  120 };
static const double count_bounds[] = { 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024 };
#define N_BOUNDS_MAX (sizeof(seconds_bounds) / sizeof(seconds_bounds[0]))
static_assert(sizeof(count_bounds) <= sizeof(seconds_bounds), "buckets sized for the larger set");

typedef struct Sample {
        char *label; /* NULL for an unlabelled family */
        double value;
        uint64_t buckets[N_BOUNDS_MAX]; /* histograms: not cumulative, summed on exposition */
        uint64_t count;
        double sum;
} Sample;

typedef struct Family {
        Sample *samples;
        size_t n_samples;
} Family;

struct Metrics {
        Family families[_METRIC_MAX];
        char **tables; /* the table label values admitted, at most max_tables */
        size_t n_tables;
        size_t max_tables;
};

static void metrics_bounds(const MetricInfo *info, const double **ret_bounds, size_t *ret_n) {
        *ret_bounds = info->is_count ? count_bounds : seconds_bounds;
        *ret_n = info->is_count ? sizeof(count_bounds) / sizeof(count_bounds[0])
                                : sizeof(seconds_bounds) / sizeof(seconds_bounds[0]);
}

int metrics_new(Metrics **ret) {
        Metrics *m = calloc(1, sizeof(*m));

        if (!m)
                return -ENOMEM;
        m->max_tables = 64;
        metrics_set(m, METRIC_BUILD_INFO, ICECOMMIT_VERSION METRICS_LABEL_SEP ICECOMMIT_REVISION,
                    1);
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
        for (size_t i = 0; i < m->n_tables; i++)
                free(m->tables[i]);
        free(m->tables);
        free(m);
        return NULL;
}

void metrics_set_max_table_labels(Metrics *m, size_t max) {
        if (m)
                m->max_tables = max;
}

const char *metrics_table_label(Metrics *m, const char *table) {
        char **tables, *copy;

        if (!m || !table)
                return METRICS_TABLE_OTHER;
        copy = strdup(table);
        if (!copy)
                return METRICS_TABLE_OTHER;
        for (char *p = copy; *p; p++)
                if (*p == METRICS_LABEL_SEP[0])
                        *p = '.';
        for (size_t i = 0; i < m->n_tables; i++)
                if (strcmp(m->tables[i], copy) == 0) {
                        free(copy);
                        return m->tables[i];
                }
        /* Admitted once, kept for the process's life: a series never changes its label. */
        if (m->n_tables >= m->max_tables || strcmp(copy, METRICS_TABLE_OTHER) == 0) {
                free(copy);
                return METRICS_TABLE_OTHER;
        }
        tables = reallocarray(m->tables, m->n_tables + 1, sizeof(*tables));
        if (!tables) {
                free(copy);
                return METRICS_TABLE_OTHER;
        }
        m->tables = tables;
        m->tables[m->n_tables] = copy;
        return m->tables[m->n_tables++];
}

static bool metrics_label_equal(const char *a, const char *b) {
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static Sample *metrics_sample(Metrics *m, MetricId id, const char *label) {
        Family *f = &m->families[id];
        Sample *samples;
        char *copy = NULL;

        for (size_t i = 0; i < f->n_samples; i++)
                if (metrics_label_equal(label, f->samples[i].label))
                        return &f->samples[i];
        if (label && !(copy = strdup(label)))
                return NULL;
        samples = reallocarray(f->samples, f->n_samples + 1, sizeof(*samples));
        if (!samples) {
                free(copy);
                return NULL;
        }
        f->samples = samples;
        f->samples[f->n_samples] = (Sample){ .label = copy };
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

void metrics_reset(Metrics *m, MetricId id) {
        if (!m)
                return;
        for (size_t i = 0; i < m->families[id].n_samples; i++)
                m->families[id].samples[i].value = 0;
}

void metrics_observe_label(Metrics *m, MetricId id, const char *label, double value) {
        const double *bounds;
        size_t n_bounds;
        Sample *s;

        if (!m || !(s = metrics_sample(m, id, label)))
                return;
        metrics_bounds(&metric_info[id], &bounds, &n_bounds);
        for (size_t i = 0; i < n_bounds; i++)
                if (value <= bounds[i]) {
                        s->buckets[i]++;
                        break;
                }
        s->count++;
        s->sum += value;
}

void metrics_observe(Metrics *m, MetricId id, double value) {
        metrics_observe_label(m, id, NULL, value);
}

double metrics_get(const Metrics *m, MetricId id, const char *label) {
        const Family *f = &m->families[id];

        for (size_t i = 0; i < f->n_samples; i++)
                if (metrics_label_equal(label, f->samples[i].label))
                        return metric_info[id].kind == METRIC_HISTOGRAM
                                       ? (double)f->samples[i].count
                                       : f->samples[i].value;
        return 0;
}

/* Exposition format: label values escape backslash, double quote and line feed (a table
 * name is the writer's). */
static int metrics_append_label_value(Buf *out, const char *v, size_t len) {
        int r = 0;

        for (size_t i = 0; i < len && r == 0; i++)
                r = v[i] == '\\'   ? buf_append_str(out, "\\\\")
                    : v[i] == '"'  ? buf_append_str(out, "\\\"")
                    : v[i] == '\n' ? buf_append_str(out, "\\n")
                                   : buf_append_byte(out, (uint8_t)v[i]);
        return r;
}

/* name{a="x",b="y"[,le="..."]} without the value; `le` may be NULL. */
static int metrics_append_series(Buf *out, const MetricInfo *info, const char *suffix,
                                 const char *label, const char *le) {
        const char *v = label;
        bool has_any = false;
        int r;

        r = buf_printf(out, "%s%s", info->name, suffix);
        for (size_t i = 0; i < METRICS_MAX_LABELS && info->labels[i] && v && r == 0; i++) {
                /* The last label takes the rest: a value may hold the separator only there. */
                const char *sep = i + 1 < METRICS_MAX_LABELS && info->labels[i + 1]
                                          ? strchr(v, METRICS_LABEL_SEP[0])
                                          : NULL;
                size_t len = sep ? (size_t)(sep - v) : strlen(v);

                r = buf_printf(out, "%s%s=\"", has_any ? "," : "{", info->labels[i]);
                if (r == 0)
                        r = metrics_append_label_value(out, v, len);
                if (r == 0)
                        r = buf_append_str(out, "\"");
                has_any = true;
                v = sep ? sep + 1 : NULL;
        }
        if (r == 0 && le)
                r = buf_printf(out, "%sle=\"%s\"", has_any ? "," : "{", le);
        if (r == 0 && (has_any || le))
                r = buf_append_str(out, "}");
        return r;
}

static int metrics_append_histogram(Buf *out, const MetricInfo *info, const Sample *s) {
        const double *bounds;
        size_t n_bounds;
        uint64_t cumulative = 0;
        char le[32];
        int r = 0;

        metrics_bounds(info, &bounds, &n_bounds);
        for (size_t b = 0; b < n_bounds && r == 0; b++) {
                cumulative += s->buckets[b];
                (void)snprintf(le, sizeof(le), "%g", bounds[b]);
                r = metrics_append_series(out, info, "_bucket", s->label, le);
                if (r == 0)
                        r = buf_printf(out, " %llu\n", (unsigned long long)cumulative);
        }
        if (r == 0)
                r = metrics_append_series(out, info, "_bucket", s->label, "+Inf");
        if (r == 0)
                r = buf_printf(out, " %llu\n", (unsigned long long)s->count);
        if (r == 0)
                r = metrics_append_series(out, info, "_sum", s->label, NULL);
        if (r == 0)
                r = buf_printf(out, " %.17g\n", s->sum);
        if (r == 0)
                r = metrics_append_series(out, info, "_count", s->label, NULL);
        if (r == 0)
                r = buf_printf(out, " %llu\n", (unsigned long long)s->count);
        return r;
}

/* The process_* families are read when scraped; without /proc they keep their last values. */
static void metrics_refresh_process(Metrics *m) {
        MetricsProcess p;

        if (metrics_process_read(&p) < 0)
                return;
        metrics_set(m, METRIC_PROCESS_CPU, NULL, p.cpu_seconds);
        metrics_set(m, METRIC_PROCESS_RESIDENT, NULL, p.resident_bytes);
        metrics_set(m, METRIC_PROCESS_VIRTUAL, NULL, p.virtual_bytes);
        metrics_set(m, METRIC_PROCESS_OPEN_FDS, NULL, p.open_fds);
        metrics_set(m, METRIC_PROCESS_MAX_FDS, NULL, p.max_fds);
        metrics_set(m, METRIC_PROCESS_START_TIME, NULL, p.start_time_seconds);
}

int metrics_expose(Metrics *m, Buf *out) {
        static const char *const kind_name[] = { "counter", "gauge", "histogram" };
        static const Sample empty = { 0 };
        int r = 0;

        metrics_refresh_process(m);
        for (size_t i = 0; i < _METRIC_MAX && r == 0; i++) {
                const MetricInfo *info = &metric_info[i];
                const Family *f = &m->families[i];

                r = buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", info->name, info->help,
                               info->name, kind_name[info->kind]);
                /* An unlabelled family always has its one series, 0 until counted. */
                if (r == 0 && f->n_samples == 0 && !info->labels[0])
                        r = info->kind == METRIC_HISTOGRAM
                                    ? metrics_append_histogram(out, info, &empty)
                                    : buf_printf(out, "%s 0\n", info->name);
                for (size_t j = 0; j < f->n_samples && r == 0; j++) {
                        const Sample *s = &f->samples[j];

                        if (info->kind == METRIC_HISTOGRAM) {
                                r = metrics_append_histogram(out, info, s);
                                continue;
                        }
                        r = metrics_append_series(out, info, "", s->label, NULL);
                        if (r == 0)
                                r = buf_printf(out, " %.17g\n", s->value);
                }
        }
        return r;
}
