/* SPDX-License-Identifier: Apache-2.0 */
/* The logger: one record per message, "<level>module: text" on stderr with one write(2), a JSON
 * line on stderr, or one journal entry with structured fields (sd_journal_sendv). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"

int log_max_level = LOG_LEVEL_INFO;
static LogFormat log_format = LOG_FORMAT_TEXT;

#define LOG_MESSAGE_MAX 2048
#define LOG_RECORD_MAX 16384
#define LOG_MAX_FIELDS 16

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

int log_format_from_string(const char *s) {
        static const char *const names[] = {
                [LOG_FORMAT_AUTO] = "auto",
                [LOG_FORMAT_TEXT] = "text",
                [LOG_FORMAT_JSON] = "json",
                [LOG_FORMAT_JOURNAL] = "journal",
        };

        for (size_t i = 0; s && i < ELEMENTSOF(names); i++)
                if (strcmp(s, names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}

/* systemd sets $JOURNAL_STREAM to "DEV:INODE" of the stream it connected stderr to: only when
 * stderr is still that stream do the journal's own fields replace the text (systemd.exec(5)). */
static bool log_stderr_is_journal(void) {
        const char *v = getenv("JOURNAL_STREAM");
        char expected[64];
        struct stat st;

        if (!v || fstat(STDERR_FILENO, &st) < 0)
                return false;
        (void)snprintf(expected, sizeof(expected), "%llu:%llu", (unsigned long long)st.st_dev,
                       (unsigned long long)st.st_ino);
        return strcmp(v, expected) == 0;
}

void log_set_format(LogFormat format) {
        if (format == LOG_FORMAT_AUTO)
                format = log_stderr_is_journal() ? LOG_FORMAT_JOURNAL : LOG_FORMAT_TEXT;
        log_format = format;
}

LogFormat log_get_format(void) {
        return log_format;
}

static void log_write_text(int level, const char *module, const char *msg, size_t msg_len) {
        char line[LOG_MESSAGE_MAX + 64];
        int n;

        n = snprintf(line, sizeof(line), "<%d>%s: ", level, module);
        if (n < 0 || (size_t)n >= sizeof(line))
                return;
        /* Long messages are cut, never split: a log line is one record. */
        if (msg_len > sizeof(line) - (size_t)n - 1)
                msg_len = sizeof(line) - (size_t)n - 1;
        memcpy(line + n, msg, msg_len);
        n += (int)msg_len;
        line[n++] = '\n';
        (void)!write(STDERR_FILENO, line, (size_t)n);
}

/* A JSON record under construction: a member that does not fit before the reserve that closes
 * the record is left out (a string value is cut instead), and so is everything after it, so
 * that a cut record still parses. */
typedef struct LogRecord {
        char buf[LOG_RECORD_MAX];
        size_t len;
        bool is_full;
} LogRecord;

#define LOG_RECORD_RESERVE 8 /* '"', '}', '\n' and slack */

static bool log_record_raw(LogRecord *r, const char *s, size_t n) {
        if (r->is_full || n > sizeof(r->buf) - LOG_RECORD_RESERVE - r->len) {
                r->is_full = true;
                return false;
        }
        memcpy(r->buf + r->len, s, n);
        r->len += n;
        return true;
}

/* RFC 8259 string contents: quote, backslash and control characters escaped; other bytes as
 * they are (messages are UTF-8: names the writer API checked). Returns false when it had to
 * cut, at a UTF-8 character boundary. */
static bool log_record_escaped(LogRecord *r, const char *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                char esc[8];
                size_t k;

                if (c == '"' || c == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char)c;
                        k = 2;
                } else if (c == '\n' || c == '\t' || c == '\r') {
                        esc[0] = '\\';
                        esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
                        k = 2;
                } else if (c < 0x20) {
                        (void)snprintf(esc, sizeof(esc), "\\u%04x", c);
                        k = 6;
                } else {
                        esc[0] = (char)c;
                        k = 1;
                }
                if (!log_record_raw(r, esc, k)) {
                        while (r->len > 0 && ((unsigned char)r->buf[r->len - 1] & 0xc0) == 0x80)
                                r->len--;
                        if (r->len > 0 && (unsigned char)r->buf[r->len - 1] >= 0xc0)
                                r->len--;
                        return false;
                }
        }
        return true;
}

/* ,"key": -- all of it or nothing. */
static bool log_record_key(LogRecord *r, const char *key) {
        size_t start = r->len;

        if (log_record_raw(r, ",\"", 2) && log_record_escaped(r, key, strlen(key)) &&
            log_record_raw(r, "\":", 2))
                return true;
        r->len = start;
        r->is_full = true;
        return false;
}

static void log_record_str(LogRecord *r, const char *key, const char *value, size_t n) {
        if (!log_record_key(r, key))
                return;
        if (!log_record_raw(r, "\"", 1)) {
                /* The reserve has room for a value: an empty one. */
                r->buf[r->len++] = '"';
                r->buf[r->len++] = '"';
                return;
        }
        (void)log_record_escaped(r, value, n);
        /* The reserve always has room for the closing quote. */
        r->buf[r->len++] = '"';
}

static void log_record_number(LogRecord *r, const char *key, int64_t value) {
        size_t start = r->len;
        char number[32];
        int n;

        n = snprintf(number, sizeof(number), "%lld", (long long)value);
        if (!log_record_key(r, key))
                return;
        if (n <= 0 || !log_record_raw(r, number, (size_t)n))
                r->len = start;
}

