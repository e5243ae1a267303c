/* SPDX-License-Identifier: Apache-2.0 */
/* The commit engine (daemon/commit/) on a real loop, real local storage and real manifests, against
 * an in-process double of the CatalogBackend interface that answers from a script (success, 409, no
 * verdict, held until the test lets it go): conflicts, unknown outcomes, shutdown in every state,
 * backoff bounds, group-commit limits, queue overflow. No sleeps: the loop runs until a condition
 * holds, a bounded number of turns. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "catalog/catalog.h"
#include "commit/engine.h"
#include "commit/key_index.h"
#include "config/config.h"
#include "iceberg-fixture.h"
#include "avro/ocf.h"
#include "iceberg/data_file.h"
#include "iceberg/manifest.h"
#include "iceberg/manifest_list.h"
#include "iceberg/manifest_write.h"
#include "iceberg/snapshot.h"
#include "iceberg/table_update.h"
#include "metrics/metrics.h"
#include "storage/roots.h"
#include "storage/storage.h"
#include "writer/api.h"
#include "writer/request.h"
#include "test.h"

/* ---- the catalog double ------------------------------------------------------------------ */

/* How the double answers one call. */
typedef enum Step {
        STEP_SUCCESS,        /* applied (table_update_apply, as a catalog would) */
        STEP_CONFLICT,       /* 409, nothing applied */
        STEP_UNKNOWN,        /* 504, nothing applied */
        STEP_UNKNOWN_LANDED, /* applied, then a 504: the answer was lost */
        STEP_HOLD,           /* parked until double_release() */
        STEP_REJECTED,       /* 400, nothing applied: the request is invalid */
} Step;

#define DOUBLE_MAX_CALLS 32

typedef struct CatalogDouble CatalogDouble;

/* One accepted call: answered from its timer, never inside the call (catalog.h). */
typedef struct DoubleCall {
        uv_timer_t timer;
        CatalogDouble *d;
        bool is_commit;
        json_t *request; /* commit: a copy of what was sent */
        char key[64];    /* its Idempotency-Key, "" when none */
        CatalogCallback cb;
        void *userdata;
        Step step;
        int forced_status;       /* -ECANCELED when the catalog closed first */
        struct DoubleCall *next; /* held calls */
} DoubleCall;

struct CatalogDouble {
        uv_loop_t *loop;
        json_t *metadata; /* the table as the double keeps it */
        unsigned version;
        char metadata_location[256];
        bool supports_idempotency;
        bool omit_commit_body;                /* answer commits with a status only */
        Step load_script[DOUBLE_MAX_CALLS];   /* by load number; unset: success */
        Step commit_script[DOUBLE_MAX_CALLS]; /* by commit number; unset: success */
        unsigned n_loads, n_commits, n_commit_answers, n_rejected;
        uint64_t commit_answer_ms[DOUBLE_MAX_CALLS]; /* loop clock at each commit's answer */
        uint64_t load_ms[DOUBLE_MAX_CALLS];          /* loop clock at each load call */
        json_t *commits;                             /* every commit request, in order */
        json_t *keys;                                /* their Idempotency-Keys (null when none) */
        json_t *landed_keys; /* keys of commits applied: a replay answers 200 */
        DoubleCall *held;
        unsigned n_open; /* call timers not closed yet */
        bool is_closed;
        uv_timer_t close_timer;
        void (*close_done)(void *userdata);
        void *close_userdata;
};

static void double_on_call_closed(uv_handle_t *h) {
        DoubleCall *c = h->data;

        c->d->n_open--;
        json_decref(c->request);
        free(c);
}

static void double_commit(CatalogDouble *d, DoubleCall *c, CatalogResult *result) {
        _cleanup_(json_decrefp) json_t *applied = NULL;
        Error e = { 0 };
        int r;

        /* A replay of a commit that landed gets the original outcome (REST Idempotency-Key). */
        if (d->supports_idempotency && c->key[0] && json_object_get(d->landed_keys, c->key)) {
                result->status = 0;
                result->http_status = 200;
                return;
        }
        switch (c->step) {
        case STEP_CONFLICT:
                result->status = CATALOG_E_CONFLICT;
                result->http_status = 409;
                catalog_result_set_message(result,
                                           "Requirement failed: the table moved on (scripted)");
                return;
        case STEP_UNKNOWN:
                result->status = CATALOG_E_STATE_UNKNOWN;
                result->http_status = 504;
                catalog_result_set_message(result, "gateway timeout (scripted)");
                return;
        case STEP_REJECTED:
                result->status = CATALOG_E_REJECTED;
                result->http_status = 400;
                catalog_result_set_message(result, "Cannot add a snapshot (scripted)");
                return;
        default:
                break;
        }
        r = table_update_apply(d->metadata, c->request, 1700000000000 + d->version,
                               d->metadata_location, &applied, &e);
        if (r == -ESTALE) {
                result->status = CATALOG_E_CONFLICT;
                result->http_status = 409;
                catalog_result_set_message(result, "%s", e.message);
                return;
        }
        if (r < 0) {
                d->n_rejected++;
                result->status = CATALOG_E_REJECTED;
                result->http_status = 400;
                catalog_result_set_message(result, "%s", e.message);
                return;
        }
        json_decref(d->metadata);
        d->metadata = TAKE_PTR(applied);
        (void)snprintf(d->metadata_location, sizeof(d->metadata_location),
                       "/double/v%u.metadata.json", ++d->version);
        if (c->key[0])
                ASSERT_OK(json_object_set_new(d->landed_keys, c->key, json_true()));
        if (c->step == STEP_UNKNOWN_LANDED) {
                result->status = CATALOG_E_STATE_UNKNOWN;
                result->http_status = 502;
                catalog_result_set_message(result, "bad gateway after the commit (scripted)");
        } else
                result->http_status = 200;
}

static void double_on_call_timer(uv_timer_t *t) {
        DoubleCall *c = t->data;
        CatalogDouble *d = c->d;
        _cleanup_(json_decrefp) json_t *body = NULL;
        CatalogResult result = { 0 };

        if (c->forced_status) {
                result.status = c->forced_status;
                catalog_result_set_message(&result, "cancelled: the catalog is closing");
        } else if (c->is_commit) {
                double_commit(d, c, &result);
                d->commit_answer_ms[d->n_commit_answers++ % DOUBLE_MAX_CALLS] = uv_now(d->loop);
                /* A REST CommitTableResponse: the table as it is now (unless told to omit it). */
                if (result.status == 0 && !d->omit_commit_body) {
                        body = json_pack("{s:s, s:o}", "metadata-location", d->metadata_location,
                                         "metadata", json_deep_copy(d->metadata));
                        ASSERT_TRUE(body);
                        result.body = body;
                }
        } else {
                body = json_pack("{s:s, s:o}", "metadata-location", d->metadata_location,
                                 "metadata", json_deep_copy(d->metadata));
                ASSERT_TRUE(body);
                result.http_status = 200;
                result.body = body;
        }
        uv_close((uv_handle_t *)&c->timer, double_on_call_closed);
        c->cb(&result, c->userdata);
}

static int double_call_new(CatalogDouble *d, bool is_commit, Step step, CatalogCallback cb,
                           void *userdata, DoubleCall **ret) {
        DoubleCall *c;

        if (d->is_closed)
                return -ESHUTDOWN;
        c = calloc(1, sizeof(*c));
        ASSERT_TRUE(c);
        *c = (DoubleCall){
                .d = d, .is_commit = is_commit, .cb = cb, .userdata = userdata, .step = step
        };
        ASSERT_OK(uv_timer_init(d->loop, &c->timer));
        c->timer.data = c;
        d->n_open++;
        if (step == STEP_HOLD) {
                c->next = d->held;
                d->held = c;
        } else
                ASSERT_OK(uv_timer_start(&c->timer, double_on_call_timer, 0, 0));
        *ret = c;
        return 0;
}

static unsigned double_n_held(const CatalogDouble *d) {
        unsigned n = 0;

        for (const DoubleCall *c = d->held; c; c = c->next)
                n++;
        return n;
}

/* Answers the (only) held call as `step`, from the loop. */
static void double_release(CatalogDouble *d, Step step) {
        DoubleCall *c = d->held;

        ASSERT_TRUE(c && !c->next);
        d->held = NULL;
        c->step = step;
        ASSERT_OK(uv_timer_start(&c->timer, double_on_call_timer, 0, 0));
}

static int double_start(void *impl, CatalogCallback cb, void *userdata) {
        return -EOPNOTSUPP;
}

static bool double_is_ready(const void *impl) {
        return true;
}

static bool double_supports_idempotency(const void *impl) {
        const CatalogDouble *d = impl;

        return d->supports_idempotency;
}

static int double_load_table(void *impl, const char *const *namespace, size_t n_namespace,
                             const char *table, CatalogCallback cb, void *userdata) {
        CatalogDouble *d = impl;
        DoubleCall *c;
        Step step;

        ASSERT_EQ(n_namespace, 1);
        ASSERT_STREQ(namespace[0], "db");
        ASSERT_STREQ(table, "t");
        step = d->n_loads < DOUBLE_MAX_CALLS ? d->load_script[d->n_loads] : STEP_SUCCESS;
        if (d->n_loads < DOUBLE_MAX_CALLS)
                d->load_ms[d->n_loads] = uv_now(d->loop);
        d->n_loads++;
        return double_call_new(d, /* is_commit= */ false,
                               step == STEP_HOLD ? STEP_HOLD : STEP_SUCCESS, cb, userdata, &c);
}

static int double_commit_table(void *impl, const char *const *namespace, size_t n_namespace,
                               const char *table, const json_t *request,
                               const char *idempotency_key, CatalogCallback cb, void *userdata) {
        CatalogDouble *d = impl;
        DoubleCall *c;
        Step step;
        int r;

        ASSERT_STREQ(table, "t");
        step = d->n_commits < DOUBLE_MAX_CALLS ? d->commit_script[d->n_commits] : STEP_SUCCESS;
        r = double_call_new(d, /* is_commit= */ true, step, cb, userdata, &c);
        if (r < 0)
                return r;
        d->n_commits++;
        c->request = json_deep_copy(request);
        ASSERT_TRUE(c->request);
        ASSERT_OK(json_array_append(d->commits, c->request));
        ASSERT_OK(json_array_append_new(d->keys, idempotency_key ? json_string(idempotency_key)
                                                                 : json_null()));
        if (idempotency_key)
                (void)snprintf(c->key, sizeof(c->key), "%s", idempotency_key);
        return 0;
}

static int double_create_namespace(void *impl, const char *const *namespace, size_t n_namespace,
                                   const json_t *properties, CatalogCallback cb, void *userdata) {
        return -EOPNOTSUPP;
}

static int double_create_table(void *impl, const char *const *namespace, size_t n_namespace,
                               const char *name, const json_t *request, CatalogCallback cb,
                               void *userdata) {
        return -EOPNOTSUPP;
}

static void double_on_close_timer_closed(uv_handle_t *h) {
        CatalogDouble *d = h->data;

        if (d->close_done)
                d->close_done(d->close_userdata);
}

static void double_on_close_timer(uv_timer_t *t) {
        CatalogDouble *d = t->data;

        if (d->n_open > 0) {
                ASSERT_OK(uv_timer_start(&d->close_timer, double_on_close_timer, 1, 0));
                return;
        }
        uv_close((uv_handle_t *)&d->close_timer, double_on_close_timer_closed);
}

/* Cancels every held call (-ECANCELED, as the real backends do), then calls done. */
static void double_close(void *impl, void (*done)(void *userdata), void *userdata) {
        CatalogDouble *d = impl;

        d->is_closed = true;
        d->close_done = done;
        d->close_userdata = userdata;
        while (d->held) {
                DoubleCall *c = d->held;

                d->held = c->next;
                c->forced_status = -ECANCELED;
                ASSERT_OK(uv_timer_start(&c->timer, double_on_call_timer, 0, 0));
        }
        ASSERT_OK(uv_timer_start(&d->close_timer, double_on_close_timer, 0, 0));
}

static void double_free(void *impl) {
        CatalogDouble *d = impl;

        if (!d)
                return;
        json_decref(d->metadata);
        json_decref(d->commits);
        json_decref(d->keys);
        json_decref(d->landed_keys);
        free(d);
}

static const CatalogBackend double_backend = {
        .name = "double",
        .start = double_start,
        .is_ready = double_is_ready,
        .supports_idempotency = double_supports_idempotency,
        .load_table = double_load_table,
        .commit_table = double_commit_table,
        .create_namespace = double_create_namespace,
        .create_table = double_create_table,
        .close = double_close,
        .free = double_free,
};

/* ---- the fixture: a v3 table in a temporary directory, the engine on a real loop ---------- */

typedef struct Fixture {
        uv_loop_t loop;
        char dir[64];
        char table_location[128];
        Config *config;
        Metrics *metrics;
        Storage *storage;
        Catalog *catalog;
        CatalogDouble *cat; /* owned by catalog */
        CommitEngine *engine;
        bool is_stopping, is_stopped, is_catalog_closed;
        unsigned n_foreign;
        /* Every foreign snapshot's manifest, newest first: what its lists hold. */
        char foreign_paths[8][256];
        IcebergFixtureManifest foreign[8];
} Fixture;

/* A writer's answer, captured through the WriterReplySink seam. */
typedef struct Answer {
        bool done;
        int status;
        json_t *body;
        char retry_after[32];
        bool found_in_history; /* the Icecommit-Found-In-History header */
        uint64_t at_ms;        /* loop clock */
        uv_loop_t *loop;
} Answer;

static void answer_add_header(const char *name, const char *value, void *userdata) {
        Answer *a = userdata;

        ASSERT_TRUE(!a->done);
        if (strcmp(name, "Retry-After") == 0)
                (void)snprintf(a->retry_after, sizeof(a->retry_after), "%s", value);
        if (strcmp(name, "Icecommit-Found-In-History") == 0)
                a->found_in_history = strcmp(value, "true") == 0;
}

static void answer_reply(int status, json_t *body, void *userdata) {
        Answer *a = userdata;

        ASSERT_TRUE(!a->done);
        ASSERT_TRUE(body);
        a->done = true;
        a->status = status;
        a->body = body;
        a->at_ms = uv_now(a->loop);
}

static const WriterReplySink answer_sink = { .add_header = answer_add_header,
                                             .reply = answer_reply };

