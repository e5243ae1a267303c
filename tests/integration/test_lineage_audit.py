# SPDX-License-Identifier: Apache-2.0
"""The lineage audit (GET .../lineage) and row-id lookup (GET .../row-ids/{id}) against the real
REST catalog: on a healthy v3 table the report's ranges equal the commit receipts and every check
passes, and each lookup names the file and position Iceberg Java's reader shows for that _row_id;
on a table where Iceberg Java's low-level API committed a manifest with an overlapping
first_row_id, the audit flags the overlap and names both manifests."""
import uuid

from conftest import http, peer


def audit(daemon, ns, name):
    return http("GET", f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/lineage")


def lookup(daemon, ns, name, row_id):
    return http("GET", f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/row-ids/{row_id}")


def checks_by_name(report):
    return {c["name"]: c for c in report["checks"]}


def test_healthy_table_report_matches_receipts_and_java_reader(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    java = peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged1 = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 2, "--rows", 10,
                   "--start-id", 1000)
    staged2 = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                   "--start-id", 2000)
    status, _, r1 = daemon.commit(ns, name, {"idempotency-key": "audit-1",
                                             "staged-manifests": [staged1["manifest"]]})
    assert status == 200, r1
    status, _, r2 = daemon.commit(ns, name, {"idempotency-key": "audit-2",
                                             "staged-manifests": [staged2["manifest"]]})
    assert status == 200, r2
    assert (r1["snapshot-first-row-id"], r2["snapshot-first-row-id"]) == (5, 25)

    status, _, report = audit(daemon, ns, name)
    assert status == 200, report
    assert report["namespace"] == [ns] and report["table"] == name
    assert report["ok"] is True, report["checks"]
    assert report["row-lineage"] is True and report["format-version"] == 3
    assert report["next-row-id"] == 28 and report["last-sequence-number"] == 3
    assert report["gaps"] == []
    assert [(c["name"], c["ok"], c["n-findings"]) for c in report["checks"]] == [
        ("no-overlapping-ranges", True, 0), ("next-row-id-above-assigned", True, 0),
        ("data-manifests-have-first-row-id", True, 0), ("gaps-explained", True, 0),
        ("manifest-lists-readable", True, 0)]
    snaps = report["snapshots"]
    assert [s["snapshot-id"] for s in snaps] == [java["snapshots"][0], r1["snapshot-id"], r2["snapshot-id"]]
    assert [(s["sequence-number"], s["first-row-id"], s["added-rows"], s["last-row-id"]) for s in snaps] == [
        (1, 0, 5, 4), (2, 5, 20, 24), (3, 25, 3, 27)]
    assert [s["parent-snapshot-id"] for s in snaps] == [None, snaps[0]["snapshot-id"], snaps[1]["snapshot-id"]]
    assert all(s["refs"] == ["main"] for s in snaps)
    assert all(s["manifest-list-format-version"] == 3 and s["manifest-list-has-row-lineage"] for s in snaps)
    assert [s["manifests"] for s in snaps] == [1, 2, 3]
    # What each snapshot assigned equals its receipt, manifest by manifest.
    for receipt, snap in ((r1, snaps[1]), (r2, snaps[2])):
        assert [(m["path"], m["first-row-id"], m["last-row-id"]) for m in snap["manifests-assigned"]] == [
            (m["location"], m["first-row-id"], m["last-row-id"]) for m in receipt["manifests"]]
        assert snap["reserved-unused-rows"] == 0
    assert snaps[0]["manifests-assigned"][0]["first-row-id"] == 0
    assert snaps[0]["manifests-assigned"][0]["last-row-id"] == 4

    # Every lookup agrees exactly with the row Iceberg Java's reader shows for that _row_id.
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    rows = {r["_row_id"]: r for r in dump["rows"]}
    assert sorted(rows) == list(range(28))
    receipt_files = {f["location"]: f for m in r1["manifests"] + r2["manifests"] for f in m["data-files"]}
    for row_id in (0, 4, 5, 14, 15, 24, 25, 27):
        status, _, found = lookup(daemon, ns, name, row_id)
        assert status == 200, found
        assert found["assigned"] is True and found["row-id"] == row_id
        row = rows[row_id]
        assert found["data-file"]["path"] == row["file"], (found, row)
        assert found["position"] == row["pos"]
        assert found["last-updated-sequence-number"] == row["_last_updated_sequence_number"]
        assert found["data-file"]["first-row-id"] + found["position"] == row_id
        assert found["refs"] == ["main"]
        expected_snapshot = snaps[0] if row_id < 5 else snaps[1] if row_id < 25 else snaps[2]
        assert found["snapshot"]["snapshot-id"] == expected_snapshot["snapshot-id"]
        if row_id >= 5:
            assert found["data-file"]["first-row-id"] == receipt_files[row["file"]]["first-row-id"]
            assert found["data-file"]["status"] == "added"
            assert found["data-file"]["first-row-id-inherited"] is True

    for row_id in (28, 29, 10**15):
        status, _, missing = lookup(daemon, ns, name, row_id)
        assert status == 200, missing
        assert missing["assigned"] is False and missing["next-row-id"] == 28
        assert "next-row-id" in missing["reason"]

    for bad in ("abc", "-1", "1.5", "99999999999999999999"):
        status, _, err = lookup(daemon, ns, name, bad)
        assert status == 400 and err["error"]["type"] == "bad-request", (bad, err)
    status, _, err = audit(daemon, ns, "no_such_table")
    assert status == 404 and err["error"]["type"] == "no-such-table"


def test_overlap_committed_with_java_low_level_api_is_flagged(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    java = peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 5, "--start-id", 0)
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 10,
                  "--start-id", 1000)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "overlap-1",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    java_manifest = next(m["path"] for m in peer("dump", "--uri", uri, "--table", f"{ns}.{name}",
                                                 "--no-rows")["manifests"] if m["first-row-id"] == 0)
    bad = peer("commit-overlap", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 3,
               "--start-id", 5000, "--manifest-first-row-id", 0)
    assert bad["first-row-id"] == 15 and bad["added-rows"] == 0

    # Iceberg Java's reader shows the harm: ids 0..2 now belong to two rows each.
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    ids = [r["_row_id"] for r in dump["rows"]]
    assert sorted(ids) == [0, 0, 1, 1, 2, 2] + list(range(3, 15))
    assert dump["next-row-id"] == 15

    status, _, report = audit(daemon, ns, name)
    assert status == 200, report
    assert report["ok"] is False
    checks = checks_by_name(report)
    overlap = checks["no-overlapping-ranges"]
    assert overlap["ok"] is False and overlap["n-findings"] == 2, overlap
    between = next(f for f in overlap["findings"] if "manifests" in f)
    assert sorted(m["path"] for m in between["manifests"]) == sorted([java_manifest, bad["manifest"]])
    assert (between["first-row-id"], between["last-row-id"]) == (0, 2)
    assert {m["path"]: m["first-listed-by-snapshot-id"] for m in between["manifests"]} == {
        java_manifest: java["snapshots"][0], bad["manifest"]: bad["snapshot-id"]}
    outside = next(f for f in overlap["findings"] if "manifests" not in f)
    assert outside["snapshot-id"] == bad["snapshot-id"] and outside["manifest"] == bad["manifest"]
    assert (outside["first-row-id"], outside["last-row-id"]) == (0, 2)
    # The other rules hold: next-row-id is above everything, every manifest has an id, no gap.
    for name_ in ("next-row-id-above-assigned", "data-manifests-have-first-row-id", "gaps-explained",
                  "manifest-lists-readable"):
        assert checks[name_]["ok"] is True, checks[name_]
    last = report["snapshots"][-1]
    assert last["snapshot-id"] == bad["snapshot-id"]
    assert (last["first-row-id"], last["added-rows"], last["last-row-id"]) == (15, 0, None)

    # The lookup names where the id was first assigned: Java's append, not the overlapping commit.
    status, _, found = lookup(daemon, ns, name, 1)
    assert status == 200 and found["assigned"] is True
    assert found["snapshot"]["snapshot-id"] == java["snapshots"][0]
    assert found["manifest"]["path"] == java_manifest and found["position"] == 1


