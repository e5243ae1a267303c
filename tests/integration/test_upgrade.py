# SPDX-License-Identifier: Apache-2.0
"""Format upgrade v2 -> v3 through icecommitd (POST .../upgrade): a v2 table written by Iceberg Java
(and once by icecommitd) over several snapshots, the last of them holding five manifests; a dry run
reports exactly what it sees and changes nothing; the real run commits upgrade-format-version; the
first icecommitd commit afterwards gives every existing row an id, in manifest-list order (the new
manifest first, then the parent's), and Iceberg Java reads every row's _row_id and
_last_updated_sequence_number (the data sequence number of its file) exactly as predicted."""
import uuid

import fastavro
from pyiceberg.catalog.rest import RestCatalog

from conftest import http, peer


def upgrade(daemon, ns, name, body):
    return http("POST", f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/upgrade", body)


def list_entries(path):
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return reader.metadata, list(reader)


def make_v2_table(uri, daemon):
    """5 snapshots: three Java appends (ids 0-8, 3 rows each), one icecommitd commit (ids 20-23 in
    two files), one Java append (ids 50-54). Returns the table name."""
    name = "u_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 2)
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 3, "--start-id", 0, "--count", 3)
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 2, "--rows", 2, "--start-id", 20)
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": f"v2-{name}",
                                                    "staged-manifests": [staged["manifest"]]})
    assert status == 200 and receipt["snapshot-first-row-id"] is None, receipt
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 5, "--start-id", 50)
    return name


