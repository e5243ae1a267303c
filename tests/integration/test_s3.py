# SPDX-License-Identifier: Apache-2.0
"""Tables on object storage, through Apache Iceberg's REST catalog (S3FileIO via ResolvingFileIO)
and SeaweedFS with SigV4 verification on (tests/peers/s3-start.sh): Iceberg Java writes Parquet
and a staged manifest to the bucket, icecommitd reads it, writes the manifest list to the bucket
and commits, Iceberg Java reads every row back with _row_id and _last_updated_sequence_number.
Once with static keys in icecommitd's config, once with credentials the catalog vends (the
config holds none). Also: data-files with sizes checked by HEAD, a gzip-encoded staged manifest
checked as stored, the store's errors as the writer sees them, and the exactly-once scenarios
(catalog faults, three daemons, kill -9)."""
import gzip
import hashlib
import random
import threading
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import Daemon, free_port, http, is_copy_of, peer, s3_daemon_settings, s3_key, s3_peer_env, s3_request
from faults import clear_faults, get_faults, set_faults
from writers import (RestartableDaemon, conclude, kill9_rounds, metric_lines, run_writers, stage_requests, stop_daemon,
                     verify_table)

NS = "s3ns"
RETRY = {"commit.min-backoff-ms": "10", "commit.max-backoff-ms": "300", "commit.max-attempts": "200"}


@pytest.fixture
def catalog(s3_rest_catalog):
    clear_faults(s3_rest_catalog["uri"])
    yield s3_rest_catalog
    clear_faults(s3_rest_catalog["uri"])


def java_env(catalog):
    """The Java peer's S3 settings: with keys of its own when the catalog vends none."""
    return s3_peer_env(catalog["s3"], keys=not catalog["vends"])


def new_table(catalog, prefix="t"):
    name = f"{prefix}_" + uuid.uuid4().hex[:10]
    location = f"{catalog['location_prefix']}/{name}"
    created = peer("create-table", "--uri", catalog["uri"], "--table", f"{NS}.{name}", "--format-version", 3,
                   "--location", location, env=java_env(catalog))
    assert created["location"] == location, created
    return name, location


def s3_sha256(s3, location):
    status, body = s3_request(s3, "GET", s3_key(s3, location))
    assert status == 200, body
    return hashlib.sha256(body).hexdigest()


def storage_requests(url):
    """icecommit_storage_requests_total samples: {(operation, outcome): count}."""
    out = {}
    for labels, value in metric_lines(url, "icecommit_storage_requests_total").items():
        op = labels.split('operation="')[1].split('"')[0]
        outcome = labels.split('outcome="')[1].split('"')[0]
        out[(op, outcome)] = float(value)
    return out


