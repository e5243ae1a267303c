# SPDX-License-Identifier: Apache-2.0
"""Fixtures for integration tests against the real peers: Apache Iceberg's REST catalog server
(started from tests/peers as a plain Java process on 127.0.0.1), Iceberg Java (tests/peers/peer.sh),
PyIceberg and fastavro, the real icecommitd binary, and SeaweedFS as a strict-SigV4 S3 server
(tests/peers/s3-start.sh; binary built once by tests/peers/weed-build.sh)."""
import hashlib
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ICECOMMIT_BUILD_DIR", os.path.join(ROOT, "build-release"))
PEERS = os.path.join(ROOT, "tests", "peers")
WORKDIR = os.path.join(ROOT, "build-tests")


def make_workdir(prefix):
    """A fresh directory under build-tests/ (created if missing) for one fixture's state."""
    os.makedirs(WORKDIR, exist_ok=True)
    return tempfile.mkdtemp(prefix=prefix, dir=WORKDIR)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PeerServer:
    """One JVM per test session serving the peer CLI's subcommands (icecommit.peers.PeerServer):
    the same Iceberg code and answers as tests/peers/peer.sh, without a JVM start and a cold
    Iceberg per call. Started on first use, stopped by pid when the session ends.
    ICECOMMIT_PEER_SERVER=0 runs peer.sh for every call instead."""

    def __init__(self):
        self.proc = None
        self.port = None
        self.lock = threading.Lock()

    def address(self):
        if os.environ.get("ICECOMMIT_PEER_SERVER", "1") == "0":
            return None
        with self.lock:
            if self.proc is not None and self.proc.poll() is not None:
                self.proc = None  # it died (its log says why): the next call gets a new one
            if self.proc is None:
                self._start()
            return ("127.0.0.1", self.port)

    def _start(self):
        subprocess.run([os.path.join(PEERS, "peer.sh"), "--ensure-built"], check=True)
        target = os.path.join(PEERS, "java", "target")
        port_file = os.path.join(make_workdir("icecommit-peer-server-"), "port")
        log = open(port_file + ".log", "w")
        self.proc = subprocess.Popen(
            ["java", "-XX:+UseSerialGC", "-Xmx2g", "-cp",
             f"{target}/lib/*:{target}/classes", "icecommit.peers.PeerServer", port_file],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        end = time.monotonic() + 120
        while not os.path.exists(port_file):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise RuntimeError(f"the peer server did not start; see {port_file}.log")
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read())

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def call(self, args, env):
        request = {"args": args, "env": {k: v for k, v in env.items() if k.startswith("PEER_")}}
        with socket.create_connection(self.address(), timeout=300) as s:
            s.sendall(json.dumps(request).encode() + b"\n")
            data = b""
            while chunk := s.recv(1 << 16):
                data += chunk
        answer = json.loads(data)
        if answer["status"] != 0:
            raise subprocess.CalledProcessError(answer["status"], ["peer.sh", *args],
                                                output="", stderr=answer["err"])
        return json.loads(answer["out"])


PEER_SERVER = PeerServer()


def pytest_sessionfinish(session, exitstatus):
    PEER_SERVER.stop()


def peer(*args, env=None):
    """Runs a subcommand of the Iceberg Java peer CLI (tests/peers/peer.sh) and returns its JSON
    answer. env: extra environment variables (e.g. s3_peer_env(s3)) over this process's own."""
    args = [str(a) for a in args]
    full_env = {**os.environ, **env} if env else dict(os.environ)
    if PEER_SERVER.address() is not None:
        return PEER_SERVER.call(args, full_env)
    out = subprocess.run([os.path.join(PEERS, "peer.sh"), *args], check=True,
                         capture_output=True, text=True, timeout=300, env=full_env)
    return json.loads(out.stdout)


FOUND_IN_HISTORY = "Icecommit-Found-In-History"


def is_copy_of(receipt_manifest, staged):
    """Whether a receipt's manifest is icecommitd's copy of the staged manifest `staged`: the
    table references the copy, written in its metadata directory (commit.copy-staged-manifests)."""
    return (receipt_manifest.get("staged-location") == staged
            and "/metadata/copy-" in receipt_manifest["location"])


