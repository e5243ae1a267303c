# SPDX-License-Identifier: Apache-2.0
"""Avro interop of daemon/iceberg/ with independent implementations: fastavro (PyPI 1.13.1)
decodes the manifest lists our C code writes, field by field and field id by field id; fastavro
writes manifest lists and staged manifests shaped like Iceberg Java's (both codecs) and our C
readers must return the same values; a staged manifest written by Iceberg Java itself (the
tests/peers CLI) must read back with the values Java reported.

The C side is tests/tools/avro-tool.c (icecommit-avro-tool), found in ICECOMMIT_BUILD_DIR."""
import copy
import io
import json
import os
import shutil
import struct
import subprocess

import fastavro
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ICECOMMIT_BUILD_DIR", os.path.join(ROOT, "build"))
TOOL = os.path.join(BUILD, "tests", "tools", "icecommit-avro-tool")


def tool(*args, rc=0):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} is missing: build it (ninja -C {BUILD}) or set ICECOMMIT_BUILD_DIR")
    out = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert out.returncode == rc, f"{args}: rc={out.returncode} stdout={out.stdout} stderr={out.stderr}"
    return json.loads(out.stdout) if out.stdout.strip() else None


def avsc(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def hexs(b):
    return None if b is None else b.hex()


# ---- what Java writes: the v3 manifest_file schema (docs/design.md section 4.1) ---------------

V3_LIST_FIELDS = [  # (name, field id, Avro type as Java writes it)
    ("manifest_path", 500, "string"),
    ("manifest_length", 501, "long"),
    ("partition_spec_id", 502, "int"),
    ("content", 517, "int"),
    ("sequence_number", 515, "long"),
    ("min_sequence_number", 516, "long"),
    ("added_snapshot_id", 503, "long"),
    ("added_files_count", 504, "int"),
    ("existing_files_count", 505, "int"),
    ("deleted_files_count", 506, "int"),
    ("added_rows_count", 512, "long"),
    ("existing_rows_count", 513, "long"),
    ("deleted_rows_count", 514, "long"),
    ("partitions", 507, "array?"),
    ("key_metadata", 519, ["null", "bytes"]),
    ("first_row_id", 520, ["null", "long"]),
]
R508_FIELDS = [
    ("contains_null", 509, "boolean"),
    ("contains_nan", 518, ["null", "boolean"]),
    ("lower_bound", 510, ["null", "bytes"]),
    ("upper_bound", 511, ["null", "bytes"]),
]

# avro-tool write-list-v3 writes exactly these records.
EXPECTED_V3_RECORDS = [
    {"manifest_path": "s3://bucket/wh/ns/t/metadata/staged-a-m0.avro", "manifest_length": 7012,
     "partition_spec_id": 1, "content": 0, "sequence_number": 35, "min_sequence_number": 35,
     "added_snapshot_id": 987134631982734, "added_files_count": 3, "existing_files_count": 0,
     "deleted_files_count": 0, "added_rows_count": 375, "existing_rows_count": 0, "deleted_rows_count": 0,
     "partitions": [
         {"contains_null": False, "contains_nan": False, "lower_bound": struct.pack("<i", 10),
          "upper_bound": struct.pack("<i", 100)},
         {"contains_null": True, "contains_nan": None, "lower_bound": b"alpha", "upper_bound": None}],
     "key_metadata": None, "first_row_id": 1000},
    {"manifest_path": "s3://bucket/wh/ns/t/metadata/deletes-m1.avro", "manifest_length": 5000,
     "partition_spec_id": 0, "content": 1, "sequence_number": 34, "min_sequence_number": 10,
     "added_snapshot_id": 42, "added_files_count": 1, "existing_files_count": 2, "deleted_files_count": 3,
     "added_rows_count": 4, "existing_rows_count": 5, "deleted_rows_count": 6, "partitions": [],
     "key_metadata": b"\x00\x01\xfe\xff", "first_row_id": None},
    {"manifest_path": "s3://bucket/wh/ns/t/metadata/parent-m2.avro", "manifest_length": 9000,
     "partition_spec_id": 0, "content": 0, "sequence_number": 1, "min_sequence_number": 1,
     "added_snapshot_id": 7, "added_files_count": 0, "existing_files_count": 7, "deleted_files_count": 0,
     "added_rows_count": 0, "existing_rows_count": 75, "deleted_rows_count": 0, "partitions": None,
     "key_metadata": None, "first_row_id": 925},
]


def check_fields(fields, expected):
    assert [(f["name"], f["field-id"]) for f in fields] == [(n, i) for n, i, _ in expected]
    for f, (name, _, typ) in zip(fields, expected):
        if typ == "array?":
            continue
        assert f["type"] == typ, name
        if isinstance(typ, list):
            assert "default" in f and f["default"] is None, f"{name}: optional fields default to null"


def test_c_written_v3_list_decodes_with_fastavro(tmp_path):
    path = tmp_path / "snap-987134631982734-1-x.avro"
    tool("write-list-v3", path)

    with open(path, "rb") as f:
        r = fastavro.reader(f)
        records = list(r)
        meta = dict(r.metadata)
        codec = r.codec

    assert codec == "deflate"
    assert set(meta) == {"avro.schema", "avro.codec", "snapshot-id", "parent-snapshot-id", "sequence-number",
                         "first-row-id", "format-version", "iceberg.schema"}
    assert meta["snapshot-id"] == "987134631982734"
    assert meta["parent-snapshot-id"] == "987134631982733"
    assert meta["sequence-number"] == "35"
    assert meta["first-row-id"] == "1000"
    assert meta["format-version"] == "3"

    schema = json.loads(meta["avro.schema"])
    assert schema["type"] == "record" and schema["name"] == "manifest_file"
    check_fields(schema["fields"], V3_LIST_FIELDS)
    parts = schema["fields"][13]
    assert parts["type"][0] == "null" and parts["default"] is None
    array = parts["type"][1]
    assert array["type"] == "array" and array["element-id"] == 508
    assert array["items"]["type"] == "record" and array["items"]["name"] == "r508"
    check_fields(array["items"]["fields"], R508_FIELDS)

    # iceberg.schema: the Iceberg struct Java's SchemaParser writes for the manifest list.
    ice = json.loads(meta["iceberg.schema"])
    assert ice["type"] == "struct" and ice["schema-id"] == 0
    assert [f["id"] for f in ice["fields"]] == [i for _, i, _ in V3_LIST_FIELDS]
    assert [f["name"] for f in ice["fields"]] == [n for n, _, _ in V3_LIST_FIELDS]
    assert [f["required"] for f in ice["fields"]] == [True] * 13 + [False] * 3
    assert [f["type"] for f in ice["fields"] if isinstance(f["type"], str)] == \
        ["string", "long", "int", "int", "long", "long", "long", "int", "int", "int", "long", "long", "long",
         "binary", "long"]
    lst = ice["fields"][13]["type"]
    assert lst["type"] == "list" and lst["element-id"] == 508 and lst["element-required"] is True
    assert [(f["id"], f["name"], f["required"], f["type"]) for f in lst["element"]["fields"]] == [
        (509, "contains_null", True, "boolean"), (518, "contains_nan", False, "boolean"),
        (510, "lower_bound", False, "binary"), (511, "upper_bound", False, "binary")]

    assert records == EXPECTED_V3_RECORDS

    # And our own reader agrees with fastavro on the same bytes.
    got = tool("read-list", path)
    assert got["codec"] == "deflate"
    assert got["header"] == {"format_version": 3, "snapshot_id": 987134631982734,
                             "parent_snapshot_id": 987134631982733, "sequence_number": 35, "first_row_id": 1000}
    assert got["files"] == [tool_view(rec, 3) for rec in EXPECTED_V3_RECORDS]


# ---- fastavro writes, C reads -------------------------------------------------------------------

COUNT_NAMES = ["added_files_count", "existing_files_count", "deleted_files_count",
               "added_rows_count", "existing_rows_count", "deleted_rows_count"]
V1_COUNT_NAMES = ["added_data_files_count", "existing_data_files_count", "deleted_data_files_count",
                  "added_rows_count", "existing_rows_count", "deleted_rows_count"]


def tool_view(rec, version):
    """What avro-tool read-list prints for a manifest_file record written at `version`."""
    names = V1_COUNT_NAMES if version == 1 else COUNT_NAMES
    counts = [rec.get(n) for n in names]
    return {
        "manifest_path": rec["manifest_path"],
        "manifest_length": rec["manifest_length"],
        "partition_spec_id": rec["partition_spec_id"],
        "content": rec.get("content", 0),
        "sequence_number": rec.get("sequence_number", 0),
        "min_sequence_number": rec.get("min_sequence_number", 0),
        "added_snapshot_id": rec.get("added_snapshot_id"),
        # one unknown count makes them all unknown: never 0 (spec: null = "assume non-zero")
        "counts": None if any(c is None for c in counts) else dict(zip(COUNT_NAMES, counts)),
        "partitions": None if rec.get("partitions") is None else [
            {"contains_null": p["contains_null"], "contains_nan": p.get("contains_nan"),
             "lower_bound": hexs(p.get("lower_bound")), "upper_bound": hexs(p.get("upper_bound"))}
            for p in rec["partitions"]],
        "key_metadata": hexs(rec.get("key_metadata")),
        "first_row_id": rec.get("first_row_id") if version >= 3 else None,
    }


def write_fastavro(path, schema, records, codec, metadata):
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(copy.deepcopy(schema)), records, codec=codec, metadata=metadata)


