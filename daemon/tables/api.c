/* SPDX-License-Identifier: Apache-2.0 */
/* Table management handlers (see api.h). Each request is one small state machine driven by
 * catalog callbacks: create; when the namespace is missing create it and try once more; when
 * the table exists load it and answer 200 if it is the one asked for, 409 if not. */
#define LOG_MODULE "tables"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/roots.h"
#include "tables/api.h"
#include "tables/create.h"
#include "tables/upgrade.h"
#include "util/log.h"
#include "writer/request.h"

struct TablesApi {
        Auth *auth;
        Catalog *catalog;
        Storage *storage; /* its roots bound the locations a create may name */
        UpgradeContext upgrade;
};

typedef enum CallStep {
        STEP_CREATE_TABLE,
        STEP_CREATE_NAMESPACE, /* the table's namespace was missing */
        STEP_LOAD_EXISTING,    /* the table exists: is it the same? */
        STEP_NAMESPACE_ONLY,   /* POST /v1/namespaces */
} CallStep;

typedef struct TablesCall {
        TablesApi *api;
        HttpRequest *http; /* NULL once answered or gone */
        CallStep step;
        bool created_namespace;
        CommitTarget target;
        json_t *request; /* CreateTableRequest, or the namespace properties */
} TablesCall;

static TablesCall *call_free(TablesCall *c) {
        if (!c)
                return NULL;
        request_target_deinit(&c->target);
        json_decref(c->request);
        free(c);
        return NULL;
}

DEFINE_CLEANUP_FUNC(TablesCall, call_free);

static void call_on_gone(HttpRequest *r, void *userdata) {
        TablesCall *c = userdata;

        c->http = NULL;
}

/* Ends the call with an error answer mapped from a catalog outcome. */
static void call_fail(TablesCall *c, const CatalogResult *result, const char *what) {
        if (!c->http)
                return;
        switch (result->status) {
        case CATALOG_E_NOT_FOUND:
                http_reply_error(c->http, 404, "not-found", "%s: %s", what, result->message);
                break;
        case CATALOG_E_REJECTED:
                http_reply_error(c->http, 422, "invalid-table", "%s: the catalog refused it: %s",
                                 what, result->message);
                break;
        case CATALOG_E_CONFLICT:
                http_reply_error(c->http, 409, "table-exists", "%s: %s", what, result->message);
                break;
        default:
                /* Unavailable, unknown (the create may have happened: creation is idempotent, so
                 * a retry settles it), cancelled at shutdown. */
                http_reply_add_header(c->http, "Retry-After", "1");
                http_reply_error(c->http, 503, "catalog-unavailable", "%s: %s (%s); retry", what,
                                 catalog_outcome_to_string(result->status), result->message);
                break;
        }
        c->http = NULL;
}

static json_t *table_answer(const TablesCall *c, bool created, const json_t *load_result) {
        const json_t *metadata = json_object_get(load_result, "metadata");
        const json_t *schemas = json_object_get(metadata, "schemas"),
                     *specs = json_object_get(metadata, "partition-specs");
        json_t *schema = NULL, *spec = NULL, *s;
        size_t i;

        json_array_foreach (schemas, i, s)
                if (json_equal(json_object_get(s, "schema-id"),
                               json_object_get(metadata, "current-schema-id")))
                        schema = s;
        json_array_foreach (specs, i, s)
                if (json_equal(json_object_get(s, "spec-id"),
                               json_object_get(metadata, "default-spec-id")))
                        spec = s;
        return json_pack("{s:b, s:o, s:s, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "created", created,
                         "namespace", request_target_namespace_json(&c->target), "name",
                         c->target.table, "metadata-location",
                         json_object_get(load_result, "metadata-location"), "table-uuid",
                         json_object_get(metadata, "table-uuid"), "format-version",
                         json_object_get(metadata, "format-version"), "location",
                         json_object_get(metadata, "location"), "schema", schema, "partition-spec",
                         spec);
}

static void call_on_catalog(const CatalogResult *result, void *userdata);

