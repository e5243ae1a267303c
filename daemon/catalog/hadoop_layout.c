/* SPDX-License-Identifier: Apache-2.0 */
/* The Hadoop-catalog layout's naming rules (see hadoop_layout.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/hadoop_layout.h"
#include "util/parse.h"

bool hadoop_layout_name_is_valid(const char *s) {
        return s && s[0] != '\0' && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && !strchr(s, '/');
}

int64_t hadoop_layout_version_from_name(const char *name) {
        const char *slash = strrchr(name, '/');
        size_t len, suffix = strlen(HADOOP_LAYOUT_METADATA_SUFFIX);
        char digits[16];
        uint64_t v;

        name = slash ? slash + 1 : name;
        len = strlen(name);
        if (name[0] != 'v' || len <= 1 + suffix ||
            strcmp(name + len - suffix, HADOOP_LAYOUT_METADATA_SUFFIX) != 0 ||
            len - 1 - suffix >= sizeof(digits))
                return -1;
        memcpy(digits, name + 1, len - 1 - suffix);
        digits[len - 1 - suffix] = 0;
        if (parse_u64(digits, &v) < 0 || v > INT32_MAX)
                return -1;
        return (int64_t)v;
}

char *hadoop_layout_version_location(const char *table_dir, int64_t version) {
        char *p;

        return asprintf(&p, "%s/metadata/v%" PRId64 HADOOP_LAYOUT_METADATA_SUFFIX, table_dir,
                        version) < 0
                       ? NULL
                       : p;
}

int64_t hadoop_layout_hint_parse(const char *text, size_t len) {
        char digits[16];
        uint64_t v;

        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
                len--;
        if (len == 0 || len >= sizeof(digits) || memchr(text, 0, len))
                return -1;
        memcpy(digits, text, len);
        digits[len] = 0;
        if (parse_u64(digits, &v) < 0 || v == 0 || v > INT32_MAX)
                return -1;
        return (int64_t)v;
}
