# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the issue-12 benchmarks (group_commit_latency.py, manifest_count.py,
table_age.py, merging.py): a REST catalog server for one run, a delaying proxy, a process's CPU
time, percentiles, table metadata and a /healthz poller. Benchmarks only: no test imports it."""
import contextlib
import glob
import json
import math
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from conftest import (PEERS, filesystem_metadata_location, free_port, http,  # noqa: E402
                      register_catalog_roots, rest_catalog_roots)
from s3_proxy import S3FaultProxy  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def rest_catalog(work, name="catalog"):
    """Apache Iceberg's REST catalog server (tests/peers/catalog-start.sh) for one run: its uri."""
    d = os.path.join(work, name)
    port = free_port()
    subprocess.run([os.path.join(PEERS, "catalog-start.sh"), d, str(port)], check=True,
                   stdout=subprocess.DEVNULL, timeout=300)
    uri = f"http://127.0.0.1:{port}"
    register_catalog_roots(uri, rest_catalog_roots(d))
    try:
        yield uri
    finally:
        subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), d], stdout=subprocess.DEVNULL, timeout=60)


class DelayProxy(S3FaultProxy):
    """A forwarding HTTP proxy on loopback (tests/integration/s3_proxy.py with no fault queued)
    that holds every request `delay_s` before forwarding it: a catalog that is 50 ms away. Counts
    requests by method ("seen")."""

    def __init__(self, upstream, delay_s):
        super().__init__(upstream)
        self.delay_s = delay_s

    def _take(self, method, path):
        time.sleep(self.delay_s)  # in the request's own handler thread: requests overlap
        return super()._take(method, path)


def cpu_seconds(pid):
    """(utime+stime of /proc/<pid>/stat, every thread's, in 1/CLK_TCK ticks;
        the sum of /proc/<pid>/task/*/schedstat run times, live threads only, in ns) as seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    run_ns = 0
    for p in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(p) as f:
                run_ns += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # the thread ended meanwhile
    return ticks / CLK_TCK, run_ns / 1e9


def peer_long(*args, timeout=7200):
    """conftest.peer for the benchmarks' long Java runs (peer() stops one after 300 s)."""
    out = subprocess.run([os.path.join(PEERS, "peer.sh"), *map(str, args)], check=True,
                         capture_output=True, text=True, timeout=timeout)
    return json.loads(out.stdout)


def pct(values, p):
    """Nearest-rank percentile; nan for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def median(values):
    """The middle value, the mean of the two middle ones for an even count; nan for none."""
    return statistics.median(values) if values else float("nan")


def rest_metadata(uri, ns, name):
    status, _, body = http("GET", f"{uri}/v1/namespaces/{ns}/tables/{name}")
    assert status == 200, body
    return body["metadata"]


def table_metadata(catalog_uri, ns, name):
    """The table's metadata: from the REST catalog, or the newest vN.metadata.json of a
    filesystem warehouse."""
    if catalog_uri.startswith("http"):
        return rest_metadata(catalog_uri, ns, name)
    with open(filesystem_metadata_location(catalog_uri, f"{ns}.{name}")) as f:
        return json.load(f)


def create_table(daemon_or_catalog_url, ns, name):
    """A v3 table of the peers' layout (id long, data string) created through icecommitd (on
    its filesystem catalog); returns its location."""
    body = {"name": name, "format-version": 3, "schema": {"type": "struct", "fields": [
        {"id": 1, "name": "id", "required": True, "type": "long"},
        {"id": 2, "name": "data", "required": False, "type": "string"}]}}
    req = urllib.request.Request(f"{daemon_or_catalog_url}/v1/namespaces/{ns}/tables", method="POST",
                                 data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())["location"]


class HealthPoller:
    """Polls GET /healthz every `interval_s` in a thread while active; `longest_ms` is the
    longest time one answer took (the daemon's longest stall seen from outside, plus one
    loopback round trip), `polls` how many answered."""

    def __init__(self, url, interval_s=0.005):
        self.url, self.interval_s = url + "/healthz", interval_s
        self.longest_ms, self.polls, self.failed = 0.0, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(self.url, timeout=30) as r:
                    r.read()
                self.polls += 1
            except OSError:
                self.failed += 1
            self.longest_ms = max(self.longest_ms, (time.perf_counter() - t0) * 1000)
            self._stop.wait(self.interval_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def ratio(a, b, fmt="{:.2f}x"):
    return fmt.format(a / b) if b else "n/a"
