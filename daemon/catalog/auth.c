/* SPDX-License-Identifier: Apache-2.0 */
/* The catalog client's bearer token (see auth.h): a static one, or OAuth2
 * client_credentials fetched from the token endpoint, refreshed ahead of expiry and dropped when
 * the catalog refuses it. Owns the credential and the token, wiped when dropped. Never parks or
 * resends a call itself (rest_call.c does); logs at debug only. */
#define LOG_MODULE "catalog"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/auth.h"
#include "catalog/rest.h"
#include "util/buf.h"
#include "util/log.h"

/* Java's refresh margin: a tenth of the lifetime, at most five minutes. */
#define CATALOG_AUTH_MAX_REFRESH_MARGIN_MS 300000u

static char *wipe_free(char *s) {
        if (!s)
                return NULL;
        explicit_bzero(s, strlen(s));
        free(s);
        return NULL;
}

static char *strdup_or_null(const char *s, int *r) {
        char *d;

        if (!s)
                return NULL;
        d = strdup(s);
        if (!d)
                *r = -ENOMEM;
        return d;
}

int catalog_auth_init(CatalogAuth *a, uv_loop_t *loop, const CatalogConfig *config,
                      const char *base_uri, CatalogCallback on_token, void *userdata) {
        int r = 0;

        *a = (CatalogAuth){
                .loop = loop,
                .on_token = on_token,
                .userdata = userdata,
                .token_refresh_at_ms = UINT64_MAX,
                .token_expires_at_ms = UINT64_MAX,
        };
        a->scope = strdup_or_null(config->scope, &r);
        a->credential = strdup_or_null(config->credential, &r);
        a->token = strdup_or_null(config->token, &r);
        if (r >= 0) {
                if (config->oauth2_server_uri)
                        a->token_endpoint = strdup(config->oauth2_server_uri);
                else if (asprintf(&a->token_endpoint, "%s/v1/oauth/tokens", base_uri) < 0)
                        a->token_endpoint = NULL;
                if (!a->token_endpoint)
                        r = -ENOMEM;
        }
        if (r < 0) {
                catalog_auth_deinit(a);
                return r;
        }
        a->has_oauth = a->credential != NULL;
        return 0;
}

void catalog_auth_deinit(CatalogAuth *a) {
        wipe_free(a->token);
        wipe_free(a->credential);
        free(a->token_endpoint);
        free(a->scope);
        a->token = a->credential = a->token_endpoint = a->scope = NULL;
}

static void token_on_response(const CurlUvResponse *response, void *userdata);

static int token_fetch_start(CatalogAuth *a, CurlUv *curl, const char *const *headers,
                             size_t n_headers) {
        _cleanup_(buf_deinitp) Buf form = { 0 };
        const char *secret, *colon;
        _cleanup_(freep) char *client_id = NULL;
        _cleanup_(freep) const char **lines = NULL;
        size_t n_lines = 0;
        CurlUvRequest req;
        int r;

        if (a->is_fetching)
                return 0;
        lines = calloc(n_headers + 1, sizeof(*lines));
        if (!lines)
                return -ENOMEM;

        /* Java's OAuth2Util: "id:secret", or a bare secret without a client id. */
        secret = a->credential;
        colon = strchr(a->credential, ':');
        if (colon) {
                client_id = strndup(a->credential, (size_t)(colon - a->credential));
                if (!client_id)
                        return -ENOMEM;
                secret = colon + 1;
        }
        buf_init(&form, CATALOG_MAX_REQUEST_BYTES);
        r = rest_form_append(&form, "grant_type", "client_credentials");
        if (r >= 0 && client_id)
                r = rest_form_append(&form, "client_id", client_id);
        if (r >= 0)
                r = rest_form_append(&form, "client_secret", secret);
        if (r >= 0 && a->scope)
                r = rest_form_append(&form, "scope", a->scope);

        if (r >= 0) {
                for (size_t i = 0; i < n_headers; i++)
                        lines[n_lines++] = headers[i];
                lines[n_lines++] = "Content-Type: application/x-www-form-urlencoded";
                req = (CurlUvRequest){
                        .method = "POST",
                        .url = a->token_endpoint,
                        .headers = lines,
                        .n_headers = n_lines,
                        .body = buf_slice(&form),
                };
                r = curl_uv_send(curl, &req, token_on_response, a);
        }
        /* curl copied the body; ours held the secret. */
        if (form.data)
                explicit_bzero(form.data, form.len);
        if (r < 0)
                return r;
        a->is_fetching = true;
        return 0;
}

