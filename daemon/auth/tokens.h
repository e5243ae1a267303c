/* SPDX-License-Identifier: Apache-2.0 */
/* The writer tokens file (docs/operations.md, "Writer authentication"): one token per line, its
 * principal, the SHA-256 of the token (never the token) and its scopes. Pure: bytes in, an
 * immutable AuthTokens out; lookups hash the presented token and compare in constant time. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"
#include "util/error.h"
#include "util/slice.h"

#define AUTH_DIGEST_BYTES 32  /* SHA-256 */
#define AUTH_PRINCIPAL_MAX 64 /* principal names: 1 to 64 of [A-Za-z0-9._-] */
#define AUTH_TOKEN_MAX 4096   /* presented tokens longer than this are malformed */

/* Rights, as bits. The table rights are granted on patterns; the service rights (metrics,
 * health) on the daemon as a whole. */
typedef enum AuthRight {
        AUTH_RIGHT_COMMIT = 1u << 0,  /* POST .../commits */
        AUTH_RIGHT_CREATE = 1u << 1,  /* create namespaces and tables */
        AUTH_RIGHT_UPGRADE = 1u << 2, /* POST .../upgrade */
        AUTH_RIGHT_READ = 1u << 3,    /* receipts (GET /v1/commits/{key}), lineage audit, row ids */
        AUTH_RIGHT_METRICS = 1u << 4, /* GET /metrics, unless auth.metrics-requires-token = false */
        AUTH_RIGHT_HEALTH = 1u << 5, /* GET /healthz and /readyz, when auth.health-requires-token */
        /* Besides create: a create that says where a table's files lie (a location, a
         * write.*.path or icecommit.allowed-prefixes), within the storage roots. */
        AUTH_RIGHT_ADMIN = 1u << 6,
} AuthRight;

#define AUTH_TABLE_RIGHTS                                                                          \
        (AUTH_RIGHT_COMMIT | AUTH_RIGHT_CREATE | AUTH_RIGHT_UPGRADE | AUTH_RIGHT_READ |            \
         AUTH_RIGHT_ADMIN)

/* "*" (n_levels 0, is_prefix), "a.b.*" (levels a, b, is_prefix) or "a.b.t" (exact: namespace
 * a.b, table t). Levels compare whole: "a.*" covers a.t and a.b.t, never ab.t. */
typedef struct AuthPattern {
        char **levels;
        size_t n_levels;
        bool is_prefix;
} AuthPattern;

typedef struct AuthScope {
        unsigned rights;       /* AuthRight bits */
        AuthPattern *patterns; /* none for service rights */
        size_t n_patterns;
} AuthScope;

/* One line of the file. A principal may have several tokens (one line each, e.g. while
 * rotating); each token carries the scopes of its own line. */
typedef struct AuthToken {
        char *principal;
        uint8_t digest[AUTH_DIGEST_BYTES];
        AuthScope *scopes;
        size_t n_scopes;
        unsigned line;
} AuthToken;

/* An immutable, parsed tokens file. Owned by Auth (auth.h); replaced whole on reload. */
typedef struct AuthTokens {
        AuthToken *tokens;
        size_t n_tokens;
} AuthTokens;

/* Parses the file's bytes. `path` only names the file in messages. Returns 0, -ENOMEM, or
 * -EINVAL (-EIO when OpenSSL fails) with "PATH:LINE: rule" in *error, nothing returned then.
 * A message names the line, a field by its number and the rule it breaks, never any of the
 * file's bytes (a token pasted into the wrong column must not reach a log). */
int auth_tokens_parse(Slice text, const char *path, AuthTokens **ret, Error *error);
/* Reads and parses the file at `path`, refusing one above max_bytes (-EFBIG). Returns 0,
 * -errno when it cannot be read, or what auth_tokens_parse() returns; *error says why. */
int auth_tokens_load(const char *path, uint64_t max_bytes, AuthTokens **ret, Error *error);
AuthTokens *auth_tokens_free(AuthTokens *t);
DEFINE_CLEANUP_FUNC(AuthTokens, auth_tokens_free);

/* The token whose SHA-256 digest matches `token`, or NULL. Every entry is compared, each with
 * CRYPTO_memcmp(), so the time taken says nothing about which entry (or how much of a digest)
 * matched. The result is borrowed from `t`. */
const AuthToken *auth_tokens_find(const AuthTokens *t, Slice token);

/* Whether `token` holds `right` in any scope, whatever the pattern. */
bool auth_token_has_right(const AuthToken *token, AuthRight right);
/* Whether `token` holds the table right `right` on table `table` of the namespace
 * `namespace_param` (levels separated by 0x1F, as in the writer API's paths). With `table`
 * NULL: on the namespace itself (creating it), which only "*" and prefix patterns covering it
 * grant ("a.*" covers namespaces a and a.b). */
bool auth_token_allows(const AuthToken *token, AuthRight right, const char *namespace_param,
                       const char *table);

/* "commit", "read", ...: the right's name in the file and in messages. */
const char *auth_right_to_string(AuthRight right);
/* Whether the bytes are a valid principal name. */
bool auth_principal_is_valid(const char *name, size_t len);
