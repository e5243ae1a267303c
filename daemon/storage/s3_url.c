/* SPDX-License-Identifier: Apache-2.0 */
/* The URL of an S3 request (s3.h): the endpoint, path-style or virtual-hosted, the key
 * percent-encoded as SigV4 canonicalizes it, the query. Pure. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3.h"
#include "util/cleanup.h"

int s3_url_encode(const char *s, bool keep_slash, Buf *out) {
        static const char hex[] = "0123456789ABCDEF";
        int r = 0;

        for (; *s && r == 0; s++) {
                unsigned char ch = (unsigned char)*s;

                if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~' ||
                    (keep_slash && ch == '/'))
                        r = buf_append_byte(out, ch);
                else {
                        char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };

                        r = buf_append(out, e, 3);
                }
        }
        return r;
}

int s3_url_build(const S3Settings *settings, const char *bucket, const char *key, const char *query,
                 Buf *out) {
        _cleanup_(freep) char *fallback = NULL;
        const char *endpoint = settings->endpoint, *authority, *rest;
        size_t n_scheme, n_authority;
        int r;

        if (!endpoint) {
                if (asprintf(&fallback, "https://s3.%s.amazonaws.com",
                             settings->region ? settings->region : "us-east-1") < 0)
                        return -ENOMEM;
                endpoint = fallback;
        }
        if (strncmp(endpoint, "http://", 7) == 0)
                n_scheme = 7;
        else if (strncmp(endpoint, "https://", 8) == 0)
                n_scheme = 8;
        else
                return -EINVAL;
        authority = endpoint + n_scheme;
        rest = strchr(authority, '/');
        n_authority = rest ? (size_t)(rest - authority) : strlen(authority);
        if (n_authority == 0)
                return -EINVAL;
        if (!rest)
                rest = "";

        r = buf_append(out, endpoint, n_scheme);
        if (r == 0 && !settings->path_style_access)
                /* Virtual-hosted style: the bucket is the first label of the host. */
                r = buf_printf(out, "%s.", bucket);
        if (r == 0)
                r = buf_append(out, authority, n_authority);
        if (r == 0)
                r = buf_append_str(out, rest);
        while (r == 0 && out->len > 0 && out->data[out->len - 1] == '/')
                out->len--;
        if (r == 0 && settings->path_style_access)
                r = buf_printf(out, "/%s", bucket);
        if (r == 0)
                r = buf_append_byte(out, '/');
        if (r == 0)
                r = s3_url_encode(key, /* keep_slash= */ true, out);
        if (r == 0 && query && query[0])
                r = buf_printf(out, "?%s", query);
        return r;
}
