# SPDX-License-Identifier: Apache-2.0
"""The embedded catalog on a bucket (catalog.warehouse = s3://...), no catalog service: tables in
the Hadoop layout in SeaweedFS, each vN.metadata.json created with If-None-Match: *. Three
daemons race on one table with data-files (Parquet written by pyarrow straight to the bucket):
0 duplicates, 0 lost, every version file created once; Iceberg Java (by metadata location,
S3FileIO) and PyIceberg (pyarrow's S3 filesystem) read every row."""
import collections
import json
import random
import threading
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from conftest import Daemon, http, make_workdir, peer, s3_key, s3_peer_env, s3_request
from writers import run_writers, stop_daemon

NS = "bkt"
SCHEMA = {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"},
]}
PARQUET_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"}),
                            pa.field("data", pa.string(), metadata={b"PARQUET:field_id": b"2"})])


@pytest.fixture
def warehouse(s3):
    return f"s3://{s3['bucket']}/{uuid.uuid4().hex[:12]}/wh"


def settings(s3, **extra):
    return {"s3.endpoint": s3["endpoint"], "s3.path-style-access": "true", "client.region": s3["region"],
            "s3.access-key-id": s3["access_key"], "s3.secret-access-key": s3["secret_key"],
            "commit.min-backoff-ms": "5", "commit.max-backoff-ms": "200", "commit.max-attempts": "500", **extra}


def pyarrow_s3(s3):
    return pafs.S3FileSystem(access_key=s3["access_key"], secret_key=s3["secret_key"], region=s3["region"],
                             endpoint_override=s3["endpoint"].removeprefix("http://"), scheme="http")


def write_parquet(s3, fs, location, ids):
    key = f"{s3_key(s3, location)}/data/{uuid.uuid4().hex}.parquet"
    table = pa.Table.from_arrays([pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids])],
                                 schema=PARQUET_SCHEMA)
    pq.write_table(table, f"{s3['bucket']}/{key}", filesystem=fs)
    return f"s3://{s3['bucket']}/{key}", fs.get_file_info(f"{s3['bucket']}/{key}").size


class DataFilesRequest:
    """A writer request of one described Parquet file (the shape writers.send_until_answered takes)."""

    def __init__(self, key, path, size, ids):
        self.key, self.ids = key, ids
        self.desc = {"file-path": path, "file-format": "parquet", "record-count": len(ids),
                     "file-size-in-bytes": size}
        self.status = self.receipt = None
        self.posts = 0
        self.no_answer = collections.Counter()

    def body(self):
        return {"idempotency-key": self.key, "data-files": [self.desc]}


def list_keys(s3, prefix):
    status, body = s3_request(s3, "GET", f"?list-type=2&max-keys=1000&prefix={prefix.replace('/', '%2F')}")
    assert status == 200, body
    return [k.split("</Key>")[0] for k in body.decode().split("<Key>")[1:]]


def list_requests(url):
    _, _, text = http("GET", url + "/metrics")
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith('icecommit_storage_requests_total{operation="list"'))


def test_tables_and_commits_on_a_bucket(s3, warehouse):
    d = Daemon(warehouse, make_workdir("icecommit-bucket-"), settings(s3))
    try:
        status, _, created = http("POST", f"{d.url}/v1/namespaces/{NS}/tables", {"name": "t", "schema": SCHEMA})
        assert status == 201, created
        location = f"{warehouse}/{NS}/t"
        assert created["metadata-location"] == f"{location}/metadata/v1.metadata.json", created
        status, _, again = http("POST", f"{d.url}/v1/namespaces/{NS}/tables", {"name": "t", "schema": SCHEMA})
        assert status == 200 and again["created"] is False, again
        status, _, body = http("POST", f"{d.url}/v1/namespaces", {"namespace": [NS]})
        assert status == 200 and body["created"] is False, body      # the marker object exists
        assert s3_request(s3, "HEAD", f"{s3_key(s3, warehouse)}/{NS}/")[0] == 200

        lists_before = list_requests(d.url)
        fs = pyarrow_s3(s3)
        path, size = write_parquet(s3, fs, location, [1, 2, 3])
        req = DataFilesRequest("one", path, size, [1, 2, 3])
        status, _, receipt = d.commit(NS, "t", req.body())
        assert status == 200, receipt
        assert receipt["snapshot-first-row-id"] == 0 and receipt["sequence-number"] == 1
        keys = list_keys(s3, s3_key(s3, location) + "/metadata/")
        assert f"{s3_key(s3, location)}/metadata/v2.metadata.json" in keys
        status, hint = s3_request(s3, "GET", f"{s3_key(s3, location)}/metadata/version-hint.text")
        assert status == 200 and hint == b"2"

        # A lagging hint is stepped over (HEAD v<N+1>), as Java's HadoopTableOperations does.
        assert s3_request(s3, "PUT", f"{s3_key(s3, location)}/metadata/version-hint.text", body=b"1")[0] == 200
        status, _, receipt = d.commit(NS, "t", DataFilesRequest("two", *write_parquet(s3, fs, location, [4]), [4]).body())
        assert status == 200 and receipt["sequence-number"] == 2, receipt
        assert s3_request(s3, "GET", f"{s3_key(s3, location)}/metadata/version-hint.text")[1] == b"3"

        # Version discovery reads the hint and HEADs v<N+1>: commits never list the prefix.
        assert list_requests(d.url) == lists_before > 0
    finally:
        d.stop()


