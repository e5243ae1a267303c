/* SPDX-License-Identifier: Apache-2.0 */
/* In-memory table state (docs/design.md section 12): what the engine keeps of a table between
 * commits so that a commit needs no load. The table as the newest load or commit response left
 * it, with the storage settings of the last load; one per table, shared by its branches'
 * queues (a commit to one branch moves the table's sequence number and next-row-id for all).
 *
 * Why reusing it is safe: every commit asserts the branch head it was built on, so a commit
 * built on a state that another writer has moved past gets a 409, and the state is dropped and
 * loaded again. What no commit assertion catches is a metadata change without a snapshot (a
 * table property, new vended credentials): those are picked up by the age bound. */
#define LOG_MODULE "commit"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "commit/table_state.h"
#include "util/log.h"
#include "util/time-util.h"

/* Credentials expiring within this are not reused from the state: the next commit reloads. */
#define TABLE_STATE_CREDENTIALS_MARGIN_MS (5 * 60 * 1000)

TableState *table_state_get(CommitEngine *e, const char *name) {
        TableState *s;

        for (s = e->states; s; s = s->next)
                if (strcmp(s->name, name) == 0) {
                        s->n_refs++;
                        return s;
                }
        s = calloc(1, sizeof(*s));
        if (!s)
                return NULL;
        s->name = strdup(name);
        if (!s->name) {
                free(s);
                return NULL;
        }
        s->engine = e;
        s->n_refs = 1;
        s->drop_reason = "first";
        s->next = e->states;
        e->states = s;
        return s;
}

TableState *table_state_find(CommitEngine *e, const char *name) {
        for (TableState *s = e->states; s; s = s->next)
                if (strcmp(s->name, name) == 0)
                        return s;
        return NULL;
}

void table_state_put(TableState *s) {
        CommitEngine *e;

        if (!s || --s->n_refs > 0)
                return;
        e = s->engine;
        for (TableState **p = &e->states; *p; p = &(*p)->next)
                if (*p == s) {
                        *p = s->next;
                        break;
                }
        json_decref(s->result);
        storage_props_free(s->props);
        key_index_deinit(&s->keys);
        free(s->name);
        free(s);
}

bool table_state_is_fresh(const TableState *s) {
        const CommitConfig *config = s->engine->config;
        uint64_t now = now_monotonic_ns();
        const char *location;

        if (!s->result || config->table_state_max_age_ms == 0 ||
            now - s->loaded_ns >= (uint64_t)config->table_state_max_age_ms * 1000000u)
                return false;
        /* Vended credentials are loaded again before they run out, with time to spare for
         * the commit that uses them (storage refuses any less than a minute from expiry). */
        location = json_string_value(
                json_object_get(json_object_get(s->result, "metadata"), "location"));
        return !location ||
               !storage_props_expire_before(s->props, location,
                                            now_realtime_ms() + TABLE_STATE_CREDENTIALS_MARGIN_MS);
}

void table_state_drop(TableState *s, const char *reason) {
        if (!s)
                return;
        if (s->result)
                log_debug("table state of '%s' dropped: %s", s->name, reason);
        core_release_json(s->engine, TAKE_PTR(s->result));
        key_index_invalidate(&s->keys);
        s->drop_reason = reason;
}

const char *table_state_load_reason(const TableState *s) {
        return s->result ? "age" : s->drop_reason;
}

int table_state_loaded(TableState *s, json_t *result, const TableMetadata *t,
                       const StorageProps *props) {
        StorageProps *copy = NULL;
        int r;

        r = storage_props_copy(props, &copy);
        if (r < 0) {
                table_state_drop(s, "out-of-memory");
                return r;
        }
        /* Once per load, not per request and commit: the keys of the snapshots a retried
         * request may have landed in (commit.history-lookback). */
        (void)key_index_rebuild(&s->keys, t, s->engine->config->history_lookback);
        core_release_json(s->engine, s->result);
        storage_props_free(s->props);
        s->result = json_incref(result);
        s->props = copy;
        s->loaded_ns = now_monotonic_ns();
        return 0;
}

void table_state_adopt(TableState *s, json_t *response, const char *branch, int64_t snapshot_id) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        TableBranch head;
        Error error = { 0 };

        /* The catalog's answer is the table as it now is, our snapshot at the branch head; one
         * that is not (no body, another head) says nothing we can build on. */
        if (!s->result || !json_is_string(json_object_get(response, "metadata-location")) ||
            table_metadata_parse(response, &t, &error) < 0 ||
            table_branch(t, branch, &head, &error) < 0 || !head.exists ||
            head.snapshot_id != snapshot_id) {
                table_state_drop(s, "commit-response");
                return;
        }
        core_release_json(s->engine, s->result);
        s->result = json_incref(response);
}

void table_state_add_key(TableState *s, const char *key, int64_t snapshot_id) {
        if (s->result)
                (void)key_index_add(&s->keys, key, snapshot_id);
}

int table_state_use(const TableState *s, TableMetadata **ret_table, StorageProps **ret_props,
                    Error *error) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        int r;

        r = table_metadata_parse(s->result, &t, error);
        if (r < 0)
                return r;
        r = storage_props_copy(s->props, ret_props);
        if (r < 0)
                return error_set(error, r, "out of memory");
        *ret_table = TAKE_PTR(t);
        return 0;
}
