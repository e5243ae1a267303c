# SPDX-License-Identifier: Apache-2.0
"""Hostile HTTP clients (issue 10, item 5's HTTP bounds and the TLS listener of item 1): HTTP/2
bodies that never finish, slow headers and trickled bodies, more connections and requests from
one address than allowed, ambiguous framing (Content-Length with Transfer-Encoding, two
Content-Lengths), and the TLS listener with and without client certificates. Each asserts the
answer and that a well-behaved client is still served meanwhile. Raw sockets and a minimal
HTTP/2 framer: the venv has no HTTP/2 client."""
import json
import os
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time

import pytest

from conftest import Daemon, http, make_workdir, memory_checker, peer, vm_kib

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, RST_STREAM, SETTINGS, GOAWAY = 0, 1, 3, 4, 7
END_STREAM, END_HEADERS = 0x1, 0x4
REFUSED_STREAM, CANCEL = 7, 8


def frame(kind, flags, stream_id, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream_id) + payload


def hpack_literal(index, value):
    """A literal header field without indexing, name from the static table."""
    value = value.encode()
    assert index < 15 and len(value) < 127
    return bytes([index, len(value)]) + value


def request_headers(path, method_index=0x83):
    # :method POST (0x83) or GET (0x82), :scheme http, :path, :authority
    return bytes([method_index, 0x86]) + hpack_literal(4, path) + hpack_literal(1, "127.0.0.1")


