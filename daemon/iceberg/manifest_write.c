/* SPDX-License-Identifier: Apache-2.0 */
/* Data manifests for described files (see manifest_write.h). The entry schema is Java's
 * (proto/manifest_entry_v*.avsc, taken from manifests Iceberg Java wrote); the partition
 * record r102 is built like AvroSchemaUtil.convert(spec.partitionType()): one optional field
 * per partition field, field-id = partition field id, typed by the transform's result (fixed
 * as bytes: see partition_avro_type()). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_write.h"
#include "iceberg/schema_json.h"
#include "proto_schemas.h"

/* TypeUtil.decimalRequiredBytes: the fewest bytes whose two's complement holds 10^P - 1; the
 * most digits n bytes hold is floor(log10(2^(8n-1) - 1)). */
static int decimal_required_bytes(int precision) {
        static const int max_precision[] = { 0,  2,  4,  6,  9,  11, 14, 16, 18,
                                             21, 23, 26, 28, 31, 33, 35, 38 };
        int n = 1;

        while (n < 16 && max_precision[n] < precision)
                n++;
        return n;
}

/* AvroSchemaUtil.makeCompatibleName: Avro names are [A-Za-z_][A-Za-z0-9_]*. */
static char *avro_compatible_name(const char *name) {
        size_t len = strlen(name);
        char *out = malloc(len * 4 + 1), *p = out;

        if (!out)
                return NULL;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)name[i];
                bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
                bool digit = c >= '0' && c <= '9';

                if (letter || (digit && i > 0))
                        *p++ = (char)c;
                else if (digit) {
                        *p++ = '_';
                        *p++ = (char)c;
                } else
                        p += snprintf(p, 5, "_x%02X", c);
        }
        *p = 0;
        return out;
}

/* The Avro type of a partition value (TypeToSchema.java), except for fixed[L]. Named types
 * (uuid, decimal) are defined once per schema and referred to by name afterwards, as Avro
 * requires.
 *
 * fixed[L] is declared "bytes", not Java's fixed_L: Iceberg Java 1.11 (and earlier) writes a
 * fixed partition value with a length prefix under its fixed_L schema, and its reader expects
 * that prefix (InternalReader reads Avro fixed as bytes; apache/iceberg#17501). So it cannot
 * read a fixed_L value written as the Avro spec says (it takes the first byte for a length and
 * fails further on), while spec readers (fastavro, PyIceberg) cannot read Java's. An Avro bytes
 * value is the same bytes to both, and both give it back as the fixed[L] partition value (the
 * partition type comes from the spec, the field from its field-id). */
static json_t *partition_avro_type(const IcebergType *t, json_t *defined_names) {
        char name[64];
        json_t *fixed;

        switch (t->id) {
        case ICEBERG_TYPE_BOOLEAN:
                return json_string("boolean");
        case ICEBERG_TYPE_INT:
                return json_string("int");
        case ICEBERG_TYPE_LONG:
                return json_string("long");
        case ICEBERG_TYPE_FLOAT:
                return json_string("float");
        case ICEBERG_TYPE_DOUBLE:
                return json_string("double");
        case ICEBERG_TYPE_STRING:
                return json_string("string");
        case ICEBERG_TYPE_BINARY:
        case ICEBERG_TYPE_FIXED:
                return json_string("bytes");
        case ICEBERG_TYPE_DATE:
                return json_pack("{s:s, s:s}", "type", "int", "logicalType", "date");
        case ICEBERG_TYPE_TIME:
                return json_pack("{s:s, s:s}", "type", "long", "logicalType", "time-micros");
        case ICEBERG_TYPE_TIMESTAMP:
        case ICEBERG_TYPE_TIMESTAMPTZ:
                return json_pack("{s:s, s:s, s:b}", "type", "long", "logicalType",
                                 "timestamp-micros", "adjust-to-utc",
                                 t->id == ICEBERG_TYPE_TIMESTAMPTZ);
        case ICEBERG_TYPE_TIMESTAMP_NS:
        case ICEBERG_TYPE_TIMESTAMPTZ_NS:
                return json_pack("{s:s, s:s, s:b}", "type", "long", "logicalType",
                                 "timestamp-nanos", "adjust-to-utc",
                                 t->id == ICEBERG_TYPE_TIMESTAMPTZ_NS);
        case ICEBERG_TYPE_UUID:
                (void)snprintf(name, sizeof(name), "uuid_fixed");
                fixed = json_pack("{s:s, s:s, s:i, s:s}", "type", "fixed", "name", name, "size", 16,
                                  "logicalType", "uuid");
                break;
        case ICEBERG_TYPE_DECIMAL:
                (void)snprintf(name, sizeof(name), "decimal_%d_%d", t->precision, t->scale);
                fixed = json_pack("{s:s, s:s, s:i, s:s, s:i, s:i}", "type", "fixed", "name", name,
                                  "size", decimal_required_bytes(t->precision), "logicalType",
                                  "decimal", "precision", t->precision, "scale", t->scale);
                break;
        default:
                return NULL;
        }
        if (json_object_get(defined_names, name)) {
                json_decref(fixed);
                return json_string(name);
        }
        if (!fixed || json_object_set_new(defined_names, name, json_true()) < 0) {
                json_decref(fixed);
                return NULL;
        }
        return fixed;
}

