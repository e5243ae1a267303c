#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: commits of v3 tables on S3 (SeaweedFS) through Apache Iceberg's REST catalog, side
by side in one run: latency per commit and round trips per commit, to the object store and to
the catalog.

  peer:      Apache Iceberg Java 1.11 (`newFastAppend().appendFile(df).commit()`, S3FileIO), in
             one JVM: its data files written first, W warm-up commits, then N commits each timed
             around commit() (tests/peers/peer.sh append --timed)
  icecommit: icecommitd with the same N appends as POST /commits, each timed around the HTTP
             request, in three shapes: one staged manifest per request (written by Iceberg Java
             beforehand, not timed), committed as icecommitd's copy (the default); the same with
             commit.copy-staged-manifests = false (the staged file committed by reference: what
             the copy costs); and one `data-files` description per request (the Parquet
             file written beforehand; icecommitd checks its size with a HEAD and writes the
             manifest itself, as the Java append does)

Everything runs twice, each time against its own Apache Iceberg REST catalog server (1.11, S3FileIO
through ResolvingFileIO, credentials vended): once with nothing in between, for the latencies,
and once with every request crossing a forwarding proxy (tests/integration/s3_proxy.py, nothing
injected) that counts it, for the round trips. Both sides go through the same three proxies: the
writer's store requests (Java's S3FileIO, icecommitd), the writer's catalog requests, and the
catalog server's own store requests (the metadata files it reads and writes). Only requests made
during the timed commits are counted. Then a concurrent variant: W writers x K appends at once
(Java: W JVMs released together, each starting over an append Iceberg gave up on; icecommit: W
HTTP writers of staged manifests to one icecommitd).

Run: tests/bench/s3_commit_latency.py [--commits 50 --warmup 20 --writers 8 --appends 10]; it
builds nothing (tests/install-deps.sh, tests/peers/weed-build.sh and a meson build first) and
prints Markdown tables, then one JSON line with every number.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from conftest import (PEERS, S3_ACCESS_KEY, S3_BUCKET, S3_REGION, S3_SECRET_KEY, Daemon,  # noqa: E402
                      _s3_port, free_port, http, make_workdir, peer, rest_catalog_roots, s3_key,
                      s3_request)
from s3_proxy import S3FaultProxy  # noqa: E402
from writers import metric_lines  # noqa: E402

NS = "bench"
ROWS = 4
# Iceberg Java as a long-running writer runs it: full tiered JIT (peer.sh stops at C1 for short runs).
JAVA_OPTS = "-XX:TieredStopAtLevel=4"


class CountingProxy(S3FaultProxy):
    """S3FaultProxy with no faults queued (every request forwarded unchanged) that also logs each
    request's method and path, so a phase's requests are log[mark:]."""

    def __init__(self, upstream):
        super().__init__(upstream)
        self.log = []
        # TCP_NODELAY on the writer's side: without it, its answers (headers, then body, in two
        # writes) wait for the client's delayed ACK, ~40 ms on every kept-alive request.
        self.server.RequestHandlerClass.disable_nagle_algorithm = True

    def _take(self, method, path):
        self.log.append((method, urllib.parse.unquote(path)))  # list.append is atomic
        return super()._take(method, path)

    def mark(self):
        return len(self.log)


def store_kind(method, path):
    """GET/HEAD/PUT/POST/DELETE on an object; LIST for a GET of the bucket itself."""
    target = path.split("?", 1)[0].rstrip("/")
    return "LIST" if method == "GET" and target == f"/{S3_BUCKET}" else method


def catalog_kind(method, path):
    target = path.split("?", 1)[0]
    parts = target.strip("/").split("/")
    if target.endswith("/v1/config"):
        return "config"
    if len(parts) == 5 and parts[3] == "tables":  # v1/namespaces/{ns}/tables/{t}
        return {"GET": "load", "POST": "commit"}.get(method, f"{method} table")
    if len(parts) == 6 and parts[3] == "tables" and parts[5] == "metrics":
        return "metrics"
    return f"{method} {target}"


