/* SPDX-License-Identifier: Apache-2.0 */
/* One commit through the embedded filesystem catalog at a table age: CPU (user + system, all
 * threads) and wall time of catalog commits on a table of N snapshots, printed as a Markdown
 * table, never asserted. Usage: bench-fs-catalog [N...] (default 10 10000); ICECOMMIT_BENCH_COMMITS
 * commits per size (default 20). The table's history is synthesized (one metadata file written
 * directly), so a large size takes seconds, not hours. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "catalog/filesystem.h"
#include "util/cleanup.h"

typedef struct Outcome {
        bool done;
        int status;
        char message[1024];
        json_t *body; /* a reference to the answer's body */
} Outcome;

static void on_result(const CatalogResult *result, void *userdata) {
        Outcome *o = userdata;

        o->done = true;
        o->status = result->status;
        snprintf(o->message, sizeof(o->message), "%s", result->message);
        json_decref(o->body);
        o->body = result->body ? json_incref(result->body) : NULL;
}

static void wait_for(uv_loop_t *loop, Outcome *o) {
        while (!o->done)
                (void)uv_run(loop, UV_RUN_ONCE);
        if (o->status != 0) {
                fprintf(stderr, "catalog call failed: %d %s\n", o->status, o->message);
                exit(1);
        }
}

