/* SPDX-License-Identifier: Apache-2.0 */
/* The typed, immutable configuration. Built once by config_load() from an INI file (the one
 * option table is in options.c); modules get a const pointer to their own section and never
 * read a global. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/cleanup.h"
#include "util/error.h"

typedef struct HttpConfig {
        char *listen_address;
        uint32_t port;
        uint64_t max_body_bytes;
        uint32_t max_connections;
        uint32_t idle_timeout_ms;
        uint64_t max_buffered_bytes; /* request bytes held, all connections and streams */
        uint32_t max_connections_per_address;
        uint32_t max_requests_per_address; /* in flight: in a handler or waiting for the reply */
        uint32_t header_timeout_ms;        /* connection accepted / request begun -> headers in */
        uint32_t body_timeout_ms;          /* headers in -> whole body in */
        char *tls_certificate_file;        /* PEM chain; set: the listener speaks TLS only */
        char *tls_key_file;
        char *tls_client_ca_file; /* set: clients must present a certificate it signed */
} HttpConfig;

typedef struct ConfigHeader {
        char *name;
        char *value;
} ConfigHeader;

typedef struct CatalogConfig {
        char *type;              /* "rest" or "filesystem"; NULL: see catalog_config_type() */
        char *uri;               /* REST base URI, e.g. http://127.0.0.1:8181 */
        char *warehouse;         /* REST: sent to /v1/config; filesystem: the local directory */
        char *credential;        /* OAuth2 client credentials "id:secret" */
        char *token;             /* static bearer token */
        char *oauth2_server_uri; /* token endpoint for client credentials */
        char *scope;
        char *ca_file;
        bool tls_verify;
        bool send_idempotency_key;
        char *access_delegation; /* X-Iceberg-Access-Delegation, e.g. "vended-credentials" */
        uint32_t connect_timeout_ms;
        uint32_t request_timeout_ms;
        uint32_t max_connections;
        uint64_t max_response_bytes;
        uint32_t cache_tables; /* filesystem: tables whose latest metadata stays parsed (LRU) */
        uint64_t parse_off_loop_bytes; /* REST: bodies this large are parsed on the thread pool */
        ConfigHeader *headers;         /* header.* keys, sent on every catalog request */
        size_t n_headers;
} CatalogConfig;

/* Where the embedded filesystem catalog keeps its tables when catalog.warehouse is not set (the
 * unit's StateDirectory=icecommit). */
#define CATALOG_DEFAULT_WAREHOUSE "/var/lib/icecommit/warehouse"

/* The catalog backend in use: catalog.type when set, else "rest" when catalog.uri is set (a
 * config copied from Spark), else the embedded "filesystem" catalog. */
static inline const char *catalog_config_type(const CatalogConfig *c) {
        return c->type ? c->type : c->uri ? "rest" : "filesystem";
}

/* The filesystem catalog's warehouse directory (a path or file:// URI). */
static inline const char *catalog_config_warehouse(const CatalogConfig *c) {
        return c->warehouse ? c->warehouse : CATALOG_DEFAULT_WAREHOUSE;
}

typedef struct CommitConfig {
        uint32_t max_attempts;
        uint32_t min_backoff_ms;
        uint32_t max_backoff_ms;
        uint64_t total_timeout_ms;
        uint32_t max_batch_requests;
        uint32_t max_batch_manifests;
        /* A batch's snapshot summary (merged writer properties and the request record)
         * stays within this: a request that would pass it waits for the next batch. */
        uint32_t max_summary_bytes;
        uint32_t max_queue_requests;
        uint32_t max_manifests_per_request;
        uint32_t max_data_files_per_request;
        /* A data file's or a staged manifest's location (request JSON, manifest entries). */
        uint32_t max_path_bytes;
        uint32_t max_snapshot_properties;
        uint32_t max_snapshot_properties_bytes;
        uint64_t max_rows_per_request; /* added rows one request may claim row ids for */
        bool verify_data_files;        /* size each data file a staged manifest names */
        bool copy_staged_manifests;    /* commit icecommitd's copy of each staged manifest */
        uint32_t max_verified_files_per_request;
        bool check_parquet_footers;  /* record-count of described Parquet files vs. footer */
        uint32_t parquet_tail_bytes; /* the first read of a Parquet file's end */
        uint32_t max_parquet_footer_bytes;
        uint32_t retry_after_s;
        /* Bytes held at intake (docs/design.md section 2.1): all requests together, one request. */
        uint64_t intake_max_bytes;
        uint64_t intake_max_request_bytes;
        /* Repeats of a pending key waiting for its first request's answer. */
        uint32_t max_waiters_per_key;
        /* Finished requests remembered: at most this many, of at most this many bytes. */
        uint32_t receipt_cache_size;
        uint64_t receipt_cache_max_bytes;
        uint32_t history_lookback; /* newest snapshots searched for a batch's keys; 0 = all */
        uint32_t shutdown_timeout_ms;
        /* [lineage] equality-deletes: the policy for staged equality deletes on v3 tables
         * where the table property icecommit.equality-deletes does not set one. */
        bool allow_equality_deletes;
        /* One data file once against the table: the index of live data files per table and
         * branch, unless the table property icecommit.live-file-index.enabled says otherwise. */
        bool live_file_index;
        uint64_t live_file_index_max_bytes;       /* all indexes together */
        uint64_t live_file_index_max_table_bytes; /* one table's (one branch's) */
        /* In-memory table state (docs/design.md section 12): a commit reuses the table as its
         * last load or commit left it for this long; 0 loads before every attempt. */
        uint32_t table_state_max_age_ms;
        uint32_t linger_ms;     /* a batch waits this long for more requests before it starts */
        uint32_t queue_idle_ms; /* an idle table queue (and its state) is dropped after this */
        uint64_t list_cache_max_bytes; /* manifest lists kept for the next commit, all tables */
        /* Manifest merging (the table's commit.manifest-merge.* properties): the parent's
         * manifests one attempt reads to merge, by their list lengths; 0 = never merge. */
        uint64_t max_merge_input_bytes;
} CommitConfig;