class Pass:
    """One catalog server and how the measured writers reach it and the store: straight
    (counted=False) or through three counting proxies: the writer's store requests, the
    writer's catalog requests and the catalog server's own store requests."""

    def __init__(self, name, s3_endpoint, counted):
        self.name, self.counted = name, counted
        self.s3_endpoint = s3_endpoint
        self.server_store = CountingProxy(s3_endpoint).start() if counted else None
        self.store_proxy = CountingProxy(s3_endpoint).start() if counted else None
        self.catalog_proxy = None
        self.dir = None
        self.port = free_port()
        self.admin = f"http://127.0.0.1:{self.port}"  # setup and checks, never counted

    def start_catalog(self, work):
        """Starts this pass's Apache Iceberg REST catalog (in the background: returns the Popen)."""
        self.dir = os.path.join(work, f"catalog-{self.name}")
        env = {**os.environ,
               "CATALOG_IO__IMPL": "org.apache.iceberg.io.ResolvingFileIO",
               "CATALOG_S3_ENDPOINT": self.server_store.endpoint if self.counted else self.s3_endpoint,
               "CATALOG_S3_PATH__STYLE__ACCESS": "true",
               "CATALOG_S3_ACCESS__KEY__ID": S3_ACCESS_KEY,
               "CATALOG_S3_SECRET__ACCESS__KEY": S3_SECRET_KEY,
               "CATALOG_CLIENT_REGION": S3_REGION,
               "CATALOG_INCLUDE__CREDENTIALS": "true"}
        return subprocess.Popen([os.path.join(PEERS, "catalog-start.sh"), self.dir, str(self.port)],
                                stdout=subprocess.DEVNULL, env=env)

    def catalog_started(self):
        if self.counted:
            self.catalog_proxy = CountingProxy(self.admin).start()

    @property
    def catalog(self):
        return self.catalog_proxy.endpoint if self.counted else self.admin

    @property
    def store(self):
        return self.store_proxy.endpoint if self.counted else self.s3_endpoint

    def proxies(self):
        return [p for p in (self.store_proxy, self.catalog_proxy, self.server_store) if p]

    def marks(self):
        return [p.mark() for p in (self.store_proxy, self.catalog_proxy, self.server_store)] if self.counted else []

    def counts(self, marks):
        """Requests since marks: (store, catalog, catalog server's store) Counters by kind."""
        if not self.counted:
            return Counter(), Counter(), Counter()
        store, catalog, server = (p.log[m:] for p, m in
                                  zip((self.store_proxy, self.catalog_proxy, self.server_store), marks))
        return (Counter(store_kind(*r) for r in store), Counter(catalog_kind(*r) for r in catalog),
                Counter(store_kind(*r) for r in server))

    def java_env(self):
        """The measured Java writers' catalog properties (keys come vended by the catalog)."""
        return {**self.setup_env(), "PEER_CATALOG_S3_ENDPOINT": self.store, "PEER_JAVA_OPTS": JAVA_OPTS}

    def setup_env(self):
        """Creating tables and staging: straight to the store, peer.sh's own JVM options."""
        return {"PEER_CATALOG_S3_ENDPOINT": self.s3_endpoint, "PEER_CATALOG_S3_PATH__STYLE__ACCESS": "true",
                "PEER_CATALOG_CLIENT_REGION": S3_REGION}

    def daemon_settings(self):
        return {"log.level": "notice", "s3.endpoint": self.store, "s3.path-style-access": "true",
                "client.region": S3_REGION, "catalog.access-delegation": "vended-credentials",
                "storage.allowed-roots": rest_catalog_roots(self.dir, f"s3://{S3_BUCKET}")}


def storage_metrics(url):
    """icecommitd's own icecommit_storage_requests_total, {operation: count} over outcomes."""
    out = Counter()
    for labels, value in metric_lines(url, "icecommit_storage_requests_total").items():
        out[labels.split('operation="')[1].split('"')[0]] += value
    return out


def commit_attempts(url):
    """icecommitd's catalog commit attempts (icecommit_commit_attempts_total over outcomes)."""
    return sum(metric_lines(url, "icecommit_commit_attempts_total").values())


def java_attempts(results):
    """Catalog commit attempts of Java writers: those of each landed commit (Iceberg's own
    CommitReport) plus 5 (1 + commit.retry.num-retries 4) for each append Iceberg gave up on."""
    return sum(sum(a or 1 for a in r["attempts"]) + 5 * r.get("gave-up", 0) for r in results)


