# SPDX-License-Identifier: Apache-2.0
"""Exactly-once under failure (docs/design.md sections 2.7, 2.8, 3 and 8; issue 3).

Writers that insist (writers.py: POST, and on 503/504/connection errors send the same key again
until a verdict) drive icecommitd through the real Apache Iceberg REST catalog while things go
wrong: faults injected in the catalog (a lost response after the commit was applied; 500, 502,
503, 504 and a reset before applying; a reset after applying), the catalog down for 10 s, a slow
catalog, icecommitd killed with SIGKILL 20 times during a 200-request load, and three daemons
with every retry sent to a random one. Each run ends with Iceberg Java reading the whole table:
every acknowledged key's rows are there exactly once, no id twice, _row_id unique and dense,
next-row-id = sum of added-rows, each key in exactly one snapshot summary, receipts matching the
rows. Each test prints its counts; duplicates and lost must be 0."""
import os
import random
import subprocess
import tempfile
import threading
import time
import uuid

import pytest

from conftest import PEERS, ROOT, Daemon, free_port, peer, register_catalog_roots, rest_catalog_roots
from faults import clear_faults, get_faults, set_faults
from writers import (RestartableDaemon, conclude, kill9_rounds, metric_lines, run_writers, stage_requests,
                     stop_daemon, verify_table)

SETTINGS = {"commit.min-backoff-ms": "10", "commit.max-backoff-ms": "300", "commit.max-attempts": "200"}


@pytest.fixture(autouse=True)
def no_faults_left(catalog):
    clear_faults(catalog["uri"])
    yield
    clear_faults(catalog["uri"])


def new_table(uri):
    name = "xo_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 3)
    return "ns", name


def injected_of(uri):
    return {k: v for k, v in get_faults(uri)["injected"].items() if v}


# --- faults injected in the real catalog -------------------------------------------------------

# Every other commit attempt of the table gets the fault (the resolution or retry after it passes,
# then the next batch meets the next fault). kind -> whether the catalog applied the commit.
FAULTS = {
    "lost-response": True,      # applied, then 500 CommitStateUnknown
    "error-500": False,
    "error-502": False,
    "error-503": False,
    "error-504": False,
    "reset-before": False,      # TCP reset, nothing applied
    "reset": True,              # applied, then TCP reset
}


@pytest.mark.parametrize("kind,replay", [(k, False) for k in FAULTS] + [("lost-response", True), ("reset", True)],
                         ids=[k for k in FAULTS] + ["lost-response-idempotency-key", "reset-idempotency-key"])
def test_catalog_faults_commit_each_key_once(catalog, kind, replay):
    uri = catalog["uri"]
    ns, name = new_table(uri)
    reqs = stage_requests(uri, ns, name, 30, prefix=f"f-{kind}")
    settings = dict(SETTINGS)
    if replay:
        # The 1.11 server honours Idempotency-Key: an unknown outcome can be replayed.
        settings["catalog.send-idempotency-key"] = "true"
    d = Daemon(uri, catalog["dir"], settings)
    try:
        set_faults(uri, commit=[kind, "pass"] * 6, table=f"{ns}.{name}", reset_counters=True)
        run_writers(reqs, lambda: d.url, ns, name, writers=6, pace=(0.0, 0.1), seed=1)
        state = get_faults(uri)
        injected = {k: v for k, v in state["injected"].items() if v}
        metrics = metric_lines(d.url, "icecommit_commit_attempts_total")
    finally:
        clear_faults(uri)
        code = stop_daemon(d)
    counts, problems = verify_table(uri, ns, name, reqs, f"fault {kind}{' +idempotency-key' if replay else ''}",
                                    injected=injected, extra={"daemon-attempts": metrics})
    conclude(counts, problems, [d.log])
    assert injected.get(kind, 0) >= 3, f"the fault was hardly injected: {state}"
    assert code == 0, f"icecommitd exit status {code}"


