# SPDX-License-Identifier: Apache-2.0
"""Conflicts and failures injected by the fault-injecting launcher around the real REST catalog:
409s and the pre-1.11 stale 400 are retried by rebuilding only the manifest list (the lists of
failed attempts deleted, the staged manifest byte-identical); a 5xx or a reset after sending is an
unknown outcome answered 504 with every file kept; a retry with the same key resolves it."""
import glob
import hashlib
import os
import time

import pytest

from conftest import found_in_history, http, is_copy_of, peer
from faults import clear_faults, get_faults, set_faults


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(autouse=True)
def no_faults_left(catalog):
    clear_faults(catalog["uri"])
    yield
    clear_faults(catalog["uri"])


def stage(uri, ns, name, rows=5, start=1):
    return peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", rows, "--start-id", start)


def lists_of(table_location, snapshot_id):
    return sorted(glob.glob(os.path.join(table_location, "metadata", f"snap-{snapshot_id}-*.avro")))


@pytest.mark.parametrize("fault", ["conflict", "stale-400"])
def test_conflicts_rebuild_only_the_manifest_list(catalog, daemon, table, fault):
    ns, name, created = table
    uri = catalog["uri"]
    staged = stage(uri, ns, name)
    digest = sha256(staged["manifest"])
    set_faults(uri, commit=[fault] * 3, table=f"{ns}.{name}")

    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": f"c-{fault}",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["attempts"] == 4
    assert get_faults(uri)["injected"][fault] == 3
    assert sha256(staged["manifest"]) == digest
    # Only the committed attempt's list is left: the three refused ones were deleted (on the
    # thread pool, so allow them a moment).
    deadline = time.time() + 10
    while [os.path.basename(p).split("-")[2] for p in lists_of(created["location"], receipt["snapshot-id"])] != ["4"]:
        assert time.time() < deadline, lists_of(created["location"], receipt["snapshot-id"])
        time.sleep(0.05)

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert dump["next-row-id"] == 5 and [r["_row_id"] for r in dump["rows"]] == list(range(5))


@pytest.mark.parametrize("fault", ["lost-response", "reset", "error-500", "error-502", "error-503", "error-504",
                                   "reset-before"])
def test_no_verdict_is_resolved_before_answering(catalog, daemon, table, fault):
    """A commit without a verdict is resolved inline: a landed one is found in the table
    history (never committed again), one that did not land is committed by a new attempt. The
    unknown attempt's manifest list is kept either way."""
    ns, name, created = table
    uri = catalog["uri"]
    staged = stage(uri, ns, name)
    body = {"idempotency-key": f"u-{fault}", "staged-manifests": [staged["manifest"]]}
    set_faults(uri, commit=[fault], table=f"{ns}.{name}")

    status, headers, receipt = daemon.commit(ns, name, body)
    assert status == 200, receipt
    applied = fault in ("lost-response", "reset")
    resent = fault == "reset-before" and receipt["attempts"] == 1   # libcurl resent it, see below
    if not resent:
        assert found_in_history(headers) is applied, (receipt, dict(headers))
        # Found in history or not, the receipt names the staged manifest (and icecommitd's copy
        # of it) and its row ids.
        assert is_copy_of(receipt["manifests"][0], staged["manifest"]), receipt
        assert receipt["manifests"][0]["first-row-id"] == 0 and receipt["attempts"] == (1 if applied else 2)
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 1 and dump["next-row-id"] == 5
    assert [r["_row_id"] for r in dump["rows"]] == list(range(5))
    snapshot_id = dump["snapshots"][0]["snapshot-id"]
    # The unknown attempt's list stays (it is the committed one when the fault applied it);
    # libcurl's own resend of a request whose connection died unanswered is one attempt.
    lists = lists_of(created["location"], snapshot_id)
    assert len(lists) == (1 if applied or resent else 2), lists
    assert os.path.exists(staged["manifest"])