def snapshot_count(catalog_uri, name):
    status, _, body = http("GET", f"{catalog_uri}/v1/namespaces/{NS}/tables/{name}")
    assert status == 200, body
    return len(body["metadata"].get("snapshots", []))


def data_files(catalog_uri, name):
    """total-data-files of the table's current snapshot: the appends that landed."""
    status, _, body = http("GET", f"{catalog_uri}/v1/namespaces/{NS}/tables/{name}")
    assert status == 200, body
    md = body["metadata"]
    current = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    return int(current["summary"]["total-data-files"])


def pct(values, p):
    """Nearest-rank percentile."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


class JavaWriter:
    """One JVM of `peer.sh append --timed --wait-stdin`: started, ready after its data files and
    warm-up commits, then go() starts its timed commits and result() returns its JSON answer."""

    def __init__(self, catalog_uri, table, env, count, warmup, start_id, persist, extra=(), timeout=600):
        """extra: more peer.sh append options (e.g. --give-up); timeout: for result(), s."""
        self.timeout = timeout
        cmd = [os.path.join(PEERS, "peer.sh"), "append", "--uri", catalog_uri, "--table", f"{NS}.{table}",
               "--rows", str(ROWS), "--start-id", str(start_id), "--count", str(count), "--timed",
               "--warmup", str(warmup), "--wait-stdin"] + (["--persist"] if persist else []) + list(extra)
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env={**os.environ, **env})
        self.err = []

    def wait_ready(self):
        for line in self.proc.stderr:
            if line.strip() == "peer: ready":
                return
            self.err.append(line)
        self.proc.wait()
        raise RuntimeError(f"Java writer exited {self.proc.returncode} before it was ready:\n" + "".join(self.err))

    def go(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def result(self):
        out, err = self.proc.communicate(timeout=self.timeout)
        if self.proc.returncode != 0:
            raise RuntimeError(f"Java writer exited {self.proc.returncode}:\n" + "".join(self.err) + err)
        return json.loads(out)


def stage(catalog_uri, table, env, manifests, start_id=0):
    return peer("stage", "--uri", catalog_uri, "--table", f"{NS}.{table}", "--files", 1, "--rows", ROWS,
                "--start-id", start_id, "--manifests", manifests, env=env)["manifests"]


def staged_body(key, m):
    return {"idempotency-key": key, "staged-manifests": [m["manifest"]]}


def data_files_body(key, m):
    f = m["data-files"][0]
    return {"idempotency-key": key, "data-files": [{
        "file-path": f["path"], "file-format": "parquet", "record-count": f["record-count"],
        "file-size-in-bytes": f["file-size-in-bytes"]}]}


def ice_commit(d, table, body, receipts=None):
    t0 = time.perf_counter()
    status, _, answer = d.commit(NS, table, body)
    ms = (time.perf_counter() - t0) * 1000
    assert status == 200, answer
    if receipts is not None:
        receipts.append(answer)
    return ms


def object_size(s3_endpoint, location):
    s3 = {"endpoint": s3_endpoint, "bucket": S3_BUCKET, "access_key": S3_ACCESS_KEY,
          "secret_key": S3_SECRET_KEY, "region": S3_REGION}
    status, head = s3_request(s3, "HEAD", s3_key(s3, location))
    assert status == 200, head
    return int(next(line.split(b":", 1)[1] for line in head.splitlines()
                    if line.lower().startswith(b"content-length:")))


def copied_bytes(s3_endpoint, receipts):
    """Bytes icecommitd wrote per commit for its copies of the staged manifests, and what the
    staged manifests themselves weigh."""
    copies = [m["location"] for r in receipts for m in r["manifests"] if "staged-location" in m]
    staged = [m["staged-location"] for r in receipts for m in r["manifests"] if "staged-location" in m]
    if not copies:
        return {"copy_bytes": 0, "staged_bytes": 0}
    sample = min(len(copies), 5)
    return {"copy_bytes": statistics.fmean(object_size(s3_endpoint, c) for c in copies[:sample]),
            "staged_bytes": statistics.fmean(object_size(s3_endpoint, s) for s in staged[:sample])}


def side(latencies, commits, counts, snapshots, extra=None):
    store, catalog, server = counts
    return {"commits": commits, "median_ms": statistics.median(latencies), "p95_ms": pct(latencies, 95),
            "mean_ms": statistics.fmean(latencies), "latencies_ms": [round(x, 1) for x in latencies],
            "store": dict(store), "catalog": dict(catalog),
            "server_store": dict(server), "snapshots": snapshots, **(extra or {})}


def per(counter, n):
    return sum(counter.values()) / n


def breakdown(counter, n):
    return ", ".join(f"{k} {v / n:.2f}".replace(".00", "") for k, v in sorted(counter.items())) or "none"


def sequential(args, ps):
    n, w = args.commits, args.warmup
    out = {}

    # Iceberg Java: one JVM, W warm-up commits, then N timed ones.
    jw = JavaWriter(ps.catalog, "java", ps.java_env(), n, w, 0, persist=False)
    jw.wait_ready()
    marks = ps.marks()
    jw.go()
    res = jw.result()
    out["java"] = side(res["commit-ms"], n, ps.counts(marks), snapshot_count(ps.admin, "java") - w,
                       {"attempts": java_attempts([res])})

    # icecommitd: the appends staged beforehand (not timed), N timed POSTs after W warm-ups.
    for shape, body, settings in (("ice_staged", staged_body, {}),
                                  ("ice_ref", staged_body, {"commit.copy-staged-manifests": "false"}),
                                  ("ice_files", data_files_body, {})):
        staged = stage(ps.admin, shape, ps.setup_env(), n + w)
        d = Daemon(ps.catalog, args.work, {**ps.daemon_settings(), **settings})
        receipts = []
        try:
            for i in range(w):
                ice_commit(d, shape, body(f"w-{i}", staged[i]))
            before, attempts = storage_metrics(d.url), commit_attempts(d.url)
            marks = ps.marks()
            lat = [ice_commit(d, shape, body(f"c-{i}", staged[i]), receipts) for i in range(w, w + n)]
            counts = ps.counts(marks)
            own, attempts = storage_metrics(d.url) - before, commit_attempts(d.url) - attempts
        finally:
            d.stop()
        out[shape] = side(lat, n, counts, snapshot_count(ps.admin, shape) - w,
                          {"attempts": attempts, "daemon_storage_metrics": dict(own),
                           **copied_bytes(ps.s3_endpoint, receipts)})
    return out


def concurrent(args, ps):
    nw, k = args.writers, args.appends
    out = {}

    # Iceberg Java: nw JVMs, each ready after its data files and one warm-up commit, released at
    # once; an append Iceberg gives up on (CommitFailedException after its 4 retries) is started
    # over (--persist), so every append lands and its latency includes the lost races.
    writers = [JavaWriter(ps.catalog, "java_conc", ps.java_env(), k, 1, i * 1_000_000, persist=True)
               for i in range(nw)]
    for jw in writers:
        jw.wait_ready()
    marks = ps.marks()
    for jw in writers:
        jw.go()
    results = [jw.result() for jw in writers]
    counts = ps.counts(marks)
    lat = [ms for r in results for ms in r["commit-ms"]]
    phase_s = max(sum(r["commit-ms"]) for r in results) / 1000  # the slowest writer's commits
    out["java"] = side(lat, nw * k, counts, snapshot_count(ps.admin, "java_conc") - nw,
                       {"landed": data_files(ps.admin, "java_conc") - nw, "attempts": java_attempts(results),
                        "gave_up": sum(r["gave-up"] for r in results), "phase_s": phase_s,
                        "appends_per_s": nw * k / phase_s})

    # icecommitd: nw HTTP writers, each k staged manifests, released at once.
    staged = stage(ps.admin, "ice_conc", ps.setup_env(), nw * k + 1)
    d = Daemon(ps.catalog, args.work, ps.daemon_settings())
    try:
        ice_commit(d, "ice_conc", staged_body("warm", staged[-1]))
        go = threading.Event()
        lat_by_writer = [[] for _ in range(nw)]

        def writer(i):
            go.wait()
            for c in range(k):
                lat_by_writer[i].append(ice_commit(d, "ice_conc", staged_body(f"c-{i}-{c}", staged[i * k + c])))

        threads = [threading.Thread(target=writer, args=(i,)) for i in range(nw)]
        for t in threads:
            t.start()
        attempts = commit_attempts(d.url)
        marks = ps.marks()
        go.set()
        for t in threads:
            t.join()
        counts = ps.counts(marks)
        attempts = commit_attempts(d.url) - attempts
    finally:
        d.stop()
    lat = [ms for lw in lat_by_writer for ms in lw]
    phase_s = max(sum(lw) for lw in lat_by_writer) / 1000
    out["ice_staged"] = side(lat, nw * k, counts, snapshot_count(ps.admin, "ice_conc") - 1,
                             {"landed": data_files(ps.admin, "ice_conc") - 1, "attempts": attempts, "gave_up": 0,
                              "phase_s": phase_s, "appends_per_s": nw * k / phase_s})
    return out


def run_pass(args, ps):
    prefix = f"s3://{S3_BUCKET}/bench-{ps.name}-{uuid.uuid4().hex[:8]}"
    for t in ["java", "ice_staged", "ice_ref", "ice_files"] + (["java_conc", "ice_conc"] if args.writers else []):
        peer("create-table", "--uri", ps.admin, "--table", f"{NS}.{t}", "--format-version", 3,
             "--location", f"{prefix}/{t}", env=ps.setup_env())
    return {"sequential": sequential(args, ps), "concurrent": concurrent(args, ps) if args.writers else None}


def ratio(ice, java):
    return f"{ice / java:.2f}x" if java else "n/a"


def print_sequential(direct, counted, n, w):
    sides = ("java", "ice_staged", "ice_ref", "ice_files")
    print(f"\n### One writer, {n} sequential commits of one data file ({ROWS} rows) each, "
          f"after {w} warm-up commits; v3 tables on S3\n")
    print("| | Iceberg Java (FastAppend) | icecommitd, staged manifest (copied) "
          "| icecommitd, staged manifest by reference (copy-staged-manifests = false) | icecommitd, data-files "
          "| ratio icecommitd / Java (copied, by reference, data-files) |")
    print("|---|---|---|---|---|---|")

    def row(label, r, fn, fmt="{:.1f}"):
        j, s, ref, f = (fn(r[x]) for x in sides)
        print(f"| {label} | {fmt.format(j)} | {fmt.format(s)} | {fmt.format(ref)} | {fmt.format(f)} "
              f"| {ratio(s, j)}, {ratio(ref, j)}, {ratio(f, j)} |")

    def kinds(label, r, key):
        print(f"| {label} | " + " | ".join(breakdown(Counter(r[x][key]), n) for x in sides) + " | |")

    row("commit latency, median (ms)", direct, lambda x: x["median_ms"])
    row("commit latency, p95 (ms)", direct, lambda x: x["p95_ms"])
    row("commit latency through the counting proxies, median (ms)", counted, lambda x: x["median_ms"])
    row("writer's store requests per commit", counted, lambda x: per(Counter(x["store"]), n), "{:.2f}")
    kinds("... by kind", counted, "store")
    row("writer's catalog requests per commit", counted, lambda x: per(Counter(x["catalog"]), n), "{:.2f}")
    kinds("... by kind", counted, "catalog")
    row("catalog server's store requests per commit", counted, lambda x: per(Counter(x["server_store"]), n),
        "{:.2f}")
    kinds("... by kind", counted, "server_store")
    print("| snapshots created | " + " | ".join(str(direct[x]["snapshots"]) for x in sides) + " | |")
    c = direct["ice_staged"]
    print(f"| bytes icecommitd writes per commit for its copy (the staged manifest's) | | "
          f"{c['copy_bytes']:.0f} ({c['staged_bytes']:.0f}) | 0 | | |")


def print_concurrent(direct, counted, nw, k):
    n = nw * k
    print(f"\n### {nw} writers x {k} appends at once, one v3 table on S3\n")
    print("| | Iceberg Java (FastAppend; an append Iceberg gives up on is started over) "
          "| icecommitd, staged manifests | ratio icecommitd / Java |")
    print("|---|---|---|---|")

    def row(label, r, fn, fmt="{:.1f}", with_ratio=True):
        j, s = fn(r["java"]), fn(r["ice_staged"])
        print(f"| {label} | {fmt.format(j)} | {fmt.format(s)} | {ratio(s, j) if with_ratio else ''} |")

    def kinds(label, r, key):
        print(f"| {label} | {breakdown(Counter(r['java'][key]), n)} | "
              f"{breakdown(Counter(r['ice_staged'][key]), n)} | |")

    print(f"| appends landed | {direct['java']['landed']} of {n} | {direct['ice_staged']['landed']} of {n} | |")
    row("appends Iceberg gave up on (CommitFailedException after 4 retries), started over", direct,
        lambda x: x["gave_up"], "{}", False)
    row("catalog commit attempts", direct, lambda x: x["attempts"], "{:.0f}")
    j, c = direct["java"]["snapshots"], direct["ice_staged"]["snapshots"]
    print(f"| snapshots created (in the counted pass) | {j} ({counted['java']['snapshots']}) "
          f"| {c} ({counted['ice_staged']['snapshots']}) | {ratio(c, j)} |")
    row("latency per append, median (ms)", direct, lambda x: x["median_ms"])
    row("latency per append, p95 (ms)", direct, lambda x: x["p95_ms"])
    row("appends per second (commit phase)", direct, lambda x: x["appends_per_s"])
    row("writer's store requests per append", counted, lambda x: per(Counter(x["store"]), n), "{:.2f}")
    kinds("... by kind", counted, "store")
    row("writer's catalog requests per append", counted, lambda x: per(Counter(x["catalog"]), n), "{:.2f}")
    kinds("... by kind", counted, "catalog")
    row("catalog server's store requests per append", counted, lambda x: per(Counter(x["server_store"]), n),
        "{:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=50, help="timed sequential commits per side")
    ap.add_argument("--warmup", type=int, default=20, help="untimed commits before them")
    ap.add_argument("--writers", type=int, default=8, help="concurrent variant; 0 skips it")
    ap.add_argument("--appends", type=int, default=10, help="appends per concurrent writer")
    args = ap.parse_args()
    args.work = make_workdir("icecommit-bench-s3-")
    started = time.monotonic()

    s3_dir = os.path.join(args.work, "s3")
    s3_port = _s3_port()
    s3_proc = subprocess.Popen([os.path.join(PEERS, "s3-start.sh"), s3_dir, str(s3_port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    s3_endpoint = f"http://127.0.0.1:{s3_port}"
    # Two catalog servers: latency is measured with nothing in between; round trips in a second
    # pass where every request crosses a counting proxy (which costs ~0.5 ms per request).
    passes = [Pass("direct", s3_endpoint, counted=False), Pass("counted", s3_endpoint, counted=True)]
    try:
        starting = [ps.start_catalog(args.work) for ps in passes]  # while SeaweedFS starts
        for ps, proc in zip(passes, starting):
            if proc.wait(timeout=300) != 0:
                raise RuntimeError(f"tests/peers/catalog-start.sh {ps.dir} {ps.port} failed")
            ps.catalog_started()
        s3_out = s3_proc.communicate(timeout=180)[0]
        if s3_proc.returncode != 0:
            raise RuntimeError("tests/peers/s3-start.sh failed:\n" + s3_out)

        results = {ps.name: run_pass(args, ps) for ps in passes}
        direct, counted = results["direct"], results["counted"]
        print_sequential(direct["sequential"], counted["sequential"], args.commits, args.warmup)
        if args.writers:
            print_concurrent(direct["concurrent"], counted["concurrent"], args.writers, args.appends)
        print(f"\n(run took {time.monotonic() - started:.0f} s)")
        print(json.dumps({"commits": args.commits, "warmup": args.warmup, "writers": args.writers,
                          "appends": args.appends, **results}))
    finally:
        for ps in passes:
            for p in ps.proxies():
                p.stop()
            if ps.dir:
                subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), ps.dir], stdout=subprocess.DEVNULL)
        if s3_proc.poll() is None:
            s3_proc.communicate(timeout=180)
        subprocess.run([os.path.join(PEERS, "s3-stop.sh"), s3_dir], stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
