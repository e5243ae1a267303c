/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr with the sd-daemon "<N>" level prefix that journald understands.
 * Each .c file that logs defines LOG_MODULE before including this header. */
#pragma once

#include <stdbool.h>

#include "util/cleanup.h"

enum {
        LOG_LEVEL_ERROR = 3,
        LOG_LEVEL_WARNING = 4,
        LOG_LEVEL_NOTICE = 5,
        LOG_LEVEL_INFO = 6,
        LOG_LEVEL_DEBUG = 7,
};

/* The process-wide threshold: messages above it are dropped. */
extern int log_max_level;

/* Parses "error", "warning", "notice", "info" or "debug". Returns the level or -EINVAL. */
int log_level_from_string(const char *s);

void log_emit(int level, const char *module, const char *fmt, ...) _printf_(3, 4);

#ifndef LOG_MODULE
#define LOG_MODULE "icecommitd"
#endif

#define log_at(level, ...)                                                                         \
        do {                                                                                       \
                if ((level) <= log_max_level)                                                      \
                        log_emit((level), LOG_MODULE, __VA_ARGS__);                                \
        } while (0)

#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_at(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) log_at(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)
