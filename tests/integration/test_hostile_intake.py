# SPDX-License-Identifier: Apache-2.0
"""Writers that lie about files, at intake (issue 10, confinement): a staged manifest naming a
missing data file or one of another size; a file described as PARQUET that is not Parquet, or
whose record-count lies about its footer; symlinks inside the table location leading to another
table's staged manifest or data file; a FIFO or a directory given as a staged manifest; and the
same on S3 where it applies. Each is answered 422 with the rule, the table is unchanged (read
by Iceberg Java), and a well-behaved writer commits afterwards."""
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import Daemon, peer, s3_daemon_settings, s3_key, s3_peer_env, s3_request

ID = pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})
DATA = pa.field("data", pa.string(), metadata={b"PARQUET:field_id": b"2"})


def path_of(location):
    return location.removeprefix("file:")


def unchanged(uri, ns, name, before, env=None):
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", env=env)
    assert dump["metadata-location"] == before["metadata-location"]
    assert dump["next-row-id"] == before["next-row-id"]


def well_behaved_commits(daemon, uri, ns, name, start_id, env=None):
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", start_id,
                  env=env)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": f"good-{start_id}",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", env=env)
    assert sorted(r["id"] for r in dump["rows"]) == [start_id, start_id + 1]


def refused(daemon, ns, name, key, body, kind, *needles):
    status, _, answer = daemon.commit(ns, name, dict(body, **{"idempotency-key": key}))
    assert status == 422, answer
    assert answer["error"]["type"] == kind, answer
    for needle in needles:
        assert needle in answer["error"]["message"], (needle, answer["error"]["message"])
    return answer["error"]["message"]


