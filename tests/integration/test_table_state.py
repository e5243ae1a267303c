# SPDX-License-Identifier: Apache-2.0
"""In-memory table state against Apache Iceberg's REST catalog server (docs/design.md section 12).
A commit builds on the catalog's answer to the commit before it (no load); an Iceberg Java append
between two icecommitd commits is refused by the catalog's own requirement check (409), the state
is loaded again and the request lands; an idempotency key committed through another daemon is
still found. Iceberg Java reads every table back: every row once, with the row ids the receipts
name."""
import collections
import os

from conftest import PEERS, Daemon, peer
from writers import metric_lines, stage_requests


def loads(d):
    """icecommit_table_loads_total by reason."""
    out = collections.Counter()
    for k, v in metric_lines(d.url, "icecommit_table_loads_total").items():
        out[k.split('reason="')[1].split('"')[0]] += v
    return out


def attempts(d):
    out = collections.Counter()
    for k, v in metric_lines(d.url, "icecommit_commit_attempts_total").items():
        out[k.split('outcome="')[1].split('"')[0]] += v
    return out


def commit(d, ns, name, req):
    status, _, body = d.commit(ns, name, req.body())
    assert status == 200, body
    req.status, req.receipt = status, body
    return body


def check_rows(uri, ns, name, reqs, java_ids=()):
    """Iceberg Java reads the table: each staged row once with the _row_id its receipt gave it,
    Java's own rows once, row ids unique, next-row-id the sum of added-rows."""
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    rows = dump["rows"]
    by_id = collections.defaultdict(list)
    for r in rows:
        by_id[r["id"]].append(r)
    for req in reqs:
        first = req.receipt["manifests"][0]["first-row-id"]
        for pos, i in enumerate(req.ids):
            assert len(by_id[i]) == 1, (req.key, i, by_id[i])
            assert by_id[i][0]["_row_id"] == first + pos, (req.key, i, by_id[i][0], first)
            assert by_id[i][0]["_last_updated_sequence_number"] == req.receipt["sequence-number"]
    for i in java_ids:
        assert len(by_id[i]) == 1, (i, by_id[i])
    assert len(rows) == sum(len(r.ids) for r in reqs) + len(java_ids)
    assert len({r["_row_id"] for r in rows}) == len(rows)
    assert dump["next-row-id"] == sum(s["added-rows"] for s in dump["snapshots"])
    return dump


def test_commits_build_on_the_commit_response(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    reqs = stage_requests(uri, ns, name, 5, "state")
    for r in reqs:
        commit(daemon, ns, name, r)
    # First sight of the table: one load at the first request's intake and one for its batch;
    # the four later requests were checked and committed on the catalog's commit responses.
    assert loads(daemon) == {"intake": 1, "first": 1}, loads(daemon)
    assert attempts(daemon) == {"committed": 5}, attempts(daemon)
    for before, after in zip(reqs, reqs[1:]):
        assert after.receipt["sequence-number"] == before.receipt["sequence-number"] + 1
        assert after.receipt["snapshot-first-row-id"] == (before.receipt["snapshot-first-row-id"]
                                                          + len(before.ids))
    dump = check_rows(uri, ns, name, reqs)
    assert len(dump["snapshots"]) == 5


def test_a_java_commit_between_ours_is_a_409_and_a_reload(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    reqs = stage_requests(uri, ns, name, 3, "java-between", start_id=0)
    commit(daemon, ns, name, reqs[0])
    # Iceberg Java appends directly: the daemon's state does not know that snapshot.
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 2, "--start-id", 1_000_000,
         "--count", 1)
    second = commit(daemon, ns, name, reqs[1])
    # The first attempt asserted the head the daemon had committed: the catalog refused it.
    assert second["attempts"] == 2, second
    assert attempts(daemon) == {"committed": 2, "conflict": 1}, attempts(daemon)
    assert loads(daemon)["conflict"] == 1, loads(daemon)
    # Built on the reloaded table: after Java's rows (3 staged + 2 Java).
    assert second["snapshot-first-row-id"] == len(reqs[0].ids) + 2, second
    # The reload is the state again: the next commit needs no load and no retry.
    before = sum(loads(daemon).values())
    third = commit(daemon, ns, name, reqs[2])
    assert third["attempts"] == 1
    assert sum(loads(daemon).values()) == before, loads(daemon)
    check_rows(uri, ns, name, reqs, java_ids=[1_000_000, 1_000_001])


def test_a_key_committed_through_another_daemon_is_found(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    reqs = stage_requests(uri, ns, name, 2, "other-daemon")
    commit(daemon, ns, name, reqs[0])   # the daemon now holds the table's state
    other = Daemon(uri, catalog["dir"])
    try:
        landed = commit(other, ns, name, reqs[1])
    finally:
        other.stop()
    # The writer never saw that answer and retries here with the same key and body.
    status, headers, again = daemon.commit(ns, name, reqs[1].body())
    assert status == 200, again
    assert headers.get("Icecommit-Found-In-History") == "true", again
    assert again == landed, (again, landed)
    # One attempt built on the old state was refused by the catalog; the reload showed the key.
    assert attempts(daemon) == {"committed": 1, "conflict": 1}, attempts(daemon)
    dump = check_rows(uri, ns, name, reqs)
    assert len(dump["snapshots"]) == 2
