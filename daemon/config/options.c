/* SPDX-License-Identifier: Apache-2.0 */
/* The one table of configuration options: name, type, default and bounds. conf/icecommitd.conf
 * documents each of them; tests/unit/test-config.c checks the two agree. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config/options.h"

#define OPTION(sec, key, kind, field, def, lo, hi)                                                 \
        { sec, key, kind, offsetof(Config, field), def, NULL, lo, hi }
#define OPTION_STR(sec, key, field, def)                                                           \
        { sec, key, OPTION_KIND_STRING, offsetof(Config, field), 0, def, 0, 0 }

const ConfigOption config_options[] = {
        OPTION_STR("http", "listen-address", http.listen_address, "127.0.0.1"),
        OPTION("http", "port", OPTION_KIND_U32, http.port, 8080, 0, 65535),
        OPTION("http", "max-body-bytes", OPTION_KIND_U64, http.max_body_bytes, 1u << 20, 1024,
               1u << 30),
        OPTION("http", "max-connections", OPTION_KIND_U32, http.max_connections, 1024, 1, 65536),
        OPTION("http", "idle-timeout-ms", OPTION_KIND_U32, http.idle_timeout_ms, 60000, 100,
               3600000),
        OPTION("http", "max-buffered-bytes", OPTION_KIND_U64, http.max_buffered_bytes, 256u << 20,
               1u << 20, 1ull << 40),
        OPTION("http", "max-connections-per-address", OPTION_KIND_U32,
               http.max_connections_per_address, 1024, 1, 65536),
        OPTION("http", "max-requests-per-address", OPTION_KIND_U32, http.max_requests_per_address,
               1024, 1, 1000000),
        OPTION("http", "header-timeout-ms", OPTION_KIND_U32, http.header_timeout_ms, 10000, 100,
               3600000),
        OPTION("http", "body-timeout-ms", OPTION_KIND_U32, http.body_timeout_ms, 60000, 100,
               3600000),
        OPTION_STR("http", "tls-certificate-file", http.tls_certificate_file, NULL),
        OPTION_STR("http", "tls-key-file", http.tls_key_file, NULL),
        OPTION_STR("http", "tls-client-ca-file", http.tls_client_ca_file, NULL),

        OPTION_STR("catalog", "type", catalog.type, NULL),
        OPTION_STR("catalog", "uri", catalog.uri, NULL),
        OPTION_STR("catalog", "warehouse", catalog.warehouse, NULL),
        OPTION_STR("catalog", "credential", catalog.credential, NULL),
        OPTION_STR("catalog", "token", catalog.token, NULL),
        OPTION_STR("catalog", "oauth2-server-uri", catalog.oauth2_server_uri, NULL),
        OPTION_STR("catalog", "scope", catalog.scope, "catalog"),
        OPTION_STR("catalog", "ca-file", catalog.ca_file, NULL),
        OPTION("catalog", "tls-verify", OPTION_KIND_BOOL, catalog.tls_verify, 1, 0, 1),
        OPTION("catalog", "send-idempotency-key", OPTION_KIND_BOOL, catalog.send_idempotency_key, 0,
               0, 1),
        OPTION_STR("catalog", "access-delegation", catalog.access_delegation, NULL),
        OPTION("catalog", "connect-timeout-ms", OPTION_KIND_U32, catalog.connect_timeout_ms, 5000,
               10, 600000),
        OPTION("catalog", "request-timeout-ms", OPTION_KIND_U32, catalog.request_timeout_ms, 30000,
               10, 3600000),
        OPTION("catalog", "max-connections", OPTION_KIND_U32, catalog.max_connections, 16, 1, 1024),
        OPTION("catalog", "max-response-bytes", OPTION_KIND_U64, catalog.max_response_bytes,
               256u << 20, 4096, 1ull << 32),
        OPTION("catalog", "cache-tables", OPTION_KIND_U32, catalog.cache_tables, 64, 0, 10000),
        OPTION("catalog", "parse-off-loop-bytes", OPTION_KIND_U64, catalog.parse_off_loop_bytes,
               64u << 10, 0, 1ull << 32),

        OPTION("commit", "max-attempts", OPTION_KIND_U32, commit.max_attempts, 10, 1, 1000),
        OPTION("commit", "min-backoff-ms", OPTION_KIND_U32, commit.min_backoff_ms, 100, 1, 600000),
        OPTION("commit", "max-backoff-ms", OPTION_KIND_U32, commit.max_backoff_ms, 60000, 1,
               3600000),
        OPTION("commit", "total-timeout-ms", OPTION_KIND_U64, commit.total_timeout_ms, 1800000, 100,
               86400000),
        OPTION("commit", "max-batch-requests", OPTION_KIND_U32, commit.max_batch_requests, 256, 1,
               100000),
        OPTION("commit", "max-batch-manifests", OPTION_KIND_U32, commit.max_batch_manifests, 1024,
               1, 1000000),
        OPTION("commit", "max-summary-bytes", OPTION_KIND_U32, commit.max_summary_bytes, 65536,
               4096, 16777216),
        OPTION("commit", "max-queue-requests", OPTION_KIND_U32, commit.max_queue_requests, 10000, 1,
               10000000),
        OPTION("commit", "max-manifests-per-request", OPTION_KIND_U32,
               commit.max_manifests_per_request, 256, 1, 100000),
        OPTION("commit", "max-data-files-per-request", OPTION_KIND_U32,
               commit.max_data_files_per_request, 10000, 1, 1000000),
        OPTION("commit", "max-snapshot-properties", OPTION_KIND_U32, commit.max_snapshot_properties,
               64, 0, 100000),
        OPTION("commit", "max-snapshot-properties-bytes", OPTION_KIND_U32,
               commit.max_snapshot_properties_bytes, 16384, 0, 16777216),
        OPTION("commit", "max-rows-per-request", OPTION_KIND_U64, commit.max_rows_per_request,
               10000000000ull, 1, 1ull << 62),
        OPTION("commit", "verify-data-files", OPTION_KIND_BOOL, commit.verify_data_files, 1, 0, 1),
        OPTION("commit", "max-verified-files-per-request", OPTION_KIND_U32,
               commit.max_verified_files_per_request, 100000, 1, 10000000),
        OPTION("commit", "check-parquet-footers", OPTION_KIND_BOOL, commit.check_parquet_footers, 1,
               0, 1),
        OPTION("commit", "parquet-tail-bytes", OPTION_KIND_U32, commit.parquet_tail_bytes, 65536,
               64, 16777216),
        OPTION("commit", "max-parquet-footer-bytes", OPTION_KIND_U32,
               commit.max_parquet_footer_bytes, 16777216, 1024, 1073741824),
        OPTION("commit", "retry-after-s", OPTION_KIND_U32, commit.retry_after_s, 1, 1, 3600),
        OPTION("commit", "receipt-cache-size", OPTION_KIND_U32, commit.receipt_cache_size, 100000,
               0, 100000000),
        OPTION("commit", "history-lookback", OPTION_KIND_U32, commit.history_lookback, 10000, 0,
               100000000),
        OPTION("commit", "shutdown-timeout-ms", OPTION_KIND_U32, commit.shutdown_timeout_ms, 30000,
               0, 3600000),
        OPTION("commit", "live-file-index", OPTION_KIND_BOOL, commit.live_file_index, 1, 0, 1),
        OPTION("commit", "live-file-index-max-bytes", OPTION_KIND_U64,
               commit.live_file_index_max_bytes, 256ull << 20, 0, 1ull << 40),
        OPTION("commit", "live-file-index-max-table-bytes", OPTION_KIND_U64,
               commit.live_file_index_max_table_bytes, 128ull << 20, 0, 1ull << 40),
        OPTION("commit", "table-state-max-age-ms", OPTION_KIND_U32, commit.table_state_max_age_ms,
               10000, 0, 86400000),
        OPTION("commit", "linger-ms", OPTION_KIND_U32, commit.linger_ms, 0, 0, 60000),
        OPTION("commit", "manifest-list-cache-max-bytes", OPTION_KIND_U64,
               commit.list_cache_max_bytes, 256ull << 20, 0, 1ull << 40),
        OPTION("commit", "queue-idle-ms", OPTION_KIND_U32, commit.queue_idle_ms, 600000, 1000,
               604800000),
        OPTION("commit", "max-merge-input-bytes", OPTION_KIND_U64, commit.max_merge_input_bytes,
               256ull << 20, 0, 1ull << 40),

        OPTION("storage", "max-manifest-bytes", OPTION_KIND_U64, storage.max_manifest_bytes,
               64u << 20, 1024, 1ull << 34),
        OPTION("storage", "max-manifest-entries", OPTION_KIND_U64, storage.max_manifest_entries,
               1000000, 1, 1ull << 32),
        OPTION("storage", "probe-interval-ms", OPTION_KIND_U32, storage.probe_interval_ms, 5000,
               100, 3600000),
        OPTION_STR("storage", "allowed-roots", storage.allowed_roots, NULL),

        OPTION_STR("s3", "endpoint", storage.s3.endpoint, NULL),
        OPTION("s3", "path-style-access", OPTION_KIND_BOOL, storage.s3.path_style_access, 0, 0, 1),
        OPTION_STR("s3", "access-key-id", storage.s3.access_key_id, NULL),
        OPTION_STR("s3", "secret-access-key", storage.s3.secret_access_key, NULL),
        OPTION_STR("s3", "session-token", storage.s3.session_token, NULL),
        OPTION_STR("s3", "ca-file", storage.s3.ca_file, NULL),
        OPTION("s3", "tls-verify", OPTION_KIND_BOOL, storage.s3.tls_verify, 1, 0, 1),
        OPTION("s3", "connect-timeout-ms", OPTION_KIND_U32, storage.s3.connect_timeout_ms, 5000, 10,
               600000),
        OPTION("s3", "request-timeout-ms", OPTION_KIND_U32, storage.s3.request_timeout_ms, 60000,
               10, 3600000),
        OPTION("s3", "max-connections", OPTION_KIND_U32, storage.s3.max_connections, 32, 1, 1024),
        OPTION("s3", "max-attempts", OPTION_KIND_U32, storage.s3.max_attempts, 5, 1, 100),
        OPTION("s3", "min-backoff-ms", OPTION_KIND_U32, storage.s3.min_backoff_ms, 50, 1, 600000),
        OPTION("s3", "max-backoff-ms", OPTION_KIND_U32, storage.s3.max_backoff_ms, 5000, 1,
               3600000),
        OPTION("s3", "max-concurrent-requests", OPTION_KIND_U32, storage.s3.max_concurrent_requests,
               8, 1, 1024),
        OPTION_STR("client", "region", storage.s3.region, "us-east-1"),

        OPTION("audit", "max-snapshots", OPTION_KIND_U32, audit.max_snapshots, 100000, 1,
               100000000),
        OPTION("audit", "max-manifests", OPTION_KIND_U64, audit.max_manifests, 10000000, 1,
               1ull << 32),
        OPTION("audit", "max-findings", OPTION_KIND_U32, audit.max_findings, 100, 1, 1000000),
        OPTION("audit", "max-concurrent", OPTION_KIND_U32, audit.max_concurrent, 2, 1, 1024),
        OPTION("lineage", "equality-deletes", OPTION_KIND_POLICY, commit.allow_equality_deletes, 0,
               0, 1),
        OPTION("tables", "upgrade-lookback", OPTION_KIND_U32, tables.upgrade_lookback, 100, 1,
               1000000),

        OPTION_STR("auth", "tokens-file", auth.tokens_file, NULL),
        OPTION("auth", "health-requires-token", OPTION_KIND_BOOL, auth.health_requires_token, 0, 0,
               1),
        OPTION("auth", "metrics-requires-token", OPTION_KIND_BOOL, auth.metrics_requires_token, 0,
               0, 1),
        OPTION("auth", "max-tokens-file-bytes", OPTION_KIND_U64, auth.max_tokens_file_bytes,
               1u << 20, 64, 1u << 30),

        OPTION("metrics", "max-table-labels", OPTION_KIND_U32, metrics.max_table_labels, 64, 0,
               100000),

        OPTION("log", "level", OPTION_KIND_LOG_LEVEL, log_level, 6, 3, 7),
        OPTION_STR("log", "format", log_format, "auto"),
};

const size_t config_n_options = sizeof(config_options) / sizeof(config_options[0]);

const ConfigOption *config_option_find(const char *section, const char *key) {
        for (size_t i = 0; i < config_n_options; i++)
                if (strcmp(config_options[i].section, section) == 0 &&
                    strcmp(config_options[i].key, key) == 0)
                        return &config_options[i];
        return NULL;
}
