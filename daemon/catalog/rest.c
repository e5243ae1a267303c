/* SPDX-License-Identifier: Apache-2.0 */
/* REST catalog wire format (see rest.h): paths, form bodies and the parsers of catalog
 * responses. Pure and loop-free; the rules are open-api/rest-catalog-open-api.yaml's, checked
 * against Java's parsers where the document is loose. Never logs. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/rest.h"
#include "util/checked.h"
#include "util/cleanup.h"
#include "util/parse.h"

/* yaml:105-134: what a catalog offers when /v1/config lists no endpoints. */
static const char *const rest_default_endpoints[] = {
        "GET /v1/{prefix}/namespaces",
        "POST /v1/{prefix}/namespaces",
        "GET /v1/{prefix}/namespaces/{namespace}",
        "DELETE /v1/{prefix}/namespaces/{namespace}",
        "POST /v1/{prefix}/namespaces/{namespace}/properties",
        "GET /v1/{prefix}/namespaces/{namespace}/tables",
        "POST /v1/{prefix}/namespaces/{namespace}/tables",
        "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
        "POST /v1/{prefix}/namespaces/{namespace}/register",
        "POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/metrics",
        "POST /v1/{prefix}/tables/rename",
        "POST /v1/{prefix}/transactions/commit",
};

static bool is_unreserved(unsigned char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
               c == '-' || c == '.' || c == '_' || c == '~';
}

static bool is_hex(unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f');
}

static int append_escaped_byte(Buf *out, unsigned char c) {
        static const char hex[] = "0123456789ABCDEF";
        char e[3] = { '%', hex[c >> 4], hex[c & 15] };

        return buf_append(out, e, sizeof(e));
}

int rest_percent_encode(Buf *out, const char *s, size_t len) {
        int r;

        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                r = is_unreserved(c) ? buf_append_byte(out, c) : append_escaped_byte(out, c);
                if (r < 0)
                        return r;
        }
        return 0;
}

int rest_form_append(Buf *out, const char *key, const char *value) {
        int r;

        if (out->len > 0) {
                r = buf_append_byte(out, '&');
                if (r < 0)
                        return r;
        }
        r = rest_percent_encode(out, key, strlen(key));
        if (r < 0)
                return r;
        r = buf_append_byte(out, '=');
        if (r < 0)
                return r;
        return rest_percent_encode(out, value, strlen(value));
}

/* A prefix or separator from the catalog is already encoded ("%1F", an S3 Tables ARN with
 * "%3A"): it goes in as given, like Java does. Only bytes that cannot appear in a path at all
 * (space, controls, non-ASCII, a '%' not starting an escape, '?', '#') are encoded so that
 * a strange value cannot change the URL's structure. */
static int append_path_piece(Buf *out, const char *s, bool keep_slash) {
        static const char allowed[] = "!$&'()*+,;=:@";
        int r;

        for (size_t i = 0; s[i]; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c == '%' && is_hex((unsigned char)s[i + 1]) &&
                    is_hex((unsigned char)s[i + 2])) {
                        r = buf_append(out, s + i, 3);
                        i += 2;
                } else if (is_unreserved(c) || (c != 0 && strchr(allowed, c)) ||
                           (keep_slash && c == '/')) {
                        r = buf_append_byte(out, c);
                } else {
                        r = append_escaped_byte(out, c);
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

int rest_path_append(Buf *out, RestResource resource, const char *prefix, const char *separator,
                     const char *const *namespace, size_t n_namespace, const char *table) {
        int r;

        if (resource != REST_RESOURCE_NAMESPACES) {
                if (n_namespace == 0)
                        return -EINVAL;
                for (size_t i = 0; i < n_namespace; i++)
                        if (!namespace[i] || namespace[i][0] == '\0')
                                return -EINVAL;
        }
        if (resource == REST_RESOURCE_TABLE && (!table || table[0] == '\0'))
                return -EINVAL;
        if (!separator || separator[0] == '\0')
                separator = REST_DEFAULT_NAMESPACE_SEPARATOR;

        r = buf_append_str(out, "/v1/");
        if (r < 0)
                return r;
        if (prefix && prefix[0]) {
                r = append_path_piece(out, prefix, /* keep_slash= */ true);
                if (r < 0)
                        return r;
                r = buf_append_byte(out, '/');
                if (r < 0)
                        return r;
        }
        r = buf_append_str(out, "namespaces");
        if (r < 0 || resource == REST_RESOURCE_NAMESPACES)
                return r;

        r = buf_append_byte(out, '/');
        for (size_t i = 0; r >= 0 && i < n_namespace; i++) {
                /* Levels keep '.', as Java's URLEncoder does: a server splits on the encoded
                 * separator before decoding, so "a.b" stays one level even with "%2E". */
                if (i > 0)
                        r = append_path_piece(out, separator, /* keep_slash= */ false);
                if (r >= 0)
                        r = rest_percent_encode(out, namespace[i], strlen(namespace[i]));
        }
        if (r >= 0)
                r = buf_append_str(out, "/tables");
        if (r < 0 || resource == REST_RESOURCE_TABLES)
                return r;

        r = buf_append_byte(out, '/');
        if (r < 0)
                return r;
        return rest_percent_encode(out, table, strlen(table));
}

void rest_text_copy(char *dst, size_t size, const char *src, size_t len) {
        size_t n;

        assert(size > 0);
        n = len < size - 1 ? len : size - 1;
        /* Never end inside a multi-byte sequence: back off over continuation bytes, then the
         * lead byte they belong to. */
        if (n < len) {
                while (n > 0 && ((unsigned char)src[n] & 0xC0) == 0x80)
                        n--;
        }
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)src[i];

                dst[i] = (c < 0x20 || c == 0x7F) ? ' ' : (char)c;
        }
        dst[n] = '\0';
}