/* S3-compatible object storage ([s3] and [client]: Iceberg S3FileIO's property names, so
 * that a Spark or Java config carries over). The catalog's /v1/config, each table's
 * LoadTableResult.config and its storage-credentials override these per table. */
typedef struct S3Config {
        char *endpoint;          /* s3.endpoint; NULL: https://s3.<region>.amazonaws.com */
        bool path_style_access;  /* s3.path-style-access: endpoint/bucket/key */
        char *access_key_id;     /* s3.access-key-id; NULL: vended by the catalog */
        char *secret_access_key; /* s3.secret-access-key */
        char *session_token;     /* s3.session-token */
        char *region;            /* client.region */
        char *ca_file;
        bool tls_verify;
        uint32_t connect_timeout_ms;
        uint32_t request_timeout_ms; /* one request; retries stay within the commit's deadline */
        uint32_t max_connections;
        uint32_t max_attempts; /* per operation, for 500, 503 SlowDown, resets, timeouts */
        uint32_t min_backoff_ms;
        uint32_t max_backoff_ms;
        uint32_t max_concurrent_requests; /* requests one operation of the engine keeps in flight */
        uint32_t max_error_body_bytes;    /* an error answer's body, whatever the read's limit */
} S3Config;

typedef struct StorageConfig {
        uint64_t max_manifest_bytes;
        uint64_t max_manifest_entries;
        uint64_t max_manifest_entry_bytes; /* one entry of a staged manifest, encoded */
        uint32_t probe_interval_ms;        /* write probes while storage is unwritable */
        /* [storage] allowed-roots: the comma-separated locations table files may lie under
         * (storage/roots.h); NULL: the warehouse (the REST catalog's, when it names one). */
        char *allowed_roots;
        S3Config s3;
} StorageConfig;

typedef struct AuditConfig {
        uint32_t max_snapshots;  /* snapshots in metadata an audit handles */
        uint64_t max_manifests;  /* manifest-list entries read by one audit, all lists */
        uint32_t max_findings;   /* findings listed per check */
        uint32_t max_concurrent; /* audits and lookups running at once */
} AuditConfig;

/* Table management (daemon/tables/). */
typedef struct TablesConfig {
        uint32_t upgrade_lookback; /* newest snapshots whose writers an upgrade report lists */
} TablesConfig;

/* Writer authentication (daemon/auth/). Off while tokens_file is NULL, which config_verify()
 * allows on a loopback listener only, unless allow_unauthenticated. */
typedef struct AuthConfig {
        char *tokens_file;           /* auth.tokens-file, or $CREDENTIALS_DIRECTORY/auth.tokens */
        bool allow_unauthenticated;  /* the operator means a non-loopback listener without auth */
        bool health_requires_token;  /* with auth: /healthz and /readyz need the right `health` */
        bool metrics_requires_token; /* with auth: /metrics needs the right `metrics` */
        uint64_t max_tokens_file_bytes;
} AuthConfig;

/* The /metrics exposition (daemon/metrics/). */
typedef struct MetricsConfig {
        uint32_t max_table_labels; /* tables named in per-table labels; the rest are "other" */
} MetricsConfig;

typedef struct Config {
        char *path;
        HttpConfig http;
        CatalogConfig catalog;
        CommitConfig commit;
        StorageConfig storage;
        AuditConfig audit;
        TablesConfig tables;
        AuthConfig auth;
        MetricsConfig metrics;
        int log_level;
        char *log_format; /* "auto", "text", "json" or "journal" (util/log.h) */
} Config;

/* What a reload changed: comma-separated "section.key" names. */
typedef struct ConfigReload {
        char applied[2048];      /* applied to the live Config */
        char need_restart[2048]; /* changed in the file, left as they were until a restart */
        size_t n_applied;
        bool is_truncated; /* the lists were cut short */
} ConfigReload;

/* Checks a loaded file further with what another module knows (e.g. that its storage roots
 * parse); <0 with *error set refuses it. */
typedef int (*ConfigVerifyFunc)(const Config *fresh, void *userdata, Error *error);

/* Loads live->path again (checked as at start, credentials included, then by `verify` when
 * given) and applies to `live`, in place, the options that take effect at run time
 * (config/reload.c lists them and why); any other option that changed is named in need_restart
 * and keeps its value. On a bad file nothing changes: returns its error (as config_load()). */
int config_reload(Config *live, ConfigVerifyFunc verify, void *userdata, ConfigReload *ret,
                  Error *error);

/* Returns a Config holding every default (the catalog URI is unset). -ENOMEM on failure. */
int config_new_default(Config **ret_config);
/* Loads an INI file over the defaults. On a bad file, key or value returns -EINVAL (or -errno
 * when the file cannot be read) and fills *error with "FILE:LINE: key 'K': reason". */
int config_load(const char *path, Config **ret_config, Error *error);
/* The same from an open stream; `path` names it in messages. */
int config_load_file(FILE *f, const char *path, Config **ret_config, Error *error);
/* Applies one "section.key = value" setting, as the loader does for each line. */
int config_set(Config *c, const char *section, const char *key, const char *value, Error *error);
/* Checks cross-option rules (required keys, min <= max). */
int config_verify(const Config *c, Error *error);
Config *config_free(Config *c);
DEFINE_CLEANUP_FUNC(Config, config_free);
