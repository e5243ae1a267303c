/* SPDX-License-Identifier: Apache-2.0 */
/* INI file (libinih) -> Config, strictly: unknown sections or keys, bad numbers, values out of
 * bounds and repeated keys are errors naming the file, line and key. */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/options.h"
#include "util/address.h"
#include "util/log.h"
#include "util/parse.h"

static void *config_field(Config *c, const ConfigOption *o) {
        return (uint8_t *)c + o->offset;
}

static int config_apply_default(Config *c, const ConfigOption *o) {
        void *field = config_field(c, o);

        switch (o->kind) {
        case OPTION_KIND_STRING:
                if (o->default_string) {
                        char *s = strdup(o->default_string);
                        if (!s)
                                return -ENOMEM;
                        *(char **)field = s;
                }
                return 0;
        case OPTION_KIND_BOOL:
        case OPTION_KIND_POLICY:
                *(bool *)field = o->default_number != 0;
                return 0;
        case OPTION_KIND_U32:
                *(uint32_t *)field = (uint32_t)o->default_number;
                return 0;
        case OPTION_KIND_U64:
                *(uint64_t *)field = o->default_number;
                return 0;
        case OPTION_KIND_LOG_LEVEL:
                *(int *)field = (int)o->default_number;
                return 0;
        }
        return -EINVAL;
}

int config_new_default(Config **ret_config) {
        _cleanup_(config_freep) Config *c = NULL;
        int r;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        for (size_t i = 0; i < config_n_options; i++) {
                r = config_apply_default(c, &config_options[i]);
                if (r < 0)
                        return r;
        }
        *ret_config = TAKE_PTR(c);
        return 0;
}

static int config_add_header(Config *c, const char *name, const char *value, Error *error) {
        _cleanup_(freep) char *n = NULL, *v = NULL;
        ConfigHeader *headers;

        if (name[0] == '\0' || strpbrk(name, " \t:\r\n"))
                return error_set(error, -EINVAL, "header name '%s' is not a valid HTTP field name",
                                 name);
        if (strpbrk(value, "\r\n"))
                return error_set(error, -EINVAL, "header value must not contain line breaks");
        headers = reallocarray(c->catalog.headers, c->catalog.n_headers + 1, sizeof(*headers));
        if (!headers)
                return -ENOMEM;
        c->catalog.headers = headers;
        n = strdup(name);
        v = strdup(value);
        if (!n || !v)
                return -ENOMEM;
        headers[c->catalog.n_headers++] = (ConfigHeader){ TAKE_PTR(n), TAKE_PTR(v) };
        return 0;
}

int config_set(Config *c, const char *section, const char *key, const char *value, Error *error) {
        const ConfigOption *o;
        void *field;
        uint64_t n;
        bool b;
        int r;

        if (strcmp(section, "catalog") == 0 && strncmp(key, "header.", 7) == 0)
                return config_add_header(c, key + 7, value, error);

        o = config_option_find(section, key);
        if (!o)
                return error_set(error, -EINVAL, "unknown option");
        field = config_field(c, o);

        switch (o->kind) {
        case OPTION_KIND_STRING: {
                char *s;

                if (value[0] == '\0')
                        return error_set(error, -EINVAL, "value must not be empty");
                s = strdup(value);
                if (!s)
                        return -ENOMEM;
                free(*(char **)field);
                *(char **)field = s;
                return 0;
        }
        case OPTION_KIND_BOOL:
                r = parse_bool(value, &b);
                if (r < 0)
                        return error_set(error, -EINVAL,
                                         "'%s' is not a boolean (use true or false)", value);
                *(bool *)field = b;
                return 0;
        case OPTION_KIND_U32:
        case OPTION_KIND_U64:
                r = parse_u64(value, &n);
                if (r < 0 || n < o->min || n > o->max)
                        return error_set(error, -EINVAL,
                                         "'%s' is not a whole number from %" PRIu64 " to %" PRIu64,
                                         value, o->min, o->max);
                if (o->kind == OPTION_KIND_U32)
                        *(uint32_t *)field = (uint32_t)n;
                else
                        *(uint64_t *)field = n;
                return 0;
        case OPTION_KIND_POLICY:
                if (strcmp(value, "reject") != 0 && strcmp(value, "allow") != 0)
                        return error_set(error, -EINVAL,
                                         "'%s' is not a policy (use reject or allow)", value);
                *(bool *)field = strcmp(value, "allow") == 0;
                return 0;
        case OPTION_KIND_LOG_LEVEL:
                r = log_level_from_string(value);
                if (r < 0)
                        return error_set(
                                error, -EINVAL,
                                "'%s' is not a log level (error, warning, notice, info, debug)",
                                value);
                *(int *)field = r;
                return 0;
        }
        return error_set(error, -EINVAL, "unsupported option kind");
}

