/* SPDX-License-Identifier: Apache-2.0 */
/* stderr logger: one line per message, "<level>module: text", written with one write(2). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

int log_max_level = LOG_LEVEL_INFO;

int log_level_from_string(const char *s) {
        static const struct {
                const char *name;
                int level;
        } table[] = {
                { "error", LOG_LEVEL_ERROR },   { "warning", LOG_LEVEL_WARNING },
                { "notice", LOG_LEVEL_NOTICE }, { "info", LOG_LEVEL_INFO },
                { "debug", LOG_LEVEL_DEBUG },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (strcmp(s, table[i].name) == 0)
                        return table[i].level;
        return -EINVAL;
}

void log_emit(int level, const char *module, const char *fmt, ...) {
        char line[2048];
        int n, m;
        va_list ap;

        n = snprintf(line, sizeof(line), "<%d>%s: ", level, module);
        if (n < 0 || (size_t)n >= sizeof(line))
                return;
        va_start(ap, fmt);
        m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
        va_end(ap);
        if (m < 0)
                return;
        /* Long messages are cut, never split: a log line is one record. */
        n = (size_t)m >= sizeof(line) - (size_t)n - 1 ? (int)sizeof(line) - 2 : n + m;
        line[n++] = '\n';
        (void)!write(STDERR_FILENO, line, (size_t)n);
}
