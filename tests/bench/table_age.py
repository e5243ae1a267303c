#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (issue 12, B4): the cost of one commit as a function of the table's age (snapshots in
its metadata), on icecommitd's embedded filesystem catalog and on Apache Iceberg's REST catalog
server, side by side with Iceberg Java's client on REST, in one run.

Setup per age N (not timed): a v3 table created by Iceberg Java, one real append of one data
file, then N-1 more snapshots added in one new metadata file (`peer.sh bench-history`: empty
appends, each with its own manifest list holding the same one manifest; on REST the table is
registered again at that file). So the metadata holds N snapshots and N snapshot-log entries, as
a table after N commits does, while the current manifest list stays one manifest (its size is
B2's subject, manifest_count.py).

  icecommit: one icecommitd per catalog (after one warm-up commit to another table), then R
             sequential commits of one staged manifest each to the table; per commit the
             daemon's CPU (sum of its threads' /proc/<pid>/task/*/schedstat run times; utime+stime
             of /proc/<pid>/stat, 10 ms ticks, too) and wall time around the HTTP request; all the
             while a thread polls GET /healthz every 5 ms: the longest answer is the daemon's
             longest stall seen from outside (its event loop answers /healthz)
  peer:      Apache Iceberg Java 1.11 client on the REST table (`peer.sh bench-commit`: 3 warm-up
             commits to another table, then R FastAppend commits of one data file each, CPU of the
             committing thread and of the whole JVM, and wall, around commit())

Run: tests/bench/table_age.py [--ages 10,10000 --commits 3]; it builds nothing (tests/install-deps.sh
and a meson build first) and prints a Markdown table, then one JSON line.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_common import HealthPoller, median, peer_long, ratio, rest_catalog, table_metadata  # noqa: E402
from conftest import Daemon, make_workdir, peer  # noqa: E402
from manifest_count import ice_commits  # noqa: E402

NS = "bench"


def aged_table(uri, table, n):
    peer("create-table", "--uri", uri, "--table", f"{NS}.{table}")
    peer("append", "--uri", uri, "--table", f"{NS}.{table}", "--rows", 4, "--start-id", 0)
    if n > 1:
        peer_long("bench-history", "--uri", uri, "--table", f"{NS}.{table}", "--snapshots", n - 1)
    return len(table_metadata(uri, NS, table)["snapshots"])


def ice_side(uri, work, tables, r):
    """icecommitd on this catalog: a warm-up commit, then r commits to each table, polled."""
    peer("create-table", "--uri", uri, "--table", f"{NS}.warm_ice")
    warm = peer("stage", "--uri", uri, "--table", f"{NS}.warm_ice", "--files", 1, "--rows", 4,
                "--start-id", 0, "--manifests", 1)["manifests"]
    staged = {t: peer("stage", "--uri", uri, "--table", f"{NS}.{t}", "--files", 1, "--rows", 4,
                      "--start-id", 1_000_000, "--manifests", r)["manifests"] for t in tables}
    out = {}
    d = Daemon(uri, work, {"log.level": "notice"})
    try:
        ice_commits(d, "warm_ice", warm, "warm")
        for t in tables:
            with HealthPoller(d.url) as poll:
                commits = ice_commits(d, t, staged[t], f"c-{t}")
            out[t] = {"commits": commits, "healthz_longest_ms": poll.longest_ms, "healthz_polls": poll.polls,
                      "healthz_failed": poll.failed}
    finally:
        d.stop()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ages", default="10,10000", help="snapshots in the table's metadata")
    ap.add_argument("--commits", type=int, default=3, help="measured commits per side, age and catalog")
    args = ap.parse_args()
    ages = [int(x) for x in args.ages.split(",")]
    r = args.commits
    work = make_workdir("icecommit-bench-age-")
    warehouse = os.path.join(work, "warehouse")
    os.makedirs(warehouse)
    started = time.monotonic()
    results = {"filesystem": {}, "rest": {}, "java": {}}
    with rest_catalog(work) as uri:
        tables = [f"s{n}" for n in ages]
        built = {}
        for backend, cat in (("filesystem", warehouse), ("rest", uri)):
            t0 = time.monotonic()
            built[backend] = {t: aged_table(cat, t, n) for t, n in zip(tables, ages)}
            results[f"{backend}_build_s"] = time.monotonic() - t0
            results[backend] = ice_side(cat, work, tables, r)
        peer("create-table", "--uri", uri, "--table", f"{NS}.warm_java")
        for t in tables:
            java = peer("bench-commit", "--uri", uri, "--table", f"{NS}.{t}", "--count", r,
                        "--start-id", 2_000_000, "--warmup", 3, "--warmup-table", f"{NS}.warm_java")
            results["java"][t] = {k: java[k] for k in ("commit-ms", "thread-cpu-ms", "process-cpu-ms")}
        results["built"] = built

    print(f"\n### One commit of one data file at N snapshots ({r} commits per side, age and catalog; "
          "icecommitd: first commit, then median of the others)\n")
    print("| snapshots | catalog | icecommitd CPU, first commit (ms) | icecommitd CPU, next, median (ms) "
          "| icecommitd wall, first / next (ms) | longest /healthz answer during the commits (ms) "
          "| Java client CPU, commit thread / whole JVM, median (ms) | Java wall, median (ms) "
          "| ratio icecommitd / Java CPU (next, JVM) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for t, n in zip(tables, ages):
        for backend in ("filesystem", "rest"):
            x = results[backend][t]
            c = x["commits"]
            rest = c[1:] or c
            nxt = median([v["run_ms"] for v in rest])
            if backend == "rest":
                j = results["java"][t]
                jvm = median(j["process-cpu-ms"])
                java_cols = (f"{median(j['thread-cpu-ms']):.1f} / {jvm:.1f} | {median(j['commit-ms']):.1f} "
                             f"| {ratio(nxt, jvm)}")
            else:
                java_cols = "(Java's client not run on the filesystem catalog) | | "
            print(f"| {built[backend][t]} | {backend} | {c[0]['run_ms']:.1f} | {nxt:.1f} "
                  f"| {c[0]['wall_ms']:.1f} / {median([v['wall_ms'] for v in rest]):.1f} "
                  f"| {x['healthz_longest_ms']:.1f} ({x['healthz_polls']} polls) | {java_cols} |")
    print(f"\n(table builds: filesystem {results['filesystem_build_s']:.0f} s, rest {results['rest_build_s']:.0f} s)")
    print(f"(run took {time.monotonic() - started:.0f} s)")
    print(json.dumps({"commits": r, "results": results}))


if __name__ == "__main__":
    main()
