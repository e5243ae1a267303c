#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (issue 12): manifest merging and row lineage after many single-file commits, side
by side in one run, on Apache Iceberg's REST catalog server on loopback, tables with default
properties (commit.manifest-merge.enabled=true, commit.manifest.min-count-to-merge=100).

  icecommit: C sequential commits through one icecommitd, each one staged manifest of one data
             file (4 rows; written by Iceberg Java beforehand, not timed); each receipt gives the
             first_row_id its file got
  peer:      Apache Iceberg Java 1.11's merge append (table.newAppend(), which merges manifests by
             those properties) in one JVM (`peer.sh bench-commit --merge --row-ids`): C commits of
             one data file each; after each commit the first_row_id its file got is read from
             the snapshot's added files

Reported: manifests in the final manifest list, commit time, and a row-lineage check: Iceberg
Java reads every row of each table (`peer.sh dump`, with _row_id, _file and _pos), and each row's
_row_id must equal the one it had right after its own commit (its file's first_row_id then, plus
its position), i.e. later commits (and any merging they did) moved no row id. It is a check that
is reported, not a test: benchmarks never fail on it.

Run: tests/bench/merging.py [--commits 5000]; it builds nothing (tests/install-deps.sh and a meson
build first) and prints a Markdown table, then one JSON line.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_common import median, pct, peer_long, rest_catalog  # noqa: E402
from conftest import Daemon, make_workdir, peer  # noqa: E402

NS = "bench"


def norm(path):
    return path[len("file:"):] if path.startswith("file:") else path


def dump(uri, table):
    return peer_long("dump", "--uri", uri, "--table", f"{NS}.{table}")


def lineage_check(d, first_row_ids):
    """Rows whose _row_id is not first_row_id(file at its commit) + _pos; rows of unknown files."""
    wrong = unknown = 0
    for row in d["rows"]:
        first = first_row_ids.get(norm(row["file"]))
        if first is None:
            unknown += 1
        elif row["_row_id"] != first + row["pos"]:
            wrong += 1
    return {"rows": len(d["rows"]), "wrong": wrong, "unknown_file": unknown,
            "manifests": len(d["manifests"]), "snapshots": len(d["snapshots"])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=5000)
    args = ap.parse_args()
    c = args.commits
    work = make_workdir("icecommit-bench-merging-")
    started = time.monotonic()
    with rest_catalog(work) as uri:
        for t in ("ice", "java"):
            peer("create-table", "--uri", uri, "--table", f"{NS}.{t}")
        staged = peer_long("stage", "--uri", uri, "--table", f"{NS}.ice", "--files", 1, "--rows", 4,
                      "--start-id", 0, "--manifests", c)["manifests"]

        ice_first, ice_ms = {}, []
        d = Daemon(uri, work, {"log.level": "notice"})
        try:
            t0 = time.monotonic()
            for i, m in enumerate(staged):
                t1 = time.perf_counter()
                status, _, answer = d.commit(NS, "ice", {"idempotency-key": f"m-{i}",
                                                         "staged-manifests": [m["manifest"]]})
                ice_ms.append((time.perf_counter() - t1) * 1000)
                assert status == 200, answer
                for f in answer["manifests"][0]["data-files"]:
                    ice_first[norm(f["location"])] = f["first-row-id"]
            ice_s = time.monotonic() - t0
        finally:
            d.stop()

        t0 = time.monotonic()
        java = peer_long("bench-commit", "--uri", uri, "--table", f"{NS}.java", "--count", c,
                    "--start-id", 0, "--merge", "--row-ids")
        java_s = time.monotonic() - t0  # with the JVM's start and its data files
        java_first = {norm(p): v for p, v in java["first-row-ids"].items()}

        t0 = time.monotonic()
        ice_check = lineage_check(dump(uri, "ice"), ice_first)
        java_check = lineage_check(dump(uri, "java"), java_first)
        check_s = time.monotonic() - t0

    jm = java["commit-ms"]
    print(f"\n### {c} single-file commits, default table properties (merge enabled, min-count-to-merge 100)\n")
    print("| | Iceberg Java merge append (newAppend) | icecommitd |")
    print("|---|---|---|")
    print(f"| manifests in the final manifest list | {java_check['manifests']} | {ice_check['manifests']} |")
    print(f"| snapshots | {java_check['snapshots']} | {ice_check['snapshots']} |")
    print(f"| commit latency, median / p95 / last 100 median (ms) | {median(jm):.1f} / {pct(jm, 95):.1f} / "
          f"{median(jm[-100:]):.1f} | {median(ice_ms):.1f} / {pct(ice_ms, 95):.1f} / {median(ice_ms[-100:]):.1f} |")
    print(f"| commit phase (s) | {sum(jm) / 1000:.0f} | {ice_s:.0f} |")
    for label, key in (("rows read back by Iceberg Java", "rows"),
                       ("rows whose _row_id changed after their commit", "wrong"),
                       ("rows of a file no commit reported", "unknown_file")):
        print(f"| {label} | {java_check[key]} | {ice_check[key]} |")
    print(f"\n(Java's JVM run, its data files included: {java_s:.0f} s; reading both tables back: {check_s:.0f} s)")
    print(f"(run took {time.monotonic() - started:.0f} s)")
    print(json.dumps({"commits": c, "ice": {**ice_check, "commit_ms": ice_ms, "phase_s": ice_s},
                      "java": {**java_check, "commit_ms": jm, "run_s": java_s,
                               "thread_cpu_ms_total": sum(java["thread-cpu-ms"])}}))


if __name__ == "__main__":
    main()
