# SPDX-License-Identifier: Apache-2.0
"""Manifest merging (Iceberg Java's MergeAppend, for the parent's manifests only) against the real
REST catalog and Iceberg Java: with commit.manifest.min-count-to-merge = 4 the parent's manifests
are rewritten into one manifest of EXISTING entries whose inherited values are written out; Iceberg
Java then reads every row with the same _row_id and _last_updated_sequence_number, next-row-id
stays the sum of added-rows (merging consumes id space), the lineage audit passes, the live-file
index still knows the merged files. An entry Iceberg Java deleted is dropped by the merge. A merge
racing a Java append gets a real 409, retries and reuses its merged manifest.
commit.manifest-merge.enabled = false merges nothing; a property that is no number fails."""
import os
import re
import threading
import uuid
import time

import fastavro

from conftest import Daemon, http, peer, pyiceberg_table
from faults import clear_faults, get_faults, set_faults


def set_properties(uri, ns, name, props):
    ops = ",".join(f'["set-property", "{k}", "{v}"]' for k, v in props.items())
    peer("evolve", "--uri", uri, "--table", f"{ns}.{name}", "--ops", f"[{ops}]")


def min_count(n):
    return {"commit.manifest.min-count-to-merge": n}


def local(path):
    return path[len("file:"):] if path.startswith("file:") else path


def avro(path):
    with open(local(path), "rb") as f:
        return list(fastavro.reader(f))


def metadata(uri, ns, name):
    status, _, body = http("GET", f"{uri}/v1/namespaces/{ns}/tables/{name}")
    assert status == 200, body
    return body["metadata"]


def snapshot_lists(uri, ns, name):
    """(snapshot, its manifest list entries) for every snapshot, in commit order."""
    md = metadata(uri, ns, name)
    snaps = sorted(md["snapshots"], key=lambda s: s["sequence-number"])
    return md, [(s, avro(s["manifest-list"])) for s in snaps]


def commit(daemon, ns, name, key, manifest):
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": key,
                                                  "staged-manifests": [manifest]})
    assert status == 200, receipt
    return receipt


def lineage(dump):
    return {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]}


def merged_files_on_disk(md):
    meta = os.path.join(local(md["location"]), "metadata")
    return sorted(os.path.join(meta, f) for f in os.listdir(meta) if f.startswith("merged-"))


def without(d, *keys):
    return {k: v for k, v in d.items() if k not in keys}


