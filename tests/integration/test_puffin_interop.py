# SPDX-License-Identifier: Apache-2.0
"""Deletion vectors in Puffin files between icecommit's daemon/puffin/ and Iceberg Java (the
oracle): Java's BaseDVFileWriter writes, C reads the same positions; C writes, Java's scan path
(BaseDeleteLoader -> BitmapPositionDeleteIndex.deserialize, which checks length, magic, CRC and
cardinality == record_count) and PuffinReader read the same positions and footer; the union of
two DVs C wrote reads in Java as the union. Byte equality of the blobs is checked too.

The C side is tests/tools/dv-tool.c (icecommit-dv-tool), found in ICECOMMIT_BUILD_DIR; the Java
side is the peer's dv-write and dv-read (tests/peers/java/.../Dv.java)."""
import json
import os
import subprocess

import pytest

from conftest import peer

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("ICECOMMIT_BUILD_DIR", os.path.join(ROOT, "build-release"))
TOOL = os.path.join(BUILD, "tests", "tools", "icecommit-dv-tool")

DATA_A = "s3://bucket/warehouse/ns/t/data/00000-0-a.parquet"
DATA_B = "file:/tmp/warehouse/ns/t/data/00001-0-b.parquet"

# Positions across the 32-bit keys, with a dense run (run containers), a gap of empty keys and
# an array container: {1, 5, 1 << 32 | 3} is the unit test's hand-derived vector.
SETS = {
    "small": [1, 5, (1 << 32) | 3],
    "runs": list(range(100, 5100)) + [70000, 70002],
    "far": [0, (3 << 32) + 7, (3 << 32) + 65536],
    "bitset": list(range(0, 20000, 3)),
}


def tool(*args, rc=0):
    if not os.path.exists(TOOL):
        pytest.fail(f"{TOOL} is missing: build it (ninja -C {BUILD}) or set ICECOMMIT_BUILD_DIR")
    out = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=60)
    assert out.returncode == rc, f"{args}: rc={out.returncode} stdout={out.stdout} stderr={out.stderr}"
    return json.loads(out.stdout) if out.stdout.strip() else out.stderr


def csv(positions):
    return ",".join(map(str, positions))


def blob(path, dv):
    with open(path, "rb") as f:
        f.seek(dv["content-offset"])
        return f.read(dv["content-size-in-bytes"])


def java_read(path, dv, data_file):
    return peer("dv-read", "--path", path, "--offset", dv["content-offset"],
                "--length", dv["content-size-in-bytes"], "--record-count", dv["record-count"],
                "--data-file", data_file)


@pytest.mark.parametrize("name", sorted(SETS))
def test_java_writes_c_reads(tmp_path, name):
    positions = SETS[name]
    path = str(tmp_path / "java.puffin")
    out = peer("dv-write", "--path", path, "--data-file", DATA_A, "--positions", csv(positions),
               "--data-file2", DATA_B, "--positions2", "7")
    dvs = {dv["referenced-data-file"]: dv for dv in out["dvs"]}
    dv = dvs[DATA_A]
    assert dv["format"] == "PUFFIN" and dv["record-count"] == len(positions)
    assert dv["file-size-in-bytes"] == os.path.getsize(path)

    back = tool("read", path, dv["content-offset"], dv["content-size-in-bytes"], max(positions) + 1)
    assert back["positions"] == sorted(positions)
    assert back["referenced-data-file"] == DATA_A
    back = tool("read", path, dvs[DATA_B]["content-offset"], dvs[DATA_B]["content-size-in-bytes"], 8)
    assert back["positions"] == [7] and back["referenced-data-file"] == DATA_B
    # One position past the data file's rows is refused.
    err = tool("read", path, dv["content-offset"], dv["content-size-in-bytes"], max(positions), rc=1)
    assert "is beyond the data file's" in err

    # C writes the very bytes Java wrote for the same positions.
    c_path = str(tmp_path / "c.puffin")
    [c_dv] = tool("write", c_path, DATA_A, csv(positions))["dvs"]
    assert blob(c_path, c_dv) == blob(path, dv)


@pytest.mark.parametrize("name", sorted(SETS))
def test_c_writes_java_reads(tmp_path, name):
    positions = SETS[name]
    path = str(tmp_path / "c.puffin")
    out = tool("write", path, DATA_A, csv(positions), DATA_B, "2,3")
    a, b = out["dvs"]
    assert a["content-offset"] == 4 and b["content-offset"] == 4 + a["content-size-in-bytes"]
    assert a["record-count"] == len(positions)

    back = java_read(path, a, DATA_A)
    assert back["positions"] == sorted(positions)
    assert back["cardinality"] == len(positions)
    assert java_read(path, b, DATA_B)["positions"] == [2, 3]
    # The footer as BaseDVFileWriter writes it, read by PuffinReader.
    assert back["blobs"] == [
        {"type": "deletion-vector-v1", "fields": [2147483645], "snapshot-id": -1,
         "sequence-number": -1, "offset": dv["content-offset"], "length": dv["content-size-in-bytes"],
         "compression-codec": None,
         "properties": {"referenced-data-file": data_file, "cardinality": str(dv["record-count"])}}
        for dv, data_file in ((a, DATA_A), (b, DATA_B))]


def test_c_union_java_reads(tmp_path):
    first, second = SETS["small"], SETS["runs"] + [5, (1 << 32) | 3, (1 << 32) | 4]
    p1, p2, pu = (str(tmp_path / n) for n in ("1.puffin", "2.puffin", "u.puffin"))
    [d1] = tool("write", p1, DATA_A, csv(first))["dvs"]
    [d2] = tool("write", p2, DATA_A, csv(second))["dvs"]
    rows = (1 << 32) + 5
    [du] = tool("union", pu, p1, d1["content-offset"], d1["content-size-in-bytes"],
                p2, d2["content-offset"], d2["content-size-in-bytes"], rows)["dvs"]
    union = sorted(set(first) | set(second))
    assert du["record-count"] == len(union)
    assert java_read(pu, du, DATA_A)["positions"] == union
    # Java's own union (BaseDVFileWriter merges deletes of one path) writes the same bytes.
    jp = str(tmp_path / "j.puffin")
    [dj] = peer("dv-write", "--path", jp, "--data-file", DATA_A, "--positions", csv(first + second))["dvs"]
    assert blob(jp, dj) == blob(pu, du)


def test_java_refuses_a_wrong_record_count(tmp_path):
    path = str(tmp_path / "c.puffin")
    [dv] = tool("write", path, DATA_A, csv(SETS["small"]))["dvs"]
    with pytest.raises(subprocess.CalledProcessError) as e:
        java_read(path, dict(dv, **{"record-count": 4}), DATA_A)
    assert "Invalid cardinality" in e.value.stderr
