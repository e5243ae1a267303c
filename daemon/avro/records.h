/* SPDX-License-Identifier: Apache-2.0 */
/* The records of an Object Container File, read in file order by one loop: datums decoded by the
 * reader (ocf_reader.c: blocks, codecs, inflated bytes bounded), a bound on how many there may be,
 * and an array of one item per record that grows as they come. Every reader of a file of records
 * (manifests, manifest lists, manifest entries) goes through it. Pure. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "avro/fields.h"
#include "avro/ocf.h"
#include "util/error.h"

/* Pairs the two views of an open reader's writer schema (fields_record_init()): the record whose
 * fields the records have. Returns 0 or -EBADMSG with the reason. */
int records_schema(const OcfReader *reader, FieldsRecord *ret, Error *e);

/* Reads record number `index` (counted from 0 over the file; `record` is borrowed from the
 * reader until the next record) into `item`: zeroed, RecordsOptions.item_size bytes, NULL when
 * that is 0. Returns 0, or <0 with the reason in *e, which ends the loop. */
typedef int (*RecordsFn)(avro_value_t *record, uint64_t index, void *item, void *userdata,
                         Error *e);

typedef struct RecordsOptions {
        uint64_t max_records; /* one record more: -E2BIG "<name> has more than <max> entries" */
        const char *name;     /* what the file is, for that message: "manifest" */
        const char *prefix;   /* NULL, or what the reader's own errors are prefixed with */
        size_t item_size;     /* of one item of the array; 0: no array */
        uint64_t stop_after;  /* stop, as at the end, after this many records; 0: read all */
} RecordsOptions;

/* One item per record handed to the callback, in file order; items is NULL while n_items is 0.
 * Owned by the caller, who frees every item, also after a failure: then the last item is the
 * one the callback failed on, filled as far as it got. */
typedef struct RecordsArray {
        void *items;
        size_t n_items;
} RecordsArray;

/* Calls fn for every record after the reader's current position, collecting items in *array
 * (empty on entry; NULL when o->item_size is 0). Returns 0 at the end of the file (or after
 * o->stop_after records: later blocks are not even inflated), or <0: the
 * reader's error (-EBADMSG, -EOPNOTSUPP, -E2BIG, prefixed with o->prefix), -E2BIG past
 * o->max_records, -ENOMEM, or fn's, with the reason in *e. */
int records_read(OcfReader *reader, const RecordsOptions *o, RecordsFn fn, void *userdata,
                 RecordsArray *array, Error *e);
