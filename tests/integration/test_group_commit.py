# SPDX-License-Identifier: Apache-2.0
"""Group commit: requests arriving while a commit of their table and branch is in flight wait,
and the next attempt commits all of them in one snapshot, within the configured limits. Every
writer gets its own receipt with the row-id range of each of its manifests."""
import concurrent.futures
import time

from conftest import Daemon, http, peer, register_catalog_roots, rest_catalog_roots
from s3_proxy import S3FaultProxy


def table_queue(d, name):
    """icecommit_table_queue_requests of the table: its requests past intake, waiting or in the
    batch in flight."""
    status, _, text = http("GET", d.url + "/metrics")
    assert status == 200, text
    for line in text.splitlines():
        if line.startswith("icecommit_table_queue_requests{") and f".{name}\"" in line:
            return float(line.split()[-1])
    return 0.0


def wait_for(what, cond, timeout_s=120):
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, f"still not {what} after {timeout_s} s"
        time.sleep(0.05)


def commit_behind_held_first(catalog, name, bodies, settings):
    """Commits bodies[0], holds its catalog commit in a proxy until bodies[1:] are all past
    intake and wait for their table (no timer: a daemon under valgrind is slow to read them),
    then lets it go. Returns the daemon's answers, in the order of bodies."""
    ns = "ns"
    proxy = S3FaultProxy(catalog["uri"]).start()
    register_catalog_roots(proxy.endpoint, rest_catalog_roots(catalog["dir"]))
    proxy.add("POST", f"/tables/{name}", "hold")
    d = Daemon(proxy.endpoint, catalog["dir"], settings)
    try:
        with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
            first = pool.submit(d.commit, ns, name, bodies[0])
            wait_for("the first commit at the catalog", lambda: proxy.injected["hold"] == 1)
            rest = [pool.submit(d.commit, ns, name, b) for b in bodies[1:]]
            wait_for("all requests queued", lambda: table_queue(d, name) == len(bodies))
            proxy.release()
            return [first.result()] + [f.result() for f in rest]
    finally:
        proxy.release()
        d.stop()
        proxy.stop()


def test_waiting_requests_share_the_next_snapshot(catalog, table):
    ns, name, _ = table
    uri = catalog["uri"]
    n = 21
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 0, "--manifests", n)["manifests"]
    # The other 20 requests wait behind the first commit; with at most 8 requests per batch they
    # go out as 8 + 8 + 4.
    answers = commit_behind_held_first(
        catalog, name, [{"idempotency-key": f"g-{i}", "staged-manifests": [staged[i]["manifest"]]}
                        for i in range(n)], {"commit.max-batch-requests": "8"})

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
    answers = commit_behind_held_first(
        catalog, name, [{"idempotency-key": f"m-{i}", "staged-manifests": staged[2 * i:2 * i + 2]}
                        for i in range(5)],
        {"commit.max-batch-manifests": "4", "commit.max-manifests-per-request": "2"})
    d = Daemon(uri, catalog["dir"], {"commit.max-batch-manifests": "4",
                                     "commit.max-manifests-per-request": "2"})
    try:
        status, _, err = d.commit(ns, name, {"idempotency-key": "m-too-many",
                                             "staged-manifests": staged[0:3]})
        assert status == 413 and err["error"]["type"] == "too-many-manifests", err
    finally:
        d.stop()
    assert all(s == 200 for s, _, _ in answers)
    sizes = {}
    for _, _, r in answers:
        sizes.setdefault(r["snapshot-id"], r["batch-requests"])
    assert sorted(sizes.values()) == [1, 2, 2]
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert dump["next-row-id"] == 10 and sorted(r["_row_id"] for r in dump["rows"]) == list(range(10))
