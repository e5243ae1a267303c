#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Benchmark: N writer processes appending to one table in a local warehouse, no catalog
service, side by side in one run. Format version 2 on both sides: PyIceberg 0.12 cannot write
v3 metadata (iceberg-python#1551); through icecommitd its files can land in v3 tables (see the
quick start).

  peer:      N PyIceberg writers (SqlCatalog on a SQLite file, the embedded catalog PyIceberg
             offers), each K `table.append()` calls with PyIceberg's own conflict retries
  icecommit: N writers, each K times: pyarrow writes the same Parquet file, then one commit
             request with `data-files` to icecommitd on its embedded filesystem catalog

Both write one small Parquet file per append (ROWS rows), so data writing is in both timings:
wall time from the first writer's start to the last writer's end. Reported: appends that landed,
writers' appends that gave up, snapshots, appends per second, with icecommit/peer ratios, and
icecommitd's peak RSS. Run: tests/bench/local_throughput.py [--writers 8 --appends 25]; it
builds nothing (tests/install-deps.sh and a meson build first) and prints a Markdown table."""
import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
import urllib.request

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "integration"))
from conftest import ROOT, Daemon  # noqa: E402

ROWS = 4
SCHEMA = {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"},
]}


def rows(w, a):
    first = w * 1_000_000 + a * ROWS
    ids = list(range(first, first + ROWS))
    return ids, [f"row-{i}" for i in ids]


def pyiceberg_writer(args):
    """One process: K appends through PyIceberg's own optimistic commit, which retries a
    conflict itself (4 retries with backoff in 0.12); an append it gives up on is counted."""
    import logging

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.exceptions import CommitFailedException

    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    db, warehouse, w, k = args
    catalog = SqlCatalog("bench", uri=f"sqlite:///{db}", warehouse=f"file://{warehouse}")
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("data", pa.string())])
    landed = gave_up = 0
    for a in range(k):
        ids, data = rows(w, a)
        try:
            catalog.load_table("bench.py").append(pa.table({"id": ids, "data": data}, schema=schema))
            landed += 1
        except CommitFailedException:
            gave_up += 1
    return landed, gave_up


def icecommit_writer(args):
    """One process: K times a Parquet file and one commit request describing it."""
    url, location, w, k = args
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
                        pa.field("data", pa.string(), metadata={b"PARQUET:field_id": b"2"})])
    landed = 0
    for a in range(k):
        ids, data = rows(w, a)
        path = os.path.join(location, "data", f"w{w}-a{a}.parquet")
        pq.write_table(pa.table({"id": ids, "data": data}, schema=schema), path)
        body = json.dumps({"idempotency-key": f"bench-{w}-{a}", "data-files": [{
            "file-path": path, "file-format": "parquet", "record-count": ROWS,
            "file-size-in-bytes": os.path.getsize(path)}]}).encode()
        req = urllib.request.Request(f"{url}/v1/namespaces/bench/tables/ice/commits", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as r:
            landed += r.status == 200
    return landed, 0


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def timed(fn, jobs):
    start = time.monotonic()
    with multiprocessing.Pool(len(jobs)) as pool:
        results = pool.map(fn, jobs)
    return time.monotonic() - start, results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--writers", type=int, default=8)
    ap.add_argument("--appends", type=int, default=25)
    args = ap.parse_args()
    n, k = args.writers, args.appends
    work = tempfile.mkdtemp(prefix="icecommit-bench-local-", dir=os.path.join(ROOT, "build-tests"))

    # Peer: PyIceberg's SqlCatalog, table created by PyIceberg itself.
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    db, py_warehouse = os.path.join(work, "catalog.db"), os.path.join(work, "py-warehouse")
    os.makedirs(py_warehouse)
    catalog = SqlCatalog("bench", uri=f"sqlite:///{db}", warehouse=f"file://{py_warehouse}")
    catalog.create_namespace("bench")
    catalog.create_table("bench.py", Schema(NestedField(1, "id", LongType(), required=True),
                                            NestedField(2, "data", StringType(), required=False)),
                         properties={"format-version": "2"})
    py_secs, py = timed(pyiceberg_writer, [(db, py_warehouse, w, k) for w in range(n)])
    py_table = catalog.load_table("bench.py")
    py_snapshots = len(py_table.metadata.snapshots)
    py_landed, py_gave_up = (sum(r[i] for r in py) for i in range(2))
    py_rows = py_table.scan().to_arrow().num_rows

    # icecommit: the embedded filesystem catalog, table created through icecommitd.
    ice_warehouse = os.path.join(work, "ice-warehouse")
    daemon = Daemon(ice_warehouse, work, {"log.level": "notice"})
    try:
        req = urllib.request.Request(f"{daemon.url}/v1/namespaces/bench/tables", method="POST",
                                     data=json.dumps({"name": "ice", "schema": SCHEMA, "format-version": 2}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req) as r:
            location = json.loads(r.read())["location"]
        os.makedirs(os.path.join(location, "data"), exist_ok=True)
        ice_secs, ice = timed(icecommit_writer, [(daemon.url, location, w, k) for w in range(n)])
        peak = rss_kb(daemon.proc.pid)
    finally:
        daemon.stop()
    ice_landed = sum(r[0] for r in ice)
    from pyiceberg.table import StaticTable
    metadata = os.path.join(location, "metadata")
    version = max(int(f[1:-len(".metadata.json")]) for f in os.listdir(metadata)
                  if f.startswith("v") and f.endswith(".metadata.json"))
    ice_table = StaticTable.from_metadata(os.path.join(metadata, f"v{version}.metadata.json"))
    ice_snapshots = len(ice_table.metadata.snapshots)
    ice_rows = ice_table.scan().to_arrow().num_rows

    total = n * k
    py_rate, ice_rate = py_landed / py_secs, ice_landed / ice_secs
    print(f"| {n} writers x {k} appends, {ROWS} rows each | PyIceberg direct (SqlCatalog) | icecommitd (filesystem) | ratio |")
    print("|---|---|---|---|")
    print(f"| appends that landed | {py_landed} of {total} | {ice_landed} of {total} | |")
    print(f"| appends given up (CommitFailedException after the writer's own retries) | {py_gave_up} | 0 | |")
    print(f"| rows in the table | {py_rows} | {ice_rows} | |")
    print(f"| snapshots | {py_snapshots} | {ice_snapshots} | {ice_snapshots / max(py_snapshots, 1):.2f} |")
    print(f"| wall time (s) | {py_secs:.1f} | {ice_secs:.1f} | |")
    print(f"| appends landed per second | {py_rate:.1f} | {ice_rate:.1f} | {ice_rate / py_rate:.1f}x |")
    print(f"| icecommitd peak RSS | | {peak / 1024:.1f} MiB | |")


if __name__ == "__main__":
    main()
