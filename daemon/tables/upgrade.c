/* SPDX-License-Identifier: Apache-2.0 */
/* The upgrade flow (see upgrade.h): load the table; decide from its format version (already 3:
 * done; 1: refused; higher than asked: a downgrade, refused); read every branch head's manifest
 * list on the thread pool; build the report; a dry run answers it, a real run commits
 * upgrade-format-version asserting the table uuid and main's head, so that a concurrent commit
 * to main turns into a 409 the operator sees instead of an upgrade the report did not cover. */
#define LOG_MODULE "tables"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "iceberg/manifest_list.h"
#include "iceberg/table.h"
#include "storage/roots.h"
#include "storage/storage.h"
#include "tables/preflight.h"
#include "tables/upgrade.h"
#include "util/log.h"
#include "writer/request.h"

/* The one format version this endpoint upgrades to. */
#define UPGRADE_TARGET_FORMAT_VERSION 3

/* One request; owned by whichever callback is pending (catalog call or thread-pool work). */
typedef struct UpgradeCall {
        UpgradeContext *ctx;
        HttpRequest *http; /* NULL once answered or gone */
        CommitTarget target;
        UpgradeRequest request;
        TableMetadata *table;
        UpgradeBranch *branches;
        size_t n_branches;
        json_t *report;
        StorageProps *props;
        StorageReadItem *lists; /* each branch head's manifest list as read */
        size_t n_lists;
        int work_status;
        Error error;
        uv_work_t work;
} UpgradeCall;

static UpgradeCall *upgrade_call_free(UpgradeCall *c) {
        if (!c)
                return NULL;
        request_target_deinit(&c->target);
        c->branches = preflight_branches_free(c->branches, c->n_branches);
        c->table = table_metadata_free(c->table);
        json_decref(c->report);
        storage_props_free(c->props);
        for (size_t i = 0; i < c->n_lists; i++)
                buf_deinit(&c->lists[i].data);
        free(c->lists);
        free(c);
        return NULL;
}

DEFINE_CLEANUP_FUNC(UpgradeCall, upgrade_call_free);

static void upgrade_on_gone(HttpRequest *r, void *userdata) {
        UpgradeCall *c = userdata;

        c->http = NULL;
}

static void upgrade_reply_catalog_error(UpgradeCall *c, const CatalogResult *result,
                                        const char *what) {
        const char *type;
        int status = catalog_outcome_http_status(result->status, &type);

        switch (result->status) {
        case CATALOG_E_NOT_FOUND:
                http_reply_error(c->http, status, type, "%s: %s", what, result->message);
                break;
        case CATALOG_E_CONFLICT:
                http_reply_error(
                        c->http, 409, "table-changed",
                        "%s: the table changed since the report was made (%s); nothing was "
                        "upgraded, run the dry run again",
                        what, result->message);
                break;
        case CATALOG_E_REJECTED:
                http_reply_error(c->http, status, type, "%s: the catalog refused it (HTTP %ld): %s",
                                 what, result->http_status, result->message);
                break;
        case CATALOG_E_STATE_UNKNOWN:
                http_reply_error(
                        c->http, status, "upgrade-state-unknown",
                        "%s: no verdict from the catalog (%s); the table may be upgraded: send the "
                        "request again, an upgraded table answers \"already-upgraded\"",
                        what, result->message);
                break;
        default:
                http_reply_add_header(c->http, "Retry-After", "1");
                http_reply_error(c->http, status, type, "%s: %s (%s); retry", what,
                                 catalog_outcome_to_string(result->status), result->message);
                break;
        }
        c->http = NULL;
}

