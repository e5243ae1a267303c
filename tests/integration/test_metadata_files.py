# SPDX-License-Identifier: Apache-2.0
"""The embedded catalog at any table age, on local disks and on a bucket: its table cache never
hides a version another writer (Iceberg Java, another icecommitd) published between two
icecommitd commits, and with write.metadata.delete-after-commit.enabled only the current and
write.metadata.previous-versions-max previous metadata files remain."""
import glob
import json
import os
import uuid

import pytest

from conftest import Daemon, http, make_workdir, peer, pyiceberg_table, s3_key, s3_peer_env, s3_request


@pytest.fixture
def catalog(filesystem_catalog):
    return filesystem_catalog


def versions(uri, ns, name):
    return sorted(int(os.path.basename(p)[1:].split(".")[0])
                  for p in glob.glob(os.path.join(uri, ns, name, "metadata", "v*.metadata.json")))


def stage_and_commit(daemon, uri, ns, name, key, start_id, rows=3):
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", rows,
                  "--start-id", start_id)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": key,
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["status"] == "committed"
    return receipt


def test_another_writer_between_two_commits(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    stage_and_commit(daemon, uri, ns, name, "first", 0)
    before = versions(uri, ns, name)[-1]
    # Iceberg Java commits on its own, behind the catalog's cache.
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 4, "--start-id", 500)
    assert versions(uri, ns, name)[-1] == before + 1
    receipt = stage_and_commit(daemon, uri, ns, name, "second", 1000)
    assert versions(uri, ns, name)[-1] == before + 2
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    ids = sorted(r["id"] for r in dump["rows"])
    assert ids == [0, 1, 2] + [500, 501, 502, 503] + [1000, 1001, 1002]
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(10))
    snap = next(s for s in dump["snapshots"] if s["snapshot-id"] == receipt["snapshot-id"])
    assert snap["first-row-id"] == 7


SCHEMA = {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"},
]}
KEPT = 3       # write.metadata.previous-versions-max
COMMITS = 8


def create_table(daemon, ns, name, delete):
    """A v3 table created through icecommitd's create-table API, keeping KEPT previous versions
    in its metadata-log and deleting the files that drop out of it when `delete`."""
    status, _, created = http("POST", f"{daemon.url}/v1/namespaces/{ns}/tables", {
        "name": name, "schema": SCHEMA, "properties": {
            "write.metadata.previous-versions-max": str(KEPT),
            "write.metadata.delete-after-commit.enabled": "true" if delete else "false"}})
    assert status == 201, created
    return created


def assert_metadata_files(names, latest, log, delete):
    """names: the metadata/ directory's files; log: the latest version's metadata-log."""
    versions = sorted(int(n[1:].split(".")[0]) for n in names if n.endswith(".metadata.json"))
    kept = list(range(latest - KEPT, latest + 1)) if delete else list(range(1, latest + 1))
    assert versions == kept, versions
    assert "version-hint.text" in names
    assert [e["metadata-file"].rsplit("/", 1)[1] for e in log] == \
        [f"v{v}.metadata.json" for v in range(latest - KEPT, latest)], log


@pytest.mark.parametrize("delete", [True, False], ids=["delete", "keep"])
def test_previous_metadata_files_on_local_disks(catalog, daemon, delete):
    ns, name = "n_" + uuid.uuid4().hex[:8], "events"
    uri = catalog["uri"]
    create_table(daemon, ns, name, delete)
    for i in range(COMMITS):
        stage_and_commit(daemon, uri, ns, name, f"k-{i}", i * 10)
    latest = versions(uri, ns, name)[-1]
    assert latest == COMMITS + 1
    metadata_dir = os.path.join(uri, ns, name, "metadata")
    with open(os.path.join(metadata_dir, f"v{latest}.metadata.json")) as f:
        metadata = json.load(f)
    names = [n for n in os.listdir(metadata_dir) if not n.endswith(".avro") and not n.startswith(".")]
    assert_metadata_files(names, latest, metadata["metadata-log"], delete)

    # Iceberg Java (HadoopCatalog on the warehouse) and PyIceberg (by metadata path) read every
    # row of every commit, also when the old files are gone.
    expected = sorted(i * 10 + k for i in range(COMMITS) for k in range(3))
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert sorted(r["id"] for r in dump["rows"]) == expected
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(len(expected)))
    rows = pyiceberg_table(catalog, f"{ns}.{name}").scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == expected


