/* SPDX-License-Identifier: Apache-2.0 */
/* Micro benchmark, not run in CI: CPU time of writing one snapshot's manifest list over a parent
 * of 1k, 10k and 100k entries, whole (manifest_list_write of new + parent entries, as before
 * issue 12) against incremental (manifest_list_append), and of the parent's decode
 * (manifest_list_read), which commit/list_build.c still does. Incremental appends are timed as a
 * run of 64 one-entry commits on the parent, so that block coalescing is paid for in the mean.
 *   build-release/tests/bench/bench-manifest-list-append [N...] */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iceberg/manifest_list.h"
#include "iceberg/manifest_list_append.h"
#include "iceberg-fixture.h"
#include "util/parse.h"

#define BENCH_MAX_BYTES (1u << 30)
#define BENCH_APPENDS 64

static double cpu_ms(void) {
        struct timespec ts;

        (void)clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static const IcebergFixtureSummary bench_summary[] = {
        { .contains_nan = -1,
          .lower = ICEBERG_FIXTURE_BYTES("\x0a\x00\x00\x00"),
          .upper = ICEBERG_FIXTURE_BYTES("\x64\x00\x00\x00") },
};

/* n data manifests shaped like a partitioned table's: a ~90-byte path, one partition field. */
static ManifestFile *bench_files(size_t first, size_t n) {
        IcebergFixtureManifest *specs = calloc(n, sizeof(*specs));
        char(*paths)[128] = calloc(n, sizeof(*paths));
        ManifestFile *files;

        if (!specs || !paths)
                abort();
        for (size_t i = 0; i < n; i++) {
                size_t k = first + i;

                (void)snprintf(
                        paths[i], sizeof(paths[i]),
                        "s3://warehouse/db/events/metadata/%08zx-1f2e-4d3c-9b8a-%012zx-m0.avro", k,
                        k * 7919);
                specs[i] = (IcebergFixtureManifest){
                        .path = paths[i],
                        .length = 7000 + (int64_t)k,
                        .sequence_number = (int64_t)k + 1,
                        .min_sequence_number = (int64_t)k + 1,
                        .added_snapshot_id = 4000000000000 + (int64_t)k,
                        .file_counts = { 4, 0, 0 },
                        .row_counts = { 40000, 0, 0 },
                        .has_partitions = true,
                        .partitions = bench_summary,
                        .n_partitions = 1,
                        .has_first_row_id = true,
                        .first_row_id = 40000 * (int64_t)k,
                };
        }
        files = iceberg_fixture_manifest_files_new(specs, n);
        free(paths);
        free(specs);
        return files;
}

static ManifestListHeader bench_header(int64_t snapshot) {
        return (ManifestListHeader){ .format_version = 3,
                                     .snapshot_id = snapshot,
                                     .has_parent_snapshot_id = true,
                                     .parent_snapshot_id = snapshot - 1,
                                     .sequence_number = snapshot,
                                     .has_first_row_id = true,
                                     .first_row_id = 40000 * snapshot };
}

static void check(int r, const Error *e, const char *what) {
        if (r != 0) {
                fprintf(stderr, "%s: %d: %s\n", what, r, e->message);
                exit(1);
        }
}

static void bench(size_t n) {
        ManifestFile *all = bench_files(0, n + 1), *read = NULL;
        ManifestListHeader h = bench_header((int64_t)n + 1);
        double t, read_ms, whole_ms, append_ms = 0, append_max_ms = 0;
        size_t n_read = 0, list_bytes;
        Buf parent, out;
        Error e = { 0 };

        /* The parent: entries 1..n written whole (~64 KB blocks, as Java writes them). */
        buf_init(&parent, BENCH_MAX_BYTES);
        check(manifest_list_write(&h, all + 1, n, &parent, &e), &e, "parent");
        list_bytes = parent.len;

        t = cpu_ms();
        check(manifest_list_read(buf_slice(&parent), &read, &n_read, &e), &e, "read");
        read_ms = cpu_ms() - t;
        manifest_list_files_free(read, n_read);

        buf_init(&out, BENCH_MAX_BYTES);
        t = cpu_ms();
        check(manifest_list_write(&h, all, n + 1, &out, &e), &e, "whole");
        whole_ms = cpu_ms() - t;
        buf_deinit(&out);

        for (int i = 0; i < BENCH_APPENDS; i++) {
                ManifestFile *one = bench_files(n + 1 + (size_t)i, 1);
                double ms;

                h = bench_header((int64_t)n + 2 + i);
                buf_init(&out, BENCH_MAX_BYTES);
                t = cpu_ms();
                check(manifest_list_append(&h, one, 1, buf_slice(&parent), &out, &e), &e, "append");
                ms = cpu_ms() - t;
                append_ms += ms;
                if (ms > append_max_ms)
                        append_max_ms = ms;
                buf_deinit(&parent);
                parent = out;
                manifest_list_files_free(one, 1);
        }

        printf("%7zu entries (%5.1f MB): read %8.2f ms, whole write %8.2f ms (%.2f us/entry), "
               "append mean %6.3f ms max %6.3f ms (%.0fx)\n",
               n, (double)list_bytes / 1e6, read_ms, whole_ms, whole_ms * 1e3 / (double)(n + 1),
               append_ms / BENCH_APPENDS, append_max_ms, whole_ms / (append_ms / BENCH_APPENDS));
        buf_deinit(&parent);
        manifest_list_files_free(all, n + 1);
}

int main(int argc, char **argv) {
        static const size_t sizes[] = { 1000, 10000, 100000 };

        if (argc > 1)
                for (int i = 1; i < argc; i++) {
                        uint64_t n;

                        if (parse_u64(argv[i], &n) < 0 || n == 0 || n > 10000000) {
                                fprintf(stderr, "usage: %s [ENTRIES...]\n", argv[0]);
                                return 2;
                        }
                        bench((size_t)n);
                }
        else
                for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                        bench(sizes[i]);
        return 0;
}
