/* SPDX-License-Identifier: Apache-2.0 */
/* Compact metadata text with a memory of the history (see metadata_text.h). A remembered array
 * is the text of its elements joined by commas plus, per element, its address and where its
 * text ends; the next array reuses the longest prefix of the same addresses (appends keep it
 * whole, an expiry that removes an old snapshot keeps what precedes it) and encodes the rest. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/metadata_text.h"
#include "util/checked.h"

/* The arrays of table metadata that grow with the history. */
static const char *const memo_keys[] = { "snapshots", "snapshot-log" };
#define MEMO_KEYS 2

typedef struct MemoArray {
        json_t **items; /* references */
        size_t *ends;   /* text[0, ends[i]) holds elements 0..i */
        size_t n_items, cap_items;
        Buf text; /* "e0,e1,..." */
} MemoArray;

struct MetadataTextMemo {
        MemoArray arrays[MEMO_KEYS];
};

MetadataTextMemo *metadata_text_memo_new(void) {
        MetadataTextMemo *m = calloc(1, sizeof(*m));

        if (!m)
                return NULL;
        for (size_t i = 0; i < MEMO_KEYS; i++)
                buf_init(&m->arrays[i].text, SIZE_MAX - 1);
        return m;
}

static void memo_array_truncate(MemoArray *a, size_t n) {
        while (a->n_items > n)
                json_decref(a->items[--a->n_items]);
        a->text.len = n > 0 ? a->ends[n - 1] : 0;
        if (a->text.data)
                a->text.data[a->text.len] = 0;
}

MetadataTextMemo *metadata_text_memo_free(MetadataTextMemo *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < MEMO_KEYS; i++) {
                memo_array_truncate(&m->arrays[i], 0);
                free(m->arrays[i].items);
                free(m->arrays[i].ends);
                buf_deinit(&m->arrays[i].text);
        }
        free(m);
        return NULL;
}

size_t metadata_text_memo_bytes(const MetadataTextMemo *m) {
        size_t n = 0;

        for (size_t i = 0; m && i < MEMO_KEYS; i++)
                n += m->arrays[i].text.cap +
                     m->arrays[i].cap_items * (sizeof(json_t *) + sizeof(size_t));
        return n;
}

/* Appends one value's compact text. */
static int value_dump(const json_t *v, Buf *out) {
        _cleanup_(freep) char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

        return text ? buf_append_str(out, text) : -EINVAL;
}

static int memo_array_reserve(MemoArray *a, size_t n) {
        json_t **items;
        size_t *ends, cap;

        if (n <= a->cap_items)
                return 0;
        cap = a->cap_items ? a->cap_items : 64;
        while (cap < n)
                if (checked_mul_size(&cap, cap, 2))
                        return -ENOMEM;
        items = realloc(a->items, cap * sizeof(*items));
        if (!items)
                return -ENOMEM;
        a->items = items;
        ends = realloc(a->ends, cap * sizeof(*ends));
        if (!ends)
                return -ENOMEM;
        a->ends = ends;
        a->cap_items = cap;
        return 0;
}

/* The array's text through the memo: reuses the shared prefix, encodes the rest into it. */
static int memo_array_dump(const json_t *array, MemoArray *a, Buf *out) {
        size_t n = json_array_size(array), k = 0;
        int r;

        while (k < a->n_items && k < n && a->items[k] == json_array_get(array, k))
                k++;
        memo_array_truncate(a, k);
        r = memo_array_reserve(a, n);
        if (r < 0)
                return r;
        for (size_t i = k; i < n; i++) {
                json_t *v = json_array_get(array, i);
                size_t before = a->text.len;

                r = i > 0 ? buf_append_byte(&a->text, ',') : 0;
                if (r == 0)
                        r = value_dump(v, &a->text);
                if (r < 0) {
                        /* Keep the memo consistent: what was encoded before stays valid. */
                        a->text.len = before;
                        if (a->text.data)
                                a->text.data[before] = 0;
                        return r;
                }
                a->items[a->n_items] = json_incref(v);
                a->ends[a->n_items++] = a->text.len;
        }
        r = buf_append_byte(out, '[');
        if (r == 0)
                r = buf_append(out, a->text.data, a->text.len);
        if (r == 0)
                r = buf_append_byte(out, ']');
        return r;
}

int metadata_text_dump(const json_t *metadata, MetadataTextMemo *memo, Buf *out) {
        const char *key;
        json_t *v;
        bool first = true;
        int r;

        if (!json_is_object(metadata))
                return -EINVAL;
        r = buf_append_byte(out, '{');
        /* Members in the object's order, as json_dumps writes them. */
        json_object_foreach ((json_t *)metadata, key, v) {
                _cleanup_(json_decrefp) json_t *name = json_string(key);
                MemoArray *a = NULL;

                if (r < 0)
                        return r;
                if (!name)
                        return -ENOMEM;
                if (!first)
                        r = buf_append_byte(out, ',');
                first = false;
                if (r == 0)
                        r = value_dump(name, out);
                if (r == 0)
                        r = buf_append_byte(out, ':');
                for (size_t i = 0; memo && json_is_array(v) && i < MEMO_KEYS; i++)
                        if (strcmp(key, memo_keys[i]) == 0)
                                a = &memo->arrays[i];
                if (r == 0)
                        r = a ? memo_array_dump(v, a, out) : value_dump(v, out);
        }
        if (r == 0)
                r = buf_append_byte(out, '}');
        return r;
}