def h2_connect(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(PREFACE + frame(SETTINGS, 0, 0))
    return s


def read_frames(sock, until, timeout=10.0):
    """Reads frames until until(kind, flags, stream_id, payload) is true; returns them all."""
    frames, buf, deadline = [], b"", time.time() + timeout
    while time.time() < deadline:
        while len(buf) >= 9:
            length = int.from_bytes(buf[:3], "big")
            if len(buf) < 9 + length:
                break
            f = (buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF, buf[9:9 + length])
            buf = buf[9 + length:]
            frames.append(f)
            if until(*f):
                return frames
        sock.settimeout(max(0.01, deadline - time.time()))
        try:
            chunk = sock.recv(65536)
        except OSError:  # timeout, reset, or closed by another thread
            break
        if not chunk:
            break
        buf += chunk
    return frames


def healthy(d):
    status, _, answer = http("GET", d.url + "/healthz", timeout=5, context=d.context)
    return status == 200


def connection_closed_within(sock, seconds):
    """Reads until EOF or reset; returns (elapsed seconds or None if still open, bytes read)."""
    start, got = time.time(), b""
    sock.settimeout(0.1)
    while time.time() - start < seconds:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return time.time() - start, got
        if not chunk:
            return time.time() - start, got
        got += chunk
    return None, got


@pytest.fixture
def limited_daemon(catalog):
    d = Daemon(catalog["uri"], catalog["dir"], {
        "http.max-buffered-bytes": str(16 << 20),
        "http.max-connections-per-address": "20",
        "http.max-requests-per-address": "2",
        "http.header-timeout-ms": "1000",
        "http.body-timeout-ms": "1500",
    })
    try:
        yield d
    finally:
        d.stop()


def test_http2_unfinished_bodies_stay_bounded(limited_daemon):
    """12 connections x 100 streams x ~900 KB of body that never ends would hold ~1 GB; with
    max-buffered-bytes = 16 MiB the streams are reset and the RSS stays low, while a
    well-behaved client is answered throughout."""
    d = limited_daemon
    pid = d.proc.pid
    before = vm_kib(pid, "VmRSS")
    stop = threading.Event()
    sent = [0] * 12
    resets = [0] * 12
    body = b"x" * 16384

    def drain(sock, i):
        def count(kind, flags, stream_id, payload):
            if kind == RST_STREAM and payload == struct.pack(">I", REFUSED_STREAM):
                resets[i] += 1
            return stop.is_set()
        read_frames(sock, count, timeout=30)

    def attack(i):
        sock = h2_connect(d.port)
        reader = threading.Thread(target=drain, args=(sock, i), daemon=True)
        reader.start()
        stream_id = 1
        try:
            while not stop.is_set() and sent[i] < 120 << 20:
                ids = list(range(stream_id, stream_id + 200, 2))
                stream_id += 200
                sock.sendall(b"".join(frame(HEADERS, END_HEADERS, s, request_headers("/v1/namespaces/ns/tables/t/commits"))
                                      for s in ids))
                for _ in range(56):
                    if stop.is_set():
                        break
                    sock.sendall(b"".join(frame(DATA, 0, s, body) for s in ids))
                    sent[i] += len(ids) * len(body)
        except OSError:
            pass
        finally:
            stop.wait(15)
            sock.close()

    threads = [threading.Thread(target=attack, args=(i,), daemon=True) for i in range(12)]
    for t in threads:
        t.start()
    served, deadline = 0, time.time() + 8
    while time.time() < deadline and any(t.is_alive() for t in threads):
        assert healthy(d)
        served += 1
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(20)
    peak_mib = (vm_kib(pid, "VmHWM") - before) / 1024
    total_mib = sum(sent) / (1 << 20)
    # ASan keeps freed memory in quarantine (256 MiB by default): a wider bound there.
    bound_mib = 96 + (320 if memory_checker(pid) == "asan" else 0)
    print(f"hostile-http: sent {total_mib:.0f} MiB, peak RSS +{peak_mib:.0f} MiB, {sum(resets)} streams refused, {served} served")
    assert served >= 5
    assert sum(resets) > 0, "no stream was refused"
    assert peak_mib < bound_mib, f"peak RSS grew {peak_mib:.0f} MiB after {total_mib:.0f} MiB of bodies"
    if not memory_checker(pid) == "asan":
        # Unbounded, the daemon would have held (about) everything sent.
        assert total_mib > 3 * bound_mib, f"the attack sent only {total_mib:.0f} MiB"
    assert "reached max-buffered-bytes" in open(d.log).read()
    assert healthy(d)


def test_slow_headers_and_trickled_bodies_are_cut(limited_daemon):
    d = limited_daemon
    # Slowloris: headers one byte at a time, never finished.
    slow_headers = socket.create_connection(("127.0.0.1", d.port))
    slow_headers.sendall(b"POST /v1/namespaces/ns/tables/t/commits HTTP/1.1\r\nHost: x\r\n")
    # A body that trickles after complete headers.
    slow_body = socket.create_connection(("127.0.0.1", d.port))
    slow_body.sendall(b"POST /v1/namespaces/ns/tables/t/commits HTTP/1.1\r\nHost: x\r\n"
                      b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
    # An HTTP/2 stream whose body trickles.
    h2 = h2_connect(d.port)
    h2.sendall(frame(HEADERS, END_HEADERS, 1, request_headers("/v1/namespaces/ns/tables/t/commits")))
    # A connection that never sends a byte.
    silent = socket.create_connection(("127.0.0.1", d.port))

    start = time.time()
    cut = {}
    while time.time() - start < 4 and len(cut) < 3:
        for name, sock in (("headers", slow_headers), ("body", slow_body)):
            if name in cut:
                continue
            try:
                sock.sendall(b"a")
            except OSError:
                cut[name] = time.time() - start
        if "h2" not in cut:
            try:
                h2.sendall(frame(DATA, 0, 1, b"a"))
            except OSError:
                cut["h2"] = time.time() - start
        assert healthy(d), "a well-behaved client must be served meanwhile"
        time.sleep(0.2)
    # The HTTP/2 stream is reset (CANCEL), the connection stays usable.
    frames = read_frames(h2, lambda k, f, s, p: k == RST_STREAM and s == 1, timeout=2)
    assert any(k == RST_STREAM and s == 1 and p == struct.pack(">I", CANCEL) for k, _, s, p in frames), frames
    h2.sendall(frame(HEADERS, END_HEADERS | END_STREAM, 3, request_headers("/healthz", 0x82)))
    frames = read_frames(h2, lambda k, f, s, p: s == 3 and f & END_STREAM, timeout=5)
    assert any(s == 3 and k == DATA for k, _, s, _ in frames), frames
    h2.close()

    for name, sock, timeout_s in (("headers", slow_headers, 1.0), ("body", slow_body, 1.5)):
        elapsed, got = connection_closed_within(sock, 0.1 if name in cut else 3)
        assert name in cut or elapsed is not None, f"the slow {name} connection is still open"
        if got:
            assert got.startswith(b"HTTP/1.1 408 ") and b'"request-timeout"' in got, got
        sock.close()
    assert 0.8 < cut.get("headers", 1.0) < 3.5
    elapsed, _ = connection_closed_within(silent, 3)
    assert elapsed is not None, "a connection that sends nothing is cut by header-timeout-ms too"
    silent.close()
    assert "cutting a slow client address=127.0.0.1" in open(d.log).read()


def test_per_address_limits(catalog):
    d = Daemon(catalog["uri"], catalog["dir"], {"http.max-connections-per-address": "3",
                                                 "http.max-requests-per-address": "1"})
    try:
        held = [socket.create_connection(("127.0.0.1", d.port)) for _ in range(3)]
        time.sleep(0.2)
        extra = socket.create_connection(("127.0.0.1", d.port))
        elapsed, got = connection_closed_within(extra, 2)
        assert elapsed is not None and got == b"", "a 4th connection from one address is closed at once"
        extra.close()
        held.pop().close()
        time.sleep(0.2)
        assert healthy(d), "a slot freed by a closed connection is usable again"

        # Four commit requests in one write: the first is in flight (it needs the catalog) when
        # the others arrive, so they get 429 with Retry-After.
        for s in held:
            s.close()
        time.sleep(0.2)
        h2 = h2_connect(d.port)
        body = b'{"idempotency-key":"k","staged-manifests":["/nonexistent/m.avro"]}'
        h2.sendall(b"".join(frame(HEADERS, END_HEADERS, s, request_headers("/v1/namespaces/ns/tables/nope/commits"))
                            + frame(DATA, END_STREAM, s, body) for s in (1, 3, 5, 7)))
        frames = read_frames(h2, lambda k, f, s, p: False, timeout=3)
        bodies = {}
        for k, f, s, p in frames:
            if k == DATA:
                bodies[s] = bodies.get(s, b"") + p
        too_many = [s for s, b in bodies.items() if b'"too-many-requests"' in b]
        assert len(too_many) == 3 and 1 not in too_many, bodies
        assert b"max-requests-per-address" in bodies[too_many[0]]
        h2.close()
        assert healthy(d)
    finally:
        d.stop()


def raw_exchange(port, request, timeout=5):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        elapsed, got = connection_closed_within(s, timeout)
        return elapsed, got


def test_ambiguous_framing_is_refused(daemon):
    port = daemon.port
    # Content-Length and Transfer-Encoding: h2o alone would take the chunked body.
    elapsed, got = raw_exchange(port, b"POST /v1/namespaces/ns/tables/t/commits HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                                      b"2\r\n{}\r\n0\r\n\r\n")
    assert got.startswith(b"HTTP/1.1 400 "), got
    assert b"both Content-Length and Transfer-Encoding" in got and b"Connection: close" in got, got
    assert elapsed is not None, "the connection must be closed"
    # Two different Content-Lengths.
    elapsed, got = raw_exchange(port, b"POST /v1/namespaces/ns/tables/t/commits HTTP/1.1\r\nHost: x\r\n"
                                      b"Content-Length: 2\r\nContent-Length: 12\r\n\r\n{}")
    assert got.startswith(b"HTTP/1.1 400 ") and b"two different Content-Length values" in got, got
    assert elapsed is not None
    # The same length twice is one length (RFC 9112 allows it): served.
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}")
        assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
    assert healthy(daemon)


# ---- TLS ----

def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certs():
    """A test CA, a server certificate for 127.0.0.1 and a client certificate, made now."""
    d = make_workdir("tls-")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "1",
            "-subj", "/CN=icecommit test CA", "-keyout", "ca.key", "-out", "ca.pem", cwd=d)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
                      ("client", "extendedKeyUsage=clientAuth")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "1", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)
    return {k: os.path.join(d, v) for k, v in
            (("dir", ""), ("ca", "ca.pem"), ("cert", "server.pem"), ("key", "server.key"),
             ("client_cert", "client.pem"), ("client_key", "client.key"))}


