/* SPDX-License-Identifier: Apache-2.0 */
/* Owns the uv loop and every module: starts them in dependency order (metrics, catalog, commit
 * engine, HTTP), tells systemd when it listens, and on SIGTERM/SIGINT stops them in reverse,
 * runs the loop dry and requires uv_loop_close() == 0. */
#define LOG_MODULE "daemon"
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include "audit/api.h"
#include "auth/auth.h"
#include "catalog/catalog.h"
#include "commit/engine.h"
#include "daemon.h"
#include "http/http.h"
#include "metrics/metrics.h"
#include "storage/roots.h"
#include "storage/storage.h"
#include "tables/api.h"
#include "util/address.h"
#include "util/log.h"
#include "writer/api.h"

typedef struct Daemon {
        uv_loop_t loop;
        Config *config; /* owned by main(); a reload changes it in place */
        Metrics *metrics;
        Auth *auth;
        Catalog *catalog;
        CommitEngine *engine;
        HttpServer *http;
        WriterApi *writer_api;
        TablesApi *tables_api;
        AuditApi *audit_api;
        Storage *storage;
        uv_signal_t sigterm, sigint, sighup;
        uv_timer_t watchdog;
        uv_timer_t shutdown_timer; /* the SIGTERM deadline for commits in flight */
        bool has_watchdog;
        bool has_signals;
        bool has_shutdown_timer;
        bool is_stopping;
        bool is_engine_stopped;
        bool is_catalog_closing;
        bool is_catalog_closed;
        bool is_storage_closed;
        bool is_http_closing;
        int exit_status;         /* <0: stopped for a reason of its own (a failed start) */
        char *catalog_warehouse; /* the REST catalog's /v1/config warehouse, a location */
} Daemon;

static void daemon_stop(Daemon *d);

/* The storage roots the configuration gives (docs/design.md section 9): [storage]
 * allowed-roots; else the embedded catalog's warehouse; else a REST catalog's warehouse when
 * catalog.warehouse or its /v1/config (catalog_warehouse, may be NULL) names one as a location.
 * *ret_roots NULL: not known (a REST catalog that names none, or before its /v1/config). */
static int daemon_roots_resolve(const Config *c, const char *catalog_warehouse,
                                StorageRoots **ret_roots, const char **ret_source, Error *error) {
        const char *w = c->catalog.warehouse;
        int r;

        *ret_roots = NULL;
        if (c->storage.allowed_roots) {
                *ret_source = "[storage] allowed-roots";
                r = storage_roots_parse(c->storage.allowed_roots, ret_roots, error);
                return r < 0 ? error_prefix(error, r, "key 'storage.allowed-roots'") : 0;
        }
        if (strcmp(catalog_config_type(&c->catalog), "filesystem") == 0) {
                w = catalog_config_warehouse(&c->catalog);
                *ret_source = "the warehouse, catalog.warehouse";
                r = storage_roots_new(&w, 1, ret_roots, error);
                return r < 0 ? error_prefix(error, r, "key 'catalog.warehouse'") : 0;
        }
        /* A REST warehouse is often a name ("sales"): only a location bounds anything. */
        if (w) {
                r = storage_roots_new(&w, 1, ret_roots, /* error= */ NULL);
                if (r == -ENOMEM)
                        return error_set(error, r, "out of memory");
                if (r == 0) {
                        *ret_source = "the catalog's warehouse, catalog.warehouse";
                        return 0;
                }
        }
        if (catalog_warehouse) {
                r = storage_roots_new(&catalog_warehouse, 1, ret_roots, /* error= */ NULL);
                if (r == -ENOMEM)
                        return error_set(error, r, "out of memory");
                if (r == 0)
                        *ret_source = "the catalog's warehouse in its /v1/config";
        }
        return 0;
}

/* Puts the roots the configuration gives in force, or keeps those in force when it gives
 * none. Returns 0, 1 when the configuration gives none, or <0 (with *error set). */
