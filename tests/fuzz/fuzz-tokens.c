/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: the writer tokens file (auth/tokens.c) and the Authorization header parser
 * (auth/auth.c). An operator's typo must be refused with the file and line, never crash; a
 * file that parses must hold only valid principals with scopes, and lookups and scope
 * decisions on it must be total. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "auth/auth.h"
#include "auth/tokens.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
                if (strncmp(e.message, "fuzz", 4) != 0)
                        abort(); /* every refusal names the file */
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