def found_in_history(headers):
    """Whether icecommitd answered from the table history (a response header: the receipt itself
    is the same bytes however it was found)."""
    return headers.get(FOUND_IN_HISTORY) == "true"


def http(method, url, body=None, timeout=120, context=None):
    """Returns (status, headers, parsed JSON or text). context: an ssl.SSLContext for https."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            status, headers, raw = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, e.headers, e.read()
    try:
        return status, headers, json.loads(raw)
    except ValueError:
        return status, headers, raw.decode()


# The storage roots ([storage] allowed-roots) of each REST catalog the tests start, by uri (a
# proxy in front of one registers its own uri): what an operator would configure. The
# reference server names no warehouse in its /v1/config, so a daemon needs them.
CATALOG_ROOTS = {}


def register_catalog_roots(uri, roots):
    """Makes `roots` (a comma-separated list) the [storage] allowed-roots of every daemon
    configuration written for the REST catalog at `uri`, unless its settings name others."""
    CATALOG_ROOTS[uri.rstrip("/")] = roots
    return roots


def rest_catalog_roots(workdir, *more):
    """The roots of a catalog tests/peers/catalog-start.sh started in `workdir`: its local
    warehouse (DIR/wh), then `more` (e.g. the S3 bucket its tables may also use)."""
    return ", ".join([os.path.join(os.path.abspath(workdir), "wh"), *more])


@pytest.fixture(scope="session")
def rest_catalog():
    """Apache Iceberg's REST catalog server, one per session."""
    workdir = make_workdir("icecommit-catalog-")
    port = free_port()
    subprocess.run([os.path.join(PEERS, "catalog-start.sh"), workdir, str(port)], check=True,
                   timeout=300)
    uri = f"http://127.0.0.1:{port}"
    roots = register_catalog_roots(uri, rest_catalog_roots(workdir))
    try:
        yield {"uri": uri, "dir": workdir, "backend": "rest", "roots": roots}
    finally:
        subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), workdir], check=False, timeout=60)


S3_ACCESS_KEY = "AKIDICECOMMIT"  # the identity tests/peers/s3-start.sh configures
S3_SECRET_KEY = "icecommit-test-secret"
S3_BUCKET = "icecommit"
S3_REGION = "us-east-1"


def _s3_ports_free(port):
    """s3-start.sh PORT uses PORT, PORT+1000, PORT-262 and PORT+555, each also +10000."""
    for http_port in (port, port + 1000, port - 262, port + 555):
        for p in (http_port, http_port + 10000):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", p))
                except OSError:
                    return False
    return True


def _s3_port():
    """An S3 port whose 8 SeaweedFS ports are all free, kept below the ephemeral range (32768+)
    so that no outgoing connection takes one of them meanwhile."""
    for _ in range(100):
        port = random.randrange(10300, 20700)
        if _s3_ports_free(port):
            return port
    raise RuntimeError("no free port set for SeaweedFS in 10038..31699")


