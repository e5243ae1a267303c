/* SPDX-License-Identifier: Apache-2.0 */
/* auth/: the tokens file (accepted, and refused with line numbers but never a field's bytes),
 * scope patterns (whole levels, multi-level namespaces, "*", exact tables, namespaces
 * themselves), token lookup through CRYPTO_memcmp over every entry, bearer headers, and the
 * [auth] options. */
#include <errno.h>
#include <openssl/crypto.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth.h"
#include "auth/tokens.h"
#include "config/config.h"
#include "test.h"

#define DIGEST_ALICE "c26a7f01074b72beff2295b5cb02eb0b0fa871f4aca30367c51ffcd0c68d4832"
#define DIGEST_BOB "1ccf8933062b5a156c5f57ad39314916ec1cbf46db164a70721323b8523c7068"
#define DIGEST_OPS "8a614cb2ba0c93943279cc96da7ef50c8885b0b3e6d9ff566979a956444c8f05"

/* Linked in place of libcrypto's: counts the calls, and compares without an early exit as the
 * real one does. Proves lookups go through the constant-time compare, for every entry. */
static size_t n_memcmp_calls;
int CRYPTO_memcmp(const void *in_a, const void *in_b, size_t len) {
        const volatile unsigned char *a = in_a, *b = in_b;
        unsigned char x = 0;

        n_memcmp_calls++;
        for (size_t i = 0; i < len; i++)
                x |= a[i] ^ b[i];
        return x;
}

static const char good_file[] = "# principal   sha256(token)   scopes\n"
                                "alice " DIGEST_ALICE " commit,read:sales.*,ops.audit.events\r\n"
                                "\n"
                                "   # indented comment\n"
                                "bob\t" DIGEST_BOB "\tread:*   create:sales.staging.*\n"
                                "ops " DIGEST_OPS " metrics health upgrade:*";

static AuthTokens *parse(const char *text) {
        AuthTokens *t = NULL;
        Error e = { 0 };

        if (auth_tokens_parse(slice_from_str(text), "tokens", &t, &e) < 0)
                TEST_FAIL("parse failed: %s", e.message);
        return t;
}

TEST(good_file_parses) {
        _cleanup_(auth_tokens_freep) AuthTokens *t = parse(good_file);

        ASSERT_EQ(t->n_tokens, 3);
        ASSERT_STREQ(t->tokens[0].principal, "alice");
        ASSERT_EQ(t->tokens[0].line, 2);
        ASSERT_EQ(t->tokens[0].n_scopes, 1);
        ASSERT_EQ(t->tokens[0].scopes[0].rights, AUTH_RIGHT_COMMIT | AUTH_RIGHT_READ);
        ASSERT_EQ(t->tokens[0].scopes[0].n_patterns, 2);
        ASSERT_STREQ(t->tokens[1].principal, "bob");
        ASSERT_EQ(t->tokens[1].line, 5);
        ASSERT_EQ(t->tokens[1].n_scopes, 2);
        ASSERT_EQ(t->tokens[2].n_scopes, 3);
        ASSERT_TRUE(auth_token_has_right(&t->tokens[2], AUTH_RIGHT_METRICS));
        ASSERT_TRUE(auth_token_has_right(&t->tokens[2], AUTH_RIGHT_HEALTH));
        ASSERT_TRUE(!auth_token_has_right(&t->tokens[0], AUTH_RIGHT_METRICS));
        ASSERT_TRUE(!auth_token_has_right(&t->tokens[0], AUTH_RIGHT_CREATE));
}

/* Secret-looking fields: what a token pasted into the wrong column looks like (URL-safe and
 * base64 forms of 32 random bytes). */
#define SECRET "hVq3Zk9xP2mW7rT4yB8nC1dF6gJ0sLaE5uI_oK-eRw"
#define SECRET_B64 "Nq8Zk2xP9mW7rT4yB8nC1dF6gJ0sLaE5uI+oK/eRwQ="

/* A message must hold none of the field's bytes: neither the whole nor its first 8. */
static void assert_no_echo(const char *message, const char *secret) {
        char head[9] = { 0 };

        if (strstr(message, secret))
                TEST_FAIL("'%s' echoes '%s'", message, secret);
        memcpy(head, secret, strnlen(secret, 8));
        if (strstr(message, head))
                TEST_FAIL("'%s' echoes the start of '%s'", message, secret);
}

