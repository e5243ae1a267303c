/* SPDX-License-Identifier: Apache-2.0 */
/* The REST catalog client (see rest_client.h): turns each operation into one call
 * (rest_call.c: held back until a token, catalog/auth.c, and /v1/config are there, sent, its
 * answer mapped to an outcome by rest_answer.c). Owns the calls, the token's state and the
 * transport; here: the client's life (new, start, close, free), its settings and the
 * operations of the catalog interface. Logs nothing itself. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/rest.h"
#include "catalog/rest_call-internal.h"
#include "catalog/auth.h"
#include "catalog/rest_client.h"
#include "util/cleanup.h"

static RestClient *rest_client_destroy(RestClient *c) {
        if (!c)
                return NULL;
        assert(!c->parses);
        catalog_auth_deinit(&c->auth);
        free(c->access_delegation_header);
        free(c->base_uri);
        free(c->warehouse);
        rest_call_strv_free(c->headers, c->n_headers);
        json_decref(c->client_properties);
        rest_config_deinit(&c->config);
        free(c);
        return NULL;
}

DEFINE_CLEANUP_FUNC(RestClient, rest_client_destroy);

RestClient *rest_client_free(RestClient *c) {
        if (!c)
                return NULL;
        /* Its uv handles must be closed: the loop still points at them otherwise. */
        assert(c->is_closed);
        rest_client_destroy(c);
        return NULL;
}

static bool is_http_uri(const char *s) {
        return s && (strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0);
}

/* A header.* line must stay one line: no CR, LF or other controls that would let a value
 * smuggle in a second header. */
static bool is_header_text(const char *s) {
        for (; *s; s++)
                if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7F)
                        return false;
        return true;
}

static bool is_header_name(const char *s) {
        if (!s || !*s)
                return false;
        for (; *s; s++)
                if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7F || *s == ':')
                        return false;
        return true;
}

int rest_client_new(uv_loop_t *loop, const CatalogConfig *config, RestClient **ret_client) {
        _cleanup_(rest_client_destroyp) RestClient *c = NULL;
        size_t n;
        int r;

        assert(loop && config && ret_client);
        if (!is_http_uri(config->uri))
                return -EINVAL;
        if (config->oauth2_server_uri && !is_http_uri(config->oauth2_server_uri))
                return -EINVAL;
        for (size_t i = 0; i < config->n_headers; i++)
                if (!is_header_name(config->headers[i].name) || !config->headers[i].value ||
                    !is_header_text(config->headers[i].value))
                        return -EINVAL;
        if (config->token) {
                for (const char *s = config->token; *s; s++)
                        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7F)
                                return -EINVAL;
        }

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->loop = loop;
        c->send_idempotency_key = config->send_idempotency_key;
        c->parse_off_loop_bytes = config->parse_off_loop_bytes;
        if (config->access_delegation &&
            asprintf(&c->access_delegation_header, "X-Iceberg-Access-Delegation: %s",
                     config->access_delegation) < 0) {
                c->access_delegation_header = NULL;
                return -ENOMEM;
        }

        c->base_uri = strdup(config->uri);
        if (!c->base_uri)
                return -ENOMEM;
        for (n = strlen(c->base_uri); n > 0 && c->base_uri[n - 1] == '/'; n--)
                c->base_uri[n - 1] = '\0';
        if (config->warehouse) {
                c->warehouse = strdup(config->warehouse);
                if (!c->warehouse)
                        return -ENOMEM;
        }
        r = catalog_auth_init(&c->auth, loop, config, c->base_uri, rest_call_on_token, c);
        if (r < 0)
                return r;

        c->headers = calloc(config->n_headers + 1, sizeof(char *));
        if (!c->headers)
                return -ENOMEM;
        c->headers[c->n_headers] = strdup("Accept: application/json");
        if (!c->headers[c->n_headers])
                return -ENOMEM;
        c->n_headers++;
        for (size_t i = 0; i < config->n_headers; i++) {
                if (asprintf(&c->headers[c->n_headers], "%s: %s", config->headers[i].name,
                             config->headers[i].value) < 0)
                        return -ENOMEM;
                c->n_headers++;
        }

        /* Only what is not secret: a server's defaults/overrides merge around these. */
        c->client_properties = json_pack("{s:s}", "uri", c->base_uri);
        if (!c->client_properties)
                return -ENOMEM;
        if (c->warehouse &&
            json_object_set_new(c->client_properties, "warehouse", json_string(c->warehouse)) < 0)
                return -ENOMEM;

        /* Last: curl_uv_new() was the last step that can fail, and uv_timer_init() cannot;
         * a failed _new thus leaves no handle on the loop. */
        r = curl_uv_new(loop,
                        &(CurlUvOptions){
                                .ca_file = config->ca_file,
                                .tls_verify = config->tls_verify,
                                .connect_timeout_ms = config->connect_timeout_ms,
                                .request_timeout_ms = config->request_timeout_ms,
                                .max_connections = config->max_connections,
                                .max_response_bytes = config->max_response_bytes,
                                .user_agent = "icecommitd/" ICECOMMIT_VERSION,
                                /* JSON that only icecommitd reads, often large */
                                .decode_content = true,
                        },
                        &c->curl);
        if (r < 0)
                return r;
        (void)uv_timer_init(loop, &c->retry_timer);
        c->retry_timer.data = c;

        *ret_client = TAKE_PTR(c);
        return 0;
}

