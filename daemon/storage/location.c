/* SPDX-License-Identifier: Apache-2.0 */
/* Iceberg locations taken apart (see storage.h): which backend, which path, bucket and key.
 * Pure; a location a writer sent is never trusted, so anything that two spellings could name
 * twice is normalized (local) or refused (S3). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/storage.h"

static int storage_local_normalize(const char *location, const char *p, char **ret_path,
                                   Error *error) {
        _cleanup_(freep) char *out = NULL;
        size_t n = 0;

        if (*p != '/')
                return error_set(error, -EINVAL, "'%s' is not an absolute path", location);
        out = malloc(strlen(p) + 1);
        if (!out)
                return -ENOMEM;
        /* Segment by segment: collapse "//" and ".", refuse ".." rather than guess. */
        while (*p) {
                const char *seg;
                size_t len;

                while (*p == '/')
                        p++;
                seg = p;
                while (*p && *p != '/')
                        p++;
                len = (size_t)(p - seg);
                if (len == 0 || (len == 1 && seg[0] == '.'))
                        continue;
                if (len == 2 && seg[0] == '.' && seg[1] == '.')
                        return error_set(error, -EINVAL, "'%s' contains '..'", location);
                out[n++] = '/';
                memcpy(out + n, seg, len);
                n += len;
        }
        if (n == 0)
                out[n++] = '/';
        out[n] = 0;
        *ret_path = TAKE_PTR(out);
        return 0;
}

static bool storage_char_is_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Why b[0..n) is not a bucket name, or NULL. AWS's naming rules, with what real stores still
 * serve kept: the legacy names of us-east-1 (up to 255 characters, upper case, '_'; path-style
 * only), also what Ceph RGW's relaxed names allow. The reserved suffixes (-s3alias, --ol-s3,
 * .mrap, --x-s3, --table-s3) are accepted: no bucket is created with them because AWS gives
 * them to access point aliases, directory buckets and table buckets, which readers address
 * like buckets. What matters here is that no bucket is ".", ".." or otherwise a path segment
 * that URL normalization (libcurl's, a proxy's) would fold into another bucket in a
 * path-style URL, nor a name no store can hold. */
static const char *storage_bucket_refusal(const char *b, size_t n) {
        static const char *const reserved_prefixes[] = { "xn--", "sthree-", "amzn-s3-demo-" };
        size_t n_dots = 0;
        bool is_numeric = true;

        if (n < 3 || n > 255)
                return "must have 3 to 255 characters";
        for (size_t i = 0; i < n; i++) {
                if (!storage_char_is_alnum(b[i]) && b[i] != '.' && b[i] != '-' && b[i] != '_')
                        return "may hold only letters, digits, '.', '-' and '_'";
                if (b[i] == '.' && i > 0 && b[i - 1] == '.')
                        return "must not hold two adjacent periods";
                n_dots += b[i] == '.';
                is_numeric = is_numeric && (b[i] == '.' || (b[i] >= '0' && b[i] <= '9'));
        }
        if (!storage_char_is_alnum(b[0]) || !storage_char_is_alnum(b[n - 1]))
                return "must begin and end with a letter or digit";
        if (is_numeric && n_dots == 3)
                return "must not be formatted as an IP address";
        for (size_t i = 0; i < ELEMENTSOF(reserved_prefixes); i++)
                if (strncmp(b, reserved_prefixes[i], strlen(reserved_prefixes[i])) == 0)
                        return "must not start with a prefix AWS reserves (xn--, sthree-, "
                               "amzn-s3-demo-)";
        return NULL;
}

static int storage_s3_parse(const char *location, const char *rest, StorageLocation *l,
                            Error *error) {
        const char *slash = strchr(rest, '/');
        size_t n_bucket = slash ? (size_t)(slash - rest) : strlen(rest);
        const char *key = slash ? slash + 1 : "";
        const char *refusal = storage_bucket_refusal(rest, n_bucket);

        if (refusal)
                return error_set(error, -EINVAL, "'%s': the bucket name '%.*s' %s", location,
                                 (int)n_bucket, rest, refusal);
        /* Keys are taken as given by stores: "a//b", "a/./b" and "a/b" are three objects. */
        for (const char *p = key; *p;) {
                const char *end = strchr(p, '/');
                size_t len = end ? (size_t)(end - p) : strlen(p);

                if ((len == 0) || (len == 1 && p[0] == '.') ||
                    (len == 2 && p[0] == '.' && p[1] == '.'))
                        return error_set(error, -EINVAL,
                                         "'%s': the key has an empty, '.' or '..' segment; object "
                                         "stores do not "
                                         "normalize keys, so send the canonical location",
                                         location);
                if (!end)
                        break;
                p = end + 1;
        }
        l->scheme = STORAGE_SCHEME_S3;
        l->bucket = strndup(rest, n_bucket);
        l->key = strdup(key);
        if (!l->bucket || !l->key)
                return -ENOMEM;
        return 0;
}

