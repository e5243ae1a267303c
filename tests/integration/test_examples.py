# SPDX-License-Identifier: Apache-2.0
"""The writer examples' paths the quick start (test_quickstart.py) does not run.

examples/java runs as a writer job: built with Maven offline (tests/install-deps.sh fetched its
dependencies), on the REST catalog (the table loaded from it), on icecommitd's embedded
filesystem catalog (the table taken from the create answer) and on that catalog on a bucket
(S3FileIO with the AWS_* settings). Two jobs commit the Parquet files and manifests Iceberg Java
wrote; the receipts' ranges are what the rules predict, a resent request answers the same
snapshot, the file of an abandoned task attempt is deleted and everything the receipt lists is
kept, and Iceberg Java reads every row once with _row_id 0..6 and _last_updated_sequence_number
1 and 2.

examples/python/write_with_pyiceberg.py with --catalog-uri: PyIceberg loads the table from the
REST catalog and writes the files, icecommitd commits them, Iceberg Java reads the lineage."""
import fcntl
import os
import re
import subprocess
import urllib.parse
import uuid

import pytest

from conftest import (BACKENDS, ROOT, Daemon, backend_catalog, make_workdir, peer, s3_daemon_settings, s3_key,
                      s3_peer_env, s3_request)

EXAMPLE = os.path.join(ROOT, "examples", "java")
JAR = os.path.join(EXAMPLE, "target", "icecommit-java-writer.jar")


@pytest.fixture(params=BACKENDS)
def catalog(request):
    return backend_catalog(request)


def newer_sources(than):
    for top in (os.path.join(EXAMPLE, "pom.xml"), os.path.join(EXAMPLE, "src")):
        paths = [top] if os.path.isfile(top) else \
            [os.path.join(d, f) for d, _, files in os.walk(top) for f in files]
        if any(os.path.getmtime(p) > than for p in paths):
            return True
    return False