static double cpu_ms(void) {
        struct rusage u;

        (void)getrusage(RUSAGE_SELF, &u);
        return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 +
               (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

static double wall_ms(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int compare_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return x < y ? -1 : x > y;
}

static const char *const NS[] = { "db" };

/* A snapshot as icecommitd writes them: summary with the batch's keys and counts. */
static json_t *snapshot_new(int64_t id, int64_t parent, int64_t seq, int64_t first_row_id) {
        char keys[256];

        snprintf(keys, sizeof(keys),
                 "writer-%" PRId64 "/key-%" PRId64 "-a,writer-%" PRId64 "/key-%" PRId64 "-b",
                 id % 7, id, id % 5, id);
        return json_pack("{s:I, s:I, s:I, s:I, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s,"
                         " s:s}, s:i, s:I, s:I}",
                         "snapshot-id", (json_int_t)id, "parent-snapshot-id", (json_int_t)parent,
                         "sequence-number", (json_int_t)seq, "timestamp-ms",
                         (json_int_t)(1700000000000 + seq), "manifest-list",
                         "/warehouse/db/t/metadata/snap-1234567890-1-0b5e2a9c-list.avro", "summary",
                         "operation", "append", "added-data-files", "4", "added-records", "1000",
                         "added-files-size", "123456", "total-data-files", "400", "total-records",
                         "100000", "total-files-size", "12345600", "icecommit.keys", keys,
                         "icecommit.commit-uuid", "0b5e2a9c-0000-4000-8000-000000000000",
                         "schema-id", 0, "first-row-id", (json_int_t)first_row_id, "added-rows",
                         (json_int_t)1000);
}

/* v2 of the table: v1's metadata with n snapshots of history on main. */
static void history_write(const char *table_dir, const json_t *v1, int64_t n) {
        _cleanup_(json_decrefp) json_t *md = json_deep_copy(json_object_get(v1, "metadata"));
        json_t *snapshots = json_array(), *log = json_array();
        char path[512];
        FILE *f;

        for (int64_t i = 1; i <= n; i++) {
                json_array_append_new(snapshots,
                                      snapshot_new(i, i > 1 ? i - 1 : -1, i, (i - 1) * 1000));
                json_array_append_new(log, json_pack("{s:I, s:I}", "timestamp-ms",
                                                     (json_int_t)(1700000000000 + i), "snapshot-id",
                                                     (json_int_t)i));
        }
        json_object_set_new(md, "snapshots", snapshots);
        json_object_set_new(md, "snapshot-log", log);
        json_object_set_new(md, "current-snapshot-id", json_integer(n));
        json_object_set_new(md, "last-sequence-number", json_integer(n));
        json_object_set_new(md, "next-row-id", json_integer(n * 1000));
        json_object_set_new(md, "refs",
                            json_pack("{s:{s:I, s:s}}", "main", "snapshot-id", (json_int_t)n,
                                      "type", "branch"));
        snprintf(path, sizeof(path), "%s/metadata/v2.metadata.json", table_dir);
        if (json_dump_file(md, path, JSON_COMPACT) < 0)
                exit(1);
        snprintf(path, sizeof(path), "%s/metadata/version-hint.text", table_dir);
        f = fopen(path, "we");
        if (!f)
                exit(1);
        fputs("2", f);
        fclose(f);
}

static json_t *append_request(const json_t *load_result, int64_t snapshot_id) {
        const json_t *md = json_object_get(load_result, "metadata");
        int64_t current = json_integer_value(json_object_get(md, "current-snapshot-id"));
        int64_t seq = json_integer_value(json_object_get(md, "last-sequence-number")) + 1;
        json_t *snap = snapshot_new(snapshot_id, current, seq,
                                    json_integer_value(json_object_get(md, "next-row-id")));

        return json_pack("{s:[{s:s, s:O}, {s:s, s:s, s:I}], s:[{s:s, s:o}, {s:s, s:s, s:s, s:I}]}",
                         "requirements", "type", "assert-table-uuid", "uuid",
                         json_object_get(md, "table-uuid"), "type", "assert-ref-snapshot-id", "ref",
                         "main", "snapshot-id", (json_int_t)current, "updates", "action",
                         "add-snapshot", "snapshot", snap, "action", "set-snapshot-ref", "ref-name",
                         "main", "type", "branch", "snapshot-id", (json_int_t)snapshot_id);
}

static void bench(int64_t n, unsigned n_commits) {
        char dir[] = "/tmp/icecommit-bench-fs-XXXXXX", warehouse[128], table_dir[192];
        _cleanup_(json_decrefp) json_t *create = NULL, *current = NULL;
        double cpu[1000], wall[1000], cpu_load, wall_load, t0, c0;
        CatalogConfig config = { 0 };
        FsCatalog *catalog = NULL;
        Outcome o = { 0 };
        uv_loop_t loop;
        char cmd[256];

        if (!mkdtemp(dir))
                exit(1);
        snprintf(warehouse, sizeof(warehouse), "%s/wh", dir);
        snprintf(table_dir, sizeof(table_dir), "%s/db/t", warehouse);
        config.warehouse = warehouse;
        config.max_response_bytes = 1u << 30;
        config.cache_tables = 64;
        uv_loop_init(&loop);
        if (filesystem_catalog_new(&loop, &config, &catalog) < 0)
                exit(1);
        filesystem_catalog_backend.start(catalog, on_result, &o);
        wait_for(&loop, &o);
        o = (Outcome){ 0 };
        filesystem_catalog_backend.create_namespace(catalog, NS, 1, NULL, on_result, &o);
        wait_for(&loop, &o);
        o = (Outcome){ 0 };
        create = json_loads(
                "{\"schema\": {\"type\": \"struct\", \"schema-id\": 0, \"fields\": ["
                "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}]},"
                " \"properties\": {\"format-version\": \"3\"}}",
                0, NULL);
        filesystem_catalog_backend.create_table(catalog, NS, 1, "t", create, on_result, &o);
        wait_for(&loop, &o);
        history_write(table_dir, o.body, n);
        json_decref(o.body);
        o = (Outcome){ 0 };

        /* The first load reads and parses the whole history. */
        c0 = cpu_ms(), t0 = wall_ms();
        filesystem_catalog_backend.load_table(catalog, NS, 1, "t", on_result, &o);
        wait_for(&loop, &o);
        cpu_load = cpu_ms() - c0, wall_load = wall_ms() - t0;
        current = TAKE_PTR(o.body);

        for (unsigned i = 0; i < n_commits; i++) {
                _cleanup_(json_decrefp) json_t *req = append_request(current, n + 1 + i);

                o = (Outcome){ 0 };
                c0 = cpu_ms(), t0 = wall_ms();
                filesystem_catalog_backend.commit_table(catalog, NS, 1, "t", req, NULL, on_result,
                                                        &o);
                wait_for(&loop, &o);
                cpu[i] = cpu_ms() - c0, wall[i] = wall_ms() - t0;
                json_decref(current);
                current = TAKE_PTR(o.body);
        }
        qsort(cpu, n_commits, sizeof(double), compare_double);
        qsort(wall, n_commits, sizeof(double), compare_double);
        printf("| %" PRId64 " | %.1f | %.1f | %.2f | %.2f | %.2f |\n", n, cpu_load, wall_load,
               cpu[n_commits / 2], cpu[n_commits * 9 / 10], wall[n_commits / 2]);
        fflush(stdout);

        json_decref(TAKE_PTR(current));
        filesystem_catalog_backend.close(catalog, NULL, NULL);
        (void)uv_run(&loop, UV_RUN_DEFAULT);
        catalog = filesystem_catalog_free(catalog);
        (void)uv_loop_close(&loop);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0)
                fprintf(stderr, "cannot remove '%s'\n", dir);
}

int main(int argc, char **argv) {
        const char *env = getenv("ICECOMMIT_BENCH_COMMITS");
        unsigned n_commits = env ? (unsigned)strtoul(env, NULL, 10) : 20;

        if (n_commits < 1 || n_commits > 1000)
                n_commits = 20;
        printf("| snapshots | first load CPU ms | first load wall ms | commit CPU ms p50 |"
               " commit CPU ms p90 | commit wall ms p50 |\n|---|---|---|---|---|---|\n");
        if (argc < 2) {
                bench(10, n_commits);
                bench(10000, n_commits);
        }
        for (int i = 1; i < argc; i++)
                bench(strtoll(argv[i], NULL, 10), n_commits);
        return 0;
}
