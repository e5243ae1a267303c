# SPDX-License-Identifier: Apache-2.0
"""Commits of described data files (`data-files`): Parquet files written by pyarrow (no Iceberg
library), committed by description; icecommitd writes their manifest. Checked with fastavro (the
manifest, field by field and id by id), Iceberg Java (every row and its _row_id), PyIceberg (the
scan); bad descriptions are refused with a 4xx that says why, and leave the table as it was."""
import os
import struct
import uuid

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import BACKENDS, backend_catalog, is_copy_of, peer, pyiceberg_table


@pytest.fixture(params=BACKENDS)
def catalog(request):
    return backend_catalog(request)

# Parquet columns carry Iceberg field ids, so Iceberg readers map them without a name mapping.
ID = pa.field("id", pa.int64(), nullable=False, metadata={b"PARQUET:field_id": b"1"})
DATA = pa.field("data", pa.string(), metadata={b"PARQUET:field_id": b"2"})
BUCKET = pa.field("bucket", pa.int32(), metadata={b"PARQUET:field_id": b"3"})


def write_parquet(location, ids, bucket=None):
    """Writes rows id, data="row-<id>" (and bucket) to <location>/data/<uuid>.parquet."""
    path = os.path.join(location.removeprefix("file:"), "data", f"{uuid.uuid4().hex}.parquet")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cols = [pa.array(ids, pa.int64()), pa.array([f"row-{i}" for i in ids], pa.string())]
    fields = [ID, DATA]
    if bucket is not None:
        cols.append(pa.array([bucket] * len(ids), pa.int32()))
        fields.append(BUCKET)
    pq.write_table(pa.Table.from_arrays(cols, schema=pa.schema(fields)), path)
    return path


def describe(path, ids, partition=None, stats=True):
    d = {"file-path": path, "file-format": "parquet", "record-count": len(ids),
         "file-size-in-bytes": os.path.getsize(path)}
    if partition is not None:
        d["partition"] = partition
    if stats:
        d["value-counts"] = {"keys": [1, 2], "values": [len(ids), len(ids)]}
        d["null-value-counts"] = {"keys": [1, 2], "values": [0, 0]}
        d["lower-bounds"] = {"keys": [1, 2], "values": [min(ids), f"row-{min(ids)}"]}
        d["upper-bounds"] = {"keys": [1, 2], "values": [max(ids), f"row-{max(ids)}"]}
    return d


def create(uri, version=3, partitioned=False):
    name = "df_" + uuid.uuid4().hex[:10]
    args = ["create-table", "--uri", uri, "--table", f"ns.{name}", "--format-version", version]
    created = peer(*args, *(["--partitioned"] if partitioned else []))
    return name, created["location"]


def read_manifest(location):
    with open(location.removeprefix("file:"), "rb") as f:
        reader = fastavro.reader(f)
        return reader.metadata, reader.writer_schema, list(reader)


def field_ids(record_schema):
    return {f["name"]: f["field-id"] for f in record_schema["fields"]}


def nonnull(t):
    return next(x for x in t if x != "null") if isinstance(t, list) else t


# Spec "Manifests": field ids of manifest_entry and data_file (v3 adds 142, 144, 145).
ENTRY_IDS = {"status": 0, "snapshot_id": 1, "sequence_number": 3, "file_sequence_number": 4, "data_file": 2}
DATA_FILE_IDS_V2 = {"content": 134, "file_path": 100, "file_format": 101, "partition": 102, "record_count": 103,
                    "file_size_in_bytes": 104, "column_sizes": 108, "value_counts": 109, "null_value_counts": 110,
                    "nan_value_counts": 137, "lower_bounds": 125, "upper_bounds": 128, "key_metadata": 131,
                    "split_offsets": 132, "equality_ids": 135, "sort_order_id": 140, "referenced_data_file": 143}
DATA_FILE_IDS_V3 = dict(DATA_FILE_IDS_V2, first_row_id=142, content_offset=144, content_size_in_bytes=145)
MAP_IDS = {"column_sizes": (117, 118), "value_counts": (119, 120), "null_value_counts": (121, 122),
           "nan_value_counts": (138, 139), "lower_bounds": (126, 127), "upper_bounds": (129, 130)}