int rest_json_parse(Slice body, json_t **ret_json, Error *error) {
        json_error_t e;
        json_t *j;

        j = json_loadb((const char *)body.ptr, body.len, 0, &e);
        if (!j)
                return error_set(error, -EBADMSG, "invalid JSON at line %d column %d: %s", e.line,
                                 e.column, e.text);
        *ret_json = j;
        return 0;
}

/* A JSON string without embedded NUL, or NULL. */
static const char *json_plain_string(const json_t *v) {
        const char *s = json_string_value(v);

        if (!s || strlen(s) != json_string_length(v))
                return NULL;
        return s;
}

/* Copies a string-valued map into `into`, later keys winning. Java's ConfigResponseParser
 * (JsonUtil.getStringMap) rejects other value types, and so do we. */
static int merge_string_map(json_t *into, const json_t *map, const char *name, Error *error) {
        const char *key;
        json_t *value;

        if (!map || json_is_null(map))
                return 0;
        if (!json_is_object(map))
                return error_set(error, -EBADMSG, "catalog config: \"%s\" is not an object", name);
        json_object_foreach ((json_t *)map, key, value) {
                if (!json_is_string(value) && !json_is_null(value))
                        return error_set(error, -EBADMSG,
                                         "catalog config: %s property \"%s\" is not a string", name,
                                         key);
                if (json_object_set(into, key, value) < 0)
                        return -ENOMEM;
        }
        return 0;
}

void rest_config_deinit(RestConfig *config) {
        json_decref(config->properties);
        free(config->prefix);
        free(config->namespace_separator);
        for (size_t i = 0; i < config->n_endpoints; i++)
                free(config->endpoints[i]);
        free(config->endpoints);
        *config = (RestConfig){ 0 };
}

int rest_config_parse(const json_t *response, const json_t *client_properties, RestConfig *ret,
                      Error *error) {
        _cleanup_(rest_config_deinit) RestConfig c = { 0 };
        const json_t *v;
        const char *s;
        int r;

        if (!json_is_object(response))
                return error_set(error, -EBADMSG, "catalog config response is not a JSON object");

        /* yaml:82-90: defaults, then the client's own properties, then overrides. */
        c.properties = json_object();
        if (!c.properties)
                return -ENOMEM;
        r = merge_string_map(c.properties, json_object_get(response, "defaults"), "defaults",
                             error);
        if (r < 0)
                return r;
        r = merge_string_map(c.properties, client_properties, "client", error);
        if (r < 0)
                return r;
        r = merge_string_map(c.properties, json_object_get(response, "overrides"), "overrides",
                             error);
        if (r < 0)
                return r;

        v = json_object_get(c.properties, "prefix");
        if (v && !json_is_null(v)) {
                s = json_plain_string(v);
                if (!s)
                        return error_set(error, -EBADMSG,
                                         "catalog config: prefix holds a NUL byte");
                if (s[0]) {
                        c.prefix = strdup(s);
                        if (!c.prefix)
                                return -ENOMEM;
                }
        }

        s = REST_DEFAULT_NAMESPACE_SEPARATOR;
        v = json_object_get(c.properties, "namespace-separator");
        if (v && !json_is_null(v)) {
                s = json_plain_string(v);
                if (!s || s[0] == '\0')
                        return error_set(
                                error, -EBADMSG,
                                "catalog config: namespace-separator is empty or holds a NUL byte");
        }
        c.namespace_separator = strdup(s);
        if (!c.namespace_separator)
                return -ENOMEM;

        v = json_object_get(response, "endpoints");
        if (v && !json_is_null(v)) {
                size_t i;
                json_t *e;

                if (!json_is_array(v))
                        return error_set(error, -EBADMSG,
                                         "catalog config: endpoints is not an array");
                c.has_endpoints = true;
                c.endpoints = calloc(json_array_size(v) + 1, sizeof(char *));
                if (!c.endpoints)
                        return -ENOMEM;
                json_array_foreach (v, i, e) {
                        s = json_plain_string(e);
                        if (!s)
                                return error_set(error, -EBADMSG,
                                                 "catalog config: endpoint #%zu is not a string",
                                                 i);
                        c.endpoints[c.n_endpoints] = strdup(s);
                        if (!c.endpoints[c.n_endpoints])
                                return -ENOMEM;
                        c.n_endpoints++;
                }
        }

        /* yaml:2315-2326: present means idempotency is supported on mutations, whatever the
         * value; a duration we cannot read only leaves the lifetime unknown. */
        v = json_object_get(response, "idempotency-key-lifetime");
        if (v && !json_is_null(v)) {
                s = json_plain_string(v);
                if (!s)
                        return error_set(
                                error, -EBADMSG,
                                "catalog config: idempotency-key-lifetime is not a string");
                c.has_idempotency = true;
                if (rest_duration_parse(s, &c.idempotency_lifetime_ms) < 0)
                        c.idempotency_lifetime_ms = 0;
        }

        *ret = c;
        c = (RestConfig){ 0 };
        return 0;
}