def client_context(certs, with_cert):
    ctx = ssl.create_default_context(cafile=certs["ca"])
    if with_cert:
        ctx.load_cert_chain(certs["client_cert"], certs["client_key"])
    return ctx


def test_tls_listener_commits_and_refuses_plaintext(catalog, certs, table):
    ns, name, _ = table
    d = Daemon(catalog["uri"], catalog["dir"], {"http.tls-certificate-file": certs["cert"],
                                                 "http.tls-key-file": certs["key"]},
               ssl_context=client_context(certs, False))
    try:
        assert d.url.startswith("https://")
        # Plain HTTP to the TLS port gets no HTTP answer.
        _, got = raw_exchange(d.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", timeout=3)
        assert not got.startswith(b"HTTP/1.1 200"), got
        # A real commit through TLS, read back by Iceberg Java.
        staged = peer("stage", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--files", 1, "--rows", 3,
                      "--start-id", 0)
        status, _, answer = d.commit(ns, name, {"idempotency-key": "tls-1", "staged-manifests": [staged["manifest"]]})
        assert status == 200, answer
        dump = peer("dump", "--uri", catalog["uri"], "--table", f"{ns}.{name}")
        assert dump["next-row-id"] == 3, dump
        # h2 by ALPN.
        ctx = client_context(certs, False)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", d.port)), server_hostname="127.0.0.1") as s:
            assert s.selected_alpn_protocol() == "h2"
            assert s.version() in ("TLSv1.2", "TLSv1.3")
        # TLS 1.1 and older are refused.
        old = client_context(certs, False)
        old.minimum_version = old.maximum_version = ssl.TLSVersion.TLSv1_1
        with pytest.raises(ssl.SSLError):
            with old.wrap_socket(socket.create_connection(("127.0.0.1", d.port)), server_hostname="127.0.0.1"):
                pass
    finally:
        d.stop()


def test_mtls_requires_a_client_certificate(catalog, certs):
    d = Daemon(catalog["uri"], catalog["dir"], {"http.tls-certificate-file": certs["cert"],
                                                 "http.tls-key-file": certs["key"],
                                                 "http.tls-client-ca-file": certs["ca"]},
               ssl_context=client_context(certs, True))
    try:
        assert healthy(d)
        with pytest.raises((ssl.SSLError, ConnectionResetError, OSError)):
            status, _, _ = http("GET", d.url + "/healthz", timeout=5, context=client_context(certs, False))
            assert status != 200
    finally:
        d.stop()


def tls_exchange(port, ctx, session, request):
    """One HTTP/1.1 request on a new TLS connection offering `session` (None: a full handshake);
    returns (whether the server resumed it, the whole answer, the session to offer next)."""
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                         server_hostname="127.0.0.1", session=session) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
        return s.session_reused, answer, s.session


