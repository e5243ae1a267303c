# SPDX-License-Identifier: Apache-2.0
"""Commits to several branches of one v3 table: main, a branch Iceberg Java created at main's head,
one it created at an older snapshot, and one icecommitd creates (parented on main's head). Each
commit's parent is its branch's head, but sequence numbers and row ids come from the table: all
branches draw from the one next-row-id, so ranges never overlap. Iceberg Java reads each branch
and every row's _row_id and _last_updated_sequence_number are exactly as predicted."""
from conftest import peer

# (branch, start id, rows): committed in this order; ids are the data values the rows carry.
COMMITS = [
    ("main", 0, 3),    # A  seq 1, row ids 0-2
    ("main", 10, 2),   # B  seq 2, 3-4
    # here Java creates "old" at A's snapshot and "head" at B's
    ("old", 20, 4),    # C  seq 3, 5-8    parent A
    ("main", 30, 1),   # D  seq 4, 9      parent B
    ("head", 40, 2),   # E  seq 5, 10-11  parent B
    ("old", 50, 3),    # F  seq 6, 12-14  parent C
    ("main", 60, 2),   # G  seq 7, 15-16  parent D
    ("fresh", 70, 1),  # H  seq 8, 17     new branch: parent G (main's head)
]


def rows_of(start, n, first_row_id, seq):
    return {start + i: (first_row_id + i, seq) for i in range(n)}


def test_commits_alternate_between_branches_and_share_next_row_id(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    heads, receipts = {}, []
    for i, (branch, start, n) in enumerate(COMMITS):
        if i == 2:
            snaps = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", "--no-rows")["snapshots"]
            assert peer("branch", "--uri", uri, "--table", f"{ns}.{name}", "--name", "old",
                        "--snapshot-id", snaps[0]["snapshot-id"])["snapshot-id"] == snaps[0]["snapshot-id"]
            peer("branch", "--uri", uri, "--table", f"{ns}.{name}", "--name", "head")
            heads["old"], heads["head"] = snaps[0]["snapshot-id"], snaps[1]["snapshot-id"]
        staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", n,
                      "--start-id", start)
        status, _, receipt = daemon.commit(ns, name, {"idempotency-key": f"br-{i}", "branch": branch,
                                                      "staged-manifests": [staged["manifest"]]})
        assert status == 200, receipt
        assert receipt["branch"] == branch and receipt["sequence-number"] == i + 1
        receipts.append(receipt)
        heads.setdefault(branch, None)
        parent = heads["main"] if branch == "fresh" else heads[branch]
        snap = next(s for s in peer("dump", "--uri", uri, "--table", f"{ns}.{name}", "--no-rows")["snapshots"]
                    if s["snapshot-id"] == receipt["snapshot-id"])
        assert snap["parent-snapshot-id"] == parent, (branch, snap)
        heads[branch] = receipt["snapshot-id"]

    # first-row-id of each commit = the running total over all branches.
    assert [r["snapshot-first-row-id"] for r in receipts] == [0, 3, 5, 9, 10, 12, 15, 17]
    A, B = rows_of(0, 3, 0, 1), rows_of(10, 2, 3, 2)
    C, D, E = rows_of(20, 4, 5, 3), rows_of(30, 1, 9, 4), rows_of(40, 2, 10, 5)
    F, G, H = rows_of(50, 3, 12, 6), rows_of(60, 2, 15, 7), rows_of(70, 1, 17, 8)
    expected = {"main": {**A, **B, **D, **G}, "old": {**A, **C, **F}, "head": {**A, **B, **E},
                "fresh": {**A, **B, **D, **G, **H}}
    expected_lists = {"main": [15, 9, 3, 0], "old": [12, 5, 0], "head": [10, 3, 0], "fresh": [17, 15, 9, 3, 0]}

    seen = {}
    for branch, want in expected.items():
        dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", "--branch", branch)
        assert dump["next-row-id"] == 18 == sum(n for _, _, n in COMMITS)
        assert dump["last-sequence-number"] == 8
        assert dump["ref-snapshot-id"] == heads[branch]
        assert [m["first-row-id"] for m in dump["manifests"]] == expected_lists[branch]
        got = {r["id"]: (r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]}
        assert got == want, branch
        ids = [r["_row_id"] for r in dump["rows"]]
        assert len(ids) == len(set(ids))
        for r in dump["rows"]:
            # Across branches one row id always names the same row.
            assert seen.setdefault(r["_row_id"], r["id"]) == r["id"]
    assert sorted(seen) == list(range(18))