def parquet_file(directory, ids, pad=0):
    """pad: bytes of key-value metadata, which lengthen the footer."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{uuid.uuid4().hex}.parquet")
    table = pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids])],
                                 schema=pa.schema([ID, DATA], metadata={"pad": "x" * pad} if pad else None))
    pq.write_table(table, path)
    return path


def description(path, count, size=None):
    return {"file-path": path, "file-format": "parquet", "record-count": count,
            "file-size-in-bytes": os.path.getsize(path) if size is None else size}


def test_staged_data_files_must_exist_with_their_size(catalog, daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")

    missing = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 2, "--rows", 3, "--start-id", 0)
    gone = path_of(missing["data-files"][1]["path"])
    os.unlink(gone)
    refused(daemon, ns, name, "missing", {"staged-manifests": [missing["manifest"]]}, "invalid-manifest",
            "staged-manifests[0]", "entry 1: data file", "does not exist")

    resized = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3, "--start-id", 10)
    f = resized["data-files"][0]
    with open(path_of(f["path"]), "ab") as out:
        out.write(b"x")
    refused(daemon, ns, name, "resized", {"staged-manifests": [resized["manifest"]]}, "invalid-manifest",
            "entry 0: data file", f"has {f['file-size-in-bytes'] + 1} bytes, the manifest says {f['file-size-in-bytes']}")
    unchanged(uri, ns, name, before)
    well_behaved_commits(daemon, uri, ns, name, 100)


def test_parquet_descriptions_are_checked_against_the_footer(catalog, daemon, table):
    ns, name, created = table
    uri = catalog["uri"]
    data_dir = os.path.join(path_of(created["location"]), "data")
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")

    fake = os.path.join(data_dir, "not-parquet.parquet")
    os.makedirs(data_dir, exist_ok=True)
    with open(fake, "wb") as out:
        out.write(b"id,data\n1,a\n2,b\n3,c\n" * 10)
    refused(daemon, ns, name, "fake", {"data-files": [description(fake, 3)]}, "invalid-data-file",
            "'data-files'[0]", "described as PARQUET", "not a Parquet file")

    real = parquet_file(data_dir, [1, 2, 3])
    refused(daemon, ns, name, "lying", {"data-files": [description(real, 4)]}, "invalid-data-file",
            "'data-files'[0]", "has record-count 4 but its Parquet footer says 3 rows")
    unchanged(uri, ns, name, before)

    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "truthful", "data-files": [description(real, 3)]})
    assert status == 200, receipt
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert sorted(r["id"] for r in dump["rows"]) == [1, 2, 3]


def test_long_footers_are_read_exactly_and_bounded(catalog, table):
    """A footer longer than the first tail read is read in a second, exact one; one longer than
    commit.max-parquet-footer-bytes is refused."""
    ns, name, created = table
    uri = catalog["uri"]
    data_dir = os.path.join(path_of(created["location"]), "data")
    path = parquet_file(data_dir, list(range(50)))
    footer = int.from_bytes(open(path, "rb").read()[-8:-4], "little")
    assert footer > 64
    d = Daemon(uri, catalog["dir"], {"commit.parquet-tail-bytes": "64"})
    try:
        status, _, receipt = d.commit(ns, name, {"idempotency-key": "long", "data-files": [description(path, 50)]})
        assert status == 200, receipt
    finally:
        d.stop()
    other = parquet_file(data_dir, [7], pad=2000)
    with open(other, "rb") as f:
        assert int.from_bytes(f.read()[-8:-4], "little") > 2000
    table_before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.max-parquet-footer-bytes": "1024"})
    try:
        refused(d, ns, name, "too-long", {"data-files": [description(other, 1)]}, "invalid-data-file",
                "a Parquet footer of", "above the limit of 1024")
        unchanged(uri, ns, name, table_before)
    finally:
        d.stop()


def test_symlinks_out_of_the_table_are_outside_it(catalog, daemon, table):
    """A symlink in table B's location to table A's staged manifest, to a missing file, and a
    staged manifest of B whose data file became a symlink to A's: each answered exactly like a
    location outside the table, saying nothing about the target."""
    ns, name_a, _ = table
    uri = catalog["uri"]
    name_b = "t_" + uuid.uuid4().hex[:12]
    created_b = peer("create-table", "--uri", uri, "--table", f"{ns}.{name_b}", "--format-version", 3)
    location_b = path_of(created_b["location"])
    staged_a = peer("stage", "--uri", uri, "--table", f"{ns}.{name_a}", "--files", 1, "--rows", 2, "--start-id", 0)
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name_b}")

    metadata_b = os.path.join(location_b, "metadata")
    os.makedirs(metadata_b, exist_ok=True)
    to_a = os.path.join(metadata_b, "staged-link-m0.avro")
    os.symlink(path_of(staged_a["manifest"]), to_a)
    to_nothing = os.path.join(metadata_b, "staged-nothing-m0.avro")
    os.symlink(os.path.join(os.path.dirname(path_of(staged_a["manifest"])), "no-such.avro"), to_nothing)
    relative = os.path.join(metadata_b, "staged-relative-m0.avro")
    os.symlink(os.path.relpath(path_of(staged_a["manifest"]), metadata_b), relative)
    messages = []
    for k, link in enumerate((to_a, to_nothing, relative)):
        messages.append(refused(daemon, ns, name_b, f"link-{k}", {"staged-manifests": [link]}, "invalid-manifest",
                                "is outside the table location"))
    # The same words for each, but for the name: nothing tells an existing target from none.
    assert len({m.replace(os.path.basename(link), "X") for m, link in zip(messages, (to_a, to_nothing, relative))}) == 1
    for m in messages:
        assert "does not exist" not in m and "bytes" not in m and name_a not in m

    staged_b = peer("stage", "--uri", uri, "--table", f"{ns}.{name_b}", "--files", 1, "--rows", 2, "--start-id", 0)
    data_b = path_of(staged_b["data-files"][0]["path"])
    os.unlink(data_b)
    os.symlink(path_of(staged_a["data-files"][0]["path"]), data_b)
    m = refused(daemon, ns, name_b, "data-link", {"staged-manifests": [staged_b["manifest"]]}, "invalid-manifest",
                "entry 0", "is outside the table location")
    assert "does not exist" not in m and "bytes" not in m and name_a not in m

    # A described data file that is a symlink out of the table: the same.
    real_a = path_of(staged_a["data-files"][0]["path"])
    link = os.path.join(location_b, "data", "described-link.parquet")
    os.symlink(real_a, link)
    refused(daemon, ns, name_b, "described-link",
            {"data-files": [description(link, 2, size=os.path.getsize(real_a))]}, "invalid-data-file",
            f"'data-files'[0] '{link}' is outside the table location")
    unchanged(uri, ns, name_b, before)
    well_behaved_commits(daemon, uri, ns, name_b, 100)


def test_special_files_as_staged_manifests(catalog, daemon, table):
    ns, name, created = table
    uri = catalog["uri"]
    metadata = os.path.join(path_of(created["location"]), "metadata")
    os.makedirs(metadata, exist_ok=True)
    fifo = os.path.join(metadata, "staged-fifo-m0.avro")
    os.mkfifo(fifo)
    directory = os.path.join(metadata, "staged-dir-m0.avro")
    os.mkdir(directory)
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    refused(daemon, ns, name, "fifo", {"staged-manifests": [fifo]}, "invalid-manifest", "is not a regular file")
    refused(daemon, ns, name, "dir", {"staged-manifests": [directory]}, "invalid-manifest", "is a directory")
    unchanged(uri, ns, name, before)
    well_behaved_commits(daemon, uri, ns, name, 100)


# --- on S3 ---------------------------------------------------------------------------------

S3_NS = "s3ns"


def test_hostile_intake_on_s3(s3_rest_catalog):
    import pyarrow.fs as pafs

    catalog = s3_rest_catalog
    s3, env = catalog["s3"], s3_peer_env(catalog["s3"])
    name = "hi_" + uuid.uuid4().hex[:10]
    location = f"{catalog['location_prefix']}/{name}"
    peer("create-table", "--uri", catalog["uri"], "--table", f"{S3_NS}.{name}", "--format-version", 3,
         "--location", location, env=s3_peer_env(s3, keys=not catalog["vends"]))
    before = peer("dump", "--uri", catalog["uri"], "--table", f"{S3_NS}.{name}", env=env)
    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=True))
    try:
        staged = peer("stage", "--uri", catalog["uri"], "--table", f"{S3_NS}.{name}", "--files", 2, "--rows", 3,
                      "--start-id", 0, env=env)
        gone = staged["data-files"][0]["path"]
        status, _ = s3_request(s3, "DELETE", s3_key(s3, gone))
        assert status == 204
        refused(daemon, S3_NS, name, "s3-missing", {"staged-manifests": [staged["manifest"]]}, "invalid-manifest",
                "entry 0: data file", "does not exist")

        resized = peer("stage", "--uri", catalog["uri"], "--table", f"{S3_NS}.{name}", "--files", 1, "--rows", 3,
                       "--start-id", 10, env=env)
        f = resized["data-files"][0]
        status, body = s3_request(s3, "GET", s3_key(s3, f["path"]))
        assert status == 200
        status, _ = s3_request(s3, "PUT", s3_key(s3, f["path"]), body=body + b"x")
        assert status == 200
        refused(daemon, S3_NS, name, "s3-resized", {"staged-manifests": [resized["manifest"]]}, "invalid-manifest",
                f"has {len(body) + 1} bytes, the manifest says {len(body)}")

        fs = pafs.S3FileSystem(access_key=s3["access_key"], secret_key=s3["secret_key"], region=s3["region"],
                               endpoint_override=s3["endpoint"].removeprefix("http://"), scheme="http")
        key = f"{s3_key(s3, location)}/data/{uuid.uuid4().hex}.parquet"
        ids = [1, 2, 3]
        pq.write_table(pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids])],
                                            schema=pa.schema([ID, DATA])), f"{s3['bucket']}/{key}", filesystem=fs)
        size = fs.get_file_info(f"{s3['bucket']}/{key}").size
        desc = {"file-path": f"s3://{s3['bucket']}/{key}", "file-format": "parquet", "record-count": 5,
                "file-size-in-bytes": size}
        refused(daemon, S3_NS, name, "s3-lying", {"data-files": [desc]}, "invalid-data-file",
                "has record-count 5 but its Parquet footer says 3 rows")
        unchanged(catalog["uri"], S3_NS, name, before, env=env)

        desc["record-count"] = 3
        status, _, receipt = daemon.commit(S3_NS, name, {"idempotency-key": "s3-truthful", "data-files": [desc]})
        assert status == 200, receipt
        dump = peer("dump", "--uri", catalog["uri"], "--table", f"{S3_NS}.{name}", env=env)
        assert sorted(r["id"] for r in dump["rows"]) == ids
    finally:
        daemon.stop()
