# SPDX-License-Identifier: Apache-2.0
"""Writers without the right (issue 10, authentication): bearer tokens from a tokens file, each
with scopes of rights on table patterns. Every route answers 401 without a known token and 403
outside the token's scopes, before it reads the body or the table (a nonexistent table gets the
same answer); the tables are unchanged afterwards (read by Iceberg Java). Idempotency keys and
receipts belong to their principal: one key of two principals on one table is two requests,
and a principal cannot read another's receipt (the same answer as an unknown key). /healthz and
/readyz are open by default and need a token when configured; /metrics needs the right
`metrics` unless configured open. SIGHUP reloads the tokens file: a good one replaces the
tokens, a broken one keeps the old ones.

Issue 19, findings 8, 9 and 13: /metrics (which names tables) is no longer open by default with
authentication on; a tokens file with a token in the wrong column is refused at start and on
reload with the line, field and rule, and the token never reaches the log; a listener off
loopback without authentication refuses to start (and a reload that would need it is refused)
unless auth.allow-unauthenticated says the operator means it."""
import base64
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import pytest

from conftest import BUILD, Daemon, free_port, http, peer, write_daemon_config

SCHEMA = {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"},
    {"id": 3, "name": "bucket", "required": False, "type": "int"},
]}


def new_token():
    # What docs/operations.md tells operators to run: openssl rand -base64 32, then sha256sum.
    return secrets.token_urlsafe(32)


def digest(token):
    return hashlib.sha256(token.encode()).hexdigest()


def call(method, url, token=None, body=None, raw_authorization=None):
    """Returns (status, headers, parsed JSON or text), with a bearer token when given."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if raw_authorization is not None:
        headers["Authorization"] = raw_authorization
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            status, hdrs, text = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, hdrs, text = e.code, e.headers, e.read()
    try:
        return status, hdrs, json.loads(text)
    except ValueError:
        return status, hdrs, text.decode()


class AuthDaemon(Daemon):
    """Daemon with a tokens file; readiness is polled with a token that holds `health`."""

    def __init__(self, catalog_uri, workdir, tokens_file, ready_token, settings=None):
        self.ready_token = ready_token
        super().__init__(catalog_uri, workdir, {"auth.tokens-file": tokens_file, **(settings or {})})

    def is_ready(self):
        return call("GET", self.url + "/readyz", self.ready_token)[0] == 200

    def commits_url(self, ns, table):
        return f"{self.url}/v1/namespaces/{ns}/tables/{table}/commits"



@pytest.fixture(scope="module")
def world(rest_catalog):
    """Two tables in namespace ns (a: in the writers' scope, b: outside it), their staged
    manifests, and the principals' tokens."""
    uri = rest_catalog["uri"]
    a, b = "ta_" + uuid.uuid4().hex[:8], "tb_" + uuid.uuid4().hex[:8]
    for t in (a, b):
        peer("create-table", "--uri", uri, "--table", f"ns.{t}", "--format-version", 3)
    staged = [peer("stage", "--uri", uri, "--table", f"ns.{a}", "--files", 1, "--rows", 3, "--start-id", 10 * k)["manifest"]
              for k in range(6)]
    # One JVM run for the later tests' writers: ids 1000-1002, 1003-1005, ...
    extra = [m["manifest"] for m in peer("stage", "--uri", uri, "--table", f"ns.{a}", "--files", 1, "--rows", 3,
                                         "--start-id", 1000, "--manifests", 4)["manifests"]]
    admin_ns = "auth_" + uuid.uuid4().hex[:8]
    tokens = {name: new_token() for name in ("alice", "bob", "carol", "admin", "ops")}
    lines = [
        "# principal sha256(token) scopes",
        f"alice {digest(tokens['alice'])} commit,read:ns.{a}",
        f"bob {digest(tokens['bob'])} commit,read:ns.{a}",
        f"carol {digest(tokens['carol'])} read:ns.*",
        f"admin {digest(tokens['admin'])} create:{admin_ns}.* upgrade:{admin_ns}.*",
        f"ops {digest(tokens['ops'])} metrics health",
    ]
    path = os.path.join(rest_catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return {"catalog": rest_catalog, "a": a, "b": b, "staged": staged, "extra": extra, "tokens": tokens,
            "path": path, "lines": lines, "admin_ns": admin_ns}


@pytest.fixture
def auth_daemon(world):
    d = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], world["tokens"]["ops"])
    try:
        yield d
    finally:
        d.stop()


