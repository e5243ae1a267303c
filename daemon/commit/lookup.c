/* SPDX-License-Identifier: Apache-2.0 */
/* GET /v1/commits/{key}: a key's outcome from the registry, or, with the table named, from the
 * table's history (the receipt rebuilt from storage by history_receipt.c). */
#define LOG_MODULE "commit"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "auth/tokens.h"
#include "commit/history_receipt.h"
#include "commit/lookup.h"
#include "iceberg/snapshot.h"
#include "writer/request.h"

/* Whether the caller of a lookup may see an entry: its own key (the scope starts with its
 * principal), on a table it holds the right `read` on. Everything else stays unknown to it. */
static bool lookup_entry_is_visible(const KeyEntry *entry, void *userdata) {
        const AuthToken *caller = userdata;
        size_t n = strlen(caller->principal);
        _cleanup_(freep) char *namespace_param = NULL;
        const char *rest, *sep;

        if (strncmp(entry->scope, caller->principal, n) != 0 || entry->scope[n] != '\x1d')
                return false;
        rest = entry->scope + n + 1;
        sep = strchr(rest, '\x1e');
        if (!sep || !(namespace_param = strndup(rest, (size_t)(sep - rest))))
                return false;
        return auth_token_allows(caller, AUTH_RIGHT_READ, namespace_param, sep + 1);
}

/* An error document as the lookup hook returns it: serialized. */
static char *lookup_error(int status, const char *type, const char *message, size_t *ret_len) {
        _cleanup_(json_decrefp) json_t *body = writer_error_body(status, type, message);
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

        if (text)
                *ret_len = strlen(text);
        return text;
}

char *lookup_key(const char *key, const char *namespace_param, const char *table,
                 const AuthToken *caller, int *ret_status, size_t *ret_len, void *userdata) {
        CommitEngine *e = userdata;
        KeyEntry *entry;
        size_t n = 1;

        if (namespace_param && table) {
                /* The caller's right on this table was checked by the handler. */
                _cleanup_(freep) char *scope = request_key_scope(caller ? caller->principal : NULL,
                                                                 namespace_param, table);

                if (!scope)
                        return NULL;
                entry = registry_get(e->keys, scope, key);
        } else
                entry = registry_find_any(e->keys, key, caller ? lookup_entry_is_visible : NULL,
                                          (void *)caller, &n);
        if (n > 1) {
                static const char ambiguous[] = "the key was used on several tables: add "
                                                "?namespace=NS&table=T to say which";

                *ret_status = 409;
                return lookup_error(409, "key-ambiguous", ambiguous, ret_len);
        }
        if (!entry) {
                static const char unknown[] =
                        "this daemon has no record of the key (never seen, or evicted); add "
                        "?namespace=NS&table=T to search that table's history";

                *ret_status = 404;
                return lookup_error(404, "unknown-key", unknown, ret_len);
        }
        *ret_status = 200;
        return registry_entry_status_text(entry, ret_len);
}

/* One GET /v1/commits/{key}?namespace=&table= waiting for its table. */
typedef struct HistoryLookup {
        CommitEngine *engine;
        WriterRequest *writer;
        char *key;
        char *recorded_key; /* as the summaries hold it: "principal/key" with auth */
        char *table;
        json_t *namespace; /* its levels, for the receipt */
} HistoryLookup;

static HistoryLookup *lookup_history_free(HistoryLookup *l) {
        if (!l)
                return NULL;
        writer_request_free(l->writer);
        free(l->key);
        free(l->recorded_key);
        free(l->table);
        json_decref(l->namespace);
        free(l);
        return NULL;
}

DEFINE_CLEANUP_FUNC(HistoryLookup, lookup_history_free);

static void lookup_on_history_receipt(json_t *receipt, int status, const Error *error,
                                      void *userdata) {
        HistoryLookup *l = userdata;
        const char *type;

        if (!receipt) {
                /* Never a 4xx: the key is committed, a writer must not send it anew. */
                type = status == -ENOMEM ? "out-of-memory" : "storage-unavailable";
                writer_request_reply_error(l->writer, 503, type,
                                           "key '%s' is committed, but its receipt cannot be "
                                           "read from the table now: %s",
                                           l->key, error->message);
        } else {
                writer_request_add_header(l->writer, HISTORY_RECEIPT_HEADER, "true");
                writer_request_reply(l->writer, 200,
                                     json_pack("{s:s, s:s, s:o}", "idempotency-key", l->key,
                                               "status", "committed", "receipt", receipt));
        }
        lookup_history_free(l);
}

