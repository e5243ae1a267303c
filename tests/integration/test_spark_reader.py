# SPDX-License-Identifier: Apache-2.0
"""Spark 4.0 as a reader: pyspark (PyPI) with Iceberg 1.11's Spark runtime (Maven Central,
tests/peers/spark-fetch.sh, handed over with spark.jars) reads tables icecommitd committed, through
the same REST catalog, and returns _row_id and _last_updated_sequence_number for every row.

Each row's values are predicted from the commit rules applied to what the table records (each
snapshot's first-row-id, its manifest list in order, each manifest's files and record counts: the
cursor of docs/design.md's row-id assignment and the spec's inheritance on read, recomputed here,
not read back), checked against the daemon's receipts (every receipted data file's range and
sequence number), and then Spark's answer and Iceberg Java's reader (peer.sh dump) must both
equal the prediction, row by row, keyed by (_file, _pos).

One Spark session for the module (local[1], 512 MB, UI off, loopback only); the module takes
30-45 s here on 2 cores, about 9 s of it Spark (4 s to start the JVM, 3.5 s for the first read,
well under 1 s for each further one)."""
import concurrent.futures
import os
import subprocess
import time
import uuid

import fastavro
import pytest

from conftest import PEERS, http, make_workdir, peer
from faults import clear_faults, set_faults
from test_data_files import describe, write_parquet

CATALOG = "lake"  # the Spark catalog name: tables are lake.<namespace>.<table>


def spark_settings(uri):
    """The Spark settings of the REST catalog, as docs/operations.md shows them."""
    prefix = f"spark.sql.catalog.{CATALOG}"
    return {
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": "rest",
        f"{prefix}.uri": uri,
        # Without it Spark keeps a table's metadata for the session and misses later commits.
        f"{prefix}.cache-enabled": "false",
    }


