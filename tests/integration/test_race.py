# SPDX-License-Identifier: Apache-2.0
"""8 writer processes x 25 commits through icecommitd while Iceberg Java appends directly to the
same table in a loop (real 409s). Every request is answered, every row is present exactly once,
_row_id is unique, next-row-id equals the sum of added-rows, staged manifests are untouched."""
import concurrent.futures
import hashlib
import json
import re
import subprocess
import os

from conftest import PEERS, http, peer

WRITERS = 8
COMMITS = 25
ROWS = 4
JAVA_COMMITS = 15
JAVA_ROWS = 3


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def writer(daemon, ns, name, w, manifests):
    answers = []
    for c, m in enumerate(manifests):
        body = {"idempotency-key": f"race-{w}-{c}", "staged-manifests": [m["manifest"]]}
        for _ in range(20):   # a writer retries definite 503s with the same key
            status, _, answer = daemon.commit(ns, name, body)
            if status != 503:
                break
        answers.append((status, answer))
    return answers


def test_race_against_a_direct_java_writer(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", ROWS,
                  "--start-id", 1_000_000, "--manifests", WRITERS * COMMITS)["manifests"]
    checksums = {m["manifest"]: sha256(m["manifest"]) for m in staged}

    java = subprocess.Popen([os.path.join(PEERS, "peer.sh"), "append", "--uri", uri, "--table", f"{ns}.{name}",
                             "--rows", str(JAVA_ROWS), "--start-id", "0", "--count", str(JAVA_COMMITS)],
                            stdout=subprocess.PIPE, text=True)
    with concurrent.futures.ThreadPoolExecutor(WRITERS) as pool:
        futures = [pool.submit(writer, daemon, ns, name, w, staged[w * COMMITS:(w + 1) * COMMITS])
                   for w in range(WRITERS)]
        answers = [a for f in futures for a in f.result()]
    java_out, _ = java.communicate(timeout=600)
    assert java.returncode == 0
    java_attempts = json.loads(java_out).get("attempts", [])

    assert len(answers) == WRITERS * COMMITS
    bad = [(s, a) for s, a in answers if s != 200]
    assert not bad, bad[:3]

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    ids = [r["id"] for r in dump["rows"]]
    expected = set(range(JAVA_COMMITS * JAVA_ROWS)) | set(range(1_000_000, 1_000_000 + WRITERS * COMMITS * ROWS))
    assert len(ids) == len(expected) and set(ids) == expected, "every row exactly once"
    row_ids = [r["_row_id"] for r in dump["rows"]]
    assert len(set(row_ids)) == len(row_ids), "_row_id unique"
    assert dump["next-row-id"] == sum(s["added-rows"] for s in dump["snapshots"])
    assert sorted(row_ids) == list(range(dump["next-row-id"])), "no gaps for pure appends"

    # Receipts agree with what the Java reader sees for each writer's rows.
    by_id = {r["id"]: r for r in dump["rows"]}
    for (status, receipt), m in zip(answers, staged):
        first = receipt["manifests"][0]["first-row-id"]
        first_id = m["data-files"][0]["first-id"]
        for pos in range(ROWS):
            r = by_id[first_id + pos]
            assert r["_row_id"] == first + pos
            assert r["_last_updated_sequence_number"] == receipt["sequence-number"]

    for path, digest in checksums.items():
        assert sha256(path) == digest, "staged manifest rewritten: " + path

    ours = [s for s in dump["snapshots"] if "icecommit.idempotency-keys" in s["summary"]]
    assert len(ours) <= WRITERS * COMMITS
    batched = sum(len(s["summary"]["icecommit.idempotency-keys"].split(",")) for s in ours)
    assert batched == WRITERS * COMMITS, "every key recorded exactly once"

    _, _, metrics = http("GET", daemon.url + "/metrics")
    conflicts = re.search(r'icecommit_commit_attempts_total\{outcome="conflict"\} (\d+)', metrics)
    ours_conflicts = int(conflicts.group(1)) if conflicts else 0
    java_retries = sum(a - 1 for a in java_attempts)
    print(f"requests={len(answers)} snapshots={len(ours)} our-409s={ours_conflicts} java-retries={java_retries}")
    assert ours_conflicts + java_retries > 0, "the writers never raced"