static void lookup_on_history_loaded(const CatalogResult *result, void *userdata) {
        _cleanup_(lookup_history_freep) HistoryLookup *l = userdata;
        CommitEngine *e = l->engine;
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL;
        _cleanup_(storage_props_freep) StorageProps *props = NULL;
        Error error = { 0 };
        const char *type;
        json_t *s;
        int r;

        e->n_in_flight--;
        if (result->status != 0) {
                int status = catalog_outcome_http_status(result->status, &type);

                writer_request_reply_error(
                        l->writer, status, type, "%s%s",
                        status == 404 ? "" : "cannot load the table to search its history: ",
                        result->message);
        } else if (table_metadata_parse(result->body, &t, &error) < 0)
                writer_request_reply_error(l->writer, 502, "catalog-bad-metadata", "%s",
                                           error.message);
        else if ((r = core_check_table_roots(e, t, &type, &error)) > 0)
                writer_request_reply_error(l->writer, r, type, "%s", error.message);
        else if ((s = snapshot_find_key(t->metadata, l->recorded_key,
                                        e->config->history_lookback))) {
                HistoryReceiptArgs a = {
                        .snapshot = s,
                        .recorded_key = l->recorded_key,
                        .key = l->key,
                        .namespace = l->namespace,
                        .table = l->table,
                        .root = t->location,
                        .metadata_dir = t->metadata_dir,
                };

                r = storage_props_new(result->properties, result->body, &props, &error);
                if (r >= 0) {
                        a.props = props;
                        r = history_receipt_start(e, &a, lookup_on_history_receipt, l);
                }
                if (r >= 0)
                        TAKE_PTR(l); /* answered by lookup_on_history_receipt */
                else
                        writer_request_reply_error(
                                l->writer, 503,
                                r == -ENOMEM ? "out-of-memory" : "storage-unavailable",
                                "key '%s' is committed, but its receipt cannot be read from the "
                                "table now: %s",
                                l->key, strerror(-r));
        } else
                writer_request_reply_error(
                        l->writer, 404, "unknown-key",
                        "key '%s' is not in this daemon's memory nor in the newest %u snapshots "
                        "of the table (0 = all)",
                        l->key, e->config->history_lookback);
        lookup_history_free(TAKE_PTR(l));
        core_maybe_stopped(e);
}

void lookup_in_history(WriterRequest *w, const char *key, const char *namespace_param,
                       const char *table, const char *principal, void *userdata) {
        CommitEngine *e = userdata;
        _cleanup_(request_target_deinit) CommitTarget target = { 0 };
        _cleanup_(lookup_history_freep) HistoryLookup *l = NULL;
        Error error = { 0 };
        int r;

        r = request_target_parse(namespace_param, table, &target, &error);
        if (r < 0) {
                writer_request_finish_error(w, r == -ENOMEM ? 503 : 400,
                                            r == -ENOMEM ? "out-of-memory" : "bad-request", "%s",
                                            error.message);
                return;
        }
        l = calloc(1, sizeof(*l));
        if (!l || !(l->key = strdup(key)) ||
            !(l->recorded_key = request_key_recorded(principal, key)) ||
            !(l->table = strdup(table)) ||
            !(l->namespace = request_target_namespace_json(&target))) {
                writer_request_finish_error(w, 503, "out-of-memory", "out of memory");
                return;
        }
        l->engine = e;
        l->writer = w;
        r = catalog_load_table(e->catalog, (const char *const *)target.namespace,
                               target.n_namespace, target.table, lookup_on_history_loaded, l);
        if (r < 0) {
                writer_request_reply_error(w, 503, "catalog-unavailable",
                                           "cannot load the table: %s", strerror(-r));
                return; /* cleanup frees l and its writer */
        }
        TAKE_PTR(l); /* the catalog calls back */
        e->n_in_flight++;
}
