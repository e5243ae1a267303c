# SPDX-License-Identifier: Apache-2.0
"""Writers that lie or misbehave (issue 10, first part): one staged manifest under several
spellings in one request, snapshot properties without bound, a request claiming more rows than
commit.max-rows-per-request, SIGHUP reloading the configuration (a broken file keeps the old one),
a read-only remount of the table's storage, a newline in the paths a writer sends (issue 19). Each
is answered with the reason;
the table is unchanged (read by Iceberg Java) and the daemon still commits a well-behaved
writer's request afterwards."""
import os
import signal
import subprocess
import time

import pytest

from conftest import Daemon, http, peer


@pytest.fixture
def strict_daemon(catalog):
    d = Daemon(catalog["uri"], catalog["dir"], {"commit.max-rows-per-request": "10",
                                                 "commit.max-snapshot-properties": "4",
                                                 "commit.max-snapshot-properties-bytes": "256"})
    try:
        yield d
    finally:
        d.stop()


def unchanged(catalog, ns, name, before):
    dump = peer("dump", "--uri", catalog["uri"], "--table", f"{ns}.{name}")
    assert dump["metadata-location"] == before["metadata-location"]
    assert dump["next-row-id"] == before["next-row-id"]


def test_lying_writers_are_refused_and_change_nothing(catalog, strict_daemon, table):
    ns, name, _ = table
    uri = catalog["uri"]
    d = strict_daemon
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 3, "--start-id", 0)
    m = staged["manifest"]
    path = m.removeprefix("file:")
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")

    # One file, spelled twice: its rows would be committed twice.
    head, tail = os.path.split(path)
    for k, other in enumerate(("/" + path, "file:" + path, "file://" + path, f"{head}/./{tail}", f"{head}//{tail}")):
        status, _, answer = d.commit(ns, name, {"idempotency-key": f"dup-{k}", "staged-manifests": [m, other]})
        assert status == 400, (other, answer)
        assert "names the same file as 'staged-manifests'[0]" in answer["error"]["message"], answer

    # Snapshot properties live in the metadata for good: bounded in count and bytes.
    status, _, answer = d.commit(ns, name, {"idempotency-key": "props-n", "staged-manifests": [m],
                                            "snapshot-properties": {f"k{i}": "v" for i in range(5)}})
    assert status == 413 and answer["error"]["type"] == "snapshot-properties-too-large", answer
    status, _, answer = d.commit(ns, name, {"idempotency-key": "props-bytes", "staged-manifests": [m],
                                            "snapshot-properties": {"k": "x" * 300}})
    assert status == 413 and "commit.max-snapshot-properties-bytes" in answer["error"]["message"], answer

    # More rows than one request may claim row ids for (a record-count that lies).
    big = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 11, "--start-id", 100)
    status, _, answer = d.commit(ns, name, {"idempotency-key": "rows", "staged-manifests": [big["manifest"]]})
    assert status == 422 and answer["error"]["type"] == "too-many-rows", answer
    assert "adds 11 rows, above the limit of 10" in answer["error"]["message"]
    unchanged(catalog, ns, name, before)

    # SIGHUP reloads the configuration instead of ending the daemon (its default action would):
    # a broken file keeps the old settings, a good one applies the run-time limits in place and
    # names the rest as needing a restart; the daemon keeps serving throughout.
    good_config = open(d.config).read()
    with open(d.config, "a") as f:
        f.write("[commit]\nmax-rows-per-reqest = 20\n")
    d.proc.send_signal(signal.SIGHUP)
    d.wait_log("reload: keeping the old configuration")
    assert "max-rows-per-reqest" in open(d.log).read()
    status, _, answer = d.commit(ns, name, {"idempotency-key": "rows-2", "staged-manifests": [big["manifest"]]})
    assert status == 422 and answer["error"]["type"] == "too-many-rows", answer
    with open(d.config, "w") as f:
        f.write(good_config.replace("max-rows-per-request = 10", "max-rows-per-request = 20")
                .replace("port = ", "max-connections = 77\nport = ", 1))
    d.proc.send_signal(signal.SIGHUP)
    d.wait_log("reload: configuration")
    log = open(d.log).read()
    assert "applied=1 (commit.max-rows-per-request)" in log, log[-2000:]
    assert "changed but applied only by a restart: http.max-connections" in log, log[-2000:]
    status, _, receipt = d.commit(ns, name, {"idempotency-key": "good", "staged-manifests": [big["manifest"]],
                                             "snapshot-properties": {"writer": "well-behaved"}})
    assert status == 200, receipt
    assert d.proc.poll() is None
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(100 + i, i) for i in range(11)]


