/* SPDX-License-Identifier: Apache-2.0 */
/* metrics/: families with up to three labels, labelled histograms, the bound on table labels,
 * icecommit_build_info and the process_* figures read from /proc/self. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "test.h"

static char *expose(Metrics *m) {
        Buf out;

        buf_init(&out, 1u << 24);
        ASSERT_OK(metrics_expose(m, &out));
        return (char *)buf_steal(&out, NULL);
}

TEST(labelled_histogram_has_cumulative_buckets_per_sample) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        _cleanup_(freep) char *text = NULL;

        ASSERT_OK(metrics_new(&m));
        metrics_observe_label(m, METRIC_CATALOG_DURATION, "commit" METRICS_LABEL_SEP "success",
                              0.003);
        metrics_observe_label(m, METRIC_CATALOG_DURATION, "commit" METRICS_LABEL_SEP "success",
                              0.2);
        metrics_observe_label(m, METRIC_CATALOG_DURATION, "load" METRICS_LABEL_SEP "unavailable",
                              500);
        metrics_add(m, METRIC_CATALOG_REQUESTS, "commit" METRICS_LABEL_SEP "success", 2);
        text = expose(m);

        ASSERT_CONTAINS(text, "# TYPE icecommit_catalog_request_duration_seconds histogram\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_bucket{operation="
                              "\"commit\",outcome=\"success\",le=\"0.001\"} 0\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_bucket{operation="
                              "\"commit\",outcome=\"success\",le=\"0.005\"} 1\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_bucket{operation="
                              "\"commit\",outcome=\"success\",le=\"0.25\"} 2\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_bucket{operation="
                              "\"commit\",outcome=\"success\",le=\"+Inf\"} 2\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_count{operation="
                              "\"commit\",outcome=\"success\"} 2\n");
        /* Above the largest bound: only +Inf counts it. */
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_bucket{operation="
                              "\"load\",outcome=\"unavailable\",le=\"120\"} 0\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_bucket{operation="
                              "\"load\",outcome=\"unavailable\",le=\"+Inf\"} 1\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_request_duration_seconds_sum{operation="
                              "\"load\",outcome=\"unavailable\"} 500\n");
        ASSERT_CONTAINS(text, "icecommit_catalog_requests_total{operation=\"commit\",outcome="
                              "\"success\"} 2\n");
        ASSERT_EQ(metrics_get(m, METRIC_CATALOG_DURATION, "commit" METRICS_LABEL_SEP "success"), 2);
        /* The unlabelled histograms keep their one series, zero until observed; batch sizes
         * have count buckets. */
        ASSERT_CONTAINS(text, "icecommit_commit_duration_seconds_count 0\n");
        ASSERT_CONTAINS(text, "icecommit_batch_requests_bucket{le=\"256\"} 0\n");
}

TEST(three_labels_and_escaped_values) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        _cleanup_(freep) char *text = NULL;

        ASSERT_OK(metrics_new(&m));
        metrics_observe_label(m, METRIC_HTTP_DURATION,
                              "POST" METRICS_LABEL_SEP
                              "/v1/namespaces/{}/tables/{}/commits" METRICS_LABEL_SEP "200",
                              0.01);
        metrics_add(m, METRIC_LINEAGE_BREAKS, "ns.a\"b\\c\nd", 1);
        text = expose(m);

        ASSERT_CONTAINS(text, "icecommit_http_request_duration_seconds_count{method=\"POST\","
                              "route=\"/v1/namespaces/{}/tables/{}/commits\",code=\"200\"} 1\n");
        ASSERT_CONTAINS(text, "icecommit_lineage_breaks_total{table=\"ns.a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(table_labels_are_bounded_by_max_table_labels) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        const char *a, *b, *c;

        ASSERT_OK(metrics_new(&m));
        metrics_set_max_table_labels(m, 2);
        a = metrics_table_label(m, "ns" METRICS_LABEL_SEP "a");
        ASSERT_STREQ(a, "ns.a");
        b = metrics_table_label(m, "db" METRICS_LABEL_SEP "x" METRICS_LABEL_SEP "b");
        ASSERT_STREQ(b, "db.x.b");
        c = metrics_table_label(m, "ns" METRICS_LABEL_SEP "c");
        ASSERT_STREQ(c, METRICS_TABLE_OTHER);
        /* An admitted table keeps its label, the same pointer every time. */
        ASSERT_TRUE(metrics_table_label(m, "ns" METRICS_LABEL_SEP "a") == a);
        ASSERT_TRUE(metrics_table_label(m, "ns.a") == a);
        /* A table literally called "other" cannot take a slot of its own. */
        metrics_set_max_table_labels(m, 10);
        ASSERT_STREQ(metrics_table_label(m, "other"), METRICS_TABLE_OTHER);
        ASSERT_STREQ(metrics_table_label(NULL, "ns.a"), METRICS_TABLE_OTHER);

        metrics_set_max_table_labels(m, 0);
        ASSERT_STREQ(metrics_table_label(m, "ns.zzz"), METRICS_TABLE_OTHER);
}

TEST(reset_zeroes_every_sample_of_a_gauge) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        _cleanup_(freep) char *text = NULL;

        ASSERT_OK(metrics_new(&m));
        metrics_add(m, METRIC_TABLE_QUEUE_REQUESTS, "ns.a", 3);
        metrics_add(m, METRIC_TABLE_QUEUE_REQUESTS, "ns.b", 1);
        metrics_reset(m, METRIC_TABLE_QUEUE_REQUESTS);
        metrics_add(m, METRIC_TABLE_QUEUE_REQUESTS, "ns.b", 2);
        text = expose(m);
        ASSERT_CONTAINS(text, "icecommit_table_queue_requests{table=\"ns.a\"} 0\n");
        ASSERT_CONTAINS(text, "icecommit_table_queue_requests{table=\"ns.b\"} 2\n");
}

TEST(build_info_and_process_metrics) {
        _cleanup_(metrics_freep) Metrics *m = NULL;
        _cleanup_(freep) char *text = NULL;
        MetricsProcess p;
        double now = (double)time(NULL);

        ASSERT_OK(metrics_new(&m));
        text = expose(m);
        ASSERT_CONTAINS(text, "# TYPE icecommit_build_info gauge\n");
        ASSERT_CONTAINS(text, "icecommit_build_info{version=\"" ICECOMMIT_VERSION "\",revision=\"");
        ASSERT_CONTAINS(text, "# TYPE process_cpu_seconds_total counter\n");
        ASSERT_CONTAINS(text, "\nprocess_resident_memory_bytes ");
        ASSERT_CONTAINS(text, "\nprocess_open_fds ");
        ASSERT_CONTAINS(text, "\nprocess_start_time_seconds ");

        ASSERT_OK(metrics_process_read(&p));
        ASSERT_TRUE(p.resident_bytes > 0);
        ASSERT_TRUE(p.virtual_bytes >= p.resident_bytes);
        ASSERT_TRUE(p.open_fds >= 3); /* stdin, stdout, stderr */
        ASSERT_TRUE(p.max_fds == 0 || p.max_fds >= p.open_fds);
        ASSERT_TRUE(p.cpu_seconds >= 0);
        /* Started within the last hour (this test's own process), not in the future. */
        ASSERT_TRUE(p.start_time_seconds <= now + 1 && p.start_time_seconds > now - 3600);
}