/* The HTTP side: what a request may buffer, TLS, and the listener with its protection. */
static int verify_http(const Config *c, Error *error) {
        struct sockaddr_storage listener;
        int r;

        if (c->http.max_buffered_bytes < c->http.max_body_bytes)
                return error_set(error, -EINVAL,
                                 "key 'http.max-buffered-bytes': %" PRIu64
                                 " is below http.max-body-bytes %" PRIu64,
                                 c->http.max_buffered_bytes, c->http.max_body_bytes);
        if (c->commit.intake_max_bytes < c->commit.intake_max_request_bytes)
                return error_set(error, -EINVAL,
                                 "key 'commit.intake-max-bytes': %" PRIu64
                                 " is below commit.intake-max-request-bytes %" PRIu64,
                                 c->commit.intake_max_bytes, c->commit.intake_max_request_bytes);
        if (!c->http.tls_certificate_file != !c->http.tls_key_file)
                return error_set(error, -EINVAL,
                                 "keys 'http.tls-certificate-file' and 'http.tls-key-file': set "
                                 "both or neither");
        if (c->http.tls_client_ca_file && !c->http.tls_certificate_file)
                return error_set(error, -EINVAL,
                                 "key 'http.tls-client-ca-file': needs http.tls-certificate-file "
                                 "and http.tls-key-file");
        r = address_parse(c->http.listen_address, c->http.port, &listener);
        if (r < 0)
                return error_set(error, r,
                                 "key 'http.listen-address': '%s' is not an IPv4 or IPv6 address "
                                 "(host names are not resolved: use e.g. 127.0.0.1, ::1, 0.0.0.0)",
                                 c->http.listen_address);
        /* Protected by default (docs/design.md section 9): off loopback, a listener without
         * tokens or client certificates lets anyone who reaches it commit, create and read. */
        if (!address_is_loopback(&listener) && !c->auth.tokens_file &&
            !c->http.tls_client_ca_file && !c->auth.allow_unauthenticated)
                return error_set(error, -EINVAL,
                                 "key 'http.listen-address': %s is not a loopback address and "
                                 "writer authentication is off: set auth.tokens-file "
                                 "(docs/operations.md, \"Writer authentication\"), or "
                                 "auth.allow-unauthenticated = true if anyone who reaches the "
                                 "port may commit to, create, upgrade and read every table",
                                 c->http.listen_address);
        return 0;
}

/* The catalog: its type with the keys that type needs, and how it authenticates us. */
static int verify_catalog(const Config *c, Error *error) {
        const char *type = catalog_config_type(&c->catalog);

        if (strcmp(type, "filesystem") == 0) {
                const char *w = catalog_config_warehouse(&c->catalog);
                if (w[0] != '/' && strncmp(w, "file:/", 6) != 0 && strncmp(w, "s3://", 5) != 0 &&
                    strncmp(w, "s3a://", 6) != 0 && strncmp(w, "s3n://", 6) != 0)
                        return error_set(error, -EINVAL,
                                         "key 'catalog.warehouse': '%s' must be an absolute path, "
                                         "a file:// URI or an "
                                         "s3:// bucket location for the filesystem catalog",
                                         w);
                if (c->catalog.uri)
                        return error_set(error, -EINVAL,
                                         "key 'catalog.uri': not used by the filesystem catalog "
                                         "(set catalog.type = rest)");
        } else if (strcmp(type, "rest") == 0) {
                if (!c->catalog.uri)
                        return error_set(
                                error, -EINVAL,
                                "key 'catalog.uri': required, the REST catalog's base URI");
                if (strncmp(c->catalog.uri, "http://", 7) != 0 &&
                    strncmp(c->catalog.uri, "https://", 8) != 0)
                        return error_set(
                                error, -EINVAL,
                                "key 'catalog.uri': '%s' must start with http:// or https://",
                                c->catalog.uri);
        } else
                return error_set(
                        error, -EINVAL,
                        "key 'catalog.type': '%s' is not supported (use rest or filesystem)", type);
        if (c->catalog.token && c->catalog.credential)
                return error_set(
                        error, -EINVAL,
                        "keys 'catalog.token' and 'catalog.credential': set one, not both");
        if (c->catalog.credential && !strchr(c->catalog.credential, ':'))
                return error_set(error, -EINVAL,
                                 "key 'catalog.credential': expected 'client-id:client-secret'");
        return 0;
}

