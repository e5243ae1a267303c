# SPDX-License-Identifier: Apache-2.0
"""icecommitd against a second real REST catalog: Project Nessie 0.99 (its Iceberg REST API at
/iceberg, tables on SeaweedFS), every client authenticated with OAuth2 client credentials from
Keycloak 26.5, whose tokens Nessie validates (tests/peers/nessie-start.sh, keycloak-start.sh).

Nessie 0.99 has no row lineage: a table asked for as format-version 3 is created as version 2,
so everything here runs on v2 tables (as test_format_versions does on the reference server).
Its Iceberg view of a table holds only the current snapshot (the history lives in Nessie's own
commit log), which the exactly-once checks take into account (docs/operations.md says what that
means for writers' retries).

The scenarios: an append read back by Iceberg Java; a retried key answered from memory and, by
another daemon, from the table, and refused (not committed twice) by a third once Nessie no
longer lists its snapshot; answers lost after Nessie applied the commit (a proxy forwards the
commit and resets the connection) while writers give up early and retry; a race with Iceberg
Java appending directly (real 409s; Java makes the table's first commit, which Nessie does not
guard: pinned by its own test); and a token that Nessie refuses mid-run: quarkus-oidc's
token age limit (AGE_S) is far below the lifetime Keycloak gives icecommitd's tokens, so the
daemon, which trusts expires_in, sends a token Nessie calls expired, gets a 401, fetches a new
one and sends the same commit again."""
import json
import os
import random
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from conftest import PEERS, Daemon, free_port, http, is_copy_of, make_workdir, peer, s3_daemon_settings
from s3_proxy import S3FaultProxy
from writers import conclude, metric_lines, run_writers, stage_requests, stop_daemon, verify_table

NS = "nessie"
REALM = "iceberg"
# Nessie refuses tokens older than this. Keycloak gives the peer 10 s tokens (Iceberg Java
# refreshes them after 9 s) and icecommitd one-hour ones (tests/peers/nessie/iceberg-realm.json).
AGE_S = 12
SETTINGS = {"commit.min-backoff-ms": "10", "commit.max-backoff-ms": "300", "commit.max-attempts": "200"}


@pytest.fixture(scope="module")
def nessie(_s3_server):
    """Keycloak, then Nessie with its warehouse in SeaweedFS and authentication on; one per
    module. {"uri", "token_uri", "dir", "log", "s3", "peer_env", "settings"}: the Iceberg REST
    base, Keycloak's token endpoint, the state directory, Nessie's log, the S3 dict, the Java
    peer's environment and icecommitd's settings (catalog credential, static S3 keys)."""
    workdir = make_workdir("icecommit-nessie-")
    keycloak_port, port = free_port(), free_port()
    try:
        # SeaweedFS comes up meanwhile (the fixture started it in the background).
        subprocess.run([os.path.join(PEERS, "keycloak-start.sh"), workdir, str(keycloak_port)], check=True,
                       timeout=300)
        s3 = _s3_server.wait()
        issuer = f"http://127.0.0.1:{keycloak_port}/realms/{REALM}"
        options = "nessie.catalog.service.s3.default-options"
        props = {
            "nessie.catalog.default-warehouse": "wh",
            "nessie.catalog.warehouses.wh.location": f"s3://{s3['bucket']}/nessie-{uuid.uuid4().hex[:8]}",
            f"{options}.endpoint": s3["endpoint"],
            f"{options}.path-style-access": "true",
            f"{options}.region": s3["region"],
            f"{options}.access-key": "urn:nessie-secret:quarkus:icecommit.s3",
            "icecommit.s3.name": s3["access_key"],
            "icecommit.s3.secret": s3["secret_key"],
            "nessie.server.authentication.enabled": "true",
            "quarkus.oidc.auth-server-url": issuer,
            "quarkus.oidc.token.age": f"{AGE_S}S",
        }
        subprocess.run([os.path.join(PEERS, "nessie-start.sh"), workdir, str(port),
                        *[f"{k}={v}" for k, v in props.items()]], check=True, timeout=300)
        token_uri = f"{issuer}/protocol/openid-connect/token"
        # Iceberg Java refreshes a token by token exchange unless told otherwise, which this
        # realm does not allow: its JVMs would keep their first token and meet Nessie's 401 after
        # AGE_S (measured). With exchange off it fetches a new token with the credential.
        peer_env = {"PEER_CATALOG_REST_AUTH_TYPE": "oauth2", "PEER_CATALOG_CREDENTIAL": "peer:peer-secret",
                    "PEER_CATALOG_OAUTH2__SERVER__URI": token_uri, "PEER_CATALOG_SCOPE": "catalog",
                    "PEER_CATALOG_TOKEN__EXCHANGE__ENABLED": "false",
                    "PEER_CATALOG_S3_ACCESS__KEY__ID": s3["access_key"],
                    "PEER_CATALOG_S3_SECRET__ACCESS__KEY": s3["secret_key"]}
        # Nessie's table config asks clients to have S3 requests signed by it (remote signing);
        # icecommitd signs with keys of its own instead.
        warehouse = props["nessie.catalog.warehouses.wh.location"]
        settings = {**SETTINGS, **s3_daemon_settings(s3, vended=False),
                    "storage.allowed-roots": warehouse,
                    "catalog.credential": "icecommitd:icecommitd-secret",
                    "catalog.oauth2-server-uri": token_uri, "catalog.scope": "catalog"}
        yield {"uri": f"http://127.0.0.1:{port}/iceberg", "token_uri": token_uri, "dir": workdir,
               "log": os.path.join(workdir, "nessie.log"), "s3": s3, "peer_env": peer_env,
               "settings": settings}
    finally:
        stopped = subprocess.run([os.path.join(PEERS, "nessie-stop.sh"), workdir], check=False, timeout=120)
        if stopped.returncode == 0:
            # The unpacked Keycloak (175 MB); the logs stay.
            shutil.rmtree(os.path.join(workdir, "keycloak"), ignore_errors=True)


