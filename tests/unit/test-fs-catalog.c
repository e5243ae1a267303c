/* SPDX-License-Identifier: Apache-2.0 */
/* catalog/filesystem.c on a temporary warehouse with a real loop: create, load, commit with
 * the no-replace rename (CONFLICT for the loser), a lagging version hint, names, close. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "catalog/filesystem.h"
#include "storage/local.h"
#include "storage/storage.h"
#include "util/buf.h"
#include "test.h"

typedef struct Outcome {
        bool done;
        unsigned calls;
        int status;
        char message[1024];
        json_t *body; /* owned copy */
} Outcome;

static void outcome_reset(Outcome *o) {
        json_decref(o->body);
        *o = (Outcome){ 0 };
}

static void on_result(const CatalogResult *result, void *userdata) {
        Outcome *o = userdata;

        o->calls++;
        o->done = true;
        o->status = result->status;
        snprintf(o->message, sizeof(o->message), "%s", result->message);
        json_decref(o->body);
        o->body = result->body ? json_deep_copy(result->body) : NULL;
}

typedef struct Fixture {
        uv_loop_t loop;
        char dir[64];
        char warehouse[128];
        CatalogConfig config;
        FsCatalog *catalog;
} Fixture;

static void wait_for(Fixture *f, Outcome *o) {
        while (!o->done)
                ASSERT_TRUE(uv_run(&f->loop, UV_RUN_ONCE) != 0 || o->done);
}

static void on_closed(void *userdata) {
        (*(unsigned *)userdata)++;
}

