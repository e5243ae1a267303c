# SPDX-License-Identifier: Apache-2.0
"""Format versions other than 3: v2 tables are committed without any lineage field (a v2 list, no
first-row-id, no next-row-id); v1 tables are refused with the reason unless the table enables
snapshot-id inheritance, in which case icecommitd writes Java's v1 manifest list and a snapshot
without sequence number, and Iceberg Java reads the rows back (entries inherit the snapshot id)."""
import uuid

import fastavro

from conftest import peer

V1_LIST_FIELDS = ["manifest_path", "manifest_length", "partition_spec_id", "added_snapshot_id",
                  "added_files_count", "existing_files_count", "deleted_files_count", "partitions",
                  "added_rows_count", "existing_rows_count", "deleted_rows_count", "key_metadata"]


def read_list(path):
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        return reader.metadata, reader.writer_schema, list(reader)


def commit(daemon, name, key, manifest):
    return daemon.commit("ns", name, {"idempotency-key": key, "staged-manifests": [manifest]})


def test_v2_table_commits_have_no_lineage_fields(catalog, daemon):
    uri = catalog["uri"]
    name = "f2_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 2)
    for i, start in enumerate((1, 10)):
        staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 2, "--rows", 2, "--start-id", start)
        status, _, receipt = commit(daemon, name, f"f2-{name}-{i}", staged["manifest"])
        assert status == 200, receipt
        assert receipt["snapshot-first-row-id"] is None and "first-row-id" not in receipt["manifests"][0]
    meta = peer("metadata", "--uri", uri, "--table", f"ns.{name}")
    assert meta["format-version"] == 2 and "next-row-id" not in meta
    assert all("first-row-id" not in s and "added-rows" not in s for s in meta["snapshots"])
    list_meta, schema, entries = read_list(meta["snapshots"][-1]["manifest-list"])
    assert list_meta["format-version"] == "2" and list_meta["sequence-number"] == "2"
    assert "first-row-id" not in list_meta
    assert 520 not in [f["field-id"] for f in schema["fields"]]
    assert [(e["sequence_number"], e["added_rows_count"]) for e in entries] == [(2, 4), (1, 4)]
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert sorted(r["id"] for r in dump["rows"]) == [1, 2, 3, 4, 10, 11, 12, 13]
    assert all(r["_row_id"] is None and r["_last_updated_sequence_number"] is None for r in dump["rows"])


def test_v1_table_is_refused_without_snapshot_id_inheritance(catalog, daemon):
    uri = catalog["uri"]
    name = "f1_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 1)
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 1, "--start-id", 1)
    status, _, answer = commit(daemon, name, f"f1-{name}", staged["manifest"])
    assert status == 422 and answer["error"]["type"] == "unsupported-format-version", answer
    assert answer["error"]["message"] == (
        "format-version 1 tables take staged manifests only with snapshot-id inheritance: set the table "
        "property compatibility.snapshot-id-inheritance.enabled=true, or upgrade the table to format "
        "version 2 or 3")
    assert peer("metadata", "--uri", uri, "--table", f"ns.{name}")["snapshots"] == []


def test_v1_table_with_snapshot_id_inheritance_is_committed(catalog, daemon, table):
    uri = catalog["uri"]
    name = "fi_" + uuid.uuid4().hex[:10]
    v1 = peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 1)
    prop = peer("set-property", "--uri", uri, "--table", f"ns.{name}",
                "--key", "compatibility.snapshot-id-inheritance.enabled", "--value", "true")
    assert prop == {"key": "compatibility.snapshot-id-inheritance.enabled", "value": "true", "format-version": 1}

    receipts = []
    for i, start in enumerate((1, 10)):
        staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 2, "--rows", 2, "--start-id", start)
        assert staged["format-version"] == 1
        status, _, receipt = commit(daemon, name, f"fi-{name}-{i}", staged["manifest"])
        assert status == 200, receipt
        receipts.append(receipt)

    meta = peer("metadata", "--uri", uri, "--table", f"ns.{name}")
    assert meta["format-version"] == 1 and len(meta["snapshots"]) == 2
    assert all("sequence-number" not in s and "first-row-id" not in s for s in meta["snapshots"])
    assert meta["snapshots"][1]["parent-snapshot-id"] == receipts[0]["snapshot-id"]
    list_meta, schema, entries = read_list(meta["snapshots"][1]["manifest-list"])
    assert {k: v for k, v in list_meta.items() if not k.startswith("avro.") and k != "iceberg.schema"} == {
        "snapshot-id": str(receipts[1]["snapshot-id"]), "parent-snapshot-id": str(receipts[0]["snapshot-id"]),
        "format-version": "1"}
    assert [f["name"] for f in schema["fields"]] == V1_LIST_FIELDS
    assert [(e["added_snapshot_id"], e["added_files_count"], e["added_rows_count"]) for e in entries] == [
        (receipts[1]["snapshot-id"], 2, 4), (receipts[0]["snapshot-id"], 2, 4)]

    # Iceberg Java reads it: the entries' null snapshot ids inherit the list's added_snapshot_id.
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert sorted(r["id"] for r in dump["rows"]) == [1, 2, 3, 4, 10, 11, 12, 13]
    assert [m["added-snapshot-id"] for m in dump["manifests"]] == [r["snapshot-id"] for r in reversed(receipts)]
    assert all(f["data-sequence-number"] == 0 for m in dump["manifests"] for f in m["files"])

    # A v1 manifest is refused by a v3 table (v2+ writers write v2+ manifests). Its data files
    # lie in the v1 table, which the v3 table allows here, so that the format is what is refused.
    ns3, name3, created = table
    peer("set-property", "--uri", uri, "--table", f"{ns3}.{name3}", "--key", "icecommit.allowed-prefixes",
         "--value", v1["location"])
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 1, "--start-id", 99,
                  "--manifest-dir", created["location"] + "/metadata")
    status, _, answer = daemon.commit(ns3, name3, {"idempotency-key": f"v1m-{name3}",
                                                   "staged-manifests": [staged["manifest"]]})
    assert status == 422 and answer["error"]["type"] == "invalid-manifest", answer
    assert "is a format-version 1 manifest; the table is version 3" in answer["error"]["message"]