def test_one_data_file_is_committed_once(catalog, daemon, table):
    """A manifest already in the table sent again under a new key; one Parquet file described
    twice in one request under two spellings; and two requests of one batch naming one file:
    each refused with 422 and the rule, the file's rows in the table exactly once."""
    import concurrent.futures
    import time

    from faults import clear_faults, set_faults
    from test_data_files import describe, write_parquet

    ns, name, created = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 0,
                  "--manifests", 2)["manifests"]
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "once-a", "staged-manifests": [staged[0]["manifest"]]})
    assert status == 200, receipt
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "once-b", "staged-manifests": [staged[0]["manifest"]]})
    assert status == 422 and answer["error"]["type"] == "manifest-already-committed", answer
    assert f"added by snapshot {receipt['snapshot-id']}" in answer["error"]["message"]

    location = created["location"]
    path = write_parquet(location, [10, 11, 12])
    other = "file://" + path.replace("/data/", "/data/./")

    def describe_as(location, ids):
        d = describe(path, ids)
        d["file-path"] = location
        return d

    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "once-c",
                                                 "data-files": [describe(path, [10, 11, 12]),
                                                                describe_as(other, [10, 11, 12])]})
    assert status == 422 and answer["error"]["type"] == "duplicate-data-file", answer
    assert "'data-files'[1]" in answer["error"]["message"] and "'data-files'[0]" in answer["error"]["message"]

    # Two requests that meet in one batch: the first commit is held 1 s in the catalog while
    # both arrive; the later one is refused, the other committed.
    set_faults(uri, commit=["delay-1000"], table=f"{ns}.{name}")
    try:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            held = pool.submit(daemon.commit, ns, name, {"idempotency-key": "once-held",
                                                         "staged-manifests": [staged[1]["manifest"]]})
            time.sleep(0.3)
            one = pool.submit(daemon.commit, ns, name, {"idempotency-key": "once-d",
                                                        "data-files": [describe(path, [10, 11, 12])]})
            time.sleep(0.1)
            two = pool.submit(daemon.commit, ns, name, {"idempotency-key": "once-e",
                                                        "data-files": [describe_as(other, [10, 11, 12])]})
            answers = [f.result() for f in (held, one, two)]
    finally:
        clear_faults(uri)
    assert [s for s, _, _ in answers] == [200, 200, 422], answers
    assert answers[2][2]["error"]["type"] == "duplicate-data-file", answers[2]
    assert "another request of this batch" in answers[2][2]["error"]["message"]

    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    ids = sorted(r["id"] for r in dump["rows"])
    assert ids == sorted([0, 1] + [staged[1]["data-files"][0]["first-id"] + k for k in range(2)] + [10, 11, 12]), ids
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(len(ids)))


