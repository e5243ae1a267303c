/* SPDX-License-Identifier: Apache-2.0 */
/* Iceberg single values (see single_value.h): the JSON forms are those of the spec's Appendix D
 * and of the REST spec's PrimitiveTypeValue; the binary forms those of Appendix D "Binary
 * single-value serialization", which lower_bounds/upper_bounds (125/128) hold. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "iceberg/single_value.h"
#include "util/parse.h"
#include "util/utf8.h"

/* Decimals go up to precision 38: 127 bits. */
__extension__ typedef __int128 Int128;
__extension__ typedef unsigned __int128 UInt128;

static const struct {
        const char *name;
        IcebergTypeId id;
} simple_types[] = {
        { "boolean", ICEBERG_TYPE_BOOLEAN },
        { "int", ICEBERG_TYPE_INT },
        { "long", ICEBERG_TYPE_LONG },
        { "float", ICEBERG_TYPE_FLOAT },
        { "double", ICEBERG_TYPE_DOUBLE },
        { "date", ICEBERG_TYPE_DATE },
        { "time", ICEBERG_TYPE_TIME },
        { "timestamp", ICEBERG_TYPE_TIMESTAMP },
        { "timestamptz", ICEBERG_TYPE_TIMESTAMPTZ },
        { "timestamp_ns", ICEBERG_TYPE_TIMESTAMP_NS },
        { "timestamptz_ns", ICEBERG_TYPE_TIMESTAMPTZ_NS },
        { "string", ICEBERG_TYPE_STRING },
        { "uuid", ICEBERG_TYPE_UUID },
        { "binary", ICEBERG_TYPE_BINARY },
};

/* Reads an unsigned decimal number of 1 to 9 digits at *p, moving *p past it. */
static bool read_small_number(const char **p, long *ret) {
        long v = 0;
        int n = 0;

        while (**p >= '0' && **p <= '9' && n < 9) {
                v = v * 10 + (**p - '0');
                (*p)++;
                n++;
        }
        *ret = v;
        return n > 0;
}

static void skip_spaces(const char **p) {
        while (**p == ' ')
                (*p)++;
}

int iceberg_type_parse(const json_t *type, IcebergType *ret, Error *e) {
        const char *s = json_string_value(type);
        long a, b;

        if (!s)
                return error_set(e, -EOPNOTSUPP, "nested types have no single value");
        for (size_t i = 0; i < sizeof(simple_types) / sizeof(simple_types[0]); i++)
                if (strcmp(s, simple_types[i].name) == 0) {
                        *ret = (IcebergType){ .id = simple_types[i].id };
                        return 0;
                }
        /* Java's Types.fromPrimitiveString: "fixed[16]", "decimal(9, 2)" (spaces allowed). */
        if (strncmp(s, "fixed[", 6) == 0) {
                const char *p = s + 6;

                if (read_small_number(&p, &a) && strcmp(p, "]") == 0 && a > 0 && a <= INT32_MAX) {
                        *ret = (IcebergType){ .id = ICEBERG_TYPE_FIXED, .length = (int)a };
                        return 0;
                }
        }
        if (strncmp(s, "decimal(", 8) == 0) {
                const char *p = s + 8;

                skip_spaces(&p);
                if (read_small_number(&p, &a)) {
                        skip_spaces(&p);
                        if (*p == ',') {
                                p++;
                                skip_spaces(&p);
                                if (read_small_number(&p, &b)) {
                                        skip_spaces(&p);
                                        if (strcmp(p, ")") == 0 && a >= 1 && a <= 38 && b <= a) {
                                                *ret = (IcebergType){ .id = ICEBERG_TYPE_DECIMAL,
                                                                      .precision = (int)a,
                                                                      .scale = (int)b };
                                                return 0;
                                        }
                                }
                        }
                }
        }
        return error_set(e, -EOPNOTSUPP, "type '%s' is not supported here", s);
}