class _S3Server:
    """SeaweedFS being started by s3-start.sh in the background (startup takes ~11 s; other
    fixtures start meanwhile); wait() blocks until it is ready and returns the `s3` dict."""

    def __init__(self):
        self.dir = make_workdir("icecommit-s3-")
        self.info = None
        self.port = _s3_port()
        self.proc = subprocess.Popen([os.path.join(PEERS, "s3-start.sh"), self.dir, str(self.port)],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def wait(self):
        if self.info is None:
            if self.proc.returncode is None:
                self.output = self.proc.communicate(timeout=180)[0]
            if self.proc.returncode != 0:  # every test that needs it fails with the same output
                pytest.fail(f"tests/peers/s3-start.sh {self.dir} {self.port} failed "
                            f"(exit {self.proc.returncode}):\n{self.output}", pytrace=False)
            self.info = {"endpoint": f"http://127.0.0.1:{self.port}", "bucket": S3_BUCKET,
                         "access_key": S3_ACCESS_KEY, "secret_key": S3_SECRET_KEY,
                         "region": S3_REGION, "dir": self.dir}
        return self.info

    def stop(self):
        if self.proc.poll() is None:
            self.proc.communicate(timeout=180)  # let it record the pid s3-stop.sh kills
        subprocess.run([os.path.join(PEERS, "s3-stop.sh"), self.dir], check=False, timeout=60)


@pytest.fixture(scope="session")
def _s3_server():
    server = _S3Server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def s3(_s3_server):
    """SeaweedFS on 127.0.0.1 with SigV4 auth on and bucket "icecommit", one per session:
    {"endpoint", "bucket", "access_key", "secret_key", "region", "dir"}. Fails (never skips) if it
    cannot start."""
    return _s3_server.wait()


def s3_peer_env(s3, keys=False):
    """PEER_CATALOG_* environment for peer(..., env=...) so the Java client's FileIO reaches
    SeaweedFS. No keys unless asked for: the REST catalog vends them (include-credentials)."""
    if keys:
        return {**s3_peer_env(s3), "PEER_CATALOG_S3_ACCESS__KEY__ID": s3["access_key"],
                "PEER_CATALOG_S3_SECRET__ACCESS__KEY": s3["secret_key"]}
    return {"PEER_CATALOG_S3_ENDPOINT": s3["endpoint"],
            "PEER_CATALOG_S3_PATH__STYLE__ACCESS": "true",
            "PEER_CATALOG_CLIENT_REGION": s3["region"]}


def s3_daemon_settings(s3, vended=True):
    """icecommitd "section.key" settings (for write_daemon_config / Daemon(settings=...)) that
    point its S3 storage at SeaweedFS. vended=True: keys come from the REST catalog
    (catalog.access-delegation = vended-credentials); else the static keys are configured."""
    settings = {"s3.endpoint": s3["endpoint"], "s3.path-style-access": "true",
                "client.region": s3["region"]}
    if vended:
        settings["catalog.access-delegation"] = "vended-credentials"
    else:
        settings.update({"s3.access-key-id": s3["access_key"],
                         "s3.secret-access-key": s3["secret_key"]})
    return settings


def write_s3_daemon_config(path, catalog_uri, port, s3, settings=None, vended=True):
    """write_daemon_config with s3_daemon_settings(s3, vended) under `settings`."""
    write_daemon_config(path, catalog_uri, port, {**s3_daemon_settings(s3, vended), **(settings or {})})


def s3_key(s3, location):
    """The object key of s3://<bucket>/<key>."""
    prefix = f"s3://{s3['bucket']}/"
    assert location.startswith(prefix), location
    return location[len(prefix):]


def s3_request(s3, method, key, body=None, headers=None, signed=True, secret_key=None):
    """One S3 request with curl (libcurl SigV4, as the daemon signs): returns (status, bytes).
    key is "" for the bucket itself, "?query" for a bucket request with a query; a query must
    already be canonical (sorted, RFC 3986 encoded, `=` always): libcurl 7.88 signs it as given."""
    cmd = ["curl", "-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "60"]
    cmd += ["-I"] if method == "HEAD" else ["-X", method]
    if signed:
        payload = body if body is not None else b""
        cmd += ["--aws-sigv4", f"aws:amz:{s3['region']}:s3",
                "--user", f"{s3['access_key']}:{secret_key or s3['secret_key']}",
                "-H", "x-amz-content-sha256: " + hashlib.sha256(payload).hexdigest()]
    for name, value in (headers or {}).items():
        cmd += ["-H", f"{name}: {value}"]
    if body is not None:
        cmd += ["--data-binary", "@-"]
    url = f"{s3['endpoint']}/{s3['bucket']}" + (f"/{key}" if key and key[0] != "?" else key)
    out = subprocess.run(cmd + [url], input=body, capture_output=True, check=True, timeout=90).stdout
    content, _, status = out.rpartition(b"\n")
    return int(status), content


def _s3_rest_catalog(request, s3_server, vend):
    s3_port = s3_server.port
    workdir = make_workdir("icecommit-s3-catalog-")
    port = free_port()
    env = {**os.environ,
           "CATALOG_IO__IMPL": "org.apache.iceberg.io.ResolvingFileIO",
           "CATALOG_S3_ENDPOINT": f"http://127.0.0.1:{s3_port}",
           "CATALOG_S3_PATH__STYLE__ACCESS": "true",
           "CATALOG_S3_ACCESS__KEY__ID": S3_ACCESS_KEY,
           "CATALOG_S3_SECRET__ACCESS__KEY": S3_SECRET_KEY,
           "CATALOG_CLIENT_REGION": S3_REGION,
           "CATALOG_INCLUDE__CREDENTIALS": "true" if vend else "false"}
    # Starts while SeaweedFS is still coming up: the catalog touches S3 only per table.
    subprocess.run([os.path.join(PEERS, "catalog-start.sh"), workdir, str(port)], check=True,
                   timeout=300, env=env)
    uri = f"http://127.0.0.1:{port}"
    roots = register_catalog_roots(uri, rest_catalog_roots(workdir, f"s3://{S3_BUCKET}"))
    try:
        s3_info = request.getfixturevalue("s3")
        yield {"uri": uri, "dir": workdir, "backend": "rest", "vends": vend, "roots": roots,
               "s3": s3_info, "location_prefix": f"s3://{S3_BUCKET}/{uuid.uuid4().hex[:12]}"}
    finally:
        subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), workdir], check=False, timeout=60)