def check_audit(daemon, ns, name, dump, row_ids):
    status, _, report = http("GET", f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/lineage")
    assert status == 200, report
    assert report["ok"] is True, report["checks"]
    assert report["next-row-id"] == dump["next-row-id"]
    rows = {r["_row_id"]: r for r in dump["rows"]}
    for row_id in row_ids:
        status, _, found = http("GET", f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/row-ids/{row_id}")
        assert status == 200 and found["assigned"] is True, found
        assert found["data-file"]["path"] == rows[row_id]["file"], (found, rows[row_id])
        assert found["position"] == rows[row_id]["pos"]
        assert found["last-updated-sequence-number"] == rows[row_id]["_last_updated_sequence_number"]


def test_merge_keeps_row_lineage_and_shrinks_the_list(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    set_properties(uri, ns, name, min_count(4))
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                  "--start-id", 1000, "--manifests", 5)["manifests"]
    for k in range(3):
        commit(daemon, ns, name, f"merge-{k}", staged[k]["manifest"])
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    inputs = {m["path"]: m for m in before["manifests"]}
    assert len(inputs) == 4
    # Every data_file of the inputs as written, by path, for the field-by-field comparison.
    originals = {e["data_file"]["file_path"]: e for p in inputs for e in avro(p)}

    # The 4th commit finds 4 parent manifests in one bin: merged; the 5th finds 2: kept.
    r3 = commit(daemon, ns, name, "merge-3", staged[3]["manifest"])
    r4 = commit(daemon, ns, name, "merge-4", staged[4]["manifest"])
    md, lists = snapshot_lists(uri, ns, name)
    assert [len(entries) for _, entries in lists] == [1, 2, 3, 4, 2, 3], "the list shrank"
    snap3, list3 = lists[4]
    assert snap3["snapshot-id"] == r3["snapshot-id"]
    merged = [m for m in list3 if m["added_snapshot_id"] == r3["snapshot-id"] and "merged-" in m["manifest_path"]]
    assert len(merged) == 1, list3
    m = merged[0]
    assert (m["added_files_count"], m["existing_files_count"], m["deleted_files_count"]) == (0, 4, 0)
    assert (m["added_rows_count"], m["existing_rows_count"]) == (0, 14)
    assert m["sequence_number"] == snap3["sequence-number"] and m["min_sequence_number"] == 1
    # lineage_assign gave it a new range after the staged manifest's 3 rows: merging consumes ids.
    assert m["first_row_id"] == snap3["first-row-id"] + 3
    assert snap3["added-rows"] == 3 + 14
    summary = snap3["summary"]
    assert (summary["manifests-created"], summary["manifests-kept"], summary["manifests-replaced"],
            summary["entries-processed"]) == ("2", "0", "4", "4"), summary
    summary4 = lists[5][0]["summary"]
    assert (summary4["manifests-created"], summary4["manifests-kept"], summary4["manifests-replaced"]) == \
        ("1", "2", "0") and "entries-processed" not in summary4
    assert merged_files_on_disk(md) == [local(m["manifest_path"])], "nothing else left behind"

    # The merged manifest: EXISTING entries, the inherited values written out, all else kept.
    by_file = {f["path"]: (f, inputs[p]) for p in inputs for f in inputs[p]["files"]}
    entries = avro(m["manifest_path"])
    assert sorted(e["data_file"]["file_path"] for e in entries) == sorted(by_file)
    for e in entries:
        f, src = by_file[e["data_file"]["file_path"]]
        assert e["status"] == 0, e
        assert e["snapshot_id"] == src["added-snapshot-id"]
        assert e["sequence_number"] == f["data-sequence-number"]
        assert e["file_sequence_number"] == f["file-sequence-number"]
        assert e["data_file"]["first_row_id"] == f["first-row-id"] is not None
        original = originals[e["data_file"]["file_path"]]["data_file"]
        assert without(e["data_file"], "first_row_id") == without(original, "first_row_id")

    # Iceberg Java reads every row with its old _row_id and _last_updated_sequence_number.
    after = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    old, new = lineage(before), lineage(after)
    assert len(old) == 5 + 3 * 3
    assert {i: new[i] for i in old} == old
    row_ids = [r["_row_id"] for r in after["rows"]]
    assert len(set(row_ids)) == len(row_ids) == 5 + 5 * 3
    assert after["next-row-id"] == sum(s["added-rows"] for s in after["snapshots"])
    assert new[1000 + 4 * 3][0] == r4["manifests"][0]["first-row-id"]

    # The daemon's audit and row lookups agree with Iceberg Java's reader.
    check_audit(daemon, ns, name, after, [0, 4, old[1000][0], old[1008][0], new[1011][0], new[1014][0]])

    status, _, metrics = http("GET", daemon.url + "/metrics")
    assert re.search(r"^icecommit_manifests_merged_total 4$", metrics, re.M), metrics

    # The live-file index still holds the files the merged manifest carries: a staged manifest
    # whose own path is no longer in the list is refused by its files.
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "merge-again",
                                                 "staged-manifests": [staged[0]["manifest"]]})
    assert status == 422 and answer["error"]["type"] == "data-file-already-committed", answer


