# SPDX-License-Identifier: Apache-2.0
"""The daemon as an operator sees it: configuration errors name file, line, key and reason and
exit 1; READY=1 reaches systemd's notify socket once listening; /healthz, /readyz and /metrics
answer; a full queue is 503 with Retry-After; SIGTERM exits 0."""
import concurrent.futures
import os
import re
import signal
import socket
import subprocess
import tempfile
import time

from conftest import BUILD, Daemon, found_in_history, free_port, http, peer
from faults import clear_faults, set_faults

ICECOMMITD = os.path.join(BUILD, "daemon", "icecommitd")


def run_with_config(text):
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(text)
    try:
        out = subprocess.run([ICECOMMITD, "--config", f.name], capture_output=True, text=True, timeout=30)
        return out.returncode, out.stderr, f.name
    finally:
        os.unlink(f.name)


def test_bad_configuration_exits_1_naming_file_line_key_and_reason():
    code, err, path = run_with_config("[catalog]\nuri = http://127.0.0.1:1\n[commit]\nmax-attempts = many\n")
    assert code == 1
    assert f"{path}:4: key 'commit.max-attempts': 'many' is not a whole number from 1 to 1000" in err
    code, err, path = run_with_config("[catalog]\nuri = http://127.0.0.1:1\nsecret = x\n")
    assert code == 1 and f"{path}:3: key 'catalog.secret': unknown option" in err
    code, err, path = run_with_config("[catalog]\ntype = rest\n")
    assert code == 1 and "key 'catalog.uri': required" in err
    code, err, path = run_with_config("[catalog]\nwarehouse = warehouse\n")
    assert code == 1 and "key 'catalog.warehouse': 'warehouse' must be an absolute path" in err
    out = subprocess.run([ICECOMMITD, "--config", "/nonexistent.conf"], capture_output=True, text=True)
    assert out.returncode == 1 and "/nonexistent.conf: cannot open" in out.stderr