def dump(world, t):
    return peer("dump", "--uri", world["catalog"]["uri"], "--table", f"ns.{t}")


def unchanged(world, t, before):
    after = dump(world, t)
    assert after["metadata-location"] == before["metadata-location"]
    assert after["next-row-id"] == before["next-row-id"]


def assert_unauthenticated(answer, headers, status):
    assert status == 401, answer
    assert answer["error"]["code"] == 401 and answer["error"]["type"] == "unauthenticated", answer
    assert headers["WWW-Authenticate"].startswith("Bearer realm=\"icecommitd\""), dict(headers)


def assert_forbidden(answer, status, text):
    assert status == 403, answer
    assert answer["error"]["code"] == 403 and answer["error"]["type"] == "forbidden", answer
    assert text in answer["error"]["message"], answer


def protected_routes(d, world):
    a, m = world["a"], world["staged"][0]
    return [
        ("POST", d.commits_url("ns", a), {"idempotency-key": "k", "staged-manifests": [m]}),
        ("POST", d.commits_url("ns", "no_such_table"), {"idempotency-key": "k", "staged-manifests": [m]}),
        ("GET", f"{d.url}/v1/commits/k", None),
        ("GET", f"{d.url}/v1/commits/k?namespace=ns&table={a}", None),
        ("POST", f"{d.url}/v1/namespaces", {"namespace": [world["admin_ns"]]}),
        ("POST", f"{d.url}/v1/namespaces/ns/tables", {"name": "x", "schema": SCHEMA}),
        ("POST", f"{d.url}/v1/namespaces/ns/tables/{a}/upgrade", {}),
        ("GET", f"{d.url}/v1/namespaces/ns/tables/{a}/lineage", None),
        ("GET", f"{d.url}/v1/namespaces/ns/tables/{a}/row-ids/0", None),
    ]


def test_every_route_needs_a_known_token(world, auth_daemon):
    d = auth_daemon
    before = dump(world, world["a"])
    for method, url, body in protected_routes(d, world):
        status, headers, answer = call(method, url, body=body)
        assert_unauthenticated(answer, headers, status)
        assert "a bearer token is required" in answer["error"]["message"]
        assert "invalid_token" not in headers["WWW-Authenticate"]
        for token in (new_token(), digest(world["tokens"]["alice"]), world["tokens"]["alice"][:-1]):
            status, headers, answer = call(method, url, token, body=body)
            assert_unauthenticated(answer, headers, status)
            assert "error=\"invalid_token\"" in headers["WWW-Authenticate"]
            assert answer["error"]["message"] == "the bearer token is not known here"
        for raw in ("Basic YWxpY2U6c2VjcmV0", "Bearer", "Bearer a b", world["tokens"]["alice"]):
            status, headers, answer = call(method, url, body=body, raw_authorization=raw)
            assert_unauthenticated(answer, headers, status)
            assert "must be 'Bearer TOKEN'" in answer["error"]["message"]
    unchanged(world, world["a"], before)
    # Open by default: health and readiness (load balancers probe them without tokens).
    assert call("GET", d.url + "/healthz")[0] == 200
    assert call("GET", d.url + "/readyz")[0] == 200