static int daemon_roots_apply(Daemon *d, Error *error) {
        _cleanup_(storage_roots_freep) StorageRoots *roots = NULL;
        const StorageRoots *old = storage_roots(d->storage);
        const char *source = NULL;
        int r;

        r = daemon_roots_resolve(d->config, d->catalog_warehouse, &roots, &source, error);
        if (r < 0)
                return r;
        if (!roots)
                return 1;
        if (!old || strcmp(old->text, roots->text) != 0)
                log_notice("storage roots %s (%s): table files are read and written under them "
                           "only",
                           roots->text, source);
        storage_set_roots(d->storage, TAKE_PTR(roots));
        return 0;
}

/* With a REST catalog whose warehouse the configuration does not name, the roots come from
 * its /v1/config; a catalog that names none leaves them unknowable, and the daemon stops
 * rather than guess: an operator sets [storage] allowed-roots. */
static void daemon_on_catalog_started(const CatalogResult *result, void *userdata) {
        Daemon *d = userdata;
        const char *w;
        Error error = { 0 };
        int r;

        if (result->status != 0) {
                /* The client keeps retrying in the background; /readyz says 503 until then. */
                log_warning("catalog not reachable yet: %s", result->message);
                return;
        }
        log_info("catalog configuration loaded");
        if (storage_roots(d->storage) || d->is_stopping)
                return;
        w = json_string_value(json_object_get(result->properties, "warehouse"));
        if (w && !(d->catalog_warehouse = strdup(w)))
                r = -ENOMEM;
        else
                r = daemon_roots_apply(d, &error);
        if (r == 0)
                return;
        if (r > 0)
                log_error("the storage roots are unknown: neither catalog.warehouse ('%s') nor the "
                          "REST catalog's /v1/config ('%s') names a warehouse location; set "
                          "[storage] allowed-roots to the locations its tables lie under, stopping",
                          d->config->catalog.warehouse ? d->config->catalog.warehouse : "",
                          w ? w : "");
        else
                log_error("cannot take the storage roots from the catalog: %s, stopping",
                          r == -ENOMEM ? "out of memory" : error.message);
        d->exit_status = -EINVAL;
        daemon_stop(d);
}

static void daemon_on_watchdog(uv_timer_t *t) {
        (void)sd_notify(0, "WATCHDOG=1");
}

static void daemon_close_handle(uv_handle_t *h) {
        if (!uv_is_closing(h))
                uv_close(h, NULL);
}

static void daemon_on_http_closed(void *userdata) {
        Daemon *d = userdata;

        if (d->has_signals) {
                daemon_close_handle((uv_handle_t *)&d->sigterm);
                daemon_close_handle((uv_handle_t *)&d->sigint);
                daemon_close_handle((uv_handle_t *)&d->sighup);
        }
        if (d->has_watchdog)
                daemon_close_handle((uv_handle_t *)&d->watchdog);
        if (d->has_shutdown_timer)
                daemon_close_handle((uv_handle_t *)&d->shutdown_timer);
}

/* The last steps, once no commit runs and the catalog client is closed: close the HTTP server
 * (every writer has had its answer), then the daemon's own handles. */
static void daemon_finish_stop(Daemon *d) {
        if (!d->is_engine_stopped || !d->is_catalog_closed || !d->is_storage_closed ||
            d->is_http_closing)
                return;
        d->is_http_closing = true;
        if (d->http)
                http_server_close(d->http, daemon_on_http_closed, d);
        else
                daemon_on_http_closed(d);
}

static void daemon_on_catalog_closed(void *userdata) {
        Daemon *d = userdata;

        d->is_catalog_closed = true;
        daemon_finish_stop(d);
}

static void daemon_on_storage_closed(void *userdata) {
        Daemon *d = userdata;

        d->is_storage_closed = true;
        daemon_finish_stop(d);
}

/* Closing the catalog client cancels its calls in flight: commits among them end as unknown
 * outcomes (504 to their writers, resolved by their retries), never as failures. Storage
 * requests in flight are cancelled with it (their batches fail retryably, nothing was sent). */
