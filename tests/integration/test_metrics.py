# SPDX-License-Identifier: Apache-2.0
"""Operator metrics and commit logs on a live daemon after real commits through Apache Iceberg's
REST catalog (issue 13 items 5 and 6): GET /metrics passes Prometheus's own `promtool check
metrics`, carries build info, process figures, catalog, storage and HTTP latency by bounded
labels, per-table series bounded by metrics.max-table-labels; with log.format = json every log
record is one JSON object and each commit has its one record with table, branch, keys, snapshot
id, attempts and duration."""
import json
import re
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import Daemon, http, peer


def samples(text):
    """{"name{labels}": value} of every sample line of an exposition."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


@pytest.fixture
def json_daemon(catalog):
    d = Daemon(catalog["uri"], catalog["dir"],
               settings={"log.format": "json", "metrics.max-table-labels": "1"})
    try:
        yield d
    finally:
        d.stop()


def new_table(uri):
    name = "m_" + uuid.uuid4().hex[:10]
    peer("create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", 3)
    return name


def test_metrics_after_commits_pass_promtool_and_logs_are_json(catalog, json_daemon):
    uri, d = catalog["uri"], json_daemon
    first, second = new_table(uri), new_table(uri)
    receipts = {}
    for name, rows, key in ((first, 10, "metrics-a"), (second, 3, "metrics-b")):
        staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows",
                      rows, "--start-id", 0)
        status, _, receipt = d.commit("ns", name, {"idempotency-key": key,
                                                   "staged-manifests": [staged["manifest"]]})
        assert status == 200, receipt
        receipts[name] = receipt
    before_scrape = time.time()

    status, headers, text = http("GET", d.url + "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")

    # Prometheus's own linter: names, types, HELP, suffixes, histogram shapes.
    promtool = shutil.which("promtool")
    assert promtool, "promtool not installed (tests/install-deps.sh installs Debian's prometheus)"
    check = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0 and not check.stdout.strip() and not check.stderr.strip(), \
        check.stdout + check.stderr

    s = samples(text)
    build = [k for k in s if k.startswith("icecommit_build_info{")]
    assert len(build) == 1 and re.match(r'icecommit_build_info\{version="\d+\.\d+\.\d+",revision="[^"]+"\}$',
                                        build[0]), build
    assert s[build[0]] == 1
    assert before_scrape - 600 < s["process_start_time_seconds"] <= before_scrape
    assert s["process_open_fds"] > 3 and s["process_max_fds"] >= s["process_open_fds"]
    assert s["process_resident_memory_bytes"] > 1 << 20
    assert s["process_virtual_memory_bytes"] >= s["process_resident_memory_bytes"]
    assert s["process_cpu_seconds_total"] > 0

    # Catalog calls by operation and outcome, every one timed.
    assert s['icecommit_catalog_requests_total{operation="commit",outcome="success"}'] == 2
    assert s['icecommit_catalog_request_duration_seconds_count{operation="commit",outcome="success"}'] == 2
    assert s['icecommit_catalog_request_duration_seconds_bucket{operation="commit",outcome="success",le="+Inf"}'] == 2
    assert s['icecommit_catalog_request_duration_seconds_sum{operation="commit",outcome="success"}'] > 0
    loads = [k for k in s if k.startswith("icecommit_catalog_requests_total{operation=\"load")]
    assert loads, "no table load counted"
    # Storage latency by operation and outcome (the manifest list written per commit).
    assert s['icecommit_storage_request_duration_seconds_count{operation="local-put",outcome="success"}'] >= 2

    # HTTP by route pattern, never the raw path; unmatched paths are "other".
    route = '/v1/namespaces/{}/tables/{}/commits'
    assert s[f'icecommit_http_request_duration_seconds_count{{method="POST",route="{route}",code="200"}}'] == 2
    assert not any(first in k or second in k for k in s if k.startswith("icecommit_http_"))
    http("GET", d.url + "/v1/no/such/" + uuid.uuid4().hex)
    s2 = samples(http("GET", d.url + "/metrics")[2])
    assert s2['icecommit_http_request_duration_seconds_count{method="other",route="other",code="404"}'] == 1

    # Per table, bounded: max-table-labels = 1 names the first table, the second is "other".
    assert s[f'icecommit_table_row_ids_assigned_total{{table="ns.{first}"}}'] == 10
    assert s['icecommit_table_row_ids_assigned_total{table="other"}'] == 3
    assert s["icecommit_row_ids_assigned_total"] == 13
    for label in (f"ns.{first}", "other"):
        last = s[f'icecommit_table_last_commit_timestamp_seconds{{table="{label}"}}']
        assert before_scrape - 300 < last <= before_scrape + 1
        assert s[f'icecommit_table_queue_requests{{table="{label}"}}'] == 0
        assert s[f'icecommit_table_oldest_request_age_seconds{{table="{label}"}}'] == 0
    assert not any(second in k for k in s)
    assert s["icecommit_unknown_outcomes_outstanding"] == 0
    assert s['icecommit_batch_requests_count'] == 2
    assert s['icecommit_batch_requests_bucket{le="1"}'] == 2

    # Every record of the log is one JSON object; each commit has one "committed" record.
    records = [json.loads(line) for line in open(d.log).read().splitlines() if line.strip()]
    assert all({"time", "level", "module", "message"} <= r.keys() for r in records)
    committed = [r for r in records if r["message"].startswith("committed ")]
    assert len(committed) == 2, committed
    for r, (name, key, rows) in zip(committed, ((first, "metrics-a", 10), (second, "metrics-b", 3))):
        receipt = receipts[name]
        assert r["level"] == "info" and r["module"] == "commit"
        assert r["table"] == f"ns.{name}" and r["branch"] == "main" and r["keys"] == key
        assert r["snapshot-id"] == receipt["snapshot-id"]
        assert r["sequence-number"] == receipt["sequence-number"]
        assert r["first-row-id"] == receipt["snapshot-first-row-id"]
        assert r["added-rows"] == rows and r["requests"] == 1 and r["attempts"] == 1
        assert isinstance(r["duration-ms"], int) and r["duration-ms"] >= 0
        assert f"table='ns.{name}' branch='main' snapshot={receipt['snapshot-id']}" in r["message"]
