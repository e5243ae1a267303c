/* SPDX-License-Identifier: Apache-2.0 */
/* One commit through the embedded catalog on a bucket at a table age: CPU (user + system, all
 * threads of this process: loop and thread pool; the store's own CPU is not counted) and wall
 * time of catalog commits on a table of N snapshots, printed as a Markdown table, never
 * asserted. Usage: ICECOMMIT_BENCH_S3_ENDPOINT=http://127.0.0.1:PORT bench-bucket-catalog [N...]
 * (default 10 10000), against tests/peers/s3-start.sh's SeaweedFS (bucket, keys and region
 * default to its; ICECOMMIT_BENCH_S3_BUCKET, _ACCESS_KEY, _SECRET_KEY, _REGION override them);
 * ICECOMMIT_BENCH_COMMITS commits per size (default 20), ICECOMMIT_BENCH_CACHE_TABLES the
 * catalog.cache-tables (default 64). The history is synthesized (one metadata object written
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

#include "catalog/catalog.h"
#include "config/config.h"
#include "metrics/metrics.h"
#include "storage/storage.h"
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

static void on_written(StorageResult *result, void *userdata) {
        Outcome *o = userdata;

        o->done = true;
        o->status = result->status;
        snprintf(o->message, sizeof(o->message), "%s", result->error.message);
}

static void wait_for(uv_loop_t *loop, Outcome *o) {
        while (!o->done)
                (void)uv_run(loop, UV_RUN_ONCE);
        if (o->status != 0) {
                fprintf(stderr, "call failed: %d %s\n", o->status, o->message);
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

static const char *env_or(const char *name, const char *fallback) {
        const char *v = getenv(name);

        return v && v[0] ? v : fallback;
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
                         "s3://bucket/warehouse/db/t/metadata/snap-1234567890-1-0b5e2a9c-list.avro",
                         "summary", "operation", "append", "added-data-files", "4", "added-records",
                         "1000", "added-files-size", "123456", "total-data-files", "400",
                         "total-records", "100000", "total-files-size", "12345600",
                         "icecommit.keys", keys, "icecommit.commit-uuid",
                         "0b5e2a9c-0000-4000-8000-000000000000", "schema-id", 0, "first-row-id",
                         (json_int_t)first_row_id, "added-rows", (json_int_t)1000);
}

static void object_put(uv_loop_t *loop, Storage *storage, const char *location, const char *text) {
        Outcome o = { 0 };
        Error e = { 0 };

        if (storage_write(storage, NULL, location, slice_make(text, strlen(text)), 0, on_written,
                          &o, &e) < 0) {
                fprintf(stderr, "cannot write '%s': %s\n", location, e.message);
                exit(1);
        }
        wait_for(loop, &o);
}

/* v2 of the table: v1's metadata with n snapshots of history on main. */
static void history_write(uv_loop_t *loop, Storage *storage, const char *table_location,
                          const json_t *v1, int64_t n) {
        _cleanup_(json_decrefp) json_t *md = json_deep_copy(json_object_get(v1, "metadata"));
        _cleanup_(freep) char *text = NULL;
        json_t *snapshots = json_array(), *log = json_array();
        char location[512];

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
        text = json_dumps(md, JSON_COMPACT);
        if (!text)
                exit(1);
        snprintf(location, sizeof(location), "%s/metadata/v2.metadata.json", table_location);
        object_put(loop, storage, location, text);
        snprintf(location, sizeof(location), "%s/metadata/version-hint.text", table_location);
        object_put(loop, storage, location, "2");
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

static Config *config_make(const char *warehouse) {
        _cleanup_(freep) char *ini = NULL;
        Config *config = NULL;
        Error e = { 0 };
        FILE *f;

        if (asprintf(&ini,
                     "[catalog]\nwarehouse = %s\nmax-response-bytes = 1073741824\n"
                     "cache-tables = %s\n[s3]\nendpoint = %s\npath-style-access = true\n"
                     "access-key-id = %s\nsecret-access-key = %s\n[client]\nregion = %s\n",
                     warehouse, env_or("ICECOMMIT_BENCH_CACHE_TABLES", "64"),
                     getenv("ICECOMMIT_BENCH_S3_ENDPOINT"),
                     env_or("ICECOMMIT_BENCH_S3_ACCESS_KEY", "AKIDICECOMMIT"),
                     env_or("ICECOMMIT_BENCH_S3_SECRET_KEY", "icecommit-test-secret"),
                     env_or("ICECOMMIT_BENCH_S3_REGION", "us-east-1")) < 0)
                exit(1);
        f = fmemopen(ini, strlen(ini), "r");
        if (!f || config_load_file(f, "bench", &config, &e) < 0) {
                fprintf(stderr, "bad configuration: %s\n", e.message);
                exit(1);
        }
        fclose(f);
        return config;
}

static void bench(int64_t n, unsigned n_commits) {
        _cleanup_(json_decrefp) json_t *create = NULL, *current = NULL;
        double cpu[1000], wall[1000], cpu_load, wall_load, t0, c0;
        char warehouse[256], table_location[320];
        Storage *storage = NULL;
        Catalog *catalog = NULL;
        Metrics *metrics = NULL;
        Config *config;
        Outcome o = { 0 };
        uv_loop_t loop;

        snprintf(warehouse, sizeof(warehouse), "s3://%s/bench-%ld-%" PRId64 "/wh",
                 env_or("ICECOMMIT_BENCH_S3_BUCKET", "icecommit"), (long)time(NULL), n);
        snprintf(table_location, sizeof(table_location), "%s/db/t", warehouse);
        config = config_make(warehouse);
        uv_loop_init(&loop);
        if (metrics_new(&metrics) < 0 ||
            storage_new(&loop, &config->storage, metrics, &storage) < 0 ||
            catalog_new(&loop, &config->catalog, storage, &catalog) < 0)
                exit(1);
        if (catalog_start(catalog, on_result, &o) < 0)
                exit(1);
        wait_for(&loop, &o);
        o = (Outcome){ 0 };
        if (catalog_create_namespace(catalog, NS, 1, NULL, on_result, &o) < 0)
                exit(1);
        wait_for(&loop, &o);
        o = (Outcome){ 0 };
        create = json_loads(
                "{\"name\": \"t\", \"schema\": {\"type\": \"struct\", \"schema-id\": 0, "
                "\"fields\": ["
                "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"}]},"
                " \"properties\": {\"format-version\": \"3\"}}",
                0, NULL);
        if (catalog_create_table(catalog, NS, 1, "t", create, on_result, &o) < 0)
                exit(1);
        wait_for(&loop, &o);
        history_write(&loop, storage, table_location, o.body, n);
        json_decref(o.body);
        o = (Outcome){ 0 };

        /* The first load reads and parses the whole history. */
        c0 = cpu_ms(), t0 = wall_ms();
        if (catalog_load_table(catalog, NS, 1, "t", on_result, &o) < 0)
                exit(1);
        wait_for(&loop, &o);
        cpu_load = cpu_ms() - c0, wall_load = wall_ms() - t0;
        current = TAKE_PTR(o.body);

        for (unsigned i = 0; i < n_commits; i++) {
                _cleanup_(json_decrefp) json_t *req = append_request(current, n + 1 + i);

                o = (Outcome){ 0 };
                c0 = cpu_ms(), t0 = wall_ms();
                if (catalog_commit_table(catalog, NS, 1, "t", req, NULL, on_result, &o) < 0)
                        exit(1);
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
        catalog_close(catalog, NULL, NULL);
        storage_close(storage, NULL, NULL);
        (void)uv_run(&loop, UV_RUN_DEFAULT);
        catalog = catalog_free(catalog);
        storage = storage_free(storage);
        metrics = metrics_free(metrics);
        (void)uv_loop_close(&loop);
        config_free(config);
}

int main(int argc, char **argv) {
        const char *env = getenv("ICECOMMIT_BENCH_COMMITS");
        unsigned n_commits = env ? (unsigned)strtoul(env, NULL, 10) : 20;

        if (!getenv("ICECOMMIT_BENCH_S3_ENDPOINT")) {
                fprintf(stderr, "ICECOMMIT_BENCH_S3_ENDPOINT is not set (see the header)\n");
                return 2;
        }
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