@pytest.mark.parametrize("credentials", ["static", "vended"])
def test_append_on_s3_read_back_by_iceberg_java(request, credentials):
    """Static: the catalog vends nothing and icecommitd signs with its configured keys. Vended:
    icecommitd's config holds no key; it asks for and uses the catalog's."""
    catalog = request.getfixturevalue("s3_rest_catalog_static" if credentials == "static" else "s3_rest_catalog")
    s3, env = catalog["s3"], java_env(catalog)
    name, location = new_table(catalog)
    ident = f"{NS}.{name}"
    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=credentials == "vended"))
    try:
        peer("append", "--uri", catalog["uri"], "--table", ident, "--rows", 5, "--start-id", 0, env=env)
        staged = peer("stage", "--uri", catalog["uri"], "--table", ident, "--files", 2, "--rows", 10,
                      "--start-id", 1000, env=env)
        manifest = staged["manifest"]
        assert manifest.startswith(location + "/metadata/")
        before = s3_sha256(s3, manifest)

        status, _, receipt = daemon.commit(NS, name, {"idempotency-key": f"s3-{credentials}",
                                                      "staged-manifests": [manifest]})
        assert status == 200, receipt
        assert receipt["snapshot-first-row-id"] == 5 and receipt["sequence-number"] == 2
        m = receipt["manifests"][0]
        assert (m["first-row-id"], m["last-row-id"]) == (5, 24) and is_copy_of(m, manifest), m
        assert m["location"].startswith(location + "/metadata/copy-"), m

        # The same request again is the same answer, from the daemon's memory.
        status, _, again = daemon.commit(NS, name, {"idempotency-key": f"s3-{credentials}",
                                                    "staged-manifests": [manifest]})
        assert status == 200 and again["snapshot-id"] == receipt["snapshot-id"], again

        dump = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
        assert dump["next-row-id"] == 25
        snap = next(s for s in dump["snapshots"] if s["snapshot-id"] == receipt["snapshot-id"])
        assert snap["first-row-id"] == 5 and snap["added-rows"] == 20 and snap["sequence-number"] == 2
        rows = {r["id"]: r for r in dump["rows"]}
        assert len(rows) == 25
        for i in range(5):
            assert (rows[i]["_row_id"], rows[i]["_last_updated_sequence_number"]) == (i, 1)
        for k in range(2):
            for pos in range(10):
                r = rows[1000 + 10 * k + pos]
                assert (r["_row_id"], r["_last_updated_sequence_number"]) == (5 + 10 * k + pos, 2), r

        # The manifest list icecommitd wrote is in the bucket, next to the metadata; the staged
        # manifest is untouched.
        _, _, loaded = http("GET", f"{catalog['uri']}/v1/namespaces/{NS}/tables/{name}")
        current = loaded["metadata"]["current-snapshot-id"]
        list_location = next(s["manifest-list"] for s in loaded["metadata"]["snapshots"]
                             if s["snapshot-id"] == current)
        assert list_location.startswith(location + "/metadata/snap-"), list_location
        status, _ = s3_request(s3, "HEAD", s3_key(s3, list_location))
        assert status == 200
        assert s3_sha256(s3, manifest) == before

        # The lineage audit and the row-id lookup read the lists and manifests from the bucket.
        status, _, report = http("GET", f"{daemon.url}/v1/namespaces/{NS}/tables/{name}/lineage")
        assert status == 200 and report["ok"] is True, report
        assert [c["name"] for c in report["checks"] if c["ok"]][-1] == "manifest-lists-readable"
        assert [(s["first-row-id"], s["added-rows"]) for s in report["snapshots"]] == [(0, 5), (5, 20)]
        status, _, found = http("GET", f"{daemon.url}/v1/namespaces/{NS}/tables/{name}/row-ids/17")
        assert status == 200 and found["assigned"] is True, found
        assert found["data-file"]["path"] == staged["data-files"][1]["path"] and found["position"] == 2

        requests = storage_requests(daemon.url)
        assert requests.get(("get", "success"), 0) >= 2, requests     # staged manifest, parent list
        assert requests.get(("put", "success"), 0) >= 1, requests     # the new list
        _, _, metrics = http("GET", daemon.url + "/metrics")
        assert s3["secret_key"] not in metrics
    finally:
        daemon.stop()
    log = open(daemon.log).read()
    assert s3["secret_key"] not in log, "the S3 secret reached the log"


def pyarrow_s3(s3):
    return pafs.S3FileSystem(access_key=s3["access_key"], secret_key=s3["secret_key"], region=s3["region"],
                             endpoint_override=s3["endpoint"].removeprefix("http://"), scheme="http")


