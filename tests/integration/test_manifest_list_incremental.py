# SPDX-License-Identifier: Apache-2.0
"""Incremental manifest lists (iceberg/manifest_list_append.c): 30 commits through icecommitd
on a v3 table whose first list and one list in the middle Iceberg Java wrote. Each new list
copies its parent's blocks; read with fastavro it must equal the same list written whole
(icecommit-avro-tool rewrite-list: every field of every entry, the writer schema with its field
ids, every metadata key), with the snapshot's own metadata values and few blocks; Iceberg Java
and PyIceberg read every row."""
import math
import os
import re
import subprocess

import fastavro

from conftest import BUILD, make_workdir, peer, pyiceberg_table

AVRO_TOOL = os.path.join(BUILD, "tests", "tools", "icecommit-avro-tool")


def read_list(path):
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        entries = list(reader)
        meta, schema = reader.metadata, reader.writer_schema
    with open(path, "rb") as f:
        blocks = [b.num_records for b in fastavro.block_reader(f)]
    return meta, schema, entries, blocks


def field_ids(schema, path=""):
    """Every field id (and element/key/value id) of an Avro schema, by its path of names."""
    ids = {}
    if isinstance(schema, list):
        for branch in schema:
            ids.update(field_ids(branch, path))
    elif isinstance(schema, dict):
        for key in ("field-id", "element-id", "key-id", "value-id"):
            if key in schema:
                ids[f"{path}#{key}"] = schema[key]
        for f in schema.get("fields", []):
            ids[f"{path}/{f['name']}#field-id"] = f.get("field-id")
            ids.update(field_ids(f["type"], f"{path}/{f['name']}"))
        for key in ("items", "values"):
            if key in schema:
                ids.update(field_ids(schema[key], f"{path}/{key}"))
    return ids


def assert_equals_whole_rewrite(path, workdir):
    """The list at `path` against the same list written whole by manifest_list_write."""
    whole = os.path.join(workdir, os.path.basename(path) + ".whole.avro")
    subprocess.run([AVRO_TOOL, "rewrite-list", path, whole], check=True, timeout=60)
    meta, schema, entries, blocks = read_list(path)
    w_meta, w_schema, w_entries, _ = read_list(whole)
    assert entries == w_entries                    # every field of every entry, in order
    assert schema == w_schema
    assert field_ids(schema) == field_ids(w_schema)
    assert field_ids(schema)["/first_row_id#field-id"] == 520
    assert meta == w_meta                          # every key: avro.*, iceberg.schema, snapshot keys
    return meta, entries, blocks


