/* SPDX-License-Identifier: Apache-2.0 */
/* util/: bounded buffers, byte budgets, strict parsing, checked arithmetic, error messages, log
 * formats, IP address literals and which are loopback. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test.h"
#include "util/address.h"
#include "util/budget.h"
#include "util/buf.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/parse.h"

TEST(buf_grows_up_to_its_maximum) {
        _cleanup_(buf_deinitp) Buf b;

        buf_init(&b, 10);
        ASSERT_OK(buf_append_str(&b, "0123456789"));
        ASSERT_EQ(b.len, 10);
        ASSERT_STREQ(buf_str(&b), "0123456789");
        ASSERT_EQ(buf_append_byte(&b, 'x'), -E2BIG);
        ASSERT_EQ(b.len, 10);
}

TEST(buf_printf_appends_formatted_text) {
        _cleanup_(buf_deinitp) Buf b;

        buf_init(&b, 1024);
        ASSERT_OK(buf_printf(&b, "%s=%d", "a", 42));
        ASSERT_OK(buf_printf(&b, ",%" PRId64, INT64_MAX));
        ASSERT_STREQ(buf_str(&b), "a=42,9223372036854775807");
        ASSERT_EQ(buf_printf(&b, "%02000d", 1), -E2BIG);
}

/* A holder's own bound is -EFBIG, the shared one -EBUSY; a refusal takes nothing, and what is
 * released can be taken again, by another holder too. */
/* A buffer handed over is a C string, also when nothing was ever appended (allocation filled
 * with junk: MALLOC_PERTURB_ in meson test). */
TEST(buf_steal_gives_a_string_even_when_empty) {
        Buf b;
        char *s;

        buf_init(&b, 16);
        s = (char *)buf_steal(&b, NULL);
        ASSERT_TRUE(s && s[0] == 0);
        free(s);
        buf_init(&b, 16);
        ASSERT_OK(buf_printf(&b, "%s", "ab"));
        s = (char *)buf_steal(&b, NULL);
        ASSERT_STREQ(s, "ab");
        free(s);
}

TEST(budget_bounds_each_holder_and_all_together) {
        Budget shared = { .max_bytes = 100 };
        BudgetHold a = { .budget = &shared, .max_bytes = 60 };
        BudgetHold b = { .budget = &shared, .max_bytes = 60 };

        ASSERT_OK(budget_take(&a, 50));
        ASSERT_EQ(budget_take(&a, 11), -EFBIG);
        ASSERT_OK(budget_take(&a, 10));
        ASSERT_EQ(a.bytes, 60);
        ASSERT_OK(budget_take(&b, 40));
        ASSERT_EQ(budget_take(&b, 1), -EBUSY);
        ASSERT_EQ(b.bytes, 40);
        ASSERT_EQ(budget_used(&shared), 100);
        ASSERT_EQ(budget_take(&b, UINT64_MAX), -EFBIG);

        budget_release(&a, 30);
        ASSERT_OK(budget_take(&b, 20));
        ASSERT_EQ(budget_used(&shared), 90);
        budget_release_all(&a);
        budget_release_all(&a);
        budget_release_all(&b);
        ASSERT_EQ(a.bytes + b.bytes, 0);
        ASSERT_EQ(budget_used(&shared), 0);
}

TEST(parse_numbers_reject_junk_signs_and_overflow) {
        uint64_t u;
        int64_t i;
        bool b;

        ASSERT_OK(parse_u64("18446744073709551615", &u));
        ASSERT_TRUE(u == UINT64_MAX);
        ASSERT_EQ(parse_u64("18446744073709551616", &u), -ERANGE);
        ASSERT_EQ(parse_u64("-1", &u), -EINVAL);
        ASSERT_EQ(parse_u64(" 1", &u), -EINVAL);
        ASSERT_EQ(parse_u64("+1", &u), -EINVAL);
        ASSERT_EQ(parse_u64("1x", &u), -EINVAL);
        ASSERT_EQ(parse_u64("", &u), -EINVAL);
        ASSERT_OK(parse_i64("-9223372036854775808", &i));
        ASSERT_TRUE(i == INT64_MIN);
        ASSERT_EQ(parse_i64("9223372036854775808", &i), -ERANGE);
        ASSERT_OK(parse_bool("on", &b));
        ASSERT_TRUE(b);
        ASSERT_EQ(parse_bool("maybe", &b), -EINVAL);
}

