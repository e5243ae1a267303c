#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark (issue 12, B1): group commit with the catalog 50 ms away, side by side in one run.

  peer:      N Apache Iceberg Java writers (one JVM each, `newFastAppend().appendFile(df).commit()`,
             Iceberg's default retry policy: 4 retries, 100 ms doubling backoff) committing
             directly, K appends each; an append Iceberg gives up on (CommitFailedException after
             its retries) is counted as failed and the writer goes on with its next append
             (peer.sh append --timed --give-up); latency is of the appends that landed
  icecommit: N HTTP writers, K staged manifests each (written by Iceberg Java beforehand, not
             timed), each request sent when the writer's previous one was answered, to one
             icecommitd

Both reach Apache Iceberg's REST catalog server through the same proxy on loopback that holds
every request 50 ms (--delay-ms) before forwarding it. Reported per side: accepted appends per
second, failed commits (appends given up), requests per snapshot (icecommitd: the
icecommit.idempotency-keys summary property of each snapshot), the fraction of waiting requests
each snapshot carried, and latency per append (p50, p99).

The fraction, for each snapshot S the run created: carried(S) / waiting(S), where carried(S) is
the number of requests in S (its keys) and waiting(S) the number of requests that had been sent
before S's timestamp-ms and were not in an earlier snapshot (S's own and every later snapshot's
requests sent by then). icecommitd sets timestamp-ms once the attempt has its table (from the
table state when it is fresh, so usually with no load), and since issue 12's full batches the
requests waiting in the queue join the batch right after, just before its manifest list is built.
A request counts as waiting from the moment its writer sent it, though, and it reaches the queue
only after its intake (HTTP, the staged manifest read and parsed, the data files probed), so
requests still in intake at timestamp-ms count as waiting and cannot be carried: the fraction is
below 1 by what intake takes, not only by what the batch leaves behind. Send times are the
writers' wall clock (time.time()) just before each request, on the same machine as the daemon.

