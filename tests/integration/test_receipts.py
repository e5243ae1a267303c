# SPDX-License-Identifier: Apache-2.0
"""Receipts from the table alone (issue 13 item 1). Writers commit through daemon A behind a
proxy that swallows A's answers (the writer sees the connection drop; the proxy keeps the bytes
A sent). They retry through daemon B, which never saw them, then through B after a restart, and
ask GET /v1/commits/{key}: every answer carries the receipt A sent, byte for byte, rebuilt from
the snapshot's record, its manifest list and the requests' manifests. Iceberg Java then reads
every row with the _row_id those receipts name."""
import json
import socket
import threading
import time
import urllib.parse

from conftest import Daemon, found_in_history, http, is_copy_of, peer
from test_data_files import describe, write_parquet


class SwallowingProxy:
    """Forwards each connection to `target` and reads the whole HTTP answer, but never passes it
    on: the client's connection is closed instead. The answers are kept in arrival order."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.answers = []
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    @staticmethod
    def _read_message(s, first=b""):
        """One HTTP/1.1 message with a Content-Length body: (head, body)."""
        data = first
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("closed mid-head")
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("closed mid-body")
            body += chunk
        return head, body

    def _relay(self, client):
        upstream = socket.create_connection(("127.0.0.1", self.target_port))
        try:
            head, body = self._read_message(client)
            upstream.sendall(head + b"\r\n\r\n" + body)
            answer_head, answer_body = self._read_message(upstream)
            status = int(answer_head.split(b" ", 2)[1])
            with self.lock:
                self.answers.append((status, answer_body))
        finally:
            upstream.close()
            client.close()   # the answer is lost

    def close(self):
        self.sock.close()


def post_lost(url, ns, name, body):
    """POSTs a commit whose answer never arrives; returns what the writer saw."""
    try:
        status, _, answer = http("POST", f"{url}/v1/namespaces/{ns}/tables/{name}/commits", body, timeout=60)
        return f"unexpected answer {status}: {answer}"
    except Exception as e:   # the connection dropped: exactly what a writer meets
        return type(e).__name__


def post_raw(url, ns, name, body):
    """POSTs a commit; (status, headers, the body's bytes as sent)."""
    conn = socket.create_connection(("127.0.0.1", urllib.parse.urlparse(url).port))
    try:
        data = json.dumps(body).encode()
        conn.sendall(f"POST /v1/namespaces/{ns}/tables/{name}/commits HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + data)
        head, raw = SwallowingProxy._read_message(conn)
    finally:
        conn.close()
    lines = head.split(b"\r\n")
    headers = {k.strip().decode().lower(): v.strip().decode()
               for k, _, v in (line.partition(b":") for line in lines[1:])}
    return int(lines[0].split(b" ", 2)[1]), headers, raw


def test_a_retry_through_another_daemon_and_after_a_restart_gets_the_same_receipt(catalog, table):
    ns, name, created = table
    uri = catalog["uri"]
    location = created["location"]
    # Three writers: one request with two staged manifests, one with one, one with data-files
    # (icecommitd writes its manifest). A lingers so that they share one snapshot.
    s1 = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 2, "--rows", 3, "--start-id", 1)
    s2 = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 4, "--start-id", 100)
    s3 = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", 2, "--start-id", 200)
    ids_df = list(range(300, 305))
    path_df = write_parquet(location, ids_df)
    bodies = {
        "rc-two": {"idempotency-key": "rc-two", "staged-manifests": [s1["manifest"], s2["manifest"]]},
        "rc-one": {"idempotency-key": "rc-one", "staged-manifests": [s3["manifest"]]},
        "rc-files": {"idempotency-key": "rc-files", "data-files": [describe(path_df, ids_df)]},
    }
    a = Daemon(uri, catalog["dir"], {"commit.linger-ms": "3000"})
    proxy = SwallowingProxy(a.port)
    try:
        seen = {}
        threads = [threading.Thread(target=lambda k=k, b=b: seen.__setitem__(
            k, post_lost(f"http://127.0.0.1:{proxy.port}", ns, name, b))) for k, b in bodies.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert all(v != "" and not v.startswith("unexpected") for v in seen.values()), seen
    finally:
        proxy.close()
        a.stop()
    lost = {}
    for status, raw in proxy.answers:
        assert status == 200, raw
        lost[json.loads(raw)["idempotency-key"]] = raw
    assert set(lost) == set(bodies)
    receipts = {k: json.loads(v) for k, v in lost.items()}
    assert {r["snapshot-id"] for r in receipts.values()} == {receipts["rc-two"]["snapshot-id"]}
    assert all(r["batch-requests"] == 3 for r in receipts.values()), receipts
    # The table holds icecommitd's copies; the receipts (also those rebuilt from the table below)
    # name where each was staged.
    assert [m["staged-location"] for m in receipts["rc-two"]["manifests"]] == [s1["manifest"], s2["manifest"]]
    assert all(is_copy_of(m, s) for m, s in zip(receipts["rc-two"]["manifests"], (s1["manifest"], s2["manifest"])))
    assert [f["location"] for f in receipts["rc-files"]["manifests"][0]["data-files"]] == [path_df]

    # Daemon B never saw these requests; then B again after a restart.
    for round_ in ("another daemon", "after a restart"):
        b = Daemon(uri, catalog["dir"])
        try:
            for key, body in bodies.items():
                status, headers, raw = post_raw(b.url, ns, name, body)
                assert status == 200, raw
                assert headers.get("icecommit-found-in-history") == "true", (round_, headers)
                assert raw == lost[key], f"{round_}: {key}\n{raw}\n!=\n{lost[key]}"
                status, headers, answer = http("GET", f"{b.url}/v1/commits/{key}?namespace={ns}&table={name}")
                assert status == 200 and answer["status"] == "committed", answer
                assert answer["receipt"] == receipts[key]
        finally:
            b.stop()
    # A fresh daemon asked without a retry: from the history alone.
    b = Daemon(uri, catalog["dir"])
    try:
        status, headers, answer = http("GET", f"{b.url}/v1/commits/rc-files?namespace={ns}&table={name}")
        assert status == 200 and found_in_history(headers), answer
        assert answer["receipt"] == receipts["rc-files"]
    finally:
        b.stop()

    # One snapshot; every row has the _row_id its receipt names (Iceberg Java's reader).
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}")
    assert len(dump["snapshots"]) == 1
    by_id = {r["id"]: r for r in dump["rows"]}
    expected_ids = {
        "rc-two": [s1["data-files"], s2["data-files"]],
        "rc-one": [s3["data-files"]],
    }
    for key, receipt in receipts.items():
        for k, m in enumerate(receipt["manifests"]):
            files = m["data-files"]
            if key == "rc-files":
                ids_per_file = [ids_df]
            else:
                ids_per_file = [list(range(f["first-id"], f["first-id"] + f["record-count"]))
                                for f in expected_ids[key][k]]
            assert len(files) == len(ids_per_file)
            for f, ids in zip(files, ids_per_file):
                got = [by_id[i]["_row_id"] for i in ids]
                assert got == list(range(f["first-row-id"], f["last-row-id"] + 1)), (key, f, got)
                seqs = {by_id[i]["_last_updated_sequence_number"] for i in ids}
                assert seqs == {receipt["sequence-number"]}
    assert dump["next-row-id"] == 3 * 2 + 4 + 2 + 5