bool rest_config_has_endpoint(const RestConfig *config, const char *endpoint) {
        if (!config->has_endpoints) {
                for (size_t i = 0; i < ELEMENTSOF(rest_default_endpoints); i++)
                        if (strcmp(rest_default_endpoints[i], endpoint) == 0)
                                return true;
                return false;
        }
        for (size_t i = 0; i < config->n_endpoints; i++)
                if (strcmp(config->endpoints[i], endpoint) == 0)
                        return true;
        return false;
}

int rest_duration_parse(const char *s, uint64_t *ret_ms) {
        /* Units in the order ISO 8601 requires them; each at most once. */
        static const struct {
                char unit;
                bool is_time;
                uint64_t ms;
        } units[] = {
                { 'W', false, 7ull * 86400000 },
                { 'D', false, 86400000 },
                { 'H', true, 3600000 },
                { 'M', true, 60000 },
                { 'S', true, 1000 },
        };
        uint64_t total = 0;
        size_t next_unit = 0;
        bool in_time = false, has_time_part = false, has_any = false;

        if (!s || (s[0] != 'P' && s[0] != 'p'))
                return -EINVAL;
        s++;
        while (*s) {
                uint64_t value = 0, fraction_ms = 0, product;
                bool has_digits = false, has_fraction = false;
                size_t u;
                char unit;

                if (*s == 'T' || *s == 't') {
                        if (in_time)
                                return -EINVAL;
                        in_time = true;
                        s++;
                        continue;
                }
                for (; *s >= '0' && *s <= '9'; s++) {
                        if (value > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        value = value * 10 + (uint64_t)(*s - '0');
                        has_digits = true;
                }
                if (*s == '.' || *s == ',') {
                        uint64_t scale = 100;

                        has_fraction = true;
                        for (s++; *s >= '0' && *s <= '9'; s++) {
                                fraction_ms += (uint64_t)(*s - '0') * scale;
                                scale /= 10;
                        }
                }
                if (!has_digits)
                        return -EINVAL;
                unit = (char)(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s);
                if (*s)
                        s++;
                for (u = next_unit; u < ELEMENTSOF(units); u++)
                        if (units[u].unit == unit && units[u].is_time == in_time)
                                break;
                if (u == ELEMENTSOF(units) || (has_fraction && unit != 'S'))
                        return -EINVAL;
                next_unit = u + 1;
                if (__builtin_mul_overflow(value, units[u].ms, &product) ||
                    checked_add_u64(&total, total, product) ||
                    checked_add_u64(&total, total, fraction_ms))
                        return -ERANGE;
                has_any = true;
                has_time_part = has_time_part || in_time;
        }
        /* "P" and "PT", or a "T" with nothing after it, are not durations. */
        if (!has_any || (in_time && !has_time_part))
                return -EINVAL;
        *ret_ms = total;
        return 0;
}

int rest_error_parse(Slice body, RestError *ret) {
        _cleanup_(json_decrefp) json_t *j = NULL;
        const json_t *error, *v;

        *ret = (RestError){ 0 };
        if (rest_json_parse(body, &j, /* error= */ NULL) < 0)
                return -EBADMSG;
        error = json_object_get(j, "error");
        if (json_is_string(error)) {
                /* RFC 6749 5.2, which the token endpoint speaks instead:
                 * {"error": "invalid_client", "error_description": "..."}. */
                rest_text_copy(ret->type, sizeof(ret->type), json_string_value(error),
                               json_string_length(error));
                v = json_object_get(j, "error_description");
                if (json_is_string(v))
                        rest_text_copy(ret->message, sizeof(ret->message), json_string_value(v),
                                       json_string_length(v));
                return 0;
        }
        if (!json_is_object(error))
                return -EBADMSG;

        v = json_object_get(error, "message");
        if (json_is_string(v))
                rest_text_copy(ret->message, sizeof(ret->message), json_string_value(v),
                               json_string_length(v));
        v = json_object_get(error, "type");
        if (json_is_string(v))
                rest_text_copy(ret->type, sizeof(ret->type), json_string_value(v),
                               json_string_length(v));
        /* yaml:2257-2281: 400..600; anything else is noise, the HTTP status line decides. */
        v = json_object_get(error, "code");
        if (json_is_integer(v) && json_integer_value(v) >= 400 && json_integer_value(v) <= 599)
                ret->code = (long)json_integer_value(v);
        return 0;
}

void rest_token_deinit(RestToken *token) {
        if (token->access_token) {
                explicit_bzero(token->access_token, strlen(token->access_token));
                free(token->access_token);
        }
        *token = (RestToken){ 0 };
}

static bool is_visible_ascii(const char *s) {
        for (; *s; s++)
                if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7F)
                        return false;
        return true;
}