def list_meta(version, first_row_id=None):
    meta = {"snapshot-id": "5", "parent-snapshot-id": "null", "sequence-number": "3" if version > 1 else "0",
            "format-version": str(version)}
    if version == 1:
        del meta["sequence-number"]
    if first_row_id is not None:
        meta["first-row-id"] = str(first_row_id)
    return meta


def v2_records():
    return [
        {"manifest_path": "file:/wh/t/metadata/a-m0.avro", "manifest_length": 6000, "partition_spec_id": 0,
         "content": 0, "sequence_number": 3, "min_sequence_number": 2, "added_snapshot_id": 5,
         "added_files_count": 2, "existing_files_count": 0, "deleted_files_count": 1, "added_rows_count": 20,
         "existing_rows_count": 0, "deleted_rows_count": 9,
         "partitions": [{"contains_null": True, "contains_nan": False, "lower_bound": b"\x01\x00\x00\x00",
                         "upper_bound": b"\x09\x00\x00\x00"}],
         "key_metadata": None},
        {"manifest_path": "file:/wh/t/metadata/d-m1.avro", "manifest_length": 300, "partition_spec_id": 2,
         "content": 1, "sequence_number": 2, "min_sequence_number": 2, "added_snapshot_id": 4,
         "added_files_count": 1, "existing_files_count": 0, "deleted_files_count": 0, "added_rows_count": 1,
         "existing_rows_count": 0, "deleted_rows_count": 0, "partitions": None, "key_metadata": b"k"},
    ]


