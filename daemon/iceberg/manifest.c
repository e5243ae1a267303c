/* SPDX-License-Identifier: Apache-2.0 */
/* Staged manifests (see manifest.h): manifest_entry records (spec "Manifests", field ids 0-4)
 * holding data_file r2 (ids 100-145), read through the field table (manifest_fields.h). A staged
 * manifest is accepted as it is only under the rules of docs/design.md section 2.1 (item 6);
 * partition summaries follow Java's PartitionSummary. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "avro/records.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_fields.h"
#include "util/checked.h"
#include "util/utf8.h"

/* How a partition field's values compare and serialize (spec Appendix D, single-value
 * binary serialization). Types we do not summarize turn summaries off for the manifest. */
typedef enum PartitionKind {
        PARTITION_KIND_UNSUPPORTED,
        PARTITION_KIND_INT,     /* int, date: 4 bytes little-endian */
        PARTITION_KIND_LONG,    /* long, time, timestamp(tz)(_ns): 8 bytes little-endian */
        PARTITION_KIND_BOOLEAN, /* 1 byte, false < true */
        PARTITION_KIND_STRING,  /* UTF-8 bytes, compared bytewise */
        PARTITION_KIND_BINARY,  /* the bytes, compared unsigned bytewise */
} PartitionKind;

typedef struct PartitionStats {
        PartitionKind kind;
        int index; /* position in the partition record */
        bool contains_null;
        bool has_bounds;
        int64_t min, max;         /* INT, LONG, BOOLEAN */
        Buf min_bytes, max_bytes; /* STRING, BINARY */
} PartitionStats;

/* What every entry of one staged manifest is read with: where its fields are, and the partition
 * summaries gathered over them. */
typedef struct EntryFields {
        ManifestFieldsLayout layout;
        bool summaries_supported;
        PartitionStats *stats; /* one per partition field */
        size_t n_stats;
} EntryFields;

StagedManifest *manifest_staged_free(StagedManifest *m) {
        if (!m)
                return NULL;
        free(m->schema_json);
        free(m->partition_spec_json);
        free(m->staged_location);
        for (size_t i = 0; i < m->n_partitions; i++) {
                buf_deinit(&m->partitions[i].lower_bound);
                buf_deinit(&m->partitions[i].upper_bound);
        }
        free(m->partitions);
        for (size_t i = 0; i < m->n_files; i++) {
                free(m->files[i].path);
                free(m->files[i].format);
        }
        free(m->files);
        free(m);
        return NULL;
}

static void entry_fields_deinit(EntryFields *ef) {
        for (size_t i = 0; i < ef->n_stats; i++) {
                buf_deinit(&ef->stats[i].min_bytes);
                buf_deinit(&ef->stats[i].max_bytes);
        }
        free(ef->stats);
}

static PartitionKind partition_kind(const FieldsType *t) {
        const char *lt = t->logical_type;

        switch (t->type) {
        case AVRO_INT32:
                return !lt || strcmp(lt, "date") == 0 ? PARTITION_KIND_INT
                                                      : PARTITION_KIND_UNSUPPORTED;
        case AVRO_INT64:
                if (!lt || strcmp(lt, "timestamp-micros") == 0 ||
                    strcmp(lt, "timestamp-nanos") == 0 || strcmp(lt, "time-micros") == 0)
                        return PARTITION_KIND_LONG;
                return PARTITION_KIND_UNSUPPORTED;
        case AVRO_BOOLEAN:
                return lt ? PARTITION_KIND_UNSUPPORTED : PARTITION_KIND_BOOLEAN;
        case AVRO_STRING:
                return lt ? PARTITION_KIND_UNSUPPORTED : PARTITION_KIND_STRING;
        case AVRO_BYTES:
                /* Decimals are bytes with a logical type: their serialization differs. */
                return lt ? PARTITION_KIND_UNSUPPORTED : PARTITION_KIND_BINARY;
        default:
                /* float/double (NaN rules), fixed (uuid, fixed, decimal): not summarized. */
                return PARTITION_KIND_UNSUPPORTED;
        }
}

/* The fields every staged entry must have, in the order they are checked. */
static const int32_t entry_required_fields[] = {
        MANIFEST_FIELD_FILE_PATH,    MANIFEST_FIELD_FILE_FORMAT, MANIFEST_FIELD_PARTITION,
        MANIFEST_FIELD_RECORD_COUNT, MANIFEST_FIELD_FILE_SIZE,
};

static int entry_fields_lacks(int32_t id, Error *e) {
        return error_set(e, -EBADMSG, "manifest schema lacks field %d (%s)", id,
                         manifest_fields_def(id)->name);
}

