/* SPDX-License-Identifier: Apache-2.0 */
/* Per-table storage settings from the catalog (see storage.h): the catalog's merged /v1/config
 * properties, then LoadTableResult.config, then the storage-credentials entry with the longest
 * prefix of the location (REST spec StorageCredential). Pure; holds secrets, so nothing here is
 * ever logged or put into a message. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "storage/props.h"

typedef struct StoragePrefixCredential {
        char *prefix;
        json_t *config;
} StoragePrefixCredential;

struct StorageProps {
        json_t *properties; /* string map */
        StoragePrefixCredential *credentials;
        size_t n_credentials;
};

static bool storage_props_key_kept(const char *key) {
        return strncmp(key, "s3.", 3) == 0 || strncmp(key, "client.", 7) == 0;
}

/* Copies the storage keys of a string map over `into`; other keys are not ours to keep. */
static int storage_props_merge(json_t *into, const json_t *from, const char *what, Error *error) {
        const char *key;
        json_t *v;

        if (!from || json_is_null(from))
                return 0;
        if (!json_is_object(from))
                return error_set(error, -EBADMSG, "%s is not an object", what);
        json_object_foreach ((json_t *)from, key, v) {
                if (!storage_props_key_kept(key))
                        continue;
                if (!json_is_string(v))
                        return error_set(error, -EBADMSG, "%s: '%s' is not a string", what, key);
                if (json_object_set(into, key, v) < 0)
                        return -ENOMEM;
        }
        return 0;
}

StorageProps *storage_props_free(StorageProps *p) {
        if (!p)
                return NULL;
        json_decref(p->properties);
        for (size_t i = 0; i < p->n_credentials; i++) {
                free(p->credentials[i].prefix);
                json_decref(p->credentials[i].config);
        }
        free(p->credentials);
        free(p);
        return NULL;
}

int storage_props_new(const json_t *catalog_properties, const json_t *load_result,
                      StorageProps **ret_props, Error *error) {
        _cleanup_(storage_props_freep) StorageProps *p = NULL;
        const json_t *credentials;
        int r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->properties = json_object();
        if (!p->properties)
                return -ENOMEM;
        r = storage_props_merge(p->properties, catalog_properties, "catalog properties", error);
        if (r < 0)
                return r;
        if (load_result) {
                r = storage_props_merge(p->properties, json_object_get(load_result, "config"),
                                        "LoadTableResult.config", error);
                if (r < 0)
                        return r;
                credentials = json_object_get(load_result, "storage-credentials");
                if (credentials && !json_is_null(credentials)) {
                        size_t i;
                        json_t *c;

                        if (!json_is_array(credentials))
                                return error_set(error, -EBADMSG,
                                                 "storage-credentials is not an array");
                        p->credentials =
                                calloc(json_array_size(credentials) + 1, sizeof(*p->credentials));
                        if (!p->credentials)
                                return -ENOMEM;
                        json_array_foreach (credentials, i, c) {
                                StoragePrefixCredential *pc = &p->credentials[p->n_credentials];
                                const json_t *prefix = json_object_get(c, "prefix");

                                if (!json_is_string(prefix))
                                        return error_set(error, -EBADMSG,
                                                         "storage-credentials[%zu] has no prefix",
                                                         i);
                                pc->prefix = strdup(json_string_value(prefix));
                                pc->config = json_object();
                                p->n_credentials++;
                                if (!pc->prefix || !pc->config)
                                        return -ENOMEM;
                                r = storage_props_merge(pc->config, json_object_get(c, "config"),
                                                        "storage-credentials config", error);
                                if (r < 0)
                                        return r;
                        }
                }
        }
        *ret_props = TAKE_PTR(p);
        return 0;
}

static bool storage_props_is_s3(const char *location) {
        return strncmp(location, "s3://", 5) == 0 || strncmp(location, "s3a://", 6) == 0 ||
               strncmp(location, "s3n://", 6) == 0;
}

/* The storage-credentials entry for a location: the longest prefix that matches. s3a:// and
 * s3n:// locations match entries written for s3:// (one store, three spellings). */
static const json_t *storage_props_credential(const StorageProps *p, const char *location) {
        const json_t *best = NULL;
        size_t best_n = 0;
        const char *tail = strstr(location, "://");

        for (size_t i = 0; i < p->n_credentials; i++) {
                const char *prefix = p->credentials[i].prefix;
                const char *ptail = strstr(prefix, "://");
                size_t n = strlen(prefix);
                bool match = strncmp(location, prefix, n) == 0;

                if (!match && ptail && tail && storage_props_is_s3(prefix) &&
                    storage_props_is_s3(location))
                        match = strncmp(tail, ptail, strlen(ptail)) == 0;
                if (match && n >= best_n) {
                        best = p->credentials[i].config;
                        best_n = n;
                }
        }
        return best;
}

const char *storage_props_get(const StorageProps *p, const char *location, const char *key) {
        const json_t *credential, *v;

        if (!p)
                return NULL;
        credential = storage_props_credential(p, location);
        v = credential ? json_object_get(credential, key) : NULL;
        if (!v && credential && strncmp(key, "s3.", 3) == 0 && strcmp(key, "s3.endpoint") != 0 &&
            strcmp(key, "s3.path-style-access") != 0 &&
            json_object_get(credential, "s3.access-key-id"))
                /* A credential entry is a whole key set: never mix its key id with a token from
                 * the table config. */
                return NULL;
        if (!v)
                v = json_object_get(p->properties, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

bool storage_props_expire_before(const StorageProps *p, const char *location, int64_t when_ms) {
        const char *v = storage_props_get(p, location, "s3.session-token-expires-at-ms");
        char *end;
        long long t;

        if (!v || !v[0])
                return false;
        errno = 0;
        t = strtoll(v, &end, 10);
        if (errno != 0 || *end)
                return false;
        return t <= when_ms;
}

int storage_props_copy(const StorageProps *p, StorageProps **ret_copy) {
        _cleanup_(storage_props_freep) StorageProps *c = NULL;

        *ret_copy = NULL;
        if (!p)
                return 0;
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->properties = json_deep_copy(p->properties);
        if (!c->properties)
                return -ENOMEM;
        if (p->n_credentials > 0) {
                c->credentials = calloc(p->n_credentials, sizeof(*c->credentials));
                if (!c->credentials)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < p->n_credentials; i++) {
                c->credentials[i].prefix = strdup(p->credentials[i].prefix);
                c->credentials[i].config = json_deep_copy(p->credentials[i].config);
                c->n_credentials++;
                if (!c->credentials[i].prefix || !c->credentials[i].config)
                        return -ENOMEM;
        }
        *ret_copy = TAKE_PTR(c);
        return 0;
}