const char *iceberg_type_name(const IcebergType *t, char buf[static ICEBERG_TYPE_NAME_MAX]) {
        for (size_t i = 0; i < sizeof(simple_types) / sizeof(simple_types[0]); i++)
                if (simple_types[i].id == t->id) {
                        (void)snprintf(buf, ICEBERG_TYPE_NAME_MAX, "%s", simple_types[i].name);
                        return buf;
                }
        if (t->id == ICEBERG_TYPE_FIXED)
                (void)snprintf(buf, ICEBERG_TYPE_NAME_MAX, "fixed[%d]", t->length);
        else
                (void)snprintf(buf, ICEBERG_TYPE_NAME_MAX, "decimal(%d, %d)", t->precision,
                               t->scale);
        return buf;
}

/* Howard Hinnant's days_from_civil: exact for every proleptic Gregorian date. */
int64_t single_value_days_from_civil(int64_t year, unsigned month, unsigned day) {
        int64_t y = year - (month <= 2);
        int64_t era = (y >= 0 ? y : y - 399) / 400;
        unsigned yoe = (unsigned)(y - era * 400);
        unsigned doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
        unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

        return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly n digits at *p. */
static bool read_digits(const char **p, int n, int64_t *ret) {
        int64_t v = 0;

        for (int i = 0; i < n; i++) {
                if ((*p)[i] < '0' || (*p)[i] > '9')
                        return false;
                v = v * 10 + ((*p)[i] - '0');
        }
        *p += n;
        *ret = v;
        return true;
}

static bool is_leap(int64_t y) {
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* "YYYY-MM-DD" -> days since the epoch. */
static bool parse_date(const char **p, int64_t *ret_days) {
        static const unsigned month_days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
        int64_t y, m, d;

        if (!read_digits(p, 4, &y) || *(*p)++ != '-' || !read_digits(p, 2, &m) || *(*p)++ != '-' ||
            !read_digits(p, 2, &d))
                return false;
        if (m < 1 || m > 12 || d < 1 || d > (int64_t)month_days[m - 1] + (m == 2 && is_leap(y)))
                return false;
        *ret_days = single_value_days_from_civil(y, (unsigned)m, (unsigned)d);
        return true;
}

/* "HH:MM:SS[.fraction]" with up to `digits` fraction digits -> units of 10^-digits s. */
static bool parse_time(const char **p, int digits, int64_t *ret) {
        int64_t h, m, s, frac = 0;
        int n = 0;

        if (!read_digits(p, 2, &h) || *(*p)++ != ':' || !read_digits(p, 2, &m) || *(*p)++ != ':' ||
            !read_digits(p, 2, &s))
                return false;
        if (h > 23 || m > 59 || s > 59)
                return false;
        if (**p == '.') {
                (*p)++;
                while (**p >= '0' && **p <= '9') {
                        if (n == digits)
                                return false;
                        frac = frac * 10 + (**p - '0');
                        (*p)++;
                        n++;
                }
                if (n == 0)
                        return false;
        }
        for (; n < digits; n++)
                frac *= 10;
        *ret = frac;
        for (int i = 0; i < digits; i++) {
                h *= 10;
                m *= 10;
                s *= 10;
        }
        *ret += ((h * 60) + m) * 60 + s;
        return true;
}

static bool parse_timestamp(const char *s, int digits, bool with_zone, int64_t *ret) {
        int64_t days, t, per_day = 86400;
        const char *p = s;

        for (int i = 0; i < digits; i++)
                per_day *= 10;
        if (!parse_date(&p, &days) || *p++ != 'T' || !parse_time(&p, digits, &t))
                return false;
        /* Java's SingleValueParser accepts timestamptz values in UTC only. */
        if (with_zone &&
            (strcmp(p, "+00:00") == 0 || strcmp(p, "-00:00") == 0 || strcmp(p, "Z") == 0))
                p += strlen(p);
        if (*p)
                return false;
        *ret = days * per_day + t; /* |days| < 2^22, per_day <= 2^47: no overflow */
        return true;
}

/* Hex digits (either case, an even number of them) -> bytes appended to out. */
static int append_hex(const char *s, size_t len, Buf *out) {
        if (len % 2)
                return -EINVAL;
        for (size_t i = 0; i < len; i += 2) {
                int hi = parse_hex_digit(s[i]), lo = parse_hex_digit(s[i + 1]), r;

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                r = buf_append_byte(out, (uint8_t)(hi << 4 | lo));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int append_le(Buf *out, uint64_t v, size_t n) {
        uint8_t b[8];

        for (size_t i = 0; i < n; i++)
                b[i] = (uint8_t)(v >> (8 * i));
        return buf_append(out, b, n);
}

/* Java's BigInteger.toByteArray(): the fewest big-endian two's complement bytes that keep the
 * sign (spec: decimal, "minimum number of bytes"). */
static int append_decimal(Buf *out, Int128 v) {
        uint8_t b[16];
        size_t n = 16;

        for (int i = 15; i >= 0; i--) {
                b[i] = (uint8_t)(v & 0xff);
                v >>= 8; /* arithmetic shift: GCC and clang keep the sign */
        }
        while (n > 1 && ((b[16 - n] == 0x00 && !(b[17 - n] & 0x80)) ||
                         (b[16 - n] == 0xff && (b[17 - n] & 0x80))))
                n--;
        return buf_append(out, b + 16 - n, n);
}

/* "-123.4500" with exactly `scale` fraction digits and at most `precision` digits. */
static bool parse_decimal(const char *s, const IcebergType *t, Int128 *ret) {
        const char *p = s;
        bool negative = false, seen_point = false;
        int digits = 0, fraction = 0;
        Int128 v = 0;

        if (*p == '-') {
                negative = true;
                p++;
        }
        if (!(*p >= '0' && *p <= '9'))
                return false;
        for (; *p; p++) {
                if (*p == '.' && !seen_point && p[1]) {
                        seen_point = true;
                        continue;
                }
                if (*p < '0' || *p > '9')
                        return false;
                if (v != 0 || *p != '0')
                        digits++;
                if (digits > 38)
                        return false;
                v = v * 10 + (*p - '0');
                fraction += seen_point;
        }
        if (fraction != t->scale || digits > t->precision)
                return false;
        *ret = negative ? -v : v;
        return true;
}

/* 10^precision: decimals hold fewer digits than their precision (spec: decimal(P, S)). */
static Int128 decimal_limit(int precision) {
        Int128 limit = 1;

        for (int i = 0; i < precision; i++)
                limit *= 10;
        return limit;
}

static uint64_t read_le(const uint8_t *b, size_t n) {
        uint64_t v = 0;

        for (size_t i = 0; i < n; i++)
                v |= (uint64_t)b[i] << (8 * i);
        return v;
}

#define EXPECTED(what)                                                                             \
        error_set(e, -EINVAL, "expected %s for type %s", what, iceberg_type_name(t, name))

int single_value_from_json(const IcebergType *t, const json_t *value, Buf *out, Error *e) {
        char name[ICEBERG_TYPE_NAME_MAX];
        const char *s = json_string_value(value);
        size_t len = s ? json_string_length(value) : 0;
        json_int_t i = json_integer_value(value);
        int64_t v;
        double d;
        Int128 dec;
        int r;

        switch (t->id) {
        case ICEBERG_TYPE_BOOLEAN:
                if (!json_is_boolean(value))
                        return EXPECTED("true or false");
                return buf_append_byte(out, json_is_true(value) ? 1 : 0);
        case ICEBERG_TYPE_INT:
                if (!json_is_integer(value) || i < INT32_MIN || i > INT32_MAX)
                        return EXPECTED("an integer from -2147483648 to 2147483647");
                return append_le(out, (uint64_t)(uint32_t)(int32_t)i, 4);
        case ICEBERG_TYPE_LONG:
                if (!json_is_integer(value))
                        return EXPECTED("an integer");
                return append_le(out, (uint64_t)i, 8);
        case ICEBERG_TYPE_FLOAT:
        case ICEBERG_TYPE_DOUBLE:
                if (!json_is_number(value))
                        return EXPECTED("a number");
                d = json_number_value(value);
                if (t->id == ICEBERG_TYPE_FLOAT) {
                        float f = (float)d;
                        uint32_t bits;

                        if (!isfinite(f))
                                return EXPECTED("a number within the float range");
                        memcpy(&bits, &f, sizeof(bits));
                        return append_le(out, bits, 4);
                } else {
                        uint64_t bits;

                        memcpy(&bits, &d, sizeof(bits));
                        return append_le(out, bits, 8);
                }
        case ICEBERG_TYPE_DATE: {
                const char *p = s;

                if (!s || !parse_date(&p, &v) || *p)
                        return EXPECTED("a date string 'YYYY-MM-DD'");
                return append_le(out, (uint64_t)(uint32_t)(int32_t)v, 4);
        }
        case ICEBERG_TYPE_TIME: {
                const char *p = s;

                if (!s || !parse_time(&p, 6, &v) || *p)
                        return EXPECTED("a time string 'HH:MM:SS[.ssssss]'");
                return append_le(out, (uint64_t)v, 8);
        }
        case ICEBERG_TYPE_TIMESTAMP:
                if (!s || !parse_timestamp(s, 6, false, &v))
                        return EXPECTED("a timestamp string 'YYYY-MM-DDTHH:MM:SS[.ssssss]'");
                return append_le(out, (uint64_t)v, 8);
        case ICEBERG_TYPE_TIMESTAMPTZ:
                if (!s || !parse_timestamp(s, 6, true, &v))
                        return EXPECTED(
                                "a UTC timestamp string 'YYYY-MM-DDTHH:MM:SS[.ssssss]+00:00'");
                return append_le(out, (uint64_t)v, 8);
        case ICEBERG_TYPE_TIMESTAMP_NS:
                if (!s || !parse_timestamp(s, 9, false, &v))
                        return EXPECTED("a timestamp string 'YYYY-MM-DDTHH:MM:SS[.sssssssss]'");
                return append_le(out, (uint64_t)v, 8);
        case ICEBERG_TYPE_TIMESTAMPTZ_NS:
                if (!s || !parse_timestamp(s, 9, true, &v))
                        return EXPECTED(
                                "a UTC timestamp string 'YYYY-MM-DDTHH:MM:SS[.sssssssss]+00:00'");
                return append_le(out, (uint64_t)v, 8);
        case ICEBERG_TYPE_STRING:
                if (!s)
                        return EXPECTED("a string");
                return buf_append(out, s, len);
        case ICEBERG_TYPE_UUID:
                /* 8-4-4-4-12 hex digits -> 16 bytes, big-endian (spec: uuid). */
                if (!s || len != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
                        return EXPECTED("a UUID string 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'");
                for (size_t k = 0; k < 36; k += 2) {
                        if (k == 8 || k == 13 || k == 18 || k == 23)
                                k++;
                        r = append_hex(s + k, 2, out);
                        if (r == -EINVAL)
                                return EXPECTED(
                                        "a UUID string 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'");
                        if (r < 0)
                                return r;
                }
                return 0;
        case ICEBERG_TYPE_FIXED:
                if (!s || len != 2 * (size_t)t->length)
                        return EXPECTED("a string of hexadecimal digits, two per byte");
                r = append_hex(s, len, out);
                return r == -EINVAL ? EXPECTED("a string of hexadecimal digits, two per byte") : r;
        case ICEBERG_TYPE_BINARY:
                if (!s)
                        return EXPECTED("a string of hexadecimal digits, two per byte");
                r = append_hex(s, len, out);
                return r == -EINVAL ? EXPECTED("a string of hexadecimal digits, two per byte") : r;
        case ICEBERG_TYPE_DECIMAL:
                if (!s || strlen(s) != len || !parse_decimal(s, t, &dec))
                        return EXPECTED("a decimal string with exactly the type's scale of "
                                        "fraction digits");
                return append_decimal(out, dec);
        }
        return error_set(e, -EINVAL, "unknown type");
}

int single_value_from_hex(const IcebergType *t, const json_t *value, Buf *out, Error *e) {
        _cleanup_(buf_deinitp) Buf bytes = { 0 };
        char name[ICEBERG_TYPE_NAME_MAX];
        const char *s = json_string_value(value);
        const uint8_t *b;
        size_t n;
        uint64_t v;
        int r;

        /* The bytes go through a scratch buffer: out only ever receives a value that passed. */
        buf_init(&bytes, out->max);
        if (!s)
                return EXPECTED("a string of hexadecimal digits (a binary single value)");
        r = append_hex(s, json_string_length(value), &bytes);
        if (r == -EINVAL)
                return EXPECTED("a string of hexadecimal digits, two per byte");
        if (r == -E2BIG)
                return error_set(e, r, "value longer than %zu bytes", out->max);
        if (r < 0)
                return r;
        b = bytes.data;
        n = bytes.len;

        switch (t->id) {
        case ICEBERG_TYPE_BOOLEAN:
                if (n != 1 || b[0] > 1)
                        return EXPECTED("1 byte, 00 or 01");
                break;
        case ICEBERG_TYPE_INT:
        case ICEBERG_TYPE_DATE:
                if (n != 4)
                        return EXPECTED("4 bytes, little-endian");
                break;
        case ICEBERG_TYPE_FLOAT: {
                uint32_t bits;
                float f;

                if (n != 4)
                        return EXPECTED("4 bytes, a little-endian IEEE 754 float");
                bits = (uint32_t)read_le(b, 4);
                memcpy(&f, &bits, sizeof(f));
                /* Bounds never hold NaN (spec: NaN counts are kept apart instead). */
                if (isnan(f))
                        return EXPECTED("a float that is not NaN");
                break;
        }
        case ICEBERG_TYPE_DOUBLE: {
                double d;

                if (n != 8)
                        return EXPECTED("8 bytes, a little-endian IEEE 754 double");
                v = read_le(b, 8);
                memcpy(&d, &v, sizeof(d));
                if (isnan(d))
                        return EXPECTED("a double that is not NaN");
                break;
        }
        case ICEBERG_TYPE_TIME:
                if (n != 8)
                        return EXPECTED("8 bytes, little-endian microseconds");
                v = read_le(b, 8);
                if (v >= UINT64_C(86400000000))
                        return EXPECTED("microseconds from midnight, 0 to 86399999999");
                break;
        case ICEBERG_TYPE_LONG:
        case ICEBERG_TYPE_TIMESTAMP:
        case ICEBERG_TYPE_TIMESTAMPTZ:
        case ICEBERG_TYPE_TIMESTAMP_NS:
        case ICEBERG_TYPE_TIMESTAMPTZ_NS:
                if (n != 8)
                        return EXPECTED("8 bytes, little-endian");
                break;
        case ICEBERG_TYPE_STRING:
                if (!utf8_is_valid(b, n))
                        return EXPECTED("the bytes of a valid UTF-8 string");
                break;
        case ICEBERG_TYPE_UUID:
                if (n != 16)
                        return EXPECTED("16 bytes, big-endian");
                break;
        case ICEBERG_TYPE_FIXED:
                if (n != (size_t)t->length)
                        return EXPECTED("exactly the type's length of bytes");
                break;
        case ICEBERG_TYPE_BINARY:
                break;
        case ICEBERG_TYPE_DECIMAL: {
                Int128 dec, limit = decimal_limit(t->precision);

                /* Big-endian two's complement of the unscaled value (spec: decimal). */
                if (n < 1 || n > 16)
                        return EXPECTED("1 to 16 bytes, a big-endian two's complement");
                dec = (b[0] & 0x80) ? -1 : 0;
                for (size_t i = 0; i < n; i++)
                        dec = (Int128)(((UInt128)dec << 8) | b[i]);
                if (dec >= limit || dec <= -limit)
                        return EXPECTED("an unscaled value within the type's precision");
                return append_decimal(out, dec);
        }
        default:
                return error_set(e, -EINVAL, "unknown type");
        }
        return buf_append(out, b, n);
}