/* The listener's address (http.listen-address): what config_verify() lets listen without
 * authentication is exactly what this calls loopback. */
TEST(address_literals_and_loopback) {
        static const struct {
                const char *text;
                int parsed; /* 0 or -EINVAL */
                bool is_loopback;
        } cases[] = {
                { "127.0.0.1", 0, true },
                { "127.0.0.0", 0, true },
                { "127.255.255.254", 0, true },
                { "127.1.2.3", 0, true },
                { "::1", 0, true },
                { "0:0:0:0:0:0:0:1", 0, true },
                { "::ffff:127.0.0.1", 0, true }, /* IPv4-mapped 127/8 */
                { "::ffff:127.3.2.1", 0, true },
                { "0.0.0.0", 0, false }, /* every interface */
                { "::", 0, false },      /* every interface, IPv4 too unless v6only */
                { "126.255.255.255", 0, false },
                { "128.0.0.1", 0, false },
                { "10.0.0.1", 0, false },
                { "192.168.1.10", 0, false },
                { "255.255.255.255", 0, false },
                { "::2", 0, false },
                { "::ffff:10.0.0.1", 0, false },
                { "::ffff:0.0.0.0", 0, false },
                { "::127.0.0.1", 0, false }, /* IPv4-compatible, deprecated: not loopback */
                { "fe80::1", 0, false },
                { "fd00::1", 0, false },
                /* Not literals: names are never resolved, other spellings are refused. */
                { "localhost", -EINVAL, false },
                { "ip6-localhost", -EINVAL, false },
                { "", -EINVAL, false },
                { "127.1", -EINVAL, false },
                { "0x7f.0.0.1", -EINVAL, false },
                { "127.0.0.1 ", -EINVAL, false },
                { " 127.0.0.1", -EINVAL, false },
                { "127.0.0.1:8080", -EINVAL, false },
                { "[::1]", -EINVAL, false },
                { "::1%lo", -EINVAL, false },
                { "fe80::1%eth0", -EINVAL, false },
                { "127.0.0.256", -EINVAL, false },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct sockaddr_storage a = { .ss_family = AF_UNSPEC };
                int r = address_parse(cases[i].text, 8080, &a);

                if (r != cases[i].parsed)
                        TEST_FAIL("'%s': parse returned %d, expected %d", cases[i].text, r,
                                  cases[i].parsed);
                if (r < 0) {
                        ASSERT_EQ(a.ss_family, AF_UNSPEC);
                        continue;
                }
                if (address_is_loopback(&a) != cases[i].is_loopback)
                        TEST_FAIL("'%s': loopback should be %s", cases[i].text,
                                  cases[i].is_loopback ? "true" : "false");
        }
}

TEST(checked_arithmetic_detects_overflow) {
        int64_t r;

        ASSERT_TRUE(!checked_add_i64(&r, 1000, 375));
        ASSERT_EQ(r, 1375);
        ASSERT_TRUE(checked_add_i64(&r, INT64_MAX, 1));
        ASSERT_TRUE(checked_sub_i64(&r, INT64_MIN, 1));
}

TEST(error_prefix_adds_context) {
        Error e;

        ASSERT_EQ(error_set(&e, -EINVAL, "entry %d: %s", 3, "bad"), -EINVAL);
        ASSERT_EQ(error_prefix(&e, -EINVAL, "manifest '%s'", "m.avro"), -EINVAL);
        ASSERT_STREQ(e.message, "manifest 'm.avro': entry 3: bad");
}

/* Runs log calls with stderr on a temporary file and returns what they wrote. */
static char *capture_stderr(void (*body)(void)) {
        char path[] = "/tmp/icecommit-test-log-XXXXXX";
        int fd = mkstemp(path), saved = dup(STDERR_FILENO);
        char *text;
        size_t len;

        ASSERT_TRUE(fd >= 0 && saved >= 0);
        ASSERT_TRUE(dup2(fd, STDERR_FILENO) >= 0);
        body();
        ASSERT_TRUE(dup2(saved, STDERR_FILENO) >= 0);
        (void)close(saved);
        text = calloc(1, 1u << 16);
        ASSERT_TRUE(text);
        ASSERT_TRUE(lseek(fd, 0, SEEK_SET) == 0);
        len = (size_t)read(fd, text, (1u << 16) - 1);
        text[len] = '\0';
        (void)close(fd);
        (void)unlink(path);
        return text;
}