/* Every refusal of the parser: the file, the line (and the field) and the rule, never a byte
 * of the field that broke it (the `secret` put there). */
TEST(bad_files_are_refused_with_line_and_rule_only) {
        static const struct {
                const char *text, *message, *secret;
        } cases[] = {
                { "", "tokens: no tokens", NULL },
                { "# " SECRET "\n\n", "tokens: no tokens", SECRET },
                { SECRET "\n", "tokens:1: expected PRINCIPAL SHA256 SCOPE", SECRET },
                { "\n" SECRET_B64 " " DIGEST_ALICE " read:*\n",
                  "tokens:2: field 1, the principal, must be 1 to 64 characters", SECRET_B64 },
                { "al/ice " DIGEST_ALICE " read:*\n", "tokens:1: field 1, the principal",
                  "al/ice" },
                { "al,ice " DIGEST_ALICE " read:*\n", "tokens:1: field 1, the principal",
                  "al,ice" },
                { SECRET SECRET " " DIGEST_ALICE " read:*\n", "tokens:1: field 1, the principal",
                  SECRET },
                /* DIGEST_ALICE is the SHA-256 of "token-alice": the token as the principal */
                { "token-alice " DIGEST_ALICE " read:*\n",
                  "tokens:1: field 1 is the token itself (field 2 is its SHA-256)", "token-alice" },
                { "alice " SECRET_B64 " read:*\n",
                  "tokens:1: field 2 must be the token's SHA-256 as 64 hex digits", SECRET_B64 },
                { "alice " SECRET " read:*\n", "tokens:1: field 2 must be", SECRET },
                { "alice " DIGEST_ALICE "0 read:*\n", "tokens:1: field 2 must be", DIGEST_ALICE },
                { SECRET " " DIGEST_ALICE "\n", "tokens:1: no scope after the SHA-256", SECRET },
                { "alice " DIGEST_ALICE " " SECRET "\n", "tokens:1: field 3: right 1 is unknown",
                  SECRET },
                { "alice " DIGEST_ALICE " read:* commit," SECRET ":*\n",
                  "tokens:1: field 4: right 2 is unknown (use commit, create", SECRET },
                { "alice " DIGEST_ALICE " commit,:*\n", "tokens:1: field 3: right 2 is unknown",
                  NULL },
                { "alice " DIGEST_ALICE " commit\n",
                  "tokens:1: field 3: commit, create, admin, upgrade and read need patterns",
                  NULL },
                { "alice " DIGEST_ALICE " admin\n", "tokens:1: field 3: commit, create, admin",
                  NULL },
                { "alice " DIGEST_ALICE " metrics:" SECRET "\n",
                  "tokens:1: field 3: metrics and health take no patterns", SECRET },
                { "alice " DIGEST_ALICE " read:\n", "tokens:1: field 3: pattern 1: is empty",
                  NULL },
                { "alice " DIGEST_ALICE " read:" SECRET "\n",
                  "tokens:1: field 3: pattern 1: names no table: use 'NAMESPACE.*'", SECRET },
                { "alice " DIGEST_ALICE " read:ns.t," SECRET "\n",
                  "tokens:1: field 3: pattern 2: names no table", SECRET },
                { "alice " DIGEST_ALICE " read:" SECRET "..t\n",
                  "tokens:1: field 3: pattern 1: has an empty level", SECRET },
                { "alice " DIGEST_ALICE " read:" SECRET ".\n", "has an empty level", SECRET },
                { "alice " DIGEST_ALICE " read:" SECRET "*\n",
                  "tokens:1: field 3: pattern 1: '*' stands alone", SECRET },
                { "alice " DIGEST_ALICE " read:*." SECRET "\n", "'*' stands alone", SECRET },
                { "alice " DIGEST_ALICE " read:*\nbob " DIGEST_ALICE " read:*\n",
                  "tokens:2: the same token as line 1", DIGEST_ALICE },
                { "alice " DIGEST_ALICE " read:" SECRET "\x01\n",
                  "tokens:1: holds a control character", SECRET },
                { "alice " DIGEST_ALICE " read:" SECRET "\x7f.t\n",
                  "tokens:1: holds a control character", SECRET },
                { "alice " DIGEST_ALICE " read:ns." SECRET "\xff\n", "tokens:1: is not valid UTF-8",
                  SECRET },
                { "alice " DIGEST_ALICE " read:ns." SECRET "\xc0\xaf\n",
                  "tokens:1: is not valid UTF-8", SECRET },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                AuthTokens *t = NULL;
                Error e = { 0 };

                if (auth_tokens_parse(slice_from_str(cases[i].text), "tokens", &t, &e) != -EINVAL)
                        TEST_FAIL("case %zu (%s) was not refused", i, cases[i].text);
                ASSERT_TRUE(t == NULL);
                ASSERT_CONTAINS(e.message, cases[i].message);
                if (cases[i].secret)
                        assert_no_echo(e.message, cases[i].secret);
        }
}

