/* SPDX-License-Identifier: Apache-2.0 */
/* The storage roots (see roots.h): parsed once, compared canonically. What a writer or a
 * catalog names is never trusted; what an operator configured is the only widening there is. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/roots.h"
#include "util/buf.h"

/* The roots as refusals name them stay short enough to read. */
#define STORAGE_ROOTS_MAX_TEXT_BYTES 4096u

/* The table properties that name a location icecommitd reads from or writes to (Iceberg's
 * TableProperties), and icecommitd's own list of them (iceberg/table.h). */
static const char *const storage_location_properties[] = {
        "write.data.path",
        "write.metadata.path",
        "write.folder-storage.path",
        "write.object-storage.path",
};
#define STORAGE_PROPERTY_ALLOWED_PREFIXES "icecommit.allowed-prefixes"

StorageRoots *storage_roots_free(StorageRoots *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_roots; i++)
                storage_location_deinit(&r->roots[i]);
        free(r->roots);
        free(r->text);
        free(r);
        return NULL;
}

int storage_roots_new(const char *const *locations, size_t n, StorageRoots **ret, Error *error) {
        _cleanup_(storage_roots_freep) StorageRoots *r = NULL;
        _cleanup_(buf_deinitp) Buf text = { 0 };
        int rr;

        if (n == 0)
                return error_set(error, -EINVAL, "no storage root");
        r = calloc(1, sizeof(*r));
        if (!r || !(r->roots = calloc(n, sizeof(*r->roots))))
                return -ENOMEM;
        /* The roots are named in refusals: a bounded text, and so a bounded list. */
        buf_init(&text, STORAGE_ROOTS_MAX_TEXT_BYTES);
        for (size_t i = 0; i < n; i++) {
                _cleanup_(freep) char *canonical = NULL;

                rr = storage_location_parse(locations[i], &r->roots[i], error);
                if (rr < 0)
                        return rr == -ENOMEM ? rr : -EINVAL;
                r->n_roots = i + 1;
                canonical = storage_location_canonical(locations[i]);
                if (!canonical)
                        return -ENOMEM;
                rr = buf_printf(&text, "%s'%s'", i ? ", " : "", canonical);
                if (rr < 0)
                        return rr == -ENOMEM ? rr
                                             : error_set(error, -EINVAL,
                                                         "the roots are longer than %u bytes",
                                                         STORAGE_ROOTS_MAX_TEXT_BYTES);
        }
        r->text = (char *)buf_steal(&text, NULL);
        if (!r->text)
                return -ENOMEM;
        *ret = TAKE_PTR(r);
        return 0;
}

int storage_roots_parse(const char *list, StorageRoots **ret, Error *error) {
        _cleanup_(freep) char *copy = strdup(list);
        _cleanup_(freep) const char **locations = NULL;
        size_t n = 1;
        char *p;

        if (!copy)
                return -ENOMEM;
        for (const char *c = list; *c; c++)
                n += *c == ',';
        locations = calloc(n, sizeof(*locations));
        if (!locations)
                return -ENOMEM;
        n = 0;
        p = copy;
        for (;;) {
                char *end = strchr(p, ','), *last;

                if (end)
                        *end = '\0';
                while (*p == ' ' || *p == '\t')
                        p++;
                last = p + strlen(p);
                while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
                        *--last = '\0';
                if (!*p)
                        return error_set(error, -EINVAL,
                                         "entry %zu is empty (a comma-separated list of local "
                                         "paths, file: URIs and s3:// locations)",
                                         n + 1);
                locations[n++] = p;
                if (!end)
                        break;
                p = end + 1;
        }
        return storage_roots_new(locations, n, ret, error);
}

/* Whether l is root or beneath it: the same store (and bucket), and a path or key equal to the
 * root's or continuing it after a '/'. */