def test_three_daemons_race_on_a_bucket(s3, warehouse):
    workdir = make_workdir("icecommit-bucket-race-")
    fs = pyarrow_s3(s3)
    daemons = [Daemon(warehouse, workdir, settings(s3)) for _ in range(3)]
    try:
        status, _, created = http("POST", f"{daemons[0].url}/v1/namespaces/{NS}/tables",
                                  {"name": "race", "schema": SCHEMA})
        assert status == 201, created
        location = f"{warehouse}/{NS}/race"
        reqs = []
        for i in range(90):
            ids = [i * 10 + k for k in range(3)]
            reqs.append(DataFilesRequest(f"race-{i:03d}", *write_parquet(s3, fs, location, ids), ids))
        pick = random.Random(5)
        lock = threading.Lock()

        def pick_url():
            with lock:
                return pick.choice([d.url for d in daemons])

        run_writers(reqs, pick_url, NS, "race", writers=9, pace=(0.0, 0.02), seed=7, impatient=0.2)
    finally:
        codes = [stop_daemon(d) for d in daemons]
    assert codes == [0, 0, 0], codes
    bad = [(r.key, r.status, r.receipt) for r in reqs if r.status != 200]
    assert not bad, bad[:5]

    # Every version file exists once, consecutively; the last one holds every key exactly once.
    keys = list_keys(s3, s3_key(s3, location) + "/metadata/v")
    versions = sorted(int(k.rsplit("/v", 1)[1].split(".")[0]) for k in keys if k.endswith(".metadata.json"))
    assert versions == list(range(1, len(versions) + 1)), versions
    last = f"{location}/metadata/v{versions[-1]}.metadata.json"
    metadata = json.loads(s3_request(s3, "GET", s3_key(s3, last))[1])
    recorded = collections.Counter(k for s in metadata["snapshots"]
                                   for k in s["summary"].get("icecommit.idempotency-keys", "").split(",") if k)
    assert set(recorded) == {r.key for r in reqs} and max(recorded.values()) == 1, recorded.most_common(3)
    assert len(metadata["snapshots"]) == versions[-1] - 1
    all_ids = sorted(i for r in reqs for i in r.ids)
    print(f"\n[bucket race] requests={len(reqs)} versions={versions[-1]} snapshots={len(metadata['snapshots'])} "
          f"posts={sum(r.posts for r in reqs)} found-in-history={sum(1 for r in reqs if r.found_in_history)}")

    # Iceberg Java, by metadata location through S3FileIO.
    env = s3_peer_env(s3, keys=True)
    dump = peer("dump", "--metadata", last, env=env)
    ids = collections.Counter(r["id"] for r in dump["rows"])
    assert sorted(ids) == all_ids and max(ids.values()) == 1, "duplicates or lost rows"
    assert sorted(r["_row_id"] for r in dump["rows"]) == list(range(len(all_ids)))
    assert dump["next-row-id"] == len(all_ids)
    # Every receipt names the row ids, also those of keys found in the history (an impatient
    # writer's retry after another daemon committed it): rebuilt from the table.
    for r in reqs:
        rec = r.receipt["manifests"][0]
        got = sorted(row["_row_id"] for row in dump["rows"] if row["id"] in r.ids)
        assert got == list(range(rec["first-row-id"], rec["first-row-id"] + 3)), (r.key, got, rec)

    # PyIceberg, through pyarrow's S3 filesystem.
    from pyiceberg.table import StaticTable
    table = StaticTable.from_metadata(last, properties={
        "s3.endpoint": s3["endpoint"], "s3.access-key-id": s3["access_key"],
        "s3.secret-access-key": s3["secret_key"], "s3.region": s3["region"], "s3.path-style-access": "true",
        "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    rows = table.scan().to_arrow()
    assert sorted(rows.column("id").to_pylist()) == all_ids