static void answer_deinit(Answer *a) {
        json_decref(a->body);
        *a = (Answer){ 0 };
}

static const char *answer_error_type(const Answer *a) {
        return json_string_value(json_object_get(json_object_get(a->body, "error"), "type"));
}

static const char *answer_error_message(const Answer *a) {
        return json_string_value(json_object_get(json_object_get(a->body, "error"), "message"));
}

/* Where the table holds the i-th manifest a receipt names: icecommitd's copy. */
static const char *receipt_location(const json_t *receipt, size_t i) {
        const json_t *m = json_array_get(json_object_get(receipt, "manifests"), i);

        return json_string_value(json_object_get(m, "location"));
}

static int64_t json_i64_at(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);

        if (!json_is_integer(v)) {
                char *text = json_dumps(o, JSON_COMPACT);

                TEST_FAIL("'%s' is not an integer in %s", key, text ? text : "?");
        }
        return json_integer_value(v);
}

/* Runs the loop until cond holds, at most a bounded number of turns; a loop that runs dry
 * before is a failure (the engine is waiting for nothing). */
#define RUN_UNTIL(f, cond)                                                                         \
        do {                                                                                       \
                unsigned _turns = 0;                                                               \
                while (!(cond)) {                                                                  \
                        int _alive;                                                                \
                        if (_turns++ > 100000)                                                     \
                                TEST_FAIL("still not %s after %u loop turns", #cond, _turns);      \
                        _alive = uv_run(&(f)->loop, UV_RUN_ONCE);                                  \
                        if (!_alive && !(cond))                                                    \
                                TEST_FAIL("the loop ran dry before %s", #cond);                    \
                }                                                                                  \
        } while (0)

/* Runs the loop until nothing is left to do but what the double holds. */
static void settle(Fixture *f) {
        for (unsigned turns = 0; uv_run(&f->loop, UV_RUN_ONCE) != 0; turns++)
                if (turns > 100000)
                        TEST_FAIL("the loop does not settle");
}

static void write_file(const char *path, const void *data, size_t len) {
        FILE *fp = fopen(path, "we");

        ASSERT_TRUE(fp);
        ASSERT_EQ(fwrite(data, 1, len, fp), len);
        ASSERT_EQ(fclose(fp), 0);
}

static bool file_exists(const char *path) {
        return access(path, F_OK) == 0;
}

static const char *SCHEMA =
        "{\"type\": \"struct\", \"schema-id\": 0, \"fields\": ["
        "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}]}";

/* A snapshot of another writer on main: a manifest list (written for real, the parent's
 * manifests after its own) adding `rows` rows at the table's next-row-id. Returns its id. */
static int64_t fixture_advance(Fixture *f, int64_t rows) {
        CatalogDouble *d = f->cat;
        const json_t *md = d->metadata;
        int64_t id = 1000 + f->n_foreign, next = json_i64_at(md, "next-row-id");
        int64_t seq = json_i64_at(md, "last-sequence-number") + 1;
        const json_t *main_ref = json_object_get(json_object_get(md, "refs"), "main");
        int64_t parent = main_ref ? json_i64_at(main_ref, "snapshot-id") : -1;
        char list_path[256];
        _cleanup_(buf_deinitp) Buf list;
        _cleanup_(json_decrefp) json_t *request = NULL, *applied = NULL;
        ManifestFile *files;
        IcebergFixtureManifest *m;
        Error e = { 0 };

        ASSERT_TRUE(f->n_foreign < ELEMENTSOF(f->foreign));
        memmove(&f->foreign[1], &f->foreign[0], f->n_foreign * sizeof(f->foreign[0]));
        memmove(&f->foreign_paths[1], &f->foreign_paths[0],
                f->n_foreign * sizeof(f->foreign_paths[0]));
        (void)snprintf(f->foreign_paths[0], sizeof(f->foreign_paths[0]),
                       "%s/metadata/foreign-m-%" PRId64 ".avro", f->table_location, id);
        for (unsigned i = 1; i <= f->n_foreign; i++)
                f->foreign[i].path = f->foreign_paths[i];
        m = &f->foreign[0];
        *m = (IcebergFixtureManifest){
                .path = f->foreign_paths[0],
                .length = 4096,
                .sequence_number = seq,
                .min_sequence_number = seq,
                .added_snapshot_id = id,
                .file_counts = { 1, 0, 0 },
                .row_counts = { rows, 0, 0 },
                .has_first_row_id = true,
                .first_row_id = next,
        };
        f->n_foreign++;
        files = iceberg_fixture_manifest_files_new(f->foreign, f->n_foreign);
        buf_init(&list, 1 << 20);
        if (manifest_list_write(&(ManifestListHeader){ .format_version = 3,
                                                       .snapshot_id = id,
                                                       .has_parent_snapshot_id = main_ref != NULL,
                                                       .parent_snapshot_id = parent,
                                                       .sequence_number = seq,
                                                       .has_first_row_id = true,
                                                       .first_row_id = next },
                                files, f->n_foreign, &list, &e) < 0)
                TEST_FAIL("foreign manifest list: %s", e.message);
        files = manifest_list_files_free(files, f->n_foreign);
        (void)snprintf(list_path, sizeof(list_path), "%s/metadata/foreign-list-%" PRId64 ".avro",
                       f->table_location, id);
        write_file(list_path, list.data, list.len);

        request = json_pack("{s:[], s:[{s:s, s:{s:I, s:I, s:I, s:s, s:{s:s}, s:i, s:I, s:I}},"
                            " {s:s, s:s, s:s, s:I}]}",
                            "requirements", "updates", "action", "add-snapshot", "snapshot",
                            "snapshot-id", (json_int_t)id, "sequence-number", (json_int_t)seq,
                            "timestamp-ms", (json_int_t)1700000000000, "manifest-list", list_path,
                            "summary", "operation", "append", "schema-id", 0, "first-row-id",
                            (json_int_t)next, "added-rows", (json_int_t)rows, "action",
                            "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id",
                            (json_int_t)id);
        ASSERT_TRUE(request);
        if (main_ref)
                ASSERT_OK(json_object_set_new(
                        json_object_get(json_array_get(json_object_get(request, "updates"), 0),
                                        "snapshot"),
                        "parent-snapshot-id", json_integer(parent)));
        if (table_update_apply(md, request, 1700000000000, d->metadata_location, &applied, &e) < 0)
                TEST_FAIL("foreign commit: %s", e.message);
        json_decref(d->metadata);
        d->metadata = TAKE_PTR(applied);
        (void)snprintf(d->metadata_location, sizeof(d->metadata_location),
                       "/double/v%u.metadata.json", ++d->version);
        return id;
}

static void fixture_on_closed(void *userdata) {
        (*(unsigned *)userdata)++;
}

static void fixture_on_stopped(void *userdata) {
        Fixture *f = userdata;

        ASSERT_TRUE(!f->is_stopped);
        f->is_stopped = true;
}

static void fixture_init(Fixture *f) {
        _cleanup_(json_decrefp) json_t *create = NULL;
        CatalogDouble *d;
        char path[256];
        Error e = { 0 };

        *f = (Fixture){ 0 };
        (void)snprintf(f->dir, sizeof(f->dir), "/tmp/icecommit-test-commit-XXXXXX");
        ASSERT_TRUE(mkdtemp(f->dir));
        (void)snprintf(f->table_location, sizeof(f->table_location), "%s/wh/db/t", f->dir);
        (void)snprintf(path, sizeof(path), "%s/wh", f->dir);
        ASSERT_OK(mkdir(path, 0755));
        (void)snprintf(path, sizeof(path), "%s/wh/db", f->dir);
        ASSERT_OK(mkdir(path, 0755));
        ASSERT_OK(mkdir(f->table_location, 0755));
        (void)snprintf(path, sizeof(path), "%s/metadata", f->table_location);
        ASSERT_OK(mkdir(path, 0755));
        (void)snprintf(path, sizeof(path), "%s/staged", f->table_location);
        ASSERT_OK(mkdir(path, 0755));
        (void)snprintf(path, sizeof(path), "%s/data", f->table_location);
        ASSERT_OK(mkdir(path, 0755));

        ASSERT_OK(uv_loop_init(&f->loop));
        ASSERT_OK(config_new_default(&f->config));
        /* Small, test-sized limits; files are not sized on storage (their own tests do that)
         * and the live-file index is off: the attempts are what is tested here. */
        f->config->commit.verify_data_files = false;
        f->config->commit.live_file_index = false;
        f->config->commit.min_backoff_ms = 1;
        f->config->commit.max_backoff_ms = 2;
        f->config->commit.max_attempts = 5;
        f->config->commit.total_timeout_ms = 60000;
        f->config->commit.retry_after_s = 7;
        ASSERT_OK(metrics_new(&f->metrics));
        ASSERT_OK(storage_new(&f->loop, &f->config->storage, f->metrics, &f->storage));
        (void)snprintf(path, sizeof(path), "%s/wh", f->dir);
        {
                StorageRoots *roots;

                ASSERT_OK(storage_roots_parse(path, &roots, &e));
                storage_set_roots(f->storage, roots); /* the warehouse, as the daemon's default */
        }

        d = calloc(1, sizeof(*d));
        ASSERT_TRUE(d);
        d->loop = &f->loop;
        d->commits = json_array();
        d->keys = json_array();
        d->landed_keys = json_object();
        ASSERT_TRUE(d->commits && d->keys && d->landed_keys);
        ASSERT_OK(uv_timer_init(&f->loop, &d->close_timer));
        d->close_timer.data = d;
        (void)snprintf(d->metadata_location, sizeof(d->metadata_location),
                       "/double/v0.metadata.json");
        create = json_pack("{s:s, s:o, s:{s:s}}", "name", "t", "schema", test_json(SCHEMA),
                           "properties", "format-version", "3");
        ASSERT_TRUE(create);
        if (table_update_metadata_create(create, f->table_location, 1700000000000,
                                         "9a3a4b7e-0c55-4b7e-9e4d-6a1f1d1e2c3b", &d->metadata,
                                         &e) < 0)
                TEST_FAIL("create: %s", e.message);
        ASSERT_OK(catalog_new_backend(&double_backend, d, &f->catalog));
        catalog_set_metrics(f->catalog, f->metrics);
        f->cat = d;

        ASSERT_OK(commit_engine_new(&f->loop, &f->config->commit, &f->config->storage, f->storage,
                                    f->catalog, f->metrics, &f->engine));
}

/* A new engine for f's config (an idle one, or one stopped): its registry and table state are
 * made with it. */
static void fixture_renew_engine(Fixture *f) {
        f->engine = commit_engine_free(f->engine);
        ASSERT_OK(commit_engine_new(&f->loop, &f->config->commit, &f->config->storage, f->storage,
                                    f->catalog, f->metrics, &f->engine));
}

static void fixture_stop(Fixture *f) {
        ASSERT_TRUE(!f->is_stopping);
        f->is_stopping = true;
        commit_engine_stop(f->engine, fixture_on_stopped, f);
}

/* What the daemon's shutdown timeout does: closes the catalog, cancelling its calls. */
static void fixture_close_catalog(Fixture *f) {
        ASSERT_TRUE(!f->is_catalog_closed);
        f->is_catalog_closed = true;
        catalog_close(f->catalog, NULL, NULL);
}

static void fixture_done(Fixture *f) {
        unsigned closed = 0;
        char cmd[128];

        if (!f->is_stopping)
                fixture_stop(f);
        RUN_UNTIL(f, f->is_stopped);
        if (!f->is_catalog_closed)
                catalog_close(f->catalog, fixture_on_closed, &closed);
        else
                closed++;
        storage_close(f->storage, fixture_on_closed, &closed);
        (void)uv_run(&f->loop, UV_RUN_DEFAULT);
        ASSERT_EQ(closed, 2);
        ASSERT_EQ(f->cat->n_rejected, 0);
        f->engine = commit_engine_free(f->engine);
        f->catalog = catalog_free(f->catalog);
        f->storage = storage_free(f->storage);
        f->metrics = metrics_free(f->metrics);
        f->config = config_free(f->config);
        ASSERT_EQ(uv_loop_close(&f->loop), 0);
        (void)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        ASSERT_EQ(system(cmd), 0);
}

/* Writes a staged manifest (as a writer would: ADDED entries, nothing inherited set) of data
 * files with these record counts; returns its location in `ret` (size 256). */
static void fixture_stage_files(Fixture *f, const char *name, const char *files_of,
                                const int64_t *rows, size_t n, char *ret);

/* Stages manifest staged/<name>.avro adding data files data/<name>-<i>.parquet of rows[i] rows
 * each (written, of the size the manifest states); ret: its path (256 bytes). */
static void fixture_stage(Fixture *f, const char *name, const int64_t *rows, size_t n, char *ret) {
        fixture_stage_files(f, name, name, rows, n, ret);
}

/* The same, naming the data files of files_of's manifest instead (not written again). */
static void fixture_stage_files(Fixture *f, const char *name, const char *files_of,
                                const int64_t *rows, size_t n, char *ret) {
        static const char zeros[1024];
        const json_t *md = f->cat->metadata;
        const json_t *schema = json_array_get(json_object_get(md, "schemas"), 0);
        const json_t *spec = json_array_get(json_object_get(md, "partition-specs"), 0);
        _cleanup_(buf_deinitp) Buf out;
        DataFile files[4] = { 0 };
        Error e = { 0 };

        ASSERT_TRUE(n <= ELEMENTSOF(files) && schema && spec);
        for (size_t i = 0; i < n; i++) {
                char location[256];

                (void)snprintf(location, sizeof(location), "%s/data/%s-%zu.parquet",
                               f->table_location, files_of, i);
                if (strcmp(name, files_of) == 0)
                        write_file(location, zeros, 1000 + i);
                files[i] = (DataFile){ .location = strdup(location),
                                       .format = DATA_FILE_FORMAT_PARQUET,
                                       .record_count = rows[i],
                                       .file_size_in_bytes = 1000 + (int64_t)i };
                ASSERT_TRUE(files[i].location);
                if (data_file_resolve(&files[i], schema, spec, &e) < 0)
                        TEST_FAIL("resolve: %s", e.message);
        }
        buf_init(&out, 1 << 20);
        if (manifest_write(&(ManifestWriteSpec){ .format_version = 3,
                                                 .schema = schema,
                                                 .partition_spec = spec },
                           files, n, &out, &e) < 0)
                TEST_FAIL("manifest_write: %s", e.message);
        for (size_t i = 0; i < n; i++)
                data_file_deinit(&files[i]);
        (void)snprintf(ret, 256, "%s/staged/%s.avro", f->table_location, name);
        write_file(ret, out.data, out.len);
}

static void fixture_submit_props(Fixture *f, Answer *a, const char *key,
                                 const char *const *manifests, size_t n, json_t *properties);

/* Submits a request with these staged manifests, as writer/api.c would after parsing. */
static void fixture_submit(Fixture *f, Answer *a, const char *key, const char *const *manifests,
                           size_t n) {
        fixture_submit_props(f, a, key, manifests, n, NULL);
}

static WriterRequest *fixture_request(Fixture *f, Answer *a, const char *key,
                                      const char *const *manifests, size_t n, json_t *properties);

/* The same with snapshot-properties (taken; NULL: none). */
static void fixture_submit_props(Fixture *f, Answer *a, const char *key,
                                 const char *const *manifests, size_t n, json_t *properties) {
        commit_engine_hooks()->submit(fixture_request(f, a, key, manifests, n, properties),
                                      f->engine);
}

/* The writer request fixture_submit_props() submits, answering into *a, not submitted yet. */
static WriterRequest *fixture_request(Fixture *f, Answer *a, const char *key,
                                      const char *const *manifests, size_t n, json_t *properties) {
        const CommitConfig *c = &f->config->commit;
        const CommitRequestLimits limits = { .max_manifests = c->max_manifests_per_request,
                                             .max_data_files = c->max_data_files_per_request,
                                             .max_path_bytes = c->max_path_bytes,
                                             .max_properties = c->max_snapshot_properties,
                                             .max_properties_bytes =
                                                     c->max_snapshot_properties_bytes };
        _cleanup_(json_decrefp) json_t *body = NULL;
        _cleanup_(freep) char *text = NULL;
        CommitRequest *request = NULL;
        WriterRequest *w = NULL;
        json_t *list;
        Error e = { 0 };

        *a = (Answer){ .loop = &f->loop };
        list = json_array();
        for (size_t i = 0; list && i < n; i++)
                ASSERT_OK(json_array_append_new(list, json_string(manifests[i])));
        body = json_pack("{s:s, s:o}", "idempotency-key", key, "staged-manifests", list);
        if (properties)
                ASSERT_OK(json_object_set_new(body, "snapshot-properties", properties));
        ASSERT_TRUE(body && (text = json_dumps(body, JSON_COMPACT)));
        if (request_parse("db", "t", slice_from_str(text), &limits, &request, &e) < 0)
                TEST_FAIL("parse: %s", e.message);
        ASSERT_OK(writer_request_new_take(request, &answer_sink, a, &w));
        return w;
}

/* The element of an array of objects whose `field` is `value`. */
static json_t *find_by(const json_t *array, const char *field, const char *value) {
        size_t i;
        json_t *o;

        json_array_foreach (array, i, o) {
                const char *v = json_string_value(json_object_get(o, field));

                if (v && strcmp(v, value) == 0)
                        return o;
        }
        TEST_FAIL("no element with %s=%s", field, value);
}

static json_t *commit_at(const Fixture *f, size_t i) {
        json_t *c = json_array_get(f->cat->commits, i);

        ASSERT_TRUE(c);
        return c;
}

static json_t *commit_snapshot(const Fixture *f, size_t i) {
        return json_object_get(find_by(json_object_get(commit_at(f, i), "updates"), "action",
                                       "add-snapshot"),
                               "snapshot");
}

static int64_t commit_asserted_head(const Fixture *f, size_t i) {
        return json_i64_at(find_by(json_object_get(commit_at(f, i), "requirements"), "type",
                                   "assert-ref-snapshot-id"),
                           "snapshot-id");
}

static const char *commit_keys(const Fixture *f, size_t i) {
        return json_string_value(json_object_get(json_object_get(commit_snapshot(f, i), "summary"),
                                                 SNAPSHOT_SUMMARY_KEYS));
}

/* Reads a manifest list the engine wrote. */
static ManifestFile *read_list(const char *path, size_t *ret_n) {
        _cleanup_(freep) char *text = NULL;
        ManifestFile *files = NULL;
        Error e = { 0 };
        long len;
        FILE *fp;

        fp = fopen(path, "re");
        if (!fp)
                TEST_FAIL("cannot open '%s'", path);
        ASSERT_EQ(fseek(fp, 0, SEEK_END), 0);
        len = ftell(fp);
        ASSERT_TRUE(len > 0);
        rewind(fp);
        text = malloc((size_t)len);
        ASSERT_TRUE(text);
        ASSERT_EQ(fread(text, 1, (size_t)len, fp), (size_t)len);
        fclose(fp);
        if (manifest_list_read(slice_make((const uint8_t *)text, (size_t)len), &files, ret_n, &e) <
            0)
                TEST_FAIL("manifest list '%s': %s", path, e.message);
        return files;
}

static char *dumps(const json_t *j) {
        char *text = json_dumps(j, JSON_COMPACT);

        ASSERT_TRUE(text);
        return text;
}

/* ---- tests --------------------------------------------------------------------------------- */

TEST(conflict_then_success_rebuilds_only_the_manifest_list) {
        static const int64_t rows[] = { 3, 4 };
        int64_t s1, s2, snapshot_id;
        char staged[256];
        const char *l1, *l2;
        ManifestFile *list;
        json_t *receipt, *m, *df;
        size_t n;
        Fixture f;
        Answer a;

        fixture_init(&f);
        s1 = fixture_advance(&f, 100); /* row ids 0..99 */
        fixture_stage(&f, "a", rows, 2, staged);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);

        /* Another writer lands 50 rows while ours is in flight; ours then gets the 409. */
        s2 = fixture_advance(&f, 50); /* row ids 100..149 */
        double_release(f.cat, STEP_CONFLICT);
        RUN_UNTIL(&f, a.done);

        ASSERT_EQ(a.status, 200);
        receipt = a.body;
        ASSERT_STREQ(json_string_value(json_object_get(receipt, "status")), "committed");
        ASSERT_EQ(json_i64_at(receipt, "attempts"), 2);
        ASSERT_EQ(json_i64_at(receipt, "batch-requests"), 1);
        ASSERT_EQ(json_i64_at(receipt, "sequence-number"), 3);
        /* Lineage from the new parent's next-row-id, not the first attempt's. */
        ASSERT_EQ(json_i64_at(receipt, "snapshot-first-row-id"), 150);
        m = json_array_get(json_object_get(receipt, "manifests"), 0);
        /* The table references icecommitd's copy, written once at intake: both attempts. */
        ASSERT_STREQ(json_string_value(json_object_get(m, "staged-location")), staged);
        ASSERT_CONTAINS(receipt_location(receipt, 0), "/metadata/copy-");
        ASSERT_EQ(json_i64_at(m, "added-rows"), 7);
        ASSERT_EQ(json_i64_at(m, "first-row-id"), 150);
        ASSERT_EQ(json_i64_at(m, "last-row-id"), 156);
        df = json_object_get(m, "data-files");
        ASSERT_EQ(json_array_size(df), 2);
        ASSERT_EQ(json_i64_at(json_array_get(df, 0), "first-row-id"), 150);
        ASSERT_EQ(json_i64_at(json_array_get(df, 0), "last-row-id"), 152);
        ASSERT_EQ(json_i64_at(json_array_get(df, 1), "first-row-id"), 153);
        ASSERT_EQ(json_i64_at(json_array_get(df, 1), "last-row-id"), 156);
        ASSERT_EQ(json_i64_at(json_array_get(df, 1), "last-updated-sequence-number"), 3);

        /* One load at intake, one per attempt; two commits of one snapshot id. */
        ASSERT_EQ(f.cat->n_loads, 3);
        ASSERT_EQ(f.cat->n_commits, 2);
        snapshot_id = json_i64_at(receipt, "snapshot-id");
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 0), "snapshot-id"), snapshot_id);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "snapshot-id"), snapshot_id);
        ASSERT_EQ(commit_asserted_head(&f, 0), s1);
        ASSERT_EQ(commit_asserted_head(&f, 1), s2);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 0), "parent-snapshot-id"), s1);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "parent-snapshot-id"), s2);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 0), "first-row-id"), 100);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "first-row-id"), 150);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 0), "added-rows"), 7);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "added-rows"), 7);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "sequence-number"), 3);
        ASSERT_STREQ(commit_keys(&f, 1), "job-a");
        {
                json_t *ref = find_by(json_object_get(commit_at(&f, 1), "updates"), "action",
                                      "set-snapshot-ref");

                ASSERT_STREQ(json_string_value(json_object_get(ref, "ref-name")), "main");
                ASSERT_STREQ(json_string_value(json_object_get(ref, "type")), "branch");
                ASSERT_EQ(json_i64_at(ref, "snapshot-id"), snapshot_id);
        }
        ASSERT_TRUE(json_is_null(json_array_get(f.cat->keys, 0))); /* no Idempotency-Key support */

        /* A new list, the same copy of the staged manifest first (written once, at intake),
         * then both foreign ones; the conflicted attempt's list is deleted (known not
         * committed), the copy and the staged manifest are not. */
        l1 = json_string_value(json_object_get(commit_snapshot(&f, 0), "manifest-list"));
        l2 = json_string_value(json_object_get(commit_snapshot(&f, 1), "manifest-list"));
        ASSERT_TRUE(l1 && l2 && strcmp(l1, l2) != 0);
        settle(&f);
        ASSERT_TRUE(!file_exists(l1));
        ASSERT_TRUE(file_exists(staged));
        ASSERT_TRUE(file_exists(receipt_location(receipt, 0)));
        list = read_list(l2, &n);
        ASSERT_EQ(n, 3);
        ASSERT_STREQ(list[0].path, receipt_location(receipt, 0));
        ASSERT_TRUE(list[0].has_first_row_id);
        ASSERT_EQ(list[0].first_row_id, 150);
        ASSERT_EQ(list[0].added_snapshot_id, snapshot_id);
        ASSERT_EQ(list[0].sequence_number, 3);
        ASSERT_STREQ(list[1].path, f.foreign_paths[0]);
        ASSERT_EQ(list[1].first_row_id, 100);
        ASSERT_STREQ(list[2].path, f.foreign_paths[1]);
        ASSERT_EQ(list[2].first_row_id, 0);
        list = manifest_list_files_free(list, n);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 157);

        answer_deinit(&a);
        fixture_done(&f);
}