def test_tls_sessions_resume_with_and_without_client_certificates(catalog, certs, table):
    """Issue 19 finding 6: with client certificates required, no session id context was set and
    OpenSSL ended every resumption's handshake (SSL_ERROR_SYSCALL in curl, EOF in Python). Each
    client's second connection offers the first one's session (a TLS 1.2 session id, a TLS 1.3
    ticket): it resumes and is answered; the commit sent on a resumed mTLS connection lands."""
    ns, name, _ = table
    staged = peer("stage", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--files", 1, "--rows", 2,
                  "--start-id", 0)
    body = json.dumps({"idempotency-key": "resumed", "staged-manifests": [staged["manifest"]]}).encode()
    commit = (f"POST /v1/namespaces/{ns}/tables/{name}/commits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
              f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    health = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    for mtls in (False, True):
        settings = {"http.tls-certificate-file": certs["cert"], "http.tls-key-file": certs["key"]}
        if mtls:
            settings["http.tls-client-ca-file"] = certs["ca"]
        d = Daemon(catalog["uri"], catalog["dir"], settings, ssl_context=client_context(certs, mtls))
        try:
            for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
                ctx = client_context(certs, mtls)
                ctx.minimum_version = ctx.maximum_version = version
                reused, answer, session = tls_exchange(d.port, ctx, None, health)
                assert not reused and answer.startswith(b"HTTP/1.1 200 "), answer
                last = mtls and version == ssl.TLSVersion.TLSv1_3
                reused, answer, _ = tls_exchange(d.port, ctx, session, commit if last else health)
                assert reused, (mtls, version)
                assert answer.startswith(b"HTTP/1.1 200 "), (mtls, version, answer)
        finally:
            d.stop()
    dump = peer("dump", "--uri", catalog["uri"], "--table", f"{ns}.{name}")
    assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(0, 0), (1, 1)], dump


