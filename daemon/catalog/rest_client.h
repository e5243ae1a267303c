/* SPDX-License-Identifier: Apache-2.0 */
/* The Iceberg REST catalog client: /v1/config, OAuth2 client credentials or a static token,
 * load, commit and create calls, each answered once with an outcome the commit loop can act on
 * (docs/design.md sections 6.1 and 11). Owns its HTTP transport (net/curl_uv.c) on the daemon's
 * loop. Never retries a commit itself and logs no failure above debug: the caller decides and
 * logs once. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "catalog/rest_answer.h"
#include "config/config.h"

/* Owned by the daemon through Catalog (catalog.h), which reaches it through rest_catalog_backend:
 * closed by its close, then freed by rest_client_free(). */
typedef struct RestClient RestClient;

/* Creates an idle client; the configuration is copied (secrets included, wiped at free).
 * Returns 0, -EINVAL (no uri, a header with a line break, an unusable token) or -ENOMEM. */
int rest_client_new(uv_loop_t *loop, const CatalogConfig *config, RestClient **ret_client);

/* Frees a client whose close completed (or NULL). Returns NULL. */
RestClient *rest_client_free(RestClient *c);

/* The advertised idempotency-key-lifetime in ms; 0 when none was advertised or readable. */
uint64_t rest_client_idempotency_lifetime_ms(const RestClient *c);
/* Whether the catalog offers an endpoint, e.g. "POST /v1/{prefix}/transactions/commit"
 * (the OpenAPI default set when /v1/config lists none). False before the client is ready. */
bool rest_client_supports_endpoint(const RestClient *c, const char *endpoint);
/* The prefix (NULL for none) and the namespace separator in use, for tests and logs. */
const char *rest_client_prefix(const RestClient *c);
const char *rest_client_namespace_separator(const RestClient *c);
/* Connections opened so far (keep-alive reuses them), for tests. */
uint64_t rest_client_connections_opened(const RestClient *c);
/* Bodies handed to the thread pool so far, and those still there, for tests. */
uint64_t rest_client_parses_started(const RestClient *c);
size_t rest_client_parses_in_flight(const RestClient *c);

/* This client behind the catalog interface (catalog.h). What each call does here:
 * - start fetches an OAuth2 token when a credential is configured, then GET
 *   /v1/config?warehouse= and applies prefix, namespace-separator, endpoints and
 *   idempotency-key-lifetime; cb gets the first outcome (body: the CatalogConfig response). If
 *   that fails, the client keeps trying in the background (1 s doubling to 60 s) until it is
 *   ready. Calling it again reloads the configuration. Calls made before the client is ready
 *   wait for the first /v1/config (and fetch it themselves if none is under way). Returns <0
 *   (-ESHUTDOWN, -ENOMEM) without calling cb, or 0.
 * - is_ready: once a /v1/config answer was applied. supports_idempotency: when /v1/config
 *   advertised idempotency-key-lifetime or catalog.send-idempotency-key is set.
 * - load_table: GET /v1/{prefix}/namespaces/{namespace}/tables/{table}. On success the body is
 *   the LoadTableResult (its envelope checked). Returns <0 without calling cb: -EINVAL for an
 *   empty namespace, level or name, -ESHUTDOWN, -ENOMEM; else 0.
 * - load_table_refs: the same with ?snapshots=refs (Apache Iceberg's server from 1.10 lists only
 *   the snapshots of branches and tags then; a server that ignores it sends them all).
 * - every 2xx body of catalog.parse-off-loop-bytes or more (0: all) is parsed and checked on the
 *   libuv thread pool, taken from the transfer without a copy; the callback still comes once,
 *   from the loop, with the same result an on-loop parse gives.
 * - commit_table: POST /v1/{prefix}/namespaces/{namespace}/tables/{table} with `request`, a
 *   CommitTableRequest (borrowed; serialized before returning). idempotency_key (NULL: none)
 *   is sent as the Idempotency-Key header, unchanged on the one retry after a 401/419 token
 *   refresh. A 200 is success even if its body cannot be read (body NULL, message says why):
 *   the verdict is the status. Returns <0 without calling cb (-EINVAL, -ESHUTDOWN, -ENOMEM).
 * - create_namespace: POST /v1/{prefix}/namespaces {"namespace": [...], "properties":
 *   properties (may be NULL)}. An existing namespace is CATALOG_E_CONFLICT (409
 *   AlreadyExistsException).
 * - create_table: POST /v1/{prefix}/namespaces/{namespace}/tables with `request`, a
 *   CreateTableRequest (borrowed) whose "name" is set to `name`. An existing table is
 *   CATALOG_E_CONFLICT.
 * - close cancels every call (each completes with -ECANCELED, from the loop; a cancelled
 *   mutation may have reached the catalog; a 2xx whose body is on the thread pool completes with
 *   it, or, if no thread took it yet, with -ECANCELED for a read and success without a body for
 *   a mutation), closes every uv handle, waits for the thread pool, then calls done(userdata)
 *   (done may be NULL). Calls started from then on, including from the -ECANCELED callbacks,
 *   fail with -ESHUTDOWN. Free the client with rest_client_free() once done was called. */
extern const CatalogBackend rest_catalog_backend;