/* A JSON answer with the table named, over `report` (stolen). */
static void upgrade_reply(UpgradeCall *c, const char *status, json_t *report) {
        json_t *ns = request_target_namespace_json(&c->target);

        if (!report || !ns || json_object_set_new(report, "namespace", ns) < 0 ||
            json_object_set_new(report, "table", json_string(c->target.table)) < 0 ||
            json_object_set_new(report, "status", json_string(status)) < 0 ||
            json_object_set_new(report, "dry-run", json_boolean(c->request.dry_run)) < 0) {
                json_decref(report);
                http_reply_error(c->http, 503, "out-of-memory", "out of memory, retry later");
        } else
                http_reply_json(c->http, 200, report);
        c->http = NULL;
}

static void upgrade_on_committed(const CatalogResult *result, void *userdata) {
        _cleanup_(upgrade_call_freep) UpgradeCall *c = userdata;
        json_t *report = TAKE_PTR(c->report);

        if (result->status != 0) {
                log_warning("upgrade of table '%s' not committed: %s (%s)", c->target.table,
                            catalog_outcome_to_string(result->status), result->message);
                json_decref(report);
                if (c->http)
                        upgrade_reply_catalog_error(c, result, "upgrade-format-version");
                return;
        }
        log_notice("upgraded table '%s' from format version %d to %d", c->target.table,
                   c->table->format_version, UPGRADE_TARGET_FORMAT_VERSION);
        if (!c->http) {
                json_decref(report);
                return;
        }
        /* The new metadata file, when the catalog answers with one (REST CommitTableResponse). */
        (void)json_object_set(report, "metadata-location",
                              json_object_get(result->body, "metadata-location")
                                      ? json_object_get(result->body, "metadata-location")
                                      : json_null());
        upgrade_reply(c, "upgraded", report);
}

/* requirements: the table is the one reported on, and main has not moved (REST spec
 * assert-table-uuid, assert-ref-snapshot-id; null asserts that main does not exist). */
static json_t *upgrade_commit_request(const UpgradeCall *c) {
        json_t *main_id = json_null();

        for (size_t i = 0; i < c->n_branches; i++)
                if (strcmp(c->branches[i].name, "main") == 0)
                        main_id = json_integer(c->branches[i].snapshot_id);
        return json_pack("{s:[{s:s, s:s}, {s:s, s:s, s:o}], s:[{s:s, s:i}]}", "requirements",
                         "type", "assert-table-uuid", "uuid", c->table->uuid, "type",
                         "assert-ref-snapshot-id", "ref", "main", "snapshot-id", main_id, "updates",
                         "action", "upgrade-format-version", "format-version",
                         UPGRADE_TARGET_FORMAT_VERSION);
}

/* Thread pool: parses the lists the loop read. */
static void upgrade_read_lists_work(uv_work_t *w) {
        UpgradeCall *c = w->data;

        c->work_status = 0;
        for (size_t i = 0; i < c->n_branches; i++) {
                UpgradeBranch *b = &c->branches[i];
                StorageReadItem *item = &c->lists[i];
                int r = item->status;

                if (r < 0)
                        (void)error_set(&c->error, r, "%s", item->error.message);
                if (r >= 0)
                        r = manifest_list_read(buf_slice(&item->data), &b->files, &b->n_files,
                                               &c->error);
                buf_deinit(&item->data);
                if (r < 0) {
                        c->work_status =
                                error_prefix(&c->error, r, "branch '%s': manifest list '%s'",
                                             b->name, b->list_location);
                        return;
                }
        }
}

static void upgrade_read_lists_after(uv_work_t *w, int status);

static void upgrade_on_lists_read(StorageReadItem *items, size_t n_items, void *userdata) {
        _cleanup_(upgrade_call_freep) UpgradeCall *c = userdata;
        int r;

        for (size_t i = 0; i < n_items; i++) {
                c->lists[i] = items[i];
                buf_init(&items[i].data, 0);
        }
        c->work.data = c;
        r = uv_queue_work(c->ctx->loop, &c->work, upgrade_read_lists_work,
                          upgrade_read_lists_after);
        if (r < 0) {
                if (c->http)
                        http_reply_error(c->http, 503, "internal", "cannot queue work: %s",
                                         uv_strerror(r));
                c->http = NULL;
                return;
        }
        TAKE_PTR(c);
}