static void token_set(CatalogAuth *a, RestToken *token) {
        uint64_t now, lifetime_ms, margin_ms;

        wipe_free(a->token);
        a->token = TAKE_PTR(token->access_token);
        a->token_generation++;
        now = uv_now(a->loop);
        if (token->has_expires_in) {
                /* Refresh ahead of expiry, as Java does. */
                lifetime_ms = (uint64_t)token->expires_in_s * 1000;
                margin_ms = lifetime_ms / 10 < CATALOG_AUTH_MAX_REFRESH_MARGIN_MS
                                    ? lifetime_ms / 10
                                    : CATALOG_AUTH_MAX_REFRESH_MARGIN_MS;
                a->token_expires_at_ms = now + lifetime_ms;
                a->token_refresh_at_ms = now + lifetime_ms - margin_ms;
        } else {
                a->token_expires_at_ms = UINT64_MAX;
                a->token_refresh_at_ms = UINT64_MAX;
        }
        log_debug("oauth2 token obtained generation=%" PRIu64 " expires_in_s=%u",
                  a->token_generation, token->has_expires_in ? token->expires_in_s : 0);
}

static void token_on_response(const CurlUvResponse *response, void *userdata) {
        CatalogAuth *a = userdata;
        _cleanup_(rest_token_deinit) RestToken token = { 0 };
        CatalogResult result = { 0 };
        Error error = { 0 };
        RestError rest_error;
        int r;

        a->is_fetching = false;

        if (response->status < 0) {
                result.status = response->status;
                catalog_result_set_message(&result, "oauth2 token request: %s", response->error);
        } else if (response->status > 0) {
                /* Nothing that waits for a token has been sent: retrying is safe. */
                result.status = CATALOG_E_UNAVAILABLE;
                catalog_result_set_message(&result, "oauth2 token request to '%s': %s",
                                           a->token_endpoint, response->error);
        } else if (response->http_status < 200 || response->http_status > 299) {
                result.http_status = response->http_status;
                result.status = response->http_status == 429 || response->http_status >= 500
                                        ? CATALOG_E_UNAVAILABLE
                                        : CATALOG_E_REJECTED;
                if (response->body_error == 0 &&
                    rest_error_parse(response->body, &rest_error) == 0) {
                        memcpy(result.error_type, rest_error.type, sizeof(result.error_type));
                        catalog_result_set_message(&result,
                                                   "oauth2 token request to '%s': HTTP %ld: %s",
                                                   a->token_endpoint, response->http_status,
                                                   rest_error.message);
                } else
                        catalog_result_set_message(&result,
                                                   "oauth2 token request to '%s': HTTP %ld",
                                                   a->token_endpoint, response->http_status);
        } else if (response->body_error < 0) {
                result.status = response->body_error;
                catalog_result_set_message(&result, "oauth2 token response: %s",
                                           strerror(-response->body_error));
        } else if ((r = rest_token_parse(response->body, &token, &error)) < 0) {
                result.status = r;
                catalog_result_set_message(&result, "%s", error.message);
        } else
                token_set(a, &token);

        a->on_token(&result, a->userdata);
}

int catalog_auth_check(CatalogAuth *a, CurlUv *curl, const char *const *headers, size_t n_headers) {
        uint64_t now;
        int r;

        if (!a->has_oauth)
                return 0;

        now = uv_now(a->loop);
        if (!a->token || now >= a->token_expires_at_ms) {
                r = token_fetch_start(a, curl, headers, n_headers);
                if (r < 0)
                        return r;
                return CATALOG_AUTH_E_PENDING;
        }
        /* Still valid: use it, and fetch the next one meanwhile. A failed start is retried by
         * the next call. */
        if (now >= a->token_refresh_at_ms)
                (void)token_fetch_start(a, curl, headers, n_headers);
        return 0;
}

bool catalog_auth_is_refusal(const CatalogAuth *a, long http_status) {
        return (http_status == 401 || http_status == 419) && a->has_oauth;
}

void catalog_auth_token_refused(CatalogAuth *a, uint64_t generation) {
        /* A token fetched while the refused call was out was not what the server refused. */
        if (generation != a->token_generation)
                return;
        wipe_free(a->token);
        a->token = NULL;
}