def new_table(nessie, prefix):
    name = f"{prefix}_" + uuid.uuid4().hex[:10]
    created = peer("create-table", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--format-version", 2,
                   env=nessie["peer_env"])
    assert created["format-version"] == 2, created
    return name


def dump(nessie, name):
    return peer("dump", "--uri", nessie["uri"], "--table", f"{NS}.{name}", env=nessie["peer_env"])


def keys_of(snapshot):
    return snapshot["summary"].get("icecommit.idempotency-keys", "").split(",")


def test_format_version_3_is_created_as_2(nessie):
    """The limit that keeps lineage out of this module: Nessie 0.99's table model stops at v2."""
    name = "v3_" + uuid.uuid4().hex[:10]
    created = peer("create-table", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--format-version", 3,
                   env=nessie["peer_env"])
    assert created["format-version"] == 2, created


def test_append_read_back_by_iceberg_java(nessie):
    name = new_table(nessie, "app")
    env = nessie["peer_env"]
    peer("append", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--rows", 5, "--start-id", 0, env=env)
    staged = peer("stage", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--files", 2, "--rows", 10,
                  "--start-id", 1000, env=env)
    d = Daemon(nessie["uri"], nessie["dir"], nessie["settings"])
    try:
        body = {"idempotency-key": f"app-{name}", "staged-manifests": [staged["manifest"]]}
        status, _, receipt = d.commit(NS, name, body)
        assert status == 200, receipt
        assert receipt["sequence-number"] == 2 and receipt["snapshot-first-row-id"] is None, receipt
        assert [m["staged-location"] for m in receipt["manifests"]] == [staged["manifest"]]
        assert is_copy_of(receipt["manifests"][0], staged["manifest"]), receipt
        # The same request again: the same answer, from the daemon's memory.
        status, _, again = d.commit(NS, name, body)
        assert status == 200 and again == receipt, again
        _, _, metrics = http("GET", d.url + "/metrics")
    finally:
        d.stop()
    table = dump(nessie, name)
    assert table["format-version"] == 2
    assert sorted(r["id"] for r in table["rows"]) == list(range(5)) + list(range(1000, 1020))
    current = table["snapshots"][-1]
    assert current["snapshot-id"] == receipt["snapshot-id"] and keys_of(current) == [f"app-{name}"]
    assert current["sequence-number"] == 2
    assert len(table["snapshots"]) == 1, "Java's append is no longer listed (see the next test)"
    assert "icecommitd-secret" not in metrics and "icecommitd-secret" not in open(d.log).read()


def test_history_holds_only_the_current_snapshot(nessie):
    """Why verify_table runs with full_history=False here, and why a key is answered from the
    table only while its snapshot is the current one (docs/operations.md): after two commits the
    metadata Nessie serves lists one snapshot, with no parent and no metadata log."""
    name = new_table(nessie, "hist")
    env = nessie["peer_env"]
    staged = peer("stage", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 0, "--manifests", 2, env=env)["manifests"]
    a = Daemon(nessie["uri"], nessie["dir"], nessie["settings"])
    try:
        status, _, first = a.commit(NS, name, {"idempotency-key": f"h0-{name}",
                                               "staged-manifests": [staged[0]["manifest"]]})
        assert status == 200, first
    finally:
        a.stop()
    # Another daemon (or this one after a restart) finds the key in the table: it is current.
    b = Daemon(nessie["uri"], nessie["dir"], nessie["settings"])
    try:
        status, headers, again = b.commit(NS, name, {"idempotency-key": f"h0-{name}",
                                                     "staged-manifests": [staged[0]["manifest"]]})
        assert status == 200 and headers.get("Icecommit-Found-In-History") == "true", again
        assert again == first, "the receipt rebuilt from the table is the committing one's"
        status, _, second = b.commit(NS, name, {"idempotency-key": f"h1-{name}",
                                                "staged-manifests": [staged[1]["manifest"]]})
        assert status == 200 and second["sequence-number"] == 2, second
        # The daemon that answered h0 still knows it: from its memory, although the table
        # has forgotten the snapshot.
        status, _, memory = b.commit(NS, name, {"idempotency-key": f"h0-{name}",
                                                "staged-manifests": [staged[0]["manifest"]]})
        assert status == 200 and memory == first, memory
    finally:
        b.stop()
    table = dump(nessie, name)
    assert [s["snapshot-id"] for s in table["snapshots"]] == [second["snapshot-id"]]
    assert sorted(r["id"] for r in table["rows"]) == [0, 1, 2, 3]
    assert table["snapshots"][0]["parent-snapshot-id"] is None, table["snapshots"][0]
    # A third daemon cannot find h0 in the table any more, and does not commit it twice: its
    # staged manifest is in the branch's list already, which the batch refuses (the writer
    # learns that much).
    c = Daemon(nessie["uri"], nessie["dir"], nessie["settings"])
    try:
        status, _, refused = c.commit(NS, name, {"idempotency-key": f"h0-{name}",
                                                 "staged-manifests": [staged[0]["manifest"]]})
    finally:
        c.stop()
    assert status == 422 and refused["error"]["type"] == "manifest-already-committed", refused
    assert sorted(r["id"] for r in dump(nessie, name)["rows"]) == [0, 1, 2, 3]


def access_token(nessie):
    form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": "peer",
                                   "client_secret": "peer-secret", "scope": "catalog"}).encode()
    with urllib.request.urlopen(nessie["token_uri"], data=form, timeout=60) as r:
        return json.loads(r.read())["access_token"]