def test_merge_racing_a_java_append_retries_and_reuses_it(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    set_properties(uri, ns, name, min_count(4))
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                  "--start-id", 1000, "--manifests", 4)["manifests"]
    for k in range(3):
        commit(daemon, ns, name, f"race-{k}", staged[k]["manifest"])
    before = lineage(peer("dump", "--uri", uri, "--table", f"{ns}.{name}"))

    # The daemon's commit (of a list with a merged manifest) waits in the catalog while Iceberg
    # Java's FastAppend lands: the catalog's own requirement check then answers it 409.
    set_faults(uri, commit=["delay-15000"], table=f"{ns}.{name}", reset_counters=True)
    answer = {}
    thread = threading.Thread(target=lambda: answer.update(
        zip(("status", "headers", "body"), daemon.commit(ns, name, {"idempotency-key": "race-3",
                                                                    "staged-manifests": [staged[3]["manifest"]]}))))
    thread.start()
    try:
        deadline = time.time() + 60
        # "matched" counts a request when its fault is popped, before the delay.
        while get_faults(uri)["matched"].get("commit", 0) == 0:
            assert time.time() < deadline, "the daemon's commit never reached the catalog"
            time.sleep(0.05)
        java = peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 2, "--start-id", 500)
    finally:
        thread.join(timeout=120)
        injected = get_faults(uri)["injected"]
        clear_faults(uri)
    assert injected.get("delay-15000") == 1, injected
    assert answer["status"] == 200, answer
    receipt = answer["body"]
    assert receipt["attempts"] >= 2, receipt

    md, lists = snapshot_lists(uri, ns, name)
    snap, entries = lists[-1]
    assert snap["snapshot-id"] == receipt["snapshot-id"]
    assert snap["parent-snapshot-id"] == java["snapshots"][0]
    merged = [m for m in entries if "merged-" in m["manifest_path"]]
    assert len(merged) == 1, entries
    # Written by the first attempt (merged-<uuid>-1-0.avro) and reused by the retry, next to
    # Java's new manifest (kept: its bin is the newest, of fewer than 4).
    assert re.search(r"merged-[0-9a-f-]+-1-0\.avro$", merged[0]["manifest_path"]), merged
    assert len(entries) == 3 and merged[0]["existing_files_count"] == 4
    # ... with the sequence number of the attempt that committed, not the first one's.
    assert merged[0]["sequence_number"] == snap["sequence-number"] == receipt["sequence-number"]
    assert merged[0]["min_sequence_number"] == 1
    assert merged_files_on_disk(md) == [local(merged[0]["manifest_path"])]

    after = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    new = lineage(after)
    assert {i: new[i] for i in before} == before, "every row keeps its _row_id"
    assert {500, 501, 1009, 1010, 1011} <= set(new)
    row_ids = [r["_row_id"] for r in after["rows"]]
    assert len(set(row_ids)) == len(row_ids)
    assert after["next-row-id"] == sum(s["added-rows"] for s in after["snapshots"])
    check_audit(daemon, ns, name, after, [0, before[1000][0], new[500][0], new[1011][0]])
    status, _, metrics = http("GET", daemon.url + "/metrics")
    assert re.search(r'icecommit_commit_attempts_total\{outcome="conflict"\} [1-9]', metrics), metrics


def test_merging_disabled_merges_nothing(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    set_properties(uri, ns, name, {"commit.manifest-merge.enabled": "false", **min_count(2)})
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                  "--start-id", 1000, "--manifests", 3)["manifests"]
    for k in range(3):
        commit(daemon, ns, name, f"off-{k}", staged[k]["manifest"])
    md, lists = snapshot_lists(uri, ns, name)
    assert [len(entries) for _, entries in lists] == [1, 2, 3, 4]
    assert not any("merged-" in m["manifest_path"] for _, entries in lists for m in entries)
    assert all(s["summary"]["manifests-replaced"] == "0" for s, _ in lists[1:])
    assert merged_files_on_disk(md) == []

    # A size that is no number fails the commit, merging on or off, as Iceberg Java's does. A
    # property change commits no snapshot: a daemon sees it once its table state ages out
    # (commit.table-state-max-age-ms), or at once when it keeps none, as this one.
    set_properties(uri, ns, name, {"commit.manifest.target-size-bytes": "8MB"})
    extra = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 1,
                 "--start-id", 2000)
    fresh = Daemon(uri, catalog["dir"], {"commit.table-state-max-age-ms": "0"})
    try:
        status, _, answer = fresh.commit(ns, name, {"idempotency-key": "off-bad",
                                                    "staged-manifests": [extra["manifest"]]})
    finally:
        fresh.stop()
    assert status == 422 and answer["error"]["type"] == "invalid-table-property", answer
    assert "commit.manifest.target-size-bytes" in answer["error"]["message"]


