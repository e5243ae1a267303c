# SPDX-License-Identifier: Apache-2.0
"""Lineage guardrails (issue 4 item 4): staged equality-delete manifests on v3 tables are refused
by default and leave the table unchanged; a per-table property (or the daemon's [lineage]
equality-deletes) allows them, and then they commit as Iceberg Java would (content 1 in the list,
no first_row_id, the new sequence number, Java's summary counters) and Java's reader drops the
deleted rows; the lineage_breaks metric counts each request. v2 tables accept them (no lineage).
Position deletes and ADDED entries carrying a first_row_id are always refused."""
import os
import time
import uuid

import fastavro
import pytest

from conftest import Daemon, peer
from writers import metric_lines


def metadata(uri, ns, name):
    return peer("metadata", "--uri", uri, "--table", f"{ns}.{name}")


def new_table(uri, format_version):
    name = "g_" + uuid.uuid4().hex[:12]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", format_version)
    return "ns", name


def append_rows(uri, daemon, ns, name, start, rows, key):
    """Stages one data file of ids start..start+rows-1 and commits it through the daemon."""
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", rows,
                  "--start-id", start)
    got, _, answer = daemon.commit(ns, name, {"idempotency-key": key, "staged-manifests": [staged["manifest"]]})
    assert got == 200, answer
    return answer


def stage_deletes(uri, ns, name, ids):
    return peer("stage-eq-deletes", "--uri", uri, "--table", f"{ns}.{name}", "--ids", ",".join(map(str, ids)))


def set_property(uri, ns, name, key, value):
    peer("evolve", "--uri", uri, "--table", f"{ns}.{name}", "--ops", f'[["set-property", "{key}", "{value}"]]')


def refused(daemon, ns, name, key, manifest, status, error_type, *parts):
    got, _, answer = daemon.commit(ns, name, {"idempotency-key": key, "staged-manifests": [manifest]})
    assert got == status, answer
    assert answer["error"]["type"] == error_type, answer
    for part in parts:
        assert part in answer["error"]["message"], answer
    return answer


def lineage_breaks(daemon):
    return metric_lines(daemon.url, "icecommit_lineage_breaks_total")


def test_v3_equality_deletes_refused_by_default(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri, 3)
    append_rows(uri, daemon, ns, name, 0, 5, "data-1")
    deletes = stage_deletes(uri, ns, name, [1, 3])
    assert deletes["content"] == 1 and deletes["added-rows"] == 2
    before = metadata(uri, ns, name)

    refused(daemon, ns, name, "del-1", deletes["manifest"], 422, "lineage-guardrail", deletes["manifest"],
            "holds 1 equality delete file(s)", "cannot keep row lineage", "the policy is reject",
            "icecommit.equality-deletes")
    # An explicit reject, and a value that is no policy, refuse as well.
    set_property(uri, ns, name, "icecommit.equality-deletes", "reject")
    before = metadata(uri, ns, name)
    refused(daemon, ns, name, "del-2", deletes["manifest"], 422, "lineage-guardrail", "the policy is reject")
    assert metadata(uri, ns, name) == before, "a refused request changed the table"
    set_property(uri, ns, name, "icecommit.equality-deletes", "sometimes")
    before = metadata(uri, ns, name)
    refused(daemon, ns, name, "del-3", deletes["manifest"], 422, "lineage-guardrail",
            "table property 'icecommit.equality-deletes' is 'sometimes', expected 'reject' or 'allow'")
    assert metadata(uri, ns, name) == before, "a refused request changed the table"
    assert lineage_breaks(daemon) == {}

    rows = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")["rows"]
    assert [(r["id"], r["_row_id"]) for r in rows] == [(i, i) for i in range(5)]


def test_v3_equality_deletes_allowed_by_table_property(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri, 3)
    append_rows(uri, daemon, ns, name, 0, 5, "data-1")
    set_property(uri, ns, name, "icecommit.equality-deletes", "allow")
    deletes = stage_deletes(uri, ns, name, [1, 3])

    got, _, receipt = daemon.commit(ns, name, {"idempotency-key": "del-1", "staged-manifests": [deletes["manifest"]]})
    assert got == 200, receipt
    assert receipt["manifests"][0]["content"] == "deletes"
    assert "first-row-id" not in receipt["manifests"][0]
    assert receipt["snapshot-first-row-id"] == 5
    assert lineage_breaks(daemon) == {f'icecommit_lineage_breaks_total{{table="{ns}.{name}"}}': 1.0}

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    # Java's reader applies the delete (sequence 2 > the data's 1): rows 1 and 3 are gone, the
    # others keep their row ids; no row ids were consumed.
    assert [(r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]] == \
        [(0, 0, 1), (2, 2, 1), (4, 4, 1)]
    assert dump["next-row-id"] == 5 and dump["last-sequence-number"] == 2
    snap = dump["snapshots"][-1]
    assert snap["first-row-id"] == 5 and snap["added-rows"] == 0 and snap["sequence-number"] == 2
    assert snap["operation"] == "delete"
    summary = snap["summary"]
    size = deletes["delete-files"][0]["file-size-in-bytes"]
    assert {k: summary.get(k) for k in ("added-delete-files", "added-equality-delete-files", "added-equality-deletes",
                                        "added-files-size", "total-delete-files", "total-equality-deletes",
                                        "total-records", "total-data-files", "added-records", "added-data-files")} == {
        "added-delete-files": "1", "added-equality-delete-files": "1", "added-equality-deletes": "2",
        "added-files-size": str(size), "total-delete-files": "1", "total-equality-deletes": "2",
        "total-records": "5", "total-data-files": "1", "added-records": None, "added-data-files": None}
    delete_manifest = dump["manifests"][0]
    assert delete_manifest["path"] == receipt["manifests"][0]["location"]   # icecommitd's copy
    assert receipt["manifests"][0]["staged-location"] == deletes["manifest"]
    assert delete_manifest["content"] == 1 and delete_manifest["first-row-id"] is None
    assert delete_manifest["sequence-number"] == 2 and delete_manifest["min-sequence-number"] == 2
    assert delete_manifest["added-files"] == 1 and delete_manifest["added-rows"] == 2
    assert delete_manifest["files"][0]["content"] == 2 and delete_manifest["files"][0]["data-sequence-number"] == 2
    assert dump["manifests"][1]["content"] == 0 and dump["manifests"][1]["first-row-id"] == 0

    # Lineage goes on after it: the next append starts at row id 5.
    answer = append_rows(uri, daemon, ns, name, 100, 2, "data-2")
    assert answer["snapshot-first-row-id"] == 5
    rows = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")["rows"]
    assert [(r["id"], r["_row_id"]) for r in rows] == [(0, 0), (2, 2), (4, 4), (100, 5), (101, 6)]
    assert lineage_breaks(daemon) == {f'icecommit_lineage_breaks_total{{table="{ns}.{name}"}}': 1.0}