static void fixture_init(Fixture *f) {
        Outcome o = { 0 };

        *f = (Fixture){ 0 };
        snprintf(f->dir, sizeof(f->dir), "/tmp/icecommit-test-fs-XXXXXX");
        ASSERT_TRUE(mkdtemp(f->dir));
        /* A file:// URI and a directory that does not exist yet: start creates it. */
        snprintf(f->warehouse, sizeof(f->warehouse), "file://%s/wh", f->dir);
        f->config.warehouse = f->warehouse;
        f->config.max_response_bytes = 1 << 20;
        f->config.cache_tables = 64;
        ASSERT_OK(uv_loop_init(&f->loop));
        ASSERT_OK(filesystem_catalog_new(&f->loop, &f->config, &f->catalog));
        ASSERT_TRUE(!filesystem_catalog_backend.is_ready(f->catalog));
        ASSERT_OK(filesystem_catalog_backend.start(f->catalog, on_result, &o));
        ASSERT_TRUE(!o.done); /* never from inside the call */
        wait_for(f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_TRUE(filesystem_catalog_backend.is_ready(f->catalog));
        outcome_reset(&o);
}

static void fixture_done(Fixture *f) {
        unsigned closed = 0;
        char cmd[256];

        filesystem_catalog_backend.close(f->catalog, on_closed, &closed);
        ASSERT_EQ(closed, 0);
        (void)uv_run(&f->loop, UV_RUN_DEFAULT);
        ASSERT_EQ(closed, 1);
        f->catalog = filesystem_catalog_free(f->catalog);
        ASSERT_EQ(uv_loop_close(&f->loop), 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        ASSERT_EQ(system(cmd), 0);
}

static const char *const NS[] = { "db" };

static const char *CREATE =
        "{\"schema\": {\"type\": \"struct\", \"schema-id\": 0, \"fields\": ["
        "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}]},"
        " \"properties\": {\"format-version\": \"3\"}}";

static void create_db_and_table(Fixture *f) {
        _cleanup_(json_decrefp) json_t *req = test_json(CREATE);
        Outcome o = { 0 };

        ASSERT_OK(filesystem_catalog_backend.create_namespace(f->catalog, NS, 1,
                                                              /* properties= */ NULL, on_result,
                                                              &o));
        wait_for(f, &o);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        ASSERT_OK(filesystem_catalog_backend.create_table(f->catalog, NS, 1, "t", req, on_result,
                                                          &o));
        wait_for(f, &o);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
}

static char *file_text(Fixture *f, const char *relative) {
        char path[256];
        Buf b;

        snprintf(path, sizeof(path), "%s/wh/%s", f->dir, relative);
        buf_init(&b, 1 << 20);
        if (storage_local_read_file(path, 1 << 20, &b, NULL) < 0) {
                buf_deinit(&b);
                return NULL;
        }
        return (char *)buf_steal(&b, NULL);
}

static bool exists(Fixture *f, const char *relative) {
        char path[256];

        snprintf(path, sizeof(path), "%s/wh/%s", f->dir, relative);
        return access(path, F_OK) == 0;
}

static int unlink_relative(Fixture *f, const char *relative) {
        char path[256];

        snprintf(path, sizeof(path), "%s/wh/%s", f->dir, relative);
        return unlink(path);
}

static void write_text(Fixture *f, const char *relative, const char *text) {
        char path[256];
        FILE *file;

        snprintf(path, sizeof(path), "%s/wh/%s", f->dir, relative);
        file = fopen(path, "we");
        ASSERT_TRUE(file);
        fputs(text, file);
        ASSERT_EQ(fclose(file), 0);
}

/* An append request built on `base` (a LoadTableResult body). */
static json_t *append_request(const json_t *base, int64_t snapshot_id, int64_t added_rows) {
        const json_t *md = json_object_get(base, "metadata");
        json_t *main_ref = json_object_get(json_object_get(md, "refs"), "main");

        return json_pack("{s:[{s:s, s:s}, {s:s, s:s, s:O}], s:[{s:s, s:{s:I, s:I, s:I, s:s, s:I, "
                         "s:I, s:{s:s}}},"
                         " {s:s, s:s, s:s, s:I}]}",
                         "requirements", "type", "assert-table-uuid", "uuid",
                         json_string_value(json_object_get(md, "table-uuid")), "type",
                         "assert-ref-snapshot-id", "ref", "main", "snapshot-id",
                         main_ref ? json_object_get(main_ref, "snapshot-id") : json_null(),
                         "updates", "action", "add-snapshot", "snapshot", "snapshot-id",
                         (json_int_t)snapshot_id, "sequence-number",
                         json_integer_value(json_object_get(md, "last-sequence-number")) + 1,
                         "timestamp-ms", (json_int_t)1700000000000, "manifest-list",
                         "/nowhere/list.avro", "first-row-id",
                         json_integer_value(json_object_get(md, "next-row-id")), "added-rows",
                         (json_int_t)added_rows, "summary", "operation", "append", "action",
                         "set-snapshot-ref", "ref-name", "main", "type", "branch", "snapshot-id",
                         (json_int_t)snapshot_id);
}

static json_t *load(Fixture *f, const char *table, int expected_status) {
        Outcome o = { 0 };
        json_t *body;

        ASSERT_OK(filesystem_catalog_backend.load_table(f->catalog, NS, 1, table, on_result, &o));
        wait_for(f, &o);
        ASSERT_EQ(o.status, expected_status);
        body = TAKE_PTR(o.body);
        outcome_reset(&o);
        return body;
}

TEST(create_load_commit) {
        _cleanup_(json_decrefp) json_t *v1 = NULL, *v2 = NULL, *req = NULL;
        _cleanup_(freep) char *hint = NULL;
        Fixture f;
        Outcome o = { 0 };
        char expected[256];
        const json_t *md;

        fixture_init(&f);
        create_db_and_table(&f);
        ASSERT_TRUE(exists(&f, "db/t/metadata/v1.metadata.json"));
        hint = file_text(&f, "db/t/metadata/version-hint.text");
        ASSERT_STREQ(hint, "1");

        v1 = load(&f, "t", 0);
        snprintf(expected, sizeof(expected), "%s/wh/db/t/metadata/v1.metadata.json", f.dir);
        ASSERT_STREQ(json_string_value(json_object_get(v1, "metadata-location")), expected);
        md = json_object_get(v1, "metadata");
        snprintf(expected, sizeof(expected), "%s/wh/db/t", f.dir);
        ASSERT_STREQ(json_string_value(json_object_get(md, "location")), expected);
        ASSERT_EQ(json_integer_value(json_object_get(md, "format-version")), 3);
        ASSERT_EQ(json_integer_value(json_object_get(md, "next-row-id")), 0);

        req = append_request(v1, 11, 25);
        ASSERT_TRUE(req);
        ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", req, "key-ignored",
                                                          on_result, &o));
        ASSERT_TRUE(!o.done);
        wait_for(&f, &o);
        ASSERT_EQ(o.status, 0);
        ASSERT_EQ(o.calls, 1);
        snprintf(expected, sizeof(expected), "%s/wh/db/t/metadata/v2.metadata.json", f.dir);
        ASSERT_STREQ(json_string_value(json_object_get(o.body, "metadata-location")), expected);
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(o.body, "metadata"), "next-row-id")),
                  25);
        outcome_reset(&o);

        free(hint);
        hint = file_text(&f, "db/t/metadata/version-hint.text");
        ASSERT_STREQ(hint, "2");
        v2 = load(&f, "t", 0);
        md = json_object_get(v2, "metadata");
        ASSERT_EQ(json_integer_value(json_object_get(md, "next-row-id")), 25);
        ASSERT_EQ(json_integer_value(json_object_get(md, "last-sequence-number")), 1);
        ASSERT_EQ(json_integer_value(json_object_get(md, "current-snapshot-id")), 11);
        snprintf(expected, sizeof(expected), "%s/wh/db/t/metadata/v1.metadata.json", f.dir);
        ASSERT_STREQ(json_string_value(
                             json_object_get(json_array_get(json_object_get(md, "metadata-log"), 0),
                                             "metadata-file")),
                     expected);

        /* No temporary files are left behind. */
        {
                char cmd[256];

                snprintf(cmd, sizeof(cmd), "test $(ls -A '%s/wh/db/t/metadata' | wc -l) -eq 3",
                         f.dir);
                ASSERT_EQ(system(cmd), 0);
        }
        fixture_done(&f);
}