/* A line of 64 KiB whose last scope is a pasted token: the message is as short as any other. */
TEST(over_long_line_is_refused_without_its_bytes) {
        static const char head[] = "# x\nalice " DIGEST_ALICE;
        size_t n_scopes = 6000, len = sizeof(head) - 1 + n_scopes * 11 + 1 + strlen(SECRET) + 1;
        _cleanup_(freep) char *text = malloc(len + 1);
        AuthTokens *t = NULL;
        Error e = { 0 };
        char *p = text;

        ASSERT_TRUE(text);
        p = stpcpy(p, head);
        for (size_t i = 0; i < n_scopes; i++)
                p = stpcpy(p, " read:ns.tt");
        p = stpcpy(p, " " SECRET "\n");
        ASSERT_EQ((size_t)(p - text), len);
        ASSERT_EQ(auth_tokens_parse(slice_make(text, len), "tokens", &t, &e), -EINVAL);
        ASSERT_STREQ(e.message, "tokens:2: field 6003: right 1 is unknown (use commit, create, "
                                "admin, upgrade, read, metrics, health)");
}

TEST(nul_byte_is_refused_with_its_line) {
        static const char text[] = "alice " DIGEST_ALICE " read:*\n" SECRET "\0\n";
        AuthTokens *t = NULL;
        Error e = { 0 };

        ASSERT_EQ(auth_tokens_parse(slice_make(text, sizeof(text) - 1), "tokens", &t, &e), -EINVAL);
        ASSERT_STREQ(e.message, "tokens:2: holds a NUL byte: not a text file");
}

/* admin is a table right like create, granted on patterns, and implies nothing else. */
TEST(admin_is_a_table_right_of_its_own) {
        _cleanup_(auth_tokens_freep) AuthTokens *t =
                parse("alice " DIGEST_ALICE " create,commit:scratch.* admin:scratch.own\n");
        const AuthToken *a = auth_tokens_find(t, slice_from_str("token-alice"));

        ASSERT_TRUE(a);
        ASSERT_STREQ(auth_right_to_string(AUTH_RIGHT_ADMIN), "admin");
        ASSERT_TRUE(auth_token_allows(a, AUTH_RIGHT_CREATE, "scratch", "t"));
        ASSERT_TRUE(!auth_token_allows(a, AUTH_RIGHT_ADMIN, "scratch", "t"));
        ASSERT_TRUE(auth_token_allows(a, AUTH_RIGHT_ADMIN, "scratch", "own"));
        ASSERT_TRUE(!auth_token_allows(a, AUTH_RIGHT_ADMIN, "scratch", /* table= */ NULL));
        ASSERT_TRUE(!auth_token_allows(a, AUTH_RIGHT_UPGRADE, "scratch", "own"));
}

/* One principal may hold two tokens (rotation); each line keeps its own scopes. */
TEST(one_principal_two_tokens) {
        _cleanup_(auth_tokens_freep) AuthTokens *t =
                parse("alice " DIGEST_ALICE " read:*\nalice " DIGEST_BOB " commit:a.t\n");
        const AuthToken *old = auth_tokens_find(t, slice_from_str("token-alice"));
        const AuthToken *fresh = auth_tokens_find(t, slice_from_str("token-bob"));

        ASSERT_TRUE(old && fresh && old != fresh);
        ASSERT_STREQ(old->principal, fresh->principal);
        ASSERT_TRUE(!auth_token_allows(old, AUTH_RIGHT_COMMIT, "a", "t"));
        ASSERT_TRUE(auth_token_allows(fresh, AUTH_RIGHT_COMMIT, "a", "t"));
}