def test_upgraded_table_with_a_branch_written_by_java_alone_is_ok(catalog, daemon):
    """A v2 table with a branch forked before the upgrade to v3, then one Java append on each
    branch: each append's manifest list gives the pre-upgrade manifest its own range (main and the
    branch are both children of the v2 snapshot), two disjoint ranges for one path, which the
    rules require. The audit passes (it reported overlaps on such tables before)."""
    name = "a_" + uuid.uuid4().hex[:10]
    uri = catalog["uri"]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 2)
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 4, "--start-id", 0)
    peer("branch", "--uri", uri, "--table", f"ns.{name}", "--name", "b")
    up = peer("set-property", "--uri", uri, "--table", f"ns.{name}", "--key", "format-version", "--value", "3")
    assert up["format-version"] == 3
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 2, "--start-id", 100)
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 3, "--start-id", 200, "--branch", "b")

    status, _, report = audit(daemon, "ns", name)
    assert status == 200, report
    assert report["next-row-id"] == 4 + 2 + 4 + 3, report
    v3 = [s for s in report["snapshots"] if s["first-row-id"] is not None]
    assert len(v3) == 2 and {s["parent-snapshot-id"] for s in v3} == {report["snapshots"][0]["snapshot-id"]}
    # The pre-upgrade manifest is assigned once per branch, at two disjoint ranges.
    paths = [{m["path"] for m in s["manifests-assigned"]} for s in v3]
    assert [len(p) for p in paths] == [2, 2] and len(paths[0] & paths[1]) == 1, v3
    old = [m for s in v3 for m in s["manifests-assigned"] if m["path"] in paths[0] & paths[1]]
    assert all(m["last-row-id"] - m["first-row-id"] == 3 for m in old), old
    assert old[0]["last-row-id"] < old[1]["first-row-id"] or old[1]["last-row-id"] < old[0]["first-row-id"], old
    assert report["ok"] is True, report["checks"]
    assert checks_by_name(report)["no-overlapping-ranges"]["n-findings"] == 0
    assert report["refs"]["b"]["type"] == "branch"

    # Java's reader agrees: every row has an id, none twice on each branch.
    for ref in (None, "b"):
        args = ["dump", "--uri", uri, "--table", f"ns.{name}"] + (["--branch", ref] if ref else [])
        rows = peer(*args)["rows"]
        ids = [r["_row_id"] for r in rows]
        assert None not in ids and len(set(ids)) == len(ids) == (6 if ref is None else 7), rows
