/* SPDX-License-Identifier: Apache-2.0 */
/* Committed manifests (manifest_entries.h): manifest_entry records (ids 0-4) holding data_file
 * r2 (ids 100-145), read by field id through the field table (manifest_fields.h) so that v1, v2
 * and v3 writers' schemas all work. Nothing is validated beyond what lineage needs: this reads
 * what others committed. */
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

ManifestEntry *manifest_entries_free(ManifestEntry *entries, size_t n) {
        if (!entries)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                free(entries[i].file_path);
                free(entries[i].referenced_data_file);
        }
        free(entries);
        return NULL;
}

static int entry_layout_resolve(const FieldsRecord *entry, ManifestFieldsLayout *l, Error *e) {
        int r;

        manifest_fields_layout_init(entry, l);
        if (manifest_fields_index(l, MANIFEST_FIELD_STATUS) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_DATA_FILE) < 0)
                return error_set(e, -EBADMSG, "manifest schema lacks status (0) or data_file (2)");
        r = manifest_fields_layout_nest(l, e);
        if (r < 0)
                return error_prefix(e, r, "manifest schema");
        if (manifest_fields_index(l, MANIFEST_FIELD_FILE_PATH) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_RECORD_COUNT) < 0)
                return error_set(e, -EBADMSG,
                                 "manifest schema lacks file_path (100) or record_count (103)");
        return 0;
}

/* A delete file's fields 143-145 (data files never have them: Java writes them only for
 * position deletes and deletion vectors). */
static int entry_read_delete_fields(const ManifestFieldsLayout *l, avro_value_t *entry,
                                    ManifestEntryFields *f, ManifestEntry *out, Error *e) {
        int r;

        r = manifest_fields_read(l, entry, f, e, MANIFEST_FIELD_REFERENCED_DATA_FILE,
                                 MANIFEST_FIELD_CONTENT_OFFSET, MANIFEST_FIELD_CONTENT_SIZE);
        if (r < 0)
                return r;
        out->has_content_offset = f->content_offset.is_set;
        out->content_offset = f->content_offset.number;
        out->has_content_size_in_bytes = f->content_size_in_bytes.is_set;
        out->content_size_in_bytes = f->content_size_in_bytes.number;
        if (!f->referenced_data_file.is_set)
                return 0;
        out->referenced_data_file =
                strndup(f->referenced_data_file.str, f->referenced_data_file.len);
        if (!out->referenced_data_file)
                return error_set(e, -ENOMEM, "out of memory");
        return 0;
}

/* Reads in the order the checks need, so that the first problem of an entry is the one named. */
static int entry_read(const ManifestFieldsLayout *l, avro_value_t *entry, ManifestEntry *out,
                      Error *e) {
        ManifestEntryFields f = { 0 };
        int r;

        *out = (ManifestEntry){ 0 };
        r = manifest_fields_read(l, entry, &f, e, MANIFEST_FIELD_STATUS);
        if (r < 0)
                return r;
        if (!f.status.is_set)
                return error_set(e, -EBADMSG, "status is null");
        out->status = (int32_t)f.status.number;
        r = manifest_fields_read(l, entry, &f, e, MANIFEST_FIELD_SNAPSHOT_ID,
                                 MANIFEST_FIELD_SEQUENCE_NUMBER,
                                 MANIFEST_FIELD_FILE_SEQUENCE_NUMBER, MANIFEST_FIELD_DATA_FILE);
        if (r < 0)
                return r;
        out->has_snapshot_id = f.snapshot_id.is_set;
        out->snapshot_id = f.snapshot_id.number;
        out->has_sequence_number = f.sequence_number.is_set;
        out->sequence_number = f.sequence_number.number;
        out->has_file_sequence_number = f.file_sequence_number.is_set;
        out->file_sequence_number = f.file_sequence_number.number;
        if (!f.data_file.is_set)
                return error_set(e, -EBADMSG, "data_file is null");

        /* v1 data files have no content field: data. */
        r = manifest_fields_read(l, entry, &f, e, MANIFEST_FIELD_CONTENT,
                                 MANIFEST_FIELD_RECORD_COUNT);
        if (r < 0)
                return r;
        out->content = (int32_t)f.content.number;
        out->record_count = f.record_count.number;
        if (!f.record_count.is_set || out->record_count < 0)
                return error_set(e, -EBADMSG, "record_count is null or negative");
        r = manifest_fields_read(l, entry, &f, e, MANIFEST_FIELD_FIRST_ROW_ID,
                                 MANIFEST_FIELD_FILE_PATH);
        if (r < 0)
                return r;
        out->has_first_row_id = f.first_row_id.is_set;
        out->first_row_id = f.first_row_id.number;
        if (!f.file_path.is_set || f.file_path.len == 0)
                return error_set(e, -EBADMSG, "file_path is empty");
        out->file_path = strndup(f.file_path.str, f.file_path.len);
        if (!out->file_path)
                return error_set(e, -ENOMEM, "out of memory");
        if (out->content == 0)
                return 0;
        return entry_read_delete_fields(l, entry, &f, out, e);
}

static int entry_read_record(avro_value_t *record, uint64_t index, void *item, void *userdata,
                             Error *e) {
        const ManifestFieldsLayout *l = userdata;
        int r;

        r = entry_read(l, record, item, e);
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
        ManifestFieldsLayout layout;
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r >= 0)
                r = records_schema(reader, &record, e);
        if (r >= 0)
                r = entry_layout_resolve(&record, &layout, e);
        if (r >= 0)
                r = records_read(reader, &options, entry_read_record, &layout, &array, e);
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