static bool allows(const char *scopes, AuthRight right, const char *namespace_param,
                   const char *table) {
        char text[512];
        _cleanup_(auth_tokens_freep) AuthTokens *t = NULL;

        snprintf(text, sizeof(text), "p " DIGEST_ALICE " %s\n", scopes);
        t = parse(text);
        return auth_token_allows(&t->tokens[0], right, namespace_param, table);
}

TEST(patterns_match_whole_levels) {
        /* prefix: the namespace and everything below it, never a longer name */
        ASSERT_TRUE(allows("commit:ns.*", AUTH_RIGHT_COMMIT, "ns", "t"));
        ASSERT_TRUE(allows("commit:ns.*", AUTH_RIGHT_COMMIT, "ns\x1fsub", "t"));
        ASSERT_TRUE(allows("commit:ns.*", AUTH_RIGHT_COMMIT,
                           "ns\x1f"
                           "sub\x1f"
                           "deeper",
                           "t"));
        ASSERT_TRUE(!allows("commit:ns.*", AUTH_RIGHT_COMMIT, "nsx", "t"));
        ASSERT_TRUE(!allows("commit:ns.*", AUTH_RIGHT_COMMIT, "n", "t"));
        ASSERT_TRUE(!allows("commit:ns.*", AUTH_RIGHT_COMMIT, "other\x1fns", "t"));
        /* multi-level prefix */
        ASSERT_TRUE(allows("commit:ns.sub.*", AUTH_RIGHT_COMMIT, "ns\x1fsub", "t"));
        ASSERT_TRUE(allows("commit:ns.sub.*", AUTH_RIGHT_COMMIT, "ns\x1fsub\x1fx", "t"));
        ASSERT_TRUE(!allows("commit:ns.sub.*", AUTH_RIGHT_COMMIT, "ns", "sub"));
        ASSERT_TRUE(!allows("commit:ns.sub.*", AUTH_RIGHT_COMMIT, "ns\x1fsubx", "t"));
        ASSERT_TRUE(!allows("commit:ns.sub.*", AUTH_RIGHT_COMMIT, "ns\x1fsu", "t"));
        /* exact: one table of one namespace */
        ASSERT_TRUE(allows("commit:ns.t", AUTH_RIGHT_COMMIT, "ns", "t"));
        ASSERT_TRUE(!allows("commit:ns.t", AUTH_RIGHT_COMMIT, "ns", "t2"));
        ASSERT_TRUE(!allows("commit:ns.t", AUTH_RIGHT_COMMIT, "ns", "tt"));
        ASSERT_TRUE(!allows("commit:ns.t", AUTH_RIGHT_COMMIT, "ns\x1fsub", "t"));
        ASSERT_TRUE(!allows("commit:ns.t", AUTH_RIGHT_COMMIT, "ns\x1ft", "x"));
        ASSERT_TRUE(allows("commit:a.b.c.t", AUTH_RIGHT_COMMIT,
                           "a\x1f"
                           "b\x1f"
                           "c",
                           "t"));
        ASSERT_TRUE(!allows("commit:a.b.c.t", AUTH_RIGHT_COMMIT,
                            "a\x1f"
                            "b",
                            "c"));
        /* everything */
        ASSERT_TRUE(allows("commit:*", AUTH_RIGHT_COMMIT, "any", "t"));
        ASSERT_TRUE(allows("commit:*", AUTH_RIGHT_COMMIT,
                           "a\x1f"
                           "b\x1f"
                           "c",
                           "t"));
        /* the right must be granted on the pattern that matches */
        ASSERT_TRUE(!allows("read:*", AUTH_RIGHT_COMMIT, "ns", "t"));
        ASSERT_TRUE(!allows("read:ns.* commit:other.*", AUTH_RIGHT_COMMIT, "ns", "t"));
        ASSERT_TRUE(allows("read:ns.* commit:other.*,ns.t", AUTH_RIGHT_COMMIT, "ns", "t"));
}