int storage_location_parse(const char *location, StorageLocation *ret, Error *error) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        static const char *const s3_schemes[] = { "s3://", "s3a://", "s3n://" };
        static const char *const refused[] = { "gs://",    "abfs://", "abfss://", "wasb://",
                                               "wasbs://", "oss://",  "hdfs://",  "viewfs://" };
        const char *p = location;
        int r;

        /* Before anything quotes it: a newline in a path forges log lines and names a file no
         * reader can use. Only the part before the control character is quoted. */
        for (const char *c = location; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                        return error_set(error, -EINVAL,
                                         "'%.*s...' holds a control character (0x%02x at byte %zu)",
                                         (int)(c - location), location, (unsigned char)*c,
                                         (size_t)(c - location));
        for (size_t i = 0; i < ELEMENTSOF(s3_schemes); i++)
                if (strncmp(location, s3_schemes[i], strlen(s3_schemes[i])) == 0) {
                        r = storage_s3_parse(location, location + strlen(s3_schemes[i]), &l, error);
                        if (r < 0)
                                return r;
                        *ret = l;
                        l = (StorageLocation){ 0 };
                        return 0;
                }
        for (size_t i = 0; i < ELEMENTSOF(refused); i++)
                if (strncmp(location, refused[i], strlen(refused[i])) == 0)
                        return error_set(error, -EPROTONOSUPPORT,
                                         "'%s': %.*s locations are not supported; icecommitd reads "
                                         "and writes local "
                                         "paths, file:// URIs and S3-compatible stores (s3://, "
                                         "s3a://, s3n://)",
                                         location, (int)(strlen(refused[i]) - 3), refused[i]);

        if (strncmp(p, "file://", 7) == 0) {
                p += 7;
                /* file://host/p is not local; only an empty authority is. */
                if (*p != '/')
                        return error_set(error, -EINVAL,
                                         "'%s': only file:/// URIs with an empty host are local",
                                         location);
        } else if (strncmp(p, "file:", 5) == 0)
                p += 5;
        else if (strchr(p, ':') && strstr(p, "://"))
                return error_set(error, -EPROTONOSUPPORT,
                                 "'%s': only local paths, file:// URIs and S3-compatible stores "
                                 "(s3://, s3a://, "
                                 "s3n://) are supported",
                                 location);
        r = storage_local_normalize(location, p, &l.path, error);
        if (r < 0)
                return r;
        l.scheme = STORAGE_SCHEME_LOCAL;
        *ret = l;
        l = (StorageLocation){ 0 };
        return 0;
}

void storage_location_deinit(StorageLocation *l) {
        free(l->path);
        free(l->bucket);
        free(l->key);
        *l = (StorageLocation){ 0 };
}

bool storage_location_is_local(const char *location) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };

        return storage_location_parse(location, &l, NULL) == 0 && l.scheme == STORAGE_SCHEME_LOCAL;
}

char *storage_location_canonical(const char *location) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        char *out;

        if (storage_location_parse(location, &l, NULL) < 0)
                return strdup(location);
        if (l.scheme == STORAGE_SCHEME_LOCAL)
                return TAKE_PTR(l.path);
        return asprintf(&out, "s3://%s/%s", l.bucket, l.key) < 0 ? NULL : out;
}

int storage_path_from_location(const char *location, char **ret_path, Error *error) {
        _cleanup_(storage_location_deinit) StorageLocation l = { 0 };
        int r;

        r = storage_location_parse(location, &l, error);
        if (r < 0)
                return r;
        if (l.scheme != STORAGE_SCHEME_LOCAL)
                return error_set(error, -EPROTONOSUPPORT, "'%s' is not a local path", location);
        *ret_path = TAKE_PTR(l.path);
        return 0;
}

bool storage_location_is_within(const char *location, const char *dir_location) {
        _cleanup_(storage_location_deinit) StorageLocation inner = { 0 }, dir = { 0 };
        const char *a, *b;
        size_t n;

        if (storage_location_parse(location, &inner, NULL) < 0 ||
            storage_location_parse(dir_location, &dir, NULL) < 0 || inner.scheme != dir.scheme)
                return false;
        if (inner.scheme == STORAGE_SCHEME_LOCAL) {
                n = strlen(dir.path);
                if (n == 1)
                        return inner.path[1] != 0;
                return strncmp(inner.path, dir.path, n) == 0 && inner.path[n] == '/' &&
                       inner.path[n + 1] != 0;
        }
        if (strcmp(inner.bucket, dir.bucket) != 0)
                return false;
        a = inner.key;
        b = dir.key;
        n = strlen(b);
        if (n > 0 && b[n - 1] == '/')
                n--;
        if (n == 0)
                return a[0] != 0;
        return strncmp(a, b, n) == 0 && a[n] == '/' && a[n + 1] != 0;
}

bool storage_status_is_transient(int status) {
        switch (status) {
        case -EAGAIN:
        case -ETIMEDOUT:
        case -ENOMEM:
        case -ECANCELED:
        case -EKEYEXPIRED:
        case -EROFS:
        case -ENOSPC:
        case -EDQUOT:
        case -EIO:
        case -EMFILE:
        case -ENFILE:
        case -EINTR:
        case -EBUSY:
                return true;
        default:
                return false;
        }
}