static void rest_client_on_handle_closed(RestClient *c) {
        assert(c->n_open_handles > 0);
        c->n_open_handles--;
        rest_call_maybe_closed(c);
}

static void rest_client_on_curl_closed(void *userdata) {
        RestClient *c = userdata;

        c->curl = NULL;
        rest_client_on_handle_closed(c);
}

static void rest_client_on_timer_closed(uv_handle_t *handle) {
        rest_client_on_handle_closed(handle->data);
}

static void rest_client_close(void *impl, void (*done)(void *userdata), void *userdata) {
        RestClient *c = impl;

        assert(c && !c->is_closing);
        c->is_closing = true;
        c->close_done = done;
        c->close_userdata = userdata;
        c->n_open_handles = 2;
        (void)uv_timer_stop(&c->retry_timer);
        uv_close((uv_handle_t *)&c->retry_timer, rest_client_on_timer_closed);
        curl_uv_close(c->curl, rest_client_on_curl_closed, c);
        rest_call_cancel_parses(c);
}

static int rest_client_start(void *impl, CatalogCallback cb, void *userdata) {
        RestClient *c = impl;
        int r;

        assert(c && cb);
        if (c->is_closing)
                return -ESHUTDOWN;
        c->is_started = true;
        r = rest_call_config_start(c, /* cb= */ NULL, /* userdata= */ NULL);
        if (r < 0)
                return r;
        c->start_cb = cb;
        c->start_userdata = userdata;
        return 0;
}

static bool rest_client_is_ready(const void *impl) {
        const RestClient *c = impl;

        return c->is_ready;
}

static bool rest_client_supports_idempotency(const void *impl) {
        const RestClient *c = impl;

        return c->send_idempotency_key || (c->is_ready && c->config.has_idempotency);
}

uint64_t rest_client_idempotency_lifetime_ms(const RestClient *c) {
        return c->is_ready ? c->config.idempotency_lifetime_ms : 0;
}

bool rest_client_supports_endpoint(const RestClient *c, const char *endpoint) {
        return c->is_ready && rest_config_has_endpoint(&c->config, endpoint);
}

const char *rest_client_prefix(const RestClient *c) {
        return c->config.prefix;
}

const char *rest_client_namespace_separator(const RestClient *c) {
        return c->config.namespace_separator ? c->config.namespace_separator
                                             : REST_DEFAULT_NAMESPACE_SEPARATOR;
}

uint64_t rest_client_connections_opened(const RestClient *c) {
        return c->curl ? curl_uv_connections_opened(c->curl) : 0;
}

uint64_t rest_client_parses_started(const RestClient *c) {
        return c->n_parses_started;
}

size_t rest_client_parses_in_flight(const RestClient *c) {
        return c->n_parses;
}

/* Copies the operation's arguments: it may wait for a token or /v1/config long after the
 * caller's strings are gone. */
static int call_new(RestClient *c, CallKind kind, const char *const *namespace, size_t n_namespace,
                    const char *table, CatalogCallback cb, void *userdata, CatalogCall **ret_call) {
        _cleanup_(rest_call_freep) CatalogCall *call = NULL;

        assert(cb);
        if (n_namespace == 0 || !namespace)
                return -EINVAL;
        for (size_t i = 0; i < n_namespace; i++)
                if (!namespace[i] || namespace[i][0] == '\0')
                        return -EINVAL;
        if (kind != CALL_CREATE_NAMESPACE && (!table || table[0] == '\0'))
                return -EINVAL;
        if (c->is_closing)
                return -ESHUTDOWN;

        call = calloc(1, sizeof(*call));
        if (!call)
                return -ENOMEM;
        call->client = c;
        call->kind = kind;
        call->cb = cb;
        call->userdata = userdata;
        call->namespace = calloc(n_namespace, sizeof(char *));
        if (!call->namespace)
                return -ENOMEM;
        for (size_t i = 0; i < n_namespace; i++) {
                call->namespace[i] = strdup(namespace[i]);
                if (!call->namespace[i])
                        return -ENOMEM;
                call->n_namespace++;
        }
        if (table) {
                call->table = strdup(table);
                if (!call->table)
                        return -ENOMEM;
        }
        *ret_call = TAKE_PTR(call);
        return 0;
}

static int call_set_body(CatalogCall *call, const json_t *body) {
        call->body = json_dumps(body, JSON_COMPACT);
        if (!call->body)
                return -ENOMEM;
        call->body_len = strlen(call->body);
        return 0;
}