TEST(namespaces_themselves) {
        ASSERT_TRUE(allows("create:*", AUTH_RIGHT_CREATE, "ns", NULL));
        ASSERT_TRUE(allows("create:ns.*", AUTH_RIGHT_CREATE, "ns", NULL));
        ASSERT_TRUE(allows("create:ns.*", AUTH_RIGHT_CREATE, "ns\x1fsub", NULL));
        ASSERT_TRUE(!allows("create:ns.*", AUTH_RIGHT_CREATE, "nsx", NULL));
        ASSERT_TRUE(!allows("create:ns.sub.*", AUTH_RIGHT_CREATE, "ns", NULL));
        /* an exact pattern names a table, never its namespace */
        ASSERT_TRUE(!allows("create:ns.t", AUTH_RIGHT_CREATE, "ns", NULL));
        ASSERT_TRUE(!allows("create:ns.t", AUTH_RIGHT_CREATE, "ns\x1ft", NULL));
}

TEST(lookup_compares_every_entry_in_constant_time) {
        _cleanup_(auth_tokens_freep) AuthTokens *t = parse(good_file);
        const AuthToken *found;

        n_memcmp_calls = 0;
        found = auth_tokens_find(t, slice_from_str("token-alice"));
        ASSERT_TRUE(found == &t->tokens[0]);
        ASSERT_EQ(n_memcmp_calls, 3); /* found first, compared with all three */

        n_memcmp_calls = 0;
        found = auth_tokens_find(t, slice_from_str("token-ops"));
        ASSERT_TRUE(found == &t->tokens[2]);
        ASSERT_EQ(n_memcmp_calls, 3);

        n_memcmp_calls = 0;
        ASSERT_TRUE(auth_tokens_find(t, slice_from_str("token-nobody")) == NULL);
        ASSERT_EQ(n_memcmp_calls, 3);
        /* the digest, never the token: the hex digest itself is not a token */
        ASSERT_TRUE(auth_tokens_find(t, slice_from_str(DIGEST_ALICE)) == NULL);
        ASSERT_TRUE(auth_tokens_find(t, slice_from_str("token-alic")) == NULL);
        ASSERT_TRUE(auth_tokens_find(t, slice_from_str("")) == NULL);
}

TEST(bearer_headers) {
        static const struct {
                const char *header, *token;
        } cases[] = {
                { "Bearer abc", "abc" },
                { "bearer abc", "abc" },
                { "BEARER   a-b.c_d~e+f/g==  ", "a-b.c_d~e+f/g==" },
                { "Bearer", NULL },
                { "Bearer ", NULL },
                { "Basic YWxhZGRpbjpvcGVuc2VzYW1l", NULL },
                { "Bearerabc", NULL },
                { "Bearer a b", NULL },
                { "Bearer ab=c", NULL },
                { "Bearer =", NULL },
                { "Bearer a\"b", NULL },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                Slice token = { 0 };
                int r = auth_bearer_parse(slice_from_str(cases[i].header), &token);

                if (!cases[i].token) {
                        if (r != -EINVAL)
                                TEST_FAIL("'%s' was accepted", cases[i].header);
                        continue;
                }
                ASSERT_OK(r);
                ASSERT_TRUE(slice_eq_str(token, cases[i].token));
        }
}

static char *write_file(const char *text) {
        static char path[64];
        int fd;

        snprintf(path, sizeof(path), "/tmp/icecommit-test-tokens-XXXXXX");
        fd = mkstemp(path);
        ASSERT_TRUE(fd >= 0);
        ASSERT_EQ(write(fd, text, strlen(text)), (int64_t)strlen(text));
        close(fd);
        return path;
}