def test_bad_certificate_or_key_refuses_to_start(catalog, certs):
    workdir = make_workdir("tls-bad-")
    cases = (({"http.tls-certificate-file": certs["key"], "http.tls-key-file": certs["key"]}, "http.tls-certificate-file"),
             ({"http.tls-certificate-file": certs["cert"], "http.tls-key-file": certs["client_key"]}, "does not match"),
             ({"http.tls-certificate-file": certs["cert"]}, "set both or neither"))
    for settings, message in cases:
        with pytest.raises(RuntimeError, match=message):
            Daemon(catalog["uri"], workdir, settings)


# ---- connections h2o could no longer hear: reset TLS connections, a stop with every state open ----

def tls_connect(port, certs, alpn):
    ctx = client_context(certs, False)
    ctx.set_alpn_protocols([alpn])
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
    assert s.selected_alpn_protocol() == alpn
    return s


def tls_h2_connect(port, certs):
    """TLS with ALPN h2, the preface sent and the server's SETTINGS read: h2o's HTTP/2
    connection is up and reading."""
    s = tls_connect(port, certs, "h2")
    s.sendall(PREFACE + frame(SETTINGS, 0, 0))
    assert any(f[0] == SETTINGS for f in read_frames(s, lambda kind, *_: kind == SETTINGS, timeout=5))
    return s


def tls_handshaken(port, certs, alpn):
    """TLS with ALPN, nothing sent after the handshake; returns once the server finished it
    (its session tickets, sent then, were read)."""
    s = tls_connect(port, certs, alpn)
    s.settimeout(0.3)
    try:
        s.recv(1)
    except (socket.timeout, ssl.SSLWantReadError):
        pass
    s.settimeout(10)
    return s


