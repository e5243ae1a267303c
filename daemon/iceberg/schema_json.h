/* SPDX-License-Identifier: Apache-2.0 */
/* The Iceberg schema JSON Java stores in every manifest and manifest list as "iceberg.schema",
 * derived from the Avro writer schema. Pure. */
#pragma once

#include <jansson.h>

/* Converts an Avro record schema carrying Iceberg ids (field-id, element-id) into the Iceberg
 * schema JSON that Java's SchemaParser writes ({"type":"struct","schema-id":0,"fields":[...]}).
 * Returns a malloc()ed string, -EINVAL for types it does not know, -ENOMEM. */
int schema_json_from_avro(const json_t *avro_record, char **ret_json);