static int entry_fields_resolve(const FieldsRecord *entry, EntryFields *ef, Error *e) {
        ManifestFieldsLayout *l = &ef->layout;
        FieldsRecord partition;
        int r;

        *ef = (EntryFields){ 0 };
        manifest_fields_layout_init(entry, l);
        if (manifest_fields_index(l, MANIFEST_FIELD_STATUS) < 0)
                return entry_fields_lacks(MANIFEST_FIELD_STATUS, e);
        if (manifest_fields_index(l, MANIFEST_FIELD_DATA_FILE) < 0)
                return entry_fields_lacks(MANIFEST_FIELD_DATA_FILE, e);
        r = manifest_fields_layout_nest(l, e);
        if (r < 0)
                return error_prefix(e, r, "manifest schema");
        for (size_t i = 0; i < sizeof(entry_required_fields) / sizeof(*entry_required_fields); i++)
                if (manifest_fields_index(l, entry_required_fields[i]) < 0)
                        return entry_fields_lacks(entry_required_fields[i], e);

        /* The partition tuple (r102) has one field per partition field, in spec order. A
         * schema we cannot follow only costs the summaries, never the manifest. */
        if (fields_record_nested(&l->data_file, manifest_fields_index(l, MANIFEST_FIELD_PARTITION),
                                 &partition, NULL) < 0)
                return 0;
        ef->n_stats = avro_schema_record_size(partition.schema);
        if (ef->n_stats > 0) {
                ef->stats = calloc(ef->n_stats, sizeof(*ef->stats));
                if (!ef->stats) {
                        ef->n_stats = 0;
                        return error_set(e, -ENOMEM, "out of memory");
                }
        }
        ef->summaries_supported = true;
        for (size_t i = 0; i < ef->n_stats; i++) {
                PartitionStats *st = &ef->stats[i];
                FieldsType t;

                st->index = (int)i;
                buf_init(&st->min_bytes, OCF_MAX_BLOCK_BYTES);
                buf_init(&st->max_bytes, OCF_MAX_BLOCK_BYTES);
                st->kind = fields_type(&partition, (int)i, &t, NULL) < 0
                                   ? PARTITION_KIND_UNSUPPORTED
                                   : partition_kind(&t);
                if (st->kind == PARTITION_KIND_UNSUPPORTED)
                        ef->summaries_supported = false;
        }
        return 0;
}

static int bytes_compare(const void *a, size_t a_len, const void *b, size_t b_len) {
        int c = memcmp(a, b, a_len < b_len ? a_len : b_len);

        if (c != 0)
                return c;
        return a_len < b_len ? -1 : a_len > b_len;
}

static int partition_stats_update_bytes(PartitionStats *st, const void *p, size_t len) {
        int r;

        if (!st->has_bounds || bytes_compare(p, len, st->min_bytes.data, st->min_bytes.len) < 0) {
                st->min_bytes.len = 0;
                r = buf_append(&st->min_bytes, p, len);
                if (r >= 0)
                        r = buf_reserve(&st->min_bytes, 0);
                if (r < 0)
                        return r;
        }
        if (!st->has_bounds || bytes_compare(p, len, st->max_bytes.data, st->max_bytes.len) > 0) {
                st->max_bytes.len = 0;
                r = buf_append(&st->max_bytes, p, len);
                if (r >= 0)
                        r = buf_reserve(&st->max_bytes, 0);
                if (r < 0)
                        return r;
        }
        st->has_bounds = true;
        return 0;
}

static void partition_stats_update_number(PartitionStats *st, int64_t v) {
        if (!st->has_bounds || v < st->min)
                st->min = v;
        if (!st->has_bounds || v > st->max)
                st->max = v;
        st->has_bounds = true;
}

/* Reads one partition value; r > 0 with the value, 0 for null. */
static int partition_stats_update(PartitionStats *st, avro_value_t *tuple, Error *e) {
        const void *p = NULL;
        avro_value_t v;
        int64_t number = 0;
        /* The getters leave these unset for a null or an error. */
        int32_t i32 = 0;
        size_t len = 0;
        bool b = false;
        int r;

        switch (st->kind) {
        case PARTITION_KIND_INT:
                r = fields_get_int(tuple, st->index, &i32, e);
                number = i32;
                break;
        case PARTITION_KIND_LONG:
                r = fields_get_long(tuple, st->index, &number, e);
                break;
        case PARTITION_KIND_BOOLEAN:
                r = fields_get_bool(tuple, st->index, &b, e);
                number = b;
                break;
        case PARTITION_KIND_STRING:
                /* Not fields_get_string(): a partition string may hold any UTF-8, NUL included. */
                r = fields_get_value(tuple, st->index, &v, e);
                if (r > 0 && (avro_value_get_type(&v) != AVRO_STRING ||
                              avro_value_get_string(&v, (const char **)&p, &len) != 0 || len == 0))
                        r = error_set(e, -EBADMSG, "partition value unreadable");
                len = r > 0 ? len - 1 : 0; /* avro-c counts the NUL terminator */
                break;
        case PARTITION_KIND_BINARY:
                r = fields_get_bytes(tuple, st->index, &p, &len, e);
                break;
        default:
                return 0;
        }
        if (r < 0)
                return r;
        if (r == 0) {
                st->contains_null = true;
                return 0;
        }
        if (st->kind == PARTITION_KIND_STRING || st->kind == PARTITION_KIND_BINARY)
                return partition_stats_update_bytes(st, p ? p : "", len) < 0
                               ? error_set(e, -ENOMEM, "out of memory")
                               : 1;
        partition_stats_update_number(st, number);
        return 1;
}

