# SPDX-License-Identifier: Apache-2.0
"""Writers that insist, and the exactly-once check of what they leave behind.

    reqs = stage_requests(uri, "ns", "t", 40, prefix="k")       # one Iceberg Java run
    send_until_answered(reqs[0], lambda: daemon.url, "ns", "t")  # POST until a verdict
    counts = verify_table(uri, "ns", "t", reqs, "label")         # Iceberg Java reads it all back

A writer POSTs a request and retries it with the same idempotency key until it gets a verdict:
200 ends it (the receipt is kept), a 4xx is a definite error (recorded; the tests fail on it),
503/504 and connection errors (refused, reset, timed out) are "no answer yet": sleep a little
(Retry-After respected up to 1 s) and send again, to whatever daemon `pick_url` names next."""
import collections
import http.client as httpclient
import json
import os
import random
import signal
import subprocess
import threading
import time

from conftest import BUILD, http, peer, write_daemon_config

ROWS = 3                # rows per staged manifest (1 data file each)


class Request:
    """One writer request: its key, its staged manifest, the ids of its rows, and what happened."""

    def __init__(self, key, staged):
        self.key = key
        self.staged = staged
        first = staged["data-files"][0]["first-id"]
        self.ids = list(range(first, first + staged["added-rows"]))
        self.status = None          # the final verdict's HTTP status, None while unanswered
        self.receipt = None         # the final verdict's body
        self.found_in_history = False  # that verdict came from the table history
        self.posts = 0              # POSTs sent (1 + retries)
        self.no_answer = collections.Counter()  # why a POST gave no verdict: 503, 504, conn, timeout

    def body(self):
        return {"idempotency-key": self.key, "staged-manifests": [self.staged["manifest"]]}


def stage_requests(uri, ns, name, n, prefix, start_id=0, rows=ROWS, env=None):
    """Stages n manifests (1 file x `rows` rows, ids consecutive from start_id) in one JVM run.
    env: the Java peer's extra environment (s3_peer_env for tables on S3)."""
    staged = peer("stage", "--uri", uri, "--table", f"{ns}.{name}", "--files", 1, "--rows", rows,
                  "--start-id", start_id, "--manifests", n, env=env)["manifests"]
    assert len(staged) == n
    return [Request(f"{prefix}-{i:04d}", m) for i, m in enumerate(staged)]


def send_until_answered(req, pick_url, ns, name, deadline_s=180.0, first_timeout=None, rng=None,
                        timeout=60.0, cancel=None):
    """POSTs `req` to pick_url() until a verdict; returns the final status (None: deadline, or
    `cancel`, a threading.Event, was set). first_timeout: the first POST gives up after that many
    seconds (an impatient writer: the daemon still works on it while the retry goes elsewhere)."""
    rng = rng or random.Random()
    end = time.monotonic() + deadline_s
    body = req.body()
    while time.monotonic() < end and not (cancel and cancel.is_set()):
        url = pick_url()
        t = first_timeout if (req.posts == 0 and first_timeout) else min(timeout, max(0.5, end - time.monotonic()))
        req.posts += 1
        retry_after = None
        try:
            status, headers, answer = http("POST", f"{url}/v1/namespaces/{ns}/tables/{name}/commits", body,
                                           timeout=t)
        except TimeoutError:
            req.no_answer["timeout"] += 1
        except (OSError, httpclient.HTTPException) as e:
            req.no_answer["timeout" if "timed out" in str(e) else "conn"] += 1
        else:
            if status in (503, 504):
                req.no_answer[status] += 1
                try:
                    retry_after = float(headers.get("Retry-After", "")) if headers.get("Retry-After") else None
                except ValueError:
                    retry_after = None
            else:
                req.status, req.receipt = status, answer
                req.found_in_history = headers.get("Icecommit-Found-In-History") == "true"
                return status
        pause = rng.uniform(0.02, 0.1)
        if retry_after is not None:
            pause = max(pause, min(retry_after, 1.0))
        time.sleep(pause)
    return None


