/* SPDX-License-Identifier: Apache-2.0 */
/* The catalog as the commit engine sees it: load a table, commit to it, create namespaces and
 * tables, each answered once with an outcome the commit loop can act on (docs/design.md
 * sections 6 and 11). Three backends sit behind this small interface: an Iceberg REST catalog
 * (rest_client.c), the embedded filesystem catalog on local disks (filesystem.c) and the same on
 * a bucket (bucket.c). The commit path above is one and the same for all: a filesystem commit
 * that loses the no-replace rename is a CONFLICT exactly like a REST 409. Backends never retry
 * a commit themselves and log no failure above debug. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "config/config.h"
#include "metrics/metrics.h"
#include "storage/storage.h"
#include "util/cleanup.h"

/* CatalogResult.status: 0, one of these, or -errno (-ECANCELED when the catalog closed while
 * the call was in flight, -EBADMSG for an unreadable answer to a read, -E2BIG for one larger
 * than catalog.max-response-bytes, -ENOMEM). */
enum {
        _CATALOG_E_SUCCESS,
        CATALOG_E_CONFLICT,      /* REST 409, or the 400 "first-row-id is behind"/"Cannot
                                  * add snapshot with sequence number" of pre-1.11
                                  * servers; filesystem: a requirement failed or another
                                  * writer took the next version: reload, rebuild, retry */
        CATALOG_E_STATE_UNKNOWN, /* a mutation was sent, no verdict: 500/502/503/504 (and
                                  * other 5xx but 501), 408, timeout, reset, connection
                                  * lost after sending, or any non-2xx after libcurl had
                                  * to resend it; filesystem: the new version is in place
                                  * but could not be made durable; verify first */
        CATALOG_E_REJECTED,      /* other 4xx (and 501, 3xx), an invalid update: our
                                  * request is wrong, do not retry */
        CATALOG_E_NOT_FOUND,     /* no such table or namespace */
        CATALOG_E_UNAVAILABLE,   /* not sent at all / nothing written (connect refused,
                                  * DNS, TLS, no token, no /v1/config, an I/O error before
                                  * the commit point), 429, or a 5xx/transport failure on
                                  * a read: safe to retry */
};

typedef struct CatalogResult {
        int status;               /* see above */
        long http_status;         /* 0 when no HTTP answer arrived (always for filesystem) */
        json_t *body;             /* borrowed for the callback; NULL when there is none */
        const json_t *properties; /* REST: the catalog's merged /v1/config properties
                                   * (storage settings start from them); else NULL */
        char message[1024];       /* the catalog's error.message or a transport description */
        char error_type[128];     /* the catalog's error.type, e.g. "CommitFailedException" */
} CatalogResult;

/* Called exactly once per accepted call, from the loop (never from inside the call that
 * started it). */
typedef void (*CatalogCallback)(const CatalogResult *result, void *userdata);

/* One backend: what every call below forwards to. `impl` is the backend's own object. */
typedef struct CatalogBackend {
        const char *name; /* "rest", "filesystem" (config catalog.type) */
        int (*start)(void *impl, CatalogCallback cb, void *userdata);
        bool (*is_ready)(const void *impl);
        bool (*supports_idempotency)(const void *impl);
        int (*load_table)(void *impl, const char *const *namespace, size_t n_namespace,
                          const char *table, CatalogCallback cb, void *userdata);
        /* Optional (NULL: catalog_load_table_refs() does a full load_table). */
        int (*load_table_refs)(void *impl, const char *const *namespace, size_t n_namespace,
                               const char *table, CatalogCallback cb, void *userdata);
        int (*commit_table)(void *impl, const char *const *namespace, size_t n_namespace,
                            const char *table, const json_t *request, const char *idempotency_key,
                            CatalogCallback cb, void *userdata);
        int (*create_namespace)(void *impl, const char *const *namespace, size_t n_namespace,
                                const json_t *properties, CatalogCallback cb, void *userdata);
        int (*create_table)(void *impl, const char *const *namespace, size_t n_namespace,
                            const char *name, const json_t *request, CatalogCallback cb,
                            void *userdata);
        void (*close)(void *impl, void (*done)(void *userdata), void *userdata);
        void (*free)(void *impl);
} CatalogBackend;

/* Owned by the daemon: closed by catalog_close(), then freed by catalog_free(). */
typedef struct Catalog Catalog;

/* The backend catalog.type names: "rest", or "filesystem" (the embedded default). */
const char *catalog_type_resolve(const CatalogConfig *config);

/* Creates the backend config->catalog.type names, idle: the filesystem catalog on a local
 * warehouse or, for an s3:// warehouse, on a bucket through `storage` (borrowed; it must
 * outlive the catalog). Returns 0, -EINVAL (a setting the backend cannot use, logged) or
 * -ENOMEM. */