static int bound_serialize(const PartitionStats *st, int64_t v, const Buf *bytes, Buf *out) {
        uint8_t le[8];
        size_t n = st->kind == PARTITION_KIND_INT ? 4 : st->kind == PARTITION_KIND_BOOLEAN ? 1 : 8;

        buf_init(out, OCF_MAX_BLOCK_BYTES);
        if (st->kind == PARTITION_KIND_STRING || st->kind == PARTITION_KIND_BINARY) {
                int r = buf_append(out, bytes->data, bytes->len);

                return r < 0 ? r : buf_reserve(out, 0);
        }
        for (size_t i = 0; i < 8; i++)
                le[i] = (uint8_t)((uint64_t)v >> (8 * i));
        return buf_append(out, le, n);
}

static int manifest_staged_summarize(StagedManifest *m, const EntryFields *ef, Error *e) {
        if (!ef->summaries_supported)
                return 0;
        m->has_partitions = true;
        if (ef->n_stats == 0)
                return 0;
        m->partitions = calloc(ef->n_stats, sizeof(*m->partitions));
        if (!m->partitions)
                return error_set(e, -ENOMEM, "out of memory");
        m->n_partitions = ef->n_stats;

        for (size_t i = 0; i < ef->n_stats; i++) {
                const PartitionStats *st = &ef->stats[i];
                PartitionFieldSummary *s = &m->partitions[i];
                int r;

                /* Java's PartitionSummary: contains_nan is false, not null, for non-float types. */
                s->contains_null = st->contains_null;
                s->has_contains_nan = true;
                s->contains_nan = false;
                buf_init(&s->lower_bound, OCF_MAX_BLOCK_BYTES);
                buf_init(&s->upper_bound, OCF_MAX_BLOCK_BYTES);
                if (!st->has_bounds)
                        continue;
                buf_deinit(&s->lower_bound);
                r = bound_serialize(st, st->min, &st->min_bytes, &s->lower_bound);
                if (r >= 0) {
                        buf_deinit(&s->upper_bound);
                        r = bound_serialize(st, st->max, &st->max_bytes, &s->upper_bound);
                }
                if (r < 0)
                        return error_set(e, -ENOMEM, "out of memory");
                s->has_lower_bound = s->has_upper_bound = true;
        }
        return 0;
}

static const char *entry_status_name(int32_t status) {
        switch (status) {
        case MANIFEST_ENTRY_EXISTING:
                return "EXISTING";
        case MANIFEST_ENTRY_ADDED:
                return "ADDED";
        case MANIFEST_ENTRY_DELETED:
                return "DELETED";
        default:
                return NULL;
        }
}

/* One parse: the manifest it fills, its limits, and what it charged to limits->hold. */
typedef struct StagedManifestRead {
        StagedManifest *m;
        EntryFields *ef;
        const ManifestLimits *limits;
        uint64_t charged;
} StagedManifestRead;

/* Counts n more bytes the parsed manifest keeps against the request's budget: an entry's before
 * they are copied, the metadata's and summaries' (bounded by the file, counted as read) once
 * made. */
static int manifest_staged_charge(StagedManifestRead *read, uint64_t n, Error *e) {
        int r;

        if (!read->limits->hold)
                return 0;
        r = budget_take(read->limits->hold, n);
        if (r < 0)
                return error_set(e, r, "no room to hold %" PRIu64 " more bytes (%s)", n,
                                 r == -EBUSY ? "the daemon's intake budget is spent"
                                             : "the request's intake budget is spent");
        read->charged += n;
        return 0;
}

/* The bytes of the manifest's metadata it keeps: the writer's schema and partition spec, and
 * the staged location a copy names. */
static uint64_t manifest_staged_meta_bytes(const StagedManifest *m) {
        return (m->schema_json ? strlen(m->schema_json) + 1 : 0) +
               (m->partition_spec_json ? strlen(m->partition_spec_json) + 1 : 0) +
               (m->staged_location ? strlen(m->staged_location) + 1 : 0);
}

/* ... and of its partition summaries, each bound as long as a partition value of an entry. */
static uint64_t manifest_staged_summary_bytes(const StagedManifest *m) {
        uint64_t n = m->n_partitions * sizeof(*m->partitions);

        for (size_t i = 0; i < m->n_partitions; i++)
                n += m->partitions[i].lower_bound.cap + m->partitions[i].upper_bound.cap;
        return n;
}

