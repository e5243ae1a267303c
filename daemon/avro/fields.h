/* SPDX-License-Identifier: Apache-2.0 */
/* Avro record fields by field id: finds a record's fields by their "field-id" attribute in the
 * writer schema JSON (avro-c drops it), reads and sets avro-c generic values by field position
 * with unions resolved. Knows no Iceberg field: the ids come from the caller
 * (iceberg/manifest_fields.h, iceberg/manifest_list.c). Pure. */
#pragma once

#include <avro.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* One Avro record type seen both ways: as JSON (field ids, logical types) and as avro-c
 * schema (what values are built from). Both borrowed from their OCF reader or writer. */
typedef struct FieldsRecord {
        const json_t *json;
        avro_schema_t schema;
} FieldsRecord;

/* A field's type, unions with null unwrapped. */
typedef struct FieldsType {
        avro_type_t type;         /* of the non-null branch */
        const char *logical_type; /* "date", "timestamp-micros"... or NULL; borrowed */
        bool is_optional;         /* a union containing null */
} FieldsType;

/* Pairs a record's JSON with its avro-c schema, checking that both list the same fields in the
 * same order and that no field id repeats. Returns 0 or -EBADMSG with the reason. */
int fields_record_init(const json_t *json, avro_schema_t schema, FieldsRecord *ret, Error *e);
/* Position of the field with Iceberg id `field_id`, or -ENOENT when the record lacks it. */
int fields_index(const FieldsRecord *rec, int64_t field_id);
/* Name of the field at `index` (borrowed), for messages. */
const char *fields_name(const FieldsRecord *rec, int index);
/* Type of the field at `index`. Returns 0 or -EBADMSG for a union of several non-null types. */
int fields_type(const FieldsRecord *rec, int index, FieldsType *ret, Error *e);
/* The record type held by the field at `index`: directly, inside a union with null, inside an
 * array, or both. Returns 0, -EBADMSG when it is no inline record. */
int fields_record_nested(const FieldsRecord *rec, int index, FieldsRecord *ret, Error *e);

/* Getters read field `index` of a record value; index < 0 means the writer schema lacks the
 * field. Each returns 1 with the value, 0 when the field is absent or null, or -EBADMSG when
 * its type is not the expected one. Longs accept ints (Avro type promotion). Strings are
 * borrowed from the value and rejected when they contain a NUL byte or are not UTF-8. */
int fields_get_long(avro_value_t *rec, int index, int64_t *ret, Error *e);
int fields_get_int(avro_value_t *rec, int index, int32_t *ret, Error *e);
int fields_get_bool(avro_value_t *rec, int index, bool *ret, Error *e);
int fields_get_string(avro_value_t *rec, int index, const char **ret, size_t *ret_len, Error *e);
int fields_get_bytes(avro_value_t *rec, int index, const void **ret, size_t *ret_len, Error *e);
/* Any type (records, arrays): the union branch when the field is a union. */
int fields_get_value(avro_value_t *rec, int index, avro_value_t *ret, Error *e);

/* Setters fill field `index` of a record value being written, selecting the non-null union
 * branch when the field is a union. Return 0, -ENOENT for index < 0, -EINVAL for a type
 * mismatch (a bug in our schema or code), -ENOMEM. */
int fields_set_long(avro_value_t *rec, int index, int64_t v);
int fields_set_int(avro_value_t *rec, int index, int32_t v);
int fields_set_bool(avro_value_t *rec, int index, bool v);
int fields_set_string(avro_value_t *rec, int index, const char *s);
int fields_set_bytes(avro_value_t *rec, int index, const void *p, size_t len);
/* Selects the null branch; -EINVAL when the field is not optional. */
int fields_set_null(avro_value_t *rec, int index);
/* The value to fill in place (record, array), non-null branch selected. */
int fields_set_value(avro_value_t *rec, int index, avro_value_t *ret_child);

/* Whether a schema JSON type ("null" or {"type":"null"}) is Avro's null. */
bool fields_json_is_null_type(const json_t *type);