def test_no_verdict_for_good_is_504_and_a_retry_resolves_it(catalog, table):
    from conftest import Daemon
    ns, name, created = table
    uri = catalog["uri"]
    staged = stage(uri, ns, name)
    body = {"idempotency-key": "stays-unknown", "staged-manifests": [staged["manifest"]]}
    # The first commit lands but its answer is lost; every later commit and reload fails (the
    # first two loads pass: the request's intake, the first attempt).
    set_faults(uri, commit=["lost-response"] + ["error-500"] * 10, load=["pass", "pass"] + ["error-503"] * 10,
               table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.max-attempts": "3"})
    try:
        status, _, answer = d.commit(ns, name, body)
        assert status == 504 and answer["error"]["type"] == "commit-state-unknown", answer
        assert "may be committed" in answer["error"]["message"]
        status, _, answer = http("GET", f"{d.url}/v1/commits/stays-unknown")
        assert status == 200 and answer["status"] == "unknown"
        clear_faults(uri)
        status, headers, receipt = d.commit(ns, name, body)
        assert status == 200 and found_in_history(headers), receipt
        assert is_copy_of(receipt["manifests"][0], staged["manifest"]), receipt
    finally:
        d.stop()
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 1 and dump["next-row-id"] == 5


def test_replay_with_the_same_idempotency_key(catalog, table):
    """Where the catalog honours Idempotency-Key, an attempt without a verdict is replayed
    with the same key, and the catalog answers with the original outcome."""
    from conftest import Daemon
    ns, name, _ = table
    uri = catalog["uri"]
    staged = stage(uri, ns, name)
    set_faults(uri, commit=["lost-response"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"catalog.send-idempotency-key": "true"})
    try:
        status, headers, receipt = d.commit(ns, name, {"idempotency-key": "replay-1",
                                                       "staged-manifests": [staged["manifest"]]})
        # The replay resends attempt 1 as it was: the receipt names the attempt that built it.
        assert status == 200 and receipt["attempts"] == 1, receipt
        assert not found_in_history(headers), "resolved by the replay, not by a reload"
        events = [e for e in get_faults(uri)["events"] if e["kind"] == "lost-response"]
        assert events and events[-1]["idempotency-key"], "the commit carried an Idempotency-Key"
        _, _, metrics = http("GET", d.url + "/metrics")
        assert 'icecommit_commit_retries_total{reason="replay"} 1' in metrics
    finally:
        d.stop()
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 1 and dump["next-row-id"] == 5


def test_load_failures_are_retried(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = stage(uri, ns, name)
    body = {"idempotency-key": "load-1", "staged-manifests": [staged["manifest"]]}
    # The load at intake (for the table's location and storage settings, before anything is
    # read) failing is a retryable answer, and the key stays free.
    set_faults(uri, load=["error-503"], table=f"{ns}.{name}")
    status, headers, answer = daemon.commit(ns, name, body)
    assert status == 503 and answer["error"]["type"] == "catalog-unavailable", answer
    assert int(headers["Retry-After"]) >= 1
    # The attempts' loads are retried by icecommitd itself.
    set_faults(uri, load=["pass", "error-503", "reset-before", "error-500"], table=f"{ns}.{name}", reset_counters=True)
    status, _, receipt = daemon.commit(ns, name, body)
    assert status == 200, receipt
    injected = get_faults(uri)["injected"]
    assert injected.get("error-503") == 1 and injected.get("error-500") == 1 and injected.get("reset-before") == 1
    # 4 attempts, or 3 when libcurl resent the GET after the reset on its own (GET is safe).
    assert receipt["attempts"] in (3, 4)


def test_exhausted_attempts_answer_503_and_commit_nothing(catalog, table):
    from conftest import Daemon
    ns, name, created = table
    uri = catalog["uri"]
    staged = stage(uri, ns, name)
    body = {"idempotency-key": "exhausted-1", "staged-manifests": [staged["manifest"]]}
    set_faults(uri, commit=["conflict"] * 3, table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.max-attempts": "3"})
    try:
        status, headers, answer = d.commit(ns, name, body)
        assert status == 503 and answer["error"]["type"] == "commit-conflict", answer
        assert "after 3 attempts" in answer["error"]["message"]
        assert "Retry-After" in headers
        # The refused attempts' lists are deleted on the thread pool once their outcome is
        # known, not necessarily before the writer's answer: allow them a moment.
        deadline = time.time() + 10
        while glob.glob(os.path.join(created["location"], "metadata", "snap-*.avro")):
            assert time.time() < deadline, "manifest lists of refused attempts were not deleted"
            time.sleep(0.05)
        # Nothing was committed, so the same key may simply be sent again.
        status, _, receipt = d.commit(ns, name, body)
        assert status == 200 and receipt["attempts"] == 1, receipt
    finally:
        d.stop()