def test_every_right_is_checked_on_its_scope(world, auth_daemon):
    d, tok, a, b = auth_daemon, world["tokens"], world["a"], world["b"]
    m = world["staged"][0]
    before_a, before_b = dump(world, a), dump(world, b)

    # commit: a table outside the pattern (existing or not: the same answer), or no commit right.
    for t in (b, "no_such_table"):
        status, _, answer = call("POST", d.commits_url("ns", t), tok["alice"], {"idempotency-key": "x",
                                                                                "staged-manifests": [m]})
        assert_forbidden(answer, status, f"principal 'alice' has no 'commit' right on table 'ns.{t}'")
    status, _, answer = call("POST", d.commits_url("ns", a), tok["carol"], {"idempotency-key": "x", "staged-manifests": [m]})
    assert_forbidden(answer, status, "principal 'carol' has no 'commit' right")
    # Checked before the body: an unparsable body outside the scope is still 403, not 400.
    status, _, answer = call("POST", d.commits_url("ns", b), tok["alice"], {"not": "a commit"})
    assert_forbidden(answer, status, "no 'commit' right")

    # create: a namespace or table outside the pattern, or no create right at all.
    status, _, answer = call("POST", f"{d.url}/v1/namespaces", tok["admin"], {"namespace": ["other_" + uuid.uuid4().hex[:6]]})
    assert_forbidden(answer, status, "principal 'admin' has no 'create' right on namespace 'other_")
    status, _, answer = call("POST", f"{d.url}/v1/namespaces/ns/tables", tok["admin"], {"name": "sneaky", "schema": SCHEMA})
    assert_forbidden(answer, status, "principal 'admin' has no 'create' right on table 'ns.sneaky'")
    status, _, answer = call("POST", f"{d.url}/v1/namespaces/ns/tables", tok["alice"], {"name": "sneaky", "schema": SCHEMA})
    assert_forbidden(answer, status, "principal 'alice' has no 'create' right")
    status, _, answer = call("POST", f"{d.url}/v1/namespaces", tok["alice"], {"namespace": [world["admin_ns"]]})
    assert_forbidden(answer, status, "principal 'alice' has no 'create' right")

    # upgrade, the lineage audit and row ids, and receipts of a named table.
    for who in ("alice", "admin"):
        status, _, answer = call("POST", f"{d.url}/v1/namespaces/ns/tables/{a}/upgrade", tok[who], {})
        assert_forbidden(answer, status, f"principal '{who}' has no 'upgrade' right on table 'ns.{a}'")
    for path in (f"ns/tables/{b}/lineage", f"ns/tables/{b}/row-ids/0", "ns/tables/missing/lineage"):
        status, _, answer = call("GET", f"{d.url}/v1/namespaces/{path}", tok["alice"])
        assert_forbidden(answer, status, "principal 'alice' has no 'read' right on table 'ns.")
    status, _, answer = call("GET", f"{d.url}/v1/namespaces/ns/tables/{a}/lineage", tok["admin"])
    assert_forbidden(answer, status, "no 'read' right")
    status, _, answer = call("GET", f"{d.url}/v1/commits/x?namespace=ns&table={b}", tok["alice"])
    assert_forbidden(answer, status, f"principal 'alice' has no 'read' right on table 'ns.{b}'")
    status, _, answer = call("GET", f"{d.url}/v1/commits/x", tok["ops"])
    assert_forbidden(answer, status, "principal 'ops' has no 'read' right")
    unchanged(world, a, before_a)
    unchanged(world, b, before_b)

    # Inside the scope the same routes work: carol audits a, admin creates in its namespace.
    status, _, report = call("GET", f"{d.url}/v1/namespaces/ns/tables/{a}/lineage", tok["carol"])
    assert status == 200, report
    status, _, created = call("POST", f"{d.url}/v1/namespaces", tok["admin"], {"namespace": [world["admin_ns"]]})
    assert status in (200, 201), created
    status, _, created = call("POST", f"{d.url}/v1/namespaces/{world['admin_ns']}/tables", tok["admin"],
                              {"name": "t", "schema": SCHEMA})
    assert status in (200, 201), created