/* Every rejection names the entry (0-based) and its file: "entry 2 (s3://b/x.parquet): ...". */
#define ENTRY_ERROR(code, ...) (error_set(e, (code), __VA_ARGS__), ENTRY_PREFIX(code))
#define ENTRY_PREFIX(code) error_prefix(e, (code), "entry %" PRIu64 " (%s)", idx, info->path)

/* One entry on its way through the checks below, each reading the fields it needs (through the
 * field table, in the order of the checks: an entry's first problem is the one named). */
typedef struct StagedEntry {
        avro_value_t *datum;
        uint64_t idx;
        ManifestEntryFields f; /* borrowed from datum */
        DataFileInfo *info;
} StagedEntry;

/* The data file's path and format: bounded and charged before anything of the entry is kept. */
static int manifest_staged_entry_path(StagedManifestRead *read, StagedEntry *x, Error *e) {
        const ManifestLimits *limits = read->limits;
        const ManifestFieldsLayout *l = &read->ef->layout;
        const ManifestFieldValue *path = &x->f.file_path;
        uint64_t idx = x->idx;
        int r;

        /* The request's files are counted as they are decoded: a request over its bound stops
         * here, before the rest of its entries are held (docs/design.md section 2.1). */
        if (limits->entries_left) {
                if (*limits->entries_left == 0)
                        return error_set(e, -EDQUOT,
                                         "entry %" PRIu64 ": the request names more data files",
                                         idx);
                (*limits->entries_left)--;
        }

        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_DATA_FILE,
                                 MANIFEST_FIELD_FILE_PATH);
        if (r < 0)
                return error_prefix(e, r, "entry %" PRIu64, idx);
        if (!x->f.data_file.is_set)
                return error_set(e, -EBADMSG, "entry %" PRIu64 ": data_file is null", idx);
        if (!path->is_set || path->len == 0)
                return error_set(e, -EINVAL, "entry %" PRIu64 ": file_path is empty", idx);
        /* Every reader opens it, and icecommitd keeps it for the request's life. */
        if (limits->max_path_bytes > 0 && path->len > limits->max_path_bytes)
                return error_set(e, -E2BIG,
                                 "entry %" PRIu64 " ('%.*s...'): file_path is %zu bytes, above "
                                 "the limit of %zu (commit.max-path-bytes)",
                                 idx, (int)(path->len < 64 ? path->len : 64), path->str, path->len,
                                 limits->max_path_bytes);
        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_FILE_FORMAT);
        if (r < 0)
                return error_prefix(e, r, "entry %" PRIu64, idx);
        r = manifest_staged_charge(read,
                                   sizeof(*x->info) + path->len + 1 + x->f.file_format.len + 1, e);
        if (r < 0)
                return error_prefix(e, r, "entry %" PRIu64, idx);
        x->info->path = strndup(path->str, path->len);
        if (!x->info->path)
                return error_set(e, -ENOMEM, "out of memory");
        return 0;
}

/* ADDED, and what is inherited at commit time left null. */
static int manifest_staged_entry_status(StagedManifestRead *read, StagedEntry *x, Error *e) {
        /* Inherited at commit time (spec "Sequence Number Inheritance", "Snapshot ID
         * Inheritance"): a staged entry must leave all three null. */
        static const int32_t inherited[] = { MANIFEST_FIELD_SNAPSHOT_ID,
                                             MANIFEST_FIELD_SEQUENCE_NUMBER,
                                             MANIFEST_FIELD_FILE_SEQUENCE_NUMBER };
        const ManifestFieldsLayout *l = &read->ef->layout;
        const DataFileInfo *info = x->info;
        uint64_t idx = x->idx;
        const char *status_name;
        int32_t status;
        int r;

        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_STATUS);
        if (r < 0)
                return ENTRY_PREFIX(r);
        if (!x->f.status.is_set)
                return ENTRY_ERROR(-EBADMSG, "status is null");
        status = (int32_t)x->f.status.number;
        status_name = entry_status_name(status);
        if (status != MANIFEST_ENTRY_ADDED && status_name)
                return ENTRY_ERROR(-EINVAL, "status %s, only ADDED entries can be staged",
                                   status_name);
        if (status != MANIFEST_ENTRY_ADDED)
                return ENTRY_ERROR(-EINVAL,
                                   "unknown status %" PRId32 ", only ADDED entries can be staged",
                                   status);

        for (size_t i = 0; i < sizeof(inherited) / sizeof(*inherited); i++) {
                const ManifestFieldDef *def = manifest_fields_def(inherited[i]);
                const ManifestFieldValue *v = manifest_fields_slot(&x->f, def);

                r = manifest_fields_read_ids(l, x->datum, &inherited[i], 1, &x->f, e);
                if (r < 0)
                        return ENTRY_PREFIX(r);
                if (v->is_set)
                        return ENTRY_ERROR(-EINVAL,
                                           "%s is %" PRId64 ", staged entries must leave it null",
                                           def->name, v->number);
        }
        return 0;
}

