#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (issue 12, B2): the cost of one commit as a function of the manifests in the parent
manifest list, side by side in one run.

Setup per size N (not timed): a v3 table created by Iceberg Java whose manifest list holds N
manifests of one data file each (`peer.sh bench-manifests`: one real Parquet file and N hard links
to it, N staged manifests, one FastAppend of all of them), on Apache Iceberg's REST catalog
server on loopback.

  icecommit: one icecommitd (after one warm-up commit to another table), then R sequential
             commits of one staged manifest (written by Iceberg Java beforehand) to the table;
             for each, the daemon's CPU time (/proc/<pid>/stat utime+stime, and the finer sum of
             its threads' /proc/<pid>/task/*/schedstat run times) and the wall time, around the
             HTTP request. The first commit of a table builds icecommitd's live-file index
             (it reads every manifest of the snapshot once): reported apart from the rest.
  peer:      Apache Iceberg Java 1.11 in one JVM (`peer.sh bench-commit`): 3 warm-up commits to
             another table, then R FastAppend commits of one data file each to the same table,
             each measured around commit(): wall, this thread's CPU (ThreadMXBean) and the whole
             JVM's CPU (GC and JIT threads included).

Merging is turned off on the table (commit.manifest-merge.enabled=false) unless --merge: icecommitd
merges by the table's properties, and a merge in its first commit would leave both sides a short list.

Run: tests/bench/manifest_count.py [--sizes 1000,10000,100000 --commits 3]; it builds nothing
(tests/install-deps.sh and a meson build first) and prints a Markdown table, then one JSON line.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_common import cpu_seconds, median, peer_long, ratio, rest_catalog, rest_metadata  # noqa: E402
from conftest import Daemon, make_workdir, peer  # noqa: E402

NS = "bench"


def ice_commits(d, table, staged, prefix):
    out = []
    for i, m in enumerate(staged):
        c0 = cpu_seconds(d.proc.pid)
        t0 = time.perf_counter()
        status, _, answer = d.commit(NS, table, {"idempotency-key": f"{prefix}-{i}",
                                                 "staged-manifests": [m["manifest"]]})
        wall = (time.perf_counter() - t0) * 1000
        c1 = cpu_seconds(d.proc.pid)
        assert status == 200, answer
        out.append({"wall_ms": wall, "cpu_ms": (c1[0] - c0[0]) * 1000, "run_ms": (c1[1] - c0[1]) * 1000})
    return out


def manifests_in_list(uri, table):
    md = rest_metadata(uri, NS, table)
    current = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    return current["summary"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000", help="manifests in the parent list")
    ap.add_argument("--commits", type=int, default=3, help="measured commits per side and size")
    ap.add_argument("--merge", action="store_true",
                    help="leave commit.manifest-merge.enabled at its default (true): icecommitd's "
                         "first commit then merges the N manifests and both sides measure the merged list")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    r = args.commits
    work = make_workdir("icecommit-bench-manifests-")
    started = time.monotonic()
    results = {}
    with rest_catalog(work) as uri:
        for t in ("warm_ice", "warm_java"):
            peer("create-table", "--uri", uri, "--table", f"{NS}.{t}")
        warm = peer("stage", "--uri", uri, "--table", f"{NS}.warm_ice", "--files", 1, "--rows", 4,
                    "--start-id", 0, "--manifests", len(sizes))["manifests"]
        for w, n in enumerate(sizes):
            table = f"m{n}"
            t0 = time.monotonic()
            peer("create-table", "--uri", uri, "--table", f"{NS}.{table}")
            # Iceberg Java writes ~100-300 manifests per second here: 100k take minutes.
            built = peer_long("bench-manifests", "--uri", uri, "--table", f"{NS}.{table}", "--manifests", n)
            build_s = time.monotonic() - t0
            if not args.merge:
                # icecommitd merges manifests by the table's properties (Java's FastAppend does
                # not): left on, its first commit would merge the N manifests away and every
                # commit after it, Java's too, would measure a short list, not N manifests.
                peer("evolve", "--uri", uri, "--table", f"{NS}.{table}", "--ops",
                     '[["set-property", "commit.manifest-merge.enabled", "false"]]')
            staged = peer("stage", "--uri", uri, "--table", f"{NS}.{table}", "--files", 1, "--rows", 4,
                          "--start-id", 1_000_000, "--manifests", r)["manifests"]
            d = Daemon(uri, work, {"log.level": "notice"})
            try:
                ice_commits(d, "warm_ice", warm[w:w + 1], f"warm-{n}")
                ice = ice_commits(d, table, staged, f"c-{n}")
            finally:
                d.stop()
            java = peer("bench-commit", "--uri", uri, "--table", f"{NS}.{table}", "--count", r,
                        "--start-id", 2_000_000, "--warmup", 3, "--warmup-table", f"{NS}.warm_java")
            results[n] = {"built_manifests": built["manifests"], "build_s": build_s, "ice": ice,
                          "java": {k: java[k] for k in ("commit-ms", "thread-cpu-ms", "process-cpu-ms")},
                          "manifests_after": java["manifests"]}
            print(json.dumps({n: results[n]}), flush=True)  # kept if a later size fails

    merge = "merging on (default)" if args.merge else "commit.manifest-merge.enabled=false"
    print(f"\n### One commit of one data file at N manifests in the parent list ({r} commits per "
          f"side and size; icecommitd: first commit, then median of the others; {merge})\n")
    print("| manifests in the parent list | icecommitd CPU, first commit (ms) | icecommitd CPU, next commits, "
          "median (ms) | icecommitd wall, first / next (ms) | Java CPU, commit thread, median (ms) "
          "| Java CPU, whole JVM, median (ms) | Java wall, median (ms) | ratio icecommitd / Java CPU "
          "(next, JVM) | manifests in the list at the end |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        x = results[n]
        ice, java = x["ice"], x["java"]
        rest = ice[1:] or ice
        ice_next = median([c["run_ms"] for c in rest])
        jvm = median(java["process-cpu-ms"])
        print(f"| {x['built_manifests']} | {ice[0]['run_ms']:.1f} (stat: {ice[0]['cpu_ms']:.0f}) "
              f"| {ice_next:.1f} (stat: {median([c['cpu_ms'] for c in rest]):.0f}) "
              f"| {ice[0]['wall_ms']:.1f} / {median([c['wall_ms'] for c in rest]):.1f} "
              f"| {median(java['thread-cpu-ms']):.1f} | {jvm:.1f} | {median(java['commit-ms']):.1f} "
              f"| {ratio(ice_next, jvm)} | {x['manifests_after']} |")
    print("\n(icecommitd CPU: its threads' schedstat run time; in brackets utime+stime from "
          "/proc/<pid>/stat, in 10 ms ticks)")
    print(f"(table builds: " + ", ".join(f"{n}: {results[n]['build_s']:.0f} s" for n in sizes) + ")")
    print(f"\n(run took {time.monotonic() - started:.0f} s)")
    print(json.dumps({"commits": r, "merge": args.merge, "results": results}))


if __name__ == "__main__":
    main()