TEST(concurrent_commits_on_one_base_conflict) {
        _cleanup_(json_decrefp) json_t *v1 = NULL, *a = NULL, *b = NULL;
        Fixture f;
        Outcome oa = { 0 }, ob = { 0 };

        fixture_init(&f);
        create_db_and_table(&f);
        v1 = load(&f, "t", 0);
        a = append_request(v1, 21, 10);
        b = append_request(v1, 22, 7);
        ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", a, NULL, on_result,
                                                          &oa));
        wait_for(&f, &oa);
        ASSERT_EQ(oa.status, 0);
        ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", b, NULL, on_result,
                                                          &ob));
        wait_for(&f, &ob);
        ASSERT_EQ(ob.status, CATALOG_E_CONFLICT);
        ASSERT_CONTAINS(ob.message, "Requirement failed: branch main was created concurrently");
        ASSERT_TRUE(!exists(&f, "db/t/metadata/v3.metadata.json"));
        outcome_reset(&oa);
        outcome_reset(&ob);

        /* Both on the thread pool at once: exactly one wins the rename of v3. */
        {
                _cleanup_(json_decrefp) json_t *v2 = load(&f, "t", 0), *c = NULL, *d = NULL;

                c = append_request(v2, 31, 1);
                d = append_request(v2, 32, 2);
                ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", c, NULL,
                                                                  on_result, &oa));
                ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", d, NULL,
                                                                  on_result, &ob));
                wait_for(&f, &oa);
                wait_for(&f, &ob);
                ASSERT_TRUE((oa.status == 0 && ob.status == CATALOG_E_CONFLICT) ||
                            (oa.status == CATALOG_E_CONFLICT && ob.status == 0));
                ASSERT_TRUE(exists(&f, "db/t/metadata/v3.metadata.json"));
                ASSERT_TRUE(!exists(&f, "db/t/metadata/v4.metadata.json"));
                outcome_reset(&oa);
                outcome_reset(&ob);
        }
        fixture_done(&f);
}

