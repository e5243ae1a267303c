/* SPDX-License-Identifier: Apache-2.0 */
/* Iceberg primitive types and single values (spec Appendix D): a type from schema JSON, a value
 * from its JSON single-value form ("2024-01-31", "12.50", 42...) into its binary single-value
 * serialization (little-endian numbers, UTF-8, big-endian decimals and UUIDs). Pure. */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

typedef enum IcebergTypeId {
        ICEBERG_TYPE_BOOLEAN,
        ICEBERG_TYPE_INT,
        ICEBERG_TYPE_LONG,
        ICEBERG_TYPE_FLOAT,
        ICEBERG_TYPE_DOUBLE,
        ICEBERG_TYPE_DATE,
        ICEBERG_TYPE_TIME,
        ICEBERG_TYPE_TIMESTAMP,
        ICEBERG_TYPE_TIMESTAMPTZ,
        ICEBERG_TYPE_TIMESTAMP_NS,
        ICEBERG_TYPE_TIMESTAMPTZ_NS,
        ICEBERG_TYPE_STRING,
        ICEBERG_TYPE_UUID,
        ICEBERG_TYPE_FIXED,
        ICEBERG_TYPE_BINARY,
        ICEBERG_TYPE_DECIMAL,
} IcebergTypeId;

typedef struct IcebergType {
        IcebergTypeId id;
        int length;    /* fixed[L] */
        int precision; /* decimal(P, S) */
        int scale;
} IcebergType;

/* Longest type name iceberg_type_name() writes ("decimal(38, 38)", "timestamptz_ns"...). */
#define ICEBERG_TYPE_NAME_MAX 32

/* Reads a primitive type from schema JSON ("int", "decimal(9,2)", "fixed[16]"). Returns 0,
 * -EOPNOTSUPP for nested and other types (struct, list, map, variant, geometry...) with the
 * reason in *e. */
int iceberg_type_parse(const json_t *type, IcebergType *ret, Error *e);
/* The type's name as the schema spells it, into buf. Returns buf. */
const char *iceberg_type_name(const IcebergType *t, char buf[static ICEBERG_TYPE_NAME_MAX]);

/* Converts a JSON single value of type `t` (not null) into its binary single-value
 * serialization, appended to *out. Returns 0, -EINVAL with the rule in *e ("expected a date
 * string 'YYYY-MM-DD'"), -ENOMEM. Timestamps with a zone must be UTC ("+00:00"), decimals
 * must have exactly the type's scale, as Java's SingleValueParser requires. */
int single_value_from_json(const IcebergType *t, const json_t *value, Buf *out, Error *e);

/* Converts Iceberg Java's encoding of a bound (ContentFileParser writes lower_bounds and
 * upper_bounds as map<int, binary>, so SingleValueParser gives each value as the base-16 text of
 * its binary single value, "0A000000" for the int 10) into that binary value, appended to *out.
 * The bytes are checked as strictly as the JSON form: the type's size, booleans 0 or 1, times
 * within a day, floats not NaN, strings valid UTF-8, decimals within the type's precision
 * (re-encoded in the fewest bytes). Returns 0, -EINVAL with the rule in *e, -ENOMEM. */
int single_value_from_hex(const IcebergType *t, const json_t *value, Buf *out, Error *e);

/* Days since 1970-01-01 of a proleptic Gregorian date. */
int64_t single_value_days_from_civil(int64_t year, unsigned month, unsigned day);