def reset(s):
    """Closes with a RST (SO_LINGER 0), as a killed client or one with unread input does."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def half_client_hello():
    """The first half of a real TLS ClientHello: a handshake that stops in the middle."""
    ctx = ssl.create_default_context()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        obj.do_handshake()
    hello = outgoing.read()
    assert len(hello) > 100
    return hello[:len(hello) // 2]


def stop_within(d, seconds):
    """SIGTERM; the daemon must exit 0 within `seconds` (it is killed otherwise)."""
    start = time.time()
    d.proc.send_signal(signal.SIGTERM)
    try:
        code = d.proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        d.proc.kill()
        d.proc.wait()
        raise AssertionError("icecommitd still running %s s after SIGTERM: %s"
                             % (seconds, open(d.log).read()[-4000:]))
    assert code == 0, "icecommitd exit status %d: %s" % (code, open(d.log).read()[-4000:])
    return time.time() - start


def test_reset_tls_connections_give_back_their_slots(catalog, certs):
    # h2o 2.2.5 ignored libuv refusing the close_notify write of a reset TLS connection: the
    # socket stayed open for good, holding its slot, and kept the daemon from stopping.
    d = Daemon(catalog["uri"], catalog["dir"], {"http.tls-certificate-file": certs["cert"],
                                                 "http.tls-key-file": certs["key"],
                                                 "http.max-connections-per-address": "3",
                                                 "http.header-timeout-ms": "1000"},
               ssl_context=client_context(certs, False))
    try:
        for _ in range(4):
            reset(tls_h2_connect(d.port, certs))           # HTTP/2, idle
            reset(tls_handshaken(d.port, certs, "h2"))     # HTTP/2, no preface yet
            reset(tls_handshaken(d.port, certs, "http/1.1"))
            s = tls_h2_connect(d.port, certs)                # HTTP/2, a body on its way
            s.sendall(frame(HEADERS, END_HEADERS, 1, request_headers("/healthz")) + frame(DATA, 0, 1, b"{"))
            reset(s)
        # 16 reset connections against 3 slots: each gave its slot back.
        deadline = time.time() + 5
        while not healthy(d):
            assert time.time() < deadline, "slots not given back"
            time.sleep(0.1)

        # An HTTP/2 connection that opens no stream is cut by the header timeout, like an
        # HTTP/1.1 one without a request (h2o's own idle timer alone would keep it 60 s).
        for s in (tls_handshaken(d.port, certs, "h2"), tls_h2_connect(d.port, certs)):
            with s:
                elapsed, _ = connection_closed_within(s, 5)
                assert elapsed is not None, "idle HTTP/2 connection still open"
        assert healthy(d)
        stop_within(d, 5)
    finally:
        if d.proc.poll() is None:  # failed before stop_within(): never leave it running
            d.proc.kill()
            d.proc.wait()


def test_stop_with_connections_in_every_state(catalog, certs):
    d = Daemon(catalog["uri"], catalog["dir"], {"http.tls-certificate-file": certs["cert"],
                                                 "http.tls-key-file": certs["key"]},
               ssl_context=client_context(certs, False))
    held = []
    try:
        assert healthy(d)
        hello = half_client_hello()
        for _ in range(3):
            held.append(tls_handshaken(d.port, certs, "h2"))        # h2, no preface
            held.append(tls_h2_connect(d.port, certs))              # h2, idle
            s = tls_h2_connect(d.port, certs)                       # h2, mid-request
            s.sendall(frame(HEADERS, END_HEADERS, 1, request_headers("/healthz")) + frame(DATA, 0, 1, b"{"))
            held.append(s)
            held.append(tls_handshaken(d.port, certs, "http/1.1"))  # HTTP/1.1, idle
            s = tls_handshaken(d.port, certs, "http/1.1")           # HTTP/1.1, mid-request
            s.sendall(b"POST /v1/namespaces/ns/tables/t/commits HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{")
            held.append(s)
            s = socket.create_connection(("127.0.0.1", d.port))    # mid-handshake
            s.sendall(hello)
            held.append(s)
            s = socket.create_connection(("127.0.0.1", d.port))    # plaintext to the TLS port
            s.sendall(b"GET /healthz HTTP/1.1\r\n")
            held.append(s)
            held.append(socket.create_connection(("127.0.0.1", d.port)))  # nothing sent
            reset(tls_h2_connect(d.port, certs))                    # reset, h2
            reset(tls_handshaken(d.port, certs, "h2"))              # reset, h2 without preface
            reset(tls_handshaken(d.port, certs, "http/1.1"))        # reset, HTTP/1.1
        time.sleep(0.3)
        elapsed = stop_within(d, 10)
        assert elapsed < 5, "stop took %.1f s" % elapsed
    finally:
        for s in held:
            s.close()
        if d.proc.poll() is None:  # failed before stop_within(): never leave it running
            d.proc.kill()
            d.proc.wait()