def test_data_files_on_s3_sizes_checked_with_head(catalog):
    """Parquet written by pyarrow straight to the bucket, committed by description: icecommitd
    checks each size (and the footer's row count) with one ranged GET of the file's end, and
    writes the manifest to the bucket itself."""
    s3, env = catalog["s3"], s3_peer_env(catalog["s3"])
    name, location = new_table(catalog, "df")
    fs = pyarrow_s3(s3)
    ids = list(range(7))
    key = f"{s3_key(s3, location)}/data/{uuid.uuid4().hex}.parquet"
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
                        pa.field("data", pa.string(), metadata={b"PARQUET:field_id": b"2"})])
    table = pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids])], schema=schema)
    pq.write_table(table, f"{s3['bucket']}/{key}", filesystem=fs)
    size = fs.get_file_info(f"{s3['bucket']}/{key}").size
    path = f"s3://{s3['bucket']}/{key}"
    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=True))
    try:
        desc = {"file-path": path, "file-format": "parquet", "record-count": 7, "file-size-in-bytes": size + 1}
        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "df-wrong", "data-files": [desc]})
        assert status == 422, answer
        assert f"has {size} bytes on storage but file-size-in-bytes says {size + 1}" in answer["error"]["message"]

        missing = dict(desc, **{"file-path": path + ".missing", "file-size-in-bytes": size})
        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "df-missing", "data-files": [missing]})
        assert status == 422, answer
        assert "does not exist" in answer["error"]["message"] and "NoSuchKey" in answer["error"]["message"]

        desc["file-size-in-bytes"] = size
        status, _, receipt = daemon.commit(NS, name, {"idempotency-key": "df-ok", "data-files": [desc]})
        assert status == 200, receipt
        written = receipt["manifests"][0]["location"]
        assert written.startswith(location + "/metadata/"), written
        status, _ = s3_request(s3, "HEAD", s3_key(s3, written))
        assert status == 200
        assert ("get", "success") in storage_requests(daemon.url)
    finally:
        daemon.stop()
    dump = peer("dump", "--uri", catalog["uri"], "--table", f"{NS}.{name}", env=env)
    assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(i, i) for i in ids]


def test_gzip_encoded_manifest_is_checked_as_stored(catalog):
    """Issue 19 finding 7: a staged manifest stored with Content-Encoding: gzip, its body the gzip
    of a valid manifest. The store hands every reader those gzip bytes (Iceberg Java and PyIceberg
    decode nothing); icecommitd decoded them and committed what no one else could read. Now it
    sends no Accept-Encoding and checks the bytes as stored: refused, the table unchanged, and
    the valid manifest commits afterwards."""
    s3, env = catalog["s3"], java_env(catalog)
    name, location = new_table(catalog, "gz")
    ident = f"{NS}.{name}"
    staged = peer("stage", "--uri", catalog["uri"], "--table", ident, "--files", 1, "--rows", 3,
                  "--start-id", 0, env=env)
    status, plain = s3_request(s3, "GET", s3_key(s3, staged["manifest"]))
    assert status == 200 and plain.startswith(b"Obj\x01"), status
    gzipped = f"{location}/metadata/gz-{uuid.uuid4().hex}.avro"
    status, _ = s3_request(s3, "PUT", s3_key(s3, gzipped), body=gzip.compress(plain),
                           headers={"Content-Encoding": "gzip"})
    assert status == 200
    before = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=True))
    try:
        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "gz", "staged-manifests": [gzipped]})
        assert status == 422 and answer["error"]["type"] == "invalid-manifest", answer
        assert gzipped in answer["error"]["message"], answer
        after = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
        assert after["metadata-location"] == before["metadata-location"] and after["rows"] == []

        status, _, receipt = daemon.commit(NS, name, {"idempotency-key": "plain",
                                                      "staged-manifests": [staged["manifest"]]})
        assert status == 200, receipt
    finally:
        daemon.stop()
    dump = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
    assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(0, 0), (1, 1), (2, 2)]


