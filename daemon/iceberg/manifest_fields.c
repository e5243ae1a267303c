/* SPDX-License-Identifier: Apache-2.0 */
/* The manifest entry field table (manifest_fields.h) and the one reader and writer of entries
 * over it: fields found by field id in the writer schema, read and set through avro/fields.c
 * with the table's type. Knows no rule about what an entry may hold: that is each caller's. */
#include <assert.h>
#include <errno.h>

#include "iceberg/manifest_fields.h"

#define MANIFEST_FIELD_ROW_(upper, id_, name_, record_, type_, versions_, required_)               \
        [MANIFEST_ROW_##upper] = {                                                                 \
                .id = id_,                                                                         \
                .name = #name_,                                                                    \
                .record = MANIFEST_RECORD_##record_,                                               \
                .type = type_,                                                                     \
                .versions = versions_,                                                             \
                .required_in = required_,                                                          \
                .offset = offsetof(ManifestEntryFields, name_),                                    \
        },
static const ManifestFieldDef manifest_fields_rows[MANIFEST_N_ROWS] = { MANIFEST_FIELDS(
        MANIFEST_FIELD_ROW_) };
#undef MANIFEST_FIELD_ROW_

/* The reader and writer rely on these (the data_file record is read before its fields). */
static_assert(sizeof(ManifestEntryFields) == MANIFEST_N_ROWS * sizeof(ManifestFieldValue),
              "one slot per row");
static_assert(MANIFEST_ROW_DATA_FILE < MANIFEST_ROW_CONTENT, "data_file before its fields");

const ManifestFieldDef *manifest_fields_table(void) {
        return manifest_fields_rows;
}

static int manifest_fields_row(int32_t id) {
        switch (id) {
#define MANIFEST_FIELD_CASE_(upper, id_, ...)                                                      \
        case id_:                                                                                  \
                return MANIFEST_ROW_##upper;
                MANIFEST_FIELDS(MANIFEST_FIELD_CASE_)
#undef MANIFEST_FIELD_CASE_
        default:
                return -1;
        }
}

const ManifestFieldDef *manifest_fields_def(int32_t id) {
        int row = manifest_fields_row(id);

        return row < 0 ? NULL : &manifest_fields_rows[row];
}

ManifestFieldValue *manifest_fields_slot(ManifestEntryFields *f, const ManifestFieldDef *def) {
        return (ManifestFieldValue *)((char *)f + def->offset);
}

static const ManifestFieldValue *manifest_fields_slot_const(const ManifestEntryFields *f,
                                                            const ManifestFieldDef *def) {
        return (const ManifestFieldValue *)((const char *)f + def->offset);
}

void manifest_fields_layout_init(const FieldsRecord *entry, ManifestFieldsLayout *ret) {
        *ret = (ManifestFieldsLayout){ .entry = *entry };
        for (size_t i = 0; i < MANIFEST_N_ROWS; i++) {
                const ManifestFieldDef *def = &manifest_fields_rows[i];

                ret->index[i] =
                        def->record == MANIFEST_RECORD_ENTRY ? fields_index(entry, def->id) : -1;
        }
}

int manifest_fields_layout_nest(ManifestFieldsLayout *l, Error *e) {
        int r;

        if (l->index[MANIFEST_ROW_DATA_FILE] < 0)
                return error_set(e, -EBADMSG, "the entry record lacks field %d (data_file)",
                                 MANIFEST_FIELD_DATA_FILE);
        r = fields_record_nested(&l->entry, l->index[MANIFEST_ROW_DATA_FILE], &l->data_file, e);
        if (r < 0)
                return r;
        l->has_data_file = true;
        for (size_t i = 0; i < MANIFEST_N_ROWS; i++)
                if (manifest_fields_rows[i].record == MANIFEST_RECORD_DATA_FILE)
                        l->index[i] = fields_index(&l->data_file, manifest_fields_rows[i].id);
        return 0;
}

int manifest_fields_index(const ManifestFieldsLayout *l, int32_t id) {
        int row = manifest_fields_row(id);

        assert(row >= 0);
        return l->index[row];
}