@pytest.fixture(scope="module")
def spark(rest_catalog):
    """A local Spark session with the REST catalog as `lake`. Fails (never skips) when pyspark or
    the runtime jar is missing: tests/install-deps.sh installs both."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError as e:
        pytest.fail(f"pyspark is not installed ({e}): run tests/install-deps.sh", pytrace=False)
    fetch = os.path.join(PEERS, "spark-fetch.sh")
    subprocess.run([fetch], check=True, timeout=600)
    jar = subprocess.run([fetch, "--path"], check=True, capture_output=True,
                         text=True).stdout.strip()
    workdir = make_workdir("icecommit-spark-")
    # The driver binds to loopback only (without SPARK_LOCAL_IP Spark picks the host's first
    # interface); its scratch files stay in build-tests/ (spark.local.dir would warn in local mode).
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_DIRS": os.path.join(workdir, "local")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    builder = (SparkSession.builder.master("local[1]").appName("icecommit-spark-reader")
               .config("spark.jars", jar)
               .config("spark.driver.memory", "512m")
               .config("spark.driver.host", "127.0.0.1")
               .config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "1")
               .config("spark.sql.warehouse.dir", os.path.join(workdir, "warehouse")))
    for key, value in spark_settings(rest_catalog["uri"]).items():
        builder = builder.config(key, value)
    started = time.monotonic()
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    print(f"spark session started in {time.monotonic() - started:.1f} s")
    try:
        yield session
    finally:
        session.stop()
        # The JVM would otherwise live as long as pytest: it exits when its stdin closes.
        gateway = SparkContext._gateway
        if gateway is not None:
            proc = gateway.proc
            gateway.shutdown()
            SparkContext._gateway = SparkContext._jvm = None
            proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=60)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def avro_records(path):
    with open(path.removeprefix("file:"), "rb") as f:
        return list(fastavro.reader(f))


def predict(uri, ident, ref="main"):
    """{(data file, position): (_row_id, _last_updated_sequence_number)} for every live row of
    `ref`, from the commit rules: along the ref's ancestry, oldest first, each snapshot's list
    keeps the first_row_id a manifest had in the parent's list and gives every other data
    manifest the cursor (from the snapshot's first-row-id, advanced by added + existing rows, in
    list order); the snapshot's added-rows is what the cursor moved. In a manifest, each file
    without a first_row_id gets the manifest's plus the record counts of the files before it; a
    row's id is its file's plus its position, its sequence number the file's data sequence number
    (the list entry's for an added file). A null first_row_id (a v2 snapshot) reads as null for
    both. Asserts that the table recorded exactly these numbers."""
    dump = peer("dump", "--uri", uri, "--table", ident, "--branch", ref, "--no-rows")
    snapshots = {s["snapshot-id"]: s for s in dump["snapshots"]}
    chain, sid = [], dump["ref-snapshot-id"]
    while sid is not None:
        chain.append(snapshots[sid])
        sid = snapshots[sid]["parent-snapshot-id"]
    chain.reverse()
    parent = {}
    for snap in chain:
        entries = avro_records(snap["manifest-list"])
        start = cursor = snap["first-row-id"]
        assigned = {}
        for e in entries:
            path = e["manifest_path"]
            if e["content"] != 0 or cursor is None:
                expected = None
            elif parent.get(path) is not None:
                expected = parent[path]
            else:
                expected = cursor
                cursor += e["added_rows_count"] + e["existing_rows_count"]
            got = e.get("first_row_id")
            assert got == expected, (snap["snapshot-id"], path, got, expected)
            assigned[path] = expected
        if start is not None:
            assert snap["added-rows"] == cursor - start, snap
        parent = assigned

    rows = {}
    for e in entries:
        if e["content"] != 0:
            continue
        next_id = e.get("first_row_id")
        for entry in avro_records(e["manifest_path"]):
            assert entry["status"] in (0, 1), entry  # nothing deleted in these tables
            f = entry["data_file"]
            first = f.get("first_row_id")
            if first is None and next_id is not None:
                first = next_id
                next_id += f["record_count"]
            seq = entry["sequence_number"]
            if seq is None:
                assert entry["status"] == 1, entry
                seq = e["sequence_number"]
            for pos in range(f["record_count"]):
                key = (f["file_path"], pos)
                assert key not in rows, key
                rows[key] = (None, None) if first is None else (first + pos, seq)
    return rows


def check_receipts(predicted, receipts):
    """Every data file a receipt names holds exactly its receipted range, contiguous within each
    manifest, with the receipt's sequence number."""
    n = 0
    for r in receipts:
        for m in r["manifests"]:
            next_id = m["first-row-id"]
            for f in m["data-files"]:
                seq = r["sequence-number"]
                assert f["first-row-id"] == next_id and f["last-updated-sequence-number"] == seq, f
                assert f["last-row-id"] == f["first-row-id"] + f["record-count"] - 1, f
                for pos in range(f["record-count"]):
                    assert predicted[(f["location"], pos)] == (f["first-row-id"] + pos, seq)
                next_id += f["record-count"]
                n += f["record-count"]
            assert next_id - 1 == m["last-row-id"], m
    return n


def java_rows(uri, ident, ref="main"):
    """{(file, pos): (id, _row_id, _last_updated_sequence_number)} as Iceberg Java reads them."""
    rows = peer("dump", "--uri", uri, "--table", ident, "--branch", ref)["rows"]
    out = {(r["file"], r["pos"]): (r["id"], r["_row_id"], r["_last_updated_sequence_number"])
           for r in rows}
    assert len(out) == len(rows)
    return out


def spark_rows(spark, ident, ref=None):
    """The same as Spark reads them (`ref`: a branch, read as lake.<ns>.<table>.branch_<ref>)."""
    table = f"{CATALOG}.{ident}" + (f".branch_{ref}" if ref else "")
    rows = spark.sql("SELECT id, _row_id, _last_updated_sequence_number, _file, _pos "
                     f"FROM {table}").collect()
    out = {(r["_file"], r["_pos"]): (r["id"], r["_row_id"], r["_last_updated_sequence_number"])
           for r in rows}
    assert len(out) == len(rows)
    return out


def check_readers(spark, uri, ident, ref="main"):
    """Spark and Iceberg Java both read exactly the prediction; returns (Spark's rows, the
    prediction)."""
    predicted = predict(uri, ident, ref)
    got = spark_rows(spark, ident, None if ref == "main" else ref)
    assert {k: v[1:] for k, v in got.items()} == predicted, ref
    assert got == java_rows(uri, ident, ref), ref
    return got, predicted


def commit(daemon, ns, name, key, branch=None, staged=(), data_files=()):
    body = {"idempotency-key": key}
    if branch:
        body["branch"] = branch
    if staged:
        body["staged-manifests"] = [s["manifest"] for s in staged]
    if data_files:
        body["data-files"] = list(data_files)
    status, _, receipt = daemon.commit(ns, name, body)
    assert status == 200, receipt
    return receipt


def test_spark_reads_lineage_of_appends_batches_and_a_branch(rest_catalog, daemon, spark):
    """A v3 table: Iceberg Java's own append, a request of two staged manifests, a snapshot of
    three writers' requests, described data files (icecommitd writes their manifest), a branch
    icecommitd creates, and main moving on after the fork."""
    uri, ns = rest_catalog["uri"], "ns"
    name = "sp_" + uuid.uuid4().hex[:10]
    ident = f"{ns}.{name}"
    created = peer("create-table", "--uri", uri, "--table", ident, "--format-version", 3)
    peer("append", "--uri", uri, "--table", ident, "--rows", 3, "--start-id", 0)
    stage = ["stage", "--uri", uri, "--table", ident]
    two = peer(*stage, "--files", 2, "--rows", 3, "--start-id", 100, "--manifests", 2)["manifests"]
    one = peer(*stage, "--files", 1, "--rows", 2, "--start-id", 200, "--manifests", 6)["manifests"]

    main = [commit(daemon, ns, name, "sp-two", staged=two)]
    # The first batch request is held 1 s in the catalog; the other three arrive meanwhile and
    # go out together in the next snapshot.
    set_faults(uri, commit=["delay-1000"], table=ident)
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            first = pool.submit(commit, daemon, ns, name, "sp-b0", staged=one[0:1])
            time.sleep(0.3)
            rest = [pool.submit(commit, daemon, ns, name, f"sp-b{i}", staged=one[i:i + 1])
                    for i in range(1, 4)]
            batch = [first.result()] + [f.result() for f in rest]
    finally:
        clear_faults(uri)
    assert sorted(r["batch-requests"] for r in batch) == [1, 3, 3, 3], batch
    assert len({r["snapshot-id"] for r in batch[1:]}) == 1
    main += batch
    ids_a, ids_b = list(range(300, 305)), list(range(310, 313))
    a, b = write_parquet(created["location"], ids_a), write_parquet(created["location"], ids_b)
    main.append(commit(daemon, ns, name, "sp-df",
                       data_files=[describe(a, ids_a), describe(b, ids_b)]))
    branch = commit(daemon, ns, name, "sp-branch", branch="audit", staged=one[4:5])
    assert branch["branch"] == "audit"
    main.append(commit(daemon, ns, name, "sp-last", staged=one[5:6]))

    seen = {}
    for ref, receipts in (("main", main), ("audit", main[:-1] + [branch])):
        got, predicted = check_readers(spark, uri, ident, ref)
        # Java's 3 rows are in no receipt; everything else is.
        assert check_receipts(predicted, receipts) == len(got) - 3
        assert len(got) == 33
        for i, row_id, _ in got.values():
            assert seen.setdefault(row_id, i) == i  # one id names one row across branches
    next_row_id = peer("dump", "--uri", uri, "--table", ident, "--no-rows")["next-row-id"]
    assert sorted(seen) == list(range(next_row_id)) and next_row_id == 35


def test_spark_reads_lineage_of_an_upgraded_table(rest_catalog, daemon, spark):
    """A v2 table (two Java appends, one icecommitd commit), upgraded to v3 by icecommitd: Spark
    reads null lineage until the first v3 commit, which gives every existing row an id; then the
    ids and sequence numbers of the old rows are as predicted too."""
    uri, ns = rest_catalog["uri"], "ns"
    name = "su_" + uuid.uuid4().hex[:10]
    ident = f"{ns}.{name}"
    peer("create-table", "--uri", uri, "--table", ident, "--format-version", 2)
    peer("append", "--uri", uri, "--table", ident, "--rows", 3, "--start-id", 0, "--count", 2)
    staged = peer("stage", "--uri", uri, "--table", ident, "--files", 1, "--rows", 4,
                  "--start-id", 20, "--manifests", 2)["manifests"]
    v2 = commit(daemon, ns, name, "su-v2", staged=staged[0:1])
    assert v2["snapshot-first-row-id"] is None
    status, _, done = http("POST", f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/upgrade",
                           {"format-version": 3, "dry-run": False})
    assert status == 200 and done["status"] == "upgraded", done

    before, _ = check_readers(spark, uri, ident)
    assert len(before) == 10 and all(v[1:] == (None, None) for v in before.values()), before

    v3 = commit(daemon, ns, name, "su-v3", staged=staged[1:2])
    assert v3["snapshot-first-row-id"] == 0
    after, predicted = check_readers(spark, uri, ident)
    assert check_receipts(predicted, [v3]) == 4
    assert len(after) == 14 and sorted(v[1] for v in after.values()) == list(range(14))
    # The old rows keep their data sequence numbers (1, 2, 3); only the new ones have 4.
    assert sorted({v[2] for v in after.values()}) == [1, 2, 3, 4]
