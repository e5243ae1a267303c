/* SPDX-License-Identifier: Apache-2.0 */
/* Logging to stderr with the sd-daemon "<N>" level prefix that journald understands, as JSON
 * lines (log.format = json), or to the journal with structured fields (journal; auto picks it
 * when stderr is the journal's stream). Each .c file that logs defines LOG_MODULE before
 * including this header. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/cleanup.h"

enum {
        LOG_LEVEL_ERROR = 3,
        LOG_LEVEL_WARNING = 4,
        LOG_LEVEL_NOTICE = 5,
        LOG_LEVEL_INFO = 6,
        LOG_LEVEL_DEBUG = 7,
};

typedef enum LogFormat {
        LOG_FORMAT_AUTO, /* journal when stderr is connected to the journal, else text */
        LOG_FORMAT_TEXT,
        LOG_FORMAT_JSON,
        LOG_FORMAT_JOURNAL,
} LogFormat;

/* The process-wide threshold: messages above it are dropped. */
extern int log_max_level;

/* Parses "error", "warning", "notice", "info" or "debug". Returns the level or -EINVAL. */
int log_level_from_string(const char *s);
/* Parses "auto", "text", "json" or "journal". Returns a LogFormat or -EINVAL. */
int log_format_from_string(const char *s);
/* Sets the output format of every later message (LOG_FORMAT_AUTO is resolved here, from
 * $JOURNAL_STREAM and stderr). Loop thread, before other threads log. */
void log_set_format(LogFormat format);
/* The format in effect (never LOG_FORMAT_AUTO). */
LogFormat log_get_format(void);

/* One structured field of a message: JSON members and journal fields ICECOMMIT_<NAME> (name
 * upper-cased, '-' as '_'). The text format shows only the message, which says the same. */
typedef struct LogField {
        const char *name;
        const char *str; /* NULL shows as "" */
        int64_t number;
        bool is_number;
} LogField;

#define LOG_FIELD_STR(n, v) ((LogField){ .name = (n), .str = (v) })
#define LOG_FIELD_I64(n, v) ((LogField){ .name = (n), .number = (v), .is_number = true })

void log_emit(int level, const char *module, const char *fmt, ...) _printf_(3, 4);
void log_emit_fields(int level, const char *module, const LogField *fields, size_t n_fields,
                     const char *fmt, ...) _printf_(5, 6);

#ifndef LOG_MODULE
#define LOG_MODULE "icecommitd"
#endif

#define log_at(level, ...)                                                                         \
        do {                                                                                       \
                if ((level) <= log_max_level)                                                      \
                        log_emit((level), LOG_MODULE, __VA_ARGS__);                                \
        } while (0)

/* A message with fields: log_fields(LOG_LEVEL_INFO, fields, n_fields, fmt, ...). */
#define log_fields(level, fields, n_fields, ...)                                                   \
        do {                                                                                       \
                if ((level) <= log_max_level)                                                      \
                        log_emit_fields((level), LOG_MODULE, (fields), (n_fields), __VA_ARGS__);   \
        } while (0)

#define log_error(...) log_at(LOG_LEVEL_ERROR, __VA_ARGS__)
#define log_warning(...) log_at(LOG_LEVEL_WARNING, __VA_ARGS__)
#define log_notice(...) log_at(LOG_LEVEL_NOTICE, __VA_ARGS__)
#define log_info(...) log_at(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LEVEL_DEBUG, __VA_ARGS__)