static void daemon_close_catalog(Daemon *d) {
        if (d->is_catalog_closing)
                return;
        d->is_catalog_closing = true;
        catalog_close(d->catalog, daemon_on_catalog_closed, d);
        if (d->storage)
                storage_close(d->storage, daemon_on_storage_closed, d);
        else
                d->is_storage_closed = true;
        /* The storage stays allocated until the loop is done: the engine and the catalog may
         * still call it (and get -ESHUTDOWN) while their last callbacks run. */
}

static void daemon_on_engine_stopped(void *userdata) {
        Daemon *d = userdata;

        log_info("commit engine stopped");
        d->is_engine_stopped = true;
        daemon_close_catalog(d);
        daemon_finish_stop(d);
}

static void daemon_on_shutdown_timeout(uv_timer_t *t) {
        Daemon *d = t->data;

        log_warning("commits still in flight after commit.shutdown-timeout-ms=%u, cancelling them "
                    "(their writers get 504 commit-state-unknown and resolve it by retrying)",
                    d->config->commit.shutdown_timeout_ms);
        daemon_close_catalog(d);
}

static void daemon_stop(Daemon *d) {
        if (d->is_stopping)
                return;
        d->is_stopping = true;
        (void)sd_notify(0, "STOPPING=1");
        log_info("stopping: no new requests, finishing the commits in flight");
        http_server_stop_accepting(d->http);
        if (uv_timer_init(&d->loop, &d->shutdown_timer) == 0) {
                d->has_shutdown_timer = true;
                d->shutdown_timer.data = d;
                (void)uv_timer_start(&d->shutdown_timer, daemon_on_shutdown_timeout,
                                     d->config->commit.shutdown_timeout_ms, 0);
        }
        commit_engine_stop(d->engine, daemon_on_engine_stopped, d);
}

static void daemon_on_signal(uv_signal_t *s, int signum) {
        daemon_stop(s->data);
}

/* Rereads what can change while running: each module's reload either applies a whole good
 * new state or keeps the old one, and logs nothing itself; this logs each outcome once.
 * Requests in flight are not touched (they hold copies of what they need). */
static CommitRequestLimits daemon_request_limits(const Config *c) {
        return (CommitRequestLimits){
                .max_manifests = c->commit.max_manifests_per_request,
                .max_data_files = c->commit.max_data_files_per_request,
                .max_path_bytes = c->commit.max_path_bytes,
                .max_properties = c->commit.max_snapshot_properties,
                .max_properties_bytes = c->commit.max_snapshot_properties_bytes,
        };
}

/* A reload whose storage roots do not parse is refused whole, as at start: nothing of the
 * file is applied (config_reload()). */
static int daemon_verify_reload(const Config *fresh, void *userdata, Error *error) {
        _cleanup_(storage_roots_freep) StorageRoots *roots = NULL;
        int r;

        (void)userdata;
        if (!fresh->storage.allowed_roots)
                return 0;
        r = storage_roots_parse(fresh->storage.allowed_roots, &roots, error);
        return r < 0 ? error_prefix(error, r, "key 'storage.allowed-roots'") : 0;
}

/* SIGHUP: the configuration file, then the tokens file. A bad file keeps everything of it as it
 * was; requests in flight are never dropped (they finish with the settings they started with,
 * or pick the new ones up at their next step). */
static void daemon_reload(Daemon *d) {
        CommitRequestLimits limits;
        ConfigReload what;
        Error error = { 0 };
        size_t n_tokens = 0;
        int r;

        r = config_reload(d->config, daemon_verify_reload, /* userdata= */ NULL, &what, &error);
        if (r < 0)
                log_error("reload: keeping the old configuration: %s", error.message);
        else {
                log_max_level = d->config->log_level;
                limits = daemon_request_limits(d->config);
                writer_api_set_limits(d->writer_api, &limits);
                log_notice("reload: configuration '%s' loaded, applied=%zu%s%s%s", d->config->path,
                           what.n_applied, what.n_applied ? " (" : "", what.applied,
                           what.n_applied ? ")" : "");
                if (what.need_restart[0])
                        log_warning("reload: changed but applied only by a restart: %s%s",
                                    what.need_restart, what.is_truncated ? ", ..." : "");
        }
        r = daemon_roots_apply(d, &error);
        if (r < 0)
                log_error("reload: keeping the storage roots in force: %s", error.message);
        else if (r > 0 && storage_roots(d->storage))
                log_warning("reload: the configuration names no storage roots; keeping %s in "
                            "force ([storage] allowed-roots, or catalog.warehouse as a location)",
                            storage_roots(d->storage)->text);
        r = auth_reload(d->auth, &n_tokens, &error);
        if (r < 0)
                log_error("reload: keeping the old tokens: %s", error.message);
        else if (r == 0)
                log_notice("reload: tokens file '%s' loaded, tokens=%zu",
                           d->config->auth.tokens_file, n_tokens);
}