@pytest.mark.parametrize("codec", ["deflate", "null"])
def test_fastavro_v3_list_reads_in_c(tmp_path, codec):
    records = [dict(r, first_row_id=(100 if r["content"] == 0 else None)) for r in v2_records()]
    path = tmp_path / "v3.avro"
    write_fastavro(path, avsc("proto/manifest_list_v3.avsc"), records, codec, list_meta(3, 100))
    got = tool("read-list", path)
    assert got["codec"] == codec
    assert got["header"] == {"format_version": 3, "snapshot_id": 5, "parent_snapshot_id": None,
                             "sequence_number": 3, "first_row_id": 100}
    assert got["files"] == [tool_view(r, 3) for r in records]


@pytest.mark.parametrize("codec", ["deflate", "null"])
def test_fastavro_v2_list_reads_in_c(tmp_path, codec):
    records = v2_records()
    path = tmp_path / "v2.avro"
    write_fastavro(path, avsc("proto/manifest_list_v2.avsc"), records, codec, list_meta(2))
    got = tool("read-list", path)
    assert got["header"]["format_version"] == 2 and got["header"]["first_row_id"] is None
    assert got["files"] == [tool_view(r, 2) for r in records]


def test_fastavro_v1_list_reads_in_c_by_field_id(tmp_path):
    """v1 names fields differently (added_data_files_count) and lets counts be null."""
    records = [
        {"manifest_path": "file:/wh/t/metadata/old-m0.avro", "manifest_length": 1234, "partition_spec_id": 0,
         "added_snapshot_id": 17, "added_data_files_count": 2, "existing_data_files_count": 1,
         "deleted_data_files_count": 0, "partitions": [{"contains_null": False, "lower_bound": b"a",
                                                        "upper_bound": b"z"}],
         "added_rows_count": 10, "existing_rows_count": 5, "deleted_rows_count": 0, "key_metadata": None},
        {"manifest_path": "file:/wh/t/metadata/old-m1.avro", "manifest_length": 99, "partition_spec_id": 0,
         "added_snapshot_id": None, "added_data_files_count": 1, "existing_data_files_count": 0,
         "deleted_data_files_count": 0, "partitions": None,
         "added_rows_count": None, "existing_rows_count": None, "deleted_rows_count": None, "key_metadata": None},
    ]
    path = tmp_path / "v1.avro"
    write_fastavro(path, avsc("tests/data/manifest_list_v1.avsc"), records, "deflate", list_meta(1))
    got = tool("read-list", path)
    assert got["header"]["format_version"] == 1 and got["header"]["sequence_number"] == 0
    assert got["files"] == [tool_view(r, 1) for r in records]
    assert got["files"][1]["counts"] is None


