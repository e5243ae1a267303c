# SPDX-License-Identifier: Apache-2.0
"""Fixtures for integration tests against the real peers: Apache Iceberg's REST catalog server
(started from tests/peers as a plain Java process on 127.0.0.1), Iceberg Java (tests/peers/peer.sh),
PyIceberg and fastavro, and the real icecommitd binary."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ICECOMMIT_BUILD_DIR", os.path.join(ROOT, "build-release"))
PEERS = os.path.join(ROOT, "tests", "peers")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peer(*args):
    """Runs the Iceberg Java peer CLI and returns its JSON answer."""
    out = subprocess.run([os.path.join(PEERS, "peer.sh"), *map(str, args)], check=True,
                         capture_output=True, text=True, timeout=300)
    return json.loads(out.stdout)


def http(method, url, body=None, timeout=120):
    """Returns (status, headers, parsed JSON or text)."""
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, headers, raw = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, e.headers, e.read()
    try:
        return status, headers, json.loads(raw)
    except ValueError:
        return status, headers, raw.decode()


@pytest.fixture(scope="session")
def rest_catalog():
    """Apache Iceberg's REST catalog server, one per session."""
    workdir = tempfile.mkdtemp(prefix="icecommit-catalog-", dir=os.path.join(ROOT, "build-tests"))
    port = free_port()
    subprocess.run([os.path.join(PEERS, "catalog-start.sh"), workdir, str(port)], check=True,
                   timeout=300)
    try:
        yield {"uri": f"http://127.0.0.1:{port}", "dir": workdir, "backend": "rest"}
    finally:
        subprocess.run([os.path.join(PEERS, "catalog-stop.sh"), workdir], check=False, timeout=60)


@pytest.fixture(scope="session")
def filesystem_catalog():
    """A warehouse directory for icecommitd's embedded filesystem catalog. "uri" is the
    warehouse: the Java peer opens it with Iceberg's HadoopCatalog (same layout)."""
    workdir = tempfile.mkdtemp(prefix="icecommit-warehouse-", dir=os.path.join(ROOT, "build-tests"))
    warehouse = os.path.join(workdir, "warehouse")
    os.makedirs(warehouse)
    yield {"uri": warehouse, "dir": workdir, "backend": "filesystem"}


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
    """Writes an icecommitd INI file from "section.key" settings over the test defaults."""
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
    sections = {}
    for key, value in options.items():
        section, name = key.split(".", 1)
        sections.setdefault(section, []).append(f"{name} = {value}")
    with open(path, "w") as f:
        for section, lines in sections.items():
            f.write(f"[{section}]\n" + "\n".join(lines) + "\n")


class Daemon:
    def __init__(self, catalog_uri, workdir, settings=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config = os.path.join(workdir, f"icecommitd-{self.port}.conf")
        self.log = os.path.join(workdir, f"icecommitd-{self.port}.log")
        write_daemon_config(self.config, catalog_uri, self.port, settings)
        # ICECOMMIT_DAEMON_WRAPPER, e.g. "valgrind --error-exitcode=1 --leak-check=full", runs
        # every daemon of the integration tests under a checker.
        wrapper = os.environ.get("ICECOMMIT_DAEMON_WRAPPER", "").split()
        self.proc = subprocess.Popen(wrapper + [os.path.join(BUILD, "daemon", "icecommitd"), "--config", self.config],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        deadline = time.time() + (120 if wrapper else 30)
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("icecommitd exited: " + open(self.log).read())
            try:
                if http("GET", self.url + "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError("icecommitd not ready: " + open(self.log).read())

    def commit(self, namespace, table, body):
        return http("POST", f"{self.url}/v1/namespaces/{namespace}/tables/{table}/commits", body)

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