def run_writers(reqs, pick_url, ns, name, writers=8, pace=(0.0, 0.05), seed=0, impatient=0.0, cancel=None, **kw):
    """`writers` threads share reqs (in order); each pauses pace seconds between its requests;
    a fraction `impatient` of requests gives up on its first POST after 20..300 ms."""
    lock = threading.Lock()
    todo = list(reqs)
    failures = []

    def work(w):
        rng = random.Random(seed * 1000 + w)
        while True:
            with lock:
                if not todo or (cancel and cancel.is_set()):
                    return
                req = todo.pop(0)
            time.sleep(rng.uniform(*pace))
            first = rng.uniform(0.02, 0.3) if rng.random() < impatient else None
            try:
                send_until_answered(req, pick_url, ns, name, first_timeout=first, rng=rng, cancel=cancel, **kw)
            except Exception as e:      # pragma: no cover - recorded, reported by the caller
                failures.append((req.key, repr(e)))

    threads = [threading.Thread(target=work, args=(w,), daemon=True) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures[:5]


def metric_lines(url, prefix="icecommit_commit_"):
    """The daemon's counters whose names start with prefix, as {"name{labels}": value}."""
    try:
        status, _, text = http("GET", url + "/metrics", timeout=5)
    except OSError:
        return {}
    if status != 200 or not isinstance(text, str):
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith(prefix) and "_bucket" not in line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


def verify_table(uri, ns, name, reqs, label, injected=None, extra=None, env=None, full_history=True):
    """Iceberg Java reads the whole table back; returns (counts, problems). Prints the counts.
    duplicates: an `id` present more than once, or a key recorded in more than one snapshot
    summary. lost: a key answered 200 whose rows are missing (or whose key is recorded nowhere).
    Row lineage is checked on format-version 3 tables only. full_history=False: the catalog
    keeps only the current snapshot in the metadata (Nessie), so a key's snapshot is checked only
    when it is still there, and rows then stand for their keys."""
    dump = peer("dump", "--uri", uri, "--table", f"{ns}.{name}", env=env)
    lineage = dump["format-version"] >= 3
    rows = dump["rows"]
    id_count = collections.Counter(r["id"] for r in rows)
    row_id_count = collections.Counter(r["_row_id"] for r in rows)
    by_id = {r["id"]: r for r in rows}
    key_snapshots = collections.defaultdict(list)
    for s in dump["snapshots"]:
        keys = s["summary"].get("icecommit.idempotency-keys", "")
        for k in filter(None, keys.split(",")):
            key_snapshots[k].append(s["snapshot-id"])
    ours = {r.key for r in reqs}
    all_ids = {i for r in reqs for i in r.ids}

    dup_rows = sum(c - 1 for c in id_count.values() if c > 1)
    dup_keys = sum(len(v) - 1 for v in key_snapshots.values() if len(v) > 1)
    acked = [r for r in reqs if r.status == 200]
    lost_keys = [r.key for r in acked
                 if any(id_count[i] == 0 for i in r.ids) or (full_history and r.key not in key_snapshots)]
    problems = []
    for r in reqs:
        if r.status is None:
            problems.append(f"{r.key}: no verdict before the deadline ({dict(r.no_answer)})")
        elif r.status != 200:
            problems.append(f"{r.key}: HTTP {r.status}: {json.dumps(r.receipt)[:300]}")
    # A key that was never acknowledged must not be half there: all of its rows or none.
    for r in reqs:
        present = sum(1 for i in r.ids if id_count[i])
        if present not in (0, len(r.ids)):
            problems.append(f"{r.key}: {present} of {len(r.ids)} rows present")
        if present and full_history and r.key not in key_snapshots:
            problems.append(f"{r.key}: rows present but the key is recorded in no snapshot summary")
    # Receipts agree with what the reader sees.
    mismatched = 0
    for r in acked:
        rec = r.receipt
        recorded = key_snapshots.get(r.key, [])
        if recorded and rec.get("snapshot-id") not in recorded:
            mismatched += 1
            problems.append(f"{r.key}: receipt names snapshot {rec.get('snapshot-id')}, key recorded in {recorded}")
            continue
        for m in rec.get("manifests", []):
            if "first-row-id" not in m:
                continue
            for pos, i in enumerate(r.ids):
                if i in by_id and by_id[i]["_row_id"] != m["first-row-id"] + pos:
                    mismatched += 1
                    problems.append(f"{r.key}: id {i} has _row_id {by_id[i]['_row_id']}, receipt says "
                                    f"{m['first-row-id'] + pos}")
                    break
    foreign_keys = sorted(set(key_snapshots) - ours)
    if foreign_keys:
        problems.append(f"keys recorded that no writer sent: {foreign_keys[:5]}")
    foreign_rows = sorted(set(id_count) - all_ids)
    if foreign_rows:
        problems.append(f"rows no writer staged: ids {foreign_rows[:5]}")
    if lineage:
        lineage_problems(dump, rows, row_id_count, problems)

    posts = sum(r.posts for r in reqs)
    no_answer = sum((r.no_answer for r in reqs), collections.Counter())
    counts = {
        "requests": len(reqs),
        "acknowledged": len(acked),
        "posts": posts,
        "no-answer": dict(sorted((str(k), v) for k, v in no_answer.items())),
        "found-in-history": sum(1 for r in acked if r.found_in_history),
        "snapshots": len(dump["snapshots"]),
        "rows": len(rows),
        "faults-injected": injected if injected is not None else {},
        "duplicates": dup_rows + dup_keys,
        "lost": len(lost_keys),
    }
    if extra:
        counts.update(extra)
    print(f"\n[{label}] " + " ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in counts.items()))
    if lost_keys:
        problems.append(f"lost keys: {lost_keys[:10]}")
    if dup_rows or dup_keys:
        problems.append(f"duplicated ids: {[i for i, c in id_count.items() if c > 1][:10]}; "
                        f"keys in several snapshots: {[(k, v) for k, v in key_snapshots.items() if len(v) > 1][:5]}")
    for p in problems[:30]:
        print(f"[{label}] PROBLEM {p}")
    return counts, problems


def lineage_problems(dump, rows, row_id_count, problems):
    """verify_table's row-lineage checks of a format-version 3 table, appended to problems."""
    row_id_dups = sum(c - 1 for c in row_id_count.values() if c > 1)
    if row_id_dups or None in row_id_count:
        problems.append(f"_row_id not unique/null: {row_id_dups} duplicates")
    added = sum(s["added-rows"] for s in dump["snapshots"])
    if dump["next-row-id"] != added:
        problems.append(f"next-row-id {dump['next-row-id']} != sum of added-rows {added}")
    merged = any(int(s["summary"].get("manifests-replaced", "0")) for s in dump["snapshots"])
    if not merged and sorted(r["_row_id"] for r in rows) != list(range(dump["next-row-id"])):
        problems.append("row ids are not exactly 0..next-row-id-1")
    # A merge gives the merged manifest a new range its EXISTING files never use (spec), so
    # after one the ids have gaps; they stay below next-row-id.
    if merged and rows and max(r["_row_id"] for r in rows) >= dump["next-row-id"]:
        problems.append("a row id at or past next-row-id")


def conclude(counts, problems, logs):
    """Asserts the exactly-once verdict; on failure prints the daemon log lines that matter."""
    if problems or counts["duplicates"] or counts["lost"]:
        for path in logs:
            print(f"--- {path} (excerpt)")
            for line in log_excerpt(path):
                print("   ", line)
    assert counts["duplicates"] == 0, problems[:10]
    assert counts["lost"] == 0, problems[:10]
    assert not problems, problems[:10]


def kill9_rounds(d, reqs, ns, name, rounds, cancel, per_round=10, seed=9):
    """Each round starts `d`, lets `per_round` new requests arrive (older unanswered ones keep
    retrying) and kills it with SIGKILL at a random moment; a last start lets every writer get its
    answer. Returns, per kill, the requests sent at least once and not answered yet."""
    rng = random.Random(seed)
    threads, in_flight = [], []
    for rnd in range(rounds):
        d.start()
        for i, req in enumerate(reqs[rnd * per_round:(rnd + 1) * per_round]):
            def go(req=req, delay=rng.uniform(0.0, 0.3), seed=rnd * 100 + i):
                time.sleep(delay)
                send_until_answered(req, lambda: d.url, ns, name, rng=random.Random(seed), cancel=cancel)
            t = threading.Thread(target=go, daemon=True)
            t.start()
            threads.append(t)
        time.sleep(rng.uniform(0.1, 0.5))
        in_flight.append(sum(1 for r in reqs if r.posts and r.status is None))
        d.kill9()
    d.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "writers still waiting"
    return in_flight


class RestartableDaemon:
    """icecommitd on a fixed port, restarted after kill -9 on the same port (like a supervisor
    would); every start appends to one log, icecommitd-<port>.log in workdir."""

    def __init__(self, catalog_uri, workdir, port, settings=None):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.config = os.path.join(workdir, f"icecommitd-{port}.conf")
        self.log = os.path.join(workdir, f"icecommitd-{port}.log")
        self.proc = None
        self.starts = 0
        write_daemon_config(self.config, catalog_uri, port, settings,
                            defaults={"commit.max-backoff-ms": "300", "commit.max-attempts": "200"})

    def start(self, ready_timeout=30):
        assert self.proc is None or self.proc.poll() is not None
        self.starts += 1
        with open(self.log, "a") as log:
            log.write(f"===== start {self.starts} =====\n")
            log.flush()
            self.proc = subprocess.Popen([os.path.join(BUILD, "daemon", "icecommitd"), "--config", self.config],
                                         stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.time() + ready_timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"icecommitd exited {self.proc.returncode}: see {self.log}")
            try:
                if http("GET", self.url + "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"icecommitd not ready: see {self.log}")

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self):
        """SIGTERM, then SIGKILL if it does not exit; returns the exit status."""
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)


def stop_daemon(d):
    """Stops a conftest.Daemon by its pid whatever state it is in; returns its exit status."""
    if d.proc.poll() is None:
        d.proc.send_signal(signal.SIGTERM)
        try:
            d.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            d.proc.kill()
            d.proc.wait(timeout=30)
    return d.proc.returncode


def log_excerpt(path, patterns=("commit failed", "unknown", "error", "warning", "already committed"), limit=40):
    """The log lines that matter for a report (the last `limit` matching ones)."""
    try:
        with open(path, errors="replace") as f:
            lines = [line.rstrip() for line in f if any(p in line.lower() for p in patterns)]
    except OSError:
        return []
    return lines[-limit:]