/* The file's content matches the manifest's: data files in data manifests, equality deletes
 * (with their equality_ids) in delete manifests. */
static int manifest_staged_entry_content(StagedManifestRead *read, StagedEntry *x, Error *e) {
        const ManifestFieldsLayout *l = &read->ef->layout;
        StagedManifest *m = read->m;
        DataFileInfo *info = x->info;
        uint64_t idx = x->idx;
        int32_t content;
        size_t n_ids = 0;
        int r;

        /* v1 data files have no content field: data. */
        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_CONTENT);
        if (r < 0)
                return ENTRY_PREFIX(r);
        content = x->f.content.is_set ? (int32_t)x->f.content.number : DATA_FILE_CONTENT_DATA;
        info->content = content;
        if (m->content == MANIFEST_CONTENT_DATA && content != DATA_FILE_CONTENT_DATA)
                return ENTRY_ERROR(-EINVAL,
                                   "content %" PRId32
                                   " (%s) in a data manifest, only data files belong there",
                                   content,
                                   content == DATA_FILE_CONTENT_POSITION_DELETES
                                           ? "position deletes"
                                   : content == DATA_FILE_CONTENT_EQUALITY_DELETES
                                           ? "equality deletes"
                                           : "unknown");
        if (m->content == MANIFEST_CONTENT_DELETES && content == DATA_FILE_CONTENT_DATA)
                return ENTRY_ERROR(-EINVAL, "a data file in a delete manifest");
        /* Position deletes must be deletion vectors in v3 tables and need the referenced data
         * files' checks (spec "Deletion Vectors"); icecommitd does not commit them. */
        if (m->content == MANIFEST_CONTENT_DELETES && content == DATA_FILE_CONTENT_POSITION_DELETES)
                return ENTRY_ERROR(-EINVAL,
                                   "content 1 (position deletes): position delete files and "
                                   "deletion vectors cannot be staged, only equality deletes");
        if (m->content == MANIFEST_CONTENT_DELETES && content != DATA_FILE_CONTENT_EQUALITY_DELETES)
                return ENTRY_ERROR(-EINVAL, "unknown content %" PRId32, content);
        if (content != DATA_FILE_CONTENT_EQUALITY_DELETES)
                return 0;

        /* Spec: equality_ids is required for equality deletes; without it a reader cannot apply
         * them. */
        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_EQUALITY_IDS);
        if (r < 0)
                return ENTRY_PREFIX(r);
        if (!x->f.equality_ids.is_set ||
            avro_value_get_type(&x->f.equality_ids.value) != AVRO_ARRAY ||
            avro_value_get_size(&x->f.equality_ids.value, &n_ids) != 0 || n_ids == 0)
                return ENTRY_ERROR(-EINVAL, "equality delete file without equality_ids");
        m->n_equality_delete_files++;
        return 0;
}

/* No row ids yet; known, non-negative counts and sizes; the format kept. */
static int manifest_staged_entry_sizes(StagedManifestRead *read, StagedEntry *x, Error *e) {
        const ManifestFieldsLayout *l = &read->ef->layout;
        const ManifestFieldValue *format = &x->f.file_format;
        StagedManifest *m = read->m;
        DataFileInfo *info = x->info;
        uint64_t idx = x->idx;
        int r;

        /* Row ids are assigned by the commit; Java drops a first_row_id on ADDED entries
         * (GenericManifestEntry.wrapAppend), keeping one would collide ranges (#13232). */
        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_FIRST_ROW_ID);
        if (r < 0)
                return ENTRY_PREFIX(r);
        if (x->f.first_row_id.is_set)
                return ENTRY_ERROR(-EINVAL,
                                   "first_row_id is %" PRId64 ", ADDED entries must leave it null",
                                   x->f.first_row_id.number);

        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_RECORD_COUNT);
        if (r < 0)
                return ENTRY_PREFIX(r);
        if (!x->f.record_count.is_set)
                return ENTRY_ERROR(-EINVAL, "record_count is null, it must be known");
        info->record_count = x->f.record_count.number;
        if (info->record_count < 0)
                return ENTRY_ERROR(-EINVAL, "record_count is %" PRId64 ", it must not be negative",
                                   info->record_count);
        r = manifest_fields_read(l, x->datum, &x->f, e, MANIFEST_FIELD_FILE_SIZE);
        if (r < 0)
                return ENTRY_PREFIX(r);
        if (!x->f.file_size_in_bytes.is_set)
                return ENTRY_ERROR(-EINVAL, "file_size_in_bytes is null, it must be known");
        info->file_size_in_bytes = x->f.file_size_in_bytes.number;
        if (info->file_size_in_bytes < 0)
                return ENTRY_ERROR(-EINVAL,
                                   "file_size_in_bytes is %" PRId64 ", it must not be negative",
                                   info->file_size_in_bytes);

        if (!format->is_set)
                return ENTRY_ERROR(-EINVAL, "file_format is null");
        info->format = strndup(format->str, format->len);
        if (!info->format)
                return error_set(e, -ENOMEM, "out of memory");

        if (checked_add_i64(&m->added_rows_count, m->added_rows_count, info->record_count) ||
            checked_add_i64(&m->added_files_size, m->added_files_size, info->file_size_in_bytes))
                return ENTRY_ERROR(-EINVAL, "row or byte totals overflow");
        return 0;
}