static int call_next(TablesCall *c, CallStep step) {
        const char *const *ns = (const char *const *)c->target.namespace;

        c->step = step;
        switch (step) {
        case STEP_CREATE_TABLE:
                return catalog_create_table(c->api->catalog, ns, c->target.n_namespace,
                                            c->target.table, c->request, call_on_catalog, c);
        case STEP_CREATE_NAMESPACE:
                c->created_namespace = true;
                return catalog_create_namespace(c->api->catalog, ns, c->target.n_namespace, NULL,
                                                call_on_catalog, c);
        case STEP_LOAD_EXISTING:
                return catalog_load_table(c->api->catalog, ns, c->target.n_namespace,
                                          c->target.table, call_on_catalog, c);
        case STEP_NAMESPACE_ONLY:
                return catalog_create_namespace(c->api->catalog, ns, c->target.n_namespace,
                                                c->request, call_on_catalog, c);
        }
        return -EINVAL;
}

static void call_on_catalog(const CatalogResult *result, void *userdata) {
        _cleanup_(call_freep) TablesCall *c = userdata;
        Error error = { 0 };
        CallStep next;
        int r;

        if (!c->http)
                return; /* the client went away; the catalog call itself stands */
        switch (c->step) {
        case STEP_CREATE_TABLE:
                if (result->status == 0) {
                        log_info("created table %s (%s)", c->target.table,
                                 json_string_value(
                                         json_object_get(result->body, "metadata-location")));
                        http_reply_json(c->http, 201, table_answer(c, true, result->body));
                        c->http = NULL;
                        return;
                }
                if (result->status == CATALOG_E_NOT_FOUND && !c->created_namespace) {
                        next = STEP_CREATE_NAMESPACE;
                        break;
                }
                if (result->status == CATALOG_E_CONFLICT) {
                        next = STEP_LOAD_EXISTING;
                        break;
                }
                call_fail(c, result, "create table");
                return;
        case STEP_CREATE_NAMESPACE:
                /* Created, or created meanwhile by someone else: either way it is there now. */
                if (result->status != 0 && result->status != CATALOG_E_CONFLICT) {
                        call_fail(c, result, "create namespace");
                        return;
                }
                next = STEP_CREATE_TABLE;
                break;
        case STEP_LOAD_EXISTING:
                if (result->status != 0) {
                        call_fail(c, result, "load the existing table");
                        return;
                }
                r = create_table_request_matches(c->request,
                                                 json_object_get(result->body, "metadata"), &error);
                if (r < 0) {
                        http_reply_error(c->http, 409, "table-exists",
                                         "table '%s' exists and differs from the request: %s",
                                         c->target.table, error.message);
                        c->http = NULL;
                        return;
                }
                http_reply_json(c->http, 200, table_answer(c, false, result->body));
                c->http = NULL;
                return;
        case STEP_NAMESPACE_ONLY:
                if (result->status != 0 && result->status != CATALOG_E_CONFLICT) {
                        call_fail(c, result, "create namespace");
                        return;
                }
                http_reply_json(c->http, result->status == 0 ? 201 : 200,
                                json_pack("{s:o, s:b}", "namespace",
                                          request_target_namespace_json(&c->target), "created",
                                          result->status == 0));
                c->http = NULL;
                return;
        default:
                return;
        }
        r = call_next(c, next);
        if (r < 0) {
                http_reply_error(c->http, 503, r == -ESHUTDOWN ? "shutting-down" : "out-of-memory",
                                 "cannot reach the catalog: %s", strerror(-r));
                c->http = NULL;
                return;
        }
        TAKE_PTR(c); /* the catalog calls back again */
}

/* Answers a request that did not parse (parse_result < 0, the reason in `error`), or moves the
 * parsed call to the heap and sends its first catalog call. */
