/* SPDX-License-Identifier: Apache-2.0 */
/* Writer authentication and authorization: the tokens file in use (reloaded whole on SIGHUP)
 * and the one check every route handler makes before any other work, answering 401
 * unauthenticated or 403 forbidden itself. Off when auth.tokens-file is not set. */
#pragma once

#include <stdbool.h>

#include "auth/tokens.h"
#include "config/config.h"
#include "http/http.h"
#include "util/cleanup.h"
#include "util/error.h"

/* Owned by the daemon; borrowed by the API modules, whose handlers call auth_check(). */
typedef struct Auth Auth;

/* Loads the tokens file named by config->tokens_file (borrowed, must outlive the Auth); with
 * none, authentication is off. Returns 0, -ENOMEM, or the tokens file's error with the reason
 * in *error (the daemon refuses to start then). */
int auth_new(const AuthConfig *config, Auth **ret, Error *error);
Auth *auth_free(Auth *a);
DEFINE_CLEANUP_FUNC(Auth, auth_free);

/* Whether requests need a token. A NULL Auth is off. */
bool auth_is_enabled(const Auth *a);
/* Reads the tokens file again. A good file replaces the tokens for every request checked from
 * now on (tokens borrowed from the old set must not be used after the handler returned); a bad
 * one changes nothing. Returns 0 and the number of tokens, 1 when auth is off (nothing to
 * reload), or the loader's error with the reason in *error. */
int auth_reload(Auth *a, size_t *ret_n_tokens, Error *error);

/* The check at the top of a handler. With `table`: right `right` on that table of
 * `namespace_param` (0x1F-separated levels); with only `namespace_param`: on the namespace
 * itself; with neither: the right anywhere (service rights, or a first check before a body
 * names the target). Returns 0 when the request may go on, with the caller's token in
 * *ret_token (NULL when auth is off or the route is open; borrowed until the handler returns:
 * copy the principal to keep it); otherwise it has answered 401 or 403 and returns -EACCES. */
int auth_check(Auth *a, HttpRequest *r, AuthRight right, const char *namespace_param,
               const char *table, const AuthToken **ret_token);

/* The second check, for a target that only the body names: `caller` is what auth_check()
 * returned (NULL: auth off or open, allowed). Returns 0, or answers 403 and returns -EACCES. */
int auth_check_target(HttpRequest *r, const AuthToken *caller, AuthRight right,
                      const char *namespace_param, const char *table);

/* Cuts the token out of an Authorization header value "Bearer <token68>" (scheme
 * case-insensitive, RFC 6750 section 2.1). Returns 0, or -EINVAL when it is not one. */
int auth_bearer_parse(Slice header, Slice *ret_token);
