# SPDX-License-Identifier: Apache-2.0
"""Every rejection of docs/design.md sections 2.1 and 5.1 returns its status and a message naming
the problem, and the table's metadata is unchanged afterwards."""
import json
import os
import shutil
import subprocess

import fastavro
import pytest

from conftest import BACKENDS, backend_catalog, http, peer


@pytest.fixture(params=BACKENDS)
def catalog(request):
    return backend_catalog(request)


def metadata(uri, ns, name):
    return peer("metadata", "--uri", uri, "--table", f"{ns}.{name}")


def rewrite_manifest(src, dst, change_entry=None, change_meta=None):
    """Copies a Java-written staged manifest with fastavro, changing entries or metadata."""
    with open(src, "rb") as f:
        reader = fastavro.reader(f)
        schema = reader.writer_schema
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
        entries = list(reader)
    if change_entry:
        entries = [change_entry(dict(e)) for e in entries]
    if change_meta:
        change_meta(meta)
    with open(dst, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), entries, codec="deflate", metadata=meta)
    return dst


@pytest.fixture
def staged(catalog, table):
    ns, name, _ = table
    return peer("stage", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--files", 2, "--rows", 3,
                "--start-id", 1)


def check(daemon, ns, name, body, status, error_type, *message_parts):
    got, _, answer = daemon.commit(ns, name, body)
    assert got == status, answer
    assert answer["error"]["code"] == status
    assert answer["error"]["type"] == error_type, answer
    for part in message_parts:
        assert part in answer["error"]["message"], answer


def test_rejections_leave_the_table_unchanged(catalog, daemon, table, staged):
    ns, name, _ = table
    uri = catalog["uri"]
    before = metadata(uri, ns, name)
    good = staged["manifest"]
    mdir = os.path.dirname(good)

    def variant(tag, **kw):
        return rewrite_manifest(good, os.path.join(mdir, f"bad-{tag}.avro"), **kw)

    def set_status(s):
        return lambda e: dict(e, status=s)

    check(daemon, ns, name, b"{not json", 400, "bad-request", "not valid JSON")
    check(daemon, ns, name, {"staged-manifests": [good]}, 400, "bad-request", "idempotency-key")
    check(daemon, ns, name, {"idempotency-key": "b1", "staged-manifests": []}, 400, "bad-request", "empty")
    check(daemon, ns, name, {"idempotency-key": "b2", "staged-manifests": [mdir + "/missing.avro"]},
          422, "invalid-manifest", "missing.avro", "cannot open")
    notavro = os.path.join(mdir, "not-avro.avro")
    with open(notavro, "w") as f:
        f.write("this is not avro")
    check(daemon, ns, name, {"idempotency-key": "b3", "staged-manifests": [notavro]}, 422, "invalid-manifest",
          "not-avro.avro")
    check(daemon, ns, name, {"idempotency-key": "b4", "staged-manifests": [variant("existing", change_entry=set_status(0))]},
          422, "invalid-manifest", "entry 0", "EXISTING")
    check(daemon, ns, name, {"idempotency-key": "b5", "staged-manifests": [variant("deleted", change_entry=set_status(2))]},
          422, "invalid-manifest", "entry 0", "DELETED")
    check(daemon, ns, name, {"idempotency-key": "b6", "staged-manifests": [
        variant("snapid", change_entry=lambda e: dict(e, snapshot_id=123))]}, 422, "invalid-manifest", "snapshot")
    check(daemon, ns, name, {"idempotency-key": "b7", "staged-manifests": [
        variant("seq", change_entry=lambda e: dict(e, sequence_number=4))]}, 422, "invalid-manifest", "sequence")
    check(daemon, ns, name, {"idempotency-key": "b8", "staged-manifests": [
        variant("rowid", change_entry=lambda e: dict(e, data_file=dict(e["data_file"], first_row_id=7)))]},
        422, "invalid-manifest", "first_row_id")
    check(daemon, ns, name, {"idempotency-key": "b9", "staged-manifests": [
        variant("negative", change_entry=lambda e: dict(e, data_file=dict(e["data_file"], record_count=-1)))]},
        422, "invalid-manifest", "record_count")
    check(daemon, ns, name, {"idempotency-key": "b10", "staged-manifests": [
        variant("v1", change_meta=lambda m: m.__setitem__("format-version", "1"))]}, 422, "invalid-manifest",
        "format-version")
    check(daemon, ns, name, {"idempotency-key": "b11", "staged-manifests": [
        variant("deletes", change_meta=lambda m: m.__setitem__("content", "deletes"))]}, 422, "invalid-manifest",
        "delete")
    check(daemon, ns, name, {"idempotency-key": "b12", "staged-manifests": [
        variant("spec", change_meta=lambda m: m.__setitem__("partition-spec-id", "7"))]}, 422, "invalid-manifest",
        "partition spec 7")
    outside = os.path.join(catalog["dir"], "outside.avro")
    shutil.copyfile(good, outside)
    check(daemon, ns, name, {"idempotency-key": "b13", "staged-manifests": [outside]}, 422, "invalid-manifest",
          "outside the table location")
    check(daemon, ns, "no_such_table", {"idempotency-key": "b14", "staged-manifests": [good]}, 404, "no-such-table")
    # An object-store location outside a local table is confined like any other; schemes no
    # backend takes are named as such.
    check(daemon, ns, name, {"idempotency-key": "b15", "staged-manifests": ["s3://bucket/x.avro"]}, 422,
          "invalid-manifest", "is outside the table location")
    check(daemon, ns, name, {"idempotency-key": "b15g", "staged-manifests": ["gs://bucket/x.avro"]}, 422,
          "invalid-manifest", "gs locations are not supported")
    check(daemon, ns, name, {"idempotency-key": "b15k", "staged-manifests": ["s3://bucket/a//x.avro"]}, 422,
          "invalid-manifest", "object stores do not normalize keys")
    # An oversize body: the server answers 413 before reading it all (curl reads that answer;
    # clients that insist on sending everything first may see the connection closed instead).
    big = os.path.join(catalog["dir"], "big.json")
    with open(big, "w") as f:
        json.dump({"idempotency-key": "b16", "staged-manifests": [good], "snapshot-properties": {"x": "y" * (2 << 20)}}, f)
    out = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-H", "Content-Type: application/json",
                          "--data-binary", "@" + big, f"{daemon.url}/v1/namespaces/{ns}/tables/{name}/commits"],
                         capture_output=True, text=True, timeout=60)
    body, code = out.stdout.rsplit("\n", 1)
    assert code == "413", out
    assert json.loads(body)["error"]["code"] == 413

    assert metadata(uri, ns, name) == before, "a rejected request changed the table"

    # And the good manifest still commits afterwards.
    got, _, answer = daemon.commit(ns, name, {"idempotency-key": "good", "staged-manifests": [good]})
    assert got == 200, answer
