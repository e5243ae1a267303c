# SPDX-License-Identifier: Apache-2.0
"""One data file once, against the table (issue 10, item 3): a data file that is live in the
table already, committed through icecommitd or by Iceberg Java, is refused with 422
data-file-already-committed when a writer sends it again under a new manifest or through
data-files; the table is unchanged (read by Iceberg Java) and a well-behaved writer commits
afterwards. A file deleted from the table may come back; the table property
icecommit.live-file-index.enabled=false turns the check off; an index over its memory bound is
dropped and the table commits without the check."""
import os
import re
import shutil

import time

import pytest

from conftest import Daemon, http, peer
from test_data_files import describe, write_parquet


def dump(catalog, ns, name):
    return peer("dump", "--uri", catalog["uri"], "--table", f"{ns}.{name}")


def metric(daemon, name, label=""):
    _, _, text = http("GET", daemon.url + "/metrics")
    m = re.search(r"^" + re.escape(name + label) + r" (\S+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def copy_manifest(path, suffix):
    """The same entries under a new manifest path (a writer staging a file again)."""
    path = path.removeprefix("file:")
    copy = path.replace(".avro", f"-{suffix}.avro")
    shutil.copyfile(path, copy)
    return copy


def stage(catalog, ns, name, start_id, rows=2):
    return peer("stage", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--files", 1, "--rows", rows,
                "--start-id", start_id)


def test_files_live_in_the_table_are_refused(catalog, daemon, table):
    ns, name, created = table
    staged = stage(catalog, ns, name, 0)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "live-a", "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert metric(daemon, "icecommit_live_file_index_bytes") > 0

    # Committed through icecommitd, staged again in a new manifest under a new key.
    before = dump(catalog, ns, name)
    again = copy_manifest(staged["manifest"], "again")
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "live-b", "staged-manifests": [again]})
    assert status == 422 and answer["error"]["type"] == "data-file-already-committed", answer
    message = answer["error"]["message"]
    assert f"staged-manifests[0] '{again}' entry 0" in message, message
    assert staged["data-files"][0]["path"] in message and "already live in the table" in message, message
    # The manifest holding it: the table's, icecommitd's copy of the staged one.
    assert f"snapshot {receipt['snapshot-id']}" in message and receipt["manifests"][0]["location"] in message, message

    # The same file through data-files, after its staged manifest, under another spelling.
    path = staged["data-files"][0]["path"].removeprefix("file:")
    described = describe(path, [0, 1])
    described["file-path"] = "file://" + path.replace("/data/", "/data/./")
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "live-c", "data-files": [described]})
    assert status == 422 and answer["error"]["type"] == "data-file-already-committed", answer
    assert "'data-files'[0]" in answer["error"]["message"], answer

    # Committed by Iceberg Java directly (a new manifest icecommitd never saw), then sent through
    # icecommitd: the index follows the foreign commit by reading only its new manifest.
    read_before = metric(daemon, "icecommit_live_file_index_manifests_read_total")
    appended = peer("append", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--rows", 3, "--start-id", 100)
    java_file = appended["data-files"][0].removeprefix("file:")
    after_java = dump(catalog, ns, name)
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "live-d",
                                                 "data-files": [describe(java_file, [100, 101, 102])]})
    assert status == 422 and answer["error"]["type"] == "data-file-already-committed", answer
    assert f"snapshot {appended['snapshots'][0]}" in answer["error"]["message"], answer
    assert metric(daemon, "icecommit_live_file_index_manifests_read_total") == read_before + 1
    assert metric(daemon, "icecommit_live_file_refusals_total") == 3

    final = dump(catalog, ns, name)
    assert final["metadata-location"] == after_java["metadata-location"]
    assert final["next-row-id"] == before["next-row-id"] + 3
    assert sorted(r["id"] for r in final["rows"]) == [0, 1, 100, 101, 102]

    # A well-behaved writer commits afterwards, and a batch's other requests are not held up.
    fresh = stage(catalog, ns, name, 10)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "live-e", "staged-manifests": [fresh["manifest"]]})
    assert status == 200, receipt
    rows = dump(catalog, ns, name)["rows"]
    assert sorted(r["id"] for r in rows) == [0, 1, 10, 11, 100, 101, 102]
    assert sorted(r["_row_id"] for r in rows) == list(range(7))