/* Reads every branch head's manifest list through storage, then parses them on the pool. */
static int upgrade_read_lists(UpgradeCall *c) {
        _cleanup_(freep) const char **locations = calloc(c->n_branches + 1, sizeof(*locations));
        StorageContext ctx = { .props = c->props };

        c->lists = calloc(c->n_branches + 1, sizeof(*c->lists));
        if (!locations || !c->lists)
                return -ENOMEM;
        c->n_lists = c->n_branches;
        for (size_t i = 0; i < c->n_branches; i++)
                locations[i] = c->branches[i].list_location;
        return storage_read_many(c->ctx->storage, &ctx, locations, c->n_branches,
                                 c->ctx->storage_config->max_manifest_bytes,
                                 c->ctx->storage_config->s3.max_concurrent_requests,
                                 upgrade_on_lists_read, c);
}

static void upgrade_read_lists_after(uv_work_t *w, int status) {
        _cleanup_(upgrade_call_freep) UpgradeCall *c = w->data;
        json_t *request;
        int r;

        if (!c->http)
                return; /* the client went away before anything was changed */
        if (status < 0 || c->work_status < 0) {
                r = status < 0 ? status : c->work_status;
                if (status < 0 || storage_status_is_transient(r))
                        http_reply_error(c->http, 503, "storage-failed",
                                         "cannot read the table's manifest lists: %s",
                                         c->error.message[0] ? c->error.message : strerror(-r));
                else
                        http_reply_error(c->http, 422, "invalid-table-state", "%s",
                                         c->error.message);
                c->http = NULL;
                return;
        }
        c->report = preflight_report_build(c->table, c->branches, c->n_branches,
                                           UPGRADE_TARGET_FORMAT_VERSION,
                                           c->ctx->config->upgrade_lookback);
        if (!c->report) {
                http_reply_error(c->http, 503, "out-of-memory", "out of memory, retry later");
                c->http = NULL;
                return;
        }
        if (c->request.dry_run) {
                upgrade_reply(c, "ready", TAKE_PTR(c->report));
                return;
        }

        request = upgrade_commit_request(c);
        r = request ? catalog_commit_table(c->ctx->catalog,
                                           (const char *const *)c->target.namespace,
                                           c->target.n_namespace, c->target.table, request,
                                           /* idempotency_key= */ NULL, upgrade_on_committed, c)
                    : -ENOMEM;
        json_decref(request);
        if (r < 0) {
                http_reply_error(c->http, 503, r == -ESHUTDOWN ? "shutting-down" : "out-of-memory",
                                 "cannot reach the catalog: %s", strerror(-r));
                c->http = NULL;
                return;
        }
        TAKE_PTR(c);
}