static bool storage_root_contains(const StorageLocation *root, const StorageLocation *l) {
        const char *a, *b;
        size_t n;

        if (root->scheme != l->scheme)
                return false;
        if (l->scheme == STORAGE_SCHEME_LOCAL) {
                a = l->path;
                b = root->path;
                n = strlen(b);
                if (n == 1) /* "/" */
                        return true;
        } else {
                if (strcmp(root->bucket, l->bucket) != 0)
                        return false;
                a = l->key;
                b = root->key;
                n = strlen(b);
                /* A key may end in '/' (a prefix): "wh/" and "wh" name the same root. */
                if (n > 0 && b[n - 1] == '/')
                        n--;
                if (n == 0)
                        return true;
        }
        return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

bool storage_roots_contain_parsed(const StorageRoots *r, const StorageLocation *l) {
        if (!r)
                return false;
        for (size_t i = 0; i < r->n_roots; i++)
                if (storage_root_contains(&r->roots[i], l))
                        return true;
        return false;
}

bool storage_roots_property_steers(const char *key) {
        size_t n = strlen(key);

        if (strcmp(key, STORAGE_PROPERTY_ALLOWED_PREFIXES) == 0)
                return true;
        /* "write." + something + ".path": the pattern of every Iceberg location property. */
        return n > strlen("write.") + strlen(".path") && strncmp(key, "write.", 6) == 0 &&
               strcmp(key + n - 5, ".path") == 0;
}

/* One location a table names (`what`: how, for the message) against the roots. */
static int storage_roots_check_one(const StorageRoots *r, const char *what, const char *location,
                                   Error *error) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        Error why = { 0 };
        int rr;

        rr = storage_location_parse(location, &l, &why);
        if (rr == -ENOMEM)
                return rr;
        if (rr < 0)
                return error_set(error, -EPERM,
                                 "%s '%s' is not a location within the storage roots (%s): %s",
                                 what, location, r->text, why.message);
        if (!storage_roots_contain_parsed(r, &l))
                return error_set(error, -EPERM, "%s '%s' is outside the storage roots (%s)", what,
                                 location, r->text);
        return 0;
}

int storage_roots_check_table(const StorageRoots *r, const char *location, const json_t *properties,
                              Error *error) {
        const char *prefixes;
        int rr;

        if (!r)
                return error_set(error, -EAGAIN,
                                 "the storage roots are not known yet (the catalog's "
                                 "configuration has not loaded)");
        if (location && (rr = storage_roots_check_one(r, "the location", location, error)) < 0)
                return rr;
        for (size_t i = 0; i < ELEMENTSOF(storage_location_properties); i++) {
                const char *v = json_string_value(
                        json_object_get(properties, storage_location_properties[i]));
                char what[64];

                if (!v || !v[0]) /* empty: unset, as iceberg/table.c and Java read it */
                        continue;
                (void)snprintf(what, sizeof(what), "the property %s",
                               storage_location_properties[i]);
                rr = storage_roots_check_one(r, what, v, error);
                if (rr < 0)
                        return rr;
        }
        /* Entries as commit/probe.c reads them: comma-separated, empty ones ignored. */
        prefixes =
                json_string_value(json_object_get(properties, STORAGE_PROPERTY_ALLOWED_PREFIXES));
        while (prefixes && *prefixes) {
                const char *end = strchr(prefixes, ',');
                size_t n = end ? (size_t)(end - prefixes) : strlen(prefixes);
                _cleanup_(freep) char *prefix = strndup(prefixes, n);

                if (!prefix)
                        return -ENOMEM;
                if (prefix[0] &&
                    (rr = storage_roots_check_one(
                             r, "an entry of the property " STORAGE_PROPERTY_ALLOWED_PREFIXES,
                             prefix, error)) < 0)
                        return rr;
                prefixes = end ? end + 1 : NULL;
        }
        return 0;
}

int storage_roots_refuse_table(const StorageRoots *r, const char *location,
                               const json_t *properties, const char **ret_type, Error *error) {
        Error why = { 0 };
        int rr = storage_roots_check_table(r, location, properties, &why);

        if (rr == 0)
                return 0;
        if (rr != -EPERM) {
                *ret_type = rr == -ENOMEM ? "out-of-memory" : "catalog-unavailable";
                (void)error_set(error, rr, "%s", rr == -ENOMEM ? "out of memory" : why.message);
                return 503;
        }
        *ret_type = "table-outside-roots";
        (void)error_set(error, rr,
                        "%s: icecommitd reads and commits nothing of this table until an "
                        "operator adds its root to [storage] allowed-roots (or the table's "
                        "properties change)",
                        why.message);
        return 403;
}