static json_t *partition_record_fields(const ManifestWriteSpec *spec, Error *e) {
        _cleanup_(json_decrefp) json_t *fields = json_array();
        _cleanup_(json_decrefp) json_t *defined = json_object();
        json_t *field;
        size_t i;

        if (!fields || !defined) {
                error_set(e, -ENOMEM, "out of memory");
                return NULL;
        }
        json_array_foreach (json_object_get(spec->partition_spec, "fields"), i, field) {
                const char *name = json_string_value(json_object_get(field, "name"));
                json_t *id = json_object_get(field, "field-id"), *avro_field;
                _cleanup_(freep) char *avro_name = NULL;
                _cleanup_(json_decrefp) json_t *type = NULL;
                IcebergType t;
                int r;

                if (!name || !name[0] || !json_is_integer(id)) {
                        error_set(e, -EINVAL, "partition field %zu has no name or field-id", i);
                        return NULL;
                }
                r = data_file_partition_type(spec->schema, field, &t, e);
                if (r < 0) {
                        error_prefix(e, r, "partition field '%s'", name);
                        return NULL;
                }
                avro_name = avro_compatible_name(name);
                type = partition_avro_type(&t, defined);
                avro_field = avro_name && type
                                     ? json_pack("{s:s, s:[s,O], s:n, s:O}", "name", avro_name,
                                                 "type", "null", type, "default", "field-id", id)
                                     : NULL;
                if (!avro_field || json_array_append_new(fields, avro_field) < 0) {
                        error_set(e, -ENOMEM, "out of memory");
                        return NULL;
                }
        }
        return TAKE_PTR(fields);
}

/* The field of `record` (an Avro record schema JSON) with this field-id. */
static json_t *schema_field(json_t *record, int64_t id) {
        json_t *field;
        size_t i;

        json_array_foreach (json_object_get(record, "fields"), i, field)
                if (json_integer_value(json_object_get(field, "field-id")) == id)
                        return field;
        return NULL;
}

int manifest_write_schema(const ManifestWriteSpec *spec, json_t **ret_schema, Error *e) {
        const char *text = spec->format_version == 3 ? proto_manifest_entry_v3_avsc
                                                     : proto_manifest_entry_v2_avsc;
        json_t *schema, *data_file, *partition, *fields;

        if (spec->format_version != 2 && spec->format_version != 3)
                return error_set(e, -EINVAL,
                                 "manifests of format-version %d cannot be written (2 or 3)",
                                 spec->format_version);
        schema = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
        if (!schema)
                return error_set(e, -ENOMEM, "cannot load the embedded manifest entry schema");
        data_file = json_object_get(schema_field(schema, MANIFEST_FIELD_DATA_FILE), "type");
        partition = json_object_get(schema_field(data_file, MANIFEST_FIELD_PARTITION), "type");
        if (!json_is_object(partition)) {
                json_decref(schema);
                return error_set(e, -EINVAL,
                                 "embedded manifest entry schema lacks data_file.partition");
        }
        fields = partition_record_fields(spec, e);
        if (!fields || json_object_set_new(partition, "fields", fields) < 0) {
                json_decref(schema);
                return fields ? error_set(e, -ENOMEM, "out of memory") : -EINVAL;
        }
        *ret_schema = schema;
        return 0;
}

