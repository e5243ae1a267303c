/* SPDX-License-Identifier: Apache-2.0 */
/* The one record loop over an Object Container File (see records.h). The checks come in the
 * order every reader of Iceberg files had them: the datum decodes, then the bound on records,
 * then room for its item, then the caller's reading of it. */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "avro/records.h"

/* The first allocation of the array; it doubles from there. */
#define RECORDS_INITIAL_ITEMS 16u

int records_schema(const OcfReader *reader, FieldsRecord *ret, Error *e) {
        return fields_record_init(ocf_reader_schema_json(reader), ocf_reader_schema(reader), ret,
                                  e);
}

/* Makes room for one more item and returns it zeroed. The array then counts it: from here on
 * the caller frees it with the others, however far it gets filled. */
static void *records_array_add(RecordsArray *array, size_t *cap, size_t item_size) {
        uint8_t *item;

        if (array->n_items == *cap) {
                size_t new_cap = *cap ? *cap * 2 : RECORDS_INITIAL_ITEMS;
                void *p;

                if (new_cap < *cap)
                        return NULL;
                p = reallocarray(array->items, new_cap, item_size);
                if (!p)
                        return NULL;
                array->items = p;
                *cap = new_cap;
        }
        item = (uint8_t *)array->items + array->n_items * item_size;
        memset(item, 0, item_size);
        array->n_items++;
        return item;
}

int records_read(OcfReader *reader, const RecordsOptions *o, RecordsFn fn, void *userdata,
                 RecordsArray *array, Error *e) {
        uint64_t n = 0;
        size_t cap = 0;
        int r;

        assert(o->item_size == 0 || (array && array->n_items == 0 && !array->items));

        for (;;) {
                avro_value_t *record;
                void *item = NULL;

                if (o->stop_after > 0 && n >= o->stop_after)
                        return 0;

                r = ocf_reader_read(reader, &record, e);
                if (r < 0)
                        return o->prefix ? error_prefix(e, r, "%s", o->prefix) : r;
                if (r == 0)
                        return 0;
                if (n >= o->max_records)
                        return error_set(e, -E2BIG, "%s has more than %" PRIu64 " entries", o->name,
                                         o->max_records);
                if (o->item_size > 0) {
                        item = records_array_add(array, &cap, o->item_size);
                        if (!item)
                                return error_set(e, -ENOMEM, "out of memory");
                }
                r = fn(record, n, item, userdata, e);
                if (r < 0)
                        return r;
                n++;
        }
}