static void log_write_json(int level, const char *module, const LogField *fields, size_t n_fields,
                           const char *msg, size_t msg_len) {
        static const char *const level_names[] = {
                [LOG_LEVEL_ERROR] = "error",   [LOG_LEVEL_WARNING] = "warning",
                [LOG_LEVEL_NOTICE] = "notice", [LOG_LEVEL_INFO] = "info",
                [LOG_LEVEL_DEBUG] = "debug",
        };
        LogRecord *r = malloc(sizeof(*r));
        struct timespec ts;
        struct tm tm;
        char head[128];
        int n;

        if (!r) {
                log_write_text(level, module, msg, msg_len);
                return;
        }
        r->len = 0;
        r->is_full = false;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(head, sizeof(head),
                     "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\"",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000,
                     level >= LOG_LEVEL_ERROR && level <= LOG_LEVEL_DEBUG ? level_names[level]
                                                                          : "info");
        if (n <= 0 || (size_t)n >= sizeof(head) || !log_record_raw(r, head, (size_t)n)) {
                free(r);
                return;
        }
        log_record_str(r, "module", module, strlen(module));
        log_record_str(r, "message", msg, msg_len);
        for (size_t i = 0; i < n_fields; i++) {
                const char *v = fields[i].str ? fields[i].str : "";

                if (fields[i].is_number)
                        log_record_number(r, fields[i].name, fields[i].number);
                else
                        log_record_str(r, fields[i].name, v, strlen(v));
        }
        r->buf[r->len++] = '}';
        r->buf[r->len++] = '\n';
        (void)!write(STDERR_FILENO, r->buf, r->len);
        free(r);
}

/* "ICECOMMIT_SNAPSHOT_ID=": journal field names are upper-case letters, digits and '_'. */
static size_t log_journal_name(char *out, size_t size, const char *name) {
        int n = snprintf(out, size, "ICECOMMIT_");
        size_t len = n > 0 ? (size_t)n : 0;

        for (const char *p = name; *p && len + 2 < size; p++)
                out[len++] = *p >= 'a' && *p <= 'z' ? (char)(*p - 32)
                             : (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p
                                                                                    : '_';
        out[len++] = '=';
        out[len] = '\0';
        return len;
}

static int log_write_journal(int level, const char *module, const LogField *fields, size_t n_fields,
                             const char *msg, size_t msg_len) {
        char priority[16], mod[96], message[LOG_MESSAGE_MAX + 16];
        char names[LOG_MAX_FIELDS][64], numbers[LOG_MAX_FIELDS][32];
        struct iovec iov[4 + 2 * LOG_MAX_FIELDS];
        size_t n_iov = 0;
        int n;

        n = snprintf(priority, sizeof(priority), "PRIORITY=%d", level);
        iov[n_iov++] = (struct iovec){ priority, (size_t)n };
        n = snprintf(mod, sizeof(mod), "ICECOMMIT_MODULE=%s", module);
        iov[n_iov++] = (struct iovec){ mod, n > 0 && (size_t)n < sizeof(mod) ? (size_t)n : 0 };
        n = snprintf(message, sizeof(message), "MESSAGE=%.*s", (int)msg_len, msg);
        iov[n_iov++] =
                (struct iovec){ message, n > 0 && (size_t)n < sizeof(message) ? (size_t)n : 0 };
        iov[n_iov++] = (struct iovec){ (char *)"SYSLOG_IDENTIFIER=icecommitd",
                                       strlen("SYSLOG_IDENTIFIER=icecommitd") };
        /* sd_journal_sendv takes each field as one NAME=value iovec. */
        for (size_t i = 0; i < n_fields && i < LOG_MAX_FIELDS; i++) {
                const char *value = fields[i].str ? fields[i].str : "";
                size_t name_len = log_journal_name(names[i], sizeof(names[i]), fields[i].name);
                size_t value_len;
                char *entry;

                if (fields[i].is_number) {
                        (void)snprintf(numbers[i], sizeof(numbers[i]), "%lld",
                                       (long long)fields[i].number);
                        value = numbers[i];
                }
                value_len = strlen(value);
                entry = malloc(name_len + value_len);
                if (!entry)
                        continue;
                memcpy(entry, names[i], name_len);
                memcpy(entry + name_len, value, value_len);
                iov[n_iov++] = (struct iovec){ entry, name_len + value_len };
        }
        n = sd_journal_sendv(iov, (int)n_iov);
        for (size_t i = 4; i < n_iov; i++)
                free(iov[i].iov_base);
        return n;
}

static void log_vemit(int level, const char *module, const LogField *fields, size_t n_fields,
                      const char *fmt, va_list ap) {
        char msg[LOG_MESSAGE_MAX];
        size_t len;
        int m;

        m = vsnprintf(msg, sizeof(msg), fmt, ap);
        if (m < 0)
                return;
        len = (size_t)m < sizeof(msg) ? (size_t)m : sizeof(msg) - 1;
        switch (log_format) {
        case LOG_FORMAT_JSON:
                log_write_json(level, module, fields, n_fields, msg, len);
                break;
        case LOG_FORMAT_JOURNAL:
                /* The journal gone (or refusing): the text on stderr still reaches someone. */
                if (log_write_journal(level, module, fields, n_fields, msg, len) >= 0)
                        break;
                log_write_text(level, module, msg, len);
                break;
        default:
                log_write_text(level, module, msg, len);
                break;
        }
}

void log_emit(int level, const char *module, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_vemit(level, module, NULL, 0, fmt, ap);
        va_end(ap);
}

void log_emit_fields(int level, const char *module, const LogField *fields, size_t n_fields,
                     const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        log_vemit(level, module, fields, n_fields, fmt, ap);
        va_end(ap);
}