def test_catalog_down_for_10_seconds(catalog):
    """A dedicated catalog (restarting the shared one would disturb other tests) is stopped in
    the middle of the load and started again 10 s later on the same port and state directory."""
    workdir = tempfile.mkdtemp(prefix="icecommit-down-", dir=os.path.join(ROOT, "build-tests"))
    port = free_port()
    uri = f"http://127.0.0.1:{port}"
    start = [os.path.join(PEERS, "catalog-start.sh"), workdir, str(port)]
    stop = [os.path.join(PEERS, "catalog-stop.sh"), workdir]
    subprocess.run(start, check=True, timeout=300, stdout=subprocess.DEVNULL)
    register_catalog_roots(uri, rest_catalog_roots(workdir))
    d = None
    cancel = threading.Event()
    try:
        ns, name = new_table(uri)
        reqs = stage_requests(uri, ns, name, 80, prefix="down")
        # 20 attempts with backoff up to 300 ms last ~5 s: during the outage some batches give
        # up (503 catalog-unavailable) and their writers send the same keys again.
        d = Daemon(uri, workdir, dict(SETTINGS, **{"commit.max-attempts": "20"}))
        writers = threading.Thread(target=run_writers, args=(reqs, lambda: d.url, ns, name),
                                   kwargs={"writers": 6, "pace": (0.05, 0.3), "seed": 2, "cancel": cancel},
                                   daemon=True)
        writers.start()
        time.sleep(1.5)
        answered_before = sum(1 for r in reqs if r.status is not None)
        t0 = time.monotonic()
        subprocess.run(stop, check=True, timeout=120, stdout=subprocess.DEVNULL)
        time.sleep(max(0.0, 10.0 - (time.monotonic() - t0)))
        answered_during = sum(1 for r in reqs if r.status is not None) - answered_before
        subprocess.run(start, check=True, timeout=300, stdout=subprocess.DEVNULL)
        outage = time.monotonic() - t0
        writers.join(timeout=240)
        assert not writers.is_alive(), "writers still running 240 s after the catalog came back"
        metrics = metric_lines(d.url)
        code = stop_daemon(d)
        counts, problems = verify_table(
            uri, ns, name, reqs, "catalog down 10 s", injected={"catalog-outage-s": round(outage, 1)},
            extra={"answered-before": answered_before, "answered-during-outage": answered_during,
                   "daemon": {k: v for k, v in metrics.items() if "attempts" in k or "retries" in k}})
        conclude(counts, problems, [d.log])
        assert sum(r.no_answer.get(503, 0) for r in reqs) > 0 or any(
            "catalog-unavailable" in k for k in metrics), "the outage was never noticed"
        assert code == 0, f"icecommitd exit status {code}"
    finally:
        cancel.set()
        if d is not None:
            stop_daemon(d)
        subprocess.run(stop, check=False, timeout=120, stdout=subprocess.DEVNULL)


@pytest.mark.parametrize("timeout_ms", [None, 1500], ids=["slow", "slow-past-request-timeout"])
def test_slow_catalog(catalog, timeout_ms):
    """delay-2000 on every commit and load for a while. With catalog.request-timeout-ms = 1500
    each delayed commit times out after it was sent (an unknown outcome) and is applied by the
    catalog 0.5 s later, while icecommitd resolves it."""
    uri = catalog["uri"]
    ns, name = new_table(uri)
    reqs = stage_requests(uri, ns, name, 40, prefix="slow")
    settings = dict(SETTINGS)
    if timeout_ms:
        settings["catalog.request-timeout-ms"] = str(timeout_ms)
    d = Daemon(uri, catalog["dir"], settings)
    try:
        set_faults(uri, commit=["delay-2000"] * 3, load=["delay-2000"] * 5, table=f"{ns}.{name}",
                   reset_counters=True)
        t0 = time.monotonic()
        run_writers(reqs, lambda: d.url, ns, name, writers=8, pace=(0.0, 0.2), seed=3)
        elapsed = time.monotonic() - t0
        state = get_faults(uri)
        injected = {k: v for k, v in state["injected"].items() if v}
        metrics = metric_lines(d.url, "icecommit_commit_attempts_total")
    finally:
        clear_faults(uri)
        code = stop_daemon(d)
    counts, problems = verify_table(uri, ns, name, reqs, f"slow catalog timeout={timeout_ms or 'default'}",
                                    injected=injected,
                                    extra={"load-s": round(elapsed, 1), "daemon-attempts": metrics})
    conclude(counts, problems, [d.log])
    assert injected.get("delay-2000", 0) >= 6, state
    assert code == 0, f"icecommitd exit status {code}"


