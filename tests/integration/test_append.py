# SPDX-License-Identifier: Apache-2.0
"""The append path end to end: Iceberg Java stages Parquet files and a v3 manifest, icecommitd
commits it through the real REST catalog, Iceberg Java reads every row back with _row_id and
_last_updated_sequence_number, PyIceberg and fastavro check the metadata icecommitd wrote."""
import hashlib

import fastavro
import pytest

from conftest import BACKENDS, backend_catalog, found_in_history, http, is_copy_of, peer, pyiceberg_table


@pytest.fixture(params=BACKENDS)
def catalog(request):
    return backend_catalog(request)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_append_assigns_row_lineage_read_back_by_iceberg_java(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]

    # A direct Java append first, so that next-row-id is 5 rather than 0 when icecommitd commits.
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 2, "--rows", 10,
                  "--start-id", 1000)
    manifest = staged["manifest"]
    before = sha256(manifest)

    status, _, receipt = daemon.commit(ns, name, {
        "idempotency-key": "append-1",
        "staged-manifests": [manifest],
        "snapshot-properties": {"writer": "test_append"},
    })
    assert status == 200, receipt
    assert receipt["status"] == "committed"
    assert receipt["snapshot-first-row-id"] == 5
    assert receipt["sequence-number"] == 2
    files = receipt["manifests"][0].pop("data-files")
    assert is_copy_of(receipt["manifests"][0], manifest), receipt
    assert receipt["manifests"] == [{"location": receipt["manifests"][0]["location"], "staged-location": manifest,
                                     "content": "data", "added-files": 2, "added-rows": 20,
                                     "first-row-id": 5, "last-row-id": 24}]
    # Per data file, in entry order: the id range and sequence number a reader will see.
    assert files == [{"location": f["path"], "record-count": 10, "first-row-id": 5 + 10 * k,
                      "last-row-id": 14 + 10 * k, "last-updated-sequence-number": 2}
                     for k, f in enumerate(staged["data-files"])]

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert dump["next-row-id"] == 25
    snap = next(s for s in dump["snapshots"] if s["snapshot-id"] == receipt["snapshot-id"])
    assert snap["first-row-id"] == 5 and snap["added-rows"] == 20
    assert snap["sequence-number"] == 2
    summary = snap["summary"]
    assert snap["operation"] == "append"
    assert summary["added-data-files"] == "2" and summary["added-records"] == "20"
    assert summary["total-records"] == "25" and summary["total-data-files"] == "3"
    assert summary["writer"] == "test_append"
    assert summary["icecommit.idempotency-keys"] == "append-1"

    # Every row: Java's own rows keep 0..4 at sequence 1; ours get 5 + position in manifest
    # order (file 0 rows 0..9, file 1 rows 0..9) at the commit's sequence number.
    rows = {r["id"]: r for r in dump["rows"]}
    assert len(rows) == 25
    for i in range(5):
        assert rows[i]["_row_id"] == i and rows[i]["_last_updated_sequence_number"] == 1
    for k, data_file in enumerate(staged["data-files"]):
        for pos in range(10):
            r = rows[1000 + 10 * k + pos]
            assert r["_row_id"] == 5 + 10 * k + pos, r
            assert r["_row_id"] == files[k]["first-row-id"] + pos
            assert r["_last_updated_sequence_number"] == 2, r
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(25))

    # The staged manifest is never rewritten; the table references icecommitd's copy of it.
    assert sha256(manifest) == before

    # The manifest list as fastavro decodes it: field ids and lineage values.
    with open(snap["manifest-list"], "rb") as f:
        reader = fastavro.reader(f)
        meta = reader.metadata
        entries = list(reader)
        schema = reader.writer_schema
    assert meta["format-version"] == "3"
    assert meta["first-row-id"] == "5"
    assert meta["snapshot-id"] == str(receipt["snapshot-id"])
    assert meta["sequence-number"] == "2"
    assert meta["avro.codec"] == "deflate"
    ids = {f["name"]: f["field-id"] for f in schema["fields"]}
    assert ids["first_row_id"] == 520 and ids["manifest_path"] == 500
    assert [e["manifest_path"] for e in entries][0] == receipt["manifests"][0]["location"]
    assert entries[0]["first_row_id"] == 5
    assert entries[0]["added_snapshot_id"] == receipt["snapshot-id"]
    assert entries[0]["sequence_number"] == 2 and entries[0]["min_sequence_number"] == 2
    assert entries[1]["first_row_id"] == 0          # the Java append's manifest, kept as it was
    assert entries[1]["sequence_number"] == 1

    # PyIceberg, an independent reader, sees the same lineage numbers.
    t = pyiceberg_table(catalog, f"{ns}.{name}")
    assert t.metadata.next_row_id == 25
    s = t.metadata.snapshot_by_id(receipt["snapshot-id"])
    assert s.first_row_id == 5 and s.added_rows == 20
    assert t.scan().to_arrow().num_rows == 25
    # ... and reads every snapshot: each has the rows its summary counts.
    for snap in t.metadata.snapshots:
        assert t.scan(snapshot_id=snap.snapshot_id).to_arrow().num_rows == int(snap.summary["total-records"])


