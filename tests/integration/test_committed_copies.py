# SPDX-License-Identifier: Apache-2.0
"""Committed metadata belongs to icecommitd (issue 19, finding 1): a writer that rewrites its
staged manifest after the commit, so that it names another table's file and /etc/passwd, changes
nothing readers plan, because the table references icecommitd's copy, written once at intake from
the very bytes that were checked; on local disks and on S3. And the layouts docs/operations.md
("What writers may write") gives operators, tested: on a local filesystem a writer running as
another user, with write access to the table's data/ and staging/ only, commits through a daemon
running as a third user; on S3 (SeaweedFS) a writer identity that a bucket policy keeps out of
metadata/ does the same. Iceberg Java (and PyIceberg, locally) read every table afterwards."""
import io
import json
import os
import pwd
import shutil
import subprocess
import uuid

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import (Daemon, http, make_workdir, peer, pyiceberg_table, s3_daemon_settings, s3_key, s3_peer_env,
                      s3_request)

PARQUET_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
                            pa.field("data", pa.string(), metadata={b"PARQUET:field_id": b"2"})])


def avro_long(data, pos):
    shift = value = 0
    while True:
        b = data[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), pos


def avro_header(data):
    """An Avro container's header: (metadata pairs in order, sync marker, where the blocks start)."""
    assert data[:4] == b"Obj\x01"
    pos, meta = 4, []
    while True:
        count, pos = avro_long(data, pos)
        if count == 0:
            break
        if count < 0:
            count = -count
            _, pos = avro_long(data, pos)
        for _ in range(count):
            n, pos = avro_long(data, pos)
            key = data[pos:pos + n].decode()
            pos += n
            n, pos = avro_long(data, pos)
            meta.append((key, data[pos:pos + n]))
            pos += n
    return meta, data[pos:pos + 16], pos + 16


def assert_is_the_checked_copy(copy, staged_bytes, staged_location):
    """The committed manifest is icecommitd's copy of the staged bytes as they were checked: the
    same pairs and one more naming where it was staged, the same sync marker, every block."""
    meta, sync, start = avro_header(copy)
    staged_meta, staged_sync, staged_start = avro_header(staged_bytes)
    assert meta == staged_meta + [("icecommit.staged-location", staged_location.encode())]
    assert sync == staged_sync
    assert copy[start:] == staged_bytes[staged_start:]


def rewrite_manifest(data, paths):
    """The staged manifest `data` with its entries' file paths replaced, in order: what a writer
    with write access to it can do at any time."""
    reader = fastavro.reader(io.BytesIO(data))
    schema = reader.writer_schema
    meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    entries = list(reader)
    for e, path in zip(entries, paths):
        e["data_file"]["file_path"] = path
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), entries, codec="deflate", metadata=meta)
    return out.getvalue()


def planned(dump):
    """The data files Iceberg Java plans for the table's current snapshot, and its rows."""
    files = sorted(f["path"] for m in dump["manifests"] for f in m["files"])
    return files, sorted((r["id"], r["_row_id"]) for r in dump["rows"])



def create_table(d):
    """Table ns.t (id long, data string) through the daemon's embedded catalog."""
    status, _, created = http("POST", d.url + "/v1/namespaces/ns/tables", {
        "name": "t", "schema": {"type": "struct", "fields": [
            {"id": 1, "name": "id", "required": True, "type": "long"},
            {"id": 2, "name": "data", "required": False, "type": "string"}]}})
    assert status == 201, created
    return created

