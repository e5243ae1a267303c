# SPDX-License-Identifier: Apache-2.0
"""The Java DataFile JSON round trip: Iceberg Java 1.11 writes real Parquet data files of every
primitive type into a table partitioned by every kind of transform, describes them with its own
ContentFileParser.toJson (bounds as hex of binary single values, partition values as
SingleValueParser JSON), and that JSON goes into icecommitd's `data-files` as is. Iceberg Java
then reads the table back: every file's description (partition, counts, bounds, sizes, split
offsets) equals what it wrote, and fastavro finds the same bytes in the committed manifest."""
import copy
import datetime
import uuid

import fastavro

from conftest import peer

# What a commit adds to a file's description: row lineage (v3) and, where Java writes it, the
# data sequence number.
ASSIGNED = ("first-row-id", "data-sequence-number")


def java_files(uri, files=2):
    name = "jdf_" + uuid.uuid4().hex[:10]
    out = peer("datafile-json", "--uri", uri, "--table", f"ns.{name}", "--files", files)
    return name, out


def read_manifest(location):
    with open(location.removeprefix("file:"), "rb") as f:
        return list(fastavro.reader(f))


def test_java_data_file_json_round_trip(catalog, daemon):
    uri = catalog["uri"]
    name, written = java_files(uri)
    described = written["data-files"]
    # Java's form, as ContentFileParser writes it: hex bounds, lowercase content and format.
    assert described[0]["content"] == "data" and described[0]["file-format"] == "parquet"
    assert described[0]["lower-bounds"]["values"][2] == "F9FFFFFF"  # int -7
    assert len(described[0]["partition"]) == 18

    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": "java-df", "data-files": described})
    assert status == 200, receipt
    [m] = receipt["manifests"]
    assert (m["added-files"], m["added-rows"], m["first-row-id"], m["last-row-id"]) == (2, 7, 0, 6)

    back = peer("datafile-json-read", "--uri", uri, "--table", f"ns.{name}")
    assert back["rows"] == [0, 1, 2, 1000, 1001, 1002, 1003]
    by_path = {d["file-path"]: d for d in back["data-files"]}
    assert sorted(by_path) == sorted(d["file-path"] for d in described)
    ranges = {f["location"]: f for f in m["data-files"]}
    for d in described:
        got = dict(by_path[d["file-path"]])
        assert got["first-row-id"] == ranges[d["file-path"]]["first-row-id"]
        assert got.get("data-sequence-number", receipt["sequence-number"]) == receipt["sequence-number"]
        for k in ASSIGNED:
            got.pop(k, None)
        assert got == d  # partition, counts, bounds, sizes, split offsets, sort order: all equal

    # The manifest's own bytes: each bound is the binary value whose hex Java wrote.
    entries = read_manifest(m["location"])
    assert len(entries) == 2
    for e in entries:
        df = e["data_file"]
        d = next(x for x in described if x["file-path"] == df["file_path"])
        for avro, key in (("lower_bounds", "lower-bounds"), ("upper_bounds", "upper-bounds")):
            assert {kv["key"]: kv["value"] for kv in df[avro]} == {
                k: bytes.fromhex(v) for k, v in zip(d[key]["keys"], d[key]["values"])}
        assert {kv["key"]: kv["value"] for kv in df["value_counts"]} == dict(
            zip(d["value-counts"]["keys"], d["value-counts"]["values"]))
        assert df["record_count"] == d["record-count"] and df["split_offsets"] == d["split-offsets"]
        part = df["partition"]
        assert part["i"] == d["partition"][1] and part["n"] is None and part["s_trunc"] == "ca"
        assert part["dt"] == datetime.date(2024, 2, 29) + datetime.timedelta(days=described.index(d))
        # fixed[4] as Avro bytes: the one layout Java 1.11 and fastavro both read (see
        # manifest_write.c); Java's read-back above got it as the value it wrote.
        assert part["fx"] == bytes([0x0A, 0xFF, 0, described.index(d)]) and \
            d["partition"][9] == f"0AFF000{described.index(d)}"


def test_java_bounds_checked_and_ambiguity_refused(catalog, daemon):
    uri = catalog["uri"]
    name, written = java_files(uri, files=1)
    [d] = written["data-files"]

    # A Java bound of the wrong size for its column: 422 naming the path and the rule.
    bad = copy.deepcopy(d)
    bad["lower-bounds"]["values"][2] = "F9FF"
    status, _, err = daemon.commit("ns", name, {"idempotency-key": "java-bad", "data-files": [bad]})
    assert status == 422, err
    assert "'data-files'[0]" in err["error"]["message"] and "'lower-bounds' value for field id 3 (binary hex, " \
        "Iceberg Java's encoding): expected 4 bytes, little-endian for type int" in err["error"]["message"], err

    # Typed and Java values in one file: refused, nothing guessed.
    mixed = copy.deepcopy(d)
    mixed["upper-bounds"]["values"][0] = 2
    status, _, err = daemon.commit("ns", name, {"idempotency-key": "java-mixed", "data-files": [mixed]})
    assert status == 422 and "give all bounds of a file in one encoding" in err["error"]["message"], err

    # Only the string column's bounds: "6361666530" reads both ways. Refused without
    # bounds-encoding, committed with "binary", and Java reads back the bounds it wrote.
    only = copy.deepcopy(d)
    for key in ("lower-bounds", "upper-bounds"):
        i = only[key]["keys"].index(15)
        only[key] = {"keys": [15], "values": [only[key]["values"][i]]}
    status, _, err = daemon.commit("ns", name, {"idempotency-key": "java-only-s", "data-files": [only]})
    assert status == 422 and '"bounds-encoding": "typed" or "binary"' in err["error"]["message"], err
    status, _, err = daemon.commit("ns", name, {"idempotency-key": "java-only-s", "bounds-encoding": "bogus",
                                                "data-files": [only]})
    assert status == 400 and "'bounds-encoding' must be" in err["error"]["message"], err
    status, _, receipt = daemon.commit("ns", name, {"idempotency-key": "java-only-s", "bounds-encoding": "binary",
                                                    "data-files": [only]})
    assert status == 200, receipt
    [back] = peer("datafile-json-read", "--uri", uri, "--table", f"ns.{name}")["data-files"]
    assert back["lower-bounds"] == only["lower-bounds"] and back["upper-bounds"] == only["upper-bounds"]
    assert back["partition"] == d["partition"]