@pytest.mark.parametrize("delete", [True, False], ids=["delete", "keep"])
def test_previous_metadata_files_on_a_bucket(s3, delete):
    from test_bucket_catalog import DataFilesRequest, list_keys, pyarrow_s3, settings, write_parquet

    warehouse = f"s3://{s3['bucket']}/{uuid.uuid4().hex[:12]}/wh"
    workdir = make_workdir("icecommit-bucket-files-")
    ns, name = "bkt", "events"
    location = f"{warehouse}/{ns}/{name}"
    fs = pyarrow_s3(s3)
    daemons = [Daemon(warehouse, workdir, settings(s3))]
    expected, behind = [], None
    try:
        create_table(daemons[0], ns, name, delete)
        for i in range(COMMITS):
            if i == COMMITS // 2:
                # Another writer on the same bucket warehouse, between two commits of the
                # first daemon, which holds the version before it in its cache.
                daemons.append(Daemon(warehouse, workdir, settings(s3)))
                ids = [900, 901]
                status, _, receipt = daemons[1].commit(ns, name, DataFilesRequest(
                    "other", *write_parquet(s3, fs, location, ids), ids).body())
                assert status == 200, receipt
                expected += ids
            ids = [i * 10 + k for k in range(3)]
            status, _, receipt = daemons[0].commit(ns, name, DataFilesRequest(
                f"k-{i}", *write_parquet(s3, fs, location, ids), ids).body())
            assert status == 200, receipt
            if i == COMMITS // 2:
                behind = receipt
            expected += ids
    finally:
        for d in daemons:
            d.stop()
    # The commit after the other writer's landed on top of it, not on the cached version.
    assert behind["sequence-number"] == COMMITS // 2 + 2, behind
    assert behind["snapshot-first-row-id"] == 3 * (COMMITS // 2) + 2, behind

    latest = COMMITS + 2
    names = [k.rsplit("/", 1)[1] for k in list_keys(s3, s3_key(s3, location) + "/metadata/")
             if "/metadata/" in k and not k.endswith(".avro")]
    last = f"{location}/metadata/v{latest}.metadata.json"
    status, body = s3_request(s3, "GET", s3_key(s3, last))
    assert status == 200, body
    metadata = json.loads(body)
    assert_metadata_files(names, latest, metadata["metadata-log"], delete)
    assert len(metadata["snapshots"]) == COMMITS + 1

    # Iceberg Java (S3FileIO, by metadata location) and PyIceberg read every row.
    dump = peer("dump", "--metadata", last, env=s3_peer_env(s3, keys=True))
    assert sorted(r["id"] for r in dump["rows"]) == sorted(expected)
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(len(expected)))
    from pyiceberg.table import StaticTable
    table = StaticTable.from_metadata(last, properties={
        "s3.endpoint": s3["endpoint"], "s3.access-key-id": s3["access_key"],
        "s3.secret-access-key": s3["secret_key"], "s3.region": s3["region"], "s3.path-style-access": "true",
        "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == sorted(expected)


def storage_requests(url):
    """icecommitd's store round trips so far, by operation (get, head, put, list, delete)."""
    _, _, text = http("GET", url + "/metrics")
    counts = {}
    for line in text.splitlines():
        if line.startswith('icecommit_storage_requests_total{operation="'):
            op = line.split('"')[1]
            counts[op] = counts.get(op, 0) + float(line.rsplit(" ", 1)[1])
    return counts


def test_bucket_commits_behind_the_cache_read_no_metadata(s3):
    """A commit on a cached table HEADs the cached version instead of reading the hint and the
    whole metadata file; with catalog.cache-tables = 0 every commit reads both."""
    from test_bucket_catalog import DataFilesRequest, pyarrow_s3, settings, write_parquet

    warehouse = f"s3://{s3['bucket']}/{uuid.uuid4().hex[:12]}/wh"
    workdir = make_workdir("icecommit-bucket-cache-")
    location = f"{warehouse}/bkt/t"
    fs = pyarrow_s3(s3)
    gets = {}
    for cache_tables in ("64", "0"):
        d = Daemon(warehouse, workdir, settings(s3, **{"catalog.cache-tables": cache_tables}))
        try:
            if cache_tables == "64":
                create_table(d, "bkt", "t", delete=True)
            for i in range(3):
                ids = [int(cache_tables) * 100 + i]
                before = storage_requests(d.url)
                status, _, receipt = d.commit("bkt", "t", DataFilesRequest(
                    f"c{cache_tables}-{i}", *write_parquet(s3, fs, location, ids), ids).body())
                assert status == 200, receipt
                after = storage_requests(d.url)
            gets[cache_tables] = {op: after.get(op, 0) - before.get(op, 0) for op in after}
        finally:
            d.stop()
    print(f"\n[bucket cache] store requests of one commit: cached {gets['64']}, uncached {gets['0']}")
    # The catalog's commit skips the hint and the metadata file (the engine builds on its own
    # table state and loads only when it has to).
    assert gets["64"]["get"] <= gets["0"]["get"] - 2, gets