def test_ready_notification_health_metrics_and_sigterm(catalog):
    sock_path = os.path.join(tempfile.mkdtemp(), "notify")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(sock_path)
    sock.settimeout(30)
    port = free_port()
    conf = os.path.join(catalog["dir"], f"notify-{port}.conf")
    with open(conf, "w") as f:
        f.write(f"[http]\nport = {port}\n[catalog]\nuri = {catalog['uri']}\n"
                f"[storage]\nallowed-roots = {catalog['roots']}\n")
    proc = subprocess.Popen([ICECOMMITD, "--config", conf], env=dict(os.environ, NOTIFY_SOCKET=sock_path),
                            stderr=subprocess.PIPE, text=True)
    try:
        message = sock.recv(4096).decode()
        assert "READY=1" in message
        # READY=1 means listening: the health endpoint answers at once.
        status, _, body = http("GET", f"http://127.0.0.1:{port}/healthz")
        assert status == 200 and body == {"status": "ok"}
        deadline = time.time() + 30
        while http("GET", f"http://127.0.0.1:{port}/readyz")[0] != 200:
            assert time.time() < deadline
            time.sleep(0.1)
        status, headers, text = http("GET", f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and headers["Content-Type"].startswith("text/plain")
        for family in ("icecommit_commit_requests_total", "icecommit_commit_attempts_total",
                       "icecommit_commit_duration_seconds_bucket", "icecommit_queue_requests"):
            assert family in text
        assert re.search(r"^icecommit_catalog_ready 1$", text, re.M)
        status, _, body = http("GET", f"http://127.0.0.1:{port}/nope")
        assert status == 404 and body["error"]["type"] == "not-found"
        _, _, text = http("GET", f"http://127.0.0.1:{port}/metrics")
        assert re.search(r'^icecommit_http_requests_total\{code="404"\} 1$', text, re.M), text
        assert re.search(r'^icecommit_http_requests_total\{code="200"\} [1-9]', text, re.M)
        proc.send_signal(signal.SIGTERM)
        assert "STOPPING=1" in sock.recv(4096).decode()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()


def test_unreachable_catalog_is_not_ready():
    port = free_port()
    with tempfile.NamedTemporaryFile("w", suffix=".conf", delete=False) as f:
        f.write(f"[http]\nport = {port}\n[catalog]\nuri = http://127.0.0.1:{free_port()}\n")
    proc = subprocess.Popen([ICECOMMITD, "--config", f.name], stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 10
        while True:
            try:
                status, _, body = http("GET", f"http://127.0.0.1:{port}/readyz", timeout=2)
                break
            except OSError:
                assert time.time() < deadline
                time.sleep(0.1)
        assert status == 503 and body["error"]["type"] == "not-ready"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.unlink(f.name)


def test_full_queue_answers_503_with_retry_after(catalog, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 1,
                  "--start-id", 0, "--manifests", 3)["manifests"]
    set_faults(uri, commit=["delay-1500"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.max-queue-requests": "2", "commit.retry-after-s": "7"})
    try:
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            first = pool.submit(d.commit, ns, name, {"idempotency-key": "q-0", "staged-manifests": [staged[0]["manifest"]]})
            time.sleep(0.5)
            second = pool.submit(d.commit, ns, name, {"idempotency-key": "q-1", "staged-manifests": [staged[1]["manifest"]]})
            time.sleep(0.3)
            status, headers, body = d.commit(ns, name, {"idempotency-key": "q-2", "staged-manifests": [staged[2]["manifest"]]})
            assert status == 503 and body["error"]["type"] == "queue-full", body
            assert headers["Retry-After"] == "7"
            assert first.result()[0] == 200 and second.result()[0] == 200
        # The refused request was not remembered: the same key now commits.
        status, _, body = d.commit(ns, name, {"idempotency-key": "q-2", "staged-manifests": [staged[2]["manifest"]]})
        assert status == 200, body
    finally:
        d.stop()
        clear_faults(uri)


def test_sigterm_lets_commits_in_flight_finish(catalog, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 1,
                  "--start-id", 0)
    set_faults(uri, commit=["delay-1500"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"])
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.commit, ns, name, {"idempotency-key": "term-1",
                                                       "staged-manifests": [staged["manifest"]]})
            time.sleep(0.5)
            d.proc.send_signal(signal.SIGTERM)
            status, _, receipt = pending.result()
        assert status == 200, receipt
        assert d.proc.wait(timeout=30) == 0
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
        clear_faults(uri)


def test_sigterm_deadline_cancels_and_the_retry_resolves(catalog, table):
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 1,
                  "--start-id", 0)
    body = {"idempotency-key": "deadline-1", "staged-manifests": [staged["manifest"]]}
    set_faults(uri, commit=["delay-3000"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.shutdown-timeout-ms": "300"})
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.commit, ns, name, body)
            time.sleep(0.5)
            started = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            status, _, answer = pending.result()
            assert d.proc.wait(timeout=30) == 0
            assert time.monotonic() - started < 2.5, "the deadline did not cut the wait short"
        assert status == 504 and answer["error"]["type"] == "commit-state-unknown", answer
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
    # The catalog still applies the delayed commit; a retry through a new daemon finds it.
    time.sleep(3)
    clear_faults(uri)
    d2 = Daemon(uri, catalog["dir"])
    try:
        status, headers, receipt = d2.commit(ns, name, body)
        assert status == 200 and found_in_history(headers), receipt
    finally:
        d2.stop()
    assert peer("dump", "--uri", uri, "--table", f"{ns}.{name}")["next-row-id"] == 1


def test_sigterm_during_the_backoff_after_an_unknown_outcome_answers_504(catalog, table):
    """The catalog answers the commit with a 503 after applying nothing (to icecommitd: no
    verdict); SIGTERM arrives while the batch waits to resolve it. The writer must hear
    commit-state-unknown (504), not "nothing was committed": then its retry resolves it."""
    ns, name, _ = table
    uri = catalog["uri"]
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 1,
                  "--start-id", 0)
    body = {"idempotency-key": "unknown-term", "staged-manifests": [staged["manifest"]]}
    set_faults(uri, commit=["error-503"], table=f"{ns}.{name}")
    d = Daemon(uri, catalog["dir"], {"commit.min-backoff-ms": "5000", "commit.max-backoff-ms": "5000"})
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(d.commit, ns, name, body)
            time.sleep(1.5)
            d.proc.send_signal(signal.SIGTERM)
            status, _, answer = pending.result()
            assert d.proc.wait(timeout=30) == 0
        assert status == 504 and answer["error"]["type"] == "commit-state-unknown", answer
        assert "retry with the same key" in answer["error"]["message"]
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
        clear_faults(uri)
    d2 = Daemon(uri, catalog["dir"])
    try:
        status, _, receipt = d2.commit(ns, name, body)
        assert status == 200, receipt
    finally:
        d2.stop()
    assert peer("dump", "--uri", uri, "--table", f"{ns}.{name}")["next-row-id"] == 1