# --- icecommitd killed ---------------------------------------------------------------------------

def test_kill_9_during_load(catalog):
    """200 requests in 20 rounds: each round icecommitd starts on the same port, 10 new requests
    arrive (while older unanswered ones keep retrying), and icecommitd is killed with SIGKILL at a
    random moment. The catalog holds most commits 50..300 ms, so kills often land while a commit
    is in the catalog's hands: it is applied after its daemon died, and the next daemon must find
    it in the table's history. A last start lets every writer get its answer."""
    uri = catalog["uri"]
    ns, name = new_table(uri)
    reqs = stage_requests(uri, ns, name, 200, prefix="kill")
    d = RestartableDaemon(uri, catalog["dir"], free_port(), SETTINGS)
    cancel = threading.Event()
    in_flight = []      # per kill: requests sent at least once and not answered yet
    code = None
    set_faults(uri, commit=["delay-50", "delay-300", "pass", "delay-150"] * 150, table=f"{ns}.{name}",
               reset_counters=True)
    try:
        in_flight = kill9_rounds(d, reqs, ns, name, 20, cancel)
        injected = injected_of(uri)
        code = d.stop()
    finally:
        cancel.set()
        clear_faults(uri)
        d.stop()
    injected["sigkill"] = len(in_flight)
    counts, problems = verify_table(uri, ns, name, reqs, "kill -9 x20", injected=injected,
                                    extra={"daemon-starts": d.starts, "in-flight-at-each-kill": in_flight})
    conclude(counts, problems, [d.log])
    assert len(in_flight) == 20 and sum(1 for n in in_flight if n > 0) >= 15, "kills mostly missed the load"
    assert code == 0, f"icecommitd exit status {code}"


# --- three daemons ---------------------------------------------------------------------------------

def test_three_daemons_random_retries(catalog):
    """Three icecommitd processes on one table; every POST (first try and each retry) goes to a
    random one. The catalog injects lost responses, resets, 5xx and conflicts on commits and
    failures on loads; a quarter of the writers give up on their first POST after 20..300 ms,
    so the same key is often in flight in two daemons at once."""
    uri = catalog["uri"]
    ns, name = new_table(uri)
    reqs = stage_requests(uri, ns, name, 150, prefix="three")
    daemons = []
    try:
        for _ in range(3):
            daemons.append(Daemon(uri, catalog["dir"], SETTINGS))
        urls = [d.url for d in daemons]
        pick = random.Random(6)
        lock = threading.Lock()

        def pick_url():
            with lock:
                return pick.choice(urls)

        commit_faults = ["lost-response", "pass", "error-500", "pass", "reset", "pass", "error-503", "pass",
                         "conflict", "pass", "error-502", "pass", "error-504", "pass", "reset-before", "pass"] * 2
        load_faults = ["pass", "error-503", "pass", "pass", "reset-before", "pass", "pass", "error-500"] * 2
        set_faults(uri, commit=commit_faults, load=load_faults, table=f"{ns}.{name}", reset_counters=True)
        run_writers(reqs, pick_url, ns, name, writers=8, pace=(0.0, 0.08), seed=4, impatient=0.25)
        injected = injected_of(uri)
        alive = [d.proc.poll() is None for d in daemons]
        metrics = [metric_lines(d.url, "icecommit_commit_attempts_total") for d in daemons]
    finally:
        clear_faults(uri)
        codes = [stop_daemon(d) for d in daemons]
    counts, problems = verify_table(uri, ns, name, reqs, "three daemons", injected=injected,
                                    extra={"daemon-attempts": metrics})
    conclude(counts, problems, [d.log for d in daemons])
    assert all(alive), f"a daemon died during the run: {codes}"
    assert sum(injected.values()) >= 10, injected
    assert codes == [0, 0, 0], f"icecommitd exit statuses {codes}"