static void tables_start(HttpRequest *r, TablesCall parsed, int parse_result, const Error *error) {
        _cleanup_(call_freep) TablesCall *c = NULL;
        int rr;

        if (parse_result >= 0) {
                c = malloc(sizeof(*c));
                if (c)
                        *c = parsed;
        }
        if (!c) {
                request_target_deinit(&parsed.target);
                json_decref(parsed.request);
                if (parse_result == -ENOMEM || parse_result >= 0)
                        http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                else
                        http_reply_error(r, 400, "bad-request", "%s", error->message);
                return;
        }
        c->http = r;
        rr = call_next(c, c->step);
        if (rr < 0) {
                http_reply_error(r, 503, rr == -ESHUTDOWN ? "shutting-down" : "out-of-memory",
                                 "cannot reach the catalog: %s", strerror(-rr));
                return;
        }
        http_request_on_gone(r, call_on_gone, c);
        TAKE_PTR(c);
}

/* The name of a parsed target's namespace as a path parameter (levels joined by 0x1F), for
 * the scope check of a target that only the body names. NULL when out of memory. */
static char *tables_namespace_param(const CommitTarget *t) {
        size_t len = 0;
        char *p;

        for (size_t i = 0; i < t->n_namespace; i++)
                len += strlen(t->namespace[i]) + 1;
        p = malloc(len + 1);
        if (!p)
                return NULL;
        len = 0;
        for (size_t i = 0; i < t->n_namespace; i++) {
                size_t n = strlen(t->namespace[i]);

                memcpy(p + len, t->namespace[i], n);
                len += n;
                p[len++] = '\x1f';
        }
        p[len ? len - 1 : 0] = '\0';
        return p;
}

/* "a.b.t" (or "a.b" for a namespace) for messages, cut to fit. */
static void tables_target_name(const CommitTarget *t, char *buf, size_t size) {
        size_t n = 0;

        buf[0] = '\0';
        for (size_t i = 0; i < t->n_namespace && n < size; i++)
                n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "." : "", t->namespace[i]);
        if (t->table && n < size)
                (void)snprintf(buf + n, size - n, ".%s", t->table);
}

/* A create that says where files lie (`steers`: what of it does, NULL: nothing) needs the
 * right `admin` on its target besides `create`, and locations within the storage roots
 * (docs/design.md section 9): without both, the catalog chooses. Checked before the catalog is
 * asked; a refusal is answered here and returns -EACCES. */
static int tables_check_steering(TablesApi *api, HttpRequest *r, const AuthToken *caller,
                                 const char *namespace_param, const CommitTarget *target,
                                 const char *steers, const char *location,
                                 const json_t *properties) {
        char name[320];
        Error error = { 0 };
        int rr;

        if (!steers)
                return 0;
        tables_target_name(target, name, sizeof(name));
        if (caller &&
            !auth_token_allows(caller, AUTH_RIGHT_ADMIN, namespace_param, target->table)) {
                log_debug("principal='%s' refused right=admin %s='%s' steers='%s'",
                          caller->principal, target->table ? "table" : "namespace", name, steers);
                http_reply_error(r, 403, "forbidden",
                                 "principal '%s' has no 'admin' right on %s '%s': the request "
                                 "sets '%s', and where files lie is chosen by the catalog unless "
                                 "'admin' (besides 'create') allows it",
                                 caller->principal, target->table ? "table" : "namespace", name,
                                 steers);
                return -EACCES;
        }
        rr = storage_roots_check_table(storage_roots(api->storage), location, properties, &error);
        if (rr == -EPERM) {
                http_reply_error(r, 422, "location-outside-roots",
                                 "%s '%s': %s; an operator widens them ([storage] "
                                 "allowed-roots)",
                                 target->table ? "table" : "namespace", name, error.message);
                return -EACCES;
        }
        if (rr < 0) {
                http_reply_add_header(r, "Retry-After", "1");
                http_reply_error(r, 503, rr == -ENOMEM ? "out-of-memory" : "catalog-unavailable",
                                 "%s",
                                 rr == -ENOMEM ? "out of memory, retry later" : error.message);
                return -EACCES;
        }
        return 0;
}