def test_store_errors_reach_the_writer(s3_rest_catalog_static, s3_rest_catalog):
    """Wrong keys: 403 with the store's code, the bucket and the key, never the secret; a missing
    staged manifest: 422 naming NoSuchKey; other schemes: 422 naming what is supported. Nothing
    is committed by any of them."""
    catalog = s3_rest_catalog_static
    s3, env = catalog["s3"], java_env(catalog)
    name, location = new_table(catalog, "err")
    staged = peer("stage", "--uri", catalog["uri"], "--table", f"{NS}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 0, env=env)
    settings = s3_daemon_settings(s3, vended=False)
    settings["s3.secret-access-key"] = "wrong-secret-icecommit"
    daemon = Daemon(catalog["uri"], catalog["dir"], settings)
    try:
        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "bad-key",
                                                     "staged-manifests": [staged["manifest"]]})
        assert status == 403, answer
        message = answer["error"]["message"]
        assert answer["error"]["type"] == "storage-access-denied"
        assert "SignatureDoesNotMatch" in message and f"bucket '{s3['bucket']}'" in message, message
        assert s3_key(s3, staged["manifest"]) in message
        assert "wrong-secret-icecommit" not in message and s3["secret_key"] not in message

        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "gs",
                                                     "staged-manifests": ["gs://bucket/m.avro"]})
        assert status == 422 and "s3://, s3a://, s3n://" in answer["error"]["message"], answer
    finally:
        daemon.stop()
    assert "wrong-secret-icecommit" not in open(daemon.log).read()

    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=False))
    try:
        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "missing",
                                                     "staged-manifests": [location + "/metadata/nope.avro"]})
        assert status == 422, answer
        assert "NoSuchKey" in answer["error"]["message"], answer
        status, _, answer = daemon.commit(NS, name, {"idempotency-key": "outside",
                                                     "staged-manifests": [f"s3://{s3['bucket']}/elsewhere/m.avro"]})
        assert status == 422 and "outside the table location" in answer["error"]["message"], answer
    finally:
        daemon.stop()
    dump = peer("dump", "--uri", catalog["uri"], "--table", f"{NS}.{name}", env=env)
    assert dump["next-row-id"] == 0 and dump["rows"] == []


def test_upgrade_v2_table_on_s3(catalog):
    """The upgrade's pre-flight report reads every branch head's list from the bucket; the first
    commit after it gives the existing rows their ids."""
    s3, env = catalog["s3"], java_env(catalog)
    name = "up_" + uuid.uuid4().hex[:10]
    location = f"{catalog['location_prefix']}/{name}"
    peer("create-table", "--uri", catalog["uri"], "--table", f"{NS}.{name}", "--format-version", 2,
         "--location", location, env=env)
    peer("append", "--uri", catalog["uri"], "--table", f"{NS}.{name}", "--rows", 4, "--start-id", 0, env=env)
    daemon = Daemon(catalog["uri"], catalog["dir"], s3_daemon_settings(s3, vended=True))
    try:
        url = f"{daemon.url}/v1/namespaces/{NS}/tables/{name}/upgrade"
        status, _, report = http("POST", url, {"format-version": 3, "dry-run": True})
        assert status == 200 and report["status"] == "ready", report
        assert report["branches"][0]["rows-to-assign"] == 4 and report["branches"][0]["data-manifests"] == 1
        status, _, done = http("POST", url, {"format-version": 3, "dry-run": False})
        assert status == 200 and done["status"] == "upgraded", done
        staged = peer("stage", "--uri", catalog["uri"], "--table", f"{NS}.{name}", "--files", 1, "--rows", 2,
                      "--start-id", 100, env=env)
        status, _, receipt = daemon.commit(NS, name, {"idempotency-key": "after-upgrade",
                                                      "staged-manifests": [staged["manifest"]]})
        assert status == 200, receipt
    finally:
        daemon.stop()
    dump = peer("dump", "--uri", catalog["uri"], "--table", f"{NS}.{name}", env=env)
    assert dump["format-version"] == 3 and dump["next-row-id"] == 6
    # The new manifest first, then the parent's (Java's order): ids 100, 101, then 0..3.
    assert {r["id"]: r["_row_id"] for r in dump["rows"]} == {100: 0, 101: 1, 0: 2, 1: 3, 2: 4, 3: 5}


# --- exactly once on S3 -----------------------------------------------------------------------


