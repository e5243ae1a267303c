#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: N writers appending to one Iceberg v3 table, side by side in one run.

  peer:      N Apache Iceberg Java writers committing directly (FastAppend, Iceberg's default
             retry policy: 4 retries, 100 ms doubling backoff), each K appends
  icecommit: the same N x K appends as staged manifests through icecommitd

Both against the same Apache Iceberg REST catalog server on loopback. Reported: appends
acknowledged per second over the commit phase (first to last commit, from the catalog's own
snapshot timestamps for Java; wall time for icecommit), appends that failed, snapshots created,
and icecommitd's peak RSS, with icecommit/peer ratios. Run: tests/bench/commit_throughput.py
[--writers 8 --appends 25]; it builds nothing (run tests/install-deps.sh and a meson build
first) and prints a Markdown table.
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from conftest import BUILD, PEERS, ROOT, Daemon, free_port, http, peer, rest_catalog_roots  # noqa: E402


def java_writer(uri, table, w, appends):
    out = subprocess.run([os.path.join(PEERS, "peer.sh"), "append", "--uri", uri, "--table", table,
                          "--rows", "4", "--start-id", str(w * 1_000_000), "--count", str(appends)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        # Iceberg gave up after its retries: count what landed from the table afterwards.
        return False
    return True


def table_snapshots(uri, ns, name):
    status, _, body = http("GET", f"{uri}/v1/namespaces/{ns}/tables/{name}")
    assert status == 200
    return body["metadata"].get("snapshots", [])


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--appends", type=int, default=25)
    args = ap.parse_args()
    n, k = args.writers, args.appends

    work = tempfile.mkdtemp(prefix="icecommit-bench-", dir=os.path.join(ROOT, "build-tests"))
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    subprocess.run([os.path.join(PEERS, "catalog-start.sh"), work, str(port)], check=True,
                   stdout=subprocess.DEVNULL)
    try:
        peer("create-table", "--uri", uri, "--table", "bench.java")
        peer("create-table", "--uri", uri, "--table", "bench.ice")

        # Peer: N JVMs appending directly. Their JVM start and data writing are outside the
        # commit phase, which is measured from the catalog's snapshot timestamps.
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            ok = list(pool.map(lambda w: java_writer(uri, "bench.java", w, k), range(n)))
        snaps = table_snapshots(uri, "bench", "java")
        ts = sorted(s["timestamp-ms"] for s in snaps)
        java_landed = len(snaps)
        java_secs = max((ts[-1] - ts[0]) / 1000, 1e-3) if len(ts) > 1 else float("nan")
        java_rate = (java_landed - 1) / java_secs if len(ts) > 1 else 0
        java_failed_writers = ok.count(False)

        # icecommit: the same appends, staged first (not timed), then committed through icecommitd.
        staged = peer("stage", "--uri", uri, "--table", "bench.ice", "--files", "1", "--rows", "4",
                      "--start-id", "0", "--manifests", str(n * k))["manifests"]
        d = Daemon(uri, work, {"log.level": "notice",
                               "storage.allowed-roots": rest_catalog_roots(work)})
        try:
            def writer(w):
                results = []
                for c in range(k):
                    m = staged[w * k + c]["manifest"]
                    status, _, _ = d.commit("bench", "ice", {"idempotency-key": f"b-{w}-{c}",
                                                             "staged-manifests": [m]})
                    results.append(status)
                return results

            start = time.monotonic()
            with concurrent.futures.ThreadPoolExecutor(n) as pool:
                statuses = [s for r in pool.map(writer, range(n)) for s in r]
            ice_secs = time.monotonic() - start
            ice_rss = rss_kb(d.proc.pid)
        finally:
            d.stop()
        ice_ok = statuses.count(200)
        ice_snaps = len(table_snapshots(uri, "bench", "ice"))
        ice_rate = ice_ok / ice_secs

        print(f"\n### {n} writers x {k} appends, one v3 table, Apache Iceberg REST catalog 1.11 on loopback\n")
        print("| | Iceberg Java direct | icecommitd | ratio |")
        print("|---|---|---|---|")
        print(f"| appends acknowledged | {java_landed} of {n * k} | {ice_ok} of {n * k} | |")
        print(f"| writers that gave up (CommitFailedException after retries) | {java_failed_writers} of {n} | 0 of {n} | |")
        print(f"| snapshots created | {java_landed} | {ice_snaps} | {ice_snaps / max(java_landed, 1):.2f} |")
        print(f"| appends per second (commit phase) | {java_rate:.1f} | {ice_rate:.1f} | {ice_rate / java_rate if java_rate else float('inf'):.1f}x |")
        print(f"| icecommitd peak RSS | | {ice_rss / 1024:.1f} MiB | |")
        print(json.dumps({"writers": n, "appends": k, "java_landed": java_landed, "java_rate": java_rate,
                          "java_failed_writers": java_failed_writers, "ice_ok": ice_ok, "ice_rate": ice_rate,
                          "ice_snapshots": ice_snaps, "ice_rss_kb": ice_rss}))
    finally:
        subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), work], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