/* SIGHUP (systemd's ExecReload=, operators) reloads; its default action would end the daemon
 * mid-commit. */
static void daemon_on_sighup(uv_signal_t *s, int signum) {
        log_info("SIGHUP received, reloading");
        daemon_reload(s->data);
}

/* config_verify() refused a non-loopback listener without authentication unless the operator
 * allowed it; what remains is said once at start, as a warning where anyone may write. */
static void daemon_log_authentication(const Daemon *d) {
        const Config *c = d->config;
        struct sockaddr_storage listener;
        bool is_loopback;

        if (auth_is_enabled(d->auth)) {
                log_info("writer authentication on, tokens file '%s', /metrics %s, /healthz and "
                         "/readyz %s",
                         c->auth.tokens_file,
                         c->auth.metrics_requires_token ? "needs the right metrics" : "open",
                         c->auth.health_requires_token ? "need the right health" : "open");
                return;
        }
        is_loopback = address_parse(c->http.listen_address, c->http.port, &listener) == 0 &&
                      address_is_loopback(&listener);
        if (is_loopback)
                log_warning("writer authentication off (no auth.tokens-file): every user and "
                            "process on this host may commit to, create, upgrade and read every "
                            "table");
        else if (c->http.tls_client_ca_file)
                log_notice("writer authentication by client certificate only "
                           "(http.tls-client-ca-file, no auth.tokens-file): every client with a "
                           "certificate may commit to, create, upgrade and read every table");
        else
                log_warning("writer authentication off on %s (auth.allow-unauthenticated = "
                            "true): anyone who reaches the port may commit to, create, upgrade "
                            "and read every table",
                            c->http.listen_address);
}

