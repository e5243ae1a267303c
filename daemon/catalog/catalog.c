/* SPDX-License-Identifier: Apache-2.0 */
/* The catalog interface (catalog.h): picks the backend catalog.type names and forwards every
 * call to it, counting and timing each in metrics once for every backend. Nothing here knows
 * HTTP or files. */
#define LOG_MODULE "catalog"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/bucket.h"
#include "catalog/catalog.h"
#include "catalog/filesystem.h"
#include "catalog/rest.h"
#include "catalog/rest_client.h"
#include "metrics/metrics.h"
#include "util/log.h"
#include "util/time-util.h"

struct Catalog {
        const CatalogBackend *backend;
        void *impl;
        Metrics *metrics; /* borrowed, may be NULL */
};

/* One call in flight, between the caller and its callback: what its metric sample needs. */
typedef struct CatalogTimedCall {
        Metrics *metrics;
        const char *operation; /* static */
        uint64_t started_ns;
        CatalogCallback cb;
        void *userdata;
} CatalogTimedCall;

int catalog_new(uv_loop_t *loop, const CatalogConfig *config, Storage *storage,
                Catalog **ret_catalog) {
        const char *type = catalog_config_type(config);
        Catalog *c;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        if (strcmp(type, "rest") == 0) {
                RestClient *rest = NULL;
                r = rest_client_new(loop, config, &rest);
                c->backend = &rest_catalog_backend;
                c->impl = rest;
        } else if (strcmp(type, "filesystem") == 0 &&
                   !storage_location_is_local(catalog_config_warehouse(config))) {
                BucketCatalog *bucket = NULL;
                r = bucket_catalog_new(loop, config, storage, &bucket);
                c->backend = &bucket_catalog_backend;
                c->impl = bucket;
        } else if (strcmp(type, "filesystem") == 0) {
                FsCatalog *fs = NULL;
                r = filesystem_catalog_new(loop, config, &fs);
                c->backend = &filesystem_catalog_backend;
                c->impl = fs;
        } else {
                log_error("catalog.type '%s' is not supported", type);
                r = -EINVAL;
        }
        if (r < 0) {
                free(c);
                return r;
        }
        *ret_catalog = c;
        return 0;
}

int catalog_new_backend(const CatalogBackend *backend, void *impl, Catalog **ret_catalog) {
        Catalog *c;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->backend = backend;
        c->impl = impl;
        *ret_catalog = c;
        return 0;
}

Catalog *catalog_free(Catalog *c) {
        if (!c)
                return NULL;
        c->backend->free(c->impl);
        free(c);
        return NULL;
}

void catalog_set_metrics(Catalog *c, Metrics *metrics) {
        c->metrics = metrics;
}

static void catalog_on_timed_reply(const CatalogResult *result, void *userdata) {
        CatalogTimedCall *t = userdata;
        CatalogCallback cb = t->cb;
        void *cb_userdata = t->userdata;
        char label[64];

        (void)snprintf(label, sizeof(label), "%s" METRICS_LABEL_SEP "%s", t->operation,
                       catalog_outcome_to_string(result->status));
        metrics_add(t->metrics, METRIC_CATALOG_REQUESTS, label, 1);
        metrics_observe_label(t->metrics, METRIC_CATALOG_DURATION, label,
                              (double)(now_monotonic_ns() - t->started_ns) / 1e9);
        free(t);
        cb(result, cb_userdata);
}

/* Wraps cb for one call of `operation`; on return *cb and *userdata are what to pass to the
 * backend. Without metrics, or out of memory (the sample is lost, the call is not), they stay
 * the caller's. */
static CatalogTimedCall *catalog_timed_call(Catalog *c, const char *operation, CatalogCallback *cb,
                                            void **userdata) {
        CatalogTimedCall *t;

        if (!c->metrics || !(t = malloc(sizeof(*t))))
                return NULL;
        *t = (CatalogTimedCall){ c->metrics, operation, now_monotonic_ns(), *cb, *userdata };
        *cb = catalog_on_timed_reply;
        *userdata = t;
        return t;
}

/* A backend that refused the call never calls back: the wrapper goes. */
static int catalog_timed_started(CatalogTimedCall *t, int r) {
        if (r < 0)
                free(t);
        return r;
}

int catalog_start(Catalog *c, CatalogCallback cb, void *userdata) {
        return c->backend->start(c->impl, cb, userdata);
}

void catalog_close(Catalog *c, void (*done)(void *userdata), void *userdata) {
        c->backend->close(c->impl, done, userdata);
}

const char *catalog_backend_name(const Catalog *c) {
        return c->backend->name;
}

bool catalog_is_ready(const Catalog *c) {
        return c->backend->is_ready(c->impl);
}

bool catalog_supports_idempotency(const Catalog *c) {
        return c->backend->supports_idempotency(c->impl);
}

int catalog_load_table(Catalog *c, const char *const *namespace, size_t n_namespace,
                       const char *table, CatalogCallback cb, void *userdata) {
        CatalogTimedCall *t = catalog_timed_call(c, "load", &cb, &userdata);

        return catalog_timed_started(t, c->backend->load_table(c->impl, namespace, n_namespace,
                                                               table, cb, userdata));
}

int catalog_load_table_refs(Catalog *c, const char *const *namespace, size_t n_namespace,
                            const char *table, CatalogCallback cb, void *userdata) {
        CatalogTimedCall *t;

        if (!c->backend->load_table_refs)
                return catalog_load_table(c, namespace, n_namespace, table, cb, userdata);
        t = catalog_timed_call(c, "load-refs", &cb, &userdata);
        return catalog_timed_started(t, c->backend->load_table_refs(c->impl, namespace, n_namespace,
                                                                    table, cb, userdata));
}

int catalog_commit_table(Catalog *c, const char *const *namespace, size_t n_namespace,
                         const char *table, const json_t *request, const char *idempotency_key,
                         CatalogCallback cb, void *userdata) {
        CatalogTimedCall *t = catalog_timed_call(c, "commit", &cb, &userdata);

        return catalog_timed_started(t, c->backend->commit_table(c->impl, namespace, n_namespace,
                                                                 table, request, idempotency_key,
                                                                 cb, userdata));
}

int catalog_create_namespace(Catalog *c, const char *const *namespace, size_t n_namespace,
                             const json_t *properties, CatalogCallback cb, void *userdata) {
        CatalogTimedCall *t = catalog_timed_call(c, "create-namespace", &cb, &userdata);

        return catalog_timed_started(t,
                                     c->backend->create_namespace(c->impl, namespace, n_namespace,
                                                                  properties, cb, userdata));
}

int catalog_create_table(Catalog *c, const char *const *namespace, size_t n_namespace,
                         const char *name, const json_t *request, CatalogCallback cb,
                         void *userdata) {
        CatalogTimedCall *t = catalog_timed_call(c, "create-table", &cb, &userdata);

        return catalog_timed_started(t, c->backend->create_table(c->impl, namespace, n_namespace,
                                                                 name, request, cb, userdata));
}