/* The entry's partition values into the manifest's partition summaries. */
static int manifest_staged_entry_partition(StagedManifestRead *read, StagedEntry *x, Error *e) {
        EntryFields *ef = read->ef;
        const DataFileInfo *info = x->info;
        uint64_t idx = x->idx;
        avro_value_t *tuple = &x->f.partition.value;
        int r;

        if (!ef->summaries_supported)
                return 0;
        r = manifest_fields_read(&ef->layout, x->datum, &x->f, e, MANIFEST_FIELD_PARTITION);
        if (r < 0)
                return ENTRY_PREFIX(r);
        if (!x->f.partition.is_set || avro_value_get_type(tuple) != AVRO_RECORD)
                return ENTRY_ERROR(-EBADMSG, "partition is not a record");
        for (size_t i = 0; i < ef->n_stats; i++) {
                r = partition_stats_update(&ef->stats[i], tuple, e);
                if (r < 0)
                        return error_prefix(e, r, "entry %" PRIu64 " (%s): partition field %zu",
                                            idx, info->path, i);
        }
        return 0;
}

#undef ENTRY_ERROR
#undef ENTRY_PREFIX

/* Validates one entry against the staging rules and records its data file in `info`. */
static int manifest_staged_read_entry(StagedManifestRead *read, avro_value_t *entry, uint64_t idx,
                                      DataFileInfo *info, Error *e) {
        StagedEntry x = { .datum = entry, .idx = idx, .info = info };
        int r;

        r = manifest_staged_entry_path(read, &x, e);
        if (r >= 0)
                r = manifest_staged_entry_status(read, &x, e);
        if (r >= 0)
                r = manifest_staged_entry_content(read, &x, e);
        if (r >= 0)
                r = manifest_staged_entry_sizes(read, &x, e);
        if (r >= 0)
                r = manifest_staged_entry_partition(read, &x, e);
        return r;
}

static int manifest_staged_read_meta(OcfReader *reader, StagedManifest *m, Error *e) {
        Slice content;
        int64_t v;
        int r;

        /* Java's V1Writer writes format-version "1" (older writers none); whether a format 1
         * manifest may be committed is the table's call (snapshot-id inheritance), not ours. */
        r = ocf_reader_meta_i64(reader, "format-version", &v);
        if (r == 0)
                return error_set(e, -EINVAL, "manifest has no format-version metadata");
        if (r < 0)
                return error_set(e, -EINVAL, "manifest has an invalid format-version");
        if (v < 1 || v > 3)
                return error_set(e, -EINVAL,
                                 "format-version %" PRId64 " is not supported (1, 2 or 3)", v);
        m->format_version = (int)v;

        /* Format 1 manifests hold data only and carry no content key. */
        content = ocf_reader_meta(reader, "content");
        if (!content.ptr && v == 1)
                content = slice_from_str("data");
        if (!content.ptr)
                return error_set(e, -EINVAL, "manifest has no content metadata");
        if (slice_eq_str(content, "deletes"))
                m->content = MANIFEST_CONTENT_DELETES;
        else if (slice_eq_str(content, "data"))
                m->content = MANIFEST_CONTENT_DATA;
        else if (content.len <= 64 && utf8_ascii_is_printable(content.ptr, content.len))
                return error_set(e, -EINVAL,
                                 "manifest content '%.*s' is neither 'data' nor 'deletes'",
                                 (int)content.len, (const char *)content.ptr);
        else
                return error_set(e, -EINVAL,
                                 "manifest content metadata is neither 'data' nor 'deletes'");

        r = ocf_reader_meta_i64(reader, "partition-spec-id", &v);
        if (r == 0)
                return error_set(e, -EINVAL, "manifest has no partition-spec-id metadata");
        if (r < 0 || v < 0 || v > INT32_MAX)
                return error_set(e, -EINVAL, "manifest has an invalid partition-spec-id");
        m->partition_spec_id = (int32_t)v;

        r = ocf_reader_meta_strdup(reader, "schema", &m->schema_json);
        if (r >= 0)
                r = ocf_reader_meta_strdup(reader, "partition-spec", &m->partition_spec_json);
        if (r >= 0)
                r = ocf_reader_meta_strdup(reader, MANIFEST_META_STAGED_LOCATION,
                                           &m->staged_location);
        if (r == -ENOMEM)
                return error_set(e, r, "out of memory");
        if (r < 0)
                return error_set(e, r,
                                 "manifest schema, partition-spec or %s metadata contains a NUL "
                                 "byte",
                                 MANIFEST_META_STAGED_LOCATION);
        /* Both are JSON documents (Java's SchemaParser, PartitionSpecParser): UTF-8. */
        if ((m->schema_json && !utf8_is_valid(m->schema_json, strlen(m->schema_json))) ||
            (m->partition_spec_json &&
             !utf8_is_valid(m->partition_spec_json, strlen(m->partition_spec_json))))
                return error_set(e, -EINVAL,
                                 "manifest schema or partition-spec metadata is not valid UTF-8");
        return 0;
}

