/* SPDX-License-Identifier: Apache-2.0 */
/* util/: bounded buffers, strict parsing, checked arithmetic, error messages. */
#include <errno.h>
#include <limits.h>

#include "test.h"
#include "util/buf.h"
#include "util/checked.h"
#include "util/error.h"
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