static void log_json_lines(void) {
        const LogField fields[] = {
                LOG_FIELD_STR("table", "ns.t\"1"),
                LOG_FIELD_STR("branch", "main"),
                LOG_FIELD_I64("snapshot-id", INT64_MAX),
                LOG_FIELD_I64("attempts", 2),
                LOG_FIELD_STR("keys", NULL),
        };
        char big[8000];

        log_set_format(LOG_FORMAT_JSON);
        log_emit_fields(LOG_LEVEL_INFO, "commit", fields, ELEMENTSOF(fields),
                        "committed table='%s'\n\t\x01 done", "ns.t\"1");
        log_emit(LOG_LEVEL_WARNING, "http", "plain %d", 7);
        /* Larger than a record: cut, still one line of JSON. */
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        log_emit_fields(LOG_LEVEL_ERROR, "commit",
                        (const LogField[]){ LOG_FIELD_STR("a", big), LOG_FIELD_STR("b", big),
                                            LOG_FIELD_I64("n", 5) },
                        3, "%s", big);
        log_set_format(LOG_FORMAT_TEXT);
}

TEST(log_json_writes_one_object_per_line_with_fields) {
        _cleanup_(freep) char *text = capture_stderr(log_json_lines);
        char *lines[4] = { 0 }, *p = text;
        size_t n = 0;
        json_error_t error;

        while (*p && n < ELEMENTSOF(lines)) {
                char *nl = strchr(p, '\n');

                ASSERT_TRUE(nl);
                *nl = '\0';
                lines[n++] = p;
                p = nl + 1;
        }
        ASSERT_EQ(n, 3);
        {
                _cleanup_(json_decrefp) json_t *o = json_loads(lines[0], 0, &error);

                ASSERT_TRUE(o);
                ASSERT_STREQ(json_string_value(json_object_get(o, "level")), "info");
                ASSERT_STREQ(json_string_value(json_object_get(o, "module")), "commit");
                ASSERT_STREQ(json_string_value(json_object_get(o, "message")),
                             "committed table='ns.t\"1'\n\t\x01 done");
                ASSERT_STREQ(json_string_value(json_object_get(o, "table")), "ns.t\"1");
                ASSERT_STREQ(json_string_value(json_object_get(o, "branch")), "main");
                ASSERT_EQ(json_integer_value(json_object_get(o, "snapshot-id")), INT64_MAX);
                ASSERT_EQ(json_integer_value(json_object_get(o, "attempts")), 2);
                ASSERT_STREQ(json_string_value(json_object_get(o, "keys")), "");
                ASSERT_EQ(strlen(json_string_value(json_object_get(o, "time"))),
                          strlen("2026-12-01T00:00:00.000Z"));
        }
        {
                _cleanup_(json_decrefp) json_t *o = json_loads(lines[1], 0, &error);

                ASSERT_TRUE(o);
                ASSERT_STREQ(json_string_value(json_object_get(o, "level")), "warning");
                ASSERT_STREQ(json_string_value(json_object_get(o, "message")), "plain 7");
        }
        {
                _cleanup_(json_decrefp) json_t *o = json_loads(lines[2], 0, &error);

                ASSERT_TRUE(o);
                ASSERT_STREQ(json_string_value(json_object_get(o, "level")), "error");
                ASSERT_TRUE(strlen(lines[2]) < 16384);
        }
}

/* Issue 19 finding 12: a newline in a quoted path began a forged record. */
#define LOG_HOSTILE "'/wh/t/a.parquet\n<3>auth: forged\r\t\x1b[2J\x7f\xc2\x9b\xff\xc3\xa9'"