TEST(unknown_outcome_resolved_by_history) {
        static const int64_t rows[] = { 5 };
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        (void)fixture_advance(&f, 10);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_UNKNOWN_LANDED;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);

        /* The reload shows our key: answered from history, never committed twice. */
        ASSERT_EQ(a.status, 200);
        ASSERT_STREQ(json_string_value(json_object_get(a.body, "status")), "committed");
        ASSERT_TRUE(a.found_in_history);
        ASSERT_EQ(json_i64_at(a.body, "snapshot-id"),
                  json_i64_at(commit_snapshot(&f, 0), "snapshot-id"));
        ASSERT_EQ(json_i64_at(a.body, "sequence-number"), 2);
        ASSERT_EQ(f.cat->n_commits, 1);
        ASSERT_EQ(f.cat->n_loads, 3);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 15);
        /* The attempt without a verdict keeps its list: it is the committed one. */
        settle(&f);
        ASSERT_TRUE(file_exists(
                json_string_value(json_object_get(commit_snapshot(&f, 0), "manifest-list"))));

        answer_deinit(&a);
        fixture_done(&f);
}

TEST(unknown_outcome_not_landed_is_committed_again_once) {
        static const int64_t rows[] = { 5 };
        int64_t s1;
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        s1 = fixture_advance(&f, 10);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_UNKNOWN;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);

        ASSERT_EQ(a.status, 200);
        ASSERT_TRUE(!a.found_in_history);
        ASSERT_EQ(json_i64_at(a.body, "attempts"), 2);
        ASSERT_EQ(json_i64_at(a.body, "snapshot-first-row-id"), 10);
        ASSERT_EQ(f.cat->n_loads, 3);
        ASSERT_EQ(f.cat->n_commits, 2);
        /* The same snapshot id on the same head: a landing of the first would fail the second's
         * requirement instead of committing twice. */
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "snapshot-id"),
                  json_i64_at(commit_snapshot(&f, 0), "snapshot-id"));
        ASSERT_EQ(commit_asserted_head(&f, 0), s1);
        ASSERT_EQ(commit_asserted_head(&f, 1), s1);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 15);
        settle(&f);
        /* The unknown attempt's list is never deleted. */
        ASSERT_TRUE(file_exists(
                json_string_value(json_object_get(commit_snapshot(&f, 0), "manifest-list"))));

        answer_deinit(&a);
        fixture_done(&f);
}

/* Roots narrowed (SIGHUP) while an attempt has no verdict: the next attempt finds the table
 * outside them, and cannot say "not committed" (403): the first may have landed. */
TEST(roots_refusing_after_an_unknown_attempt_leave_the_outcome_unknown) {
        static const int64_t rows[] = { 5 };
        char staged[256], other[512];
        StorageRoots *roots;
        Fixture f;
        Answer a;
        Error e;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        (void)snprintf(other, sizeof(other), "%s/elsewhere", f.dir);
        ASSERT_OK(storage_roots_parse(other, &roots, &e));
        storage_set_roots(f.storage, roots);
        double_release(f.cat, STEP_UNKNOWN);
        RUN_UNTIL(&f, a.done);

        ASSERT_EQ(a.status, 504);
        ASSERT_STREQ(answer_error_type(&a), "commit-state-unknown");
        ASSERT_EQ(f.cat->n_commits, 1);
        answer_deinit(&a);
        fixture_done(&f);
}

TEST(unknown_outcome_replayed_with_the_same_idempotency_key) {
        static const int64_t rows[] = { 5 };
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        f.cat->supports_idempotency = true;
        (void)fixture_advance(&f, 10);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_UNKNOWN_LANDED;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);

        /* Replayed without a reload; the catalog answers the landed commit 200 again. */
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(json_i64_at(a.body, "snapshot-first-row-id"), 10);
        ASSERT_EQ(f.cat->n_loads, 2);
        ASSERT_EQ(f.cat->n_commits, 2);
        ASSERT_TRUE(json_is_string(json_array_get(f.cat->keys, 0)));
        ASSERT_TRUE(json_equal(json_array_get(f.cat->keys, 0), json_array_get(f.cat->keys, 1)));
        ASSERT_TRUE(json_equal(commit_at(&f, 0), commit_at(&f, 1)));
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 15);

        answer_deinit(&a);
        fixture_done(&f);
}

