#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the seed corpora of tests/fuzz: valid manifest lists and staged manifests (from
Iceberg Java via tests/data, from our writer via icecommit-avro-tool, from fastavro in Java's
shapes, both codecs) plus truncated and corrupted variants; Parquet files written by pyarrow
(also copied to tests/data/parquet/ for the unit tests) and damaged footers; Puffin files
and deletion vectors from Iceberg Java's test resources (tests/data/puffin/) and damaged copies. Crashers found by libFuzzer are
added by hand as crash-<sha1> and never regenerated.

usage: .venv/bin/python tests/fuzz/make-corpus.py BUILD_DIR [CORPUS...]   (default: all)"""
import io
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

import fastavro

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def avsc(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return json.load(f)


def fast(schema, records, codec, meta):
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec, metadata=meta, sync_interval=200)
    return buf.getvalue()


def variants(name, data):
    """The file, then damaged copies: cut in the header, in a block, before the last sync;
    a flipped byte in the metadata, in the data, in the sync marker."""
    out = {name: data}
    n = len(data)
    for label, cut in (("cut-header", 20), ("cut-middle", n // 2), ("cut-sync", n - 8)):
        out[f"{name}-{label}"] = data[:cut]
    for label, at in (("flip-meta", 40), ("flip-data", n - 40), ("flip-sync", n - 3)):
        b = bytearray(data)
        b[at] ^= 0x41
        out[f"{name}-{label}"] = bytes(b)
    return out


def manifest_list_seeds(build):
    seeds = {}
    with open(os.path.join(ROOT, "tests", "data", "java-manifest-list-v3.avro"), "rb") as f:
        seeds.update(variants("java-v3", f.read()))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "l.avro")
        subprocess.run([os.path.join(build, "tests", "tools", "icecommit-avro-tool"), "write-list-v3", path],
                       check=True)
        with open(path, "rb") as f:
            seeds.update(variants("ours-v3", f.read()))
    rec = {"manifest_path": "s3://b/m.avro", "manifest_length": 10, "partition_spec_id": 0, "content": 0,
           "sequence_number": 1, "min_sequence_number": 1, "added_snapshot_id": 1, "added_files_count": 1,
           "existing_files_count": 0, "deleted_files_count": 0, "added_rows_count": 3, "existing_rows_count": 0,
           "deleted_rows_count": 0, "key_metadata": None,
           "partitions": [{"contains_null": False, "contains_nan": None, "lower_bound": b"a", "upper_bound": b"b"}]}
    meta = {"snapshot-id": "1", "parent-snapshot-id": "null", "sequence-number": "1", "format-version": "2"}
    seeds["fastavro-v2-null"] = fast(avsc("proto/manifest_list_v2.avsc"), [rec, rec], "null", meta)
    v1 = {"manifest_path": "s3://b/m.avro", "manifest_length": 10, "partition_spec_id": 0, "added_snapshot_id": None,
          "added_data_files_count": 1, "existing_data_files_count": None, "deleted_data_files_count": 0,
          "partitions": None, "added_rows_count": 3, "existing_rows_count": None, "deleted_rows_count": 0,
          "key_metadata": b"k"}
    seeds["fastavro-v1-deflate"] = fast(avsc("tests/data/manifest_list_v1.avsc"), [v1], "deflate",
                                        {"snapshot-id": "1", "format-version": "1"})
    return seeds


def ocf_blocks_seeds(build):
    """For the block scanner and manifest_list_append: the manifest-list seeds (one block each,
    Java's, ours, fastavro's of both codecs and sync intervals) and a list built by appends,
    several blocks of several sizes, whole and damaged."""
    seeds = {name: data for name, data in manifest_list_seeds(build).items()
             if not any(damage in name for damage in ("-cut-", "-flip-"))}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "l.avro")
        subprocess.run([os.path.join(build, "tests", "tools", "icecommit-avro-tool"), "write-list-appended", path,
                        "25"], check=True)
        with open(path, "rb") as f:
            data = f.read()
        seeds.update(variants("ours-appended", data))
        # The cuts of variants() land in the header (it is most of the file): cut in a block too.
        seeds["ours-appended-cut-block"] = data[:len(data) - 100]
    return seeds


def manifest_seeds():
    seeds = {}
    for name in ("java-staged-manifest-v3", "java-committed-manifest-v3"):
        with open(os.path.join(ROOT, "tests", "data", name + ".avro"), "rb") as f:
            seeds.update(variants(name.replace("-manifest", ""), f.read()))
    schema = avsc("proto/manifest_entry_v2.avsc")
    part = schema["fields"][4]["type"]["fields"][3]["type"]
    part["fields"] = [
        {"name": "i", "type": ["null", "int"], "default": None, "field-id": 1000},
        {"name": "d", "type": ["null", {"type": "int", "logicalType": "date"}], "default": None, "field-id": 1001},
        {"name": "s", "type": ["null", "string"], "default": None, "field-id": 1002},
        {"name": "t", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": None,
         "field-id": 1003},
        {"name": "b", "type": ["null", "bytes"], "default": None, "field-id": 1004},
        {"name": "o", "type": ["null", "boolean"], "default": None, "field-id": 1005},
    ]
    records = []
    for i in range(4):
        records.append({"status": 1, "snapshot_id": None, "sequence_number": None, "file_sequence_number": None,
                        "data_file": {"content": 0, "file_path": f"s3://b/d{i}.parquet", "file_format": "PARQUET",
                                      "partition": {"i": i - 1, "d": None if i == 2 else 19000 + i, "s": "x" * i,
                                                    "t": i * 1000, "b": bytes([i]), "o": i % 2 == 0},
                                      "record_count": 10 * i, "file_size_in_bytes": 100 + i,
                                      "column_sizes": [{"key": 1, "value": 5}], "value_counts": None,
                                      "null_value_counts": None, "nan_value_counts": None, "lower_bounds": None,
                                      "upper_bounds": None, "key_metadata": None, "split_offsets": [4],
                                      "equality_ids": None, "sort_order_id": None, "referenced_data_file": None}})
    meta = {"schema": "{}", "partition-spec": "[]", "partition-spec-id": "0", "format-version": "2",
            "content": "data"}
    seeds.update(variants("fastavro-v2-partitioned", fast(schema, records, "null", meta)))
    seeds["fastavro-v2-deflate"] = fast(schema, records, "deflate", meta)
    return seeds


def parquet_bytes(table, **kwargs):
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **kwargs)
    return buf.getvalue()


def parquet_footer_seeds():
    """Real footers (one and several row groups, no rows, nested columns, key-value metadata,
    statistics off, v1 and v2 format versions), then damaged ones: the length pointing past the
    start, a cut footer, a flipped byte in it, the magic gone."""
    import pyarrow as pa

    three = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": pa.array(["a", "b", "c"])})
    seeds = {
        "three-rows": parquet_bytes(three),
        "row-groups": parquet_bytes(pa.table({"id": pa.array(range(1000), pa.int64())}), row_group_size=128),
        "empty": parquet_bytes(three.slice(0, 0)),
        "nested": parquet_bytes(pa.table({"s": pa.array([{"x": 1, "y": [1, 2]}, {"x": 2, "y": []}])})),
        "metadata": parquet_bytes(three.replace_schema_metadata({"k": "v" * 100})),
        "no-stats": parquet_bytes(three, write_statistics=False, version="1.0"),
    }
    data = seeds["three-rows"]
    n = len(data)
    length = int.from_bytes(data[-8:-4], "little")
    seeds["bad-length"] = data[:-8] + (n).to_bytes(4, "little") + b"PAR1"
    seeds["cut-footer"] = data[: n - 8 - length // 2] + data[-8:]
    seeds["flip-footer"] = data[: n - 8 - length // 2] + bytes([data[n - 8 - length // 2] ^ 0xFF]) + data[n - 7 - length // 2 :]
    seeds["no-magic"] = data[:-4] + b"PAR0"
    seeds["not-parquet"] = b"id,name\n1,a\n2,b\n3,c\n"
    return seeds


def parquet_seeds():
    footers = parquet_footer_seeds()
    data_dir = os.path.join(ROOT, "tests", "data", "parquet")
    os.makedirs(data_dir, exist_ok=True)
    for name in ("three-rows", "row-groups", "empty"):
        with open(os.path.join(data_dir, name + ".parquet"), "wb") as f:
            f.write(footers[name])
    return footers


PUFFIN_DATA = os.path.join(ROOT, "tests", "data", "puffin")


def puffin_data(name):
    with open(os.path.join(PUFFIN_DATA, name + ".bin"), "rb") as f:
        return f.read()


def dv_frame(bitmap):
    """A deletion-vector-v1 blob around a portable 64-bit Roaring bitmap (puffin-spec)."""
    body = struct.pack("<I", 0x6439D3D1) + bitmap
    return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))


def dv_seeds():
    """Java's golden DVs (TestBitmapPositionDeleteIndex resources), CRoaring's 64-bit portable
    bitmaps framed, a bitset container, and damaged copies (length, magic, CRC, cut)."""
    seeds = {}
    for name in ("empty", "small-alternating-values", "small-and-large-values", "all-container-types"):
        seeds["java-" + name] = puffin_data(name + "-position-index")
    for name in ("64map32bitvals", "64mapspreadvals"):
        seeds["framed-" + name] = dv_frame(puffin_data(name))
    bitset = struct.pack("<QIIIHHI", 1, 0, 12346, 1, 0, 4999, 16) + b"\xff" * 625 + b"\0" * 7567
    seeds["bitset"] = dv_frame(bitset)
    data = seeds["java-all-container-types"]
    seeds["cut"] = data[: len(data) // 2]
    seeds["bad-length"] = b"\0\0\0\x01" + data[4:]
    seeds["bad-magic"] = data[:4] + b"\x64\x39\xd3\xd1" + data[8:]
    seeds["bad-crc"] = data[:-1] + bytes([data[-1] ^ 1])
    return seeds


def puffin_footer_seeds():
    """Java's sample Puffin files, a file of two DVs in BaseDVFileWriter's shape, and damaged
    copies: cut, flags set, a blob outside the file."""
    seeds = {"java-empty": puffin_data("empty-puffin-uncompressed"),
             "java-sample": puffin_data("sample-metric-data-uncompressed"),
             "java-zstd": puffin_data("sample-metric-data-compressed-zstd")}
    dvs = [puffin_data("small-alternating-values-position-index"), puffin_data("empty-position-index")]
    blobs, offset = [], 4
    for i, dv in enumerate(dvs):
        blobs.append({"type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
                      "sequence-number": -1, "offset": offset, "length": len(dv),
                      "properties": {"referenced-data-file": f"s3://b/t/data/{i}.parquet",
                                     "cardinality": str(5 - 5 * i)}})
        offset += len(dv)

    def puffin(blob_meta, flags=0):
        payload = json.dumps({"blobs": blob_meta, "properties": {"created-by": "make-corpus"}},
                             separators=(",", ":")).encode()
        return (b"PFA1" + b"".join(dvs) + b"PFA1" + payload + struct.pack("<ii", len(payload), flags)
                + b"PFA1")

    data = puffin(blobs)
    seeds["dvs"] = data
    seeds["dvs-cut"] = data[: len(data) - 20]
    seeds["dvs-compressed"] = puffin(blobs, flags=1)
    seeds["dvs-outside"] = puffin([dict(blobs[0], length=10000)])
    return seeds


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    makers = {"manifest-list": lambda: manifest_list_seeds(build), "manifest": manifest_seeds,
              "parquet-footer": parquet_seeds, "ocf-blocks": lambda: ocf_blocks_seeds(build),
              "dv": dv_seeds, "puffin-footer": puffin_footer_seeds}
    for corpus in sys.argv[2:] or makers:
        seeds = makers[corpus]()
        d = os.path.join(CORPUS, corpus)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(d, "seed-" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