def test_a_staged_manifest_rewritten_after_its_commit_changes_nothing(catalog, daemon, table):
    ns, name, created = table
    uri = catalog["uri"]
    location = created["location"].removeprefix("file:")
    staging = os.path.join(location, "staging")
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 2, "--rows", 3, "--start-id", 0,
                  "--manifest-dir", staging)
    path = staged["manifest"].removeprefix("file:")
    checked = open(path, "rb").read()

    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "copy-1", "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    m = receipt["manifests"][0]
    assert m["staged-location"] == staged["manifest"]
    copy_location = m["location"]
    assert copy_location.removeprefix("file:").startswith(os.path.join(location, "metadata", "copy-")), copy_location
    copy = open(copy_location.removeprefix("file:"), "rb").read()
    assert_is_the_checked_copy(copy, checked, staged["manifest"])
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    files, rows = planned(before)
    assert [mf["path"] for mf in before["manifests"]] == [copy_location]
    assert rows == [(i, i) for i in range(6)]
    plan = sorted(t.file.file_path for t in pyiceberg_table(catalog, f"{ns}.{name}").scan().plan_files())
    assert plan == files

    # The writer rewrites its staged manifest: now it names /etc/passwd and another table's file.
    other_table = f"ns.o_{uuid.uuid4().hex[:10]}"
    peer("create-table", "--uri", uri, "--table", other_table)
    peer("append", "--uri", uri, "--table", other_table, "--rows", 2, "--start-id", 100)
    other_file = planned(peer("dump", "--uri", uri, "--table", other_table))[0][0]
    with open(path, "wb") as f:
        f.write(rewrite_manifest(checked, ["/etc/passwd", other_file]))

    after = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert planned(after) == (files, rows)
    assert after["metadata-location"] == before["metadata-location"]
    plan = sorted(t.file.file_path for t in pyiceberg_table(catalog, f"{ns}.{name}").scan().plan_files())
    assert plan == files and "/etc/passwd" not in plan and other_file not in plan
    assert open(copy_location.removeprefix("file:"), "rb").read() == copy

    # The rewritten file, sent again under a new key, is checked anew: refused, saying nothing
    # about the files outside the table.
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "copy-2", "staged-manifests": [staged["manifest"]]})
    assert status == 422 and answer["error"]["type"] == "invalid-manifest", answer
    assert "'/etc/passwd' is outside the table location" in answer["error"]["message"], answer
    assert "bytes" not in answer["error"]["message"], answer
    # A well-behaved writer still commits.
    good = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 6,
                "--manifest-dir", staging)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "copy-3", "staged-manifests": [good["manifest"]]})
    assert status == 200, receipt
    assert planned(peer("dump", "--uri", uri, "--table", f"{ns}.{name}"))[1] == [(i, i) for i in range(8)]


def test_a_staged_manifest_rewritten_after_its_commit_changes_nothing_on_s3(s3_rest_catalog):
    catalog = s3_rest_catalog
    s3, env = catalog["s3"], s3_peer_env(catalog["s3"])
    name = "c_" + uuid.uuid4().hex[:10]
    ident = f"s3ns.{name}"
    location = f"{catalog['location_prefix']}/{name}"
    peer("create-table", "--uri", catalog["uri"], "--table", ident, "--format-version", 3, "--location", location,
         env=env)
    staged = peer("stage", "--uri", catalog["uri"], "--table", ident, "--files", 2, "--rows", 3, "--start-id", 0,
                  "--manifest-dir", location + "/staging", env=env)
    status, checked = s3_request(s3, "GET", s3_key(s3, staged["manifest"]))
    assert status == 200
    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=True))
    try:
        status, _, receipt = daemon.commit("s3ns", name, {"idempotency-key": "s3-copy-1",
                                                          "staged-manifests": [staged["manifest"]]})
        assert status == 200, receipt
        m = receipt["manifests"][0]
        assert m["staged-location"] == staged["manifest"]
        assert m["location"].startswith(location + "/metadata/copy-"), m
        status, copy = s3_request(s3, "GET", s3_key(s3, m["location"]))
        assert status == 200
        assert_is_the_checked_copy(copy, checked, staged["manifest"])
        before = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
        files, rows = planned(before)
        assert rows == [(i, i) for i in range(6)]

        # The writer's PUT over its staged manifest: /etc/passwd and a file of another prefix.
        rewritten = rewrite_manifest(checked, ["/etc/passwd", f"s3://{s3['bucket']}/elsewhere/t/data/f.parquet"])
        assert s3_request(s3, "PUT", s3_key(s3, staged["manifest"]), rewritten)[0] == 200
        after = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
        assert planned(after) == (files, rows)
        assert s3_request(s3, "GET", s3_key(s3, m["location"])) == (200, copy)

        good = peer("stage", "--uri", catalog["uri"], "--table", ident, "--files", 1, "--rows", 2,
                    "--start-id", 6, "--manifest-dir", location + "/staging", env=env)
        status, _, receipt = daemon.commit("s3ns", name, {"idempotency-key": "s3-copy-2",
                                                          "staged-manifests": [good["manifest"]]})
        assert status == 200, receipt
    finally:
        daemon.stop()
    assert planned(peer("dump", "--uri", catalog["uri"], "--table", ident, env=env))[1] == [(i, i) for i in range(8)]


