/* SPDX-License-Identifier: Apache-2.0 */
/* The logger: one record per message, "<level>module: text" on stderr with one write(2), a JSON
 * line on stderr, or one journal entry with structured fields (sd_journal_sendv). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/utf8.h"

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

/* Copies s[0..n) into out[0..size), control characters (C0, DEL, C1) and bytes that are no
 * UTF-8 written as \n, \r, \t or \xNN: whatever a message quotes (a path a writer sent, a
 * store's answer), one log call stays one line, and a terminal showing it takes no escape
 * sequence from it (issue 19: a path with a newline forged log lines). Cuts before an escape or
 * character that does not fit whole. Returns the bytes written. */
static size_t log_escape(const char *s, size_t n, char *out, size_t size) {
        static const char hex[] = "0123456789abcdef";
        size_t len = 0;

        for (size_t i = 0, k; i < n; i += k) {
                unsigned char c = (unsigned char)s[i];
                char esc[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
                const char *from = esc;
                size_t m = 4;

                k = utf8_char_length(s + i, n - i);
                if (c == '\n' || c == '\r' || c == '\t') {
                        esc[1] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
                        m = 2;
                } else if (k == 0 || c < 0x20 || c == 0x7f ||
                           (k == 2 && c == 0xc2 && (unsigned char)s[i + 1] < 0xa0)) {
                        /* C1 controls (U+0080-U+009F) as their two bytes */
                        k = 1;
                } else {
                        from = s + i;
                        m = k;
                }
                if (m > size - len)
                        break;
                memcpy(out + len, from, m);
                len += m;
        }
        return len;
}

static void log_write_text(int level, const char *module, const char *msg, size_t msg_len) {
        char line[LOG_MESSAGE_MAX + 64];
        int n;

        n = snprintf(line, sizeof(line), "<%d>%s: ", level, module);
        if (n < 0 || (size_t)n >= sizeof(line))
                return;
        /* Long messages are cut, never split: a log line is one record. */
        n += (int)log_escape(msg, msg_len, line + n, sizeof(line) - (size_t)n - 1);
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

/* RFC 8259 string contents: quote, backslash and control characters escaped, a byte that is
 * no UTF-8 as U+FFFD (a record must be UTF-8 to parse); other characters as they are. Returns
 * false when it had to cut, at a character boundary. */
static bool log_record_escaped(LogRecord *r, const char *s, size_t n) {
        for (size_t i = 0, step; i < n; i += step) {
                unsigned char c = (unsigned char)s[i];
                const char *from;
                char esc[8];
                size_t k;

                step = c >= 0x80 ? utf8_char_length(s + i, n - i) : 1;
                if (step == 0) {
                        from = "\\ufffd";
                        k = 6;
                        step = 1;
                } else if (c == '"' || c == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char)c;
                        from = esc;
                        k = 2;
                } else if (c == '\n' || c == '\t' || c == '\r') {
                        esc[0] = '\\';
                        esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
                        from = esc;
                        k = 2;
                } else if (c < 0x20) {
                        (void)snprintf(esc, sizeof(esc), "\\u%04x", c);
                        from = esc;
                        k = 6;
                } else {
                        from = s + i;
                        k = step;
                }
                /* Whole characters or escapes only: a cut leaves valid UTF-8. */
                if (!log_record_raw(r, from, k))
                        return false;
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
        char priority[16], mod[96], message[LOG_MESSAGE_MAX + 64];
        char names[LOG_MAX_FIELDS][64], numbers[LOG_MAX_FIELDS][32];
        struct iovec iov[4 + 2 * LOG_MAX_FIELDS];
        size_t n_iov = 0;
        int n;

        n = snprintf(priority, sizeof(priority), "PRIORITY=%d", level);
        iov[n_iov++] = (struct iovec){ priority, (size_t)n };
        n = snprintf(mod, sizeof(mod), "ICECOMMIT_MODULE=%s", module);
        iov[n_iov++] = (struct iovec){ mod, n > 0 && (size_t)n < sizeof(mod) ? (size_t)n : 0 };
        memcpy(message, "MESSAGE=", 8);
        iov[n_iov++] = (struct iovec){ message, 8 + log_escape(msg, msg_len, message + 8,
                                                               sizeof(message) - 8) };
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
                /* Escaped as the message is: an escape takes at most 4 bytes per byte. */
                if (value_len > (SIZE_MAX - name_len) / 4)
                        continue;
                entry = malloc(name_len + 4 * value_len);
                if (!entry)
                        continue;
                memcpy(entry, names[i], name_len);
                iov[n_iov++] = (struct iovec){ entry, name_len + log_escape(value, value_len,
                                                                            entry + name_len,
                                                                            4 * value_len) };
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