def test_keys_and_receipts_belong_to_their_principal(world, auth_daemon):
    d, tok, a = auth_daemon, world["tokens"], world["a"]
    m1, m2, m3 = world["staged"][1], world["staged"][2], world["staged"][3]
    key = "shared-" + uuid.uuid4().hex[:8]

    # One key, two principals, one table: two requests (not a 409 key reuse, not a replay).
    status, _, ra = call("POST", d.commits_url("ns", a), tok["alice"], {"idempotency-key": key, "staged-manifests": [m1]})
    assert status == 200, ra
    status, _, rb = call("POST", d.commits_url("ns", a), tok["bob"], {"idempotency-key": key, "staged-manifests": [m2]})
    assert status == 200, rb
    assert ra["snapshot-id"] != rb["snapshot-id"]
    status, _, again = call("POST", d.commits_url("ns", a), tok["alice"], {"idempotency-key": key, "staged-manifests": [m1]})
    assert status == 200 and again["snapshot-id"] == ra["snapshot-id"], again
    ids = sorted(r["id"] for r in dump(world, a)["rows"])
    assert [i for i in ids if 10 <= i < 1000] == [10, 11, 12, 20, 21, 22], ids

    # Each reads its own receipt; carol (read on ns.*) has none under that key.
    for who, receipt in (("alice", ra), ("bob", rb)):
        for query in ("", f"?namespace=ns&table={a}"):
            status, _, answer = call("GET", f"{d.url}/v1/commits/{key}{query}", tok[who])
            assert status == 200 and answer["receipt"]["snapshot-id"] == receipt["snapshot-id"], answer
    unknown = "never-" + uuid.uuid4().hex[:8]
    for query in ("", f"?namespace=ns&table={a}"):
        status, _, answer = call("GET", f"{d.url}/v1/commits/{key}{query}", tok["carol"])
        status_u, _, answer_u = call("GET", f"{d.url}/v1/commits/{unknown}{query}", tok["carol"])
        assert status == status_u == 404, (answer, answer_u)
        assert answer["error"]["type"] == answer_u["error"]["type"] == "unknown-key"
        assert answer["error"]["message"].replace(key, "K") == answer_u["error"]["message"].replace(unknown, "K")

    # A key only alice used: bob gets exactly what an unknown key gets, with or without the table.
    only = "only-alice-" + uuid.uuid4().hex[:8]
    status, _, _ = call("POST", d.commits_url("ns", a), tok["alice"], {"idempotency-key": only, "staged-manifests": [m3]})
    assert status == 200
    for query in ("", f"?namespace=ns&table={a}"):
        status, _, answer = call("GET", f"{d.url}/v1/commits/{only}{query}", tok["bob"])
        status_u, _, answer_u = call("GET", f"{d.url}/v1/commits/{unknown}{query}", tok["bob"])
        assert status == status_u == 404, (answer, answer_u)
        assert answer["error"]["message"].replace(only, "K") == answer_u["error"]["message"].replace(unknown, "K")

    # The snapshot summaries record each key with its principal, so that history lookups (after
    # a restart, or on another daemon) stay per principal.
    status, _, loaded = http("GET", f"{world['catalog']['uri']}/v1/namespaces/ns/tables/{a}")
    recorded = ",".join(s["summary"].get("icecommit.idempotency-keys", "") for s in loaded["metadata"]["snapshots"])
    assert f"alice/{key}" in recorded and f"bob/{key}" in recorded, recorded


def test_receipts_from_history_stay_per_principal(world):
    """A daemon that never saw the keys (restart) answers from the table's history, for the
    principal that committed them only."""
    tok, a = world["tokens"], world["a"]
    key = "hist-" + uuid.uuid4().hex[:8]
    d = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], tok["ops"])
    try:
        status, _, ra = call("POST", d.commits_url("ns", a), tok["alice"], {"idempotency-key": key,
                                                                            "staged-manifests": [world["staged"][4]]})
        assert status == 200, ra
    finally:
        d.stop()
    fresh = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], tok["ops"])
    try:
        status, headers, answer = call("GET", f"{fresh.url}/v1/commits/{key}?namespace=ns&table={a}", tok["alice"])
        assert status == 200 and headers.get("Icecommit-Found-In-History") == "true", answer
        assert answer["receipt"] == ra, answer
        status, _, answer = call("GET", f"{fresh.url}/v1/commits/{key}?namespace=ns&table={a}", tok["bob"])
        assert status == 404 and answer["error"]["type"] == "unknown-key", answer
        # Alice's retry after the restart is found in history, never committed twice.
        before = dump(world, a)
        status, _, again = call("POST", fresh.commits_url("ns", a), tok["alice"],
                                {"idempotency-key": key, "staged-manifests": [world["staged"][4]]})
        assert status == 200 and again["snapshot-id"] == ra["snapshot-id"], again
        unchanged(world, a, before)
    finally:
        fresh.stop()


def test_health_and_metrics_need_a_token_when_configured(world):
    tok = world["tokens"]
    d = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], tok["ops"],
                   {"auth.health-requires-token": "true", "auth.metrics-requires-token": "true"})
    try:
        for path in ("/healthz", "/readyz", "/metrics"):
            status, headers, answer = call("GET", d.url + path)
            assert_unauthenticated(answer, headers, status)
            status, _, answer = call("GET", d.url + path, tok["alice"])
            assert_forbidden(answer, status, "principal 'alice' has no '")
            assert call("GET", d.url + path, tok["ops"])[0] == 200
    finally:
        d.stop()