Run: tests/bench/group_commit_latency.py [--writers 16,64 --appends 25 --delay-ms 50]; it builds
nothing (tests/install-deps.sh and a meson build first) and prints Markdown tables, then one
JSON line with every number.
"""
import argparse
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_common import DelayProxy, pct, ratio, rest_catalog, rest_metadata  # noqa: E402
from conftest import CATALOG_ROOTS, Daemon, make_workdir, peer  # noqa: E402
from s3_commit_latency import JavaWriter  # noqa: E402
from writers import metric_lines  # noqa: E402

NS = "bench"
KEYS = "icecommit.idempotency-keys"


def java_side(uri, proxy, n, k, table):
    """n JVMs through the proxy, each after one warm-up commit, released at once."""
    peer("create-table", "--uri", uri, "--table", f"{NS}.{table}")
    env = {"PEER_JAVA_OPTS": "-Xmx256m"}
    # --persist with --give-up: the warm-up commit is retried until it lands, a timed append that
    # Iceberg gives up on is skipped.
    writers = [JavaWriter(proxy.endpoint, table, env, k, 1, w * 1_000_000, persist=True, extra=["--give-up"],
                          timeout=3600) for w in range(n)]
    for jw in writers:
        jw.wait_ready()
    before = sum(proxy.seen.values())
    for jw in writers:
        jw.go()
    results = [jw.result() for jw in writers]
    requests = sum(proxy.seen.values()) - before
    lat = [ms for r in results for ms in r["commit-ms"]]
    # The slowest writer's commits, those given up included.
    phase_s = max(sum(r["commit-ms"]) + sum(r["failed-ms"]) for r in results) / 1000
    md = rest_metadata(uri, NS, table)
    landed = len(md["snapshots"]) - n
    assert landed == len(lat), (landed, len(lat))
    return {"appends": n * k, "landed": landed, "gave_up": sum(r["gave-up"] for r in results),
            "phase_s": phase_s, "appends_per_s": landed / phase_s, "p50_ms": pct(lat, 50),
            "p99_ms": pct(lat, 99), "mean_ms": statistics.fmean(lat), "snapshots": landed,
            "requests_per_snapshot": 1.0, "catalog_requests": requests,
            "catalog_requests_per_append": requests / (n * k)}


def ice_side(uri, proxy, work, n, k, table):
    peer("create-table", "--uri", uri, "--table", f"{NS}.{table}")
    staged = peer("stage", "--uri", uri, "--table", f"{NS}.{table}", "--files", 1, "--rows", 4,
                  "--start-id", 0, "--manifests", n * k)["manifests"]
    d = Daemon(proxy.endpoint, work, {"log.level": "notice", "storage.allowed-roots": CATALOG_ROOTS[uri]})
    sent = {}  # key -> (send wall time, latency ms, status, snapshot id)
    try:
        go = threading.Event()

        def writer(w):
            go.wait()
            for c in range(k):
                key = f"g-{w}-{c}"
                t_send = time.time()
                t0 = time.perf_counter()
                status, _, answer = d.commit(NS, table, {"idempotency-key": key,
                                                         "staged-manifests": [staged[w * k + c]["manifest"]]})
                ms = (time.perf_counter() - t0) * 1000
                sent[key] = (t_send, ms, status, answer.get("snapshot-id") if status == 200 else None)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(n)]
        for t in threads:
            t.start()
        before = sum(proxy.seen.values())
        attempts0 = sum(metric_lines(d.url, "icecommit_commit_attempts_total").values())
        start = time.perf_counter()
        go.set()
        for t in threads:
            t.join()
        phase_s = time.perf_counter() - start
        requests = sum(proxy.seen.values()) - before
        attempts = sum(metric_lines(d.url, "icecommit_commit_attempts_total").values()) - attempts0
    finally:
        d.stop()
    ok = [v for v in sent.values() if v[2] == 200]
    lat = [v[1] for v in ok]

    # Snapshots of this run, oldest first, with the requests each carried (its keys).
    md = rest_metadata(uri, NS, table)
    snaps = sorted((s for s in md["snapshots"] if KEYS in s.get("summary", {})),
                   key=lambda s: s["sequence-number"])
    carried = [[key.rsplit("/", 1)[-1] for key in s["summary"][KEYS].split(",")] for s in snaps]
    fractions = []
    for i, s in enumerate(snaps):
        t_build = s["timestamp-ms"] / 1000
        later = {key for keys in carried[i:] for key in keys}
        waiting = sum(1 for key in later if key in sent and sent[key][0] <= t_build)
        fractions.append(len(carried[i]) / waiting if waiting else 1.0)
    sizes = [len(c) for c in carried]
    return {"appends": n * k, "landed": len(ok), "gave_up": len(sent) - len(ok), "phase_s": phase_s,
            "appends_per_s": len(ok) / phase_s, "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99),
            "mean_ms": statistics.fmean(lat) if lat else float("nan"), "snapshots": len(snaps),
            "requests_per_snapshot": statistics.fmean(sizes) if sizes else 0,
            "requests_per_snapshot_max": max(sizes, default=0), "batch_sizes": sizes,
            "fraction_mean": statistics.fmean(fractions) if fractions else float("nan"),
            "fraction_median": pct(fractions, 50), "fraction_min": min(fractions, default=float("nan")),
            "fractions": [round(f, 3) for f in fractions], "attempts": attempts,
            "catalog_requests": requests, "catalog_requests_per_append": requests / (n * k)}


def print_table(n, k, delay_ms, j, i):
    print(f"\n### {n} writers x {k} appends, REST catalog {delay_ms} ms away (delay proxy)\n")
    print("| | Iceberg Java direct (FastAppend; an append Iceberg gave up on is skipped) | icecommitd | ratio icecommitd / Java |")
    print("|---|---|---|---|")
    print(f"| appends landed | {j['landed']} of {j['appends']} | {i['landed']} of {i['appends']} | |")
    print(f"| failed commits (appends given up: Java after its 4 retries, icecommitd non-200) "
          f"| {j['gave_up']} | {i['gave_up']} | |")
    print(f"| accepted appends per second | {j['appends_per_s']:.1f} | {i['appends_per_s']:.1f} "
          f"| {ratio(i['appends_per_s'], j['appends_per_s'], '{:.1f}x')} |")
    print(f"| snapshots created | {j['snapshots']} | {i['snapshots']} | {ratio(i['snapshots'], j['snapshots'])} |")
    print(f"| requests per snapshot, mean (max) | 1 (1) | {i['requests_per_snapshot']:.2f} "
          f"({i['requests_per_snapshot_max']}) | |")
    print(f"| fraction of waiting requests a snapshot carried, mean (median, min) | 1 (each snapshot "
          f"one request) | {i['fraction_mean']:.2f} ({i['fraction_median']:.2f}, {i['fraction_min']:.2f}) | |")
    print(f"| latency per append, p50 (ms) | {j['p50_ms']:.1f} | {i['p50_ms']:.1f} | {ratio(i['p50_ms'], j['p50_ms'])} |")
    print(f"| latency per append, p99 (ms) | {j['p99_ms']:.1f} | {i['p99_ms']:.1f} | {ratio(i['p99_ms'], j['p99_ms'])} |")
    print(f"| catalog requests per append (through the proxy) | {j['catalog_requests_per_append']:.2f} "
          f"| {i['catalog_requests_per_append']:.2f} | "
          f"{ratio(i['catalog_requests_per_append'], j['catalog_requests_per_append'])} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", default="16,64", help="comma-separated writer counts")
    ap.add_argument("--appends", type=int, default=25, help="appends per writer")
    ap.add_argument("--delay-ms", type=float, default=50, help="held per catalog request")
    ap.add_argument("--skip-java", action="store_true", help="icecommitd only")
    args = ap.parse_args()
    work = make_workdir("icecommit-bench-group-")
    started = time.monotonic()
    results = {}
    with rest_catalog(work) as uri:
        proxy = DelayProxy(uri, args.delay_ms / 1000).start()
        try:
            for n in (int(x) for x in args.writers.split(",")):
                t0 = time.monotonic()
                j = None if args.skip_java else java_side(uri, proxy, n, args.appends, f"java_{n}")
                i = ice_side(uri, proxy, work, n, args.appends, f"ice_{n}")
                results[n] = {"java": j, "ice": i, "seconds": time.monotonic() - t0}
                if j:
                    print_table(n, args.appends, args.delay_ms, j, i)
                else:
                    print(json.dumps(i))
        finally:
            proxy.stop()
    print(f"\n(run took {time.monotonic() - started:.0f} s)")
    print(json.dumps({"appends": args.appends, "delay_ms": args.delay_ms, "results": results}))


if __name__ == "__main__":
    main()