def test_idempotency_keys_are_scoped_by_table(catalog, daemon):
    """One key on two tables is two requests (a writer cannot squat another table's key); a
    lookup without the table is ambiguous then, with it each table's receipt answers."""
    from conftest import http

    names = []
    for _ in range(2):
        name = "k_" + os.urandom(6).hex()
        peer("create-table", "--uri", catalog["uri"], "--table", f"ns.{name}", "--format-version", 3)
        names.append(name)
    receipts = []
    for i, name in enumerate(names):
        staged = peer("stage", "--uri", catalog["uri"], "--table", f"ns.{name}", "--files", 1, "--rows", 1,
                      "--start-id", i)
        status, _, receipt = daemon.commit("ns", name, {"idempotency-key": "shared-key",
                                                       "staged-manifests": [staged["manifest"]]})
        assert status == 200, receipt
        receipts.append(receipt)
    status, _, body = http("GET", f"{daemon.url}/v1/commits/shared-key")
    assert status == 409 and body["error"]["type"] == "key-ambiguous", body
    for name, receipt in zip(names, receipts):
        status, _, body = http("GET", f"{daemon.url}/v1/commits/shared-key?namespace=ns&table={name}")
        assert status == 200 and body["receipt"]["snapshot-id"] == receipt["snapshot-id"], body

    # A refused request (4xx) is replayed for the same body only: the writer's corrected request
    # under the same key is committed, not answered 409 idempotency-key-reused.
    name = names[0]
    staged = peer("stage", "--uri", catalog["uri"], "--table", f"ns.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 50)
    bad = {"idempotency-key": "fixed-later", "staged-manifests": [staged["manifest"] + ".missing"]}
    status, _, refused = daemon.commit("ns", name, bad)
    assert status == 422 and refused["error"]["type"] == "invalid-manifest", refused
    status, _, again = daemon.commit("ns", name, bad)
    assert (status, again) == (422, refused)
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": "fixed-later",
                                                    "staged-manifests": [staged["manifest"]]})
    assert status == 200 and receipt["snapshot-first-row-id"] == 1, receipt
    status, _, again = daemon.commit("ns", name, {"idempotency-key": "fixed-later",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200 and again["snapshot-id"] == receipt["snapshot-id"], again
    # A committed key stays bound to its body.
    status, _, err = daemon.commit("ns", name, bad)
    assert status == 409 and err["error"]["type"] == "idempotency-key-reused", err


def test_staged_manifests_name_only_the_tables_own_files(catalog, daemon, table):
    """A staged manifest placed in table C's metadata directory but naming table A's data files
    is refused, without a word about those files; the table property icecommit.allowed-prefixes
    lets an operator allow such a location on purpose (table B)."""
    import shutil

    from conftest import http

    ns, name_a, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name_a}", "--files", 1, "--rows", 2, "--start-id", 0)
    location_a = staged["manifest"].rsplit("/metadata/", 1)[0]
    schema = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": True, "type": "long"},
                                           {"id": 2, "name": "data", "required": False, "type": "string"}]}
    targets = {}
    # The prefixes lie within the storage roots (the warehouse), like table A's location.
    nowhere = os.path.join(os.path.dirname(location_a.removeprefix("file:")), "nowhere")
    for label, props in (("c", {}), ("b", {"icecommit.allowed-prefixes": f"{nowhere},{location_a}"})):
        name = f"conf_{label}_" + os.urandom(4).hex()
        status, _, created = http("POST", f"{daemon.url}/v1/namespaces/{ns}/tables",
                                  {"name": name, "schema": schema, "properties": props})
        assert status == 201, created
        metadata_dir = created["metadata-location"].removeprefix("file:").rsplit("/", 1)[0]
        copy = os.path.join(metadata_dir, "staged-foreign.avro")
        shutil.copyfile(staged["manifest"].removeprefix("file:"), copy)
        targets[label] = (name, copy)

    name_c, copy_c = targets["c"]
    status, _, answer = daemon.commit(ns, name_c, {"idempotency-key": "foreign", "staged-manifests": [copy_c]})
    assert status == 422 and answer["error"]["type"] == "invalid-manifest", answer
    assert "entry 0" in answer["error"]["message"] and "is outside the table location" in answer["error"]["message"]
    assert "does not exist" not in answer["error"]["message"] and "bytes" not in answer["error"]["message"]
    assert peer("dump", "--uri", uri, "--table", f"{ns}.{name_c}")["rows"] == []

    name_b, copy_b = targets["b"]
    status, _, receipt = daemon.commit(ns, name_b, {"idempotency-key": "allowed", "staged-manifests": [copy_b]})
    assert status == 200, receipt
    assert sorted(r["id"] for r in peer("dump", "--uri", uri, "--table", f"{ns}.{name_b}")["rows"]) == [0, 1]


def test_read_only_storage_is_retryable_and_readiness_follows_it(catalog, table):
    """The table's metadata directory remounted read-only under a running daemon: the commit is
    503 storage-unavailable with Retry-After (never a 4xx a writer would drop its data on),
    /readyz says not ready and why, the table is unchanged; once writable again the probe makes
    the daemon ready by itself and the same key commits exactly once."""
    if os.geteuid() != 0:
        pytest.skip("remounting needs root (CI runs as root)")
    ns, name, created = table
    uri = catalog["uri"]
    meta = os.path.join(created["location"].removeprefix("file:"), "metadata")
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 0)
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"storage.probe-interval-ms": "200"})
    body = {"idempotency-key": "ro-1", "staged-manifests": [staged["manifest"]]}
    mounted = False
    try:
        subprocess.run(["mount", "--bind", meta, meta], check=True)
        mounted = True
        subprocess.run(["mount", "-o", "remount,bind,ro", meta], check=True)
        status, headers, answer = d.commit(ns, name, body)
        assert status == 503 and answer["error"]["type"] == "storage-unavailable", answer
        assert int(headers["Retry-After"]) >= 1
        assert "Read-only file system" in answer["error"]["message"], answer
        status, _, ready = http("GET", d.url + "/readyz")
        assert status == 503 and ready["error"]["type"] == "not-ready", ready
        assert "Read-only file system" in ready["error"]["message"] and meta in ready["error"]["message"], ready
        _, _, metrics = http("GET", d.url + "/metrics")
        assert "icecommit_storage_writable 0" in metrics
        unchanged(catalog, ns, name, before)
        # Still unwritable after a few probes.
        time.sleep(0.6)
        assert http("GET", d.url + "/readyz")[0] == 503
    finally:
        if mounted:
            subprocess.run(["mount", "-o", "remount,bind,rw", meta], check=True)
    try:
        deadline = time.time() + 10
        while http("GET", d.url + "/readyz")[0] != 200:
            assert time.time() < deadline, open(d.log).read()[-2000:]
            time.sleep(0.1)
        assert "storage writable again (a probe write succeeded)" in open(d.log).read()
        assert not [f for f in os.listdir(meta) if f.startswith(".icecommit-probe-")]
        status, _, receipt = d.commit(ns, name, body)
        assert status == 200, receipt
        status, _, again = d.commit(ns, name, body)
        assert status == 200 and again["snapshot-id"] == receipt["snapshot-id"], again
        dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
        assert len(dump["snapshots"]) == len(before["snapshots"]) + 1
        assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(0, 0), (1, 1)]
    finally:
        subprocess.run(["umount", meta], check=False)
        d.stop()


