/* SPDX-License-Identifier: Apache-2.0 */
/* The tokens in use and the per-request check (auth.h). Refusals are answered here, in the one
 * error shape, before a handler reads its body or asks the catalog anything: a caller without
 * the right learns nothing about the table, not even whether it exists. */
#define LOG_MODULE "auth"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/auth.h"
#include "util/log.h"

struct Auth {
        const AuthConfig *config;
        AuthTokens *tokens; /* NULL: authentication is off */
};

int auth_new(const AuthConfig *config, Auth **ret, Error *error) {
        _cleanup_(auth_freep) Auth *a = NULL;
        int r;

        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->config = config;
        if (config->tokens_file) {
                r = auth_tokens_load(config->tokens_file, config->max_tokens_file_bytes, &a->tokens,
                                     error);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(a);
        return 0;
}

Auth *auth_free(Auth *a) {
        if (!a)
                return NULL;
        auth_tokens_free(a->tokens);
        free(a);
        return NULL;
}

bool auth_is_enabled(const Auth *a) {
        return a && a->tokens;
}

int auth_reload(Auth *a, size_t *ret_n_tokens, Error *error) {
        AuthTokens *fresh = NULL;
        int r;

        if (!auth_is_enabled(a))
                return 1;
        r = auth_tokens_load(a->config->tokens_file, a->config->max_tokens_file_bytes, &fresh,
                             error);
        if (r < 0)
                return r;
        /* One loop thread: no request is between its check and its use of the token here, and
         * handlers that outlive this turn kept copies (auth.h), so the old set can go at once. */
        auth_tokens_free(a->tokens);
        a->tokens = fresh;
        *ret_n_tokens = fresh->n_tokens;
        return 0;
}

static bool is_token68_char(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/';
}

int auth_bearer_parse(Slice header, Slice *ret_token) {
        size_t i = 6, start, end = header.len;

        if (header.len < 7 || strncasecmp((const char *)header.ptr, "Bearer", 6) != 0 ||
            header.ptr[6] != ' ')
                return -EINVAL;
        while (i < header.len && header.ptr[i] == ' ')
                i++;
        while (end > i && (header.ptr[end - 1] == ' ' || header.ptr[end - 1] == '\t'))
                end--;
        start = i;
        while (i < end && is_token68_char(header.ptr[i]))
                i++;
        if (i == start)
                return -EINVAL;
        while (i < end && header.ptr[i] == '=')
                i++;
        if (i != end || end - start > AUTH_TOKEN_MAX)
                return -EINVAL;
        *ret_token = slice_make(header.ptr + start, end - start);
        return 0;
}

static void auth_reply_unauthenticated(HttpRequest *r, bool is_invalid, const char *fmt, ...)
        _printf_(3, 4);
static void auth_reply_unauthenticated(HttpRequest *r, bool is_invalid, const char *fmt, ...) {
        char message[256];
        va_list ap;

        va_start(ap, fmt);
        (void)vsnprintf(message, sizeof(message), fmt, ap);
        va_end(ap);
        /* RFC 6750 section 3: the challenge, and error="invalid_token" for a token we refused. */
        http_reply_add_header(r, "WWW-Authenticate",
                              is_invalid ? "Bearer realm=\"icecommitd\", error=\"invalid_token\""
                                         : "Bearer realm=\"icecommitd\"");
        http_reply_error(r, 401, "unauthenticated", "%s", message);
}

/* "a.b.t" for messages: the levels joined with dots, at most a few hundred bytes. */
static void auth_target_name(const char *namespace_param, const char *table, char *buf,
                             size_t size) {
        size_t n = 0;

        for (const char *c = namespace_param; *c && n + 1 < size; c++)
                buf[n++] = *c == '\x1f' ? '.' : *c;
        buf[n] = '\0';
        if (table)
                (void)snprintf(buf + n, size - n, ".%s", table);
}

int auth_check_target(HttpRequest *r, const AuthToken *caller, AuthRight right,
                      const char *namespace_param, const char *table) {
        char target[320];

        if (!caller)
                return 0;
        if (namespace_param ? auth_token_allows(caller, right, namespace_param, table)
                            : auth_token_has_right(caller, right))
                return 0;
        if (namespace_param) {
                auth_target_name(namespace_param, table, target, sizeof(target));
                log_debug("principal='%s' refused right=%s %s='%s'", caller->principal,
                          auth_right_to_string(right), table ? "table" : "namespace", target);
                http_reply_error(r, 403, "forbidden", "principal '%s' has no '%s' right on %s '%s'",
                                 caller->principal, auth_right_to_string(right),
                                 table ? "table" : "namespace", target);
        } else {
                log_debug("principal='%s' refused right=%s", caller->principal,
                          auth_right_to_string(right));
                http_reply_error(r, 403, "forbidden", "principal '%s' has no '%s' right",
                                 caller->principal, auth_right_to_string(right));
        }
        return -EACCES;
}

int auth_check(Auth *a, HttpRequest *r, AuthRight right, const char *namespace_param,
               const char *table, const AuthToken **ret_token) {
        const AuthToken *token;
        Slice header, presented;

        *ret_token = NULL;
        if (!auth_is_enabled(a))
                return 0;
        if ((right == AUTH_RIGHT_HEALTH && !a->config->health_requires_token) ||
            (right == AUTH_RIGHT_METRICS && !a->config->metrics_requires_token))
                return 0;

        header = http_request_header(r, "authorization");
        if (!header.ptr) {
                auth_reply_unauthenticated(
                        r, /* is_invalid= */ false,
                        "a bearer token is required (Authorization: Bearer TOKEN)");
                return -EACCES;
        }
        if (auth_bearer_parse(header, &presented) < 0) {
                auth_reply_unauthenticated(
                        r, /* is_invalid= */ true,
                        "the Authorization header must be 'Bearer TOKEN' (RFC 6750)");
                return -EACCES;
        }
        token = auth_tokens_find(a->tokens, presented);
        if (!token) {
                log_debug("unknown bearer token refused");
                auth_reply_unauthenticated(r, /* is_invalid= */ true,
                                           "the bearer token is not known here");
                return -EACCES;
        }
        if (auth_check_target(r, token, right, namespace_param, table) < 0)
                return -EACCES;
        *ret_token = token;
        return 0;
}
