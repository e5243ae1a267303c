/* SPDX-License-Identifier: Apache-2.0 */
/* Manifest lists (see manifest_list.h). Reading resolves every field by id (spec "Manifest
 * Lists", field ids 500-520, summaries 508-511, 518); writing uses the embedded proto schemas
 * and repeats the checks of Java's V2/V3Metadata.ManifestFileWrapper. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "avro/records.h"
#include "iceberg/manifest_list-internal.h"
#include "iceberg/schema_json.h"
#include "proto_schemas.h"
#include "util/checked.h"

/* Manifest-list field ids (spec "Manifest Lists"; ManifestFile.java). */
enum {
        FIELD_MANIFEST_PATH = 500,
        FIELD_MANIFEST_LENGTH = 501,
        FIELD_PARTITION_SPEC_ID = 502,
        FIELD_ADDED_SNAPSHOT_ID = 503,
        FIELD_ADDED_FILES_COUNT = 504,
        FIELD_EXISTING_FILES_COUNT = 505,
        FIELD_DELETED_FILES_COUNT = 506,
        FIELD_PARTITIONS = 507,
        FIELD_CONTAINS_NULL = 509,
        FIELD_LOWER_BOUND = 510,
        FIELD_UPPER_BOUND = 511,
        FIELD_ADDED_ROWS_COUNT = 512,
        FIELD_EXISTING_ROWS_COUNT = 513,
        FIELD_DELETED_ROWS_COUNT = 514,
        FIELD_SEQUENCE_NUMBER = 515,
        FIELD_MIN_SEQUENCE_NUMBER = 516,
        FIELD_CONTENT = 517,
        FIELD_CONTAINS_NAN = 518,
        FIELD_KEY_METADATA = 519,
        FIELD_FIRST_ROW_ID = 520,
};

static const int list_count_ids[6] = {
        FIELD_ADDED_FILES_COUNT, FIELD_EXISTING_FILES_COUNT, FIELD_DELETED_FILES_COUNT,
        FIELD_ADDED_ROWS_COUNT,  FIELD_EXISTING_ROWS_COUNT,  FIELD_DELETED_ROWS_COUNT,
};

/* Values of partition summary bounds come out of one Avro block, so they are never larger. */
#define MANIFEST_LIST_MAX_BOUND_BYTES OCF_MAX_BLOCK_BYTES

static int manifest_list_resolve(const FieldsRecord *rec, ListFields *lf, Error *e) {
        FieldsRecord summary;
        int r;

        *lf = (ListFields){
                .path = fields_index(rec, FIELD_MANIFEST_PATH),
                .length = fields_index(rec, FIELD_MANIFEST_LENGTH),
                .spec_id = fields_index(rec, FIELD_PARTITION_SPEC_ID),
                .content = fields_index(rec, FIELD_CONTENT),
                .sequence_number = fields_index(rec, FIELD_SEQUENCE_NUMBER),
                .min_sequence_number = fields_index(rec, FIELD_MIN_SEQUENCE_NUMBER),
                .snapshot_id = fields_index(rec, FIELD_ADDED_SNAPSHOT_ID),
                .partitions = fields_index(rec, FIELD_PARTITIONS),
                .key_metadata = fields_index(rec, FIELD_KEY_METADATA),
                .first_row_id = fields_index(rec, FIELD_FIRST_ROW_ID),
        };
        for (size_t i = 0; i < ELEMENTSOF(list_count_ids); i++)
                lf->counts[i] = fields_index(rec, list_count_ids[i]);

        /* Required in every format version (v1 included). */
        if (lf->path < 0)
                return error_set(e, -EBADMSG, "manifest list schema lacks field %d (manifest_path)",
                                 FIELD_MANIFEST_PATH);
        if (lf->length < 0)
                return error_set(e, -EBADMSG,
                                 "manifest list schema lacks field %d (manifest_length)",
                                 FIELD_MANIFEST_LENGTH);
        if (lf->spec_id < 0)
                return error_set(e, -EBADMSG,
                                 "manifest list schema lacks field %d (partition_spec_id)",
                                 FIELD_PARTITION_SPEC_ID);

        if (lf->partitions >= 0) {
                r = fields_record_nested(rec, lf->partitions, &summary, e);
                if (r < 0)
                        return error_prefix(e, r, "manifest list field %d (partitions)",
                                            FIELD_PARTITIONS);
                lf->has_summary = true;
                lf->contains_null = fields_index(&summary, FIELD_CONTAINS_NULL);
                lf->contains_nan = fields_index(&summary, FIELD_CONTAINS_NAN);
                lf->lower_bound = fields_index(&summary, FIELD_LOWER_BOUND);
                lf->upper_bound = fields_index(&summary, FIELD_UPPER_BOUND);
                if (lf->contains_null < 0)
                        return error_set(e, -EBADMSG,
                                         "partition summary lacks field %d (contains_null)",
                                         FIELD_CONTAINS_NULL);
        }
        return 0;
}

