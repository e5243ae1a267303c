/* SPDX-License-Identifier: Apache-2.0 */
/* The REST client's bearer token (auth.c): a static one, or OAuth2 client_credentials fetched,
 * refreshed before it expires and forgotten when refused. The client (rest_call-internal.h)
 * embeds one CatalogAuth and parks calls while it fetches. Nothing outside catalog/ includes
 * this. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "config/config.h"
#include "net/curl_uv.h"

/* catalog_auth_check(): the call must wait for the token fetch under way. */
enum {
        _CATALOG_AUTH_E_SUCCESS,
        CATALOG_AUTH_E_PENDING,
};

/* The token every request carries. Embedded in and owned by the RestClient; secrets
 * (credential, token) are wiped before they are freed. has_oauth when a credential can fetch
 * tokens; a token without expiry (a static one, or a response without expires_in) is used until
 * a 401 or 419. */
typedef struct CatalogAuth {
        uv_loop_t *loop;
        char *token_endpoint;
        char *credential;
        char *scope;
        bool has_oauth;
        char *token;                  /* NULL: none yet, or the last one was refused */
        uint64_t token_generation;    /* counts the tokens fetched, so a refusal names one */
        uint64_t token_refresh_at_ms; /* uv_now() from which a refresh starts in the background */
        uint64_t token_expires_at_ms; /* uv_now() from which calls wait for a new token */
        bool is_fetching;
        CatalogCallback on_token; /* the end of each fetch: status 0, or why there is none */
        void *userdata;
} CatalogAuth;

/* Copies the credential, scope, static token and token endpoint (oauth2_server_uri, else
 * {base_uri}/v1/oauth/tokens) of a config rest_client_new() has checked. on_token is called
 * once per fetch, from the loop. Returns 0 or -ENOMEM (then nothing is held). */
int catalog_auth_init(CatalogAuth *a, uv_loop_t *loop, const CatalogConfig *config,
                      const char *base_uri, CatalogCallback on_token, void *userdata);

/* Wipes and frees the secrets; safe on a zeroed or failed CatalogAuth, and twice. */
void catalog_auth_deinit(CatalogAuth *a);

/* Before a call goes out: returns 0 when it may carry the current token (or none is configured),
 * starting a background refresh once one is due; CATALOG_AUTH_E_PENDING when there is no usable
 * token and a fetch (over `curl`, with the client's header lines) is under way, whose end
 * on_token reports; <0 when no fetch could start. */
int catalog_auth_check(CatalogAuth *a, CurlUv *curl, const char *const *headers, size_t n_headers);

/* True for an answer that refuses the bearer token (401 Unauthorized, 419 Authentication
 * Timeout) while a credential can fetch another: the server did not act on the request. */
bool catalog_auth_is_refusal(const CatalogAuth *a, long http_status);

/* The server refused the token of `generation`: forgets it, unless a newer one has arrived
 * meanwhile, so that the next catalog_auth_check() fetches one. */
void catalog_auth_token_refused(CatalogAuth *a, uint64_t generation);
