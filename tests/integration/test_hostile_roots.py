# SPDX-License-Identifier: Apache-2.0
"""Storage roots only operators set (issue 19, finding 2), on the REST catalog and the embedded
filesystem catalog: a principal with `create`, `commit` and `read` on its namespace tries every
storage-steering property at creation (a location, one naming another table's location, each
write.*.path, icecommit.allowed-prefixes, a namespace location): each is refused (403: they need
`admin`) and nothing is created; with `admin` they are taken inside [storage] allowed-roots and
refused outside (422 location-outside-roots). A commit naming /etc/passwd and another table's data
file, with a size that is a lie, says nothing of either: the same words as for files that do not
exist. A table another engine (Iceberg Java) pointed outside the roots commits nothing (403
table-outside-roots, the same key refused again) until the operator adds the root and sends SIGHUP;
then the same key commits. icecommitd writes no file outside the roots (the filesystem is checked),
the tables are unchanged after each refusal (read by Iceberg Java) and a well-behaved writer keeps
committing. A REST daemon without roots, whose catalog names no warehouse location, stops at start
asking for the option."""
import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from conftest import (BACKENDS, BUILD, backend_catalog, free_port, http, make_workdir, peer,
                      write_daemon_config)
from test_bad_input import rewrite_manifest
from test_hostile_auth import SCHEMA, AuthDaemon, call, digest, new_token

# What a writer could learn of a file outside its table, if a refusal said it.
LEAKS = ("bytes", "exist", "manifest says", "No such file", "ermission")