def test_upgrade_v2_table_then_first_commit_assigns_every_existing_row(catalog, daemon):
    uri = catalog["uri"]
    name = make_v2_table(uri, daemon)
    before = peer("dump", "--uri", uri, "--table", f"ns.{name}", "--no-rows")
    assert before["format-version"] == 2 and len(before["snapshots"]) == 5
    head = before["ref-snapshot-id"]
    assert len(before["manifests"]) == 5 and all(m["first-row-id"] is None for m in before["manifests"])

    # Dry run: the exact report, nothing changed.
    status, _, report = upgrade(daemon, "ns", name, {"format-version": 3, "dry-run": True})
    assert status == 200, report
    java_summary = before["snapshots"][-1]["summary"]
    ours = before["snapshots"][3]["summary"]
    assert report["status"] == "ready" and report["dry-run"] is True
    assert report["namespace"] == ["ns"] and report["table"] == name
    assert report["format-version"] == 2 and report["target-format-version"] == 3
    assert report["next-row-id"] == 0
    assert report["snapshots"] == {"total": 5, "inspected": 5}
    # Newest first: Java wrote snapshots 5, 3, 2, 1; icecommitd snapshot 4.
    assert report["writers"] == [
        {"writer": {"iceberg-version": java_summary["iceberg-version"]}, "snapshots": 4,
         "last-snapshot-id": head, "last-timestamp-ms": before["snapshots"][-1]["timestamp-ms"]},
        {"writer": {"engine-name": "icecommit", "engine-version": ours["engine-version"],
                    "iceberg-version": ours["iceberg-version"]} if "iceberg-version" in ours else
                   {"engine-name": "icecommit", "engine-version": ours["engine-version"]},
         "snapshots": 1, "last-snapshot-id": before["snapshots"][3]["snapshot-id"],
         "last-timestamp-ms": before["snapshots"][3]["timestamp-ms"]},
    ]
    assert report["branches"] == [{"name": "main", "snapshot-id": head, "data-manifests": 5, "delete-manifests": 0,
                                   "rows-to-assign": 18, "total-equality-deletes": 0, "unknown-row-counts": []}]
    assert report["equality-deletes"] == [] and report["unknown-row-counts"] == []
    assert len(report["warnings"]) == 1
    assert "committed 4 of the 5 newest snapshots" in report["warnings"][0]
    assert "must support format version 3 with row lineage, or stop before the upgrade" in report["warnings"][0]
    assert "metadata-location" not in report
    same = peer("metadata", "--uri", uri, "--table", f"ns.{name}")
    assert same["format-version"] == 2 and same["metadata-log"] == peer(
        "metadata", "--uri", uri, "--table", f"ns.{name}")["metadata-log"]
    assert peer("dump", "--uri", uri, "--table", f"ns.{name}", "--no-rows")["metadata-location"] == before["metadata-location"]

    # The real run: same report, the table is v3 with next-row-id 0, nothing else changed.
    status, _, done = upgrade(daemon, "ns", name, {"format-version": 3, "dry-run": False})
    assert status == 200, done
    assert done["status"] == "upgraded" and done["dry-run"] is False
    assert done["branches"] == report["branches"] and done["writers"] == report["writers"]
    after = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert done["metadata-location"] == after["metadata-location"] != before["metadata-location"]
    assert after["format-version"] == 3 and after["next-row-id"] == 0
    assert after["ref-snapshot-id"] == head and len(after["snapshots"]) == 5
    assert all(r["_row_id"] is None for r in after["rows"])

    # Idempotent: already upgraded, nothing committed.
    status, _, again = upgrade(daemon, "ns", name, {"format-version": 3, "dry-run": False})
    assert status == 200 and again["status"] == "already-upgraded", again
    assert again["metadata-location"] == after["metadata-location"]
    status, _, down = upgrade(daemon, "ns", name, {"format-version": 2, "dry-run": True})
    assert status == 400 and down["error"]["type"] == "downgrade-refused", down
    assert "format versions cannot be lowered" in down["error"]["message"]

    # First commit after the upgrade: first-row-id 0; the new manifest (ids 100, 101) gets 0-1,
    # then the parent's manifests in list order: m5 (50-54) 2-6, m4 (20-23) 7-10, m3 (6-8)
    # 11-13, m2 (3-5) 14-16, m1 (0-2) 17-19. next-row-id 20.
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 2, "--start-id", 100)
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": f"v3-{name}",
                                                    "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["snapshot-first-row-id"] == 0 and receipt["sequence-number"] == 6
    assert receipt["manifests"][0]["first-row-id"] == 0 and receipt["manifests"][0]["last-row-id"] == 1
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert dump["next-row-id"] == 20
    snap = dump["snapshots"][-1]
    assert snap["first-row-id"] == 0 and snap["added-rows"] == 20 and snap["parent-snapshot-id"] == head
    assert [m["first-row-id"] for m in dump["manifests"]] == [0, 2, 7, 11, 14, 17]
    expected = {100: (0, 6), 101: (1, 6)}
    expected.update({50 + i: (2 + i, 5) for i in range(5)})
    expected.update({20 + i: (7 + i, 4) for i in range(4)})
    expected.update({6 + i: (11 + i, 3) for i in range(3)})
    expected.update({3 + i: (14 + i, 2) for i in range(3)})
    expected.update({0 + i: (17 + i, 1) for i in range(3)})
    got = {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]}
    assert got == expected
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(20))

    # The list is v3: every data manifest has its first_row_id, the parent's entries otherwise
    # copied as they were (sequence numbers 5..1).
    meta, entries = list_entries(snap["manifest-list"])
    assert meta["format-version"] == "3" and meta["first-row-id"] == "0"
    assert [e["first_row_id"] for e in entries] == [0, 2, 7, 11, 14, 17]
    assert [e["sequence_number"] for e in entries] == [6, 5, 4, 3, 2, 1]

    # A second commit: existing manifests keep their ranges; new rows from 20.
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 3, "--start-id", 200)
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": f"v3b-{name}",
                                                    "staged-manifests": [staged["manifest"]]})
    assert status == 200 and receipt["snapshot-first-row-id"] == 20, receipt
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert dump["next-row-id"] == 23 and dump["snapshots"][-1]["added-rows"] == 3
    assert [m["first-row-id"] for m in dump["manifests"]] == [20, 0, 2, 7, 11, 14, 17]
    ids = [r["_row_id"] for r in dump["rows"]]
    assert sorted(ids) == list(range(23))
    assert {r["id"]: r["_row_id"] for r in dump["rows"] if r["id"] >= 200} == {200: 20, 201: 21, 202: 22}

    # PyIceberg, a second reader, sees every row.
    t = RestCatalog("peer", uri=uri).load_table(f"ns.{name}")
    assert sorted(t.scan().to_arrow().column("id").to_pylist()) == sorted(expected) + [200, 201, 202]