# ---- what writers may write: the layouts of docs/operations.md, tested ---------------------------

def writer_files(data_location, staging_location, ids):
    """What a writer writes for one commit, in memory: a Parquet file of rows (id, "row-<id>") to
    lie at <data_location>/<uuid>.parquet and the staged manifest naming it, to lie in
    staging_location. Returns {location: bytes} and the manifest's location."""
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids])],
                                        schema=PARQUET_SCHEMA), buf)
    parquet = buf.getvalue()
    data_path = f"{data_location}/{uuid.uuid4().hex}.parquet"
    from test_avro_interop import data_file, entry, entry_schema, manifest_meta
    df = data_file(3, data_path, len(ids), len(parquet), {},
                   lower_bounds=[{"key": 1, "value": min(ids).to_bytes(8, "little", signed=True)}],
                   upper_bounds=[{"key": 1, "value": max(ids).to_bytes(8, "little", signed=True)}])
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(entry_schema(3, [])), [entry(df)], codec="deflate",
                    metadata=manifest_meta(3))
    manifest_path = f"{staging_location}/{uuid.uuid4().hex}-m0.avro"
    return {data_path: parquet, manifest_path: out.getvalue()}, manifest_path


# Run as the writer's user: writes what it is given (JSON on stdin: {path: hex bytes}), then tries
# to write into metadata/, and says what happened. Debian's own python3, the standard library only:
# the writer's user cannot reach the test's virtual environment.
UNPRIVILEGED_WRITER = r"""
import json, os, sys
job = json.load(sys.stdin)
for path, data in job["files"].items():
    with open(path, "wb") as f:
        f.write(bytes.fromhex(data))
out = {}
for target in job["forbidden"]:
    try:
        with open(target, "wb") as f:
            f.write(b"overwritten by a writer")
        out[target] = "written"
    except PermissionError:
        out[target] = "refused"
print(json.dumps(out))
"""


def run_as(user, group, script, job):
    out = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={group}", "--clear-groups", "/usr/bin/python3", "-c",
                          script], input=json.dumps(job), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"),
                    reason="needs root (users for the daemon and the writer), setpriv and /usr/bin/python3")
def test_writers_need_no_write_access_to_metadata_on_local_disks():
    """The layout of docs/operations.md: the daemon's user (here `daemon`) owns the warehouse and
    every metadata/ directory; writers (here `nobody`, group `nogroup`) may write the table's
    data/ and staging/ (group-writable, setgid) and nothing else; the daemon reads what they
    wrote (world-readable files)."""
    warehouse = os.path.join(make_workdir("icecommit-layout-"), "warehouse")
    os.chmod(os.path.dirname(warehouse), 0o755)
    os.mkdir(warehouse)
    shutil.chown(warehouse, "daemon", "daemon")
    d = Daemon(warehouse, os.path.dirname(warehouse), run_as=("daemon", "daemon"))
    try:
        created = create_table(d)
        location = created["location"].removeprefix("file:")
        metadata = os.path.join(location, "metadata")
        assert os.stat(metadata).st_uid == pwd.getpwnam("daemon").pw_uid
        for sub in ("data", "staging"):  # the operator's part: the writers' group may write here
            os.mkdir(os.path.join(location, sub))
            shutil.chown(os.path.join(location, sub), "daemon", "nogroup")
            os.chmod(os.path.join(location, sub), 0o2775)

        files, manifest = writer_files(os.path.join(location, "data"), os.path.join(location, "staging"), [1, 2, 3])
        forbidden = [os.path.join(metadata, "writer-was-here.avro")]
        result = run_as("nobody", "nogroup", UNPRIVILEGED_WRITER,
                        {"files": {p: b.hex() for p, b in files.items()}, "forbidden": forbidden})
        assert result == {forbidden[0]: "refused"}
        status, _, receipt = d.commit("ns", "t", {"idempotency-key": "layout-1", "staged-manifests": [manifest]})
        assert status == 200, receipt
        copy = receipt["manifests"][0]["location"].removeprefix("file:")
        assert os.path.dirname(copy) == metadata and receipt["manifests"][0]["staged-location"] == manifest

        # The writer may delete or rewrite its staged file now; it cannot touch the copy.
        result = run_as("nobody", "nogroup", UNPRIVILEGED_WRITER,
                        {"files": {manifest: b"garbage".hex()}, "forbidden": [copy]})
        assert result == {copy: "refused"}
        dump = peer("dump", "--uri", warehouse, "--table", "ns.t")
        assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(1, 0), (2, 1), (3, 2)]
        assert [m["path"] for m in dump["manifests"]] == [receipt["manifests"][0]["location"]]
    finally:
        d.stop()