@pytest.fixture(scope="module")
def example_jar():
    """The example's jar, built once (again when a source is newer) with `mvn -o`: the build
    must not need the network once install-deps.sh ran."""
    os.makedirs(os.path.join(EXAMPLE, "target"), exist_ok=True)
    with open(os.path.join(EXAMPLE, "target", ".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(JAR) or newer_sources(os.path.getmtime(JAR)):
            out = subprocess.run(["mvn", "-B", "-q", "-o", "-f", os.path.join(EXAMPLE, "pom.xml"), "package"],
                                 capture_output=True, text=True, timeout=600)
            assert out.returncode == 0, "offline Maven build failed (run tests/install-deps.sh):\n" + \
                out.stdout[-3000:] + out.stderr[-3000:]
    return JAR


def run_example(jar, *args, env=None):
    out = subprocess.run(["java", "-jar", jar, *map(str, args)], capture_output=True, text=True, timeout=300,
                         env=env)
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    return out.stdout


def receipt_files(text):
    """(location, rows, first _row_id, last _row_id, _last_updated_sequence_number) per line."""
    return [(m[0], int(m[1]), int(m[2]), int(m[3]), int(m[4])) for m in
            re.findall(r"^  (\S+): (\d+) rows, _row_id (\d+)\.\.(\d+), _last_updated_sequence_number (\d+)$",
                       text, re.M)]


def local(location):
    return location.removeprefix("file://").removeprefix("file:")


def two_jobs(jar, common, env=None, exists=lambda location: os.path.exists(local(location))):
    """Runs the example twice (the first with an abandoned attempt, sent twice) and checks its
    output and files; returns the first job's data file and manifest."""
    text = run_example(jar, *common, "--rows", 4, "--start-id", 300, "--day", "2026-12-03",
                       "--key", f"{common[-1]}-1", "--abandoned-attempt", "--resend", env=env)
    [(data, rows, first, last, seq)] = receipt_files(text)
    assert (rows, first, last, seq) == (4, 0, 3, 1), text
    assert re.search(r"committed snapshot (\d+) \(sequence number 1, first-row-id 0\)", text), text
    snapshot = re.search(r"committed snapshot (\d+)", text).group(1)
    assert f"the same request again: same snapshot {snapshot}, committed once" in text
    manifest = re.search(r"^  manifest (\S+)$", text, re.M).group(1)
    staged = re.search(r"^  \(icecommitd's copy of (\S+)\)$", text, re.M).group(1)
    assert re.fullmatch(r".*/metadata/copy-[0-9a-f]{32}-[0-9a-f-]+\.avro", manifest), manifest
    assert re.fullmatch(r".*/staging/staged-[0-9a-f-]+-m0\.avro", staged) and "/data/day=2026-12-03/" in data
    [abandoned] = re.findall(r"^deleted (\S+) \(not in the receipt\)$", text, re.M)
    assert abandoned != data and not exists(abandoned)
    # The staged manifest is the job's again (the table holds the copy): deleted.
    assert f"deleted {staged} (the table holds icecommitd's copy {manifest})" in text
    assert not exists(staged)
    assert exists(data) and exists(manifest)
    assert "1 files this job wrote are part of the table now, kept" in text

    # Job 2: the next snapshot's rows follow on.
    text = run_example(jar, *common, "--rows", 3, "--start-id", 400, "--day", "2026-12-04",
                       "--key", f"{common[-1]}-2", env=env)
    assert [f[1:] for f in receipt_files(text)] == [(3, 4, 6, 2)], text
    assert "(not in the receipt)" not in text and "(the table holds icecommitd's copy" in text
    return data, manifest


def check_lineage(dump, data):
    """Iceberg Java's view: each row once, with the lineage the receipts gave."""
    assert dump["format-version"] == 3 and dump["next-row-id"] == 7
    assert [(r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]] == \
        [(300 + k, k, 1) for k in range(4)] + [(400 + k, 4 + k, 2) for k in range(3)]
    assert {local(r["file"]) for r in dump["rows"] if r["id"] < 400} == {local(data)}


def test_java_example_commits_with_lineage(catalog, daemon, example_jar):
    name = "jx_" + uuid.uuid4().hex[:10]
    common = ["--url", daemon.url, "--namespace", "ns"]
    if catalog["backend"] == "rest":
        common += ["--catalog-uri", catalog["uri"]]
    data, _ = two_jobs(example_jar, common + ["--table", name])
    check_lineage(peer("dump", "--uri", catalog["uri"], "--table", f"ns.{name}"), data)


def test_java_example_on_a_bucket(s3, example_jar):
    """The embedded catalog on s3://: the example writes through S3FileIO with the AWS_*
    settings any AWS tool takes, and deletes the abandoned attempt's object."""
    warehouse = f"s3://{s3['bucket']}/examples-{uuid.uuid4().hex[:8]}/warehouse"
    d = Daemon(warehouse, make_workdir("icecommit-examples-"), s3_daemon_settings(s3, vended=False))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(AWS_ENDPOINT_URL=s3["endpoint"], AWS_REGION=s3["region"], AWS_ACCESS_KEY_ID=s3["access_key"],
               AWS_SECRET_ACCESS_KEY=s3["secret_key"])
    def exists(location):  # listed under its own key (keys with '=' are not HEAD-signable here)
        key = s3_key(s3, location)
        status, body = s3_request(s3, "GET", f"?list-type=2&prefix={urllib.parse.quote(key, safe='')}")
        assert status == 200, body
        return f"<Key>{key}</Key>" in body.decode()

    try:
        data, manifest = two_jobs(example_jar, ["--url", d.url, "--namespace", "demo", "--table", "events"], env,
                                  exists)
    finally:
        d.stop()
    location = f"{warehouse}/demo/events"
    assert data.startswith(f"{location}/data/") and manifest.startswith(f"{location}/metadata/")
    dump = peer("dump", "--metadata", f"{location}/metadata/v3.metadata.json", env=s3_peer_env(s3, keys=True))
    check_lineage(dump, data)


def test_pyiceberg_example_on_the_rest_catalog(rest_catalog):
    """write_with_pyiceberg.py --catalog-uri: the table from the REST catalog, not from a file."""
    d = Daemon(rest_catalog["uri"], rest_catalog["dir"])
    name = "px_" + uuid.uuid4().hex[:10]
    try:
        args = [os.path.join(ROOT, ".venv", "bin", "python"),
                os.path.join(ROOT, "examples", "python", "write_with_pyiceberg.py"),
                "--url", d.url, "--namespace", "ns", "--table", name, "--rows", 3, "--start-id", 7,
                "--key", name, "--catalog-uri", rest_catalog["uri"]]
        out = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300)
    finally:
        d.stop()
    assert out.returncode == 0, out.stdout + out.stderr[-3000:]
    assert [f[1:] for f in receipt_files(out.stdout)] == [(3, 0, 2, 1)], out.stdout
    dump = peer("dump", "--uri", rest_catalog["uri"], "--table", f"ns.{name}")
    assert [(r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"]] == \
        [(7, 0, 1), (8, 1, 1), (9, 2, 1)]