static int manifest_list_read_bytes(avro_value_t *rec, int index, bool *ret_has, Buf *ret,
                                    Error *e) {
        const void *p;
        size_t len;
        int r;

        buf_init(ret, MANIFEST_LIST_MAX_BOUND_BYTES);
        r = fields_get_bytes(rec, index, &p, &len, e);
        if (r <= 0) {
                *ret_has = false;
                return r;
        }
        *ret_has = true;
        r = buf_append(ret, p, len);
        if (r < 0)
                return error_set(e, r, "out of memory");
        /* An empty value still gets storage so that "set but empty" differs from "null". */
        return buf_reserve(ret, 0) < 0 ? error_set(e, -ENOMEM, "out of memory") : 0;
}

static int manifest_list_read_summaries(const ListFields *lf, avro_value_t *array, ManifestFile *m,
                                        Error *e) {
        size_t n;

        if (avro_value_get_size(array, &n) != 0)
                return error_set(e, -EBADMSG, "partitions unreadable");
        if (n == 0) {
                m->has_partitions = true;
                return 0;
        }
        m->partitions = calloc(n, sizeof(*m->partitions));
        if (!m->partitions)
                return error_set(e, -ENOMEM, "out of memory");
        m->has_partitions = true;

        for (size_t i = 0; i < n; i++) {
                PartitionFieldSummary *s = &m->partitions[i];
                avro_value_t item;
                int r;

                m->n_partitions = i + 1; /* so that deinit frees what is filled */
                buf_init(&s->lower_bound, MANIFEST_LIST_MAX_BOUND_BYTES);
                buf_init(&s->upper_bound, MANIFEST_LIST_MAX_BOUND_BYTES);
                if (avro_value_get_by_index(array, i, &item, NULL) != 0)
                        return error_set(e, -EBADMSG, "partition summary %zu unreadable", i);
                r = fields_get_bool(&item, lf->contains_null, &s->contains_null, e);
                if (r == 0)
                        r = error_set(e, -EBADMSG, "contains_null is null");
                if (r >= 0) {
                        r = fields_get_bool(&item, lf->contains_nan, &s->contains_nan, e);
                        s->has_contains_nan = r > 0;
                }
                if (r >= 0)
                        r = manifest_list_read_bytes(&item, lf->lower_bound, &s->has_lower_bound,
                                                     &s->lower_bound, e);
                if (r >= 0)
                        r = manifest_list_read_bytes(&item, lf->upper_bound, &s->has_upper_bound,
                                                     &s->upper_bound, e);
                if (r < 0)
                        return error_prefix(e, r, "partition summary %zu", i);
        }
        return 0;
}