TEST(lagging_or_missing_hint) {
        _cleanup_(json_decrefp) json_t *v1 = NULL, *req = NULL, *again = NULL, *scanned = NULL;
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        create_db_and_table(&f);
        v1 = load(&f, "t", 0);
        req = append_request(v1, 41, 3);
        ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", req, NULL,
                                                          on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);

        write_text(&f, "db/t/metadata/version-hint.text", "1\n");
        again = load(&f, "t", 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(again, "metadata-location")),
                        "/v2.metadata.json");
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(again, "metadata"), "next-row-id")),
                  3);

        /* Without a hint (or with garbage in it) the directory is listed. */
        write_text(&f, "db/t/metadata/version-hint.text", "two");
        scanned = load(&f, "t", 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(scanned, "metadata-location")),
                        "/v2.metadata.json");
        ASSERT_EQ(unlink_relative(&f, "db/t/metadata/version-hint.text"), 0);
        json_decref(scanned);
        scanned = load(&f, "t", 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(scanned, "metadata-location")),
                        "/v2.metadata.json");

        /* A commit on a lagging hint still builds on v2 and lands as v3. */
        {
                _cleanup_(json_decrefp) json_t *next = append_request(scanned, 42, 4);

                write_text(&f, "db/t/metadata/version-hint.text", "1");
                ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", next, NULL,
                                                                  on_result, &o));
                wait_for(&f, &o);
                ASSERT_EQ(o.status, 0);
                ASSERT_CONTAINS(json_string_value(json_object_get(o.body, "metadata-location")),
                                "/v3.metadata.json");
                ASSERT_EQ(json_integer_value(json_object_get(json_object_get(o.body, "metadata"),
                                                             "next-row-id")),
                          7);
                outcome_reset(&o);
        }

        /* Unreadable metadata is -EBADMSG with the file named. */
        write_text(&f, "db/t/metadata/v4.metadata.json", "{not json");
        {
                Outcome bad = { 0 };

                ASSERT_OK(filesystem_catalog_backend.load_table(f.catalog, NS, 1, "t", on_result,
                                                                &bad));
                wait_for(&f, &bad);
                ASSERT_EQ(bad.status, -EBADMSG);
                ASSERT_CONTAINS(bad.message, "v4.metadata.json' is not table metadata");
                outcome_reset(&bad);
        }
        fixture_done(&f);
}

