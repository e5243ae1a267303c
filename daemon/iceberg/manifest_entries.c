/* SPDX-License-Identifier: Apache-2.0 */
/* Committed manifests (manifest_entries.h): manifest_entry records (ids 0-4) holding data_file
 * r2 (ids 100-145), read by field id so that v1, v2 and v3 writers' schemas all work. Nothing
 * is validated beyond what lineage needs: this reads what others committed. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "avro/records.h"
#include "iceberg/manifest_entries.h"
#include "iceberg/manifest_fields.h"
#include "util/checked.h"

typedef struct EntryIndexes {
        int status, snapshot_id, sequence_number, file_sequence_number, data_file;
        int content, file_path, record_count, first_row_id;
} EntryIndexes;

ManifestEntry *manifest_entries_free(ManifestEntry *entries, size_t n) {
        if (!entries)
                return NULL;
        for (size_t i = 0; i < n; i++)
                free(entries[i].file_path);
        free(entries);
        return NULL;
}

static int entry_indexes_resolve(const FieldsRecord *entry, EntryIndexes *ix, Error *e) {
        FieldsRecord data_file;
        int r;

        *ix = (EntryIndexes){
                .status = fields_index(entry, MANIFEST_FIELD_STATUS),
                .snapshot_id = fields_index(entry, MANIFEST_FIELD_SNAPSHOT_ID),
                .sequence_number = fields_index(entry, MANIFEST_FIELD_SEQUENCE_NUMBER),
                .file_sequence_number = fields_index(entry, MANIFEST_FIELD_FILE_SEQUENCE_NUMBER),
                .data_file = fields_index(entry, MANIFEST_FIELD_DATA_FILE),
        };
        if (ix->status < 0 || ix->data_file < 0)
                return error_set(e, -EBADMSG, "manifest schema lacks status (0) or data_file (2)");
        r = fields_record_nested(entry, ix->data_file, &data_file, e);
        if (r < 0)
                return error_prefix(e, r, "manifest schema");
        ix->content = fields_index(&data_file, MANIFEST_FIELD_CONTENT);
        ix->file_path = fields_index(&data_file, MANIFEST_FIELD_FILE_PATH);
        ix->record_count = fields_index(&data_file, MANIFEST_FIELD_RECORD_COUNT);
        ix->first_row_id = fields_index(&data_file, MANIFEST_FIELD_FIRST_ROW_ID);
        if (ix->file_path < 0 || ix->record_count < 0)
                return error_set(e, -EBADMSG,
                                 "manifest schema lacks file_path (100) or record_count (103)");
        return 0;
}

static int entry_read(const EntryIndexes *ix, avro_value_t *entry, ManifestEntry *out, Error *e) {
        const char *path;
        size_t path_len;
        avro_value_t df;
        int r;

        *out = (ManifestEntry){ 0 };
        r = fields_get_int(entry, ix->status, &out->status, e);
        if (r == 0)
                return error_set(e, -EBADMSG, "status is null");
        if (r > 0)
                r = fields_get_long(entry, ix->snapshot_id, &out->snapshot_id, e);
        if (r >= 0) {
                out->has_snapshot_id = r > 0;
                r = fields_get_long(entry, ix->sequence_number, &out->sequence_number, e);
        }
        if (r >= 0) {
                out->has_sequence_number = r > 0;
                r = fields_get_long(entry, ix->file_sequence_number, &out->file_sequence_number, e);
        }
        if (r >= 0) {
                out->has_file_sequence_number = r > 0;
                r = fields_get_value(entry, ix->data_file, &df, e);
                if (r == 0)
                        return error_set(e, -EBADMSG, "data_file is null");
        }
        if (r < 0)
                return r;

        /* v1 data files have no content field: data. */
        r = fields_get_int(&df, ix->content, &out->content, e);
        if (r >= 0)
                r = fields_get_long(&df, ix->record_count, &out->record_count, e);
        if (r == 0 || (r > 0 && out->record_count < 0))
                return error_set(e, -EBADMSG, "record_count is null or negative");
        if (r > 0)
                r = fields_get_long(&df, ix->first_row_id, &out->first_row_id, e);
        if (r >= 0) {
                out->has_first_row_id = r > 0;
                r = fields_get_string(&df, ix->file_path, &path, &path_len, e);
                if (r == 0 || (r > 0 && path_len == 0))
                        return error_set(e, -EBADMSG, "file_path is empty");
        }
        if (r < 0)
                return r;
        out->file_path = strndup(path, path_len);
        if (!out->file_path)
                return error_set(e, -ENOMEM, "out of memory");
        return 0;
}

static int entry_read_record(avro_value_t *record, uint64_t index, void *item, void *userdata,
                             Error *e) {
        const EntryIndexes *ix = userdata;
        int r;

        r = entry_read(ix, record, item, e);
        if (r < 0)
                return error_prefix(e, r, "entry %" PRIu64, index);
        return 0;
}

int manifest_entries_read(Slice bytes, uint64_t max_entries, ManifestEntry **ret_entries,
                          size_t *ret_n, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        const RecordsOptions options = {
                .max_records = max_entries,
                .name = "manifest",
                .item_size = sizeof(ManifestEntry),
        };
        RecordsArray array = { 0 };
        FieldsRecord record;
        EntryIndexes ix;
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r >= 0)
                r = records_schema(reader, &record, e);
        if (r >= 0)
                r = entry_indexes_resolve(&record, &ix, e);
        if (r >= 0)
                r = records_read(reader, &options, entry_read_record, &ix, &array, e);
        if (r < 0) {
                manifest_entries_free(array.items, array.n_items);
                return r;
        }
        *ret_entries = array.items;
        *ret_n = array.n_items;
        return 0;
}

int manifest_entries_inherit(ManifestEntry *entries, size_t n, const ManifestFile *m, Error *e) {
        int64_t next = m->first_row_id;

        for (size_t i = 0; i < n; i++) {
                ManifestEntry *x = &entries[i];
                /* Java's InheritableMetadataFactory: only ADDED entries inherit sequence
                 * numbers, except from v1 manifests (list sequence number 0). */
                bool inherits_seq = x->status == MANIFEST_ENTRY_ADDED || m->sequence_number == 0;

                if (!x->has_snapshot_id && m->has_added_snapshot_id) {
                        x->snapshot_id = m->added_snapshot_id;
                        x->has_snapshot_id = true;
                }
                if (!x->has_sequence_number && inherits_seq) {
                        x->sequence_number = m->sequence_number;
                        x->has_sequence_number = true;
                }
                if (!x->has_file_sequence_number && inherits_seq) {
                        x->file_sequence_number = m->sequence_number;
                        x->has_file_sequence_number = true;
                }
                /* First row id inheritance: DELETED entries neither receive an id nor advance
                 * the counter (ManifestReader.idAssigner), delete files never get one. */
                if (!m->has_first_row_id || x->has_first_row_id || x->content != 0 ||
                    x->status == MANIFEST_ENTRY_DELETED)
                        continue;
                x->first_row_id = next;
                x->has_first_row_id = true;
                x->is_first_row_id_inherited = true;
                if (checked_add_i64(&next, next, x->record_count))
                        return error_set(e, -EOVERFLOW, "entry %zu: first_row_id overflows", i);
        }
        return 0;
}