static int manifest_list_read_entry(const ListFields *lf, avro_value_t *v, ManifestFile *m,
                                    Error *e) {
        int64_t counts[6];
        avro_value_t array;
        const char *path;
        size_t path_len;
        bool has_counts = true;
        int r;

        *m = (ManifestFile){ 0 };
        buf_init(&m->key_metadata, MANIFEST_LIST_MAX_BOUND_BYTES);

        r = fields_get_string(v, lf->path, &path, &path_len, e);
        if (r < 0)
                return r;
        if (r == 0)
                return error_set(e, -EBADMSG, "manifest_path is null");
        m->path = strndup(path, path_len);
        if (!m->path)
                return error_set(e, -ENOMEM, "out of memory");

        r = fields_get_long(v, lf->length, &m->length, e);
        if (r == 0)
                return error_set(e, -EBADMSG, "manifest_length is null");
        if (r < 0)
                return r;
        r = fields_get_int(v, lf->spec_id, &m->partition_spec_id, e);
        if (r == 0)
                return error_set(e, -EBADMSG, "partition_spec_id is null");
        if (r < 0)
                return r;

        /* v1 lists have no content or sequence numbers: all data, sequence number 0
         * (spec "Sequence Numbers": v1 files read as sequence number 0). */
        r = fields_get_int(v, lf->content, &m->content, e);
        if (r < 0)
                return r;
        if (m->content != MANIFEST_CONTENT_DATA && m->content != MANIFEST_CONTENT_DELETES)
                return error_set(e, -EBADMSG, "unknown content %" PRId32, m->content);
        r = fields_get_long(v, lf->sequence_number, &m->sequence_number, e);
        if (r < 0)
                return r;
        r = fields_get_long(v, lf->min_sequence_number, &m->min_sequence_number, e);
        if (r < 0)
                return r;

        r = fields_get_long(v, lf->snapshot_id, &m->added_snapshot_id, e);
        if (r < 0)
                return r;
        m->has_added_snapshot_id = r > 0;

        /* A null count means "unknown, assume non-zero" (spec); one unknown count makes all of
         * them untrustworthy for lineage, so the set is kept or dropped as a whole. */
        for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
                counts[i] = 0;
                r = fields_get_long(v, lf->counts[i], &counts[i], e);
                if (r < 0)
                        return r;
                if (r == 0)
                        has_counts = false;
        }
        if (has_counts) {
                for (size_t i = 0; i < 3; i++)
                        if (counts[i] < INT32_MIN || counts[i] > INT32_MAX)
                                return error_set(e, -EBADMSG, "file count %" PRId64 " out of range",
                                                 counts[i]);
                m->has_counts = true;
                m->added_files_count = (int32_t)counts[0];
                m->existing_files_count = (int32_t)counts[1];
                m->deleted_files_count = (int32_t)counts[2];
                m->added_rows_count = counts[3];
                m->existing_rows_count = counts[4];
                m->deleted_rows_count = counts[5];
        }

        r = fields_get_value(v, lf->partitions, &array, e);
        if (r < 0)
                return r;
        if (r > 0) {
                if (avro_value_get_type(&array) != AVRO_ARRAY)
                        return error_set(e, -EBADMSG, "partitions is not an array");
                r = manifest_list_read_summaries(lf, &array, m, e);
                if (r < 0)
                        return r;
        }

        r = manifest_list_read_bytes(v, lf->key_metadata, &m->has_key_metadata, &m->key_metadata,
                                     e);
        if (r < 0)
                return r;

        r = fields_get_long(v, lf->first_row_id, &m->first_row_id, e);
        if (r < 0)
                return r;
        m->has_first_row_id = r > 0;
        return 0;
}

ManifestFile *manifest_list_files_free(ManifestFile *files, size_t n) {
        for (size_t i = 0; files && i < n; i++)
                manifest_file_deinit(&files[i]);
        free(files);
        return NULL;
}

static int manifest_list_read_record(avro_value_t *record, uint64_t index, void *item,
                                     void *userdata, Error *e) {
        const ListFields *lf = userdata;
        int r;

        r = manifest_list_read_entry(lf, record, item, e);
        if (r < 0)
                return error_prefix(e, r, "manifest list entry %" PRIu64, index);
        return 0;
}

static int manifest_list_read_some(Slice bytes, size_t max, ManifestFile **ret_files, size_t *ret_n,
                                   Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        /* A list has one entry per manifest of a snapshot; its size bounds their number. */
        const RecordsOptions options = {
                .max_records = UINT64_MAX,
                .name = "manifest list",
                .prefix = "manifest list",
                .item_size = sizeof(ManifestFile),
                .stop_after = max,
        };
        RecordsArray array = { 0 };
        FieldsRecord rec;
        ListFields lf;
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r < 0)
                return error_prefix(e, r, "manifest list");
        r = records_schema(reader, &rec, e);
        if (r >= 0)
                r = manifest_list_resolve(&rec, &lf, e);
        if (r < 0)
                return error_prefix(e, r, "manifest list");

        r = records_read(reader, &options, manifest_list_read_record, &lf, &array, e);
        if (r < 0) {
                manifest_list_files_free(array.items, array.n_items);
                return r;
        }

        *ret_files = array.items;
        *ret_n = array.n_items;
        return 0;
}