/* The /metrics text the engine's hook exposes (it fills in the per-table gauges first). */
static char *engine_metrics_text(Fixture *f) {
        Buf out;

        buf_init(&out, 1u << 24);
        ASSERT_OK(commit_engine_hooks()->metrics(&out, f->engine));
        return (char *)buf_steal(&out, NULL);
}

TEST(metrics_count_the_table_the_catalog_calls_and_the_unknown_outcome_resolved) {
        static const int64_t rows[] = { 5 };
        _cleanup_(freep) char *text = NULL;
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        (void)fixture_advance(&f, 10);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_UNKNOWN;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 200);

        ASSERT_EQ(metrics_get(f.metrics, METRIC_TABLE_ROWS_ASSIGNED, "db.t"), 5);
        ASSERT_TRUE(metrics_get(f.metrics, METRIC_TABLE_LAST_COMMIT, "db.t") > 1.7e9);
        ASSERT_EQ(metrics_get(f.metrics, METRIC_UNKNOWN_RESOLVED, "committed"), 1);
        ASSERT_EQ(metrics_get(f.metrics, METRIC_CATALOG_REQUESTS,
                              "commit" METRICS_LABEL_SEP "state-unknown"),
                  1);
        ASSERT_EQ(metrics_get(f.metrics, METRIC_CATALOG_REQUESTS,
                              "commit" METRICS_LABEL_SEP "success"),
                  1);
        ASSERT_EQ(metrics_get(f.metrics, METRIC_CATALOG_DURATION,
                              "commit" METRICS_LABEL_SEP "success"),
                  1);
        ASSERT_TRUE(metrics_get(f.metrics, METRIC_CATALOG_REQUESTS,
                                "load" METRICS_LABEL_SEP "success") >= 1);
        text = engine_metrics_text(&f);
        /* Nothing waits any more: the table's series stay, at 0. */
        ASSERT_CONTAINS(text, "icecommit_table_queue_requests{table=\"db.t\"} 0\n");
        ASSERT_CONTAINS(text, "icecommit_table_oldest_request_age_seconds{table=\"db.t\"} 0\n");
        ASSERT_CONTAINS(text, "icecommit_unknown_outcomes_outstanding 0\n");

        answer_deinit(&a);
        fixture_done(&f);
}

TEST(metrics_show_waiting_requests_and_unknown_outcomes_outstanding) {
        static const int64_t rows[] = { 1 };
        _cleanup_(freep) char *text = NULL;
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        f.config->commit.min_backoff_ms = 600000;
        f.config->commit.max_backoff_ms = 600000;
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_UNKNOWN;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, f.cat->n_commit_answers == 1);
        /* In its batch's backoff after an attempt without a verdict: waiting, unresolved. */
        text = engine_metrics_text(&f);
        ASSERT_CONTAINS(text, "icecommit_table_queue_requests{table=\"db.t\"} 1\n");
        ASSERT_CONTAINS(text, "icecommit_unknown_outcomes_outstanding 1\n");
        ASSERT_TRUE(metrics_get(f.metrics, METRIC_TABLE_OLDEST_AGE, "db.t") > 0);
        free(text);

        /* Stopped: answered 504, the key stays unknown until its writer retries. */
        fixture_stop(&f);
        ASSERT_TRUE(a.done);
        ASSERT_EQ(a.status, 504);
        RUN_UNTIL(&f, f.is_stopped);
        text = engine_metrics_text(&f);
        ASSERT_CONTAINS(text, "icecommit_unknown_outcomes_outstanding 1\n");
        ASSERT_EQ(metrics_get(f.metrics, METRIC_UNKNOWN_RESOLVED, "committed"), 0);

        answer_deinit(&a);
        fixture_done(&f);
}

/* ---- shutdown ------------------------------------------------------------------------------ */

TEST(shutdown_answers_queued_requests_503_and_commits_nothing_of_them) {
        static const int64_t rows[] = { 1 };
        char sa[256], sb[256];
        Fixture f;
        Answer a, b;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        settle(&f); /* b is through intake, queued behind a's batch */
        ASSERT_TRUE(!b.done);

        fixture_stop(&f);
        ASSERT_TRUE(b.done);
        ASSERT_EQ(b.status, 503);
        ASSERT_STREQ(answer_error_type(&b), "shutting-down");
        ASSERT_STREQ(b.retry_after, "7");
        ASSERT_TRUE(!a.done && !f.is_stopped);

        /* The commit in flight finishes, then the engine is stopped; b never went out. */
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, f.is_stopped);
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(f.cat->n_commits, 1);
        ASSERT_STREQ(commit_keys(&f, 0), "job-a");

        /* Nothing new is taken while stopping. */
        {
                Answer c;

                fixture_submit(&f, &c, "job-c", (const char *const[]){ sb }, 1);
                ASSERT_TRUE(c.done);
                ASSERT_EQ(c.status, 503);
                ASSERT_STREQ(answer_error_type(&c), "shutting-down");
                answer_deinit(&c);
        }
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(shutdown_while_a_load_is_in_flight) {
        static const int64_t rows[] = { 1 };
        char staged[256];
        Fixture f;
        Answer a;

        /* Finished by its answer: the attempt goes on and commits. */
        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->load_script[1] = STEP_HOLD; /* the attempt's load (0 is intake's) */
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_stop(&f);
        ASSERT_TRUE(!a.done && !f.is_stopped);
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, f.is_stopped);
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(f.cat->n_commits, 1);
        answer_deinit(&a);
        fixture_done(&f);

        /* Cancelled by the shutdown timeout: nothing was sent, a definite 503. */
        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->load_script[1] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_stop(&f);
        fixture_close_catalog(&f);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 503);
        ASSERT_STREQ(answer_error_type(&a), "catalog-unavailable");
        ASSERT_CONTAINS(answer_error_message(&a), "nothing was committed");
        ASSERT_STREQ(a.retry_after, "7");
        ASSERT_EQ(f.cat->n_commits, 0);
        answer_deinit(&a);
        fixture_done(&f);

        /* An intake load in flight: the request was not queued yet. */
        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->load_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        fixture_stop(&f);
        ASSERT_TRUE(!a.done);
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 503);
        ASSERT_STREQ(answer_error_type(&a), "shutting-down");
        ASSERT_EQ(f.cat->n_loads, 1);
        ASSERT_EQ(f.cat->n_commits, 0);
        answer_deinit(&a);
        fixture_done(&f);
}

TEST(shutdown_while_a_commit_is_in_flight_is_504_when_it_gets_no_verdict) {
        static const int64_t rows[] = { 1 };
        char staged[256];
        Fixture f;
        Answer a;

        /* Cancelled by the shutdown timeout: it may have landed. */
        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_stop(&f);
        ASSERT_TRUE(!a.done);
        fixture_close_catalog(&f);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 504);
        ASSERT_STREQ(answer_error_type(&a), "commit-state-unknown");
        ASSERT_STREQ(a.retry_after, "");
        ASSERT_EQ(f.cat->n_commits, 1);
        answer_deinit(&a);
        fixture_done(&f);

        /* A 5xx while stopping: no replay, no reload, 504. */
        fixture_init(&f);
        f.cat->supports_idempotency = true;
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_stop(&f);
        double_release(f.cat, STEP_UNKNOWN);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 504);
        ASSERT_STREQ(answer_error_type(&a), "commit-state-unknown");
        ASSERT_EQ(f.cat->n_commits, 1);
        ASSERT_EQ(f.cat->n_loads, 2);
        answer_deinit(&a);
        fixture_done(&f);
}

/* Stops the engine while a batch waits out the backoff after its first commit answered `step`;
 * returns the answer's status and type. */
static void stop_during_backoff(bool idempotency, Step step, int want_status,
                                const char *want_type) {
        static const int64_t rows[] = { 1 };
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        /* Long enough that the timer cannot fire first: nothing waits for it. */
        f.config->commit.min_backoff_ms = 600000;
        f.config->commit.max_backoff_ms = 600000;
        f.cat->supports_idempotency = idempotency;
        fixture_stage(&f, "a", rows, 1, staged);
        f.cat->commit_script[0] = step;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, f.cat->n_commit_answers == 1);
        ASSERT_TRUE(!a.done);
        fixture_stop(&f);
        ASSERT_TRUE(a.done);
        ASSERT_EQ(a.status, want_status);
        ASSERT_STREQ(answer_error_type(&a), want_type);
        ASSERT_STREQ(a.retry_after, want_status == 503 ? "7" : "");
        ASSERT_EQ(f.cat->n_commits, 1);
        ASSERT_EQ(f.cat->n_loads, 2);
        RUN_UNTIL(&f, f.is_stopped);
        answer_deinit(&a);
        fixture_done(&f);
}

TEST(shutdown_during_a_conflict_backoff_is_503) {
        stop_during_backoff(false, STEP_CONFLICT, 503, "shutting-down");
        stop_during_backoff(true, STEP_CONFLICT, 503, "shutting-down");
}

TEST(shutdown_during_an_unknown_outcome_backoff_is_504) {
        /* The reload that would resolve it (no Idempotency-Key support). */
        stop_during_backoff(false, STEP_UNKNOWN, 504, "commit-state-unknown");
        stop_during_backoff(false, STEP_UNKNOWN_LANDED, 504, "commit-state-unknown");
        /* The replay with the same key (issue 11: this was answered 503). */
        stop_during_backoff(true, STEP_UNKNOWN, 504, "commit-state-unknown");
        stop_during_backoff(true, STEP_UNKNOWN_LANDED, 504, "commit-state-unknown");
}

/* ---- backoff and attempt bounds ------------------------------------------------------------ */

TEST(backoff_delays_stay_within_min_and_max_and_attempts_within_max_attempts) {
        static const int64_t rows[] = { 1 };
        const uint64_t min = 8, max = 20;
        char staged[256];
        Fixture f;
        Answer a;

        fixture_init(&f);
        f.config->commit.min_backoff_ms = min;
        f.config->commit.max_backoff_ms = max;
        f.config->commit.max_attempts = 5;
        fixture_stage(&f, "a", rows, 1, staged);
        for (unsigned i = 0; i < DOUBLE_MAX_CALLS; i++)
                f.cat->commit_script[i] = STEP_CONFLICT;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);

        ASSERT_EQ(a.status, 503);
        ASSERT_STREQ(answer_error_type(&a), "commit-conflict");
        ASSERT_CONTAINS(answer_error_message(&a), "after 5 attempts");
        ASSERT_CONTAINS(answer_error_message(&a), "nothing was committed");
        ASSERT_STREQ(a.retry_after, "7");
        ASSERT_EQ(f.cat->n_commits, 5);
        ASSERT_EQ(f.cat->n_loads, 6);
        /* Attempt k + 1 loads at least min * 2^(k-1) (capped at max) after attempt k's 409, on
         * the loop's clock, which the timer runs on. The exact upper bound (max + 10% jitter)
         * is tested without a clock above; here a busy machine may run the timer late, never
         * early, so it only gets a generous margin. */
        for (unsigned k = 1; k < 5; k++) {
                uint64_t want = min << (k - 1), delay;

                if (want > max)
                        want = max;
                delay = f.cat->load_ms[k + 1] - f.cat->commit_answer_ms[k - 1];
                if (delay < want || delay > max + max / 10 + 2000)
                        TEST_FAIL("delay before attempt %u: %" PRIu64 " ms, expected %" PRIu64
                                  " to %" PRIu64,
                                  k + 1, delay, want, max + max / 10);
        }
        answer_deinit(&a);
        fixture_done(&f);
}

TEST(backoff_is_exponential_within_min_and_max_plus_jitter) {
        static const uint64_t randoms[] = { 0, 1, 7, 12345, UINT64_MAX / 3, UINT64_MAX };
        CommitConfig c = { .min_backoff_ms = 100, .max_backoff_ms = 1000 };

        for (unsigned attempt = 1; attempt <= 40; attempt++) {
                uint64_t base = attempt <= 4 ? 100u << (attempt - 1) : 1000;

                for (size_t i = 0; i < ELEMENTSOF(randoms); i++) {
                        uint64_t d = commit_engine_backoff_ms(&c, attempt, randoms[i]);

                        if (d < base || d >= base + base / 10 || d < c.min_backoff_ms ||
                            d >= c.max_backoff_ms + c.max_backoff_ms / 10)
                                TEST_FAIL("attempt %u random %" PRIu64 ": %" PRIu64
                                          " ms, expected %" PRIu64 " to %" PRIu64,
                                          attempt, randoms[i], d, base, base + base / 10 - 1);
                }
        }
        ASSERT_EQ(commit_engine_backoff_ms(&c, 1, 0), 100);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 3, 0), 400);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 3, 39), 439);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 3, 40), 400);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 9, 99), 1099);
        /* Below 10 ms there is no jitter: the bounds are exact. */
        c = (CommitConfig){ .min_backoff_ms = 1, .max_backoff_ms = 4 };
        ASSERT_EQ(commit_engine_backoff_ms(&c, 1, UINT64_MAX), 1);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 2, UINT64_MAX), 2);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 3, UINT64_MAX), 4);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 30, UINT64_MAX), 4);
        /* min == max: a constant wait. */
        c = (CommitConfig){ .min_backoff_ms = 50, .max_backoff_ms = 50 };
        ASSERT_EQ(commit_engine_backoff_ms(&c, 1, 0), 50);
        ASSERT_EQ(commit_engine_backoff_ms(&c, 7, 4), 54);
}