static void upgrade_on_loaded(const CatalogResult *result, void *userdata) {
        _cleanup_(upgrade_call_freep) UpgradeCall *c = userdata;
        const char *type;
        int version, r;

        if (!c->http)
                return;
        if (result->status != 0) {
                upgrade_reply_catalog_error(c, result, "load the table");
                return;
        }
        r = table_metadata_parse(result->body, &c->table, &c->error);
        if (r < 0) {
                http_reply_error(c->http, 502, "catalog-bad-metadata", "%s", c->error.message);
                c->http = NULL;
                return;
        }
        r = storage_roots_refuse_table(storage_roots(c->ctx->storage), c->table->location,
                                       json_object_get(c->table->metadata, "properties"), &type,
                                       &c->error);
        if (r > 0) {
                if (r == 503) /* the roots are not known yet: the catalog's /v1/config */
                        http_reply_add_header(c->http, "Retry-After", "1");
                http_reply_error(c->http, r, type, "%s", c->error.message);
                c->http = NULL;
                return;
        }
        version = c->table->format_version;
        if (version > c->request.format_version) {
                http_reply_error(
                        c->http, 400, "downgrade-refused",
                        "the table is format version %d; format versions cannot be lowered to %d",
                        version, c->request.format_version);
                c->http = NULL;
                return;
        }
        if (version == c->request.format_version) {
                json_t *answer = json_pack("{s:i, s:i, s:O?}", "format-version", version,
                                           "target-format-version", c->request.format_version,
                                           "metadata-location",
                                           json_object_get(result->body, "metadata-location"));

                upgrade_reply(c, "already-upgraded", answer);
                return;
        }
        if (c->request.format_version != UPGRADE_TARGET_FORMAT_VERSION) {
                http_reply_error(c->http, 400, "bad-request",
                                 "only upgrades to format version %d are supported (the table is "
                                 "version %d)",
                                 UPGRADE_TARGET_FORMAT_VERSION, version);
                c->http = NULL;
                return;
        }
        if (version == 1) {
                /* A v1 table's manifests may hold entries that only snapshot-id inheritance makes
                 * readable, and lists without counts: the v2 upgrade rewrites none of that, but it
                 * is the step every engine knows; do it first, with the engine that wrote the
                 * table. */
                http_reply_error(
                        c->http, 422, "unsupported-format-version",
                        "the table is format version 1: upgrade it to format version 2 first "
                        "(e.g. Spark: ALTER TABLE ... SET TBLPROPERTIES ('format-version'='2')), "
                        "then to 3");
                c->http = NULL;
                return;
        }

        r = preflight_branches_collect(c->table, &c->branches, &c->n_branches, &c->error);
        if (r < 0) {
                http_reply_error(c->http, r == -ENOMEM ? 503 : 502,
                                 r == -ENOMEM ? "out-of-memory" : "catalog-bad-metadata", "%s",
                                 r == -ENOMEM ? "out of memory, retry later" : c->error.message);
                c->http = NULL;
                return;
        }
        r = storage_props_new(result->properties, result->body, &c->props, &c->error);
        if (r >= 0)
                r = upgrade_read_lists(c);
        if (r < 0) {
                http_reply_error(c->http, 503,
                                 r == -ENOMEM ? "out-of-memory" : "storage-unavailable",
                                 "cannot read the table's manifest lists: %s", strerror(-r));
                c->http = NULL;
                return;
        }
        TAKE_PTR(c);
}

void upgrade_handle(HttpRequest *r, void *userdata) {
        UpgradeContext *ctx = userdata;
        _cleanup_(upgrade_call_freep) UpgradeCall *c = NULL;
        const AuthToken *caller;
        Error error = { 0 };
        int rr;

        if (auth_check(ctx->auth, r, AUTH_RIGHT_UPGRADE, http_request_param(r, 0),
                       http_request_param(r, 1), &caller) < 0)
                return;
        c = calloc(1, sizeof(*c));
        if (!c) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        c->ctx = ctx;
        rr = preflight_request_parse(http_request_body(r), &c->request, &error);
        if (rr >= 0)
                rr = request_target_parse(http_request_param(r, 0), http_request_param(r, 1),
                                          &c->target, &error);
        if (rr == -ENOMEM) {
                http_reply_error(r, 503, "out-of-memory", "out of memory, retry later");
                return;
        }
        if (rr < 0) {
                http_reply_error(r, 400, "bad-request", "%s", error.message);
                return;
        }
        c->http = r;
        rr = catalog_load_table(ctx->catalog, (const char *const *)c->target.namespace,
                                c->target.n_namespace, c->target.table, upgrade_on_loaded, c);
        if (rr < 0) {
                http_reply_error(r, 503, rr == -ESHUTDOWN ? "shutting-down" : "out-of-memory",
                                 "cannot reach the catalog: %s", strerror(-rr));
                return;
        }
        http_request_on_gone(r, upgrade_on_gone, c);
        TAKE_PTR(c);
}