int manifest_list_read(Slice bytes, ManifestFile **ret_files, size_t *ret_n, Error *e) {
        return manifest_list_read_some(bytes, 0, ret_files, ret_n, e);
}

int manifest_list_read_first(Slice bytes, size_t n, ManifestFile **ret_files, size_t *ret_n,
                             Error *e) {
        if (n == 0) {
                *ret_files = NULL;
                *ret_n = 0;
                return 0;
        }
        return manifest_list_read_some(bytes, n, ret_files, ret_n, e);
}

int manifest_list_read_header(Slice bytes, ManifestListHeader *ret, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        ManifestListHeader h = { .format_version = 1 };
        int64_t v;
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r < 0)
                return error_prefix(e, r, "manifest list");

        r = ocf_reader_meta_i64(reader, "format-version", &v);
        if (r < 0 || (r > 0 && (v < 1 || v > 3)))
                return error_set(e, -EBADMSG, "manifest list has an invalid format-version");
        if (r > 0)
                h.format_version = (int)v;
        r = ocf_reader_meta_i64(reader, "snapshot-id", &h.snapshot_id);
        if (r <= 0)
                return error_set(e, -EBADMSG, "manifest list has no valid snapshot-id");
        /* Java writes String.valueOf(null) = "null" for a snapshot without parent. */
        if (!slice_eq_str(ocf_reader_meta(reader, "parent-snapshot-id"), "null")) {
                r = ocf_reader_meta_i64(reader, "parent-snapshot-id", &h.parent_snapshot_id);
                if (r < 0)
                        return error_set(e, -EBADMSG,
                                         "manifest list has an invalid parent-snapshot-id");
                h.has_parent_snapshot_id = r > 0;
        }
        r = ocf_reader_meta_i64(reader, "sequence-number", &h.sequence_number);
        if (r < 0)
                return error_set(e, -EBADMSG, "manifest list has an invalid sequence-number");
        r = ocf_reader_meta_i64(reader, "first-row-id", &h.first_row_id);
        if (r < 0)
                return error_set(e, -EBADMSG, "manifest list has an invalid first-row-id");
        h.has_first_row_id = r > 0;

        *ret = h;
        return 0;
}

/* The checks Java's ManifestFileWrapper makes while writing, plus ours for v3 lineage. */
static int manifest_list_check_entry(const ManifestListHeader *h, const ManifestFile *m, Error *e) {
        if (!m->path || !m->path[0])
                return error_set(e, -EINVAL, "manifest has no path");
        if (m->content != MANIFEST_CONTENT_DATA && m->content != MANIFEST_CONTENT_DELETES)
                return error_set(e, -EINVAL, "unknown content %" PRId32, m->content);
        if (!m->has_added_snapshot_id)
                return error_set(e, -EINVAL, "added_snapshot_id is unknown");
        if (!m->has_counts)
                return error_set(e, -EINVAL, "file and row counts are unknown");
        /* V1Writer.prepare(): "Cannot store delete manifests in a v1 table". */
        if (h->format_version == 1 && m->content != MANIFEST_CONTENT_DATA)
                return error_set(e, -EINVAL, "a format 1 list cannot hold delete manifests");
        if (m->n_partitions > 0 && !m->partitions)
                return error_set(e, -EINVAL, "partition summaries missing");
        if (h->format_version >= 3) {
                /* Spec "First Row ID Assignment": every data manifest gets a first_row_id in a
                 * v3 list, delete manifests never (V3Metadata.java:140-160). */
                if (m->content == MANIFEST_CONTENT_DATA && !m->has_first_row_id)
                        return error_set(e, -EINVAL, "data manifest has no first_row_id");
                if (m->content == MANIFEST_CONTENT_DELETES && m->has_first_row_id)
                        return error_set(e, -EINVAL, "delete manifest has a first_row_id");
        }
        return 0;
}