int rest_token_parse(Slice body, RestToken *ret, Error *error) {
        _cleanup_(json_decrefp) json_t *j = NULL;
        _cleanup_(rest_token_deinit) RestToken t = { 0 };
        const json_t *v;
        const char *s;
        int r;

        r = rest_json_parse(body, &j, error);
        if (r < 0)
                return error_prefix(error, r, "oauth2 token response");
        if (!json_is_object(j))
                return error_set(error, -EBADMSG, "oauth2 token response is not a JSON object");

        /* The token goes into an "Authorization: Bearer" line: no spaces, controls or
         * line breaks that could end the header early. */
        s = json_plain_string(json_object_get(j, "access_token"));
        if (!s || s[0] == '\0' || !is_visible_ascii(s))
                return error_set(error, -EBADMSG,
                                 "oauth2 token response lacks a usable access_token");

        /* Java's OAuthTokenResponse accepts "bearer" and the token exchange's "N_A". */
        v = json_object_get(j, "token_type");
        if (v && !json_is_null(v) &&
            (!json_is_string(v) || (strcasecmp(json_string_value(v), "bearer") != 0 &&
                                    strcasecmp(json_string_value(v), "N_A") != 0)))
                return error_set(error, -EBADMSG,
                                 "oauth2 token response has an unsupported token_type");

        v = json_object_get(j, "expires_in");
        if (v && !json_is_null(v)) {
                uint64_t u = 0;
                int64_t i = 0;

                /* Some servers send the number as a string. */
                if (json_is_integer(v))
                        i = (int64_t)json_integer_value(v);
                else if (json_plain_string(v) && parse_u64(json_string_value(v), &u) == 0)
                        i = u > INT64_MAX ? INT64_MAX : (int64_t)u;
                else
                        return error_set(error, -EBADMSG,
                                         "oauth2 token response: expires_in is not an integer");
                if (i < 1 || i > INT32_MAX)
                        return error_set(error, -EBADMSG,
                                         "oauth2 token response: expires_in %" PRId64
                                         " is out of range",
                                         i);
                t.has_expires_in = true;
                t.expires_in_s = (uint32_t)i;
        }

        t.access_token = strdup(s);
        if (!t.access_token)
                return -ENOMEM;
        *ret = t;
        t = (RestToken){ 0 };
        return 0;
}

int rest_table_result_check(const json_t *body, Error *error) {
        const json_t *v;

        if (!json_is_object(body))
                return error_set(error, -EBADMSG, "table response is not a JSON object");
        if (!json_is_object(json_object_get(body, "metadata")))
                return error_set(error, -EBADMSG, "table response lacks a \"metadata\" object");
        v = json_object_get(body, "metadata-location");
        if (v && !json_is_null(v) && !json_is_string(v))
                return error_set(error, -EBADMSG,
                                 "table response: metadata-location is not a string");
        return 0;
}