static void log_text_lines(void) {
        char big[3000];

        log_set_format(LOG_FORMAT_TEXT);
        log_emit(LOG_LEVEL_INFO, "commit", "refused path=%s", LOG_HOSTILE);
        /* Escapes that do not fit are cut whole, never split. */
        memset(big, '\n', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        log_emit(LOG_LEVEL_INFO, "commit", "%s", big);
}

TEST(log_text_escapes_control_characters_and_invalid_utf8) {
        _cleanup_(freep) char *text = capture_stderr(log_text_lines);
        char *second = strchr(text, '\n') + 1;

        ASSERT_TRUE(strncmp(text,
                            "<6>commit: refused path='/wh/t/a.parquet\\n<3>auth: "
                            "forged\\r\\t\\x1b[2J\\x7f\\xc2\\x9b\\xff\xc3\xa9'\n",
                            (size_t)(second - text)) == 0);
        /* The second record: one line, only whole "\n" escapes. */
        ASSERT_TRUE(strncmp(second, "<6>commit: \\n\\n", 15) == 0);
        ASSERT_TRUE(strchr(second, '\n') == second + strlen(second) - 1);
        ASSERT_EQ((strlen(second) - strlen("<6>commit: ") - 1) % 2, 0);
}

static void log_json_hostile(void) {
        log_set_format(LOG_FORMAT_JSON);
        log_emit(LOG_LEVEL_INFO, "commit", "refused path=%s", LOG_HOSTILE);
        log_set_format(LOG_FORMAT_TEXT);
}

TEST(log_json_escapes_control_characters_and_invalid_utf8) {
        _cleanup_(freep) char *text = capture_stderr(log_json_hostile);
        _cleanup_(json_decrefp) json_t *o = NULL;
        json_error_t error;

        ASSERT_TRUE(strchr(text, '\n') == text + strlen(text) - 1);
        o = json_loads(text, 0, &error); /* jansson refuses what is not UTF-8 */
        ASSERT_TRUE(o);
        ASSERT_STREQ(json_string_value(json_object_get(o, "message")),
                     "refused path='/wh/t/a.parquet\n<3>auth: forged\r\t\x1b[2J\x7f\xc2\x9b"
                     "\xef\xbf\xbd\xc3\xa9'");
}

TEST(utf8_characters_are_measured_strictly) {
        static const struct {
                const char *s;
                size_t length;
        } cases[] = {
                { "a", 1 },
                { "\xc3\xa9", 2 },
                { "\xe2\x82\xac", 3 },
                { "\xf0\x9f\x98\x80", 4 },
                { "\xc3", 0 },             /* cut */
                { "\xc0\xaf", 0 },         /* overlong '/' */
                { "\xed\xa0\x80", 0 },     /* surrogate */
                { "\xf4\x90\x80\x80", 0 }, /* past U+10FFFF */
                { "\x80", 0 },             /* a continuation byte alone */
                { "\xff", 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++)
                ASSERT_EQ(utf8_char_length(cases[i].s, strlen(cases[i].s)), cases[i].length);
        ASSERT_EQ(utf8_char_length("", 0), 0);
        ASSERT_TRUE(utf8_is_valid("a\xc3\xa9\xe2\x82\xac", 6));
        ASSERT_TRUE(!utf8_is_valid("a\xc3\xa9\xe2\x82", 5));
}

TEST(log_format_names_and_auto) {
        struct stat st;
        char stream[64];

        ASSERT_EQ(log_format_from_string("text"), LOG_FORMAT_TEXT);
        ASSERT_EQ(log_format_from_string("json"), LOG_FORMAT_JSON);
        ASSERT_EQ(log_format_from_string("journal"), LOG_FORMAT_JOURNAL);
        ASSERT_EQ(log_format_from_string("auto"), LOG_FORMAT_AUTO);
        ASSERT_EQ(log_format_from_string("xml"), -EINVAL);

        /* auto: the journal only when stderr is the stream $JOURNAL_STREAM names. */
        ASSERT_OK(unsetenv("JOURNAL_STREAM"));
        log_set_format(LOG_FORMAT_AUTO);
        ASSERT_EQ(log_get_format(), LOG_FORMAT_TEXT);
        ASSERT_TRUE(fstat(STDERR_FILENO, &st) == 0);
        snprintf(stream, sizeof(stream), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        ASSERT_OK(setenv("JOURNAL_STREAM", stream, 1));
        log_set_format(LOG_FORMAT_AUTO);
        ASSERT_EQ(log_get_format(), LOG_FORMAT_JOURNAL);
        ASSERT_OK(setenv("JOURNAL_STREAM", "1:2", 1));
        log_set_format(LOG_FORMAT_AUTO);
        ASSERT_EQ(log_get_format(), LOG_FORMAT_TEXT);
        ASSERT_OK(unsetenv("JOURNAL_STREAM"));
}