static int set_le_number(avro_value_t *v, const IcebergType *t, const Buf *b) {
        uint64_t x = 0;

        for (size_t i = 0; i < b->len && i < 8; i++)
                x |= (uint64_t)b->data[i] << (8 * i);
        switch (t->id) {
        case ICEBERG_TYPE_BOOLEAN:
                return avro_value_set_boolean(v, x != 0);
        case ICEBERG_TYPE_INT:
        case ICEBERG_TYPE_DATE:
                return avro_value_set_int(v, (int32_t)(uint32_t)x);
        case ICEBERG_TYPE_FLOAT: {
                uint32_t bits = (uint32_t)x;
                float f;

                memcpy(&f, &bits, sizeof(f));
                return avro_value_set_float(v, f);
        }
        case ICEBERG_TYPE_DOUBLE: {
                double d;

                memcpy(&d, &x, sizeof(d));
                return avro_value_set_double(v, d);
        }
        default:
                return avro_value_set_long(v, (int64_t)x);
        }
}

/* A partition value, from its binary single value into the Avro type partition_avro_type()
 * chose. Avro decimals on fixed are sign-extended to the full size (Avro spec, "Decimal"). */
static int set_partition_value(avro_value_t *v, const IcebergType *t, const Buf *b) {
        uint8_t fixed[32];
        int size;

        switch (t->id) {
        case ICEBERG_TYPE_STRING: {
                /* Buf keeps a NUL after the bytes; avro-c counts it in the size. */
                return avro_value_set_string_len(v,
                                                 (const char *)(b->data ? (const char *)b->data
                                                                        : ""),
                                                 b->len + 1);
        }
        case ICEBERG_TYPE_BINARY:
        case ICEBERG_TYPE_FIXED:
                return avro_value_set_bytes(v, b->data ? b->data : (uint8_t *)"", b->len);
        case ICEBERG_TYPE_UUID:
                return avro_value_set_fixed(v, b->data, b->len);
        case ICEBERG_TYPE_DECIMAL:
                size = decimal_required_bytes(t->precision);
                if (b->len == 0 || b->len > (size_t)size || size > (int)sizeof(fixed))
                        return -EINVAL;
                memset(fixed, (b->data[0] & 0x80) ? 0xff : 0x00, (size_t)size);
                memcpy(fixed + size - b->len, b->data, b->len);
                return avro_value_set_fixed(v, fixed, (size_t)size);
        default:
                return set_le_number(v, t, b);
        }
}

static int set_counts(avro_value_t *df, const ManifestFieldsLayout *l, int32_t id,
                      const DataFileCounts *c) {
        avro_value_t array, element, k, v;
        int index = manifest_fields_index(l, id);

        if (!c->is_present)
                return 0;
        if (index < 0 || fields_set_value(df, index, &array) < 0)
                return -EINVAL;
        for (size_t i = 0; i < c->n; i++) {
                if (avro_value_append(&array, &element, NULL) != 0 ||
                    avro_value_get_by_index(&element, 0, &k, NULL) != 0 ||
                    avro_value_get_by_index(&element, 1, &v, NULL) != 0 ||
                    avro_value_set_int(&k, c->ids[i]) != 0 ||
                    avro_value_set_long(&v, c->values[i]) != 0)
                        return -ENOMEM;
        }
        return 0;
}

static int set_bounds(avro_value_t *df, const ManifestFieldsLayout *l, int32_t id,
                      const DataFileBounds *b) {
        avro_value_t array, element, k, v;
        int index = manifest_fields_index(l, id);

        if (!b->is_present)
                return 0;
        if (index < 0 || fields_set_value(df, index, &array) < 0)
                return -EINVAL;
        for (size_t i = 0; i < b->n; i++) {
                if (avro_value_append(&array, &element, NULL) != 0 ||
                    avro_value_get_by_index(&element, 0, &k, NULL) != 0 ||
                    avro_value_get_by_index(&element, 1, &v, NULL) != 0 ||
                    avro_value_set_int(&k, b->ids[i]) != 0 ||
                    avro_value_set_bytes(&v, b->bytes[i].data ? b->bytes[i].data : (uint8_t *)"",
                                         b->bytes[i].len) != 0)
                        return -ENOMEM;
        }
        return 0;
}

typedef struct EntryLayout {
        ManifestFieldsLayout fields;
        FieldsRecord partition;
        IcebergType *partition_types;
        size_t n_partition;
} EntryLayout;