def test_a_deleted_file_may_come_back(catalog, daemon, table):
    ns, name, created = table
    staged = stage(catalog, ns, name, 0)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "del-a", "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    path = staged["data-files"][0]["path"]
    # Iceberg Java removes the file: its manifest is rewritten with the entry DELETED.
    peer("evolve", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--ops", f'[["delete-file", "{path}"]]')
    assert dump(catalog, ns, name)["rows"] == []

    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "del-b",
                                                 "staged-manifests": [copy_manifest(staged["manifest"], "back")]})
    assert status == 200, receipt
    assert sorted(r["id"] for r in dump(catalog, ns, name)["rows"]) == [0, 1]
    # ... and once back, it is live again.
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "del-c",
                                                 "staged-manifests": [copy_manifest(staged["manifest"], "twice")]})
    assert status == 422 and answer["error"]["type"] == "data-file-already-committed", answer


@pytest.fixture
def quick_state_daemon(catalog):
    """A property change commits no snapshot: a daemon applies it once its state of the table
    is older than commit.table-state-max-age-ms (a second here)."""
    d = Daemon(catalog["uri"], catalog["dir"], {"commit.table-state-max-age-ms": "1000"})
    try:
        yield d
    finally:
        d.stop()


def test_the_table_property_turns_the_check_off(catalog, quick_state_daemon, table):
    daemon = quick_state_daemon
    ns, name, created = table
    path = write_parquet(created["location"], [5, 6])
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "off-a", "data-files": [describe(path, [5, 6])]})
    assert status == 200, receipt
    peer("evolve", "--uri", catalog["uri"], "--table", f"{ns}.{name}",
         "--ops", '[["set-property", "icecommit.live-file-index.enabled", "false"]]')
    # The operator's choice: the file is committed a second time.
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "off-b", "data-files": [describe(path, [5, 6])]})
    assert status == 200, receipt
    assert sorted(r["id"] for r in dump(catalog, ns, name)["rows"]) == [5, 5, 6, 6]
    assert metric(daemon, "icecommit_live_file_index_bytes") == 0

    peer("evolve", "--uri", catalog["uri"], "--table", f"{ns}.{name}",
         "--ops", '[["set-property", "icecommit.live-file-index.enabled", "true"]]')
    time.sleep(1.2)  # turning the check on takes effect once the daemon's table state aged out
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "off-c", "data-files": [describe(path, [5, 6])]})
    assert status == 422 and answer["error"]["type"] == "data-file-already-committed", answer


@pytest.fixture
def tiny_daemon(catalog):
    d = Daemon(catalog["uri"], catalog["dir"], {"commit.live-file-index-max-table-bytes": "1024"})
    try:
        yield d
    finally:
        d.stop()


def test_an_index_over_its_bound_is_dropped(catalog, tiny_daemon, table):
    ns, name, created = table
    d = tiny_daemon
    staged = stage(catalog, ns, name, 0)
    status, _, receipt = d.commit(ns, name, {"idempotency-key": "big-a", "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    # The index cannot hold the table: dropped, said, counted; commits go on unchecked.
    assert metric(d, "icecommit_live_file_index_drops_total", '{reason="too-large"}') == 1
    assert metric(d, "icecommit_live_file_index_bytes") == 0
    assert "live-file index dropped" in open(d.log).read()
    status, _, receipt = d.commit(ns, name, {"idempotency-key": "big-b",
                                             "staged-manifests": [copy_manifest(staged["manifest"], "unchecked")]})
    assert status == 200, receipt
    assert sorted(r["id"] for r in dump(catalog, ns, name)["rows"]) == [0, 0, 1, 1]