TEST(load_reads_a_regular_file_within_the_limit) {
        char *path = write_file(good_file);
        AuthTokens *t = NULL;
        Error e = { 0 };

        ASSERT_EQ(auth_tokens_load(path, 64, &t, &e), -EFBIG);
        ASSERT_CONTAINS(e.message, "above auth.max-tokens-file-bytes=64");
        ASSERT_OK(auth_tokens_load(path, 1 << 20, &t, &e));
        ASSERT_EQ(t->n_tokens, 3);
        t = auth_tokens_free(t);
        ASSERT_TRUE(t == NULL);
        unlink(path);

        ASSERT_EQ(auth_tokens_load("/nonexistent/tokens", 1 << 20, &t, &e), -ENOENT);
        ASSERT_CONTAINS(e.message, "/nonexistent/tokens: cannot open");
        ASSERT_EQ(auth_tokens_load("/tmp", 1 << 20, &t, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "/tmp: not a regular file");
}

TEST(reload_keeps_the_old_tokens_on_a_bad_file) {
        char *path = write_file(good_file);
        AuthConfig config = { .tokens_file = path, .max_tokens_file_bytes = 1 << 20 };
        _cleanup_(auth_freep) Auth *a = NULL;
        size_t n = 0;
        Error e = { 0 };
        FILE *f;

        ASSERT_OK(auth_new(&config, &a, &e));
        ASSERT_TRUE(auth_is_enabled(a));
        f = fopen(path, "w");
        fputs("alice " DIGEST_ALICE " read:*\nbroken\n", f);
        fclose(f);
        ASSERT_EQ(auth_reload(a, &n, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, ":2: expected PRINCIPAL SHA256 SCOPE");
        f = fopen(path, "w");
        fputs("carol " DIGEST_ALICE " read:*\n", f);
        fclose(f);
        ASSERT_OK(auth_reload(a, &n, &e));
        ASSERT_EQ(n, 1);
        unlink(path);
        ASSERT_EQ(auth_reload(a, &n, &e), -ENOENT);
        ASSERT_TRUE(auth_is_enabled(a));
}

TEST(auth_is_off_without_a_file) {
        AuthConfig config = { .max_tokens_file_bytes = 1 << 20 };
        _cleanup_(auth_freep) Auth *a = NULL;
        size_t n = 0;
        Error e = { 0 };

        ASSERT_OK(auth_new(&config, &a, &e));
        ASSERT_TRUE(!auth_is_enabled(a));
        ASSERT_TRUE(!auth_is_enabled(NULL));
        ASSERT_EQ(auth_reload(a, &n, &e), 1);
        config.tokens_file = (char *)"/nonexistent/tokens";
        ASSERT_EQ(auth_new(&config, &a, &e), -ENOENT);
}

static int load_config(const char *text, Config **ret, Error *e) {
        char *path = write_file(text);
        int r = config_load(path, ret, e);

        unlink(path);
        return r;
}

TEST(config_section) {
        _cleanup_(config_freep) Config *c = NULL;
        char dir[] = "/tmp/icecommit-test-credentials-XXXXXX", path[128];
        Error e = { 0 };
        FILE *f;

        ASSERT_OK(load_config("[auth]\n", &c, &e));
        ASSERT_TRUE(c->auth.tokens_file == NULL);
        /* /metrics needs a token once auth is on, unless configured open */
        ASSERT_TRUE(!c->auth.health_requires_token && c->auth.metrics_requires_token);
        ASSERT_TRUE(!c->auth.allow_unauthenticated);
        ASSERT_EQ(c->auth.max_tokens_file_bytes, 1 << 20);
        c = config_free(c);
        ASSERT_EQ(load_config("[auth]\nhealth-requires-token = true\n", &c, &e), -EINVAL);
        ASSERT_CONTAINS(e.message, "key 'auth.health-requires-token': needs auth.tokens-file");
        /* an old file that said what is now the default still loads, with auth on or off */
        ASSERT_OK(load_config("[auth]\nmetrics-requires-token = true\n", &c, &e));
        c = config_free(c);
        ASSERT_OK(load_config("[auth]\ntokens-file = /etc/t\nmetrics-requires-token = false\n", &c,
                              &e));
        ASSERT_TRUE(!c->auth.metrics_requires_token);
        c = config_free(c);
        ASSERT_OK(load_config("[auth]\ntokens-file = /etc/t\nhealth-requires-token = true\n", &c,
                              &e));
        ASSERT_STREQ(c->auth.tokens_file, "/etc/t");
        ASSERT_TRUE(c->auth.health_requires_token);
        c = config_free(c);

        /* LoadCredential=auth.tokens:...: the credential is the file, and wins over the key */
        ASSERT_TRUE(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/auth.tokens", dir);
        f = fopen(path, "w");
        ASSERT_TRUE(f);
        fputs(good_file, f);
        fclose(f);
        setenv("CREDENTIALS_DIRECTORY", dir, 1);
        ASSERT_OK(load_config("[auth]\ntokens-file = /etc/t\n", &c, &e));
        ASSERT_STREQ(c->auth.tokens_file, path);
        unsetenv("CREDENTIALS_DIRECTORY");
        unlink(path);
        rmdir(dir);
}
