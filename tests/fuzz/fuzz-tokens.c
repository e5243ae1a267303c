/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the writer tokens file (auth/tokens.c) and the Authorization header parser
 * (auth/auth.c). An operator's typo must be refused with the file and line, never crash, and
 * never with the file's bytes in the message (a token in the wrong column would reach the
 * journal); a file that parses must hold only valid principals with scopes, and lookups and
 * scope decisions on it must be total. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/tokens.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs of token characters this long look like tokens (32 random bytes in base64 are 43 or 44
 * characters); no rule message of the parser has a run of as many non-blank characters, so
 * finding one in a message means it came from the input. */
#define FUZZ_SECRET_MIN 32

static bool is_token_char(uint8_t c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=';
}

/* Aborts unless `message` is "fuzz: RULE" or "fuzz:LINE: RULE" with RULE in printable ASCII
 * holding no run of FUZZ_SECRET_MIN or more token characters of the input. */
static void check_refusal(const char *message, const uint8_t *data, size_t size) {
        const char *rule = message + 4;
        size_t start = 0;

        if (strncmp(message, "fuzz:", 5) != 0)
                abort(); /* every refusal names the file */
        if (rule[1] >= '0' && rule[1] <= '9') {
                rule++;
                while (*rule >= '0' && *rule <= '9')
                        rule++;
                if (*rule != ':')
                        abort();
        }
        for (const char *c = rule; *c; c++)
                if (*c < 0x20 || *c > 0x7e)
                        abort();
        for (size_t i = 0; i <= size; i++) {
                if (i < size && is_token_char(data[i]))
                        continue;
                if (i - start >= FUZZ_SECRET_MIN &&
                    memmem(rule, strlen(rule), data + start, i - start))
                        abort();
                start = i + 1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const namespaces[] = { "a",
                                                  ("a\x1f"
                                                   "b"),
                                                  "ab", "sales\x1fraw", "" };
        AuthTokens *t = NULL;
        Slice token;
        Error e = { 0 };

        /* The same bytes as a header value: whatever it accepts lies within the input. */
        if (auth_bearer_parse(slice_make(data, size), &token) == 0 &&
            (token.len == 0 || token.ptr < data || token.ptr + token.len > data + size))
                abort();

        if (auth_tokens_parse(slice_make(data, size), "fuzz", &t, &e) < 0) {
                check_refusal(e.message, data, size);
                return 0;
        }
        if (t->n_tokens == 0)
                abort();
        for (size_t i = 0; i < t->n_tokens; i++) {
                const AuthToken *k = &t->tokens[i];

                if (!auth_principal_is_valid(k->principal, strlen(k->principal)) ||
                    k->n_scopes == 0 || k->line == 0)
                        abort();
                for (size_t s = 0; s < k->n_scopes; s++)
                        if (k->scopes[s].rights == 0 ||
                            ((k->scopes[s].rights & AUTH_TABLE_RIGHTS) != 0) !=
                                    (k->scopes[s].n_patterns > 0))
                                abort();
                for (size_t n = 0; n < sizeof(namespaces) / sizeof(namespaces[0]); n++) {
                        (void)auth_token_allows(k, AUTH_RIGHT_COMMIT, namespaces[n], "t");
                        (void)auth_token_allows(k, AUTH_RIGHT_CREATE, namespaces[n], NULL);
                }
        }
        (void)auth_tokens_find(t, slice_make(data, size));
        auth_tokens_free(t);
        return 0;
}