static void entry_layout_deinit(EntryLayout *l) {
        l->partition_types = (free(l->partition_types), NULL);
}

/* The entry of one described file: ADDED, with only what the writer described set. */
static int set_entry(const EntryLayout *l, const DataFile *f, avro_value_t *entry) {
        /* snapshot_id (1), sequence_number (3), file_sequence_number (4) and first_row_id
         * (142) stay null: inherited from the manifest list (spec "Sequence Number
         * Inheritance", "First Row ID Inheritance"). */
        const ManifestEntryFields fields = {
                .status = manifest_fields_number(MANIFEST_ENTRY_ADDED),
                .content = manifest_fields_number(0), /* data */
                .file_path = manifest_fields_string(f->location),
                .file_format = manifest_fields_string(data_file_format_name(f->format)),
                .record_count = manifest_fields_number(f->record_count),
                .file_size_in_bytes = manifest_fields_number(f->file_size_in_bytes),
                .sort_order_id = { .is_set = f->has_sort_order_id, .number = f->sort_order_id },
        };
        const ManifestFieldsLayout *fl = &l->fields;
        avro_value_t df, tuple, array, element;
        int r;

        r = manifest_fields_write(fl, entry, &fields, &df);
        if (r >= 0)
                r = fields_set_value(&df, manifest_fields_index(fl, MANIFEST_FIELD_PARTITION),
                                     &tuple);
        if (r < 0)
                return r;
        if (f->n_partition_values != l->n_partition)
                return -EINVAL;
        for (size_t i = 0; i < l->n_partition; i++) {
                avro_value_t v;

                if (f->partition_is_null[i]) {
                        r = fields_set_null(&tuple, (int)i);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (fields_set_value(&tuple, (int)i, &v) < 0 ||
                    set_partition_value(&v, &l->partition_types[i], &f->partition_values[i]) != 0)
                        return -EINVAL;
        }
        r = set_counts(&df, fl, MANIFEST_FIELD_COLUMN_SIZES, &f->column_sizes);
        if (r >= 0)
                r = set_counts(&df, fl, MANIFEST_FIELD_VALUE_COUNTS, &f->value_counts);
        if (r >= 0)
                r = set_counts(&df, fl, MANIFEST_FIELD_NULL_VALUE_COUNTS, &f->null_value_counts);
        if (r >= 0)
                r = set_counts(&df, fl, MANIFEST_FIELD_NAN_VALUE_COUNTS, &f->nan_value_counts);
        if (r >= 0)
                r = set_bounds(&df, fl, MANIFEST_FIELD_LOWER_BOUNDS, &f->lower_bounds);
        if (r >= 0)
                r = set_bounds(&df, fl, MANIFEST_FIELD_UPPER_BOUNDS, &f->upper_bounds);
        if (r >= 0 && f->has_split_offsets) {
                r = fields_set_value(&df, manifest_fields_index(fl, MANIFEST_FIELD_SPLIT_OFFSETS),
                                     &array);
                for (size_t i = 0; r >= 0 && i < f->n_split_offsets; i++)
                        if (avro_value_append(&array, &element, NULL) != 0 ||
                            avro_value_set_long(&element, f->split_offsets[i]) != 0)
                                r = -ENOMEM;
        }
        return r;
}

static int set_meta_json(OcfWriter *w, const char *key, const json_t *value) {
        char *text = json_dumps(value, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        int r;

        if (!text)
                return -ENOMEM;
        r = ocf_writer_set_meta(w, key, slice_from_str(text));
        free(text);
        return r;
}

static int set_meta_i64(OcfWriter *w, const char *key, int64_t v) {
        char text[24];

        (void)snprintf(text, sizeof(text), "%" PRId64, v);
        return ocf_writer_set_meta(w, key, slice_from_str(text));
}

static int write_meta(OcfWriter *w, const ManifestWriteSpec *spec) {
        _cleanup_(freep) char *iceberg_schema = NULL;
        const json_t *spec_fields = json_object_get(spec->partition_spec, "fields");
        int r;

        /* ManifestWriter.V{2,3}Writer: schema, partition-spec (the fields only),
         * partition-spec-id, format-version, content; Avro.java adds iceberg.schema. The
         * spec asks for schema-id too, which Java leaves out; readers may use it. */
        r = set_meta_json(w, "schema", spec->schema);
        if (r >= 0 && json_is_integer(json_object_get(spec->schema, "schema-id")))
                r = set_meta_i64(w, "schema-id",
                                 json_integer_value(json_object_get(spec->schema, "schema-id")));
        if (r >= 0)
                r = set_meta_json(w, "partition-spec", spec_fields ? spec_fields : json_array());
        if (r >= 0)
                r = set_meta_i64(w, "partition-spec-id",
                                 json_integer_value(
                                         json_object_get(spec->partition_spec, "spec-id")));
        if (r >= 0)
                r = set_meta_i64(w, "format-version", spec->format_version);
        if (r >= 0)
                r = ocf_writer_set_meta(w, "content", slice_from_str("data"));
        if (r >= 0 && schema_json_from_avro(ocf_writer_schema_json(w), &iceberg_schema) >= 0)
                r = ocf_writer_set_meta(w, "iceberg.schema", slice_from_str(iceberg_schema));
        return r;
}

static int entry_layout_init(OcfWriter *w, const ManifestWriteSpec *spec, EntryLayout *l,
                             Error *e) {
        FieldsRecord entry;
        int r;

        r = fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w), &entry, e);
        if (r >= 0) {
                manifest_fields_layout_init(&entry, &l->fields);
                r = manifest_fields_layout_nest(&l->fields, e);
        }
        if (r >= 0)
                r = fields_record_nested(&l->fields.data_file,
                                         manifest_fields_index(&l->fields,
                                                               MANIFEST_FIELD_PARTITION),
                                         &l->partition, e);
        if (r < 0)
                return error_prefix(e, r, "manifest entry schema");
        l->n_partition = avro_schema_record_size(l->partition.schema);
        if (l->n_partition == 0)
                return 0;
        l->partition_types = calloc(l->n_partition, sizeof(*l->partition_types));
        if (!l->partition_types)
                return error_set(e, -ENOMEM, "out of memory");
        for (size_t i = 0; i < l->n_partition; i++) {
                r = data_file_partition_type(spec->schema,
                                             json_array_get(json_object_get(spec->partition_spec,
                                                                            "fields"),
                                                            i),
                                             &l->partition_types[i], e);
                if (r < 0)
                        return r;
        }
        return 0;
}