/* Reads one field into its slot by the table's type; returns like the fields_get_*() getters. */
static int manifest_fields_read_one(const ManifestFieldsLayout *l, avro_value_t *entry, int row,
                                    ManifestEntryFields *f, Error *e) {
        const ManifestFieldDef *def = &manifest_fields_rows[row];
        ManifestFieldValue *slot = manifest_fields_slot(f, def);
        avro_value_t *rec = entry;
        int32_t i32;
        const void *bytes;
        int r;

        *slot = (ManifestFieldValue){ 0 };
        if (def->record == MANIFEST_RECORD_DATA_FILE) {
                if (!f->data_file.is_set)
                        return 0;
                rec = &f->data_file.value;
        }
        switch (def->type) {
        case AVRO_INT32:
                r = fields_get_int(rec, l->index[row], &i32, e);
                if (r > 0)
                        slot->number = i32;
                break;
        case AVRO_INT64:
                r = fields_get_long(rec, l->index[row], &slot->number, e);
                break;
        case AVRO_STRING:
                r = fields_get_string(rec, l->index[row], &slot->str, &slot->len, e);
                break;
        case AVRO_BYTES:
                r = fields_get_bytes(rec, l->index[row], &bytes, &slot->len, e);
                if (r > 0)
                        slot->str = bytes;
                break;
        default:
                r = fields_get_value(rec, l->index[row], &slot->value, e);
                break;
        }
        slot->is_set = r > 0;
        return r;
}

int manifest_fields_read_ids(const ManifestFieldsLayout *l, avro_value_t *entry, const int32_t *ids,
                             size_t n_ids, ManifestEntryFields *f, Error *e) {
        for (size_t i = 0; i < n_ids; i++) {
                int row = manifest_fields_row(ids[i]);
                int r;

                assert(row >= 0);
                r = manifest_fields_read_one(l, entry, row, f, e);
                if (r < 0)
                        return r;
        }
        return 0;
}

int manifest_fields_read_all(const ManifestFieldsLayout *l, avro_value_t *entry,
                             ManifestEntryFields *f, Error *e) {
        for (int row = 0; row < MANIFEST_N_ROWS; row++) {
                int r = manifest_fields_read_one(l, entry, row, f, e);

                if (r < 0)
                        return r;
        }
        return 0;
}

int manifest_fields_set(const ManifestFieldsLayout *l, avro_value_t *rec, int32_t id,
                        const ManifestFieldValue *v) {
        int row = manifest_fields_row(id), index;

        assert(row >= 0);
        index = l->index[row];
        if (!v->is_set)
                return fields_set_null(rec, index);
        switch (manifest_fields_rows[row].type) {
        case AVRO_INT32:
                return fields_set_int(rec, index, (int32_t)v->number);
        case AVRO_INT64:
                return fields_set_long(rec, index, v->number);
        case AVRO_STRING:
                return fields_set_string(rec, index, v->str);
        case AVRO_BYTES:
                return fields_set_bytes(rec, index, v->str, v->len);
        default:
                assert(!"records and arrays are filled by the caller");
                return -EINVAL;
        }
}

/* Fills every optional field of a record with null, so that only what is set is written. */
static int manifest_fields_set_all_null(avro_value_t *rec, const FieldsRecord *fr) {
        size_t n = avro_schema_record_size(fr->schema);

        for (size_t i = 0; i < n; i++) {
                FieldsType t;

                if (fields_type(fr, (int)i, &t, NULL) == 0 && t.is_optional) {
                        int r = fields_set_null(rec, (int)i);

                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Sets the set scalar slots of one record. */
static int manifest_fields_write_record(const ManifestFieldsLayout *l, avro_value_t *rec,
                                        ManifestFieldRecord record, const ManifestEntryFields *f) {
        for (size_t i = 0; i < MANIFEST_N_ROWS; i++) {
                const ManifestFieldDef *def = &manifest_fields_rows[i];
                const ManifestFieldValue *v = manifest_fields_slot_const(f, def);
                int r;

                if (def->record != record || !v->is_set || def->type == AVRO_RECORD ||
                    def->type == AVRO_ARRAY)
                        continue;
                r = manifest_fields_set(l, rec, def->id, v);
                if (r < 0)
                        return r;
        }
        return 0;
}

int manifest_fields_write(const ManifestFieldsLayout *l, avro_value_t *entry,
                          const ManifestEntryFields *f, avro_value_t *ret_data_file) {
        int r;

        assert(l->has_data_file);
        r = manifest_fields_set_all_null(entry, &l->entry);
        if (r >= 0)
                r = manifest_fields_write_record(l, entry, MANIFEST_RECORD_ENTRY, f);
        if (r >= 0)
                r = fields_set_value(entry, l->index[MANIFEST_ROW_DATA_FILE], ret_data_file);
        if (r >= 0)
                r = manifest_fields_set_all_null(ret_data_file, &l->data_file);
        if (r >= 0)
                r = manifest_fields_write_record(l, ret_data_file, MANIFEST_RECORD_DATA_FILE, f);
        return r;
}
