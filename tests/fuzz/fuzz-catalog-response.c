/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: what a REST catalog (or anything posing as one) sends back, through every parser
 * in catalog/rest.c: IcebergErrorResponse and OAuth errors, CatalogConfig, the OAuth2 token
 * response, the LoadTableResult envelope, ISO-8601 durations; plus the percent-encoder and the
 * log-safe text copy over the same bytes. Never crash or over-read, and keep the invariants
 * callers rely on (NUL-terminated, control-free messages; header-safe tokens). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/rest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t size) {
        size_t n = strnlen(s, size);

        if (n == size)
                abort(); /* not terminated inside its field */
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F)
                        abort();
}

static void fuzz_error(Slice body) {
        RestError e;

        if (rest_error_parse(body, &e) < 0) {
                if (e.message[0] || e.type[0] || e.code)
                        abort(); /* zeroed on failure */
                return;
        }
        check_text(e.message, sizeof(e.message));
        check_text(e.type, sizeof(e.type));
        if (e.code != 0 && (e.code < 400 || e.code > 599))
                abort();
}

static void fuzz_token(Slice body) {
        RestToken t = { 0 };
        Error error = { 0 };

        if (rest_token_parse(body, &t, &error) < 0) {
                if (t.access_token)
                        abort();
                return;
        }
        if (!t.access_token || !t.access_token[0])
                abort();
        for (const char *s = t.access_token; *s; s++)
                if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7F)
                        abort(); /* would break the Authorization line */
        if (t.has_expires_in && t.expires_in_s == 0)
                abort();
        rest_token_deinit(&t);
}

static void fuzz_config(const json_t *j) {
        static const char *const ns[] = { "a", "b c" };
        json_t *client = json_pack("{s:s}", "warehouse", "wh");
        RestConfig c;
        Error error = { 0 };
        Buf path;

        if (!client)
                abort();
        if (rest_config_parse(j, client, &c, &error) == 0) {
                if (!c.namespace_separator || !c.namespace_separator[0] || !c.properties)
                        abort();
                if (c.prefix && !c.prefix[0])
                        abort();
                (void)rest_config_has_endpoint(
                        &c, "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}");
                /* Whatever the server said, the path stays one URL path: no space, '?' or '#'. */
                buf_init(&path, 1 << 20);
                if (rest_path_append(&path, REST_RESOURCE_TABLE, c.prefix, c.namespace_separator,
                                     ns, 2, "t") == 0 &&
                    strpbrk(buf_str(&path), " ?#\r\n"))
                        abort();
                buf_deinit(&path);
                rest_config_deinit(&c);
        }
        json_decref(client);
}

static int hex_value(uint8_t c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        abort(); /* we only ever write upper-case escapes */
}

static void fuzz_encoding(const uint8_t *data, size_t size) {
        size_t j = 0;
        Buf b;

        buf_init(&b, SIZE_MAX);
        if (rest_percent_encode(&b, (const char *)data, size) < 0)
                abort();
        /* Decoding gives the input back: unreserved bytes as they were, the rest as %XX. */
        for (size_t i = 0; i < size; i++) {
                if (j >= b.len)
                        abort();
                if (b.data[j] == '%') {
                        if (b.len - j < 3 ||
                            hex_value(b.data[j + 1]) * 16 + hex_value(b.data[j + 2]) != data[i])
                                abort();
                        j += 3;
                } else {
                        if (b.data[j] != data[i] || strchr("%/?#+ ", b.data[j]))
                                abort();
                        j++;
                }
        }
        if (j != b.len)
                abort();
        buf_deinit(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Slice body = slice_make(data, size);
        json_t *j = NULL;
        Error error = { 0 };
        char text[64];
        char *s;

        fuzz_error(body);
        fuzz_token(body);
        fuzz_encoding(data, size);

        rest_text_copy(text, sizeof(text), (const char *)data, size);
        check_text(text, sizeof(text));

        if (rest_json_parse(body, &j, &error) == 0) {
                fuzz_config(j);
                (void)rest_table_result_check(j, &error);
                json_decref(j);
        }

        s = malloc(size + 1);
        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = 0;
        {
                uint64_t ms;

                (void)rest_duration_parse(s, &ms);
        }
        free(s);
        return 0;
}