static int manifest_list_set_optional_bytes(avro_value_t *rec, int index, bool has, const Buf *b) {
        if (!has)
                return fields_set_null(rec, index);
        return fields_set_bytes(rec, index, b->data, b->len);
}

static int manifest_list_set_entry(const ListFields *lf, int version, const ManifestFile *m,
                                   avro_value_t *v) {
        const int64_t counts[6] = {
                m->added_files_count, m->existing_files_count, m->deleted_files_count,
                m->added_rows_count,  m->existing_rows_count,  m->deleted_rows_count,
        };
        int r;

        r = fields_set_string(v, lf->path, m->path);
        if (r >= 0)
                r = fields_set_long(v, lf->length, m->length);
        if (r >= 0)
                r = fields_set_int(v, lf->spec_id, m->partition_spec_id);
        /* Format 1 lists have no content or sequence numbers (V1Metadata.MANIFEST_LIST_SCHEMA). */
        if (r >= 0 && version >= 2)
                r = fields_set_int(v, lf->content, m->content);
        if (r >= 0 && version >= 2)
                r = fields_set_long(v, lf->sequence_number, m->sequence_number);
        if (r >= 0 && version >= 2)
                r = fields_set_long(v, lf->min_sequence_number, m->min_sequence_number);
        if (r >= 0)
                r = fields_set_long(v, lf->snapshot_id, m->added_snapshot_id);
        for (size_t i = 0; r >= 0 && i < 3; i++)
                r = fields_set_int(v, lf->counts[i], (int32_t)counts[i]);
        for (size_t i = 3; r >= 0 && i < 6; i++)
                r = fields_set_long(v, lf->counts[i], counts[i]);
        if (r < 0)
                return r;

        if (!m->has_partitions)
                r = fields_set_null(v, lf->partitions);
        else {
                avro_value_t array;

                r = fields_set_value(v, lf->partitions, &array);
                if (r >= 0 && avro_value_reset(&array) != 0)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < m->n_partitions; i++) {
                        const PartitionFieldSummary *s = &m->partitions[i];
                        avro_value_t item;

                        if (avro_value_append(&array, &item, NULL) != 0)
                                return -ENOMEM;
                        r = fields_set_bool(&item, lf->contains_null, s->contains_null);
                        if (r >= 0)
                                r = s->has_contains_nan ? fields_set_bool(&item, lf->contains_nan,
                                                                          s->contains_nan)
                                                        : fields_set_null(&item, lf->contains_nan);
                        if (r >= 0)
                                r = manifest_list_set_optional_bytes(&item, lf->lower_bound,
                                                                     s->has_lower_bound,
                                                                     &s->lower_bound);
                        if (r >= 0)
                                r = manifest_list_set_optional_bytes(&item, lf->upper_bound,
                                                                     s->has_upper_bound,
                                                                     &s->upper_bound);
                }
        }
        if (r >= 0)
                r = manifest_list_set_optional_bytes(v, lf->key_metadata, m->has_key_metadata,
                                                     &m->key_metadata);
        if (r >= 0 && version >= 3)
                r = m->has_first_row_id ? fields_set_long(v, lf->first_row_id, m->first_row_id)
                                        : fields_set_null(v, lf->first_row_id);
        return r;
}

static int manifest_list_set_meta_i64(OcfWriter *w, const char *key, int64_t v) {
        char text[32];

        (void)snprintf(text, sizeof(text), "%" PRId64, v);
        return ocf_writer_set_meta(w, key, slice_from_str(text));
}

int manifest_list_check(const ManifestListHeader *h, const ManifestFile *files, size_t n,
                        Error *e) {
        int r;

        if (h->format_version < 1 || h->format_version > 3)
                return error_set(e, -EINVAL, "unsupported format-version %d", h->format_version);
        if (h->format_version == 3 && !h->has_first_row_id)
                return error_set(e, -EINVAL,
                                 "a v3 manifest list needs the snapshot's first-row-id");
        for (size_t i = 0; i < n; i++) {
                r = manifest_list_check_entry(h, &files[i], e);
                if (r < 0)
                        return error_prefix(e, r, "manifest list entry %zu (%s)", i,
                                            files[i].path ? files[i].path : "no path");
        }
        return 0;
}

