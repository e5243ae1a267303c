/* SPDX-License-Identifier: Apache-2.0 */
/* Rewriting committed manifests (manifest_rewriter.h): datums copied generically (avro-c, same
 * writer schema in and out); only the fields the spec says a rewrite must write out are set:
 * status, snapshot id, sequence numbers and first_row_id (spec "Manifest Entry Fields",
 * "First Row ID Inheritance"). It never guesses a schema: an input lacking one of those fields
 * is MANIFEST_REWRITER_E_INCOMPATIBLE. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "iceberg/manifest_fields.h"
#include "iceberg/manifest_rewriter.h"
#include "util/checked.h"

/* Where the rewrite sets the fields it must write out. */
static int rewrite_layout(const FieldsRecord *entry, bool wants_first_row_id,
                          ManifestFieldsLayout *l, Error *e) {
        int r;

        manifest_fields_layout_init(entry, l);
        /* A v1 schema has no sequence numbers to write the inherited values into. */
        if (manifest_fields_index(l, MANIFEST_FIELD_STATUS) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_SNAPSHOT_ID) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_SEQUENCE_NUMBER) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_FILE_SEQUENCE_NUMBER) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_DATA_FILE) < 0)
                return error_set(e, MANIFEST_REWRITER_E_INCOMPATIBLE,
                                 "the writer schema lacks status, snapshot_id, sequence_number, "
                                 "file_sequence_number or data_file");
        r = manifest_fields_layout_nest(l, e);
        if (r < 0)
                return r;
        if (wants_first_row_id && manifest_fields_index(l, MANIFEST_FIELD_FIRST_ROW_ID) < 0)
                return error_set(e, MANIFEST_REWRITER_E_INCOMPATIBLE,
                                 "the writer schema lacks data_file.first_row_id (142), which "
                                 "format 3 must write for EXISTING and DELETED data files");
        /* Without it (a v2 schema on a v2 table) there is nothing to write: first_row_id is
         * set only where the layout has it. */
        if (!wants_first_row_id)
                l->index[MANIFEST_ROW_FIRST_ROW_ID] = -1;
        return 0;
}

int manifest_rewriter_init(ManifestRewriter *w, OcfReader *like, bool wants_first_row_id,
                           Error *e) {
        _cleanup_(freep) char *schema = NULL;
        FieldsRecord record;
        int r;

        *w = (ManifestRewriter){ .min_sequence_number = INT64_MAX };
        schema = json_dumps(ocf_reader_schema_json(like), JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!schema)
                return error_set(e, -ENOMEM, "out of memory");
        r = ocf_writer_new(schema, OCF_CODEC_DEFLATE, &w->writer);
        if (r < 0)
                return error_set(e, r, "cannot create the manifest writer: %s",
                                 r == -EINVAL ? avro_strerror() : strerror(-r));
        for (size_t i = 0; i < ocf_reader_n_meta(like); i++) {
                const char *key;
                Slice value;

                ocf_reader_meta_at(like, i, &key, &value);
                if (strncmp(key, "avro.", 5) == 0)
                        continue;
                r = ocf_writer_set_meta(w->writer, key, value);
                if (r < 0)
                        return error_set(e, r, "cannot set manifest metadata '%s'", key);
        }
        r = ocf_writer_value_new(w->writer, &w->value);
        if (r < 0)
                return error_set(e, r, "out of memory");
        w->has_value = true;
        /* The layout borrows the writer's schema JSON, which lives as long as the writer. */
        r = fields_record_init(ocf_writer_schema_json(w->writer), ocf_writer_schema(w->writer),
                               &record, e);
        if (r < 0)
                return r;
        return rewrite_layout(&record, wants_first_row_id, &w->layout, e);
}

void manifest_rewriter_deinit(ManifestRewriter *w) {
        if (w->has_value)
                avro_value_decref(&w->value);
        w->has_value = false;
        w->writer = ocf_writer_free(w->writer);
}

static int rewrite_avro_error(Error *e, int r, const char *what, size_t entry) {
        return error_set(e, r, "entry %zu: cannot %s: %s", entry, what,
                         r == -EIO ? avro_strerror() : strerror(-r));
}