static int manifest_staged_read_record(avro_value_t *record, uint64_t index, void *item,
                                       void *userdata, Error *e) {
        StagedManifestRead *read = userdata;

        return manifest_staged_read_entry(read, record, index, item, e);
}

static int manifest_staged_parse_entries(OcfReader *reader, StagedManifestRead *read,
                                         uint64_t max_entries, Error *e) {
        /* added_files_count is an int32_t: never more entries than it counts, whatever the limit.
         */
        const RecordsOptions options = {
                .max_records = max_entries < INT32_MAX ? max_entries : INT32_MAX,
                .name = "manifest",
                .item_size = sizeof(DataFileInfo),
        };
        StagedManifest *m = read->m;
        RecordsArray array = { 0 };
        int r;

        r = records_read(reader, &options, manifest_staged_read_record, read, &array, e);
        /* m owns every item, also those of a failed read. */
        m->files = array.items;
        m->n_files = array.n_items;
        if (r < 0)
                return r;
        if (m->n_files == 0)
                return error_set(e, -EINVAL, "manifest has no entries");
        m->added_files_count = (int32_t)m->n_files;
        return 0;
}

int manifest_staged_parse(Slice bytes, const char *location, const ManifestLimits *limits,
                          StagedManifest **ret_manifest, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        _cleanup_(manifest_staged_freep) StagedManifest *m = NULL;
        static const ManifestLimits defaults = { .max_entries = MANIFEST_DEFAULT_MAX_ENTRIES };
        EntryFields ef = { 0 };
        StagedManifestRead read = { .limits = limits ? limits : &defaults, .ef = &ef };
        FieldsRecord entry;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return error_set(e, -ENOMEM, "out of memory");
        read.m = m;

        r = manifest_staged_charge(&read, sizeof(*m), e);
        if (r >= 0)
                r = ocf_reader_open(bytes, &reader, e);
        if (r >= 0) {
                ocf_reader_limit_datum_bytes(reader, read.limits->max_entry_bytes,
                                             "storage.max-manifest-entry-bytes");
                r = manifest_staged_read_meta(reader, m, e);
        }
        if (r >= 0)
                r = manifest_staged_charge(&read, manifest_staged_meta_bytes(m), e);
        if (r >= 0)
                r = records_schema(reader, &entry, e);
        if (r >= 0)
                r = entry_fields_resolve(&entry, &ef, e);
        if (r >= 0)
                r = manifest_staged_parse_entries(reader, &read, read.limits->max_entries, e);
        if (r >= 0)
                r = manifest_staged_summarize(m, &ef, e);
        if (r >= 0)
                r = manifest_staged_charge(&read, manifest_staged_summary_bytes(m), e);
        entry_fields_deinit(&ef);
        if (r < 0) {
                /* Nothing of a refused manifest is kept: its bytes go back with it. */
                if (read.limits->hold)
                        budget_release(read.limits->hold, read.charged);
                return location ? error_prefix(e, r, "manifest '%s'", location) : r;
        }

        *ret_manifest = TAKE_PTR(m);
        return 0;
}

int manifest_staged_copy(Slice bytes, const char *staged_location, Buf *out, Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        const OcfMeta added = { .key = (char *)MANIFEST_META_STAGED_LOCATION,
                                .value = slice_from_str(staged_location) };
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r < 0)
                return r;
        /* A writer's own icecommit.* key would speak for icecommitd in every receipt rebuilt
         * from the table. */
        for (size_t i = 0; i < ocf_reader_n_meta(reader); i++) {
                const char *key;
                Slice value;

                ocf_reader_meta_at(reader, i, &key, &value);
                if (strncmp(key, MANIFEST_META_RESERVED_PREFIX,
                            strlen(MANIFEST_META_RESERVED_PREFIX)) == 0)
                        return error_set(e, -EINVAL,
                                         "the manifest's header has a key under '%s': those "
                                         "are icecommitd's",
                                         MANIFEST_META_RESERVED_PREFIX);
        }
        r = ocf_writer_copy_with_meta(reader, &added, 1, out);
        if (r == -E2BIG)
                return error_set(e, r, "its copy would be larger than %zu bytes", out->max);
        if (r < 0)
                return error_set(e, r, "out of memory");
        return 0;
}