def test_merge_drops_entries_java_deleted(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                  "--start-id", 1000, "--manifests", 4)["manifests"]
    for k in range(3):
        commit(daemon, ns, name, f"del-{k}", staged[k]["manifest"])
    # Iceberg Java deletes one file (its manifest rewritten with the entry DELETED), before the
    # low min-count is set, so that Java itself merges nothing.
    gone = staged[1]["data-files"][0]["path"]
    peer("evolve", "--uri", uri, "--table", f"{ns}.{name}", "--ops", f'[["delete-file", "{gone}"]]')
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    deleted = [m for m in before["manifests"] if m["deleted-files"] == 1]
    assert len(before["manifests"]) == 4 and len(deleted) == 1, before["manifests"]
    set_properties(uri, ns, name, min_count(4))

    r = commit(daemon, ns, name, "del-3", staged[3]["manifest"])
    md, lists = snapshot_lists(uri, ns, name)
    snap, entries = lists[-1]
    assert snap["snapshot-id"] == r["snapshot-id"] and len(entries) == 2
    merged = [m for m in entries if "merged-" in m["manifest_path"]]
    assert len(merged) == 1
    assert (merged[0]["existing_files_count"], merged[0]["deleted_files_count"]) == (3, 0)
    assert merged[0]["existing_rows_count"] == 5 + 3 + 3
    written = avro(merged[0]["manifest_path"])
    assert gone not in [e["data_file"]["file_path"] for e in written], "DELETED entry dropped"
    assert all(e["status"] == 0 for e in written)
    assert snap["summary"]["entries-processed"] == "4"

    after = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    old, new = lineage(before), lineage(after)
    assert set(range(1003, 1006)).isdisjoint(new), "the deleted rows stay deleted"
    assert {i: new[i] for i in old} == old
    assert after["next-row-id"] == sum(s["added-rows"] for s in after["snapshots"])
    check_audit(daemon, ns, name, after, [0, old[1000][0], old[1006][0], new[1009][0]])


def test_merged_partition_summaries_cover_the_inputs(catalog, daemon):
    uri = catalog["uri"]
    name = "t_" + uuid.uuid4().hex[:12]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 3, "--partitioned")
    set_properties(uri, "ns", name, min_count(3))
    staged = []
    for bucket, start, n in ((7, 1000, 1), (2, 2000, 1), (5, 3000, 2)):
        staged += peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 3,
                       "--start-id", start, "--bucket", bucket, "--manifests", n)["manifests"]
    for k, s in enumerate(staged):
        commit(daemon, "ns", name, f"part-{k}", s["manifest"])
    md, lists = snapshot_lists(uri, "ns", name)
    merged = [m for m in lists[-1][1] if "merged-" in m["manifest_path"]]
    assert len(merged) == 1 and merged[0]["existing_files_count"] == 3, lists[-1][1]
    (summary,) = merged[0]["partitions"]
    assert (summary["lower_bound"], summary["upper_bound"]) == ((2).to_bytes(4, "little"), (7).to_bytes(4, "little"))
    assert summary["contains_null"] is False

    # PyIceberg prunes manifests by these summaries: a filter finds exactly its partition's rows.
    t = pyiceberg_table(catalog, f"ns.{name}")
    for bucket, ids in ((2, {2000, 2001, 2002}), (7, {1000, 1001, 1002}), (4, set()),
                        (5, {3000, 3001, 3002, 3003, 3004, 3005})):
        got = t.scan(row_filter=f"bucket == {bucket}").to_arrow().column("id").to_pylist()
        assert set(got) == ids, (bucket, got)