def test_upgrade_counts_manifests_with_null_row_counts_from_their_entries(catalog, daemon, tmp_path):
    """An old writer's list leaves row counts null ("unknown, assume non-zero"). The report names
    the manifest; after the upgrade the first commit reads it and counts its rows: never 0, so no
    two manifests share a range."""
    uri = catalog["uri"]
    name = "n_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 2)
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 4, "--start-id", 0, "--count", 2)
    before = peer("dump", "--uri", uri, "--table", f"ns.{name}", "--no-rows")
    list_path = before["snapshots"][-1]["manifest-list"]

    # Rewrite the head's list in place as such a writer would have: counts optional, and null
    # for the older manifest (ids 0-3).
    with open(list_path, "rb") as f:
        reader = fastavro.reader(f)
        schema, meta, entries = reader.writer_schema, dict(reader.metadata), list(reader)
    for field in schema["fields"]:
        if field["field-id"] in (504, 505, 506, 512, 513, 514):
            field["type"], field["default"] = ["null", field["type"]], None
    for k in ("added_files_count", "existing_files_count", "deleted_files_count",
              "added_rows_count", "existing_rows_count", "deleted_rows_count"):
        entries[1][k] = None
    meta = {k: v for k, v in meta.items() if not k.startswith("avro.")}
    with open(list_path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), entries, codec="deflate", metadata=meta)
    old_manifest = entries[1]["manifest_path"]

    status, _, report = upgrade(daemon, "ns", name, {"format-version": 3, "dry-run": True})
    assert status == 200, report
    assert report["unknown-row-counts"] == [old_manifest]
    assert report["branches"][0]["rows-to-assign"] is None
    assert report["branches"][0]["unknown-row-counts"] == [old_manifest]
    assert any("1 manifests have unknown (null) row counts" in w for w in report["warnings"])
    status, _, done = upgrade(daemon, "ns", name, {"format-version": 3, "dry-run": False})
    assert status == 200 and done["status"] == "upgraded", done

    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 1, "--start-id", 100)
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": f"n-{name}",
                                                    "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    # new (1 row) 0; m2 (ids 4-7) 1-4; m1 (ids 0-3, counted from its entries) 5-8.
    assert dump["next-row-id"] == 9 and dump["snapshots"][-1]["added-rows"] == 9
    assert [m["first-row-id"] for m in dump["manifests"]] == [0, 1, 5]
    assert {r["id"]: r["_row_id"] for r in dump["rows"]} == {100: 0, 4: 1, 5: 2, 6: 3, 7: 4, 0: 5, 1: 6, 2: 7, 3: 8}
    # The new list carries the counted figures.
    _, entries = list_entries(dump["snapshots"][-1]["manifest-list"])
    assert (entries[2]["manifest_path"], entries[2]["added_rows_count"], entries[2]["added_files_count"]) == \
        (old_manifest, 4, 1)


def test_upgrade_refusals(catalog, daemon):
    uri = catalog["uri"]
    name = "r_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 1)
    status, _, body = upgrade(daemon, "ns", name, {"format-version": 3, "dry-run": True})
    assert status == 422 and body["error"]["type"] == "unsupported-format-version", body
    assert "upgrade it to format version 2 first" in body["error"]["message"]
    assert peer("metadata", "--uri", uri, "--table", f"ns.{name}")["format-version"] == 1

    for bad, message in [({"format-version": 3}, "\"dry-run\" is required"),
                         ({"dry-run": True}, "\"format-version\" is required"),
                         ({"format-version": 4, "dry-run": True}, "\"format-version\" must be 3"),
                         ({"format-version": 3, "dry-run": "yes"}, "\"dry-run\" must be true or false"),
                         ({"format-version": 3, "dry-run": True, "force": True}, "unknown field \"force\"")]:
        status, _, body = upgrade(daemon, "ns", name, bad)
        assert status == 400 and message in body["error"]["message"], (bad, body)
    status, _, body = upgrade(daemon, "ns", "no_such_table", {"format-version": 3, "dry-run": True})
    assert status == 404, body
