/* SPDX-License-Identifier: Apache-2.0 */
/* The Iceberg REST catalog's wire format, pure: request paths and form bodies we build, and
 * parsers for what a catalog sends back (CatalogConfig, IcebergErrorResponse, the OAuth2 token
 * response, the LoadTableResult envelope). No I/O and no logging; every parser here takes bytes
 * we do not control and is fuzzed (tests/fuzz/fuzz-catalog-response.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"
#include "util/slice.h"

/* The OpenAPI default of namespace-separator: 0x1F, as it appears in a path. */
#define REST_DEFAULT_NAMESPACE_SEPARATOR "%1F"

/* URLs and bodies we build: far above any real path or commit request, far below memory. */
#define CATALOG_MAX_REQUEST_BYTES (64u << 20)

typedef enum RestResource {
        REST_RESOURCE_NAMESPACES, /* /v1/{prefix}/namespaces */
        REST_RESOURCE_TABLES,     /* /v1/{prefix}/namespaces/{namespace}/tables */
        REST_RESOURCE_TABLE,      /* /v1/{prefix}/namespaces/{namespace}/tables/{table} */
} RestResource;

/* Appends s[0..len) percent-encoded: the RFC 3986 unreserved bytes (ALPHA DIGIT - . _ ~) stay,
 * every other byte becomes %XX. Returns 0, -E2BIG or -ENOMEM. */
int rest_percent_encode(Buf *out, const char *s, size_t len);

/* Appends "key=value" as application/x-www-form-urlencoded, after a '&' unless out is empty. */
int rest_form_append(Buf *out, const char *key, const char *value);

/* Appends the path of `resource` (starting with "/v1/"). prefix NULL or "" leaves the segment
 * out, as Java does; the prefix and separator come from /v1/config and are used as given
 * (already encoded), except that bytes not allowed in a path are encoded. Namespace levels and
 * the table name are percent-encoded; levels are joined with the separator. Returns -EINVAL
 * for an empty namespace, level or table name, else 0, -E2BIG or -ENOMEM. */
int rest_path_append(Buf *out, RestResource resource, const char *prefix, const char *separator,
                     const char *const *namespace, size_t n_namespace, const char *table);

/* Copies len bytes of text into dst (size > 0, always NUL-terminated) for messages and logs:
 * control bytes become spaces, a cut never splits a UTF-8 sequence. */
void rest_text_copy(char *dst, size_t size, const char *src, size_t len);

/* Parses a JSON document. jansson rejects integers that do not fit a long long (and so an
 * int64) instead of wrapping them. Returns 0 or -EBADMSG with line and column in *error. */
int rest_json_parse(Slice body, json_t **ret_json, Error *error);

/* The CatalogConfig of GET /v1/config, merged and reduced to what the client uses. */
typedef struct RestConfig {
        json_t *properties;        /* defaults, then client properties, then overrides */
        char *prefix;              /* NULL: no prefix segment */
        char *namespace_separator; /* as it goes into a path, e.g. "%1F" or "%2E" */
        bool has_endpoints;        /* false: the OpenAPI default endpoint set applies */
        char **endpoints;          /* "<VERB> <path template>" */
        size_t n_endpoints;
        bool has_idempotency;             /* idempotency-key-lifetime was advertised */
        uint64_t idempotency_lifetime_ms; /* 0 when it was advertised but is not a duration we read
                                           */
} RestConfig;

/* Parses a CatalogConfig response. client_properties (may be NULL) is an object of string
 * values placed between defaults and overrides. Property maps must hold strings only (as in
 * Java's parser). Returns 0 or -EBADMSG/-ENOMEM; on failure *ret is untouched. */
int rest_config_parse(const json_t *response, const json_t *client_properties, RestConfig *ret,
                      Error *error);
void rest_config_deinit(RestConfig *config);
/* Whether the catalog offers an endpoint such as "POST /v1/{prefix}/namespaces/{namespace}/tables".
 */
bool rest_config_has_endpoint(const RestConfig *config, const char *endpoint);

/* Parses an ISO-8601 duration as used by idempotency-key-lifetime ("PT30M", "P1DT2H",
 * "PT0.5S", "P2W"). Years and months have no fixed length and are rejected. Returns 0, -EINVAL
 * or -ERANGE. */
int rest_duration_parse(const char *s, uint64_t *ret_ms);

/* An IcebergErrorResponse {"error": {"message", "type", "code"}}; strings are cleaned with
 * rest_text_copy(). */
typedef struct RestError {
        char message[1024];
        char type[128];
        long code; /* 0 when absent or not in 400..599 */
} RestError;

/* Also reads the token endpoint's RFC 6749 error {"error": "<type>", "error_description"}.
 * Returns 0, or -EBADMSG when the body is neither (then *ret is zeroed). */
int rest_error_parse(Slice body, RestError *ret);

/* An OAuth2 token response (RFC 6749 5.1). */
typedef struct RestToken {
        char *access_token; /* owned; visible ASCII only, safe in a header line */
        bool has_expires_in;
        uint32_t expires_in_s; /* >= 1 when present */
} RestToken;

/* Returns 0 or -EBADMSG/-ENOMEM; on failure *ret is untouched. */
int rest_token_parse(Slice body, RestToken *ret, Error *error);
/* Wipes and frees the token. */
void rest_token_deinit(RestToken *token);

/* Checks the envelope shared by LoadTableResult and CommitTableResponse: an object whose
 * "metadata" is an object and whose "metadata-location", if present, is a string or null.
 * Returns 0 or -EBADMSG. The metadata itself is iceberg/table.c's business. */
int rest_table_result_check(const json_t *body, Error *error);