def check_manifest_schema(schema, version, partition_fields):
    assert field_ids(schema) == ENTRY_IDS
    df = nonnull(next(f for f in schema["fields"] if f["name"] == "data_file")["type"])
    assert field_ids(df) == (DATA_FILE_IDS_V3 if version == 3 else DATA_FILE_IDS_V2)
    for f in df["fields"]:
        if f["name"] in MAP_IDS:
            arr = nonnull(f["type"])
            assert arr["logicalType"] == "map"
            assert field_ids(arr["items"]) == dict(zip(("key", "value"), MAP_IDS[f["name"]]))
        if f["name"] == "split_offsets":
            assert nonnull(f["type"])["element-id"] == 133
        if f["name"] == "partition":
            assert [(p["name"], p["field-id"], p["type"]) for p in f["type"]["fields"]] == partition_fields
        # Required fields are plain types, optional ones unions with null (Java's layout).
        required = f["name"] in ("content", "file_path", "file_format", "partition", "record_count",
                                 "file_size_in_bytes")
        assert isinstance(f["type"], list) != required, f


def test_v3_unpartitioned_and_partitioned_by_description(catalog, daemon):
    uri = catalog["uri"]

    # --- unpartitioned: two files, statistics for id (long) and data (string) -------------
    name, location = create(uri)
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 4, "--start-id", 0)  # next-row-id 4
    ids_a, ids_b = list(range(100, 110)), list(range(200, 205))
    a, b = write_parquet(location, ids_a), write_parquet(location, ids_b)
    status, _, receipt = daemon.commit("ns", name, {
        "idempotency-key": "df-unpart", "data-files": [describe(a, ids_a), describe(b, ids_b, stats=False)]})
    assert status == 200, receipt
    assert receipt["snapshot-first-row-id"] == 4 and receipt["sequence-number"] == 2
    [m] = receipt["manifests"]
    assert m["location"].startswith(location + "/metadata/") and m["location"].endswith("-m0.avro")
    assert (m["added-files"], m["added-rows"], m["first-row-id"], m["last-row-id"]) == (2, 15, 4, 18)
    assert m["data-files"] == [
        {"location": a, "record-count": 10, "first-row-id": 4, "last-row-id": 13, "last-updated-sequence-number": 2},
        {"location": b, "record-count": 5, "first-row-id": 14, "last-row-id": 18, "last-updated-sequence-number": 2}]

    meta, schema, entries = read_manifest(m["location"])
    assert meta["format-version"] == "3" and meta["content"] == "data"
    assert meta["partition-spec-id"] == "0" and meta["partition-spec"] == "[]"
    assert meta["avro.codec"] == "deflate"
    assert '"name":"id"' in meta["schema"] and '"name":"data"' in meta["schema"]
    check_manifest_schema(schema, 3, [])
    assert len(entries) == 2
    for e in entries:
        assert e["status"] == 1
        assert e["snapshot_id"] is None and e["sequence_number"] is None and e["file_sequence_number"] is None
        assert e["data_file"]["first_row_id"] is None and e["data_file"]["content"] == 0
        assert e["data_file"]["file_format"] == "PARQUET" and e["data_file"]["partition"] == {}
    da, db = entries[0]["data_file"], entries[1]["data_file"]
    assert (da["file_path"], da["record_count"], da["file_size_in_bytes"]) == (a, 10, os.path.getsize(a))
    assert da["value_counts"] == [{"key": 1, "value": 10}, {"key": 2, "value": 10}]
    assert da["null_value_counts"] == [{"key": 1, "value": 0}, {"key": 2, "value": 0}]
    # Binary single values (spec Appendix D): long = 8 bytes little-endian, string = UTF-8.
    assert da["lower_bounds"] == [{"key": 1, "value": struct.pack("<q", 100)}, {"key": 2, "value": b"row-100"}]
    assert da["upper_bounds"] == [{"key": 1, "value": struct.pack("<q", 109)}, {"key": 2, "value": b"row-109"}]
    assert db["file_path"] == b and db["value_counts"] is None and db["lower_bounds"] is None

    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert dump["next-row-id"] == 19
    rows = {r["id"]: r for r in dump["rows"]}
    assert len(rows) == 19
    for pos, i in enumerate(ids_a + ids_b):     # first-row-id of the snapshot + position order
        assert rows[i]["_row_id"] == 4 + pos and rows[i]["_last_updated_sequence_number"] == 2, rows[i]
        assert rows[i]["data"] == f"row-{i}"
    t = pyiceberg_table(catalog, f"ns.{name}")
    assert t.scan().to_arrow().num_rows == 19
    # Lower/upper bounds are used: PyIceberg prunes file b for id < 150 and reads all of a.
    assert t.scan(row_filter="id < 150").to_arrow().num_rows == 14

    # --- partitioned: identity(bucket), one file per bucket ------------------------------
    name, location = create(uri, partitioned=True)
    ids_c, ids_d = [1, 2, 3], [4, 5]
    c, d = write_parquet(location, ids_c, bucket=7), write_parquet(location, ids_d, bucket=9)
    status, _, receipt = daemon.commit("ns", name, {
        "idempotency-key": "df-part", "data-files": [describe(c, ids_c, partition=[7]),
                                                     dict(describe(d, ids_d, partition=[9]), **{"spec-id": 0})]})
    assert status == 200, receipt
    [m] = receipt["manifests"]
    assert (m["first-row-id"], m["last-row-id"]) == (0, 4)
    meta, schema, entries = read_manifest(m["location"])
    check_manifest_schema(schema, 3, [("bucket", 1000, ["null", "int"])])
    assert meta["partition-spec"] == '[{"name":"bucket","transform":"identity","source-id":3,"field-id":1000}]'
    assert [e["data_file"]["partition"] for e in entries] == [{"bucket": 7}, {"bucket": 9}]
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    files = dump["manifests"][0]["files"]
    assert [(f["path"], f["partition"], f["first-row-id"]) for f in files] == [(c, [7], 0), (d, [9], 3)]
    assert [(r["id"], r["bucket"], r["_row_id"]) for r in dump["rows"]] == [
        (1, 7, 0), (2, 7, 1), (3, 7, 2), (4, 9, 3), (5, 9, 4)]
    t = pyiceberg_table(catalog, f"ns.{name}")
    assert t.scan().to_arrow().num_rows == 5
    assert t.scan(row_filter="bucket = 9").to_arrow().num_rows == 2