def test_same_key_is_committed_once(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                  "--start-id", 1)
    body = {"idempotency-key": "once-1", "staged-manifests": [staged["manifest"]]}

    status, _, first = daemon.commit(ns, name, body)
    assert status == 200, first
    status, _, again = daemon.commit(ns, name, body)
    assert status == 200 and again["snapshot-id"] == first["snapshot-id"]

    status, _, answer = http("GET", f"{daemon.url}/v1/commits/once-1")
    assert status == 200 and answer["status"] == "committed"
    assert answer["receipt"]["snapshot-id"] == first["snapshot-id"]

    status, _, err = daemon.commit(ns, name, dict(body, **{"snapshot-properties": {"x": "y"}}))
    assert status == 409 and err["error"]["type"] == "idempotency-key-reused"

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 1 and dump["next-row-id"] == 3


def test_key_found_in_table_history_after_restart(catalog, table):
    """A fresh daemon (no memory of the key) finds it in the snapshot summaries."""
    from conftest import Daemon
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 4,
                  "--start-id", 1)
    body = {"idempotency-key": "restart-1", "staged-manifests": [staged["manifest"]]}
    d1 = Daemon(uri, catalog["dir"])
    try:
        status, _, first = d1.commit(ns, name, body)
        assert status == 200
    finally:
        d1.stop()
    d2 = Daemon(uri, catalog["dir"])
    try:
        status, headers, again = d2.commit(ns, name, body)
        assert status == 200, again
        # Rebuilt from the table: the receipt the first daemon sent, manifests and row ids too.
        assert again == first and found_in_history(headers), (again, first)
    finally:
        d2.stop()
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 1 and dump["next-row-id"] == 4


def test_commit_status_from_the_table_history(catalog, table):
    """GET /v1/commits/{key}?namespace=&table= answers from the table's history for a key the
    daemon never saw (committed by another daemon, or before a restart)."""
    from conftest import Daemon
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 1)
    d1 = Daemon(uri, catalog["dir"])
    try:
        status, _, receipt = d1.commit(ns, name, {"idempotency-key": "hist-1", "staged-manifests": [staged["manifest"]]})
        assert status == 200
    finally:
        d1.stop()
    d2 = Daemon(uri, catalog["dir"])
    try:
        status, _, answer = http("GET", f"{d2.url}/v1/commits/hist-1")
        assert status == 404 and answer["error"]["type"] == "unknown-key"
        status, headers, answer = http("GET", f"{d2.url}/v1/commits/hist-1?namespace={ns}&table={name}")
        assert status == 200 and answer["status"] == "committed", answer
        assert answer["receipt"] == receipt and found_in_history(headers), answer
        status, _, answer = http("GET", f"{d2.url}/v1/commits/never-sent?namespace={ns}&table={name}")
        assert status == 404 and answer["error"]["type"] == "unknown-key"
        status, _, answer = http("GET", f"{d2.url}/v1/commits/hist-1?namespace={ns}&table=no_such_table")
        assert status == 404 and answer["error"]["type"] == "no-such-table"
    finally:
        d2.stop()


def test_commit_to_a_new_branch_starts_from_main(catalog, daemon, table):
    """A branch that does not exist yet is created from main's head (as Iceberg Java does), its
    ids come from the one table-wide next-row-id, and main is unchanged."""
    ns, name, _ = table
    uri = catalog["uri"]
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 4, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3, "--start-id", 100)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "branch-1", "branch": "dev",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["branch"] == "dev" and receipt["manifests"][0]["first-row-id"] == 4

    dev = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", "--branch", "dev")
    assert sorted(r["id"] for r in dev["rows"]) == [0, 1, 2, 3, 100, 101, 102]
    assert sorted(r["_row_id"] for r in dev["rows"]) == list(range(7))
    assert dev["next-row-id"] == 7
    snap = next(s for s in dev["snapshots"] if s["snapshot-id"] == receipt["snapshot-id"])
    main_head = [s for s in dev["snapshots"] if s["snapshot-id"] != receipt["snapshot-id"]][0]
    assert snap["parent-snapshot-id"] == main_head["snapshot-id"]
    assert snap["summary"]["total-records"] == "7"

    main = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert sorted(r["id"] for r in main["rows"]) == [0, 1, 2, 3]


def test_v2_tables_commit_without_lineage_and_v1_tables_are_refused(catalog, daemon):
    import uuid
    uri = catalog["uri"]
    name = "t_" + uuid.uuid4().hex[:12]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 2)
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 3, "--start-id", 1)
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": f"v2-{name}",
                                                    "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["snapshot-first-row-id"] is None and "first-row-id" not in receipt["manifests"][0]
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert dump["format-version"] == 2 and sorted(r["id"] for r in dump["rows"]) == [1, 2, 3]
    assert all(r["_row_id"] is None for r in dump["rows"])
    snap = dump["snapshots"][0]
    assert snap.get("first-row-id") is None
    with open(snap["manifest-list"], "rb") as f:
        reader = fastavro.reader(f)
        assert reader.metadata["format-version"] == "2" and "first-row-id" not in reader.metadata
        assert "first_row_id" not in [x["name"] for x in reader.writer_schema["fields"]]
        assert [e["sequence_number"] for e in reader] == [1]

    name = "t_" + uuid.uuid4().hex[:12]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 1)
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 1, "--start-id", 1)
    status, _, answer = daemon.commit("ns", name, {"idempotency-key": f"v1-{name}",
                                                   "staged-manifests": [staged["manifest"]]})
    assert status == 422 and answer["error"]["type"] in ("unsupported-format-version", "invalid-manifest"), answer
