# SPDX-License-Identifier: Apache-2.0
"""A fault-injecting HTTP proxy in front of the real S3 store (SeaweedFS), on 127.0.0.1.

Requests pass through unchanged (every header as sent, so SigV4 signatures still verify), one
upstream connection per request. Faults are queued per rule and consumed in order:

    proxy = S3FaultProxy(s3["endpoint"]); proxy.start()
    proxy.add("PUT", "/snap-", "slowdown", count=2)   # the next 2 PUTs whose path has "/snap-"
    ...  proxy.injected  ->  Counter({"slowdown": 2})

Kinds: "slowdown" (503 SlowDown, not forwarded), "error-500" (500 InternalError, not
forwarded), "reset" (connection closed before forwarding), "drop" (forwarded, the store acts on
it, then the connection is closed without an answer), "slow-body" (forwarded, the answer's body
trickles out one byte every 0.3 s), "expired-token" (400 ExpiredToken, not forwarded),
"access-denied" (403 AccessDenied, not forwarded), "hold" (forwarded once the test calls
release(): the answer waits as long as the test needs, without a timer); any other kind, e.g.
"pass", forwards as usual (a placeholder that lets rules alternate). Nothing in it is
S3-specific: the catalog tests put it in front of a REST catalog or a token endpoint too. keep_alive=False answers every request
with Connection: close, so that a client never reuses a connection (libcurl silently sends a
request again when a reused connection dies before the answer, which would hide a drop)."""
import collections
import http.client
import http.server
import socket
import socketserver
import threading
import time
import urllib.parse

ERRORS = {
    "slowdown": (503, "SlowDown", "Please reduce your request rate."),
    "error-500": (500, "InternalError", "We encountered an internal error. Please try again."),
    "expired-token": (400, "ExpiredToken", "The provided token has expired."),
    "access-denied": (403, "AccessDenied", "Access Denied"),
}


class S3FaultProxy:
    def __init__(self, upstream, keep_alive=True):
        parsed = urllib.parse.urlparse(upstream)
        self.keep_alive = keep_alive
        self.upstream = (parsed.hostname, parsed.port)
        self.rules = []
        self.lock = threading.Lock()
        self.injected = collections.Counter()
        self.seen = collections.Counter()
        self.released = threading.Event()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Replies go out in two writes; with Nagle on, the client's delayed ACK stalls each
            # kept-alive request by ~40 ms (measured by tests/bench/s3_commit_latency.py).
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def handle_any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                kind = proxy._take(self.command, self.path)
                with proxy.lock:
                    proxy.seen[self.command] += 1
                if kind == "reset":
                    self._reset()
                    return
                if kind == "hold":
                    proxy.released.wait(300)
                if kind in ERRORS:
                    status, code, message = ERRORS[kind]
                    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                           f"<Message>{message}</Message><Resource>{self.path}</Resource></Error>").encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(xml) if self.command != "HEAD" else 0))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(xml)
                    return
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    conn.putheader(name, value)
                conn.endheaders(body or None)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if kind == "drop":
                    self._reset()
                    return
                self.send_response(resp.status)
                for name, value in resp.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(data) if self.command != "HEAD" else
                                                       resp.getheader("Content-Length", "0")))
                if not proxy.keep_alive:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                if self.command == "HEAD":
                    return
                if kind == "slow-body":
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(0.3)
                    return
                self.wfile.write(data)

            def _reset(self):
                # SO_LINGER 0: the close is a TCP reset, not an orderly FIN.
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                self.close_connection = True

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = handle_any

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def add(self, method, path_part, kind, count=1):
        with self.lock:
            self.rules.append([method, path_part, kind, count])

    def release(self):
        """Lets every held request go on, and every later one of a "hold" rule too."""
        self.released.set()

    def clear(self):
        with self.lock:
            self.rules.clear()

    def _take(self, method, path):
        with self.lock:
            for rule in self.rules:
                m, part, kind, count = rule
                if count > 0 and (m == "*" or m == method) and part in urllib.parse.unquote(path):
                    rule[3] -= 1
                    self.injected[kind] += 1
                    return kind
        return None

    def start(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