def test_v2_table_and_staged_manifests_beside_data_files(catalog, daemon):
    uri = catalog["uri"]
    name, location = create(uri, version=2)
    staged = peer("stage", "--uri", uri, "--table", f"ns.{name}", "--files", 1, "--rows", 3, "--start-id", 50)
    ids = [10, 11]
    path = write_parquet(location, ids)
    status, _, receipt = daemon.commit("ns", name, {
        "idempotency-key": "df-v2", "staged-manifests": [staged["manifest"]], "data-files": [describe(path, ids)]})
    assert status == 200, receipt
    assert receipt["snapshot-first-row-id"] is None
    staged_entry, ours = receipt["manifests"]
    assert is_copy_of(staged_entry, staged["manifest"]), staged_entry
    assert "staged-location" not in ours   # icecommitd's own, written for data-files
    assert ours["added-rows"] == 2 and "first-row-id" not in ours
    meta, schema, entries = read_manifest(ours["location"])
    assert meta["format-version"] == "2"
    check_manifest_schema(schema, 2, [])
    assert "first_row_id" not in field_ids(nonnull(schema["fields"][4]["type"]))
    dump = peer("dump", "--uri", uri, "--table", f"ns.{name}")
    assert sorted(r["id"] for r in dump["rows"]) == [10, 11, 50, 51, 52]
    assert all(r["_row_id"] is None for r in dump["rows"])