def rest(nessie, method, path, body=None):
    """One Iceberg REST call to Nessie with a fresh token: (status, parsed JSON or text)."""
    req = urllib.request.Request(f"{nessie['uri']}/v1/main{path}", method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + access_token(nessie)})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def test_first_snapshot_requirement_is_not_enforced(nessie):
    """Pins what docs/operations.md warns about: Nessie 0.99 accepts a commit that requires the
    branch not to exist yet (assert-ref-snapshot-id with snapshot-id null) although it exists, so
    the second of two racing first commits of a table silently replaces the first. A stale
    non-null requirement is refused with 409, which the race test relies on."""
    name = new_table(nessie, "first")
    path = f"/namespaces/{NS}/tables/{name}"
    status, loaded = rest(nessie, "GET", path)
    assert status == 200, loaded
    meta = loaded["metadata"]

    def add_snapshot(snapshot_id, parent):
        snapshot = {"snapshot-id": snapshot_id, "sequence-number": meta["last-sequence-number"] + 1,
                    "timestamp-ms": meta["last-updated-ms"] + 1, "summary": {"operation": "append"},
                    "manifest-list": f"{meta['location']}/metadata/snap-{snapshot_id}-unused.avro",
                    "schema-id": meta["current-schema-id"]}
        return {"requirements": [{"type": "assert-table-uuid", "uuid": meta["table-uuid"]},
                                 {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
                "updates": [{"action": "add-snapshot", "snapshot": snapshot},
                            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                             "snapshot-id": snapshot_id}]}

    first, second = random.randrange(1, 1 << 62), random.randrange(1, 1 << 62)
    assert rest(nessie, "POST", path, add_snapshot(first, None))[0] == 200
    status, answer = rest(nessie, "POST", path, add_snapshot(second, None))
    assert status == 200, answer
    assert [s["snapshot-id"] for s in answer["metadata"]["snapshots"]] == [second], "the first is gone"
    status, answer = rest(nessie, "POST", path, add_snapshot(random.randrange(1, 1 << 62), first))
    assert status == 409, answer


def test_lost_answers_commit_each_key_once(nessie):
    """A proxy between icecommitd and Nessie forwards every other commit of the first twelve and
    resets the connection instead of answering (Nessie applied them); a third of the writers
    also give up on their first POST and retry with the same key. Each of the 6 lost answers is
    an attempt without a verdict, resolved by loading the table: the current snapshot is ours.
    The proxy closes every connection after its answer: on a kept-alive one libcurl would send
    the commit again by itself and get Nessie's 409 instead. No other client commits to the
    table meanwhile (with one, a lost answer's snapshot could be gone from Nessie's view of the
    table before the load)."""
    name = new_table(nessie, "lost")
    reqs = stage_requests(nessie["uri"], NS, name, 30, prefix=f"lost-{name}", env=nessie["peer_env"])
    proxy = S3FaultProxy(nessie["uri"].removesuffix("/iceberg"), keep_alive=False).start()
    try:
        for _ in range(6):
            proxy.add("POST", f"/namespaces/{NS}/tables/{name}", "drop")
            proxy.add("POST", f"/namespaces/{NS}/tables/{name}", "pass")
        # One request per snapshot, so that the 30 requests make at least the twelve commits the
        # proxy's rules count on (batches of a loaded machine made only ten in one CI run).
        d = Daemon(proxy.endpoint + "/iceberg", nessie["dir"],
                   {**nessie["settings"], "commit.max-batch-requests": "1"})
        try:
            run_writers(reqs, lambda: d.url, NS, name, writers=6, pace=(0.0, 0.1), seed=3, impatient=0.3)
            attempts = metric_lines(d.url, "icecommit_commit_attempts_total")
        finally:
            code = stop_daemon(d)
    finally:
        proxy.stop()
    counts, problems = verify_table(nessie["uri"], NS, name, reqs, "nessie lost answers",
                                    injected=dict(proxy.injected), extra={"daemon-attempts": attempts},
                                    env=nessie["peer_env"], full_history=False)
    conclude(counts, problems, [d.log])
    assert proxy.injected["drop"] == 6, proxy.injected
    assert attempts.get('icecommit_commit_attempts_total{outcome="unknown"}', 0) == 6, attempts
    assert sum(r.posts for r in reqs) > len(reqs), "no writer retried a key"
    assert code == 0, f"icecommitd exit status {code}"


JAVA_ROWS = 3


def test_race_against_a_direct_java_writer(nessie):
    """8 writers through two daemons while Iceberg Java appends to the same table in a loop:
    Nessie answers the losers with real 409s; every request is answered, every row is there
    once (Java's k-th append wrote ids k*3 .. k*3+2, ours start at 1,000,000)."""
    name = new_table(nessie, "race")
    uri, env = nessie["uri"], nessie["peer_env"]
    reqs = stage_requests(uri, NS, name, 160, prefix=f"race-{name}", start_id=1_000_000, env=env)
    java = subprocess.Popen([os.path.join(PEERS, "peer.sh"), "append", "--uri", uri, "--table", f"{NS}.{name}",
                             "--rows", str(JAVA_ROWS), "--start-id", "0", "--count", "100000", "--persist"],
                            env={**os.environ, **env}, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(nessie["dir"], f"java-{name}.log"), "w"))
    daemons = []
    try:
        deadline = time.time() + 120
        while not has_snapshot(nessie, name):
            assert time.time() < deadline and java.poll() is None, "the Java writer did not start"
            time.sleep(0.5)
        daemons = [Daemon(uri, nessie["dir"], nessie["settings"]) for _ in range(2)]
        rng = random.Random(5)
        run_writers(reqs, lambda: rng.choice(daemons).url, NS, name, writers=8, pace=(0.0, 0.2), seed=5)
        java.terminate()
        java.wait(timeout=60)
        conflicts = sum(metric_lines(d.url, "icecommit_commit_attempts_total").get(
            'icecommit_commit_attempts_total{outcome="conflict"}', 0) for d in daemons)
    finally:
        if java.poll() is None:
            java.kill()
            java.wait(timeout=60)
        codes = [stop_daemon(d) for d in daemons]
    counts, problems = verify_table(uri, NS, name, reqs, "nessie race", extra={"our-409s": conflicts},
                                    env=env, full_history=False)
    table = dump(nessie, name)
    java_ids = sorted(r["id"] for r in table["rows"] if r["id"] < 1_000_000)
    assert java_ids and java_ids == list(range(len(java_ids))) and len(java_ids) % JAVA_ROWS == 0, \
        "Iceberg Java's rows each once"
    problems = [p for p in problems if not p.startswith("rows no writer staged")]
    conclude(counts, problems, [d.log for d in daemons])
    assert conflicts > 0, "icecommitd never met a real 409"
    assert codes == [0, 0], codes


