# SPDX-License-Identifier: Apache-2.0
"""The store misbehaving, through a fault-injecting proxy (s3_proxy.py) in front of the real
store (SeaweedFS, SigV4 verified): 503 SlowDown, 500, resets, answers lost after the store acted,
bodies that trickle past the request timeout, expired tokens and denied access. icecommitd runs
the embedded catalog on the bucket, so every read and write of a commit crosses the proxy.
Transient faults are retried inside the operation (the writer sees 200, each key once); faults
that outlive the retries are a retryable 503, never a 4xx; refusals say why with the store's code."""
import json
import uuid

import pytest

from conftest import Daemon, http, make_workdir, s3_key, s3_request
from s3_proxy import S3FaultProxy
from test_bucket_catalog import NS, SCHEMA, DataFilesRequest, list_keys, pyarrow_s3, write_parquet


@pytest.fixture
def proxy(s3):
    p = S3FaultProxy(s3["endpoint"]).start()
    yield p
    p.stop()


def settings(s3, proxy, **extra):
    return {"s3.endpoint": proxy.endpoint, "s3.path-style-access": "true", "client.region": s3["region"],
            "s3.access-key-id": s3["access_key"], "s3.secret-access-key": s3["secret_key"],
            "s3.min-backoff-ms": "10", "s3.max-backoff-ms": "50", "s3.max-attempts": "4",
            "s3.request-timeout-ms": "1500",
            "commit.min-backoff-ms": "10", "commit.max-backoff-ms": "50", "commit.max-attempts": "3", **extra}


@pytest.fixture
def cache_tables():
    """catalog.cache-tables of the table fixture's daemon; a test parametrizes it to "0" when its
    faults are on the reads of the hint and the metadata that the table cache saves."""
    return "64"


@pytest.fixture
def table(s3, proxy, cache_tables):
    warehouse = f"s3://{s3['bucket']}/{uuid.uuid4().hex[:12]}/wh"
    d = Daemon(warehouse, make_workdir("icecommit-s3-faults-"),
               settings(s3, proxy, **{"catalog.cache-tables": cache_tables}))
    status, _, created = http("POST", f"{d.url}/v1/namespaces/{NS}/tables", {"name": "t", "schema": SCHEMA})
    assert status == 201, created
    yield d, f"{warehouse}/{NS}/t"
    d.stop()


def request(s3, location, key, ids):
    return DataFilesRequest(key, *write_parquet(s3, pyarrow_s3(s3), location, ids), ids)


def snapshots(s3, location):
    keys = list_keys(s3, s3_key(s3, location) + "/metadata/v")
    versions = sorted(int(k.rsplit("/v", 1)[1].split(".")[0]) for k in keys if k.endswith(".metadata.json"))
    assert versions == list(range(1, len(versions) + 1)), versions
    md = json.loads(s3_request(s3, "GET", f"{s3_key(s3, location)}/metadata/v{versions[-1]}.metadata.json")[1])
    return md.get("snapshots", [])


def storage_retries(url):
    _, _, text = http("GET", url + "/metrics")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("icecommit_storage_requests_total{") and 'outcome="retried"' in line)