FORGED = "\n<3>auth: forged record"


def test_control_characters_in_paths_are_refused_and_forge_no_log_line(catalog, daemon, table):
    """Issue 19 finding 12: a newline in a location a writer sends (a staged manifest, a
    described data file, a manifest entry's file_path, a table's location at create) is refused
    with the field named, the table unchanged; the text log, which quotes what writers send (here
    a JSON member name in an answer logged at debug), escapes it: every line is one record."""
    import fastavro

    ns, name, created = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 0)
    manifest = staged["manifest"].removeprefix("file:")
    before = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")

    # A staged manifest whose entry names a data file with a newline in its path.
    newline_entries = os.path.join(os.path.dirname(manifest), "newline-entry.avro")
    with open(manifest, "rb") as f:
        reader = fastavro.reader(f)
        schema, entries = reader.writer_schema, list(reader)
        meta = {k: v for k, v in reader.metadata.items() if not k.startswith("avro.")}
    for e in entries:
        e["data_file"]["file_path"] += FORGED
    with open(newline_entries, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), entries, codec="deflate", metadata=meta)

    data_file = {"file-path": created["location"] + "/data/x.parquet" + FORGED, "file-format": "parquet",
                 "record-count": 1, "file-size-in-bytes": 100}
    cases = (({"staged-manifests": [manifest + FORGED]}, "invalid-manifest", "staged-manifests[0]: '"),
             ({"data-files": [data_file]}, "invalid-data-file", "'data-files'[0]: '"),
             ({"staged-manifests": [newline_entries]}, "invalid-manifest", "entry 0: '"))
    for k, (body, kind, where) in enumerate(cases):
        status, _, answer = daemon.commit(ns, name, {"idempotency-key": f"ctl-{k}", **body})
        assert status == 422 and answer["error"]["type"] == kind, answer
        message = answer["error"]["message"]
        assert where in message and "...' holds a control character (0x0a at byte" in message, message
        assert "forged record" not in message, message

    schema_json = {"type": "struct", "fields": [{"id": 1, "name": "id", "required": True, "type": "long"}]}
    status, _, answer = http("POST", f"{daemon.url}/v1/namespaces/{ns}/tables",
                             {"name": "ctl_" + os.urandom(4).hex(), "schema": schema_json,
                              "location": created["location"] + "-other" + FORGED})
    assert status == 400 and "\"location\": '" in answer["error"]["message"], answer
    assert "holds a control character" in answer["error"]["message"], answer
    # A refusal whose message quotes the writer's text (an unknown member's name) is logged at
    # debug: escaped, on its line.
    status, _, answer = daemon.commit(ns, name, {"idempotency-key": "ctl-member", "staged-manifests": [manifest],
                                                 "snapshot-properties": {"k" + FORGED: 1}})
    assert status == 400 and answer["error"]["message"].endswith(f"'k{FORGED}' must be a string"), answer
    daemon.wait_log("\\n<3>auth: forged record")
    lines = open(daemon.log).read().splitlines()
    assert not [line for line in lines if line.startswith("<3>auth: forged")], lines[-20:]
    unchanged(catalog, ns, name, before)

    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "ctl-good", "staged-manifests": [manifest]})
    assert status == 200, receipt
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(0, 0), (1, 1)]