@pytest.fixture(scope="session")
def s3_rest_catalog(request, _s3_server):
    """Apache Iceberg's REST catalog whose s3:// tables live in SeaweedFS:
    ResolvingFileIO, so tables created without a location stay in the local
    warehouse and tables created with --location s3://... go to S3; include-credentials=true
    vends the S3 keys in every LoadTableResponse config. Same dict as `rest_catalog`, plus "s3",
    "vends" and "location_prefix" (s3://icecommit/<unique>, a prefix for this session's tables)."""
    yield from _s3_rest_catalog(request, _s3_server, vend=True)


@pytest.fixture(scope="session")
def s3_rest_catalog_static(request, _s3_server):
    """The same catalog without credential vending: clients need their own keys."""
    yield from _s3_rest_catalog(request, _s3_server, vend=False)


@pytest.fixture(scope="session")
def filesystem_catalog():
    """A warehouse directory for icecommitd's embedded filesystem catalog. "uri" is the
    warehouse: the Java peer opens it with Iceberg's HadoopCatalog (same layout)."""
    workdir = make_workdir("icecommit-warehouse-")
    warehouse = os.path.join(workdir, "warehouse")
    os.makedirs(warehouse)
    yield {"uri": warehouse, "dir": workdir, "backend": "filesystem", "roots": warehouse}


@pytest.fixture
def catalog(rest_catalog):
    """The catalog most tests run against: the REST server (fault injection lives there).
    Modules that must pass on both backends override this fixture with BACKENDS."""
    return rest_catalog


BACKENDS = ["rest", "filesystem"]


def backend_catalog(request):
    """For a module's own `catalog` fixture parametrized with BACKENDS."""
    return request.getfixturevalue(request.param + "_catalog")


def filesystem_metadata_location(warehouse, identifier):
    """The newest metadata file of a Hadoop-layout table: the version hint, then forward while a
    newer version exists (the hint may lag), as readers do."""
    metadata = os.path.join(warehouse, *identifier.split("."), "metadata")
    with open(os.path.join(metadata, "version-hint.text")) as f:
        version = int(f.read().strip())
    while os.path.exists(os.path.join(metadata, f"v{version + 1}.metadata.json")):
        version += 1
    return os.path.join(metadata, f"v{version}.metadata.json")


def pyiceberg_table(catalog, identifier):
    """The table as PyIceberg sees it: through the REST catalog, or from its newest metadata
    file on the filesystem backend (PyIceberg reads Hadoop-layout tables by metadata path)."""
    if catalog["backend"] == "rest":
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("peer", uri=catalog["uri"]).load_table(identifier)
    from pyiceberg.table import StaticTable
    return StaticTable.from_metadata(filesystem_metadata_location(catalog["uri"], identifier))