static int daemon_start(Daemon *d) {
        CommitRequestLimits limits = daemon_request_limits(d->config);
        uint64_t watchdog_usec = 0;
        Error error = { 0 };
        int r;

        r = metrics_new(&d->metrics);
        if (r < 0)
                return r;
        metrics_set_max_table_labels(d->metrics, d->config->metrics.max_table_labels);
        r = auth_new(&d->config->auth, &d->auth, &error);
        if (r < 0) {
                log_error("cannot load the tokens file: %s", error.message);
                return r;
        }
        daemon_log_authentication(d);
        r = storage_new(&d->loop, &d->config->storage, d->metrics, &d->storage);
        if (r < 0) {
                log_error("cannot create the storage client: %s", strerror(-r));
                return r;
        }
        r = daemon_roots_apply(d, &error);
        if (r < 0) {
                log_error("%s: %s", d->config->path, error.message);
                return r == -ENOMEM ? r : -EINVAL;
        }
        if (r > 0)
                log_info("storage roots: waiting for the REST catalog's /v1/config to name its "
                         "warehouse ([storage] allowed-roots is not set)");
        r = catalog_new(&d->loop, &d->config->catalog, d->storage, &d->catalog);
        if (r < 0) {
                log_error("cannot create the catalog client: %s", strerror(-r));
                return r;
        }
        catalog_set_metrics(d->catalog, d->metrics);
        r = commit_engine_new(&d->loop, &d->config->commit, &d->config->storage, d->storage,
                              d->catalog, d->metrics, &d->engine);
        if (r < 0)
                return r;
        r = http_server_new(&d->loop, &d->config->http, &d->http);
        if (r < 0)
                return r;
        http_server_set_metrics(d->http, d->metrics);
        r = writer_api_new(d->http, d->auth, &limits, commit_engine_hooks(), d->engine,
                           &d->writer_api);
        if (r < 0)
                return r;
        r = tables_api_new(d->http, d->auth, d->catalog, &d->loop, &d->config->tables,
                           &d->config->storage, d->storage, &d->tables_api);
        if (r < 0)
                return r;
        r = audit_api_new(&d->loop, d->http, d->auth, d->catalog, &d->config->audit,
                          &d->config->storage, d->storage, &d->audit_api);
        if (r < 0)
                return r;
        r = http_server_start(d->http);
        if (r < 0) {
                log_error("cannot listen on %s:%u: %s", d->config->http.listen_address,
                          d->config->http.port, strerror(-r));
                return r;
        }
        r = catalog_start(d->catalog, daemon_on_catalog_started, d);
        if (r < 0) {
                log_error("cannot start the catalog client: %s", strerror(-r));
                return r;
        }

        (void)uv_signal_init(&d->loop, &d->sigterm);
        (void)uv_signal_init(&d->loop, &d->sigint);
        (void)uv_signal_init(&d->loop, &d->sighup);
        d->sigterm.data = d->sigint.data = d->sighup.data = d;
        (void)uv_signal_start(&d->sigterm, daemon_on_signal, SIGTERM);
        (void)uv_signal_start(&d->sigint, daemon_on_signal, SIGINT);
        (void)uv_signal_start(&d->sighup, daemon_on_sighup, SIGHUP);
        d->has_signals = true;
        if (sd_watchdog_enabled(0, &watchdog_usec) > 0 && watchdog_usec >= 2000) {
                (void)uv_timer_init(&d->loop, &d->watchdog);
                d->has_watchdog = true;
                (void)uv_timer_start(&d->watchdog, daemon_on_watchdog, watchdog_usec / 2000,
                                     watchdog_usec / 2000);
        }

        log_notice("listening on http://%s:%u, %s catalog %s", d->config->http.listen_address,
                   http_server_port(d->http), catalog_backend_name(d->catalog),
                   d->config->catalog.uri ? d->config->catalog.uri
                                          : catalog_config_warehouse(&d->config->catalog));
        (void)sd_notifyf(0, "READY=1\nSTATUS=listening on port %u", http_server_port(d->http));
        return 0;
}

int daemon_run(Config *config) {
        Daemon d = { .config = config };
        int r;

        /* A writer that disconnects mid-answer must not kill the daemon. */
        (void)signal(SIGPIPE, SIG_IGN);
        r = uv_loop_init(&d.loop);
        if (r < 0)
                return r;

        r = daemon_start(&d);
        if (r < 0) {
                /* Unwind what did start, then run the loop dry so every handle is closed. */
                if (d.engine)
                        commit_engine_stop(d.engine, daemon_on_engine_stopped, &d);
                else {
                        if (d.catalog)
                                catalog_close(d.catalog, NULL, NULL);
                        if (d.storage)
                                storage_close(d.storage, NULL, NULL);
                }
                d.is_stopping = true;
        }
        (void)uv_run(&d.loop, UV_RUN_DEFAULT);

        d.http = http_server_free(d.http);
        d.writer_api = writer_api_free(d.writer_api);
        d.tables_api = tables_api_free(d.tables_api);
        d.audit_api = audit_api_free(d.audit_api);
        d.engine = commit_engine_free(d.engine);
        d.catalog = catalog_free(d.catalog);
        d.storage = storage_free(d.storage);
        d.metrics = metrics_free(d.metrics);
        d.auth = auth_free(d.auth);
        free(d.catalog_warehouse);
        if (r >= 0 && d.exit_status < 0)
                r = d.exit_status;
        if (uv_loop_close(&d.loop) != 0) {
                log_error("event loop still had open handles at exit");
                return r < 0 ? r : -EBUSY;
        }
        if (r >= 0)
                log_info("stopped");
        return r;
}