def has_snapshot(nessie, name):
    return bool(peer("dump", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--no-rows",
                     env=nessie["peer_env"])["snapshots"])


def test_expired_token_is_refreshed_and_the_commit_sent_again(nessie):
    """icecommitd's token (one hour by Keycloak's expires_in) is refused by Nessie once it is
    AGE_S old. The daemon keeps the table state longer than that, so the first request after
    the wait is the commit itself: Nessie answers it 401, the daemon fetches a new token (a
    second request at the token endpoint, counted by a proxy in front of it) and sends the same
    commit again, which lands once."""
    name = new_table(nessie, "tok")
    staged = peer("stage", "--uri", nessie["uri"], "--table", f"{NS}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 0, "--manifests", 2, env=nessie["peer_env"])["manifests"]
    token_proxy = S3FaultProxy(nessie["token_uri"].split("/realms/")[0]).start()
    settings = {**nessie["settings"], "catalog.oauth2-server-uri":
                token_proxy.endpoint + "/realms/" + nessie["token_uri"].split("/realms/")[1],
                "commit.table-state-max-age-ms": "600000"}
    try:
        d = Daemon(nessie["uri"], nessie["dir"], settings)
        try:
            status, _, first = d.commit(NS, name, {"idempotency-key": f"t0-{name}",
                                                   "staged-manifests": [staged[0]["manifest"]]})
            assert status == 200, first
            assert token_proxy.seen["POST"] == 1, token_proxy.seen
            time.sleep(AGE_S + 1.5)
            status, _, second = d.commit(NS, name, {"idempotency-key": f"t1-{name}",
                                                    "staged-manifests": [staged[1]["manifest"]]})
            assert status == 200, second
            assert token_proxy.seen["POST"] == 2, token_proxy.seen
            requests = metric_lines(d.url, "icecommit_catalog_requests_total")
        finally:
            d.stop()
    finally:
        token_proxy.stop()
    log = open(d.log).read()
    assert "catalog refused the token http_status=401 call='commit table'" in log, log[-3000:]
    commit_path = f"/iceberg/v1/main/namespaces/{NS}/tables/{name}"
    codes = re.findall(r'"POST ' + re.escape(commit_path) + r' HTTP/1.1" (\d+)', open(nessie["log"]).read())
    assert codes == ["200", "401", "200"], codes
    table = dump(nessie, name)
    assert sorted(r["id"] for r in table["rows"]) == [0, 1, 2, 3], "each commit landed once"
    assert keys_of(table["snapshots"][-1]) == [f"t1-{name}"]
    assert second["sequence-number"] == 2 and second["attempts"] == 1, second
    print(f"\n[nessie token] token-requests={token_proxy.seen['POST']} commit-posts={codes} "
          f"catalog-requests={requests}")