TEST(attempts_end_at_the_total_timeout) {
        static const int64_t rows[] = { 1 };
        char staged[256];
        Fixture f;
        Answer a;
        uint64_t submitted;

        fixture_init(&f);
        f.config->commit.min_backoff_ms = 30;
        f.config->commit.max_backoff_ms = 60;
        f.config->commit.max_attempts = 100;
        f.config->commit.total_timeout_ms = 100;
        fixture_stage(&f, "a", rows, 1, staged);
        for (unsigned i = 0; i < DOUBLE_MAX_CALLS; i++)
                f.cat->commit_script[i] = STEP_CONFLICT;
        uv_update_time(&f.loop);
        submitted = uv_now(&f.loop);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);

        /* At least two attempts; the third starts 30 + 60 ms in at the earliest and the fourth
         * 150 ms in, past the timeout: never more than four, whatever the machine's speed. */
        ASSERT_EQ(a.status, 503);
        ASSERT_STREQ(answer_error_type(&a), "commit-conflict");
        ASSERT_TRUE(f.cat->n_commits >= 2 && f.cat->n_commits <= 4);
        ASSERT_TRUE(a.at_ms - submitted >= 30);
        answer_deinit(&a);
        fixture_done(&f);
}

/* ---- group commit ---------------------------------------------------------------------------- */

TEST(requests_queued_behind_a_commit_are_batched_within_the_limits) {
        static const int64_t rows[] = { 2 };
        static const char *const names[] = { "a", "b", "c", "d1", "d2", "e1", "e2", "f" };
        char staged[ELEMENTSOF(names)][256];
        Answer answers[6];
        Fixture f;
        /* Batches: a alone (in flight), then b + c (max-batch-requests 2), d alone (d + e would
         * be 4 manifests, above max-batch-manifests 3), then e + f (3 manifests). */
        static const struct {
                const char *key;
                size_t first, n; /* into names */
                int64_t batch_requests, first_row_id;
                size_t commit;
        } want[] = {
                { "job-a", 0, 1, 1, 0, 0 },  { "job-b", 1, 1, 2, 2, 1 },
                { "job-c", 2, 1, 2, 4, 1 },  { "job-d", 3, 2, 1, 6, 2 },
                { "job-e", 5, 2, 2, 10, 3 }, { "job-f", 7, 1, 2, 14, 3 },
        };

        fixture_init(&f);
        f.config->commit.max_batch_requests = 2;
        f.config->commit.max_batch_manifests = 3;
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                fixture_stage(&f, names[i], rows, 1, staged[i]);
        f.cat->commit_script[0] = STEP_HOLD;
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const char *m[2] = { staged[want[i].first],
                                     want[i].n > 1 ? staged[want[i].first + 1] : NULL };

                fixture_submit(&f, &answers[i], want[i].key, m, want[i].n);
                /* One at a time through intake, so that the queue order is the submission order. */
                if (i == 0)
                        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
                else
                        settle(&f);
                ASSERT_TRUE(!answers[i].done);
        }
        double_release(f.cat, STEP_SUCCESS);
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                RUN_UNTIL(&f, answers[i].done);

        ASSERT_EQ(f.cat->n_commits, 4);
        ASSERT_STREQ(commit_keys(&f, 0), "job-a");
        ASSERT_STREQ(commit_keys(&f, 1), "job-b,job-c");
        ASSERT_STREQ(commit_keys(&f, 2), "job-d");
        ASSERT_STREQ(commit_keys(&f, 3), "job-e,job-f");
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                const json_t *r = answers[i].body;
                const json_t *manifests = json_object_get(r, "manifests");

                ASSERT_EQ(answers[i].status, 200);
                ASSERT_EQ(json_i64_at(r, "batch-requests"), want[i].batch_requests);
                ASSERT_EQ(json_i64_at(r, "attempts"), 1);
                ASSERT_EQ(json_i64_at(r, "snapshot-id"),
                          json_i64_at(commit_snapshot(&f, want[i].commit), "snapshot-id"));
                ASSERT_EQ(json_array_size(manifests), want[i].n);
                /* Each request's manifests get consecutive ranges, in batch order. */
                for (size_t k = 0; k < want[i].n; k++) {
                        const json_t *m = json_array_get(manifests, k);

                        ASSERT_EQ(json_i64_at(m, "first-row-id"),
                                  want[i].first_row_id + 2 * (int64_t)k);
                        ASSERT_EQ(json_i64_at(m, "last-row-id"),
                                  want[i].first_row_id + 2 * (int64_t)k + 1);
                }
        }
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 16);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 3), "added-rows"), 6);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 3), "first-row-id"), 10);
        for (size_t i = 0; i < ELEMENTSOF(answers); i++)
                answer_deinit(&answers[i]);
        fixture_done(&f);
}

/* Every summary stays in the table metadata for good: a batch takes no request that would
 * take its summary past commit.max-summary-bytes (that one goes in the next snapshot). */
TEST(a_batch_stops_taking_requests_at_max_summary_bytes) {
        static const int64_t rows[] = { 1 };
        static const char *const names[] = { "z", "a", "b", "c" };
        char staged[ELEMENTSOF(names)][256], value[1401];
        Answer answers[ELEMENTSOF(names)];
        Fixture f;

        fixture_init(&f);
        f.config->commit.max_summary_bytes = 4096;
        memset(value, 'v', sizeof(value) - 1);
        value[sizeof(value) - 1] = '\0';
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                fixture_stage(&f, names[i], rows, 1, staged[i]);
        f.cat->commit_script[0] = STEP_HOLD;
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char key[32], prop[32];

                (void)snprintf(key, sizeof(key), "job-%s", names[i]);
                (void)snprintf(prop, sizeof(prop), "note-%s", names[i]);
                fixture_submit_props(&f, &answers[i], key, (const char *const[]){ staged[i] }, 1,
                                     json_pack("{s:s}", prop, value));
                if (i == 0)
                        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
                else
                        settle(&f);
        }
        double_release(f.cat, STEP_SUCCESS);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                RUN_UNTIL(&f, answers[i].done);
                ASSERT_EQ(answers[i].status, 200);
        }
        /* 1024 + the queue's name + 2 x ~1430 fit in 4096; a third does not. */
        ASSERT_EQ(f.cat->n_commits, 3);
        ASSERT_STREQ(commit_keys(&f, 1), "job-a,job-b");
        ASSERT_STREQ(commit_keys(&f, 2), "job-c");
        for (size_t i = 0; i < 3; i++) {
                _cleanup_(freep) char *text =
                        dumps(json_object_get(commit_snapshot(&f, i), "summary"));

                ASSERT_TRUE(strlen(text) <= 4096);
        }
        for (size_t i = 0; i < ELEMENTSOF(answers); i++)
                answer_deinit(&answers[i]);
        fixture_done(&f);
}

TEST(a_full_queue_answers_503_queue_full_with_retry_after) {
        static const int64_t rows[] = { 1 };
        char sa[256], sb[256], sc[256];
        Answer a, b, c;
        Fixture f;

        fixture_init(&f);
        f.config->commit.max_queue_requests = 2;
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        fixture_stage(&f, "c", rows, 1, sc);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        settle(&f);

        /* Two accepted and unanswered (one in flight, one queued): the third is refused at once,
         * before anything is read or loaded. */
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        ASSERT_TRUE(c.done);
        ASSERT_EQ(c.status, 503);
        ASSERT_STREQ(answer_error_type(&c), "queue-full");
        ASSERT_CONTAINS(answer_error_message(&c), "commit.max-queue-requests");
        ASSERT_STREQ(c.retry_after, "7");
        /* The second request's intake took the table the first one's attempt loaded. */
        ASSERT_EQ(f.cat->n_loads, 2);

        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, a.done && b.done);
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(b.status, 200);
        ASSERT_EQ(f.cat->n_commits, 2);
        answer_deinit(&c);

        /* Room again: the same key is taken now. */
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_EQ(c.status, 200);
        ASSERT_EQ(f.cat->n_commits, 3);

        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

/* ---- bounded intake (issue 19, findings 3 and 4) -------------------------------------------- */

/* Bytes the engine's requests hold at intake, as /metrics shows them. */
static double intake_bytes(Fixture *f) {
        free(engine_metrics_text(f));
        return metrics_get(f->metrics, METRIC_INTAKE_BYTES, NULL);
}

static double queue_requests(Fixture *f) {
        free(engine_metrics_text(f));
        return metrics_get(f->metrics, METRIC_QUEUE_REQUESTS, NULL);
}

/* A request holds its parsed manifests while it waits and commits; every way a request ends
 * gives back all it held: committed, refused at intake (by a rule or by a bound), failed by the
 * catalog, answered at shutdown. */
TEST(intake_bytes_return_to_zero_however_a_request_ends) {
        static const int64_t rows[] = { 1, 2, 3 };
        char sa[256], sb[256], sc[256], sd[256];
        Answer a, b, c, d;
        Fixture f;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 3, sb);
        fixture_stage(&f, "c", rows, 1, sc);
        fixture_stage(&f, "d", rows, 1, sd);

        /* Committed: held until the batch answered it. */
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        ASSERT_TRUE(intake_bytes(&f) > 0);
        /* Queued behind it: held too, more. */
        {
                double one = intake_bytes(&f);

                fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
                settle(&f);
                ASSERT_TRUE(!b.done && intake_bytes(&f) > one);
        }
        /* Shutdown: the queued one is answered 503, the committing one finishes. */
        fixture_stop(&f);
        ASSERT_TRUE(b.done && b.status == 503);
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, f.is_stopped);
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(intake_bytes(&f), 0);
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_renew_engine(&f);
        f.is_stopping = f.is_stopped = false;

        /* Refused by a rule while decoding (a data file's path over commit.max-path-bytes: the
         * staged manifest's own location is 3 bytes shorter than its files'). */
        f.config->commit.max_path_bytes = (uint32_t)strlen(sc);
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_EQ(c.status, 422);
        ASSERT_STREQ(answer_error_type(&c), "invalid-manifest");
        ASSERT_CONTAINS(answer_error_message(&c), "staged-manifests[0]");
        ASSERT_CONTAINS(answer_error_message(&c), "entry 0 (");
        ASSERT_CONTAINS(answer_error_message(&c), "(commit.max-path-bytes)");
        ASSERT_EQ(intake_bytes(&f), 0);
        answer_deinit(&c);
        f.config->commit.max_path_bytes = 4096;

        /* Refused by its own bound: 413, nothing held after. */
        f.config->commit.intake_max_request_bytes = 600;
        fixture_submit(&f, &c, "job-c2", (const char *const[]){ sc }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_EQ(c.status, 413);
        ASSERT_STREQ(answer_error_type(&c), "request-too-large");
        ASSERT_CONTAINS(answer_error_message(&c), "staged-manifests[0]");
        ASSERT_CONTAINS(answer_error_message(&c), "(commit.intake-max-request-bytes");
        ASSERT_EQ(intake_bytes(&f), 0);
        answer_deinit(&c);
        f.config->commit.intake_max_request_bytes = 128u << 20;

        /* Failed by the catalog. */
        f.cat->commit_script[f.cat->n_commits] = STEP_REJECTED;
        fixture_submit(&f, &d, "job-d", (const char *const[]){ sd }, 1);
        RUN_UNTIL(&f, d.done);
        ASSERT_EQ(d.status, 502);
        ASSERT_EQ(intake_bytes(&f), 0);
        answer_deinit(&d);
        fixture_done(&f);
}

/* The daemon-wide bound: a request that finds it spent by others is told to retry (503
 * server-busy, Retry-After), and is taken once they are done. */
static uint64_t file_size(const char *path) {
        struct stat st;

        ASSERT_OK(stat(path, &st));
        return (uint64_t)st.st_size;
}

TEST(a_spent_intake_budget_is_503_server_busy) {
        static const int64_t rows[] = { 1 };
        char sa[256], sa2[256], sb1[256], sb2[256];
        Answer a, b;
        Fixture f;
        uint64_t one;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "a2", rows, 1, sa2);
        fixture_stage(&f, "b1", rows, 1, sb1);
        fixture_stage(&f, "b2", rows, 1, sb2);
        /* What one such request holds while it commits. */
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        one = (uint64_t)intake_bytes(&f);
        /* Its parsed entries, not the bytes of its manifest file: those went back once parsed. */
        ASSERT_TRUE(one > 0 && one < file_size(sa));
        fixture_stop(&f);
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, f.is_stopped);
        answer_deinit(&a);

        /* Room for what a holds and two and a half manifest files: a passes alone (its file
         * read and icecommitd's copy of it while parsed), b's two files and the copy of the
         * first do not fit beside it. */
        f.config->commit.intake_max_bytes = one + 64 + file_size(sb1) * 5 / 2;
        fixture_renew_engine(&f);
        f.is_stopping = f.is_stopped = false;
        f.cat->commit_script[f.cat->n_commits] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a2", (const char *const[]){ sa2 }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        ASSERT_TRUE(intake_bytes(&f) >= one && intake_bytes(&f) < one + 64);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb1, sb2 }, 2);
        RUN_UNTIL(&f, b.done);
        ASSERT_EQ(b.status, 503);
        ASSERT_STREQ(answer_error_type(&b), "server-busy");
        ASSERT_CONTAINS(answer_error_message(&b), "(commit.intake-max-bytes); retry");
        ASSERT_STREQ(b.retry_after, "7");
        answer_deinit(&b);

        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(intake_bytes(&f), 0);
        /* The key again once the bytes are back (a 503 binds nothing: here a smaller body). */
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb1 }, 1);
        RUN_UNTIL(&f, b.done);
        ASSERT_EQ(b.status, 200);
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

/* commit.max-verified-files-per-request bounds a request's files while they are decoded,
 * across its manifests, whether sizes are verified or not (this fixture does not verify). */
TEST(a_request_over_its_data_files_is_refused_while_decoding) {
        static const int64_t rows[] = { 1, 1, 1 };
        char sa[256], sb[256];
        Answer a;
        Fixture f;

        fixture_init(&f);
        f.config->commit.max_verified_files_per_request = 4;
        fixture_stage(&f, "a", rows, 3, sa);
        fixture_stage(&f, "b", rows, 2, sb);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa, sb }, 2);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 422);
        ASSERT_STREQ(answer_error_type(&a), "too-many-data-files");
        ASSERT_CONTAINS(answer_error_message(&a), "more than 4 data files");
        ASSERT_CONTAINS(answer_error_message(&a), "staged-manifests[1] '");
        ASSERT_EQ(intake_bytes(&f), 0);
        ASSERT_EQ(f.cat->n_commits, 0);
        answer_deinit(&a);

        f.config->commit.max_verified_files_per_request = 5;
        fixture_submit(&f, &a, "job-a2", (const char *const[]){ sa, sb }, 2);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 200);
        answer_deinit(&a);
        fixture_done(&f);
}