def test_thirty_commits_write_lists_incrementally(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    ident = f"{ns}.{name}"
    workdir = make_workdir("icecommit-incremental-")

    # The first parent list is Java's.
    peer("append", "--uri", uri, "--table", ident, "--rows", 3, "--start-id", 0)
    staged = [m["manifest"] for m in peer("stage", "--uri", uri, "--table", ident, "--files", 1, "--rows", 2,
                                          "--start-id", 100, "--manifests", 34)["manifests"]]
    # 30 commits of 1, 2 or 3 manifests (34 in all); after the 15th, a Java append writes its
    # own list whole, which the 16th copies.
    sizes = [1] * 9 + [3] + [1] * 5 + [2] + [1] * 9 + [2] + [1] * 4
    assert len(sizes) == 30 and sum(sizes) == len(staged)
    receipts, pos = [], 0
    for i, k in enumerate(sizes):
        if i == 15:
            peer("append", "--uri", uri, "--table", ident, "--rows", 3, "--start-id", 50)
        status, _, receipt = daemon.commit(ns, name, {"idempotency-key": f"inc-{name}-{i}",
                                                      "staged-manifests": staged[pos:pos + k]})
        assert status == 200, receipt
        receipts.append(receipt)
        pos += k

    # Every attempt's list was written by copying its parent (debug log of commit/list_build.c); the
    # commit after Java's append takes two attempts when the first, on the daemon's state from
    # before that append, gets a 409.
    daemon.wait_log("manifest list written incrementally")
    log = open(daemon.log).read()
    attempts = len(sizes) + len(re.findall(r"commit attempt \d+/\d+ .* conflict, retrying", log))
    assert log.count("manifest list written incrementally") == attempts, log[-3000:]
    assert "manifest list written whole" not in log

    dump = peer("dump", "--uri", uri, "--table", ident)
    snapshots = {s["snapshot-id"]: s for s in dump["snapshots"]}
    assert len(snapshots) == 32
    n_manifests = 1
    for i, (k, receipt) in enumerate(zip(sizes, receipts)):
        n_manifests += k + (1 if i == 15 else 0)
        snap = snapshots[receipt["snapshot-id"]]
        meta, entries, blocks = assert_equals_whole_rewrite(snap["manifest-list"], workdir)
        # The snapshot's own values, not the parent's.
        assert meta["snapshot-id"] == str(snap["snapshot-id"])
        assert meta["parent-snapshot-id"] == str(snap["parent-snapshot-id"])
        assert meta["sequence-number"] == str(snap["sequence-number"])
        assert meta["first-row-id"] == str(snap["first-row-id"])
        assert meta["format-version"] == "3" and meta["avro.codec"] == "deflate"
        # New manifests first, then the parent's as they were.
        assert len(entries) == n_manifests
        assert [e["manifest_path"] for e in entries[:k]] == [m["location"] for m in receipt["manifests"]]
        assert all(e["added_snapshot_id"] == snap["snapshot-id"] for e in entries[:k])
        parent = snapshots[snap["parent-snapshot-id"]]
        _, _, parent_entries, _ = read_list(parent["manifest-list"])
        assert entries[k:] == parent_entries
        assert len(blocks) <= math.floor(math.log2(n_manifests)) + 1, blocks

    # The last list holds the blocks of many commits, not one.
    assert len(blocks) > 1, blocks

    # Iceberg Java reads every row, with lineage: 3 + 3 Java rows, 2 per staged manifest.
    rows = dump["rows"]
    assert len(rows) == 6 + 2 * len(staged)
    assert sorted(r["id"] for r in rows) == sorted([0, 1, 2, 50, 51, 52] + list(range(100, 100 + 2 * len(staged))))
    assert sorted(r["_row_id"] for r in rows) == list(range(len(rows)))
    assert dump["next-row-id"] == len(rows)
    # ... and so does PyIceberg.
    assert pyiceberg_table(catalog, ident).scan().to_arrow().num_rows == len(rows)


def test_a_merge_writes_the_list_whole_and_the_next_commit_appends_again(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    ident = f"{ns}.{name}"
    workdir = make_workdir("icecommit-incremental-")
    staged = [m["manifest"] for m in peer("stage", "--uri", uri, "--table", ident, "--files", 1, "--rows", 2,
                                          "--start-id", 0, "--manifests", 5)["manifests"]]

    def commit(i):
        status, _, receipt = daemon.commit(ns, name, {"idempotency-key": f"merge-{name}-{i}",
                                                      "staged-manifests": [staged[i]]})
        assert status == 200, receipt
        return receipt

    def log_counts():
        log = open(daemon.log).read()
        return (log.count("manifest list written incrementally"),
                log.count("this attempt changed parent entries (counts, row ids or a merge)"))

    # Set before the daemon first loads the table (it builds on its own state afterwards).
    peer("evolve", "--uri", uri, "--table", ident, "--ops",
         '[["set-property", "commit.manifest.min-count-to-merge", "3"]]')
    # The first commit has no parent; the next two copy theirs (fewer than 3 to merge).
    receipts = [commit(i) for i in range(3)]
    assert log_counts() == (2, 0)
    # Three parent manifests now merge into one: the list is written whole.
    receipts.append(commit(3))
    assert log_counts() == (2, 1)
    # Its parent holds two manifests (the merged one and the last staged): nothing merges, the
    # list is copied again.
    receipts.append(commit(4))
    assert log_counts() == (3, 1)

    dump = peer("dump", "--uri", uri, "--table", ident)
    snapshots = {s["snapshot-id"]: s for s in dump["snapshots"]}
    sizes = []
    for receipt in receipts:
        _, entries, _ = assert_equals_whole_rewrite(snapshots[receipt["snapshot-id"]]["manifest-list"],
                                                    workdir)
        sizes.append(len(entries))
    # The merge replaced the three parent manifests by one.
    assert sizes == [1, 2, 3, 2, 3]
    assert sorted(r["id"] for r in dump["rows"]) == list(range(10))
    # Distinct row ids (a merge consumes id space: they need not be 0..9).
    assert len({r["_row_id"] for r in dump["rows"]}) == 10
    assert pyiceberg_table(catalog, ident).scan().to_arrow().num_rows == 10