def test_daemon_default_allow_and_table_reject(catalog):
    uri = catalog["uri"]
    # The table state ages out after a second here: a property change commits no snapshot, so
    # a daemon applies it once its state of the table is older than commit.table-state-max-age-ms.
    d = Daemon(uri, catalog["dir"], settings={"lineage.equality-deletes": "allow",
                                              "commit.table-state-max-age-ms": "1000"})
    try:
        ns, name = new_table(uri, 3)
        append_rows(uri, d, ns, name, 0, 3, "data-1")
        deletes = stage_deletes(uri, ns, name, [2])
        got, _, answer = d.commit(ns, name, {"idempotency-key": "del-1", "staged-manifests": [deletes["manifest"]]})
        assert got == 200, answer
        rows = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")["rows"]
        assert [(r["id"], r["_row_id"]) for r in rows] == [(0, 0), (1, 1)]

        # The table's own reject wins over the daemon's allow.
        set_property(uri, ns, name, "icecommit.equality-deletes", "reject")
        again = stage_deletes(uri, ns, name, [0])
        time.sleep(1.2)  # (staging takes longer anyway)
        before = metadata(uri, ns, name)
        refused(d, ns, name, "del-2", again["manifest"], 422, "lineage-guardrail", "the policy is reject")
        assert metadata(uri, ns, name) == before
        assert lineage_breaks(d) == {f'icecommit_lineage_breaks_total{{table="{ns}.{name}"}}': 1.0}
    finally:
        d.stop()


def test_v2_equality_deletes_commit_without_a_policy(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri, 2)
    append_rows(uri, daemon, ns, name, 0, 4, "data-1")
    deletes = stage_deletes(uri, ns, name, [0, 2])
    got, _, answer = daemon.commit(ns, name, {"idempotency-key": "del-1", "staged-manifests": [deletes["manifest"]]})
    assert got == 200, answer
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert [r["id"] for r in dump["rows"]] == [1, 3]
    assert dump["manifests"][0]["content"] == 1 and dump["manifests"][0]["sequence-number"] == 2
    assert dump["snapshots"][-1]["summary"]["total-equality-deletes"] == "2"
    assert lineage_breaks(daemon) == {}


def rewrite(src, dst, change_entry):
    with open(src, "rb") as f:
        reader = fastavro.reader(f)
        schema = reader.writer_schema
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        entries = [change_entry(dict(e)) for e in reader]
    with open(dst, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), entries, codec="deflate", metadata=meta)
    return dst


def test_position_deletes_and_preset_row_ids_always_refused(catalog, daemon):
    uri = catalog["uri"]
    ns, name = new_table(uri, 3)
    append_rows(uri, daemon, ns, name, 0, 3, "data-1")
    set_property(uri, ns, name, "icecommit.equality-deletes", "allow")
    deletes = stage_deletes(uri, ns, name, [1])
    data = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 10)
    mdir = os.path.dirname(deletes["manifest"])
    position = rewrite(deletes["manifest"], os.path.join(mdir, "pos-deletes.avro"),
                       lambda e: dict(e, data_file=dict(e["data_file"], content=1, equality_ids=None)))
    preset = rewrite(data["manifest"], os.path.join(mdir, "preset-row-id.avro"),
                     lambda e: dict(e, data_file=dict(e["data_file"], first_row_id=3)))
    before = metadata(uri, ns, name)

    refused(daemon, ns, name, "pos", position, 422, "invalid-manifest", "pos-deletes.avro",
            "position delete files and deletion vectors cannot be staged")
    refused(daemon, ns, name, "preset", preset, 422, "invalid-manifest", "preset-row-id.avro", "entry 0",
            "first_row_id is 3, ADDED entries must leave it null")
    assert metadata(uri, ns, name) == before, "a refused request changed the table"
    assert lineage_breaks(daemon) == {}