/* Repeats of a pending key count against commit.max-queue-requests, at most
 * commit.max-waiters-per-key of them per key; one whose client leaves is dropped at once (its
 * answer never comes, its slot is free again), and the others get the first one's answer. */
TEST(repeats_of_a_pending_key_are_bounded_and_leave_with_their_client) {
        static const int64_t rows[] = { 1 };
        char sa[256], sb[256], sc[256];
        Answer a, r1, r2, r3, r4, b, c;
        WriterRequest *leaving;
        Fixture f;

        fixture_init(&f);
        f.config->commit.max_queue_requests = 4;
        f.config->commit.max_waiters_per_key = 2;
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        fixture_stage(&f, "c", rows, 1, sc);
        f.cat->commit_script[0] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);

        leaving = fixture_request(&f, &r1, "job-a", (const char *const[]){ sa }, 1, NULL);
        commit_engine_hooks()->submit(leaving, f.engine);
        fixture_submit(&f, &r2, "job-a", (const char *const[]){ sa }, 1);
        ASSERT_TRUE(!r1.done && !r2.done);
        ASSERT_EQ(queue_requests(&f), 3);

        /* A third repeat of the key: over its own bound. */
        fixture_submit(&f, &r3, "job-a", (const char *const[]){ sa }, 1);
        ASSERT_TRUE(r3.done && r3.status == 503);
        ASSERT_STREQ(answer_error_type(&r3), "queue-full");
        ASSERT_CONTAINS(answer_error_message(&r3), "commit.max-waiters-per-key");
        ASSERT_STREQ(r3.retry_after, "7");
        /* Another key fills the queue; then nobody gets in, repeats neither. */
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        settle(&f);
        ASSERT_TRUE(!b.done);
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        ASSERT_TRUE(c.done && c.status == 503);
        ASSERT_CONTAINS(answer_error_message(&c), "commit.max-queue-requests");
        answer_deinit(&c);
        answer_deinit(&r3);
        fixture_submit(&f, &r3, "job-a", (const char *const[]){ sa }, 1);
        ASSERT_TRUE(r3.done && r3.status == 503);
        ASSERT_CONTAINS(answer_error_message(&r3), "commit.max-queue-requests");

        /* The first repeat's client leaves: it is gone at once, and its slot with it. */
        writer_request_client_gone(leaving);
        ASSERT_EQ(queue_requests(&f), 3);
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        settle(&f);
        ASSERT_TRUE(!c.done);
        fixture_submit(&f, &r4, "job-a", (const char *const[]){ sa }, 1);
        ASSERT_TRUE(r4.done && r4.status == 503);

        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, a.done && r2.done && b.done && c.done);
        ASSERT_TRUE(!r1.done);
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(r2.status, 200);
        ASSERT_EQ(json_i64_at(a.body, "snapshot-id"), json_i64_at(r2.body, "snapshot-id"));
        ASSERT_EQ(b.status, 200);
        ASSERT_EQ(c.status, 200);
        ASSERT_EQ(queue_requests(&f), 0);

        answer_deinit(&a);
        answer_deinit(&r2);
        answer_deinit(&r3);
        answer_deinit(&r4);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

/* ---- in-memory table state, full batches, idle queues -------------------------------------- */

/* Submits one request of `rows` rows under `key` and runs until it is answered; returns its
 * status (the answer is left in *a). */
static int commit_one(Fixture *f, Answer *a, const char *key, int64_t rows) {
        char staged[256];

        fixture_stage(f, key, (const int64_t[]){ rows }, 1, staged);
        fixture_submit(f, a, key, (const char *const[]){ staged }, 1);
        RUN_UNTIL(f, a->done);
        return a->status;
}

/* Records `key` in the summary of the double's newest snapshot: what a commit by another
 * daemon leaves in the table. */
static void fixture_record_key(Fixture *f, const char *key) {
        json_t *snapshots = json_object_get(f->cat->metadata, "snapshots");
        json_t *summary = json_object_get(json_array_get(snapshots, json_array_size(snapshots) - 1),
                                          "summary");

        ASSERT_TRUE(summary);
        ASSERT_OK(json_object_set_new(summary, SNAPSHOT_SUMMARY_KEYS, json_string(key)));
}

TEST(a_commit_builds_on_the_last_commit_response_without_loading) {
        Answer a, b, c;
        Fixture f;

        fixture_init(&f);
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        /* First sight of the table: the intake's load and the attempt's. */
        ASSERT_EQ(f.cat->n_loads, 2);
        ASSERT_EQ(commit_one(&f, &b, "job-b", 4), 200);
        ASSERT_EQ(commit_one(&f, &c, "job-c", 5), 200);
        /* Both later requests were checked and committed on the table as the commit responses
         * left it: no load at all, and each commit asserted the head the one before made. */
        ASSERT_EQ(f.cat->n_loads, 2);
        ASSERT_EQ(f.cat->n_commits, 3);
        ASSERT_EQ(commit_asserted_head(&f, 1), json_i64_at(a.body, "snapshot-id"));
        ASSERT_EQ(commit_asserted_head(&f, 2), json_i64_at(b.body, "snapshot-id"));
        ASSERT_EQ(json_i64_at(b.body, "sequence-number"), 2);
        ASSERT_EQ(json_i64_at(c.body, "sequence-number"), 3);
        ASSERT_EQ(json_i64_at(b.body, "snapshot-first-row-id"), 3);
        ASSERT_EQ(json_i64_at(c.body, "snapshot-first-row-id"), 7);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 12);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

TEST(a_commit_response_without_the_table_means_a_load) {
        Answer a, b;
        Fixture f;

        fixture_init(&f);
        f.cat->omit_commit_body = true;
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        ASSERT_EQ(commit_one(&f, &b, "job-b", 4), 200);
        /* Nothing to adopt: the second request loads at intake and for its attempt. */
        ASSERT_EQ(f.cat->n_loads, 4);
        ASSERT_EQ(json_i64_at(b.body, "snapshot-first-row-id"), 3);
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(another_writers_commit_between_ours_is_a_409_then_a_reload) {
        Answer a, b, c;
        int64_t foreign;
        Fixture f;

        fixture_init(&f);
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        foreign = fixture_advance(&f, 50); /* row ids 3..52, behind our state's back */
        ASSERT_EQ(commit_one(&f, &b, "job-b", 4), 200);
        /* Built on the state first (asserting job-a's head: refused), then on the table
         * loaded after the 409. */
        ASSERT_EQ(f.cat->n_commits, 3);
        ASSERT_EQ(f.cat->n_loads, 3);
        ASSERT_EQ(commit_asserted_head(&f, 1), json_i64_at(a.body, "snapshot-id"));
        ASSERT_EQ(commit_asserted_head(&f, 2), foreign);
        ASSERT_EQ(json_i64_at(b.body, "attempts"), 2);
        ASSERT_EQ(json_i64_at(b.body, "sequence-number"), 3);
        ASSERT_EQ(json_i64_at(b.body, "snapshot-first-row-id"), 53);
        /* The reloaded table is the state again: the next commit needs no load. */
        ASSERT_EQ(commit_one(&f, &c, "job-c", 1), 200);
        ASSERT_EQ(f.cat->n_loads, 3);
        ASSERT_EQ(json_i64_at(c.body, "snapshot-first-row-id"), 57);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

TEST(a_key_another_daemon_committed_is_found_after_the_409) {
        Answer a, x;
        int64_t foreign;
        Fixture f;

        fixture_init(&f);
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        /* Another icecommitd commits job-x; its writer, without an answer, retries here. */
        foreign = fixture_advance(&f, 7);
        fixture_record_key(&f, "job-x");
        ASSERT_EQ(commit_one(&f, &x, "job-x", 7), 200);
        ASSERT_TRUE(x.found_in_history);
        ASSERT_EQ(json_i64_at(x.body, "snapshot-id"), foreign);
        /* Our state did not know it: one attempt was refused by the catalog, then the reload
         * showed the key and nothing more was sent. */
        ASSERT_EQ(f.cat->n_commits, 2);
        ASSERT_EQ(f.cat->n_loads, 3);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), 10);
        answer_deinit(&a);
        answer_deinit(&x);
        fixture_done(&f);
}

