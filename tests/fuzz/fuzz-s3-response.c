/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: what an S3 store (or anything posing as one) answers, through storage/s3_xml.c
 * (error documents, ListObjectsV2 pages), and the locations a writer sends, through
 * storage/location.c (parse, containment). Never crash or over-read; decoded texts are
 * NUL-terminated and control-free; a parsed location is control-free, its S3 key canonical and
 * its bucket no path segment ("." or "..") nor anything beginning or ending with '.' or '-'. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/s3_xml.h"
#include "storage/storage.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t size) {
        size_t n = strnlen(s, size);

        if (n == size)
                abort();
        for (size_t i = 0; i < n; i++)
                if ((unsigned char)s[i] < 0x20 || s[i] == 0x7F)
                        abort();
}

static void fuzz_locations(const uint8_t *data, size_t size) {
        char *text = malloc(size + 1), *dir;
        StorageLocation l = { 0 };

        if (!text)
                return;
        memcpy(text, data, size);
        text[size] = 0;
        if (storage_location_parse(text, &l, NULL) == 0) {
                check_text(text, size + 1);
                if (l.scheme == STORAGE_SCHEME_S3 &&
                    (strstr(l.key, "//") || strncmp(l.key, "/", 1) == 0 || strstr(l.key, "/../") ||
                     strncmp(l.key, "../", 3) == 0 || strlen(l.bucket) < 3 ||
                     strstr(l.bucket, "..") || l.bucket[0] == '.' || l.bucket[0] == '-' ||
                     l.bucket[strlen(l.bucket) - 1] == '.' ||
                     l.bucket[strlen(l.bucket) - 1] == '-'))
                        abort();
        }
        storage_location_deinit(&l);
        /* The first line as the directory, the rest as the location. */
        dir = strchr(text, '\n');
        if (dir) {
                *dir++ = 0;
                (void)storage_location_is_within(dir, text);
        }
        free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Slice body = slice_make(data, size);
        S3XmlListPage page = { 0 };
        S3XmlError e;

        if (s3_xml_error_parse(body, &e) == 0) {
                check_text(e.code, sizeof(e.code));
                check_text(e.message, sizeof(e.message));
                check_text(e.region, sizeof(e.region));
        }
        if (s3_xml_list_parse(body, 50, &page) == 0) {
                if (page.n_keys > 50 || (page.is_truncated && !page.next_token))
                        abort();
                for (size_t i = 0; i < page.n_keys; i++)
                        (void)strlen(page.keys[i]);
        }
        s3_xml_list_page_deinit(&page);
        fuzz_locations(data, size);
        return 0;
}