@pytest.fixture(scope="module", params=BACKENDS)
def world(request):
    """One catalog, its roots (the warehouse), a directory outside them, a victim table in a
    namespace the principals have no right on (with a staged, uncommitted data file), and a
    daemon with two principals on namespace `ns`: mallory (create, commit, read) and owner
    (the same and admin)."""
    catalog = backend_catalog(request)
    uri = catalog["uri"]
    ns, victim_ns = "scratch_" + uuid.uuid4().hex[:8], "prod_" + uuid.uuid4().hex[:8]
    victim = peer("create-table", "--uri", uri, "--table", f"{victim_ns}.victim", "--format-version", 3)
    staged_victim = peer("stage", "--uri", uri, "--table", f"{victim_ns}.victim", "--files", 1, "--rows", 2,
                         "--start-id", 0)
    outside = make_workdir("icecommit-outside-")
    tokens = {name: new_token() for name in ("mallory", "owner", "ops")}
    path = os.path.join(catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
    with open(path, "w") as f:
        f.write(f"mallory {digest(tokens['mallory'])} create,commit,read:{ns}.*\n"
                f"owner {digest(tokens['owner'])} create,commit,read,admin:{ns}.*\n"
                f"ops {digest(tokens['ops'])} health\n")
    d = AuthDaemon(uri, catalog["dir"], path, tokens["ops"])
    try:
        yield {"catalog": catalog, "uri": uri, "ns": ns, "victim_ns": victim_ns, "victim": victim,
               "victim_file": staged_victim["data-files"][0]["path"].removeprefix("file:"),
               "outside": outside, "tokens": tokens, "tokens_path": path, "daemon": d,
               "warehouse": catalog["roots"].split(",")[0].strip()}
    finally:
        d.stop()
        shutil.rmtree(outside, ignore_errors=True)


def create_table(world, who, name, location=None, properties=None):
    body = {"name": name, "schema": SCHEMA, "properties": properties or {}}
    if location:
        body["location"] = location
    return call("POST", f"{world['daemon'].url}/v1/namespaces/{world['ns']}/tables", world["tokens"][who], body)


def create_namespace(world, who, levels, properties):
    return call("POST", f"{world['daemon'].url}/v1/namespaces", world["tokens"][who],
                {"namespace": levels, "properties": properties})


def commit(world, name, body, who="mallory"):
    return call("POST", world["daemon"].commits_url(world["ns"], name), world["tokens"][who], body)


def exists(world, namespace, name):
    """Whether the catalog holds the table (name) or the namespace namespace.name, asked of the
    catalog itself."""
    if world["catalog"]["backend"] == "filesystem":
        return os.path.isdir(os.path.join(world["warehouse"], namespace, name))
    status, _, answer = http("GET", f"{world['uri']}/v1/namespaces/{namespace}/tables/{name}")
    assert status in (200, 404), answer
    if status == 200:
        return True
    status, _, answer = http("GET", f"{world['uri']}/v1/namespaces?parent={namespace}")
    assert status in (200, 404), answer
    return status == 200 and [namespace, name] in answer["namespaces"]


def roots_logged(d):
    """How many times the daemon logged the storage roots it took (at start, on SIGHUP)."""
    with open(d.log) as f:
        return f.read().count("daemon: storage roots '")


def reload_roots(world, settings):
    """Rewrites the daemon's configuration with `settings` and sends SIGHUP; returns once it
    logged the roots it took."""
    d = world["daemon"]
    n = roots_logged(d)
    write_daemon_config(d.config, world["uri"], d.port, {"auth.tokens-file": world["tokens_path"], **settings})
    d.proc.send_signal(signal.SIGHUP)
    deadline = time.time() + 60  # a daemon under valgrind is slow to get to it
    while roots_logged(d) == n:
        assert time.time() < deadline, open(d.log).read()[-2000:]
        time.sleep(0.05)


def files_under(directory):
    return sorted(os.path.join(p, f) for p, _, names in os.walk(directory) for f in names)


def dump(world, table):
    return peer("dump", "--uri", world["uri"], "--table", table)


def unchanged(world, table, before):
    after = dump(world, table)
    assert after["metadata-location"] == before["metadata-location"]
    assert after["next-row-id"] == before["next-row-id"]


def well_behaved_commit(world, name, start_id, who="mallory"):
    staged = peer("stage", "--uri", world["uri"], "--table", f"{world['ns']}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", start_id)
    status, _, receipt = commit(world, name, {"idempotency-key": f"good-{start_id}",
                                              "staged-manifests": [staged["manifest"]]}, who)
    assert status == 200, receipt
    assert {start_id, start_id + 1} <= {r["id"] for r in dump(world, f"{world['ns']}.{name}")["rows"]}


def test_create_alone_chooses_no_location(world):
    """mallory, with `create` but not `admin`: every storage-steering member or property is
    refused before the catalog is asked, whatever its value; nothing is created, nothing written."""
    outside = world["outside"]
    attempts = [("location", outside, {}),
                ("location", world["victim"]["location"], {}),  # another table's files
                ("write.data.path", None, {"write.data.path": outside}),
                ("write.metadata.path", None, {"write.metadata.path": outside}),
                ("write.folder-storage.path", None, {"write.folder-storage.path": outside}),
                ("write.object-storage.path", None, {"write.object-storage.path": outside}),
                ("icecommit.allowed-prefixes", None, {"icecommit.allowed-prefixes": "/"}),
                # Even inside the roots: without admin, the catalog chooses.
                ("write.data.path", None, {"write.data.path": os.path.join(world["warehouse"], "mine")})]
    for k, (what, location, properties) in enumerate(attempts):
        name = f"steer_{k}"
        status, _, answer = create_table(world, "mallory", name, location, properties)
        assert status == 403 and answer["error"]["type"] == "forbidden", answer
        assert "no 'admin' right" in answer["error"]["message"] and f"sets '{what}'" in answer["error"]["message"]
        assert not exists(world, world["ns"], name)
    # A namespace location: some catalogs derive their tables' default locations from it.
    for properties in ({"location": outside}, {"location": world["victim"]["location"]}):
        status, _, answer = create_namespace(world, "mallory", [world["ns"], "sub"], properties)
        assert status == 403 and answer["error"]["type"] == "forbidden", answer
        assert "sets 'location'" in answer["error"]["message"], answer
        assert not exists(world, world["ns"], "sub")
    assert files_under(outside) == []


def test_admin_sets_locations_inside_the_roots_only(world):
    """owner, with `admin`: inside the roots the properties are taken and the table commits;
    outside them (or the whole host) the create is refused naming the property and the roots."""
    outside, warehouse = world["outside"], world["warehouse"]
    refusals = [({"write.metadata.path": outside}, "the property write.metadata.path"),
                ({"write.data.path": "/tmp"}, "the property write.data.path '/tmp' is outside"),
                ({"icecommit.allowed-prefixes": f"{warehouse}/x,/"},
                 "an entry of the property icecommit.allowed-prefixes '/' is outside")]
    for k, (properties, words) in enumerate(refusals):
        status, _, answer = create_table(world, "owner", f"out_{k}", properties=properties)
        assert status == 422 and answer["error"]["type"] == "location-outside-roots", answer
        assert words in answer["error"]["message"] and f"'{warehouse}'" in answer["error"]["message"], answer
        assert not exists(world, world["ns"], f"out_{k}")
    status, _, answer = create_namespace(world, "owner", [world["ns"], "sub"], {"location": outside})
    assert status == 422 and answer["error"]["type"] == "location-outside-roots", answer
    assert f"namespace '{world['ns']}.sub': the location '{outside}' is outside" in answer["error"]["message"]
    assert not exists(world, world["ns"], "sub")
    if world["catalog"]["backend"] == "rest":
        status, _, answer = create_table(world, "owner", "out_loc", location=outside)
        assert status == 422 and "the location" in answer["error"]["message"], answer
        status, _, answer = create_table(world, "owner", "in_loc",
                                         location=os.path.join(warehouse, world["ns"], "elsewhere"))
        assert status == 201 and answer["location"].endswith("/elsewhere"), answer
    assert files_under(outside) == []

    data = os.path.join(warehouse, world["ns"], "owner_data")
    status, _, answer = create_table(world, "owner", "inside", properties={"write.data.path": data})
    assert status == 201, answer
    well_behaved_commit(world, "inside", 0)
    assert any(f.startswith(data + "/") for f in files_under(data))


def test_files_outside_the_table_are_not_described(world):
    """A staged manifest naming /etc/passwd and the victim table's data file, each with a size
    that is a lie, and the same names for files that do not exist: four refusals in the same
    words (but for the name), none saying whether a file exists or how big it is. data-files
    the same. The table is unchanged; a well-behaved writer commits afterwards."""
    name = "t_" + uuid.uuid4().hex[:8]
    assert create_table(world, "mallory", name)[0] == 201
    table = f"{world['ns']}.{name}"
    staged = peer("stage", "--uri", world["uri"], "--table", table, "--files", 1, "--rows", 2, "--start-id", 10)
    before = dump(world, table)
    manifest = staged["manifest"].removeprefix("file:")
    victim_gone = os.path.join(os.path.dirname(world["victim_file"]), "no-such.parquet")
    targets = ["/etc/passwd", "/etc/no-such-file", world["victim_file"], victim_gone]
    messages = []
    for k, target in enumerate(targets):
        copy = rewrite_manifest(manifest, os.path.join(os.path.dirname(manifest), f"foreign-{k}-m0.avro"),
                                change_entry=lambda e, t=target: dict(
                                    e, data_file=dict(e["data_file"], file_path=t, file_size_in_bytes=1)))
        status, _, answer = commit(world, name, {"idempotency-key": f"foreign-{k}", "staged-manifests": [copy]})
        assert status == 422 and answer["error"]["type"] == "invalid-manifest", answer
        message = answer["error"]["message"]
        assert f"entry 0 '{target}' is outside the table location" in message, message
        messages.append(message.replace(target, "X").replace(f"foreign-{k}", "F"))
        status, _, answer = commit(world, name, {"idempotency-key": f"described-{k}", "data-files": [
            {"file-path": target, "file-format": "parquet", "record-count": 1, "file-size-in-bytes": 1}]})
        assert status == 422 and answer["error"]["type"] == "invalid-data-file", answer
        assert f"'{target}' is outside the table location" in answer["error"]["message"], answer
        messages.append(answer["error"]["message"].replace(target, "X"))
    assert len(set(messages[0::2])) == 1 and len(set(messages[1::2])) == 1, messages
    for m in messages:
        assert not any(leak in m for leak in LEAKS), m
    unchanged(world, table, before)
    status, _, receipt = commit(world, name, {"idempotency-key": "own", "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt


def test_a_table_another_engine_pointed_outside_commits_nothing_until_allowed(world):
    """Iceberg Java points a table's data (and on REST its metadata) outside the roots: intake
    refuses its requests with 403 table-outside-roots before reading anything, the same key
    again too, and icecommitd writes nothing there. The operator adds the root (config rewritten,
    SIGHUP): the same key commits, its manifest list where the table says, and Java reads it."""
    d, outside = world["daemon"], world["outside"]
    name = "ext_" + uuid.uuid4().hex[:8]
    table = f"{world['ns']}.{name}"
    created = peer("create-table", "--uri", world["uri"], "--table", table, "--format-version", 3)
    data_dir = os.path.join(outside, name, "data")
    metadata_dir = os.path.join(outside, name, "metadata")
    peer("set-property", "--uri", world["uri"], "--table", table, "--key", "write.data.path", "--value", data_dir)
    if world["catalog"]["backend"] == "rest":
        peer("set-property", "--uri", world["uri"], "--table", table, "--key", "write.metadata.path",
             "--value", metadata_dir)
    staged = peer("stage", "--uri", world["uri"], "--table", table, "--files", 1, "--rows", 2, "--start-id", 0,
                  "--manifest-dir", created["location"].removeprefix("file:") + "/metadata")
    before, written_by_java = dump(world, table), files_under(outside)
    body = {"idempotency-key": "ext-1", "staged-manifests": [staged["manifest"]]}
    for _ in range(2):  # the same key is refused again, not replayed: it is evaluated anew
        status, _, answer = commit(world, name, body)
        assert status == 403 and answer["error"]["type"] == "table-outside-roots", answer
        message = answer["error"]["message"]
        assert f"the property write.data.path '{data_dir}' is outside the storage roots" in message, message
        assert "[storage] allowed-roots" in message and not any(leak in message for leak in LEAKS), message
    assert files_under(outside) == written_by_java
    unchanged(world, table, before)
    # The other tables are served meanwhile.
    assert create_table(world, "mallory", name + "_ok")[0] == 201
    well_behaved_commit(world, name + "_ok", 100)

    reload_roots(world, {"storage.allowed-roots": f"{world['catalog']['roots']}, {outside}"})
    d.wait_log(f"'{outside}' ([storage] allowed-roots)")
    status, _, receipt = commit(world, name, body)
    assert status == 200, receipt
    assert sorted(r["id"] for r in dump(world, table)["rows"]) == [0, 1]
    if world["catalog"]["backend"] == "rest":
        assert [f for f in files_under(metadata_dir) if os.path.basename(f).startswith("snap-")], \
            files_under(metadata_dir)

    # And back: the table is refused again, though the engine holds its state from the commit.
    reload_roots(world, {})
    status, _, answer = commit(world, name, {"idempotency-key": "ext-2", "staged-manifests": [staged["manifest"]]})
    assert status == 403 and answer["error"]["type"] == "table-outside-roots", answer


def test_a_rest_daemon_without_roots_stops_at_start(rest_catalog):
    """The reference server's /v1/config names no warehouse: without [storage] allowed-roots the
    daemon stops, naming the option; catalog.warehouse as a location is a root by itself; a
    malformed list fails --check-config."""
    binary = os.path.join(BUILD, "daemon", "icecommitd")
    config = os.path.join(rest_catalog["dir"], f"roots-{uuid.uuid4().hex[:8]}.conf")
    write_daemon_config(config, rest_catalog["uri"], free_port(), {"storage.allowed-roots": "/unused"})
    with open(config) as f:
        text = "".join(line for line in f if not line.startswith("allowed-roots"))
    with open(config, "w") as f:
        f.write(text)
    out = subprocess.run([binary, "--config", config], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1, out.stderr
    assert "names a warehouse location; set [storage] allowed-roots" in out.stderr, out.stderr

    warehouse = rest_catalog["roots"]
    with open(config, "w") as f:
        f.write(text.replace("[catalog]\n", f"[catalog]\nwarehouse = {warehouse}\n"))
    proc = subprocess.Popen([binary, "--config", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = next((line for line in proc.stderr if "storage roots" in line), "")
        next((x for x in proc.stderr if "listening on http" in x), "")  # signals handled from here
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert f"storage roots '{warehouse}' (the catalog's warehouse, catalog.warehouse)" in line, line
    assert proc.returncode == 0

    with open(config, "w") as f:
        f.write(text.replace("[storage]\n", "[storage]\nallowed-roots = /wh,,/x\n"))
    out = subprocess.run([binary, "--config", config, "--check-config"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 1 and "key 'storage.allowed-roots': entry 2 is empty" in out.stderr, out.stderr