int manifest_write(const ManifestWriteSpec *spec, const DataFile *files, size_t n, Buf *out,
                   Error *e) {
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        _cleanup_(freep) char *schema_text = NULL;
        _cleanup_(entry_layout_deinit) EntryLayout layout = { 0 };
        avro_value_t value;
        json_t *schema;
        int r;

        if (n == 0)
                return error_set(e, -EINVAL, "a manifest needs at least one data file");
        r = manifest_write_schema(spec, &schema, e);
        if (r < 0)
                return r;
        schema_text = json_dumps(schema, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(schema);
        if (!schema_text)
                return error_set(e, -ENOMEM, "out of memory");
        r = ocf_writer_new(schema_text, OCF_CODEC_DEFLATE, &w);
        if (r < 0)
                return error_set(e, r, "cannot create the manifest writer: %s",
                                 r == -EINVAL ? avro_strerror() : strerror(-r));
        r = write_meta(w, spec);
        if (r < 0)
                return error_set(e, r, "cannot set manifest metadata: %s", strerror(-r));
        r = entry_layout_init(w, spec, &layout, e);
        if (r < 0)
                return r;

        r = ocf_writer_value_new(w, &value);
        if (r < 0)
                return error_set(e, r, "out of memory");
        for (size_t i = 0; i < n; i++) {
                if (avro_value_reset(&value) != 0)
                        r = -ENOMEM;
                if (r >= 0)
                        r = set_entry(&layout, &files[i], &value);
                if (r >= 0)
                        r = ocf_writer_append(w, &value);
                if (r < 0) {
                        error_set(e, r, "data file %zu (%s): cannot encode: %s", i,
                                  files[i].location, r == -EIO ? avro_strerror() : strerror(-r));
                        break;
                }
        }
        avro_value_decref(&value);
        if (r < 0)
                return r;
        r = ocf_writer_finish(w, out);
        if (r < 0)
                return error_set(e, r, "cannot write the manifest: %s", strerror(-r));
        return 0;
}