@pytest.mark.parametrize("method,path,kind,cache_tables", [
    ("GET", ".parquet", "slowdown", "64"),            # the ranged GET of a Parquet file's footer
    ("HEAD", ".parquet", "slowdown", "64"),           # the footer's GET also sizes it: no HEAD, no effect
    ("GET", "version-hint.text", "error-500", "0"),   # (the table cache reads neither hint nor metadata)
    ("GET", ".metadata.json", "reset", "0"),
    ("HEAD", ".metadata.json", "error-500", "64"),    # the cached version's HEAD
    ("PUT", "-m0.avro", "slowdown", "64"),            # the manifest icecommitd writes for data-files
    ("PUT", "/snap-", "reset", "64"),                 # the manifest list
    ("PUT", "/snap-", "drop", "64"),                  # ... written, the answer lost: read back, ours
    ("PUT", ".metadata.json", "drop", "64"),          # the commit point: written, answer lost
    ("PUT", ".metadata.json", "drop", "0"),
    ("PUT", ".metadata.json", "error-500", "64"),
    ("GET", ".metadata.json", "slow-body", "0"),      # past s3.request-timeout-ms: a timeout
])
def test_transient_faults_are_retried_and_commit_once(s3, proxy, table, method, path, kind, cache_tables):
    d, location = table
    req = request(s3, location, f"k-{kind}", [1, 2, 3])
    proxy.add(method, path, kind, count=2)
    status, _, receipt = d.commit(NS, "t", req.body())
    assert status == 200, receipt
    snaps = snapshots(s3, location)
    assert [s["summary"]["icecommit.idempotency-keys"] for s in snaps] == [f"k-{kind}"], snaps
    if method != "HEAD" or path != ".parquet":
        assert proxy.injected[kind] == 2, proxy.injected
        assert storage_retries(d.url) >= 1
    # The same key again: the same answer, nothing new.
    status, _, again = d.commit(NS, "t", req.body())
    assert status == 200 and again["snapshot-id"] == receipt["snapshot-id"]
    assert len(snapshots(s3, location)) == 1


def test_store_down_longer_than_the_retries_is_a_retryable_503(s3, proxy, table):
    d, location = table
    req = request(s3, location, "down", [7])
    proxy.add("PUT", "/snap-", "slowdown", count=1000)
    status, headers, answer = d.commit(NS, "t", req.body())
    assert status == 503, answer
    assert headers.get("Retry-After")
    assert answer["error"]["type"] == "storage-unavailable", answer
    assert "SlowDown" in answer["error"]["message"] and "gave up after 4 attempts" in answer["error"]["message"]
    assert snapshots(s3, location) == []
    # No manifest list of a failed attempt is left behind.
    assert not [k for k in list_keys(s3, s3_key(s3, location) + "/metadata/") if "/snap-" in k]
    proxy.clear()
    status, _, receipt = d.commit(NS, "t", req.body())
    assert status == 200, receipt
    assert len(snapshots(s3, location)) == 1


def test_expired_token_is_refreshed_by_reloading(s3, proxy, table):
    """An ExpiredToken answer is transient: the attempt reloads the table (where a catalog
    vends fresh credentials) and goes on."""
    d, location = table
    req = request(s3, location, "expired", [9])
    proxy.add("PUT", "/snap-", "expired-token", count=1)
    status, _, receipt = d.commit(NS, "t", req.body())
    assert status == 200, receipt
    assert proxy.injected["expired-token"] == 1
    assert len(snapshots(s3, location)) == 1


def test_denied_access_names_the_store_code_bucket_and_key(s3, proxy, table):
    d, location = table
    req = request(s3, location, "denied", [5])
    proxy.add("GET", ".parquet", "access-denied", count=1)
    status, _, answer = d.commit(NS, "t", req.body())
    assert status == 403, answer
    message = answer["error"]["message"]
    assert answer["error"]["type"] == "storage-access-denied"
    assert "AccessDenied" in message and f"bucket '{s3['bucket']}'" in message and ".parquet" in message, message
    assert s3["secret_key"] not in message
    assert snapshots(s3, location) == []


def test_too_large_staged_manifest_is_413(s3, proxy, table):
    """A staged manifest larger than storage.max-manifest-bytes is refused by its Content-Length
    (413), not downloaded and then judged."""
    d, location = table
    key = f"{s3_key(s3, location)}/metadata/staged-huge.avro"
    assert s3_request(s3, "PUT", key, body=b"\0" * (80 << 20))[0] == 200
    status, _, answer = d.commit(NS, "t", {"idempotency-key": "huge",
                                           "staged-manifests": [f"s3://{s3['bucket']}/{key}"]})
    assert status == 413, answer
    assert "above the limit of 67108864 bytes" in answer["error"]["message"], answer
    assert snapshots(s3, location) == []
