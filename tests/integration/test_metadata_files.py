# SPDX-License-Identifier: Apache-2.0
"""The embedded filesystem catalog at any table age: its table cache never hides a version
another writer (Iceberg Java) published between two icecommitd commits."""
import glob
import os

import pytest

from conftest import peer


@pytest.fixture
def catalog(filesystem_catalog):
    return filesystem_catalog


def versions(uri, ns, name):
    return sorted(int(os.path.basename(p)[1:].split(".")[0])
                  for p in glob.glob(os.path.join(uri, ns, name, "metadata", "v*.metadata.json")))


def stage_and_commit(daemon, uri, ns, name, key, start_id, rows=3):
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", rows,
                  "--start-id", start_id)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": key,
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["status"] == "committed"
    return receipt


def test_another_writer_between_two_commits(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    stage_and_commit(daemon, uri, ns, name, "first", 0)
    before = versions(uri, ns, name)[-1]
    # Iceberg Java commits on its own, behind the catalog's cache.
    peer("append", "--uri", uri, "--table", f"{ns}.{name}", "--rows", 4, "--start-id", 500)
    assert versions(uri, ns, name)[-1] == before + 1
    receipt = stage_and_commit(daemon, uri, ns, name, "second", 1000)
    assert versions(uri, ns, name)[-1] == before + 2
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    ids = sorted(r["id"] for r in dump["rows"])
    assert ids == [0, 1, 2] + [500, 501, 502, 503] + [1000, 1001, 1002]
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(10))
    snap = next(s for s in dump["snapshots"] if s["snapshot-id"] == receipt["snapshot-id"])
    assert snap["first-row-id"] == 7