static int call_start(CatalogCall **callp) {
        int r;

        r = rest_call_submit(*callp, /* has_fresh_token= */ false);
        if (r < 0)
                return r; /* the caller's cleanup frees the call */
        *callp = NULL;
        return 0;
}

static int rest_client_load(RestClient *c, const char *const *namespace, size_t n_namespace,
                            const char *table, bool is_refs_only, CatalogCallback cb,
                            void *userdata) {
        _cleanup_(rest_call_freep) CatalogCall *call = NULL;
        int r;

        r = call_new(c, CALL_LOAD_TABLE, namespace, n_namespace, table, cb, userdata, &call);
        if (r < 0)
                return r;
        call->is_refs_only = is_refs_only;
        return call_start(&call);
}

static int rest_client_load_table(void *impl, const char *const *namespace, size_t n_namespace,
                                  const char *table, CatalogCallback cb, void *userdata) {
        return rest_client_load(impl, namespace, n_namespace, table, false, cb, userdata);
}

static int rest_client_load_table_refs(void *impl, const char *const *namespace, size_t n_namespace,
                                       const char *table, CatalogCallback cb, void *userdata) {
        return rest_client_load(impl, namespace, n_namespace, table, true, cb, userdata);
}

static int rest_client_commit_table(void *impl, const char *const *namespace, size_t n_namespace,
                                    const char *table, const json_t *request,
                                    const char *idempotency_key, CatalogCallback cb,
                                    void *userdata) {
        RestClient *c = impl;
        _cleanup_(rest_call_freep) CatalogCall *call = NULL;
        int r;

        if (!json_is_object(request))
                return -EINVAL;
        if (idempotency_key && (idempotency_key[0] == '\0' || !is_header_text(idempotency_key)))
                return -EINVAL;
        r = call_new(c, CALL_COMMIT_TABLE, namespace, n_namespace, table, cb, userdata, &call);
        if (r < 0)
                return r;
        r = call_set_body(call, request);
        if (r < 0)
                return r;
        if (idempotency_key) {
                call->idempotency_key = strdup(idempotency_key);
                if (!call->idempotency_key)
                        return -ENOMEM;
        }
        return call_start(&call);
}

static int rest_client_create_namespace(void *impl, const char *const *namespace,
                                        size_t n_namespace, const json_t *properties,
                                        CatalogCallback cb, void *userdata) {
        RestClient *c = impl;
        _cleanup_(rest_call_freep) CatalogCall *call = NULL;
        _cleanup_(json_decrefp) json_t *body = NULL;
        json_t *levels;
        int r;

        if (properties && !json_is_object(properties))
                return -EINVAL;
        r = call_new(c, CALL_CREATE_NAMESPACE, namespace, n_namespace, NULL, cb, userdata, &call);
        if (r < 0)
                return r;
        body = json_object();
        levels = json_array();
        if (!body || json_object_set_new(body, "namespace", levels) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < n_namespace; i++)
                if (json_array_append_new(levels, json_string(namespace[i])) < 0)
                        return -EINVAL; /* not UTF-8 */
        r = properties ? json_object_set(body, "properties", (json_t *)properties)
                       : json_object_set_new(body, "properties", json_object());
        if (r < 0)
                return -ENOMEM;
        r = call_set_body(call, body);
        if (r < 0)
                return r;
        return call_start(&call);
}

static int rest_client_create_table(void *impl, const char *const *namespace, size_t n_namespace,
                                    const char *name, const json_t *request, CatalogCallback cb,
                                    void *userdata) {
        RestClient *c = impl;
        _cleanup_(rest_call_freep) CatalogCall *call = NULL;
        _cleanup_(json_decrefp) json_t *body = NULL;
        int r;

        if (!json_is_object(request))
                return -EINVAL;
        r = call_new(c, CALL_CREATE_TABLE, namespace, n_namespace, name, cb, userdata, &call);
        if (r < 0)
                return r;
        /* A shallow copy: the caller's object stays as it was. */
        body = json_copy((json_t *)request);
        if (!body)
                return -ENOMEM;
        if (json_object_set_new(body, "name", json_string(name)) < 0)
                return -EINVAL;
        r = call_set_body(call, body);
        if (r < 0)
                return r;
        return call_start(&call);
}

/* The interface's free returns nothing; rest_client_free() returns NULL. */
static void rest_client_free_impl(void *impl) {
        rest_client_free(impl);
}

const CatalogBackend rest_catalog_backend = {
        .name = "rest",
        .start = rest_client_start,
        .is_ready = rest_client_is_ready,
        .supports_idempotency = rest_client_supports_idempotency,
        .load_table = rest_client_load_table,
        .load_table_refs = rest_client_load_table_refs,
        .commit_table = rest_client_commit_table,
        .create_namespace = rest_client_create_namespace,
        .create_table = rest_client_create_table,
        .close = rest_client_close,
        .free = rest_client_free_impl,
};