TEST(table_state_max_age_0_loads_for_every_attempt) {
        Answer a, b;
        Fixture f;

        fixture_init(&f);
        f.config->commit.table_state_max_age_ms = 0;
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        ASSERT_EQ(commit_one(&f, &b, "job-b", 4), 200);
        ASSERT_EQ(f.cat->n_loads, 4);
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(requests_arriving_while_a_batch_loads_join_it) {
        static const int64_t rows[] = { 2 };
        char sa[256], sb[256], sc[256];
        Answer a, b, c;
        Fixture f;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        fixture_stage(&f, "c", rows, 1, sc);
        f.cat->load_script[1] = STEP_HOLD; /* the batch's load (0 is job-a's intake) */
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        /* b and c are accepted (one after the other: arrival order is queue order) while
         * job-a's batch waits for its table. */
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        settle(&f);
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        settle(&f);
        ASSERT_TRUE(!a.done && !b.done && !c.done);
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, a.done && b.done && c.done);
        /* One snapshot carries all three, in arrival order. */
        ASSERT_EQ(f.cat->n_commits, 1);
        ASSERT_STREQ(commit_keys(&f, 0), "job-a,job-b,job-c");
        ASSERT_EQ(json_i64_at(c.body, "batch-requests"), 3);
        ASSERT_EQ(json_i64_at(json_array_get(json_object_get(c.body, "manifests"), 0),
                              "first-row-id"),
                  4);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

static void on_test_timer(uv_timer_t *t) {
        *(bool *)t->data = true;
}

/* Runs the loop for ms milliseconds of its clock (whatever else keeps it running). */
static void run_for(Fixture *f, uint64_t ms) {
        uv_timer_t timer;
        bool fired = false;

        ASSERT_OK(uv_timer_init(&f->loop, &timer));
        timer.data = &fired;
        ASSERT_OK(uv_timer_start(&timer, on_test_timer, ms, 0));
        RUN_UNTIL(f, fired);
        uv_close((uv_handle_t *)&timer, NULL);
        (void)uv_run(&f->loop, UV_RUN_NOWAIT); /* the close */
}

TEST(linger_ms_lets_a_later_request_join_the_batch) {
        static const int64_t rows[] = { 2 };
        char sa[256], sb[256];
        Answer a, b;
        Fixture f;

        fixture_init(&f);
        f.config->commit.linger_ms = 600000; /* ended by the test: no race with a clock */
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        /* Long enough for job-a's intake and, without lingering, its whole commit. */
        run_for(&f, 1000);
        ASSERT_EQ(f.cat->n_loads, 1); /* the intake's: the batch has not started */
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        run_for(&f, 500);
        ASSERT_TRUE(!a.done && !b.done);
        ASSERT_EQ(f.cat->n_commits, 0);
        /* Lingering ends: both requests go in one snapshot. */
        ASSERT_EQ(commit_engine_flush(f.engine), 1);
        RUN_UNTIL(&f, a.done && b.done);
        ASSERT_EQ(f.cat->n_commits, 1);
        ASSERT_STREQ(commit_keys(&f, 0), "job-a,job-b");
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(an_idle_queue_is_dropped_with_its_table_state) {
        static const int64_t rows[] = { 1 };
        char sa[256], sb[256], sc[256];
        Answer a, b, c;
        Fixture f;

        fixture_init(&f);
        f.config->commit.queue_idle_ms = 300;
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        fixture_stage(&f, "c", rows, 1, sc);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, a.done);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1); /* at once */
        RUN_UNTIL(&f, b.done);
        ASSERT_EQ(f.cat->n_loads, 2); /* the queue (and state) lived between them */
        /* The idle timeout does not keep the loop running; run_for's timer does, past it. */
        run_for(&f, 1500);
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_EQ(c.status, 200);
        /* Dropped: the next request loaded at intake and for its attempt. */
        ASSERT_EQ(f.cat->n_loads, 4);
        ASSERT_EQ(json_i64_at(c.body, "snapshot-first-row-id"), 2);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

TEST(the_next_commit_takes_its_parent_list_from_memory) {
        static const int64_t rows[] = { 3 };
        char sa[256], sb[256], sc[256];
        const char *la, *lb;
        ManifestFile *list;
        Answer a, b, c;
        size_t n;
        Fixture f;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        fixture_stage(&f, "c", rows, 1, sc);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 200);
        /* The list job-a committed is gone from storage: job-b's attempt never reads it. */
        la = json_string_value(json_object_get(commit_snapshot(&f, 0), "manifest-list"));
        ASSERT_OK(unlink(la));
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        RUN_UNTIL(&f, b.done);
        ASSERT_EQ(b.status, 200);
        lb = json_string_value(json_object_get(commit_snapshot(&f, 1), "manifest-list"));
        list = read_list(lb, &n);
        ASSERT_EQ(n, 2);
        ASSERT_STREQ(list[0].path, receipt_location(b.body, 0));
        ASSERT_EQ(list[0].first_row_id, 3);
        ASSERT_STREQ(list[1].path, receipt_location(a.body, 0));
        ASSERT_EQ(list[1].first_row_id, 0);
        ASSERT_EQ(list[1].added_snapshot_id, json_i64_at(a.body, "snapshot-id"));
        list = manifest_list_files_free(list, n);

        /* Nothing kept (commit.manifest-list-cache-max-bytes 0): the parent is read, and a
         * missing one is a failure of the table's files, not a wrong list. */
        f.config->commit.list_cache_max_bytes = 0;
        fixture_submit(&f, &c, "job-c", (const char *const[]){ sc }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_EQ(c.status, 200); /* job-b's list was kept, so this one is still from memory */
        ASSERT_OK(unlink(
                json_string_value(json_object_get(commit_snapshot(&f, 2), "manifest-list"))));
        answer_deinit(&c);
        fixture_stage(&f, "d", rows, 1, sc);
        fixture_submit(&f, &c, "job-d", (const char *const[]){ sc }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_TRUE(c.status >= 500);
        ASSERT_EQ(f.cat->n_commits, 3);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

/* Applies commit i (as sent) now: an attempt whose answer was lost landing late. */
static void double_land_late(CatalogDouble *d, size_t i) {
        _cleanup_(json_decrefp) json_t *applied = NULL;
        Error e = { 0 };

        if (table_update_apply(d->metadata, json_array_get(d->commits, i),
                               1700000000000 + d->version, d->metadata_location, &applied, &e) < 0)
                TEST_FAIL("late landing: %s", e.message);
        json_decref(d->metadata);
        d->metadata = TAKE_PTR(applied);
        (void)snprintf(d->metadata_location, sizeof(d->metadata_location),
                       "/double/v%u.metadata.json", ++d->version);
}

TEST(after_an_attempt_without_a_verdict_nobody_joins_the_batch) {
        static const int64_t rows[] = { 2 };
        char sa[256], sb[256];
        Answer a, b;
        Fixture f;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_stage(&f, "b", rows, 1, sb);
        f.cat->commit_script[0] = STEP_HOLD;
        f.cat->commit_script[1] = STEP_HOLD;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        settle(&f);
        /* job-a's first attempt gets no verdict; its second (job-b waiting meanwhile) is held
         * while the first one lands after all. */
        double_release(f.cat, STEP_UNKNOWN);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        double_land_late(f.cat, 0);
        double_release(f.cat, STEP_UNKNOWN);
        RUN_UNTIL(&f, a.done && b.done);
        /* The second attempt carried job-a alone: job-b riding on it would have needed the
         * snapshot id the first attempt had already used. */
        ASSERT_STREQ(commit_keys(&f, 1), "job-a");
        ASSERT_EQ(a.status, 200);
        ASSERT_TRUE(a.found_in_history);
        ASSERT_EQ(b.status, 200);
        ASSERT_TRUE(json_i64_at(b.body, "snapshot-id") != json_i64_at(a.body, "snapshot-id"));
        ASSERT_EQ(f.cat->n_commits, 3);
        ASSERT_EQ(f.cat->n_rejected, 0);
        ASSERT_STREQ(commit_keys(&f, 2), "job-b");
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(a_retried_key_is_found_in_the_adopted_state_without_a_load) {
        static const int64_t rows[] = { 2 };
        char staged[256];
        Answer a, again;
        Fixture f;

        fixture_init(&f);
        /* Answers are not remembered (the registry is made with the engine): the table is. */
        f.config->commit.receipt_cache_size = 0;
        fixture_renew_engine(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 200);
        fixture_submit(&f, &again, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, again.done);
        ASSERT_EQ(again.status, 200);
        ASSERT_TRUE(again.found_in_history && !a.found_in_history);
        /* Rebuilt from the table (the snapshot's record, list and manifest): the same bytes. */
        {
                _cleanup_(freep) char *first = json_dumps(a.body, JSON_COMPACT);
                _cleanup_(freep) char *second = json_dumps(again.body, JSON_COMPACT);

                ASSERT_TRUE(json_object_get(again.body, "manifests"));
                ASSERT_STREQ(second, first);
        }
        /* Found in the keys of the adopted commit response: no load, no second commit. */
        ASSERT_EQ(f.cat->n_loads, 2);
        ASSERT_EQ(f.cat->n_commits, 1);
        answer_deinit(&a);
        answer_deinit(&again);
        fixture_done(&f);
}

/* What a restart does to the engine: stopped and made anew (no registry, no table state). */
static void fixture_restart(Fixture *f) {
        fixture_stop(f);
        RUN_UNTIL(f, f->is_stopped);
        f->is_stopping = f->is_stopped = false;
        fixture_renew_engine(f);
}

/* Every request of a batch, retried after a restart or asked for with GET /v1/commits/{key},
 * gets the receipt the committing attempt sent: the same bytes, rebuilt from the snapshot's
 * record, its manifest list and the request's manifests. */
TEST(receipts_rebuilt_from_the_table_equal_the_committing_attempts) {
        static const int64_t rows_a[] = { 2, 3 }, rows_b[] = { 4 }, rows_z[] = { 1 };
        char sa1[256], sa2[256], sb[256], sz[256];
        Answer z, a, b, again_a, again_b, get_a;
        WriterRequest *w = NULL;
        Fixture f;

        fixture_init(&f);
        (void)fixture_advance(&f, 10);
        fixture_stage(&f, "a1", rows_a, 2, sa1);
        fixture_stage(&f, "a2", rows_b, 1, sa2);
        fixture_stage(&f, "b", rows_b, 1, sb);
        fixture_stage(&f, "z", rows_z, 1, sz);
        /* z in flight; a (two manifests) and b wait, then go as one batch whose first attempt
         * conflicts: the receipts name the attempt that built the snapshot that landed. */
        f.cat->commit_script[0] = STEP_HOLD;
        f.cat->commit_script[1] = STEP_CONFLICT;
        fixture_submit(&f, &z, "job-z", (const char *const[]){ sz }, 1);
        RUN_UNTIL(&f, double_n_held(f.cat) == 1);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa1, sa2 }, 2);
        settle(&f);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ sb }, 1);
        settle(&f);
        double_release(f.cat, STEP_SUCCESS);
        RUN_UNTIL(&f, z.done && a.done && b.done);
        ASSERT_EQ(a.status, 200);
        ASSERT_EQ(b.status, 200);
        ASSERT_STREQ(commit_keys(&f, 2), "job-a,job-b");
        ASSERT_EQ(json_i64_at(a.body, "attempts"), 2);
        ASSERT_EQ(json_i64_at(a.body, "batch-requests"), 2);
        ASSERT_EQ(json_array_size(json_object_get(a.body, "manifests")), 2);
        ASSERT_EQ(json_array_size(json_object_get(b.body, "manifests")), 1);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_object_get(commit_snapshot(&f, 2), "summary"),
                                             SNAPSHOT_SUMMARY_MANIFESTS)),
                     "2,1");

        fixture_restart(&f);
        fixture_submit(&f, &again_b, "job-b", (const char *const[]){ sb }, 1);
        RUN_UNTIL(&f, again_b.done);
        fixture_submit(&f, &again_a, "job-a", (const char *const[]){ sa1, sa2 }, 2);
        RUN_UNTIL(&f, again_a.done);
        ASSERT_TRUE(again_a.found_in_history && again_b.found_in_history);
        {
                _cleanup_(freep) char *live_a = dumps(a.body), *live_b = dumps(b.body);
                _cleanup_(freep) char *re_a = dumps(again_a.body), *re_b = dumps(again_b.body);

                ASSERT_STREQ(re_a, live_a);
                ASSERT_STREQ(re_b, live_b);
        }

        /* GET /v1/commits/job-a?namespace=db&table=t on a daemon that never saw it. */
        fixture_restart(&f);
        get_a = (Answer){ .loop = &f.loop };
        ASSERT_OK(writer_request_new_take(NULL, &answer_sink, &get_a, &w));
        commit_engine_hooks()->lookup_history(w, "job-a", "db", "t", NULL, f.engine);
        RUN_UNTIL(&f, get_a.done);
        ASSERT_EQ(get_a.status, 200);
        ASSERT_TRUE(get_a.found_in_history);
        {
                _cleanup_(freep) char *live_a = dumps(a.body);
                _cleanup_(freep) char *re_a = dumps(json_object_get(get_a.body, "receipt"));

                ASSERT_STREQ(re_a, live_a);
        }
        ASSERT_EQ(f.cat->n_commits, 3);
        answer_deinit(&z);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&again_a);
        answer_deinit(&again_b);
        answer_deinit(&get_a);
        fixture_done(&f);
}

/* A snapshot without the record's manifest counts (an older icecommitd) still answers a retry
 * as committed, listing no manifests (so the writer deletes nothing); a storage fault while
 * reading the receipt is a retryable 503 and the key stays free of a second commit. */
TEST(a_receipt_that_cannot_be_rebuilt_lists_no_manifests_or_is_retried) {
        static const int64_t rows[] = { 2 };
        char sa[256], list[512], moved[600];
        Answer a, again, gone, third;
        json_t *summary;
        Fixture f;

        fixture_init(&f);
        f.config->commit.receipt_cache_size = 0;
        fixture_renew_engine(&f);
        fixture_stage(&f, "a", rows, 1, sa);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 200);

        /* Something not a list in its place (a fault, not an absence): 503, retry with the same
         * key; then the list gone for good: committed, no manifests listed. */
        (void)snprintf(list, sizeof(list), "%s",
                       json_string_value(json_object_get(commit_snapshot(&f, 0), "manifest-list")));
        (void)snprintf(moved, sizeof(moved), "%s.away", list);
        ASSERT_OK(rename(list, moved));
        ASSERT_OK(mkdir(list, 0755));
        fixture_submit(&f, &again, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, again.done);
        ASSERT_EQ(again.status, 503);
        ASSERT_CONTAINS(answer_error_message(&again), "receipt cannot be read");
        ASSERT_TRUE(again.retry_after[0]);
        ASSERT_OK(rmdir(list));
        fixture_submit(&f, &gone, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, gone.done);
        ASSERT_EQ(gone.status, 200);
        ASSERT_TRUE(gone.found_in_history && !json_object_get(gone.body, "manifests"));
        ASSERT_OK(rename(moved, list));

        /* Recorded by an icecommitd before 0.13: keys only. */
        summary = json_object_get(json_array_get(json_object_get(f.cat->metadata, "snapshots"), 0),
                                  "summary");
        ASSERT_TRUE(summary);
        ASSERT_OK(json_object_del(summary, SNAPSHOT_SUMMARY_MANIFESTS));
        fixture_restart(&f);
        fixture_submit(&f, &third, "job-a", (const char *const[]){ sa }, 1);
        RUN_UNTIL(&f, third.done);
        ASSERT_EQ(third.status, 200);
        ASSERT_TRUE(third.found_in_history);
        ASSERT_TRUE(!json_object_get(third.body, "manifests"));
        /* Not recorded then: null, never a guess. */
        ASSERT_TRUE(json_is_null(json_object_get(third.body, "attempts")));
        ASSERT_EQ(json_i64_at(third.body, "snapshot-id"), json_i64_at(a.body, "snapshot-id"));
        ASSERT_EQ(f.cat->n_commits, 1);
        answer_deinit(&a);
        answer_deinit(&again);
        answer_deinit(&gone);
        answer_deinit(&third);
        fixture_done(&f);
}

TEST(key_index_finds_recorded_keys_and_verifies_them_against_the_table) {
        _cleanup_(table_metadata_freep) TableMetadata *t = NULL, *older = NULL;
        _cleanup_(json_decrefp) json_t *md = NULL, *md_older = NULL;
        KeyIndex ix = { 0 };
        Error e = { 0 };
        json_t *s;

        md = test_json(
                "{\"format-version\": 2, \"table-uuid\": \"9a3a4b7e-0c55-4b7e-9e4d-6a1f1d1e2c3b\","
                " \"location\": \"/t\", \"last-sequence-number\": 3, \"snapshots\": ["
                "{\"snapshot-id\": 1, \"summary\": {\"icecommit.idempotency-keys\": \"a,b\"}},"
                "{\"snapshot-id\": 2, \"summary\": {\"operation\": \"append\"}},"
                "{\"snapshot-id\": 3, \"summary\": {\"icecommit.idempotency-keys\": \"p/c\"}}]}");
        md_older = test_json(
                "{\"format-version\": 2, \"table-uuid\": \"9a3a4b7e-0c55-4b7e-9e4d-6a1f1d1e2c3b\","
                " \"location\": \"/t\", \"last-sequence-number\": 1, \"snapshots\": ["
                "{\"snapshot-id\": 1, \"summary\": {\"icecommit.idempotency-keys\": \"a,b\"}}]}");
        ASSERT_OK(table_metadata_parse(md, &t, &e));
        ASSERT_OK(table_metadata_parse(md_older, &older, &e));
        ASSERT_OK(key_index_rebuild(&ix, t, 0));
        ASSERT_TRUE(ix.is_valid);
        s = key_index_find(&ix, t, "b", 0);
        ASSERT_TRUE(s);
        ASSERT_EQ(json_i64_at(s, "snapshot-id"), 1);
        ASSERT_EQ(json_i64_at(key_index_find(&ix, t, "p/c", 0), "snapshot-id"), 3);
        ASSERT_TRUE(!key_index_find(&ix, t, "c", 0));   /* keys match whole */
        ASSERT_TRUE(!key_index_find(&ix, t, "a,b", 0)); /* never across the separator */
        /* A key the commit of snapshot 4 recorded is found once the table has snapshot 4 ... */
        ASSERT_OK(key_index_add(&ix, "d", 4));
        ASSERT_TRUE(!key_index_find(&ix, t, "d", 0));
        /* ... and an index holding more than the table answers for the table only. */
        ASSERT_TRUE(!key_index_find(&ix, older, "p/c", 0));
        ASSERT_EQ(json_i64_at(key_index_find(&ix, older, "a", 0), "snapshot-id"), 1);
        /* lookback 1: only the newest snapshot's keys. */
        ASSERT_OK(key_index_rebuild(&ix, t, 1));
        ASSERT_TRUE(!key_index_find(&ix, t, "a", 1));
        ASSERT_TRUE(key_index_find(&ix, t, "p/c", 1));
        /* Many keys: the table grows and every one stays findable. */
        for (int i = 0; i < 1000; i++) {
                char key[32];

                (void)snprintf(key, sizeof(key), "k%d", i);
                ASSERT_OK(key_index_add(&ix, key, 3));
        }
        ASSERT_TRUE(ix.n_slots >= 2 * ix.n_used);
        /* Invalid: lookups scan as snapshot_find_key does. */
        key_index_invalidate(&ix);
        ASSERT_EQ(json_i64_at(key_index_find(&ix, t, "a", 0), "snapshot-id"), 1);
        key_index_deinit(&ix);
}