def test_race_two_daemons_and_java_on_s3(catalog):
    """8 writers x 10 commits through two daemons while Iceberg Java appends to the same table
    directly (real 409s); every manifest and list on S3."""
    s3, env = catalog["s3"], s3_peer_env(catalog["s3"])
    uri = catalog["uri"]
    name, _ = new_table(catalog, "race")
    reqs = stage_requests(uri, NS, name, 80, prefix="race", env=env)
    settings = {**RETRY, **s3_daemon_settings(s3, vended=True)}
    daemons = [Daemon(uri, catalog["dir"], settings) for _ in range(2)]
    stop = threading.Event()
    java_rows = []

    def java_writer():
        start = 100000
        while not stop.is_set():
            peer("append", "--uri", uri, "--table", f"{NS}.{name}", "--rows", 3, "--start-id", start, env=env)
            java_rows.extend(range(start, start + 3))
            start += 3

    t = threading.Thread(target=java_writer, daemon=True)
    t.start()
    try:
        pick = random.Random(3)
        run_writers(reqs, lambda: pick.choice([d.url for d in daemons]), NS, name, writers=8, pace=(0.0, 0.1),
                    seed=2)
    finally:
        stop.set()
        t.join(timeout=120)
        codes = [stop_daemon(d) for d in daemons]
    counts, problems = verify_table(uri, NS, name, reqs, "s3 race", env=env,
                                    extra={"java-rows": len(java_rows)})
    # The Java writer's rows are no writer request's: take them out of the "foreign rows" check.
    problems = [p for p in problems if not p.startswith("rows no writer staged")]
    conclude(counts, problems, [d.log for d in daemons])
    assert codes == [0, 0]


def test_three_daemons_catalog_faults_on_s3(catalog):
    """Three daemons, every POST to a random one; the catalog loses responses, resets, answers
    5xx and conflicts; a quarter of the writers give up on their first POST early."""
    s3, env = catalog["s3"], s3_peer_env(catalog["s3"])
    uri = catalog["uri"]
    name, _ = new_table(catalog, "xo")
    reqs = stage_requests(uri, NS, name, 120, prefix="three", env=env)
    settings = {**RETRY, **s3_daemon_settings(s3, vended=True)}
    daemons = [Daemon(uri, catalog["dir"], settings) for _ in range(3)]
    try:
        urls = [d.url for d in daemons]
        pick = random.Random(6)
        lock = threading.Lock()

        def pick_url():
            with lock:
                return pick.choice(urls)

        set_faults(uri, commit=["lost-response", "pass", "error-500", "pass", "reset", "pass", "error-503", "pass",
                                "conflict", "pass", "reset-before", "pass"] * 3,
                   load=["pass", "error-503", "pass", "reset-before"] * 4, table=f"{NS}.{name}", reset_counters=True)
        run_writers(reqs, pick_url, NS, name, writers=8, pace=(0.0, 0.08), seed=4, impatient=0.25)
        injected = {k: v for k, v in get_faults(uri)["injected"].items() if v}
    finally:
        clear_faults(uri)
        codes = [stop_daemon(d) for d in daemons]
    counts, problems = verify_table(uri, NS, name, reqs, "s3 three daemons", injected=injected, env=env)
    conclude(counts, problems, [d.log for d in daemons])
    assert sum(injected.values()) >= 10, injected
    assert codes == [0, 0, 0]


def test_kill_9_on_s3(catalog):
    """100 requests in 10 rounds, icecommitd killed with SIGKILL at a random moment of each while
    the catalog holds commits 50..300 ms; the next daemon finds landed commits in the history."""
    s3, env = catalog["s3"], s3_peer_env(catalog["s3"])
    uri = catalog["uri"]
    name, _ = new_table(catalog, "kill")
    reqs = stage_requests(uri, NS, name, 100, prefix="kill", env=env)
    d = RestartableDaemon(uri, catalog["dir"], free_port(), {**RETRY, **s3_daemon_settings(s3, vended=True)})
    cancel = threading.Event()
    in_flight = []
    set_faults(uri, commit=["delay-50", "delay-300", "pass", "delay-150"] * 80, table=f"{NS}.{name}",
               reset_counters=True)
    try:
        in_flight = kill9_rounds(d, reqs, NS, name, 10, cancel)
        code = d.stop()
    finally:
        cancel.set()
        clear_faults(uri)
        d.stop()
    counts, problems = verify_table(uri, NS, name, reqs, "s3 kill -9 x10", env=env,
                                    extra={"in-flight-at-each-kill": in_flight})
    conclude(counts, problems, [d.log])
    assert code == 0
