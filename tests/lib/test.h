/* SPDX-License-Identifier: Apache-2.0 */
/* Tiny test harness: ASSERT_* print both sides and abort the test binary on failure; TEST()
 * registers a case, test_main() runs them all (or those named on the command line). */
#pragma once

#undef NDEBUG
#include <assert.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

typedef void (*TestFunc)(void);

void test_register(const char *name, TestFunc func);
int test_main(int argc, char **argv);
/* Parses a test's JSON literal; fails the test (naming jansson's reason) when it is not JSON. */
json_t *test_json(const char *text);
/* Reads a file under the source tree (ICECOMMIT_SOURCE_ROOT) into a NUL-terminated buffer. */
char *test_read_source_file(const char *relative_path, size_t *ret_len);

#define TEST(name)                                                                                 \
        static void test_##name(void);                                                             \
        __attribute__((constructor)) static void test_register_##name(void) {                      \
                test_register(#name, test_##name);                                                 \
        }                                                                                          \
        static void test_##name(void)

#define TEST_FAIL(...)                                                                             \
        do {                                                                                       \
                fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
                fprintf(stderr, __VA_ARGS__);                                                      \
                fputc('\n', stderr);                                                               \
                abort();                                                                           \
        } while (0)

#define ASSERT_TRUE(x)                                                                             \
        do {                                                                                       \
                if (!(x))                                                                          \
                        TEST_FAIL("ASSERT_TRUE(%s) failed", #x);                                   \
        } while (0)

#define ASSERT_EQ(a, b)                                                                            \
        do {                                                                                       \
                int64_t _a = (int64_t)(a), _b = (int64_t)(b);                                      \
                if (_a != _b)                                                                      \
                        TEST_FAIL("ASSERT_EQ(%s, %s) failed: %" PRId64 " != %" PRId64, #a, #b, _a, \
                                  _b);                                                             \
        } while (0)

#define ASSERT_OK(x)                                                                               \
        do {                                                                                       \
                int64_t _r = (int64_t)(x);                                                         \
                if (_r < 0)                                                                        \
                        TEST_FAIL("ASSERT_OK(%s) failed: %" PRId64 " (%s)", #x, _r,                \
                                  strerror((int)-_r));                                             \
        } while (0)

#define ASSERT_STREQ(a, b)                                                                         \
        do {                                                                                       \
                const char *_a = (a), *_b = (b);                                                   \
                if (!_a || !_b || strcmp(_a, _b) != 0)                                             \
                        TEST_FAIL("ASSERT_STREQ(%s, %s) failed: \"%s\" != \"%s\"", #a, #b,         \
                                  _a ? _a : "(null)", _b ? _b : "(null)");                         \
        } while (0)

#define ASSERT_CONTAINS(haystack, needle)                                                          \
        do {                                                                                       \
                const char *_h = (haystack), *_n = (needle);                                       \
                if (!_h || !strstr(_h, _n))                                                        \
                        TEST_FAIL("ASSERT_CONTAINS(%s, %s) failed: \"%s\" lacks \"%s\"",           \
                                  #haystack, #needle, _h ? _h : "(null)", _n);                     \
        } while (0)