# ---- staged manifests written by fastavro in Java's shape ---------------------------------------

PARTITION_FIELDS = [
    {"name": "id_bucket", "type": ["null", "int"], "default": None, "field-id": 1000},
    {"name": "ts_day", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None,
     "field-id": 1001},
    {"name": "region", "type": ["null", "string"], "default": None, "field-id": 1002},
    {"name": "ts", "type": ["null", {"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": True}],
     "default": None, "field-id": 1003},
]


def entry_schema(version, partition_fields):
    schema = avsc(f"proto/manifest_entry_v{version}.avsc")
    data_file = schema["fields"][4]["type"]
    part = next(f for f in data_file["fields"] if f["field-id"] == 102)
    part["type"]["fields"] = partition_fields
    return schema


def data_file(version, path, rows, size, partition, **extra):
    df = {"content": 0, "file_path": path, "file_format": "PARQUET", "partition": partition,
          "record_count": rows, "file_size_in_bytes": size,
          "column_sizes": [{"key": 1, "value": 100}], "value_counts": [{"key": 1, "value": rows}],
          "null_value_counts": [{"key": 1, "value": 0}], "nan_value_counts": None,
          "lower_bounds": [{"key": 1, "value": b"\x00" * 8}], "upper_bounds": [{"key": 1, "value": b"\xff" * 8}],
          "key_metadata": None, "split_offsets": [4], "equality_ids": None, "sort_order_id": 0,
          "referenced_data_file": None}
    if version >= 3:
        df.update(first_row_id=None, content_offset=None, content_size_in_bytes=None)
    df.update(extra)
    return df


def entry(df, status=1, **extra):
    e = {"status": status, "snapshot_id": None, "sequence_number": None, "file_sequence_number": None,
         "data_file": df}
    e.update(extra)
    return e


def manifest_meta(version, content="data"):
    return {"schema": json.dumps({"type": "struct", "schema-id": 0, "fields": [
                {"id": 1, "name": "id", "required": True, "type": "long"}]}),
            "partition-spec": "[]", "partition-spec-id": "0", "format-version": str(version),
            "content": content, "iceberg.schema": "{}"}