static int verify_s3(const Config *c, Error *error) {
        if (c->storage.s3.min_backoff_ms > c->storage.s3.max_backoff_ms)
                return error_set(error, -EINVAL,
                                 "key 's3.min-backoff-ms': %u is above s3.max-backoff-ms %u",
                                 c->storage.s3.min_backoff_ms, c->storage.s3.max_backoff_ms);
        if (!c->storage.s3.access_key_id != !c->storage.s3.secret_access_key)
                return error_set(
                        error, -EINVAL,
                        "keys 's3.access-key-id' and 's3.secret-access-key': set both or neither");
        if (c->storage.s3.endpoint && strncmp(c->storage.s3.endpoint, "http://", 7) != 0 &&
            strncmp(c->storage.s3.endpoint, "https://", 8) != 0)
                return error_set(error, -EINVAL,
                                 "key 's3.endpoint': '%s' must start with http:// or https://",
                                 c->storage.s3.endpoint);
        return 0;
}

int config_verify(const Config *c, Error *error) {
        int r;

        /* In this order: with several mistakes, the first one named stays the same. */
        r = verify_http(c, error);
        if (r < 0)
                return r;
        r = verify_catalog(c, error);
        if (r < 0)
                return r;
        r = verify_s3(c, error);
        if (r < 0)
                return r;
        if (c->catalog.access_delegation &&
            strcmp(c->catalog.access_delegation, "vended-credentials") != 0 &&
            strcmp(c->catalog.access_delegation, "remote-signing") != 0)
                return error_set(error, -EINVAL,
                                 "key 'catalog.access-delegation': '%s' is not one of "
                                 "vended-credentials, remote-signing",
                                 c->catalog.access_delegation);
        if (c->catalog.access_delegation &&
            strcmp(c->catalog.access_delegation, "remote-signing") == 0)
                return error_set(error, -EINVAL,
                                 "key 'catalog.access-delegation': remote-signing is not "
                                 "supported; use vended-credentials");
        if (log_format_from_string(c->log_format) < 0)
                return error_set(error, -EINVAL,
                                 "key 'log.format': '%s' is not one of auto, text, json, journal",
                                 c->log_format);
        if (c->commit.min_backoff_ms > c->commit.max_backoff_ms)
                return error_set(
                        error, -EINVAL,
                        "key 'commit.min-backoff-ms': %u is above commit.max-backoff-ms %u",
                        c->commit.min_backoff_ms, c->commit.max_backoff_ms);
        /* Not metrics-requires-token: it is on by default, and means "when auth is on". */
        if (c->auth.health_requires_token && !c->auth.tokens_file)
                return error_set(error, -EINVAL,
                                 "key 'auth.health-requires-token': needs auth.tokens-file (or "
                                 "the credential auth.tokens)");
        if (c->commit.max_manifests_per_request > c->commit.max_batch_manifests)
                return error_set(error, -EINVAL,
                                 "key 'commit.max-manifests-per-request': %u is above "
                                 "commit.max-batch-manifests %u",
                                 c->commit.max_manifests_per_request,
                                 c->commit.max_batch_manifests);
        return 0;
}

typedef struct LoadState {
        Config *config;
        const char *path;
        Error *error;
        int result;
        unsigned n_lines_seen;
        char **seen; /* "section.key" already set, to refuse repeats */
        size_t n_seen;
} LoadState;

static int config_ini_handler(void *userdata, const char *section, const char *key,
                              const char *value) {
        LoadState *s = userdata;
        char full[256];
        char **seen;
        int r;

        if (s->result < 0)
                return 0;
        if ((size_t)snprintf(full, sizeof(full), "%s.%s", section, key) >= sizeof(full)) {
                s->result = error_set(s->error, -EINVAL, "key too long");
                return 0;
        }
        for (size_t i = 0; i < s->n_seen; i++)
                if (strcmp(s->seen[i], full) == 0) {
                        s->result = error_set(s->error, -EINVAL, "key '%s': set twice", full);
                        return 0;
                }
        seen = reallocarray(s->seen, s->n_seen + 1, sizeof(*seen));
        if (!seen) {
                s->result = -ENOMEM;
                return 0;
        }
        s->seen = seen;
        s->seen[s->n_seen] = strdup(full);
        if (!s->seen[s->n_seen]) {
                s->result = -ENOMEM;
                return 0;
        }
        s->n_seen++;

        r = config_set(s->config, section, key, value, s->error);
        if (r < 0) {
                s->result = r == -ENOMEM ? r : error_prefix(s->error, r, "key '%s'", full);
                return 0;
        }
        return 1;
}

/* systemd's LoadCredential=catalog.token:/path (or catalog.credential, or an s3.* key) puts the
 * secret in $CREDENTIALS_DIRECTORY, readable only by the service: a secret never needs to be in the
 * config file. A credential file wins over the same key in the file. */
