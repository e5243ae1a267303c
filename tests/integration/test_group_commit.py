# SPDX-License-Identifier: Apache-2.0
"""Group commit: requests arriving while a commit of their table and branch is in flight wait,
and the next attempt commits all of them in one snapshot, within the configured limits. Every
writer gets its own receipt with the row-id range of each of its manifests."""
import concurrent.futures
import time

from conftest import Daemon, peer
from faults import clear_faults, set_faults


def test_waiting_requests_share_the_next_snapshot(catalog, table):
    ns, name, _ = table
    uri = catalog["uri"]
    n = 21
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 0, "--manifests", n)["manifests"]
    # The first commit is held 1 s in the catalog: the other 20 requests arrive meanwhile. With
    # at most 8 requests per batch they go out as 8 + 8 + 4.
    set_faults(uri, commit=["delay-1000"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.max-batch-requests": "8"})
    try:
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            first = pool.submit(d.commit, ns, name, {"idempotency-key": "g-0",
                                                     "staged-manifests": [staged[0]["manifest"]]})
            time.sleep(0.3)
            rest = [pool.submit(d.commit, ns, name, {"idempotency-key": f"g-{i}",
                                                     "staged-manifests": [staged[i]["manifest"]]})
                    for i in range(1, n)]
            answers = [first.result()] + [f.result() for f in rest]
    finally:
        d.stop()
        clear_faults(uri)

    receipts = [a for s, _, a in answers]
    assert all(s == 200 for s, _, _ in answers), receipts
    sizes = {}
    for r in receipts:
        sizes.setdefault(r["snapshot-id"], r["batch-requests"])
    assert sorted(sizes.values()) == [1, 4, 8, 8]

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 4
    by_id = {r["id"]: r for r in dump["rows"]}
    ranges = []
    for r, m in zip(receipts, staged):
        mf = r["manifests"][0]
        ranges.append((mf["first-row-id"], mf["last-row-id"]))
        first_id = m["data-files"][0]["first-id"]
        assert by_id[first_id]["_row_id"] == mf["first-row-id"]
        assert by_id[first_id + 1]["_row_id"] == mf["last-row-id"]
        assert by_id[first_id]["_last_updated_sequence_number"] == r["sequence-number"]
    ranges.sort()
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:])), "row-id ranges overlap"
    assert dump["next-row-id"] == 2 * n


def test_batches_respect_the_manifest_limit(catalog, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = [m["manifest"] for m in peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1,
                                          "--rows", 1, "--start-id", 0, "--manifests", 10)["manifests"]]
    # 5 requests of 2 manifests; at most 4 manifests per snapshot: the 4 waiting behind the held
    # first commit go out as 2 + 2 requests.
    set_faults(uri, commit=["delay-1000"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.max-batch-manifests": "4", "commit.max-manifests-per-request": "2"})
    try:
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            first = pool.submit(d.commit, ns, name, {"idempotency-key": "m-0", "staged-manifests": staged[0:2]})
            time.sleep(0.3)
            rest = [pool.submit(d.commit, ns, name, {"idempotency-key": f"m-{i}",
                                                     "staged-manifests": staged[2 * i:2 * i + 2]})
                    for i in range(1, 5)]
            answers = [first.result()] + [f.result() for f in rest]
        status, _, err = d.commit(ns, name, {"idempotency-key": "m-too-many", "staged-manifests": staged[0:3]})
        assert status == 413 and err["error"]["type"] == "too-many-manifests", err
    finally:
        d.stop()
        clear_faults(uri)
    assert all(s == 200 for s, _, _ in answers)
    sizes = {}
    for _, _, r in answers:
        sizes.setdefault(r["snapshot-id"], r["batch-requests"])
    assert sorted(sizes.values()) == [1, 2, 2]
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert dump["next-row-id"] == 10 and sorted(r["_row_id"] for r in dump["rows"]) == list(range(10))