/* Sets the fields a rewrite must write out on a copied datum. */
static int rewrite_set_fields(avro_value_t *out, const ManifestFieldsLayout *l,
                              const ManifestEntry *x, const ManifestRewriteAction *a) {
        int64_t snapshot =
                a->status == MANIFEST_ENTRY_DELETED ? a->deleting_snapshot_id : x->snapshot_id;
        const ManifestFieldValue status = manifest_fields_number(a->status),
                                 snapshot_id = manifest_fields_number(snapshot),
                                 sequence_number = manifest_fields_number(x->sequence_number),
                                 file_sequence_number =
                                         manifest_fields_number(x->file_sequence_number),
                                 first_row_id = manifest_fields_number(x->first_row_id);
        avro_value_t df;
        int r;

        r = manifest_fields_set(l, out, MANIFEST_FIELD_STATUS, &status);
        if (r >= 0)
                r = manifest_fields_set(l, out, MANIFEST_FIELD_SNAPSHOT_ID, &snapshot_id);
        if (r >= 0)
                r = manifest_fields_set(l, out, MANIFEST_FIELD_SEQUENCE_NUMBER, &sequence_number);
        if (r >= 0)
                r = manifest_fields_set(l, out, MANIFEST_FIELD_FILE_SEQUENCE_NUMBER,
                                        &file_sequence_number);
        /* Delete files never carry one (V3Metadata writes null for them). */
        if (r < 0 || manifest_fields_index(l, MANIFEST_FIELD_FIRST_ROW_ID) < 0 || x->content != 0 ||
            !x->has_first_row_id)
                return r;
        r = fields_set_value(out, manifest_fields_index(l, MANIFEST_FIELD_DATA_FILE), &df);
        if (r >= 0)
                r = manifest_fields_set(l, &df, MANIFEST_FIELD_FIRST_ROW_ID, &first_row_id);
        return r;
}

/* Counts an entry written, as ManifestWriter.addEntry does. */
static int rewrite_count(ManifestRewriter *w, const ManifestEntry *x, int32_t status) {
        bool is_deleted = status == MANIFEST_ENTRY_DELETED;
        int32_t *files = is_deleted ? &w->deleted_files : &w->existing_files;
        int64_t *rows = is_deleted ? &w->deleted_rows : &w->existing_rows;

        if (*files == INT32_MAX || checked_add_i64(rows, *rows, x->record_count))
                return -EOVERFLOW;
        (*files)++;
        if (!is_deleted && x->sequence_number < w->min_sequence_number)
                w->min_sequence_number = x->sequence_number;
        w->n_written++;
        return 0;
}

/* Writes one entry as the action says. */
static int rewrite_entry(ManifestRewriter *w, avro_value_t *datum, const ManifestEntry *x, size_t k,
                         const ManifestRewriteAction *a, Error *e) {
        int r;

        if (a->status != MANIFEST_ENTRY_EXISTING && a->status != MANIFEST_ENTRY_DELETED)
                return error_set(e, -EINVAL, "entry %zu: a rewrite writes no status %d", k,
                                 a->status);
        if (!x->has_snapshot_id || !x->has_sequence_number || !x->has_file_sequence_number)
                return error_set(e, -EBADMSG,
                                 "entry %zu (status %d) has no snapshot id or sequence numbers "
                                 "to inherit",
                                 k, x->status);
        if (avro_value_reset(&w->value) != 0)
                return rewrite_avro_error(e, -ENOMEM, "reset", k);
        if (avro_value_copy(&w->value, datum) != 0)
                return rewrite_avro_error(e, -EIO, "copy", k);
        r = rewrite_set_fields(&w->value, &w->layout, x, a);
        if (r < 0)
                return rewrite_avro_error(e, r, "set the inherited fields", k);
        r = ocf_writer_append(w->writer, &w->value);
        if (r < 0)
                return rewrite_avro_error(e, r, "encode", k);
        if (rewrite_count(w, x, a->status) < 0)
                return error_set(e, -EBADMSG, "entry %zu: the counts overflow", k);
        return 0;
}

int manifest_rewriter_copy(ManifestRewriter *w, OcfReader *reader, const ManifestEntry *entries,
                           size_t n_entries, ManifestRewriteDecide decide, void *userdata,
                           Error *e) {
        for (size_t k = 0;; k++) {
                ManifestRewriteAction a = { 0 };
                avro_value_t *datum;
                int r;

                r = ocf_reader_read(reader, &datum, e);
                if (r < 0)
                        return r;
                /* The first pass read this file: a different count means different bytes. */
                if (r == 0)
                        return k == n_entries ? 0 : error_set(e, -EBADMSG, "the input changed");
                if (k >= n_entries)
                        return error_set(e, -EBADMSG, "the input changed");
                w->n_read++;
                r = decide(userdata, &w->layout, datum, &entries[k], k, &a, e);
                if (r < 0)
                        return r;
                if (!a.is_written)
                        continue;
                r = rewrite_entry(w, datum, &entries[k], k, &a, e);
                if (r < 0)
                        return r;
        }
}

int manifest_rewriter_finish(ManifestRewriter *w, Buf *out, Error *e) {
        _cleanup_(buf_deinitp) Buf bytes = { 0 };
        int r;

        buf_init(&bytes, out->max - out->len);
        r = ocf_writer_finish(w->writer, &bytes);
        if (r < 0)
                return error_set(e, r, "cannot write the manifest: %s", strerror(-r));
        if (buf_append(out, bytes.data, bytes.len) < 0)
                return error_set(e, -E2BIG, "the manifest passes the size bound");
        return 0;
}
