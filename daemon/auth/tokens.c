/* SPDX-License-Identifier: Apache-2.0 */
/* The tokens file parser, token lookup and the scope decision (tokens.h). Pure: no I/O except
 * auth_tokens_load() reading the one file, no logging. Every refusal names the line, the field
 * by its number and the rule, never a field's bytes: a token pasted into the wrong column must
 * not reach the journal. Never holds a token in memory longer than hashing it takes. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/tokens.h"
#include "util/parse.h"
#include "util/utf8.h"

static const struct {
        const char *name;
        AuthRight right;
} right_names[] = {
        { "commit", AUTH_RIGHT_COMMIT },   { "create", AUTH_RIGHT_CREATE },
        { "upgrade", AUTH_RIGHT_UPGRADE }, { "read", AUTH_RIGHT_READ },
        { "metrics", AUTH_RIGHT_METRICS }, { "health", AUTH_RIGHT_HEALTH },
        { "admin", AUTH_RIGHT_ADMIN },
};

const char *auth_right_to_string(AuthRight right) {
        for (size_t i = 0; i < ELEMENTSOF(right_names); i++)
                if (right_names[i].right == right)
                        return right_names[i].name;
        return "?";
}

bool auth_principal_is_valid(const char *name, size_t len) {
        if (len == 0 || len > AUTH_PRINCIPAL_MAX)
                return false;
        /* No ',' or '/': the principal is recorded as "principal/key" in the comma-separated
         * key list of snapshot summaries. */
        for (size_t i = 0; i < len; i++) {
                char c = name[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

static void pattern_deinit(AuthPattern *p) {
        for (size_t i = 0; i < p->n_levels; i++)
                free(p->levels[i]);
        free(p->levels);
}

static void token_deinit(AuthToken *t) {
        for (size_t i = 0; i < t->n_scopes; i++) {
                for (size_t k = 0; k < t->scopes[i].n_patterns; k++)
                        pattern_deinit(&t->scopes[i].patterns[k]);
                free(t->scopes[i].patterns);
        }
        free(t->scopes);
        free(t->principal);
}

AuthTokens *auth_tokens_free(AuthTokens *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < t->n_tokens; i++)
                token_deinit(&t->tokens[i]);
        free(t->tokens);
        free(t);
        return NULL;
}

/* The parser's cursor over one line: fields separated by blanks. */
typedef struct Fields {
        const char *p, *end;
} Fields;

static bool fields_next(Fields *f, Slice *ret) {
        const char *start;

        while (f->p < f->end && (*f->p == ' ' || *f->p == '\t'))
                f->p++;
        if (f->p == f->end)
                return false;
        start = f->p;
        while (f->p < f->end && *f->p != ' ' && *f->p != '\t')
                f->p++;
        *ret = slice_make(start, (size_t)(f->p - start));
        return true;
}

static int digest_parse(Slice s, uint8_t ret[AUTH_DIGEST_BYTES]) {
        if (s.len != 2 * AUTH_DIGEST_BYTES)
                return -EINVAL;
        for (size_t i = 0; i < AUTH_DIGEST_BYTES; i++) {
                int hi = parse_hex_digit(s.ptr[2 * i]), lo = parse_hex_digit(s.ptr[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                ret[i] = (uint8_t)(hi << 4 | lo);
        }
        return 0;
}

static int rights_parse(Slice s, unsigned *ret, Error *error) {
        unsigned rights = 0;
        size_t n = 0;

        for (size_t i = 0; i <= s.len;) {
                const uint8_t *comma = memchr(s.ptr + i, ',', s.len - i);
                size_t len = comma ? (size_t)(comma - (s.ptr + i)) : s.len - i;
                bool found = false;

                n++;
                for (size_t k = 0; k < ELEMENTSOF(right_names) && !found; k++)
                        if (strlen(right_names[k].name) == len &&
                            memcmp(right_names[k].name, s.ptr + i, len) == 0) {
                                rights |= right_names[k].right;
                                found = true;
                        }
                if (!found)
                        return error_set(error, -EINVAL,
                                         "right %zu is unknown (use commit, create, admin, "
                                         "upgrade, read, metrics, health)",
                                         n);
                i += len + 1;
        }
        *ret = rights;
        return 0;
}

static int pattern_parse(Slice s, AuthPattern *ret, Error *error) {
        _cleanup_(pattern_deinit) AuthPattern p = { 0 };

        if (s.len == 0)
                return error_set(error, -EINVAL, "is empty");
        if (slice_eq_str(s, "*")) {
                *ret = (AuthPattern){ .is_prefix = true };
                return 0;
        }
        for (size_t i = 0; i <= s.len;) {
                const uint8_t *dot = memchr(s.ptr + i, '.', s.len - i);
                size_t len = dot ? (size_t)(dot - (s.ptr + i)) : s.len - i;
                char **levels;

                if (len == 0)
                        return error_set(error, -EINVAL, "has an empty level");
                if (!dot && len == 1 && s.ptr[i] == '*') {
                        p.is_prefix = true;
                        break;
                }
                if (memchr(s.ptr + i, '*', len))
                        return error_set(error, -EINVAL,
                                         "'*' stands alone, as the last level ('NAMESPACE.*', "
                                         "'*')");
                levels = reallocarray(p.levels, p.n_levels + 1, sizeof(*levels));
                if (!levels)
                        return -ENOMEM;
                p.levels = levels;
                p.levels[p.n_levels] = strndup((const char *)s.ptr + i, len);
                if (!p.levels[p.n_levels])
                        return -ENOMEM;
                p.n_levels++;
                i += len + 1;
        }
        if (!p.is_prefix && p.n_levels < 2)
                return error_set(error, -EINVAL,
                                 "names no table: use 'NAMESPACE.*' for every table of a "
                                 "namespace, or 'NAMESPACE.TABLE'");
        *ret = p;
        p = (AuthPattern){ 0 };
        return 0;
}

/* "rights[:patterns]": commit,read:sales.*,ops.audit.events */
static int scope_parse(Slice s, AuthScope *ret, Error *error) {
        const uint8_t *colon = memchr(s.ptr, ':', s.len);
        Slice rights = colon ? slice_make(s.ptr, (size_t)(colon - s.ptr)) : s;
        AuthScope scope = { 0 };
        int r;

        r = rights_parse(rights, &scope.rights, error);
        if (r < 0)
                return r;
        if (!colon) {
                if (scope.rights & AUTH_TABLE_RIGHTS)
                        return error_set(error, -EINVAL,
                                         "commit, create, admin, upgrade and read need patterns, "
                                         "e.g. 'commit,read:NAMESPACE.*'");
                *ret = scope;
                return 0;
        }
        if (scope.rights & ~AUTH_TABLE_RIGHTS)
                return error_set(error, -EINVAL, "metrics and health take no patterns");

        for (size_t i = (size_t)(colon - s.ptr) + 1; i <= s.len;) {
                const uint8_t *comma = memchr(s.ptr + i, ',', s.len - i);
                size_t len = comma ? (size_t)(comma - (s.ptr + i)) : s.len - i;
                AuthPattern *patterns;

                patterns = reallocarray(scope.patterns, scope.n_patterns + 1, sizeof(*patterns));
                if (!patterns)
                        r = -ENOMEM;
                else {
                        scope.patterns = patterns;
                        r = pattern_parse(slice_make(s.ptr + i, len),
                                          &scope.patterns[scope.n_patterns], error);
                        if (r < 0 && r != -ENOMEM)
                                r = error_prefix(error, r, "pattern %zu", scope.n_patterns + 1);
                }
                if (r < 0) {
                        for (size_t k = 0; k < scope.n_patterns; k++)
                                pattern_deinit(&scope.patterns[k]);
                        free(scope.patterns);
                        return r;
                }
                scope.n_patterns++;
                i += len + 1;
        }
        *ret = scope;
        return 0;
}

/* SHA-256 of a token, as the file's second field holds it. */
static int token_digest(Slice token, uint8_t ret[AUTH_DIGEST_BYTES]) {
        unsigned int len = 0;

        if (EVP_Digest(token.ptr, token.len, ret, &len, EVP_sha256(), /* impl= */ NULL) != 1 ||
            len != AUTH_DIGEST_BYTES)
                return -EIO;
        return 0;
}

/* One line's fields. Messages name fields by number (1: principal, 2: SHA-256, 3...: scopes). */
static int line_parse(const char *p, size_t len, AuthToken *ret, Error *error) {
        _cleanup_(token_deinit) AuthToken t = { 0 };
        uint8_t name_digest[AUTH_DIGEST_BYTES];
        Fields f = { p, p + len };
        Slice name, digest, field;
        int r;

        if (!fields_next(&f, &name) || !fields_next(&f, &digest))
                return error_set(error, -EINVAL,
                                 "expected PRINCIPAL SHA256 SCOPE..., separated by blanks");
        if (!auth_principal_is_valid((const char *)name.ptr, name.len))
                return error_set(error, -EINVAL,
                                 "field 1, the principal, must be 1 to %d characters of A-Z a-z "
                                 "0-9 . _ -",
                                 AUTH_PRINCIPAL_MAX);
        if (digest_parse(digest, t.digest) < 0)
                return error_set(error, -EINVAL,
                                 "field 2 must be the token's SHA-256 as 64 hex digits "
                                 "(printf %%s \"$TOKEN\" | sha256sum), never the token itself");
        /* "TOKEN SHA256(TOKEN) scopes": a URL-safe token is a valid principal name, which would
         * be logged and recorded in snapshot summaries. */
        r = token_digest(name, name_digest);
        if (r < 0)
                return error_set(error, r, "cannot compute a SHA-256 (OpenSSL failed)");
        if (memcmp(name_digest, t.digest, AUTH_DIGEST_BYTES) == 0)
                return error_set(error, -EINVAL,
                                 "field 1 is the token itself (field 2 is its SHA-256): put the "
                                 "principal's name there and hand the token to the writer only");
        t.principal = strndup((const char *)name.ptr, name.len);
        if (!t.principal)
                return -ENOMEM;
        while (fields_next(&f, &field)) {
                AuthScope *scopes = reallocarray(t.scopes, t.n_scopes + 1, sizeof(*scopes));

                if (!scopes)
                        return -ENOMEM;
                t.scopes = scopes;
                r = scope_parse(field, &t.scopes[t.n_scopes], error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return error_prefix(error, r, "field %zu", t.n_scopes + 3);
                t.n_scopes++;
        }
        if (t.n_scopes == 0)
                return error_set(error, -EINVAL,
                                 "no scope after the SHA-256 (e.g. 'commit,read:NAMESPACE.*')");
        *ret = t;
        t = (AuthToken){ 0 };
        return 0;
}

/* The line number of byte `at`, counting from 1. */
static unsigned line_number(const char *text, const char *at) {
        unsigned line = 1;

        for (const char *c = text; c < at; c++)
                line += *c == '\n';
        return line;
}

int auth_tokens_parse(Slice text, const char *path, AuthTokens **ret, Error *error) {
        _cleanup_(auth_tokens_freep) AuthTokens *t = NULL;
        const char *p = (const char *)text.ptr, *end = p + text.len, *nul;
        unsigned line = 0;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        nul = text.len > 0 ? memchr(text.ptr, '\0', text.len) : NULL;
        if (nul)
                return error_set(error, -EINVAL, "%s:%u: holds a NUL byte: not a text file", path,
                                 line_number(p, nul));

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
                const char *next = nl ? nl + 1 : end;
                size_t lead = 0;
                AuthToken *tokens;

                line++;
                if (len > 0 && p[len - 1] == '\r')
                        len--;
                while (lead < len && (p[lead] == ' ' || p[lead] == '\t'))
                        lead++;
                if (lead == len || p[lead] == '#') {
                        p = next;
                        continue;
                }
                for (size_t i = 0; i < len; i++)
                        if (((uint8_t)p[i] < 0x20 && p[i] != '\t') || (uint8_t)p[i] == 0x7f)
                                return error_set(error, -EINVAL, "%s:%u: holds a control character",
                                                 path, line);
                /* Only patterns may hold more than ASCII, and names in requests are UTF-8. */
                if (!utf8_is_valid(p, len))
                        return error_set(error, -EINVAL, "%s:%u: is not valid UTF-8", path, line);

                tokens = reallocarray(t->tokens, t->n_tokens + 1, sizeof(*tokens));
                if (!tokens)
                        return -ENOMEM;
                t->tokens = tokens;
                r = line_parse(p, len, &t->tokens[t->n_tokens], error);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return error_prefix(error, r, "%s:%u", path, line);
                t->tokens[t->n_tokens].line = line;
                for (size_t i = 0; i < t->n_tokens; i++)
                        if (memcmp(t->tokens[i].digest, t->tokens[t->n_tokens].digest,
                                   AUTH_DIGEST_BYTES) == 0) {
                                r = error_set(error, -EINVAL, "%s:%u: the same token as line %u",
                                              path, line, t->tokens[i].line);
                                token_deinit(&t->tokens[t->n_tokens]);
                                return r;
                        }
                t->n_tokens++;
                p = next;
        }
        if (t->n_tokens == 0)
                return error_set(error, -EINVAL,
                                 "%s: no tokens: every request would be refused (unset "
                                 "auth.tokens-file to turn authentication off)",
                                 path);

        *ret = TAKE_PTR(t);
        return 0;
}

int auth_tokens_load(const char *path, uint64_t max_bytes, AuthTokens **ret, Error *error) {
        _cleanup_(closep) int fd = -1;
        _cleanup_(freep) char *text = NULL;
        struct stat st;
        size_t n = 0;

        /* O_NONBLOCK: a FIFO in its place must not hang the loop thread (it is refused below). */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return error_set(error, -errno, "%s: cannot open: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                return error_set(error, -errno, "%s: cannot stat: %s", path, strerror(errno));
        if (!S_ISREG(st.st_mode))
                return error_set(error, -EINVAL, "%s: not a regular file", path);
        if ((uint64_t)st.st_size > max_bytes)
                return error_set(error, -EFBIG,
                                 "%s: %lld bytes, above auth.max-tokens-file-bytes=%llu", path,
                                 (long long)st.st_size, (unsigned long long)max_bytes);
        text = malloc((size_t)st.st_size + 1);
        if (!text)
                return error_set(error, -ENOMEM, "%s: out of memory", path);
        /* Read one byte more than stat said, to notice a file that grew meanwhile. */
        while (n <= (size_t)st.st_size) {
                ssize_t k = read(fd, text + n, (size_t)st.st_size + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return error_set(error, -errno, "%s: cannot read: %s", path,
                                         strerror(errno));
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        if (n > (size_t)st.st_size)
                return error_set(error, -EAGAIN, "%s: changed while being read, try again", path);
        return auth_tokens_parse(slice_make(text, n), path, ret, error);
}

const AuthToken *auth_tokens_find(const AuthTokens *t, Slice token) {
        uint8_t digest[AUTH_DIGEST_BYTES];
        const AuthToken *found = NULL;

        if (!t || token.len == 0)
                return NULL;
        if (token_digest(token, digest) < 0)
                return NULL;
        /* No early exit: every digest is compared, whichever matches. */
        for (size_t i = 0; i < t->n_tokens; i++)
                if (CRYPTO_memcmp(digest, t->tokens[i].digest, AUTH_DIGEST_BYTES) == 0 && !found)
                        found = &t->tokens[i];
        OPENSSL_cleanse(digest, sizeof(digest));
        return found;
}

bool auth_token_has_right(const AuthToken *token, AuthRight right) {
        for (size_t i = 0; i < token->n_scopes; i++)
                if (token->scopes[i].rights & right)
                        return true;
        return false;
}

/* Whether the pattern covers table `table` of `namespace_param` (0x1F-separated levels), or
 * with `table` NULL the namespace itself. Levels compare whole, so "a.*" never covers "ab". */
static bool pattern_matches(const AuthPattern *p, const char *namespace_param, const char *table) {
        const char *level = namespace_param;
        size_t n_ns = 1, n_prefix = p->is_prefix ? p->n_levels : p->n_levels - 1;

        for (const char *c = namespace_param; *c; c++)
                n_ns += *c == '\x1f';
        if (p->is_prefix ? n_ns < n_prefix : n_ns != n_prefix)
                return false;
        for (size_t i = 0; i < n_prefix; i++) {
                const char *sep = strchr(level, '\x1f');
                size_t len = sep ? (size_t)(sep - level) : strlen(level);

                if (strlen(p->levels[i]) != len || memcmp(p->levels[i], level, len) != 0)
                        return false;
                level = sep ? sep + 1 : level + len;
        }
        if (p->is_prefix)
                return true;
        /* An exact pattern names one table, never a namespace. */
        return table && strcmp(p->levels[p->n_levels - 1], table) == 0;
}

bool auth_token_allows(const AuthToken *token, AuthRight right, const char *namespace_param,
                       const char *table) {
        for (size_t i = 0; i < token->n_scopes; i++) {
                const AuthScope *s = &token->scopes[i];

                if (!(s->rights & right))
                        continue;
                for (size_t k = 0; k < s->n_patterns; k++)
                        if (pattern_matches(&s->patterns[k], namespace_param, table))
                                return true;
        }
        return false;
}