@pytest.mark.parametrize("version,codec", [(3, "deflate"), (3, "null"), (2, "deflate"), (2, "null")])
def test_fastavro_staged_manifest_reads_in_c(tmp_path, version, codec):
    parts = [
        {"id_bucket": 5, "ts_day": 19000, "region": "eu-west", "ts": -1},
        {"id_bucket": -3, "ts_day": None, "region": "eu", "ts": 1700000000000000},
        {"id_bucket": 300, "ts_day": 18999, "region": "été", "ts": None},
    ]
    files = [(f"s3://b/wh/t/data/f{i}.parquet", 100 * (i + 1), 4096 + i) for i in range(3)]
    records = [entry(data_file(version, p, n, s, part)) for (p, n, s), part in zip(files, parts)]
    path = tmp_path / "staged-m0.avro"
    write_fastavro(path, entry_schema(version, PARTITION_FIELDS), records, codec, manifest_meta(version))

    got = tool("read-manifest", path, "s3://b/wh/t/metadata/staged-m0.avro")
    assert got["format_version"] == version and got["content"] == 0 and got["partition_spec_id"] == 0
    assert json.loads(got["schema"])["fields"][0]["name"] == "id"
    assert got["partition_spec"] == "[]"
    assert got["added_files_count"] == 3
    assert got["added_rows_count"] == 600
    assert got["added_files_size"] == 3 * 4096 + 3
    assert got["files"] == [{"file_path": p, "file_format": "PARQUET", "record_count": n, "file_size_in_bytes": s}
                            for p, n, s in files]
    # Java's PartitionSummary: contains_nan false for non-float types, bounds in single-value
    # binary serialization (little-endian ints and longs, UTF-8 strings compared bytewise).
    assert got["partitions"] == [
        {"contains_null": False, "contains_nan": False, "lower_bound": struct.pack("<i", -3).hex(),
         "upper_bound": struct.pack("<i", 300).hex()},
        {"contains_null": True, "contains_nan": False, "lower_bound": struct.pack("<i", 18999).hex(),
         "upper_bound": struct.pack("<i", 19000).hex()},
        {"contains_null": False, "contains_nan": False, "lower_bound": b"eu".hex(),
         "upper_bound": "été".encode().hex()},
        {"contains_null": True, "contains_nan": False, "lower_bound": struct.pack("<q", -1).hex(),
         "upper_bound": struct.pack("<q", 1700000000000000).hex()},
    ]


def test_fastavro_unpartitioned_and_float_partitions(tmp_path):
    path = tmp_path / "u.avro"
    write_fastavro(path, entry_schema(3, []), [entry(data_file(3, "s3://b/a.parquet", 1, 2, {}))], "deflate",
                   manifest_meta(3))
    assert tool("read-manifest", path)["partitions"] == []       # Java writes an empty array

    fields = [{"name": "score", "type": ["null", "double"], "default": None, "field-id": 1000}]
    write_fastavro(path, entry_schema(3, fields), [entry(data_file(3, "s3://b/a.parquet", 1, 2, {"score": 0.5}))],
                   "deflate", manifest_meta(3))
    assert tool("read-manifest", path)["partitions"] is None     # not summarized: null in the list


@pytest.mark.parametrize("change,message", [
    (lambda r: r[1].update(status=0), "entry 1 (s3://b/f1.parquet): status EXISTING, only ADDED entries can be staged"),
    (lambda r: r[1].update(status=2), "entry 1 (s3://b/f1.parquet): status DELETED"),
    (lambda r: r[1].update(snapshot_id=99), "entry 1 (s3://b/f1.parquet): snapshot_id is 99"),
    (lambda r: r[1].update(sequence_number=4), "entry 1 (s3://b/f1.parquet): sequence_number is 4"),
    (lambda r: r[1].update(file_sequence_number=4), "entry 1 (s3://b/f1.parquet): file_sequence_number is 4"),
    (lambda r: r[1]["data_file"].update(first_row_id=0), "entry 1 (s3://b/f1.parquet): first_row_id is 0"),
    (lambda r: r[1]["data_file"].update(content=2), "entry 1 (s3://b/f1.parquet): content 2 (equality deletes)"),
    (lambda r: r[1]["data_file"].update(record_count=-1), "entry 1 (s3://b/f1.parquet): record_count is -1"),
    (lambda r: r.clear(), "manifest has no entries"),
])
def test_staging_rules_on_fastavro_manifests(tmp_path, change, message):
    records = [entry(data_file(3, f"s3://b/f{i}.parquet", 10, 20, {})) for i in range(3)]
    change(records)
    path = tmp_path / "bad.avro"
    write_fastavro(path, entry_schema(3, []), records, "deflate", manifest_meta(3))
    got = tool("read-manifest", path, "s3://b/m.avro", rc=1)
    assert got["error"].startswith("manifest 's3://b/m.avro': ")
    assert message in got["error"]