S3_WRITER = {"access_key": "AKIDICECOMMITWRITER", "secret_key": "icecommit-writer-secret"}


def test_a_bucket_policy_keeps_writers_out_of_metadata_on_s3(s3):
    """The S3 layout of docs/operations.md on SeaweedFS: the writer's identity (icecommit_writer,
    tests/peers/s3-start.sh) may write, but the bucket policy denies it every write and delete
    under the warehouse's */metadata/*; the daemon's identity writes there. The writer's files and
    staged manifest go to data/ and staging/ and commit; its writes to metadata/ get 403."""
    prefix = uuid.uuid4().hex[:12]
    warehouse = f"s3://{s3['bucket']}/{prefix}/wh"
    writer = {**s3, **S3_WRITER}
    policy = {"Version": "2012-10-17", "Statement": [{
        "Sid": "WritersNeverWriteTableMetadata", "Effect": "Deny",
        "Principal": {"AWS": "arn:aws:iam::000000000000:user/icecommit_writer"},
        "Action": ["s3:PutObject", "s3:DeleteObject"],
        "Resource": f"arn:aws:s3:::{s3['bucket']}/{prefix}/wh/*/metadata/*"}]}
    # The writer's identity may write anywhere in the bucket: the policy is what stops it.
    probe = f"{prefix}/wh/probe/metadata/x"
    assert s3_request(writer, "PUT", probe, b"x")[0] == 200
    status, body = s3_request(s3, "PUT", "?policy=", json.dumps(policy).encode())
    assert status in (200, 204), body
    assert s3_request(writer, "PUT", probe, b"y")[0] == 403
    d = Daemon(warehouse, make_workdir("icecommit-policy-"), {
        "s3.endpoint": s3["endpoint"], "s3.path-style-access": "true", "client.region": s3["region"],
        "s3.access-key-id": s3["access_key"], "s3.secret-access-key": s3["secret_key"]})
    try:
        created = create_table(d)
        location = created["location"]
        files, manifest = writer_files(location + "/data", location + "/staging", [1, 2, 3])
        for path, data in files.items():
            status, body = s3_request(writer, "PUT", s3_key(s3, path), data)
            assert status == 200, body
        status, body = s3_request(writer, "PUT", s3_key(s3, location + "/metadata/writer-was-here.avro"), b"x")
        assert status == 403 and b"AccessDenied" in body, (status, body)

        status, _, receipt = d.commit("ns", "t", {"idempotency-key": "policy-1", "staged-manifests": [manifest]})
        assert status == 200, receipt
        copy = receipt["manifests"][0]["location"]
        assert copy.startswith(location + "/metadata/copy-")
        for method, body in (("PUT", b"x"), ("DELETE", None)):
            status, answer = s3_request(writer, method, s3_key(s3, copy), body)
            assert status == 403, (method, status, answer)
        # Its staged manifest is its own again: deleting it changes nothing.
        assert s3_request(writer, "DELETE", s3_key(s3, manifest))[0] == 204
        metadata_json = sorted(k for k in list_keys(s3, f"{prefix}/wh/ns/t/metadata/") if k.endswith(".metadata.json"))
        dump = peer("dump", "--metadata", f"s3://{s3['bucket']}/{metadata_json[-1]}", env=s3_peer_env(s3, keys=True))
        assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(1, 0), (2, 1), (3, 2)]
    finally:
        d.stop()
        s3_request(s3, "DELETE", "?policy=")


def list_keys(s3, prefix):
    status, body = s3_request(s3, "GET", f"?list-type=2&max-keys=1000&prefix={prefix.replace('/', '%2F')}")
    assert status == 200, body
    return [k.split("</Key>")[0] for k in body.decode().split("<Key>")[1:]]
