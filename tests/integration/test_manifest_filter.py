# SPDX-License-Identifier: Apache-2.0
"""Removing a file from a committed manifest (iceberg/manifest_filter.c, run by
icecommit-avro-tool filter-manifest), read back by Iceberg Java (the peer's read-manifest:
ManifestFiles.read with the manifest-list entry, so that inheritance applies, DELETED entries
included). On a v3 table Java appended to and icecommitd committed a staged manifest of three
files into, the daemon's manifest (ADDED entries, everything inherited) is filtered: the removed
file reads DELETED by the new snapshot with its ORIGINAL sequence numbers and first_row_id, the
others EXISTING with their original snapshot id, sequence numbers and first_row_id, so every row
keeps the _row_id Java assigned it, even under the new list entry's own first_row_id."""
import json
import os
import subprocess

import pytest

from conftest import http, peer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ICECOMMIT_BUILD_DIR", os.path.join(ROOT, "build"))
TOOL = os.path.join(BUILD, "tests", "tools", "icecommit-avro-tool")

NEW_SNAPSHOT_ID = 7000000000000000001


def tool(*args, rc=0):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} is missing: build it (ninja -C {BUILD}) or set ICECOMMIT_BUILD_DIR")
    out = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert out.returncode == rc, f"{args}: rc={out.returncode} stdout={out.stdout} stderr={out.stderr}"
    return json.loads(out.stdout)


def local(path):
    return path[len("file:"):] if path.startswith("file:") else path


def java_entries(path, list_entry):
    return peer("read-manifest", "--manifest", path, "--list-entry", json.dumps(list_entry))["entries"]


def row_id_ranges(dump):
    """file -> (least _row_id, number of rows), as Java reads the table."""
    ranges = {}
    for r in dump["rows"]:
        least, n = ranges.get(r["file"], (r["_row_id"], 0))
        ranges[r["file"]] = (min(least, r["_row_id"]), n + 1)
    return ranges


def test_java_reads_a_filtered_manifest_with_its_lineage(catalog, daemon, table, tmp_path):
    ns, name, _ = table
    uri = catalog["uri"]
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 3, "--rows", 4,
                  "--start-id", 100)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "filter-0",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 2, "--start-id", 200)

    status, _, body = http("GET", f"{uri}/v1/namespaces/{ns}/tables/{name}")
    assert status == 200, body
    md = body["metadata"]
    current = next(s for s in md["snapshots"] if s["snapshot-id"] == md["current-snapshot-id"])
    list_path = local(current["manifest-list"])
    listed = tool("read-list", list_path)["files"]
    index = next(i for i, m in enumerate(listed) if m["counts"]["added_files_count"] == 3)
    original = listed[index]
    assert original["added_snapshot_id"] == receipt["snapshot-id"]

    # As Java reads the manifest the daemon committed: ADDED, everything inherited.
    before = java_entries(local(original["manifest_path"]), original)
    paths = [f["path"] for f in staged["data-files"]]
    assert [e["path"] for e in before] == paths
    assert {e["status"] for e in before} == {"added"}
    assert [e["first-row-id"] for e in before] == [original["first_row_id"] + 4 * k for k in range(3)]
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    ranges = row_id_ranges(dump)
    for e in before:
        assert ranges[e["path"]] == (e["first-row-id"], 4)

    # Filter the middle file out, as the next snapshot would.
    out = str(tmp_path / "filtered.avro")
    sequence = md["last-sequence-number"] + 1
    removed = paths[1]
    res = tool("filter-manifest", list_path, index, out, NEW_SNAPSHOT_ID, sequence, 3, removed,
               "/nowhere/not-in-it.parquet")
    assert res["untouched"] is False
    assert res["found"] == [True, False]
    assert res["removed"] == [{"path": removed, "content": 0, "record_count": 4,
                               "file_size": staged["data-files"][1]["file-size-in-bytes"]}]
    f = res["file"]
    assert f["manifest_path"] == out and f["manifest_length"] == os.path.getsize(out)
    assert f["added_snapshot_id"] == NEW_SNAPSHOT_ID and f["sequence_number"] == sequence
    assert f["min_sequence_number"] == before[0]["data-sequence-number"]
    assert f["counts"] == {"added_files_count": 0, "existing_files_count": 2,
                           "deleted_files_count": 1, "added_rows_count": 0,
                           "existing_rows_count": 8, "deleted_rows_count": 4}
    assert f["first_row_id"] is None

    # Java reads it under the range lineage_assign would give it (next-row-id on): every value
    # is explicit, so nothing comes from that range.
    f["first_row_id"] = md["next-row-id"]
    after = java_entries(out, f)
    assert [e["path"] for e in after] == paths
    for old, new in zip(before, after):
        if old["path"] == removed:
            assert new["status"] == "deleted"
            assert new["snapshot-id"] == NEW_SNAPSHOT_ID
        else:
            assert new["status"] == "existing"
            assert new["snapshot-id"] == old["snapshot-id"] == receipt["snapshot-id"]
        assert new["data-sequence-number"] == old["data-sequence-number"]
        assert new["file-sequence-number"] == old["file-sequence-number"]
        assert new["first-row-id"] == old["first-row-id"]
        assert new["record-count"] == old["record-count"] == 4
        assert new["file-size-in-bytes"] == old["file-size-in-bytes"]
    # The same _row_id ranges as before for the files kept.
    for e in after:
        if e["status"] == "existing":
            assert ranges[e["path"]] == (e["first-row-id"], e["record-count"])

    # A manifest holding none of the paths is left as it is.
    assert tool("filter-manifest", list_path, index, str(tmp_path / "unused.avro"), NEW_SNAPSHOT_ID,
                sequence, 3, "/nowhere/not-in-it.parquet") == {"untouched": True}
    assert not os.path.exists(tmp_path / "unused.avro")