def write_daemon_config(path, catalog_uri, port, settings=None, defaults=None):
    """Writes an icecommitd INI file from "section.key" settings over the test defaults. A REST
    catalog gets the storage roots registered for it (register_catalog_roots) unless the
    settings name them."""
    options = {
        "http.port": str(port),
        "commit.min-backoff-ms": "10",
        "commit.max-backoff-ms": "500",
        "commit.max-attempts": "100",
        "log.level": "debug",
    }
    # An http(s) uri is the REST catalog; a directory is the filesystem catalog's warehouse.
    if catalog_uri.startswith("http"):
        options["catalog.uri"] = catalog_uri
    else:
        options.update({"catalog.type": "filesystem", "catalog.warehouse": catalog_uri})
    options.update(defaults or {})
    options.update(settings or {})
    if catalog_uri.startswith("http") and "storage.allowed-roots" not in options:
        if catalog_uri.rstrip("/") not in CATALOG_ROOTS:
            raise KeyError(f"no storage roots known for the catalog at {catalog_uri}: "
                           "register_catalog_roots() it, or set storage.allowed-roots")
        options["storage.allowed-roots"] = CATALOG_ROOTS[catalog_uri.rstrip("/")]
    sections = {}
    for key, value in options.items():
        section, name = key.split(".", 1)
        sections.setdefault(section, []).append(f"{name} = {value}")
    with open(path, "w") as f:
        for section, lines in sections.items():
            f.write(f"[{section}]\n" + "\n".join(lines) + "\n")


class Daemon:
    def __init__(self, catalog_uri, workdir, settings=None, ssl_context=None, run_as=None):
        """ssl_context: the client side of a TLS listener (settings name its certificate):
        every request of this helper then goes over https with it. run_as: (user, group) the
        daemon runs as (the workdir must be readable by it)."""
        self.port = free_port()
        self.context = ssl_context
        self.url = f"{'https' if ssl_context else 'http'}://127.0.0.1:{self.port}"
        self.config = os.path.join(workdir, f"icecommitd-{self.port}.conf")
        self.log = os.path.join(workdir, f"icecommitd-{self.port}.log")
        write_daemon_config(self.config, catalog_uri, self.port, settings)
        # ICECOMMIT_DAEMON_WRAPPER, e.g. "valgrind --error-exitcode=1 --leak-check=full", runs
        # every daemon of the integration tests under a checker.
        wrapper = os.environ.get("ICECOMMIT_DAEMON_WRAPPER", "").split()
        user, group = run_as or (None, None)
        self.proc = subprocess.Popen(wrapper + [os.path.join(BUILD, "daemon", "icecommitd"), "--config", self.config],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"), user=user, group=group,
                                     extra_groups=[] if run_as else None)
        deadline = time.time() + (120 if wrapper else 30)
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("icecommitd exited: " + open(self.log).read())
            try:
                if self.is_ready():
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("icecommitd not ready: " + open(self.log).read())

    def is_ready(self):
        """GET /readyz answers 200 (subclasses add what their daemon's /readyz needs)."""
        return http("GET", self.url + "/readyz", timeout=2, context=self.context)[0] == 200

    def wait_log(self, text, timeout=10):
        deadline = time.time() + timeout
        while text not in open(self.log).read():
            if time.time() >= deadline:
                raise AssertionError(f"'{text}' not logged: " + open(self.log).read()[-3000:])
            time.sleep(0.05)

    def commit(self, namespace, table, body):
        return http("POST", f"{self.url}/v1/namespaces/{namespace}/tables/{table}/commits", body,
                    context=self.context)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(timeout=60)
        assert code == 0, "icecommitd exit status %d: %s" % (code, open(self.log).read()[-4000:])


@pytest.fixture
def daemon(catalog):
    d = Daemon(catalog["uri"], catalog["dir"])
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def table(catalog):
    """A fresh v3 table created by Iceberg Java; returns (namespace, name, create answer)."""
    name = "t_" + uuid.uuid4().hex[:12]
    created = peer("create-table", "--uri", catalog["uri"], "--table", f"ns.{name}", "--format-version", 3)
    return "ns", name, created


def vm_kib(pid, field):
    """A field of /proc/PID/status in KiB, e.g. VmRSS or VmHWM (the peak)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


def memory_checker(pid):
    """The checker the daemon runs under, for bounds on its memory: ASan adds its quarantine and
    shadow memory and valgrind's RSS is its own, so a bound is loose under the first and not
    checked under the second (which checks leaks instead). None for a plain build."""
    if "valgrind" in os.environ.get("ICECOMMIT_DAEMON_WRAPPER", ""):
        return "valgrind"
    with open(f"/proc/{pid}/maps") as f:
        return "asan" if "libasan" in f.read() or "asan" in BUILD else None