def test_sighup_reloads_the_tokens_file(world, rest_catalog):
    tok, a = world["tokens"], world["a"]
    path = os.path.join(rest_catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
    with open(path, "w") as f:
        f.write("\n".join(world["lines"]) + "\n")
    d = AuthDaemon(rest_catalog["uri"], rest_catalog["dir"], path, tok["ops"])
    try:
        receipts = f"{d.url}/v1/commits/none?namespace=ns&table={a}"
        assert call("GET", receipts, tok["alice"])[0] == 404
        # A new file: dave is in, alice is out (rotated away), the others unchanged.
        dave = new_token()
        lines = [line for line in world["lines"] if not line.startswith("alice ")]
        lines.append(f"dave {digest(dave)} commit,read:ns.{a}")
        with open(path + ".new", "w") as f:
            f.write("\n".join(lines) + "\n")
        os.rename(path + ".new", path)
        d.proc.send_signal(signal.SIGHUP)
        d.wait_log(f"reload: tokens file '{path}' loaded, tokens=5")
        assert call("GET", receipts, dave)[0] == 404
        status, headers, answer = call("GET", receipts, tok["alice"])
        assert_unauthenticated(answer, headers, status)

        # A broken file: the old tokens stay, the reason is logged, the daemon serves on.
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\nerin not-a-digest read:*\n")
        d.proc.send_signal(signal.SIGHUP)
        d.wait_log(f"reload: keeping the old tokens: {path}:7: field 2 must be the token's SHA-256")
        assert d.proc.poll() is None
        assert call("GET", receipts, dave)[0] == 404
        assert call("GET", receipts, tok["alice"])[0] == 401

        # A well-behaved, authorized writer still commits.
        status, _, receipt = call("POST", d.commits_url("ns", a), dave,
                                  {"idempotency-key": "dave-" + uuid.uuid4().hex[:8],
                                   "staged-manifests": [world["staged"][5]]})
        assert status == 200, receipt
    finally:
        d.stop()


def run_daemon(config, *args):
    """icecommitd run to its exit (a refused start): (exit status, stderr)."""
    out = subprocess.run([os.path.join(BUILD, "daemon", "icecommitd"), "--config", config, *args],
                         capture_output=True, text=True, timeout=30)
    return out.returncode, out.stderr


def test_a_bad_tokens_file_stops_the_start(world, rest_catalog):
    path = os.path.join(rest_catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
    with open(path, "w") as f:
        f.write(world["lines"][1] + "\nbob " + digest("x") + " commit:ns\n")
    config = os.path.join(rest_catalog["dir"], f"bad-{uuid.uuid4().hex[:8]}.conf")
    write_daemon_config(config, rest_catalog["uri"], free_port(), {"auth.tokens-file": path})
    code, err = run_daemon(config, "--check-config")
    assert code == 1 and f"{path}:2: field 3: pattern 1: names no table: use 'NAMESPACE.*'" in err, err
    code, err = run_daemon(config)
    assert code == 1 and f"cannot load the tokens file: {path}:2: field 3: pattern 1: names no table" in err, err
    os.unlink(path)
    code, err = run_daemon(config)
    assert code == 1 and f"{path}: cannot open: No such file or directory" in err, err


def test_the_documented_setup(world, rest_catalog):
    """docs/operations.md's commands, as written: openssl rand, sha256sum, a line appended."""
    path = os.path.join(rest_catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
    script = (f'TOKEN=$(openssl rand -base64 32)\n'
              f'HASH=$(printf %s "$TOKEN" | sha256sum | cut -d" " -f1)\n'
              f'echo "ingest-sales $HASH commit,read:ns.{world["a"]}" >> {path}\n'
              f'echo "prometheus {digest(world["tokens"]["ops"])} metrics health" >> {path}\n'
              f'printf %s "$TOKEN"\n')
    token = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout
    assert len(token) == 44
    d = AuthDaemon(rest_catalog["uri"], rest_catalog["dir"], path, world["tokens"]["ops"])
    try:
        status, _, answer = call("GET", f"{d.url}/v1/commits/probe?namespace=ns&table={world['a']}", token)
        assert status == 404 and answer["error"]["type"] == "unknown-key", answer
        status, _, answer = call("GET", f"{d.url}/v1/commits/probe?namespace=ns&table={world['b']}", token)
        assert_forbidden(answer, status, "principal 'ingest-sales' has no 'read' right")
    finally:
        d.stop()


def landed_once(world, t, first_id, before=None):
    """One read by Iceberg Java: the writer's three rows (ids first_id..first_id+2) are in the
    table once, and with `before` (a dump) in the one snapshot added since."""
    after = dump(world, t)
    ids = sorted(r["id"] for r in after["rows"] if first_id <= r["id"] < first_id + 3)
    assert ids == [first_id, first_id + 1, first_id + 2], ids
    if before is not None:
        assert len(after["snapshots"]) == len(before["snapshots"]) + 1


def test_a_listener_off_loopback_needs_authentication(world, rest_catalog):
    """Finding 13: 0.0.0.0 or :: without a tokens file refuses to start (and --check-config, which
    the unit runs first, says so), naming the options; with auth.allow-unauthenticated = true it
    starts, warns and serves; a reload that takes that choice back is refused, and the daemon
    serves on."""
    a = world["a"]
    for address in ("0.0.0.0", "::"):
        config = os.path.join(rest_catalog["dir"], f"open-{uuid.uuid4().hex[:8]}.conf")
        write_daemon_config(config, rest_catalog["uri"], free_port(), {"http.listen-address": address})
        for args in (["--check-config"], []):
            code, err = run_daemon(config, *args)
            assert code == 1, err
            assert (f"key 'http.listen-address': {address} is not a loopback address and writer "
                    "authentication is off: set auth.tokens-file") in err, err
            assert "or auth.allow-unauthenticated = true if anyone who reaches the port may commit" in err, err

    before = dump(world, a)
    d = Daemon(rest_catalog["uri"], rest_catalog["dir"],
               {"http.listen-address": "0.0.0.0", "auth.allow-unauthenticated": "true"})
    try:
        d.wait_log("writer authentication off on 0.0.0.0 (auth.allow-unauthenticated = true): anyone "
                   "who reaches the port may commit to, create, upgrade and read every table")
        # A reload dropping the operator's choice would not start again: refused, nothing changes.
        write_daemon_config(d.config, rest_catalog["uri"], d.port, {"http.listen-address": "0.0.0.0"})
        d.proc.send_signal(signal.SIGHUP)
        d.wait_log("reload: keeping the old configuration: ")
        assert "0.0.0.0 is not a loopback address and writer authentication is off" in open(d.log).read()
        assert d.proc.poll() is None
        status, _, receipt = d.commit("ns", a, {"idempotency-key": "open-" + uuid.uuid4().hex[:8],
                                                "staged-manifests": [world["extra"][0]]})
        assert status == 200, receipt
    finally:
        d.stop()
    landed_once(world, a, 1000, before)


def test_metrics_need_the_metrics_right_unless_configured_open(world):
    """Finding 8: with authentication on, /metrics (which names tables) is 401 without a token,
    403 with a token lacking `metrics`, 200 with one holding it; 200 for all only with
    auth.metrics-requires-token = false. Health and readiness stay open. This daemon listens on
    0.0.0.0: with tokens that starts."""
    tok, a = world["tokens"], world["a"]
    d = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], tok["ops"],
                   {"http.listen-address": "0.0.0.0"})
    try:
        d.wait_log(f"writer authentication on, tokens file '{world['path']}', /metrics needs the "
                   "right metrics, /healthz and /readyz open")
        status, _, receipt = call("POST", d.commits_url("ns", a), tok["alice"],
                                  {"idempotency-key": "metrics-" + uuid.uuid4().hex[:8],
                                   "staged-manifests": [world["extra"][1]]})
        assert status == 200, receipt
        status, headers, answer = call("GET", d.url + "/metrics")
        assert_unauthenticated(answer, headers, status)
        assert a not in json.dumps(answer)
        status, headers, answer = call("GET", d.url + "/metrics", new_token())
        assert_unauthenticated(answer, headers, status)
        status, _, answer = call("GET", d.url + "/metrics", tok["alice"])
        assert_forbidden(answer, status, "principal 'alice' has no 'metrics' right")
        assert a not in json.dumps(answer)
        status, _, text = call("GET", d.url + "/metrics", tok["ops"])
        assert status == 200 and f'table="ns.{a}"' in text, text
        assert call("GET", d.url + "/healthz")[0] == 200
        assert call("GET", d.url + "/readyz")[0] == 200
    finally:
        d.stop()
    landed_once(world, a, 1003)

    d = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], tok["ops"],
                   {"auth.metrics-requires-token": "false"})
    try:
        status, _, text = call("GET", d.url + "/metrics")
        assert status == 200 and "# TYPE icecommit_http_requests_total counter" in text, text
        # Only /metrics opened: the writer API still needs a token.
        status, headers, answer = call("GET", f"{d.url}/v1/commits/k?namespace=ns&table={a}")
        assert_unauthenticated(answer, headers, status)
    finally:
        d.stop()