int manifest_list_writer_open(const ManifestListHeader *h, OcfCodec codec, OcfWriter **ret_writer,
                              ListFields *ret_fields, Error *e) {
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        _cleanup_(freep) char *iceberg_schema = NULL;
        FieldsRecord rec;
        int r;

        r = ocf_writer_new(h->format_version == 3   ? proto_manifest_list_v3_avsc
                           : h->format_version == 2 ? proto_manifest_list_v2_avsc
                                                    : proto_manifest_list_v1_avsc,
                           codec, &w);
        if (r < 0)
                return error_set(e, r, "cannot create the manifest list writer: %s",
                                 r == -EINVAL ? avro_strerror() : strerror(-r));
        r = fields_record_init(ocf_writer_schema_json(w), ocf_writer_schema(w), &rec, e);
        if (r >= 0)
                r = manifest_list_resolve(&rec, ret_fields, e);
        if (r < 0)
                return error_prefix(e, r, "embedded manifest list schema");

        /* ManifestListWriter.java: the same keys, numbers as decimal strings. */
        r = manifest_list_set_meta_i64(w, "snapshot-id", h->snapshot_id);
        if (r >= 0)
                r = h->has_parent_snapshot_id
                            ? manifest_list_set_meta_i64(w, "parent-snapshot-id",
                                                         h->parent_snapshot_id)
                            : ocf_writer_set_meta(w, "parent-snapshot-id", slice_from_str("null"));
        /* V1Writer writes no sequence-number: v1 snapshots have none. */
        if (r >= 0 && h->format_version >= 2)
                r = manifest_list_set_meta_i64(w, "sequence-number", h->sequence_number);
        if (r >= 0 && h->format_version == 3)
                r = manifest_list_set_meta_i64(w, "first-row-id", h->first_row_id);
        if (r >= 0)
                r = manifest_list_set_meta_i64(w, "format-version", h->format_version);
        /* Avro.java writes the Iceberg schema of every Avro file it produces. */
        if (r >= 0)
                r = schema_json_from_avro(ocf_writer_schema_json(w), &iceberg_schema);
        if (r >= 0)
                r = ocf_writer_set_meta(w, "iceberg.schema", slice_from_str(iceberg_schema));
        if (r < 0)
                return error_set(e, r, "cannot set manifest list metadata: %s", strerror(-r));

        *ret_writer = TAKE_PTR(w);
        return 0;
}

int manifest_list_encode(OcfWriter *w, const ListFields *lf, int version, const ManifestFile *files,
                         size_t n, Error *e) {
        avro_value_t value;
        int r;

        r = ocf_writer_value_new(w, &value);
        if (r < 0)
                return error_set(e, r, "out of memory");
        for (size_t i = 0; i < n; i++) {
                if (avro_value_reset(&value) != 0)
                        r = -ENOMEM;
                if (r >= 0)
                        r = manifest_list_set_entry(lf, version, &files[i], &value);
                if (r >= 0)
                        r = ocf_writer_append(w, &value);
                if (r < 0) {
                        error_set(e, r, "manifest list entry %zu (%s): cannot encode: %s", i,
                                  files[i].path, r == -EIO ? avro_strerror() : strerror(-r));
                        break;
                }
        }
        avro_value_decref(&value);
        return r;
}

int manifest_list_write(const ManifestListHeader *h, const ManifestFile *files, size_t n, Buf *out,
                        Error *e) {
        _cleanup_(ocf_writer_freep) OcfWriter *w = NULL;
        ListFields lf;
        int r;

        r = manifest_list_check(h, files, n, e);
        if (r < 0)
                return r;
        r = manifest_list_writer_open(h, OCF_CODEC_DEFLATE, &w, &lf, e);
        if (r < 0)
                return r;
        r = manifest_list_encode(w, &lf, h->format_version, files, n, e);
        if (r < 0)
                return r;
        r = ocf_writer_finish(w, out);
        if (r < 0)
                return error_set(e, r, "cannot write the manifest list: %s", strerror(-r));
        return 0;
}