@pytest.mark.parametrize("meta,message", [
    ({"format-version": "0"}, "format-version 0 is not supported (1, 2 or 3)"),
    ({"content": "deletes"}, "entry 0 (s3://b/a.parquet): a data file in a delete manifest"),
])
def test_staging_rules_on_metadata(tmp_path, meta, message):
    path = tmp_path / "bad.avro"
    write_fastavro(path, entry_schema(3, []), [entry(data_file(3, "s3://b/a.parquet", 1, 2, {}))], "null",
                   dict(manifest_meta(3), **meta))
    assert message in tool("read-manifest", path, rc=1)["error"]


def test_snappy_codec_is_refused_by_name(tmp_path):
    path = tmp_path / "snappy.avro"
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(avsc("proto/manifest_list_v2.avsc")), [], codec="null")
    data = buf.getvalue()
    # Same length as "null": rewrite the codec name in the header to a codec we do not read.
    data = data.replace(b"\x14avro.codec\x08null", b"\x14avro.codec\x08zstd", 1)
    path.write_bytes(data)
    assert "unknown codec 'zstd'" in tool("read-list", path, rc=1)["error"]


# ---- a staged manifest written by Iceberg Java itself --------------------------------------------

def java_available():
    return shutil.which("java") and os.path.exists(os.path.join(ROOT, "tests", "peers", "peer.sh"))


@pytest.mark.skipif(not java_available(), reason="Iceberg Java peer (tests/peers) not available")
def test_java_staged_manifest_reads_in_c(catalog):
    from conftest import peer  # the fixtures module of tests/integration

    table = "avro_interop.t_staged"
    peer("create-table", "--uri", catalog["uri"], "--table", table, "--partitioned", "--if-not-exists")
    staged = peer("stage", "--uri", catalog["uri"], "--table", table, "--files", 2, "--rows", 5,
                  "--start-id", 100, "--bucket", 7)
    location = staged["manifest"]
    local = location[len("file:"):] if location.startswith("file:") else location
    assert os.path.getsize(local) == staged["manifest-length"]

    got = tool("read-manifest", local, location)
    assert got["format_version"] == staged["format-version"] == 3
    assert got["content"] == 0
    assert got["partition_spec_id"] == staged["partition-spec-id"]
    assert got["added_files_count"] == staged["added-files"] == 2
    assert got["added_rows_count"] == staged["added-rows"] == 10
    assert [(f["file_path"], f["record_count"], f["file_size_in_bytes"]) for f in got["files"]] == \
        [(f["path"], f["record-count"], f["file-size-in-bytes"]) for f in staged["data-files"]]
    assert all(f["file_format"].upper() == "PARQUET" for f in got["files"])
    assert got["added_files_size"] == sum(f["file-size-in-bytes"] for f in staged["data-files"])
    # identity(bucket) over an int column, every row in bucket 7
    assert got["partitions"] == [{"contains_null": False, "contains_nan": False,
                                  "lower_bound": struct.pack("<i", 7).hex(),
                                  "upper_bound": struct.pack("<i", 7).hex()}]
    spec = json.loads(got["partition_spec"])
    assert [(f["name"], f["transform"], f["source-id"]) for f in spec] == [("bucket", "identity", 3)]
    assert [f["name"] for f in json.loads(got["schema"])["fields"]] == ["id", "data", "bucket"]