def test_prometheus_scrapes_with_its_token(world, rest_catalog):
    """docs/operations.md's scrape_config, run by Prometheus itself (Debian's prometheus package,
    which tests/install-deps.sh installs for promtool): with `authorization` from a
    credentials_file the target is up and its samples stored; the same target without a token
    is down with the 401."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus not found: install Debian's prometheus package (tests/install-deps.sh)"
    workdir = tempfile.mkdtemp(prefix="prometheus-", dir=rest_catalog["dir"])
    token_file = os.path.join(workdir, "icecommitd.token")
    with open(token_file, "w") as f:
        f.write(world["tokens"]["ops"] + "\n")
    d = AuthDaemon(rest_catalog["uri"], rest_catalog["dir"], world["path"], world["tokens"]["ops"])
    target = f'["127.0.0.1:{d.port}"]'
    with open(os.path.join(workdir, "prometheus.yml"), "w") as f:
        f.write("global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
                "scrape_configs:\n"
                "  - job_name: with-token\n"
                "    authorization:\n"
                "      type: Bearer\n"
                f"      credentials_file: {token_file}\n"
                f"    static_configs: [{{targets: {target}}}]\n"
                "  - job_name: without-token\n"
                f"    static_configs: [{{targets: {target}}}]\n")
    port = free_port()
    proc = subprocess.Popen([binary, f"--config.file={workdir}/prometheus.yml",
                             f"--storage.tsdb.path={workdir}/data", f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(workdir, "prometheus.log"), "w"))
    try:
        deadline = time.time() + 60
        while True:
            assert proc.poll() is None, open(os.path.join(workdir, "prometheus.log")).read()[-3000:]
            try:
                targets = {t["labels"]["job"]: t for t in
                           call("GET", f"http://127.0.0.1:{port}/api/v1/targets")[2]["data"]["activeTargets"]}
            except (OSError, KeyError, TypeError):
                targets = {}
            if len(targets) == 2 and all(t["health"] != "unknown" for t in targets.values()):
                break
            assert time.time() < deadline, targets
            time.sleep(0.2)
        assert targets["with-token"]["health"] == "up", targets
        assert targets["without-token"]["health"] == "down", targets
        assert "401" in targets["without-token"]["lastError"], targets
        status, _, answer = call("GET", f"http://127.0.0.1:{port}/api/v1/query?query=icecommit_build_info")
        assert status == 200 and [r["metric"]["job"] for r in answer["data"]["result"]] == ["with-token"], answer
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        d.stop()


def test_a_token_in_the_wrong_column_never_reaches_the_log(world, rest_catalog):
    """Finding 9: a token pasted into any column of the tokens file stops the start (and
    --check-config) with the file, line, field and rule, and a reload keeps the old tokens; the
    token is in no message and no log line. A well-behaved writer commits afterwards."""
    url_safe = new_token()  # 43 characters of A-Z a-z 0-9 - _: also a valid principal name
    b64 = base64.b64encode(secrets.token_bytes(32)).decode()  # openssl rand -base64 32
    cases = [  # (the line, the message after PATH:LINE:, the token on it)
        (f"alice {url_safe} commit:ns.*", "field 2 must be the token's SHA-256", url_safe),
        (f"alice {b64} commit:ns.*", "field 2 must be the token's SHA-256", b64),
        (f"{b64} {digest(b64)} commit:ns.*", "field 1, the principal, must be", b64),
        (f"{url_safe} {digest(url_safe)} commit:ns.*", "field 1 is the token itself", url_safe),
        (f"{url_safe} {digest(new_token())}", "no scope after the SHA-256", url_safe),
        (f"alice {digest(new_token())} commit:ns.* {url_safe}", "field 4: right 1 is unknown", url_safe),
        (f"alice {digest(new_token())} read:{b64}", "field 3: pattern 1: names no table", b64),
        (f"alice {digest(new_token())} read:ns.{url_safe}\x7f", "holds a control character", url_safe),
    ]
    for line, message, token in cases:
        path = os.path.join(rest_catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
        with open(path, "w") as f:
            f.write("\n".join(world["lines"][:2] + [line]) + "\n")
        config = os.path.join(rest_catalog["dir"], f"bad-{uuid.uuid4().hex[:8]}.conf")
        write_daemon_config(config, rest_catalog["uri"], free_port(), {"auth.tokens-file": path})
        for args in (["--check-config"], []):
            code, err = run_daemon(config, *args)
            assert code == 1 and f"{path}:3: {message}" in err, (line, err)
            assert token not in err and token[:8] not in err, err

    # On reload: the old tokens stay, the log holds the line and rule, never the token.
    tok, a = world["tokens"], world["a"]
    path = os.path.join(rest_catalog["dir"], f"tokens-{uuid.uuid4().hex[:8]}")
    with open(path, "w") as f:
        f.write("\n".join(world["lines"]) + "\n")
    d = AuthDaemon(rest_catalog["uri"], rest_catalog["dir"], path, tok["ops"])
    try:
        for n, (line, message, token) in enumerate(cases):
            with open(path + ".new", "w") as f:
                f.write("\n".join(world["lines"] + [line]) + "\n")
            os.rename(path + ".new", path)
            d.proc.send_signal(signal.SIGHUP)
            deadline = time.time() + 10
            while open(d.log).read().count("reload: keeping the old tokens: ") <= n:
                assert time.time() < deadline, open(d.log).read()[-3000:]
                time.sleep(0.05)
            log = open(d.log).read()
            last = log[log.rindex("reload: keeping the old tokens: "):].split("\n")[0]
            assert last.startswith(f"reload: keeping the old tokens: {path}:7: {message}"), last
            assert token not in log and token[:8] not in log
        assert d.proc.poll() is None
        status, _, receipt = call("POST", d.commits_url("ns", a), tok["alice"],
                                  {"idempotency-key": "column-" + uuid.uuid4().hex[:8],
                                   "staged-manifests": [world["extra"][2]]})
        assert status == 200, receipt
    finally:
        d.stop()
    landed_once(world, a, 1006)


def test_open_readiness_names_no_file(world):
    """/readyz stays open with authentication on (load balancers probe it without tokens), so its
    answer must name no table: while storage refuses writes it says so without the storage
    error's text, which names the table's file; the log has the reason. Once writable again the
    same key commits once."""
    if os.geteuid() != 0:
        pytest.skip("remounting needs root (CI runs as root)")
    tok, a = world["tokens"], world["a"]
    before = dump(world, a)
    meta = os.path.dirname(before["metadata-location"].removeprefix("file:"))
    # Two attempts: the writer's 503 comes after the last one (the test default is 100).
    d = AuthDaemon(world["catalog"]["uri"], world["catalog"]["dir"], world["path"], tok["ops"],
                   {"storage.probe-interval-ms": "200", "commit.max-attempts": "2"})
    body = {"idempotency-key": "ready-" + uuid.uuid4().hex[:8], "staged-manifests": [world["extra"][3]]}
    mounted = False
    try:
        try:
            subprocess.run(["mount", "--bind", meta, meta], check=True)
            mounted = True
            subprocess.run(["mount", "-o", "remount,bind,ro", meta], check=True)
            status, _, answer = call("POST", d.commits_url("ns", a), tok["alice"], body)
            assert status == 503 and answer["error"]["type"] == "storage-unavailable", answer
            status, _, ready = call("GET", d.url + "/readyz")
            assert status == 503 and ready["error"]["type"] == "not-ready", ready
            assert ready["error"]["message"] == "storage cannot be written (the daemon's log says why)", ready
            d.wait_log("storage cannot be written, /readyz says not ready")
            assert meta in open(d.log).read()
        finally:
            if mounted:  # the bind mount goes: nothing of it outlives the test
                subprocess.run(["mount", "-o", "remount,bind,rw", meta], check=True)
                subprocess.run(["umount", meta], check=True)
        deadline = time.time() + 10
        while call("GET", d.url + "/readyz")[0] != 200:
            assert time.time() < deadline, open(d.log).read()[-2000:]
            time.sleep(0.1)
        status, _, receipt = call("POST", d.commits_url("ns", a), tok["alice"], body)
        assert status == 200, receipt
    finally:
        d.stop()
    # Nothing landed while storage refused writes: one snapshot since, holding the rows once.
    landed_once(world, a, 1009, before)