TEST(not_found_conflicts_and_rejections) {
        _cleanup_(json_decrefp) json_t *create = test_json(CREATE), *missing = NULL;
        _cleanup_(json_decrefp) json_t *bad_update =
                test_json("{\"updates\": [{\"action\": \"set-location\"}]}");
        _cleanup_(json_decrefp) json_t *elsewhere =
                test_json("{\"location\": \"/elsewhere\", \"schema\": "
                          "{\"type\": \"struct\", \"fields\": []}}");
        static const char *const NOPE[] = { "nope" };
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        missing = load(&f, "t", CATALOG_E_NOT_FOUND);
        ASSERT_TRUE(missing == NULL);

        ASSERT_OK(filesystem_catalog_backend.load_table(f.catalog, NS, 1, "t", on_result, &o));
        wait_for(&f, &o);
        ASSERT_STREQ(o.message, "Table does not exist: db.t");
        outcome_reset(&o);

        ASSERT_OK(filesystem_catalog_backend.create_table(f.catalog, NOPE, 1, "t", create,
                                                          on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_NOT_FOUND);
        ASSERT_STREQ(o.message, "Namespace does not exist: nope");
        outcome_reset(&o);

        create_db_and_table(&f);
        ASSERT_OK(
                filesystem_catalog_backend.create_namespace(f.catalog, NS, 1, NULL, on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_STREQ(o.message, "Namespace already exists: db");
        outcome_reset(&o);
        ASSERT_OK(filesystem_catalog_backend.create_table(f.catalog, NS, 1, "t", create, on_result,
                                                          &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_STREQ(o.message, "Table already exists: db.t");
        outcome_reset(&o);
        ASSERT_OK(filesystem_catalog_backend.create_table(f.catalog, NS, 1, "u", elsewhere,
                                                          on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_REJECTED);
        ASSERT_CONTAINS(o.message, "Cannot set a custom location for a path-based table");
        ASSERT_TRUE(!exists(&f, "db/u"));
        outcome_reset(&o);

        ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "t", bad_update, NULL,
                                                          on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_REJECTED);
        ASSERT_STREQ(o.message, "set-location: no location");
        ASSERT_TRUE(!exists(&f, "db/t/metadata/v2.metadata.json"));
        outcome_reset(&o);

        ASSERT_OK(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, "missing", bad_update,
                                                          NULL, on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, CATALOG_E_NOT_FOUND);
        outcome_reset(&o);

        /* Nested namespaces are nested directories. */
        {
                static const char *const NESTED[] = { "a", "b", "c" };

                ASSERT_OK(filesystem_catalog_backend.create_namespace(f.catalog, NESTED, 3, NULL,
                                                                      on_result, &o));
                wait_for(&f, &o);
                ASSERT_EQ(o.status, 0);
                ASSERT_TRUE(exists(&f, "a/b/c"));
                outcome_reset(&o);
        }
        fixture_done(&f);
}

TEST(bad_names_fail_at_call_time) {
        static const char *const bad[] = { "", ".", "..", "a/b" };
        _cleanup_(json_decrefp) json_t *req = test_json(CREATE);
        Fixture f;
        Outcome o = { 0 };

        fixture_init(&f);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                const char *ns[] = { bad[i] };

                ASSERT_EQ(filesystem_catalog_backend.load_table(f.catalog, NS, 1, bad[i], on_result,
                                                                &o),
                          -EINVAL);
                ASSERT_EQ(filesystem_catalog_backend.load_table(f.catalog, ns, 1, "t", on_result,
                                                                &o),
                          -EINVAL);
                ASSERT_EQ(filesystem_catalog_backend.create_namespace(f.catalog, ns, 1, NULL,
                                                                      on_result, &o),
                          -EINVAL);
                ASSERT_EQ(filesystem_catalog_backend.create_table(f.catalog, NS, 1, bad[i], req,
                                                                  on_result, &o),
                          -EINVAL);
                ASSERT_EQ(filesystem_catalog_backend.commit_table(f.catalog, NS, 1, bad[i], req,
                                                                  NULL, on_result, &o),
                          -EINVAL);
        }
        ASSERT_EQ(filesystem_catalog_backend.load_table(f.catalog, NS, 0, "t", on_result, &o),
                  -EINVAL);
        ASSERT_EQ(filesystem_catalog_backend.create_namespace(f.catalog, NS, 0, NULL, on_result,
                                                              &o),
                  -EINVAL);
        (void)uv_run(&f.loop, UV_RUN_NOWAIT);
        ASSERT_EQ(o.calls, 0);
        fixture_done(&f);
}

TEST(close_waits_for_work_in_flight) {
        _cleanup_(json_decrefp) json_t *req = test_json(CREATE);
        Fixture f;
        Outcome o[4] = { 0 };
        unsigned closed = 0;

        fixture_init(&f);
        ASSERT_OK(filesystem_catalog_backend.create_namespace(f.catalog, NS, 1, NULL, on_result,
                                                              &o[0]));
        ASSERT_OK(filesystem_catalog_backend.create_table(f.catalog, NS, 1, "t", req, on_result,
                                                          &o[1]));
        ASSERT_OK(filesystem_catalog_backend.load_table(f.catalog, NS, 1, "t", on_result, &o[2]));
        filesystem_catalog_backend.close(f.catalog, on_closed, &closed);
        ASSERT_EQ(filesystem_catalog_backend.load_table(f.catalog, NS, 1, "t", on_result, &o[3]),
                  -ESHUTDOWN);
        ASSERT_EQ(closed, 0);
        (void)uv_run(&f.loop, UV_RUN_DEFAULT);
        ASSERT_EQ(closed, 1);
        for (size_t i = 0; i < 3; i++)
                ASSERT_EQ(o[i].calls, 1);
        ASSERT_EQ(o[0].status, 0);
        ASSERT_EQ(o[3].calls, 0);
        for (size_t i = 0; i < 4; i++)
                outcome_reset(&o[i]);
        /* Closing again is harmless; done is not called twice. */
        filesystem_catalog_backend.close(f.catalog, on_closed, &closed);
        (void)uv_run(&f.loop, UV_RUN_DEFAULT);
        ASSERT_EQ(closed, 1);
        f.catalog = filesystem_catalog_free(f.catalog);
        ASSERT_EQ(uv_loop_close(&f.loop), 0);
        {
                char cmd[256];

                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f.dir);
                ASSERT_EQ(system(cmd), 0);
        }
}

TEST(new_refuses_non_local_warehouses) {
        CatalogConfig config = { .warehouse = (char *)"s3://bucket/wh" };
        FsCatalog *c = NULL;
        uv_loop_t loop;

        ASSERT_OK(uv_loop_init(&loop));
        ASSERT_EQ(filesystem_catalog_new(&loop, &config, &c), -EINVAL);
        config.warehouse = (char *)"relative/wh";
        ASSERT_EQ(filesystem_catalog_new(&loop, &config, &c), -EINVAL);
        config.warehouse = (char *)"";
        ASSERT_EQ(filesystem_catalog_new(&loop, &config, &c), -EINVAL);
        ASSERT_TRUE(c == NULL);
        /* No warehouse set: the default one (not created until start). */
        config.warehouse = NULL;
        ASSERT_OK(filesystem_catalog_new(&loop, &config, &c));
        ASSERT_TRUE(c != NULL);
        c = filesystem_catalog_free(c);
        ASSERT_EQ(uv_loop_close(&loop), 0);
}

static Outcome commit_wait(Fixture *f, FsCatalog *catalog, const json_t *req) {
        Outcome o = { 0 };

        ASSERT_OK(filesystem_catalog_backend.commit_table(catalog, NS, 1, "t", req, NULL, on_result,
                                                          &o));
        wait_for(f, &o);
        return o;
}

/* A second catalog on the same warehouse: another icecommitd, or Java's HadoopTables. */
static FsCatalog *other_catalog(Fixture *f) {
        FsCatalog *other = NULL;
        Outcome o = { 0 };

        ASSERT_OK(filesystem_catalog_new(&f->loop, &f->config, &other));
        ASSERT_OK(filesystem_catalog_backend.start(other, on_result, &o));
        wait_for(f, &o);
        ASSERT_EQ(o.status, 0);
        return other;
}

static void other_catalog_free(Fixture *f, FsCatalog *other) {
        filesystem_catalog_backend.close(other, NULL, NULL);
        (void)uv_run(&f->loop, UV_RUN_DEFAULT);
        filesystem_catalog_free(other);
}

static unsigned count_versions(Fixture *f) {
        unsigned n = 0;
        char name[64];

        for (int v = 1; v < 100; v++) {
                snprintf(name, sizeof(name), "db/t/metadata/v%d.metadata.json", v);
                n += exists(f, name);
        }
        return n;
}

/* The cache never hides another writer's version: a commit built on the cached v2 after
 * someone else wrote v3 loses (its requirement on main fails against v3, as without a cache),
 * one that does not care about main lands on top of v3, and loads see v3 at once. */
TEST(cache_sees_versions_written_behind_its_back) {
        _cleanup_(json_decrefp) json_t *v1 = NULL, *v2 = NULL, *v3 = NULL, *theirs = NULL,
                                       *stale = NULL, *props = NULL;
        FsCatalog *other;
        Fixture f;
        Outcome o;

        fixture_init(&f);
        create_db_and_table(&f);
        v1 = load(&f, "t", 0);
        stale = append_request(v1, 51, 5);
        o = commit_wait(&f, f.catalog, stale);
        ASSERT_EQ(o.status, 0);
        v2 = TAKE_PTR(o.body);
        outcome_reset(&o);

        other = other_catalog(&f);
        theirs = append_request(v2, 52, 6);
        o = commit_wait(&f, other, theirs);
        ASSERT_EQ(o.status, 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(o.body, "metadata-location")),
                        "/v3.metadata.json");
        outcome_reset(&o);

        /* Built on v2, which this catalog has cached: main moved on. */
        json_decref(stale);
        stale = append_request(v2, 53, 7);
        o = commit_wait(&f, f.catalog, stale);
        ASSERT_EQ(o.status, CATALOG_E_CONFLICT);
        ASSERT_CONTAINS(o.message, "has changed");
        ASSERT_TRUE(!exists(&f, "db/t/metadata/v4.metadata.json"));
        outcome_reset(&o);

        v3 = load(&f, "t", 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(v3, "metadata-location")),
                        "/v3.metadata.json");
        ASSERT_EQ(json_integer_value(
                          json_object_get(json_object_get(v3, "metadata"), "current-snapshot-id")),
                  52);

        /* Other side round: they write v4, this catalog's cached v3 is stale again; a request
         * without requirements on main is applied to v4 and lands as v5, keeping their
         * snapshot. */
        json_decref(theirs);
        theirs = append_request(v3, 54, 1);
        o = commit_wait(&f, other, theirs);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        props = test_json(
                "{\"updates\": [{\"action\": \"set-properties\", \"updates\": {\"k\": \"v\"}}]}");
        o = commit_wait(&f, f.catalog, props);
        ASSERT_EQ(o.status, 0);
        ASSERT_CONTAINS(json_string_value(json_object_get(o.body, "metadata-location")),
                        "/v5.metadata.json");
        ASSERT_EQ(json_integer_value(json_object_get(json_object_get(o.body, "metadata"),
                                                     "current-snapshot-id")),
                  54);
        outcome_reset(&o);
        other_catalog_free(&f, other);
        fixture_done(&f);
}

/* A table dropped and created again under the same name has other files of the same names:
 * the cache notices (the file is not the one it read) instead of serving the old table. */
TEST(cache_notices_a_table_created_again) {
        _cleanup_(json_decrefp) json_t *v1 = NULL, *again = NULL, *create = test_json(CREATE);
        FsCatalog *other;
        Fixture f;
        Outcome o = { 0 };
        char cmd[256];

        fixture_init(&f);
        create_db_and_table(&f);
        v1 = load(&f, "t", 0);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s/wh/db/t'", f.dir);
        ASSERT_EQ(system(cmd), 0);
        other = other_catalog(&f);
        ASSERT_OK(
                filesystem_catalog_backend.create_table(other, NS, 1, "t", create, on_result, &o));
        wait_for(&f, &o);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        again = load(&f, "t", 0);
        ASSERT_TRUE(!json_equal(json_object_get(json_object_get(v1, "metadata"), "table-uuid"),
                                json_object_get(json_object_get(again, "metadata"), "table-uuid")));
        other_catalog_free(&f, other);
        fixture_done(&f);
}

/* Metadata files are compact JSON, as Java's TableMetadataParser writes them. */
TEST(metadata_is_written_compact) {
        _cleanup_(json_decrefp) json_t *v1 = NULL, *req = NULL, *parsed = NULL;
        _cleanup_(freep) char *text = NULL, *expected = NULL;
        Fixture f;
        Outcome o;

        fixture_init(&f);
        create_db_and_table(&f);
        v1 = load(&f, "t", 0);
        req = append_request(v1, 61, 2);
        o = commit_wait(&f, f.catalog, req);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        for (int v = 1; v <= 2; v++) {
                char name[64];

                snprintf(name, sizeof(name), "db/t/metadata/v%d.metadata.json", v);
                free(text);
                text = file_text(&f, name);
                ASSERT_TRUE(text);
                ASSERT_TRUE(!strchr(text, '\n'));
                json_decref(parsed);
                parsed = test_json(text);
                free(expected);
                expected = json_dumps(parsed, JSON_COMPACT);
                ASSERT_STREQ(text, expected);
        }
        fixture_done(&f);
}

/* write.metadata.delete-after-commit.enabled with previous-versions-max 2: after each commit
 * only the current file and the 2 in its metadata-log are left; disabled, nothing goes. */
TEST(previous_metadata_files_deleted_after_commit_when_enabled) {
        _cleanup_(json_decrefp) json_t *on =
                test_json("{\"updates\": [{\"action\": \"set-properties\", \"updates\": {"
                          "\"write.metadata.previous-versions-max\": \"2\","
                          " \"write.metadata.delete-after-commit.enabled\": \"true\"}}]}");
        _cleanup_(json_decrefp) json_t *off =
                test_json("{\"updates\": [{\"action\": \"set-properties\", \"updates\": {"
                          "\"write.metadata.delete-after-commit.enabled\": \"false\"}}]}");
        _cleanup_(json_decrefp) json_t *current = NULL;
        Fixture f;
        Outcome o;

        fixture_init(&f);
        create_db_and_table(&f);
        /* Disabled (the default): every version stays. */
        for (int i = 0; i < 3; i++) {
                _cleanup_(json_decrefp) json_t *base = load(&f, "t", 0),
                                               *req = append_request(base, 70 + i, 1);

                o = commit_wait(&f, f.catalog, req);
                ASSERT_EQ(o.status, 0);
                outcome_reset(&o);
        }
        ASSERT_EQ(count_versions(&f), 4);

        o = commit_wait(&f, f.catalog, on); /* v5: the log keeps v3, v4 */
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        ASSERT_EQ(count_versions(&f), 3);
        ASSERT_TRUE(!exists(&f, "db/t/metadata/v1.metadata.json"));
        ASSERT_TRUE(!exists(&f, "db/t/metadata/v2.metadata.json"));
        for (int i = 0; i < 3; i++) {
                _cleanup_(json_decrefp) json_t *base = load(&f, "t", 0),
                                               *req = append_request(base, 80 + i, 1);

                o = commit_wait(&f, f.catalog, req);
                ASSERT_EQ(o.status, 0);
                outcome_reset(&o);
                ASSERT_EQ(count_versions(&f), 3);
        }
        ASSERT_TRUE(exists(&f, "db/t/metadata/v8.metadata.json"));
        ASSERT_TRUE(exists(&f, "db/t/metadata/v7.metadata.json"));
        ASSERT_TRUE(exists(&f, "db/t/metadata/v6.metadata.json"));
        current = load(&f, "t", 0);
        ASSERT_EQ(json_array_size(
                          json_object_get(json_object_get(current, "metadata"), "metadata-log")),
                  2);

        /* Turned off again: the log is still trimmed, the files stay. */
        o = commit_wait(&f, f.catalog, off);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        o = commit_wait(&f, f.catalog, off);
        ASSERT_EQ(o.status, 0);
        outcome_reset(&o);
        ASSERT_EQ(count_versions(&f), 5);
        fixture_done(&f);
}
