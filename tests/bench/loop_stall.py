#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: icecommitd's event loop while it commits to tables with long histories (issue 12).

For each history size (--snapshots, default 10 and 10000) and each daemon (--daemon
LABEL=BUILD_DIR[,section.key=value...], repeatable; default: this tree's build-release as it
is, and with catalog.parse-off-loop-bytes at its maximum, i.e. every catalog body parsed on the
loop as before): a v3 table on Apache Iceberg's REST catalog whose main branch has that many
snapshots (one real append through icecommitd, then snapshots added through the REST API that
reuse its manifest list: the catalog only records them, a commit reads only the head's manifest
list), then --commits appends through icecommitd one after another while a thread asks GET
/healthz every 5 ms. Reported per commit: the loop thread's CPU time (utime+stime of
/proc/PID/task/PID, the main thread, which runs the loop) and the wall time; and the slowest
/healthz answer during the commits, which is how long the loop stalled at most. Run:
tests/bench/loop_stall.py [--snapshots 10 10000 --commits 20]; it builds nothing (run
tests/install-deps.sh and a meson build first) and prints a Markdown table. A measurement, not a
test: nothing here passes or fails on a time.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from conftest import PEERS, ROOT, free_port, http, peer, rest_catalog_roots, write_daemon_config  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def loop_cpu_s(pid):
    """CPU seconds of the process's main thread (the loop), user and system."""
    with open(f"/proc/{pid}/task/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Daemon:
    def __init__(self, build, uri, work, settings):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = os.path.join(work, f"icecommitd-{self.port}.conf")
        self.log = os.path.join(work, f"icecommitd-{self.port}.log")
        write_daemon_config(config, uri, self.port, {"log.level": "notice",
                                                     "storage.allowed-roots": rest_catalog_roots(work),
                                                     **settings})
        self.proc = subprocess.Popen([os.path.join(build, "daemon", "icecommitd"), "--config", config],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("icecommitd exited: " + open(self.log).read())
            try:
                if http("GET", self.url + "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("icecommitd not ready: " + open(self.log).read())

    def commit(self, ns, name, key, manifest):
        return http("POST", f"{self.url}/v1/namespaces/{ns}/tables/{name}/commits",
                    {"idempotency-key": key, "staged-manifests": [manifest]})[0]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def grow_history(uri, ns, name, n_total):
    """Adds snapshots to main until it has n_total, each a child of the last and listing the
    head's manifest list, in commits of at most 2000."""
    path = f"{uri}/v1/namespaces/{ns}/tables/{name}"
    status, _, body = http("GET", path)
    assert status == 200, body
    md = body["metadata"]
    head = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    summary = {k: v for k, v in head["summary"].items() if not k.startswith("icecommit")}
    parent, seq, have = head["snapshot-id"], md["last-sequence-number"], len(md["snapshots"])
    ids = random.sample(range(1 << 40, 1 << 50), n_total)
    while have < n_total:
        updates = []
        for _ in range(min(2000, n_total - have)):
            seq += 1
            sid = ids[have]
            updates.append({"action": "add-snapshot", "snapshot": {
                "snapshot-id": sid, "parent-snapshot-id": parent, "sequence-number": seq,
                "timestamp-ms": head["timestamp-ms"], "manifest-list": head["manifest-list"],
                "summary": summary, "schema-id": head.get("schema-id", 0),
                "first-row-id": md["next-row-id"], "added-rows": 0}})
            parent, have = sid, have + 1
        updates.append({"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                        "snapshot-id": parent})
        status, _, body = http("POST", path, {
            "requirements": [{"type": "assert-ref-snapshot-id", "ref": "main",
                              "snapshot-id": updates[0]["snapshot"]["parent-snapshot-id"]}],
            "updates": updates}, timeout=600)
        assert status == 200, body
    status, _, body = http("GET", path)
    return len(body["metadata"]["snapshots"]), len(json.dumps(body))


class HealthPoller(threading.Thread):
    def __init__(self, url):
        super().__init__(daemon=True)
        self.url, self.stop_flag, self.worst_ms, self.n = url, threading.Event(), 0.0, 0

    def run(self):
        while not self.stop_flag.is_set():
            t0 = time.monotonic()
            status = http("GET", self.url + "/healthz", timeout=30)[0]
            assert status == 200
            self.worst_ms = max(self.worst_ms, (time.monotonic() - t0) * 1000)
            self.n += 1
            time.sleep(0.005)


def measure(label, build, settings, uri, work, n_snapshots, n_commits):
    ns, name = f"stall_{label}_{n_snapshots}_{os.getpid()}".replace("-", "_"), "t"
    peer("create-table", "--uri", uri, "--table", f"{ns}.{name}")
    staged = [m["manifest"] for m in peer("stage", "--uri", uri, "--table", f"{ns}.{name}",
                                          "--files", "1", "--rows", "4", "--start-id", "0",
                                          "--manifests", str(n_commits + 1))["manifests"]]
    d = Daemon(build, uri, work, settings)
    try:
        assert d.commit(ns, name, "seed", staged[0]) == 200
        n, size = grow_history(uri, ns, name, n_snapshots)
        poller = HealthPoller(d.url)
        poller.start()
        time.sleep(0.2)
        cpu0, t0 = loop_cpu_s(d.proc.pid), time.monotonic()
        for i in range(n_commits):
            assert d.commit(ns, name, f"c{i}", staged[i + 1]) == 200
        cpu, wall = loop_cpu_s(d.proc.pid) - cpu0, time.monotonic() - t0
        poller.stop_flag.set()
        poller.join()
    finally:
        d.stop()
    return {"daemon": label, "snapshots": n, "metadata_bytes": size, "commits": n_commits,
            "loop_cpu_ms_per_commit": cpu * 1000 / n_commits,
            "wall_ms_per_commit": wall * 1000 / n_commits,
            "healthz_worst_ms": poller.worst_ms, "healthz_polls": poller.n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--snapshots", type=int, nargs="+", default=[10, 10000])
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--daemon", action="append", default=[])
    args = ap.parse_args()
    build = os.path.join(ROOT, "build-release")
    daemons = args.daemon or [f"on-loop={build},catalog.parse-off-loop-bytes=4294967296",
                              f"default={build}"]

    work = tempfile.mkdtemp(prefix="icecommit-bench-", dir=os.path.join(ROOT, "build-tests"))
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    subprocess.run([os.path.join(PEERS, "catalog-start.sh"), work, str(port)], check=True,
                   stdout=subprocess.DEVNULL)
    rows = []
    try:
        for n in args.snapshots:
            for spec in daemons:
                label, rest = spec.split("=", 1)
                parts = rest.split(",")
                settings = dict(p.split("=", 1) for p in parts[1:])
                rows.append(measure(label, parts[0], settings, uri, work, n, args.commits))
                print(json.dumps(rows[-1]), file=sys.stderr)
    finally:
        subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), work], stdout=subprocess.DEVNULL)

    print(f"\n### {args.commits} appends one after another, v3 table, Apache Iceberg REST catalog 1.11 on loopback\n")
    print("| daemon | snapshots | metadata | loop CPU per commit | wall per commit | slowest /healthz |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['daemon']} | {r['snapshots']} | {r['metadata_bytes'] / 1e6:.2f} MB "
              f"| {r['loop_cpu_ms_per_commit']:.1f} ms | {r['wall_ms_per_commit']:.1f} ms "
              f"| {r['healthz_worst_ms']:.1f} ms |")


if __name__ == "__main__":
    main()