int catalog_new(uv_loop_t *loop, const CatalogConfig *config, Storage *storage,
                Catalog **ret_catalog);
/* A catalog on a backend of the caller's (an in-process test double): the catalog owns `impl`
 * from then on and frees it with backend->free; `backend` (static) must outlive it. Returns 0
 * or -ENOMEM (then impl is the caller's still). */
int catalog_new_backend(const CatalogBackend *backend, void *impl, Catalog **ret_catalog);
/* Frees a catalog whose close completed (or NULL). Returns NULL. */
Catalog *catalog_free(Catalog *c);

/* Makes the backend ready (REST: token and /v1/config, retried in the background; filesystem:
 * the warehouse directory); cb gets the first outcome and, when that was a failure, the success
 * that follows (REST; its result->properties are the catalog's /v1/config properties). Returns
 * <0 without calling cb, or 0. */
int catalog_start(Catalog *c, CatalogCallback cb, void *userdata);
/* Cancels every call (each completes with -ECANCELED; a cancelled mutation may have landed),
 * then calls done(userdata) (may be NULL) from the loop. Later calls fail with -ESHUTDOWN. */
void catalog_close(Catalog *c, void (*done)(void *userdata), void *userdata);

/* Counts and times every call from then on in icecommit_catalog_requests_total and
 * icecommit_catalog_request_duration_seconds{operation,outcome} (operation load, load-refs,
 * commit, create-namespace, create-table). `metrics` is borrowed: it must outlive the catalog. */
void catalog_set_metrics(Catalog *c, Metrics *metrics);

const char *catalog_backend_name(const Catalog *c);
bool catalog_is_ready(const Catalog *c);
/* True when a commit may carry an Idempotency-Key that a replay will honour. */
bool catalog_supports_idempotency(const Catalog *c);

/* Loads a table. On success the body is a LoadTableResult ("metadata-location", "metadata").
 * Returns <0 without calling cb: -EINVAL for an empty namespace, level or name, -ESHUTDOWN,
 * -ENOMEM; else 0. */
int catalog_load_table(Catalog *c, const char *const *namespace, size_t n_namespace,
                       const char *table, CatalogCallback cb, void *userdata);
/* The same, for callers that need the table's location, properties, schemas and specs but not
 * its history: the metadata may list only the snapshots its branches and tags reference (REST
 * ?snapshots=refs), with the same refs, current snapshot, sequence numbers and next-row-id. A
 * backend without it (filesystem, bucket) loads everything. Never use it to search history. */
int catalog_load_table_refs(Catalog *c, const char *const *namespace, size_t n_namespace,
                            const char *table, CatalogCallback cb, void *userdata);
/* Commits a CommitTableRequest (borrowed; copied or serialized before returning).
 * idempotency_key (NULL: none) goes to backends that honour one. A success may carry no
 * readable body: the verdict is the status. */
int catalog_commit_table(Catalog *c, const char *const *namespace, size_t n_namespace,
                         const char *table, const json_t *request, const char *idempotency_key,
                         CatalogCallback cb, void *userdata);
/* Creates a namespace with properties (may be NULL); an existing one is CATALOG_E_CONFLICT. */
int catalog_create_namespace(Catalog *c, const char *const *namespace, size_t n_namespace,
                             const json_t *properties, CatalogCallback cb, void *userdata);
/* Creates a table from a CreateTableRequest (borrowed) whose "name" is set to `name`; the body
 * on success is its LoadTableResult. An existing table is CATALOG_E_CONFLICT. */
int catalog_create_table(Catalog *c, const char *const *namespace, size_t n_namespace,
                         const char *name, const json_t *request, CatalogCallback cb,
                         void *userdata);

/* "success", "conflict", "state-unknown", "rejected", "not-found", "unavailable", or
 * "error" for -errno, for logs and metric labels. */
const char *catalog_outcome_to_string(int status);
/* The HTTP answer to a catalog outcome that ends a request, the one mapping every route starts
 * from (a route may name a CONFLICT or NOT_FOUND more precisely, e.g. "table-exists"):
 * 0 200 "success"; NOT_FOUND 404 "no-such-table"; CONFLICT 409 "commit-conflict";
 * STATE_UNKNOWN 504 "commit-state-unknown" (it may have happened: ask again with the same
 * request); REJECTED 502 "catalog-rejected" (the catalog refused what we sent: not the
 * writer's fault, not worth a retry); UNAVAILABLE and -errno 503 "catalog-unavailable"
 * (retry). Sets *ret_type to a static string. */
int catalog_outcome_http_status(int status, const char **ret_type);
/* Formats into result->message, cut at a character boundary to fit. */
_printf_(2, 3) void catalog_result_set_message(CatalogResult *result, const char *fmt, ...);