def test_bad_descriptions_are_refused_and_change_nothing(catalog, daemon):
    uri = catalog["uri"]
    name, location = create(uri, partitioned=True)
    peer("append", "--uri", uri, "--table", f"ns.{name}", "--rows", 2, "--start-id", 0)
    ids = [1, 2]
    path = write_parquet(location, ids, bucket=1)
    good = describe(path, ids, partition=[1])
    size = good["file-size-in-bytes"]
    before = peer("dump", "--uri", uri, "--table", f"ns.{name}", "--no-rows")
    metadata_dir = os.path.join(location.removeprefix("file:"), "metadata")
    files_before = sorted(os.listdir(metadata_dir))
    outside = write_parquet(catalog["dir"], ids)

    cases = [
        # (description change, status, error type, message fragment)
        ({"record-count": -1}, 400, "bad-request", "'data-files'[0]: 'record-count' is required: an integer >= 0"),
        ({"file-size-in-bytes": "12"}, 400, "bad-request", "'file-size-in-bytes' is required: an integer > 0"),
        ({"file-format": "puffin"}, 400, "bad-request", "'file-format' 'puffin' is not a data file format"),
        ({"file-path": None}, 400, "bad-request", "'data-files'[0]: 'file-path' is required"),
        ({"value-counts": {"keys": [1], "values": [-3]}}, 400, "bad-request",
         "'value-counts' value 0 (field id 1) is -3, counts cannot be negative"),
        ({"colour": "red"}, 400, "bad-request", "'data-files'[0]: unknown field 'colour'"),
        ({"file-path": outside}, 422, "invalid-data-file", f"'data-files'[0] '{outside}' is outside the table location"),
        ({"file-path": path + ".missing"}, 422, "invalid-data-file", "does not exist"),
        ({"file-size-in-bytes": size + 1}, 422, "invalid-data-file",
         f"has {size} bytes on storage but file-size-in-bytes says {size + 1}"),
        ({"partition": []}, 422, "invalid-data-file", "'partition' has 0 values, partition spec 0 has 1 fields"),
        ({"partition": [1, 2]}, 422, "invalid-data-file", "'partition' has 2 values, partition spec 0 has 1 fields"),
        ({"partition": ["one"]}, 422, "invalid-data-file",
         "'partition'[0] (field 'bucket'): expected an integer from -2147483648 to 2147483647 for type int"),
        ({"spec-id": 5}, 422, "invalid-data-file", "partition spec 5 is not in the table"),
        ({"lower-bounds": {"keys": [77], "values": [1]}}, 422, "invalid-data-file",
         "'lower-bounds' has field id 77, which the table schema does not have"),
        ({"upper-bounds": {"keys": [1], "values": ["x"]}}, 422, "invalid-data-file",
         "'upper-bounds' value for field id 1: expected an integer for type long"),
        ({"column-sizes": {"keys": [9], "values": [1]}}, 422, "invalid-data-file",
         "'column-sizes' has field id 9, which the table schema does not have"),
    ]
    for k, (change, status, kind, message) in enumerate(cases):
        body = {"idempotency-key": f"bad-{k}", "data-files": [dict(good, **change)]}
        got, _, answer = daemon.commit("ns", name, body)
        assert got == status, (change, answer)
        assert answer["error"]["type"] == kind, (change, answer)
        assert message in answer["error"]["message"], (change, answer["error"]["message"])

    got, _, answer = daemon.commit("ns", name, {"idempotency-key": "bad-dup", "data-files": [good, good]})
    assert got == 400 and "'data-files'[1]: repeats the file-path of 'data-files'[0]" in answer["error"]["message"]
    got, _, answer = daemon.commit("ns", name, {"idempotency-key": "bad-none"})
    assert got == 400 and "nothing to commit" in answer["error"]["message"]

    after = peer("dump", "--uri", uri, "--table", f"ns.{name}", "--no-rows")
    assert after["current-snapshot-id"] == before["current-snapshot-id"]
    assert after["metadata-location"] == before["metadata-location"]
    assert sorted(os.listdir(metadata_dir)) == files_before   # no manifest left behind

    # The same description, valid, is then committed.
    got, _, receipt = daemon.commit("ns", name, {"idempotency-key": "good", "data-files": [good]})
    assert got == 200, receipt
    assert receipt["manifests"][0]["data-files"][0]["first-row-id"] == 2


def test_too_many_data_files_is_413(catalog):
    from conftest import Daemon
    d = Daemon(catalog["uri"], catalog["dir"], {"commit.max-data-files-per-request": "2"})
    try:
        files = [{"file-path": f"/x/{i}.parquet", "file-format": "parquet", "record-count": 1,
                  "file-size-in-bytes": 1} for i in range(3)]
        got, _, answer = d.commit("ns", "t", {"idempotency-key": "many", "data-files": files})
        assert got == 413 and answer["error"]["type"] == "too-many-data-files"
        assert "'data-files' lists 3 files, above the limit of 2" in answer["error"]["message"]
    finally:
        d.stop()