/* The body names the table (or namespace) to create: the first check, before the body is
 * read, is for the right anywhere; the second, on the target, before the catalog is asked. */
static void tables_handle_create_table(HttpRequest *r, void *userdata) {
        TablesCall c = { .api = userdata, .step = STEP_CREATE_TABLE };
        const AuthToken *caller;
        const char *name;
        Error error = { 0 };
        int rr;

        if (auth_check(c.api->auth, r, AUTH_RIGHT_CREATE, /* namespace_param= */ NULL,
                       /* table= */ NULL, &caller) < 0)
                return;
        rr = create_table_request_parse(http_request_body(r), &c.request, &name, &error);
        if (rr >= 0)
                rr = request_target_parse(http_request_param(r, 0), name, &c.target, &error);
        if (rr >= 0 &&
            (auth_check_target(r, caller, AUTH_RIGHT_CREATE, http_request_param(r, 0),
                               c.target.table) < 0 ||
             tables_check_steering(c.api, r, caller, http_request_param(r, 0), &c.target,
                                   create_table_request_steers(c.request),
                                   json_string_value(json_object_get(c.request, "location")),
                                   json_object_get(c.request, "properties")) < 0)) {
                request_target_deinit(&c.target);
                json_decref(c.request);
                return;
        }
        tables_start(r, c, rr, &error);
}

static void tables_handle_create_namespace(HttpRequest *r, void *userdata) {
        TablesCall c = { .api = userdata, .step = STEP_NAMESPACE_ONLY };
        _cleanup_(freep) char *namespace_param = NULL;
        const AuthToken *caller;
        Error error = { 0 };
        int rr;

        if (auth_check(c.api->auth, r, AUTH_RIGHT_CREATE, /* namespace_param= */ NULL,
                       /* table= */ NULL, &caller) < 0)
                return;
        rr = create_namespace_request_parse(http_request_body(r), &c.target.namespace,
                                            &c.target.n_namespace, &c.request, &error);
        if (rr >= 0) {
                namespace_param = tables_namespace_param(&c.target);
                if (!namespace_param)
                        rr = -ENOMEM;
                else if (auth_check_target(r, caller, AUTH_RIGHT_CREATE, namespace_param,
                                           /* table= */ NULL) < 0 ||
                         tables_check_steering(c.api, r, caller, namespace_param, &c.target,
                                               create_namespace_properties_steer(c.request),
                                               json_string_value(
                                                       json_object_get(c.request, "location")),
                                               c.request) < 0) {
                        request_target_deinit(&c.target);
                        json_decref(c.request);
                        return;
                }
        }
        tables_start(r, c, rr, &error);
}

int tables_api_new(HttpServer *server, Auth *auth, Catalog *catalog, uv_loop_t *loop,
                   const TablesConfig *config, const StorageConfig *storage_config,
                   Storage *storage, TablesApi **ret_api) {
        _cleanup_(tables_api_freep) TablesApi *api = NULL;
        int r;

        api = calloc(1, sizeof(*api));
        if (!api)
                return -ENOMEM;
        api->auth = auth;
        api->catalog = catalog;
        api->storage = storage;
        api->upgrade = (UpgradeContext){
                .auth = auth,
                .catalog = catalog,
                .loop = loop,
                .config = config,
                .storage_config = storage_config,
                .storage = storage,
        };
        r = http_server_route(server, "POST", "/v1/namespaces", tables_handle_create_namespace,
                              api);
        if (r < 0)
                return r;
        r = http_server_route(server, "POST", "/v1/namespaces/{}/tables",
                              tables_handle_create_table, api);
        if (r < 0)
                return r;
        r = http_server_route(server, "POST", "/v1/namespaces/{}/tables/{}/upgrade", upgrade_handle,
                              &api->upgrade);
        if (r < 0)
                return r;
        *ret_api = TAKE_PTR(api);
        return 0;
}

TablesApi *tables_api_free(TablesApi *api) {
        free(api);
        return NULL;
}