TEST(a_schema_change_behind_the_state_is_a_409_then_a_reload) {
        _cleanup_(json_decrefp) json_t *evolve = NULL, *applied = NULL;
        Answer a, b;
        Error e = { 0 };
        Fixture f;

        fixture_init(&f);
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        /* Another writer adds a column: a new current schema, and no snapshot (no head moves). */
        evolve = test_json(
                "{\"requirements\": [], \"updates\": [{\"action\": \"add-schema\", \"schema\": "
                "{\"type\": \"struct\", \"schema-id\": 1, \"fields\": ["
                "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
                "{\"id\": 2, \"name\": \"note\", \"required\": false, \"type\": \"string\"}]}},"
                "{\"action\": \"set-current-schema\", \"schema-id\": -1}]}");
        if (table_update_apply(f.cat->metadata, evolve, 1700000000000, f.cat->metadata_location,
                               &applied, &e) < 0)
                TEST_FAIL("schema update: %s", e.message);
        json_decref(f.cat->metadata);
        f.cat->metadata = TAKE_PTR(applied);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "current-schema-id"), 1);
        ASSERT_EQ(commit_one(&f, &b, "job-b", 4), 200);
        /* Built on the state (schema 0): refused by its schema assertion, then on the reload. */
        ASSERT_EQ(f.cat->n_commits, 3);
        ASSERT_EQ(json_i64_at(b.body, "attempts"), 2);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 1), "schema-id"), 0);
        ASSERT_EQ(json_i64_at(commit_snapshot(&f, 2), "schema-id"), 1);
        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(a_refusal_of_a_commit_built_on_the_state_is_tried_once_on_a_fresh_load) {
        Answer a, b, c;
        Fixture f;

        fixture_init(&f);
        ASSERT_EQ(commit_one(&f, &a, "job-a", 3), 200);
        /* The catalog refuses the commit built on the state (as after a format upgrade that
         * moved no head): tried again on a fresh load, where it lands. */
        f.cat->commit_script[1] = STEP_REJECTED;
        ASSERT_EQ(commit_one(&f, &b, "job-b", 4), 200);
        ASSERT_EQ(json_i64_at(b.body, "attempts"), 2);
        ASSERT_EQ(f.cat->n_loads, 3);
        /* A refusal of a commit built on a fresh load is final. */
        f.cat->commit_script[3] = STEP_REJECTED;
        f.cat->commit_script[4] = STEP_REJECTED;
        ASSERT_EQ(commit_one(&f, &c, "job-c", 5), 502);
        ASSERT_STREQ(answer_error_type(&c), "catalog-rejected");
        ASSERT_EQ(f.cat->n_commits, 5);
        ASSERT_EQ(f.cat->n_loads, 4);
        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

/* The copies of staged manifests in the table's metadata directory (commit/owned.c). */
static size_t count_copies(const Fixture *f) {
        char path[256];
        struct dirent *d;
        size_t n = 0;
        DIR *dir;

        (void)snprintf(path, sizeof(path), "%s/metadata", f->table_location);
        dir = opendir(path);
        ASSERT_TRUE(dir);
        while ((d = readdir(dir)))
                n += strncmp(d->d_name, "copy-", 5) == 0;
        (void)closedir(dir);
        return n;
}

static Buf read_whole(const char *path) {
        Buf b;
        FILE *fp = fopen(path, "re");
        uint8_t chunk[4096];
        size_t n;

        ASSERT_TRUE(fp);
        buf_init(&b, 1 << 24);
        while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
                ASSERT_OK(buf_append(&b, chunk, n));
        ASSERT_EQ(fclose(fp), 0);
        return b;
}

/* The bytes after an Avro container's header: its blocks, where the entries are. */
static Slice blocks_of(const Buf *file, OcfReader **ret_reader) {
        Error e = { 0 };

        if (ocf_reader_open(buf_slice(file), ret_reader, &e) < 0)
                TEST_FAIL("%s", e.message);
        return slice_make(file->data + ocf_reader_data_offset(*ret_reader),
                          file->len - ocf_reader_data_offset(*ret_reader));
}

TEST(the_table_references_the_copy_written_at_intake_not_the_staged_file) {
        static const int64_t rows[] = { 3, 4 }, other[] = { 9 };
        _cleanup_(buf_deinitp) Buf staged_bytes, copy_bytes;
        _cleanup_(ocf_reader_freep) OcfReader *rs = NULL, *rc = NULL;
        char staged[256], other_staged[256], copy[256];
        const char *list_location;
        ManifestFile *list;
        Slice a, b;
        Answer x, y;
        size_t n;
        Fixture f;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 2, staged);
        staged_bytes = read_whole(staged);
        fixture_submit(&f, &x, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, x.done);
        ASSERT_EQ(x.status, 200);
        (void)snprintf(copy, sizeof(copy), "%s", receipt_location(x.body, 0));
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_array_get(json_object_get(x.body, "manifests"),
                                                            0),
                                             "staged-location")),
                     staged);
        ASSERT_TRUE(strncmp(copy, f.table_location, strlen(f.table_location)) == 0);
        ASSERT_CONTAINS(copy, "/metadata/copy-");
        list_location = json_string_value(json_object_get(commit_snapshot(&f, 0), "manifest-list"));
        list = read_list(list_location, &n);
        ASSERT_EQ(n, 1);
        ASSERT_STREQ(list[0].path, copy);
        list = manifest_list_files_free(list, n);

        /* The copy holds the staged manifest's blocks byte for byte, and names where it was
         * staged in its header. */
        copy_bytes = read_whole(copy);
        a = blocks_of(&staged_bytes, &rs);
        b = blocks_of(&copy_bytes, &rc);
        ASSERT_EQ(a.len, b.len);
        ASSERT_TRUE(memcmp(a.ptr, b.ptr, a.len) == 0);
        ASSERT_TRUE(slice_eq_str(ocf_reader_meta(rc, "icecommit.staged-location"), staged));
        ASSERT_EQ(ocf_reader_n_meta(rc), ocf_reader_n_meta(rs) + 1);

        /* The writer rewrites its staged file after the commit: the table does not change. */
        fixture_stage(&f, "other", other, 1, other_staged);
        ASSERT_OK(rename(other_staged, staged));
        {
                _cleanup_(buf_deinitp) Buf now = read_whole(copy);

                ASSERT_EQ(now.len, copy_bytes.len);
                ASSERT_TRUE(memcmp(now.data, copy_bytes.data, now.len) == 0);
        }

        /* The same staged location under a new key: the table holds its copy already. */
        fixture_submit(&f, &y, "job-a-again", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, y.done);
        ASSERT_EQ(y.status, 422);
        ASSERT_STREQ(answer_error_type(&y), "manifest-already-committed");
        ASSERT_CONTAINS(answer_error_message(&y), staged);
        settle(&f);
        ASSERT_EQ(count_copies(&f), 1); /* the refused request's copy is gone */
        ASSERT_EQ(f.cat->n_commits, 1);

        answer_deinit(&x);
        answer_deinit(&y);
        fixture_done(&f);
}

TEST(a_copy_goes_when_its_request_is_known_not_committed_and_stays_after_no_verdict) {
        static const int64_t rows[] = { 2 };
        char staged[256];
        Answer a, b;
        Fixture f;

        fixture_init(&f);
        fixture_stage(&f, "a", rows, 1, staged);
        /* Every attempt conflicts: 503, nothing committed, the copy deleted. */
        for (size_t i = 0; i < DOUBLE_MAX_CALLS; i++)
                f.cat->commit_script[i] = STEP_CONFLICT;
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 503);
        settle(&f);
        ASSERT_EQ(count_copies(&f), 0);
        ASSERT_TRUE(file_exists(staged)); /* the writer's: never touched */

        /* Every attempt without a verdict: 504, the copy may be the table's and stays. */
        for (size_t i = 0; i < DOUBLE_MAX_CALLS; i++)
                f.cat->commit_script[i] = STEP_UNKNOWN;
        fixture_submit(&f, &b, "job-b", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, b.done);
        ASSERT_EQ(b.status, 504);
        settle(&f);
        ASSERT_EQ(count_copies(&f), 1);

        answer_deinit(&a);
        answer_deinit(&b);
        fixture_done(&f);
}

TEST(copy_staged_manifests_off_commits_the_writers_file_and_no_writer_forges_the_key) {
        static const int64_t rows[] = { 5 };
        _cleanup_(buf_deinitp) Buf plain, forged;
        char staged[256], fake[256];
        ManifestFile *list;
        Answer a, b, c;
        Error e = { 0 };
        size_t n;
        Fixture f;

        fixture_init(&f);
        f.config->commit.copy_staged_manifests = false;
        fixture_stage(&f, "a", rows, 1, staged);
        fixture_submit(&f, &a, "job-a", (const char *const[]){ staged }, 1);
        RUN_UNTIL(&f, a.done);
        ASSERT_EQ(a.status, 200);
        ASSERT_STREQ(receipt_location(a.body, 0), staged);
        ASSERT_TRUE(!json_object_get(json_array_get(json_object_get(a.body, "manifests"), 0),
                                     "staged-location"));
        list = read_list(json_string_value(
                                 json_object_get(commit_snapshot(&f, 0), "manifest-list")),
                         &n);
        ASSERT_STREQ(list[0].path, staged);
        list = manifest_list_files_free(list, n);
        ASSERT_EQ(count_copies(&f), 0);

        /* A writer's manifest saying where "its copy" was staged is refused, copying or not. */
        fixture_stage(&f, "b", rows, 1, fake);
        plain = read_whole(fake);
        buf_init(&forged, 1 << 24);
        ASSERT_OK(manifest_staged_copy(buf_slice(&plain), "/somewhere/else.avro", &forged, &e));
        write_file(fake, forged.data, forged.len);
        fixture_submit(&f, &b, "job-b", (const char *const[]){ fake }, 1);
        RUN_UNTIL(&f, b.done);
        ASSERT_EQ(b.status, 422);
        ASSERT_STREQ(answer_error_type(&b), "invalid-manifest");
        ASSERT_CONTAINS(answer_error_message(&b), "icecommit.staged-location");
        f.config->commit.copy_staged_manifests = true;
        fixture_submit(&f, &c, "job-c", (const char *const[]){ fake }, 1);
        RUN_UNTIL(&f, c.done);
        ASSERT_EQ(c.status, 422);
        ASSERT_STREQ(answer_error_type(&c), "invalid-manifest");
        ASSERT_CONTAINS(answer_error_message(&c), "icecommit.");
        settle(&f);
        ASSERT_EQ(count_copies(&f), 0);
        ASSERT_EQ(f.cat->n_commits, 1);

        answer_deinit(&a);
        answer_deinit(&b);
        answer_deinit(&c);
        fixture_done(&f);
}

/* Every check on, as the daemon runs by default (the other tests switch the data-file sizes and
 * the live-file index off to look at the attempts alone): each data file sized on storage at
 * intake, the branch's live files indexed, the parent's manifests merged
 * (commit.manifest.min-count-to-merge = 2). Appends commit with the lineage the rules give; a
 * data file of the wrong size and one already live are refused; neither commits anything. */
TEST(every_check_on_appends_merge_and_refuse_what_they_must) {
        static const int64_t rows[][1] = { { 3 }, { 2 }, { 4 }, { 1 } };
        static const char *const names[] = { "a", "b", "c", "d" };
        char staged[4][256], again[256], shrunk[256], data[512];
        int64_t first_row_id, next_row_id, total = 0;
        const char *list_path;
        ManifestFile *list;
        Answer a[4], x, y;
        size_t n = 0;
        Fixture f;

        fixture_init(&f);
        f.config->commit.verify_data_files = true;
        f.config->commit.check_parquet_footers = false; /* zeros, not Parquet: sizes only */
        f.config->commit.live_file_index = true;
        ASSERT_OK(json_object_set_new(json_object_get(f.cat->metadata, "properties"),
                                      "commit.manifest.min-count-to-merge", json_string("2")));

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                int64_t assigned = 0, rows_in_list = 0;
                char key[16];

                first_row_id = json_i64_at(f.cat->metadata, "next-row-id");
                fixture_stage(&f, names[i], rows[i], 1, staged[i]);
                (void)snprintf(key, sizeof(key), "job-%s", names[i]);
                fixture_submit(&f, &a[i], key, (const char *const[]){ staged[i] }, 1);
                RUN_UNTIL(&f, a[i].done);
                ASSERT_EQ(a[i].status, 200);
                /* The rules: the snapshot's first-row-id is the table's next-row-id; each
                 * manifest the commit wrote (its copy, a merged one) gets the next range, of its
                 * added and existing rows; next-row-id advances by them all. */
                ASSERT_EQ(json_i64_at(a[i].body, "snapshot-first-row-id"), first_row_id);
                list_path =
                        json_string_value(json_object_get(commit_snapshot(&f, i), "manifest-list"));
                list = read_list(list_path, &n);
                for (size_t k = 0; k < n; k++) {
                        ASSERT_TRUE(list[k].has_first_row_id);
                        rows_in_list += list[k].added_rows_count + list[k].existing_rows_count;
                        if (list[k].first_row_id >= first_row_id) {
                                ASSERT_EQ(list[k].first_row_id, first_row_id + assigned);
                                assigned += list[k].added_rows_count + list[k].existing_rows_count;
                        }
                }
                /* Merged from the third commit on: two manifests, every row in them once. */
                ASSERT_EQ(n, i < 2 ? i + 1 : 2);
                total += rows[i][0];
                ASSERT_EQ(rows_in_list, total);
                ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), first_row_id + assigned);
                list = manifest_list_files_free(list, n);
        }
        ASSERT_TRUE(metrics_get(f.metrics, METRIC_MANIFESTS_MERGED, NULL) > 0);
        next_row_id = json_i64_at(f.cat->metadata, "next-row-id");

        /* a's data file, merged into an EXISTING entry by now, named again: refused. */
        fixture_stage_files(&f, "again", "a", rows[0], 1, again);
        fixture_submit(&f, &x, "job-again", (const char *const[]){ again }, 1);
        RUN_UNTIL(&f, x.done);
        ASSERT_EQ(x.status, 422);
        ASSERT_STREQ(answer_error_type(&x), "data-file-already-committed");
        ASSERT_EQ(metrics_get(f.metrics, METRIC_LIVE_FILE_REFUSALS, NULL), 1);

        /* A data file shorter than its manifest says: refused at intake, nothing read further. */
        fixture_stage(&f, "shrunk", rows[0], 1, shrunk);
        (void)snprintf(data, sizeof(data), "%s/data/shrunk-0.parquet", f.table_location);
        ASSERT_OK(truncate(data, 10));
        fixture_submit(&f, &y, "job-shrunk", (const char *const[]){ shrunk }, 1);
        RUN_UNTIL(&f, y.done);
        ASSERT_EQ(y.status, 422);
        ASSERT_STREQ(answer_error_type(&y), "invalid-manifest");
        ASSERT_CONTAINS(answer_error_message(&y), "has 10 bytes, the manifest says 1000");

        ASSERT_EQ(f.cat->n_commits, 4);
        ASSERT_EQ(json_i64_at(f.cat->metadata, "next-row-id"), next_row_id);
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                answer_deinit(&a[i]);
        answer_deinit(&x);
        answer_deinit(&y);
        fixture_done(&f);
}