/* The counts of manifest_count_entries(), by status, and where it reads them. */
typedef struct ManifestCount {
        ManifestFieldsLayout layout;
        int64_t files[3], rows[3];
} ManifestCount;

static int manifest_count_record(avro_value_t *v, uint64_t index, void *item, void *userdata,
                                 Error *e) {
        ManifestCount *c = userdata;
        ManifestEntryFields f = { 0 };
        int32_t status = 0;
        int64_t count = 0;
        int r;

        (void)item;
        r = manifest_fields_read(&c->layout, v, &f, e, MANIFEST_FIELD_STATUS);
        if (r >= 0) {
                r = f.status.is_set;
                status = (int32_t)f.status.number;
        }
        if (r == 0 ||
            (r > 0 && (status < MANIFEST_ENTRY_EXISTING || status > MANIFEST_ENTRY_DELETED)))
                return error_set(e, -EBADMSG, "entry %" PRIu64 ": status is null or unknown",
                                 index);
        if (r > 0)
                r = manifest_fields_read(&c->layout, v, &f, e, MANIFEST_FIELD_DATA_FILE,
                                         MANIFEST_FIELD_RECORD_COUNT);
        if (r >= 0) {
                r = f.data_file.is_set && f.record_count.is_set;
                count = f.record_count.number;
        }
        if (r < 0)
                return error_prefix(e, r, "entry %" PRIu64, index);
        if (r == 0 || count < 0)
                return error_set(e, -EBADMSG, "entry %" PRIu64 ": record_count is null or negative",
                                 index);
        if (checked_add_i64(&c->rows[status], c->rows[status], count) ||
            c->files[status] >= INT32_MAX)
                return error_set(e, -EBADMSG, "entry %" PRIu64 ": counts overflow", index);
        c->files[status]++;
        return 0;
}

/* Committed manifests of any format: only status and data_file.record_count matter here, so
 * nothing else is read (v1 data files, delete files and unknown columns all count alike). */
int manifest_count_entries(Slice bytes, const ManifestLimits *limits, ManifestCounts *ret,
                           Error *e) {
        _cleanup_(ocf_reader_freep) OcfReader *reader = NULL;
        const RecordsOptions options = {
                .max_records = limits ? limits->max_entries : MANIFEST_DEFAULT_MAX_ENTRIES,
                .name = "manifest",
                .prefix = "manifest",
        };
        ManifestCount count = { 0 };
        ManifestFieldsLayout *l = &count.layout;
        FieldsRecord entry;
        int r;

        r = ocf_reader_open(bytes, &reader, e);
        if (r >= 0)
                r = records_schema(reader, &entry, e);
        if (r < 0)
                return error_prefix(e, r, "manifest");
        manifest_fields_layout_init(&entry, l);
        if (manifest_fields_index(l, MANIFEST_FIELD_STATUS) < 0 ||
            manifest_fields_index(l, MANIFEST_FIELD_DATA_FILE) < 0)
                return error_set(e, -EBADMSG, "manifest schema lacks status (0) or data_file (2)");
        r = manifest_fields_layout_nest(l, e);
        if (r < 0)
                return error_prefix(e, r, "manifest schema");
        if (manifest_fields_index(l, MANIFEST_FIELD_RECORD_COUNT) < 0)
                return error_set(e, -EBADMSG, "manifest schema lacks field %d (record_count)",
                                 MANIFEST_FIELD_RECORD_COUNT);

        r = records_read(reader, &options, manifest_count_record, &count, /* array= */ NULL, e);
        if (r < 0)
                return r;

        *ret = (ManifestCounts){
                .added_files = (int32_t)count.files[MANIFEST_ENTRY_ADDED],
                .existing_files = (int32_t)count.files[MANIFEST_ENTRY_EXISTING],
                .deleted_files = (int32_t)count.files[MANIFEST_ENTRY_DELETED],
                .added_rows = count.rows[MANIFEST_ENTRY_ADDED],
                .existing_rows = count.rows[MANIFEST_ENTRY_EXISTING],
                .deleted_rows = count.rows[MANIFEST_ENTRY_DELETED],
        };
        return 0;
}

void manifest_counts_apply(const ManifestCounts *counts, ManifestFile *m) {
        m->added_files_count = counts->added_files;
        m->existing_files_count = counts->existing_files;
        m->deleted_files_count = counts->deleted_files;
        m->added_rows_count = counts->added_rows;
        m->existing_rows_count = counts->existing_rows;
        m->deleted_rows_count = counts->deleted_rows;
        m->has_counts = true;
}