static int config_load_credentials(Config *c, Error *error) {
        static const struct {
                const char *name;
                size_t offset;
        } secrets[] = {
                { "catalog.token", offsetof(Config, catalog.token) },
                { "catalog.credential", offsetof(Config, catalog.credential) },
                { "s3.access-key-id", offsetof(Config, storage.s3.access_key_id) },
                { "s3.secret-access-key", offsetof(Config, storage.s3.secret_access_key) },
                { "s3.session-token", offsetof(Config, storage.s3.session_token) },
        };
        /* Secrets that are files (a PEM key holds several lines): the option becomes the
         * credential's path, so LoadCredential=http.tls-key-file:/etc/... just works. */
        static const struct {
                const char *name;
                size_t offset;
        } secret_files[] = {
                { "http.tls-key-file", offsetof(Config, http.tls_key_file) },
                /* LoadCredential=auth.tokens:/etc/icecommit/tokens (many lines, like a key) */
                { "auth.tokens", offsetof(Config, auth.tokens_file) },
        };
        const char *dir = getenv("CREDENTIALS_DIRECTORY");

        if (!dir)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(secret_files); i++) {
                char path[4096], **field;

                if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, secret_files[i].name) >=
                    sizeof(path))
                        return error_set(error, -ENAMETOOLONG,
                                         "credentials directory path too long");
                if (access(path, F_OK) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return error_set(error, -errno, "%s: cannot access: %s", path,
                                         strerror(errno));
                }
                field = (char **)((uint8_t *)c + secret_files[i].offset);
                free(*field);
                *field = strdup(path);
                if (!*field)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < ELEMENTSOF(secrets); i++) {
                _cleanup_(fclosep) FILE *f = NULL;
                char value[8192], path[4096], **field;
                size_t n;

                if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, secrets[i].name) >=
                    sizeof(path))
                        return error_set(error, -ENAMETOOLONG,
                                         "credentials directory path too long");
                f = fopen(path, "re");
                if (!f) {
                        if (errno == ENOENT)
                                continue;
                        return error_set(error, -errno, "%s: cannot open: %s", path,
                                         strerror(errno));
                }
                n = fread(value, 1, sizeof(value) - 1, f);
                if (ferror(f) || !feof(f))
                        return error_set(error, -EINVAL, "%s: unreadable or longer than %zu bytes",
                                         path, sizeof(value) - 1);
                while (n > 0 && (value[n - 1] == '\n' || value[n - 1] == '\r'))
                        n--;
                value[n] = 0;
                if (n == 0 || memchr(value, 0, n) || strpbrk(value, "\r\n"))
                        return error_set(error, -EINVAL, "%s: must hold one non-empty line", path);
                field = (char **)((uint8_t *)c + secrets[i].offset);
                free(*field);
                *field = strdup(value);
                explicit_bzero(value, sizeof(value));
                if (!*field)
                        return -ENOMEM;
        }
        return 0;
}

int config_load_file(FILE *f, const char *path, Config **ret_config, Error *error) {
        _cleanup_(config_freep) Config *c = NULL;
        LoadState s = { .path = path, .error = error };
        int line, r;

        r = config_new_default(&c);
        if (r < 0)
                return error_set(error, r, "%s: out of memory", path);
        c->path = strdup(path);
        if (!c->path)
                return -ENOMEM;

        s.config = c;
        line = ini_parse_file(f, config_ini_handler, &s);
        for (size_t i = 0; i < s.n_seen; i++)
                free(s.seen[i]);
        free(s.seen);
        if (s.result < 0)
                return s.result == -ENOMEM ? error_set(error, -ENOMEM, "%s: out of memory", path)
                                           : error_prefix(error, s.result, "%s:%d", path, line);
        if (line != 0)
                return error_set(error, -EINVAL,
                                 "%s:%d: not an INI line (expected [section] or key = value)", path,
                                 line);

        r = config_load_credentials(c, error);
        if (r < 0)
                return r;
        r = config_verify(c, error);
        if (r < 0)
                return error_prefix(error, r, "%s", path);

        *ret_config = TAKE_PTR(c);
        return 0;
}

int config_load(const char *path, Config **ret_config, Error *error) {
        _cleanup_(fclosep) FILE *f = NULL;

        f = fopen(path, "re");
        if (!f)
                return error_set(error, -errno, "%s: cannot open: %s", path, strerror(errno));
        return config_load_file(f, path, ret_config, error);
}

Config *config_free(Config *c) {
        if (!c)
                return NULL;
        for (size_t i = 0; i < config_n_options; i++)
                if (config_options[i].kind == OPTION_KIND_STRING)
                        free(*(char **)config_field(c, &config_options[i]));
        for (size_t i = 0; i < c->catalog.n_headers; i++) {
                free(c->catalog.headers[i].name);
                free(c->catalog.headers[i].value);
        }
        free(c->catalog.headers);
        free(c->path);
        free(c);
        return NULL;
}
