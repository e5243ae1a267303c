# SPDX-License-Identifier: Apache-2.0
"""The README's first command runs to the end (so it cannot rot) on the embedded filesystem
catalog, runs every writer example, and what it committed is what the rules predict, read back
by Iceberg Java: ids 0..11 (3 files x 4 rows, commit 1), 100..104 (commit 2), 200..202
(commit 3) get _row_id 0..19 in that order, at sequence numbers 1, 2 and 3."""
import os
import re
import subprocess
import tempfile

from conftest import ROOT, peer


def test_quickstart_runs_end_to_end_on_the_embedded_catalog():
    keep = tempfile.mkdtemp(prefix="quickstart-", dir=os.path.join(ROOT, "build-tests"))
    out = subprocess.run(["bash", os.path.join(ROOT, "tests", "quickstart.sh")], capture_output=True, text=True,
                         timeout=900, env=dict(os.environ, QUICKSTART_KEEP=keep))
    text = out.stdout
    assert out.returncode == 0, text[-3000:] + out.stderr[-3000:]

    # The receipts' ranges, the retry answered from history, the audit, the lookup, PyIceberg.
    assert re.findall(r"_row_id (\d+)\.\.(\d+), _last_updated_sequence_number (\d+)", text) == \
        [("0", "3", "1"), ("4", "7", "1"), ("8", "11", "1"), ("12", "16", "2")]
    assert re.search(r"committed snapshot (\d+) row ids 17 \.\. 19", text), text
    assert "same snapshot" in text and "committed once" in text
    assert "next-row-id 20" in text
    assert re.findall(r"sequence number (\d), row ids (\d+)\.\.(\d+)\n", text)[:3] == \
        [("1", "0", "11"), ("2", "12", "16"), ("3", "17", "19")]
    assert len(re.findall(r"check \S+ +ok", text)) == 5 and "FAILED" not in text
    assert re.search(r"row id 13: snapshot \d+, file \S+day=2026-12-01/\S+\.parquet, position 1, "
                     r"_last_updated_sequence_number 2", text), text
    assert "20 rows:" in text
    rows = re.findall(r"^\s+(\d+) event-(\d+)\s+([\d.]+)\s+(\S+)$", text, re.M)
    assert [int(r[0]) for r in rows] == list(range(12)) + list(range(100, 105)) + list(range(200, 203))

    # Iceberg Java, through its HadoopCatalog on the same warehouse, sees every row's lineage.
    dump = peer("dump", "--uri", os.path.join(keep, "warehouse"), "--table", "demo.events")
    assert dump["format-version"] == 3 and dump["next-row-id"] == 20
    got = sorted((r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"])
    want = [(i, i, 1) for i in range(12)] + [(100 + k, 12 + k, 2) for k in range(5)] + \
        [(200 + k, 17 + k, 3) for k in range(3)]
    assert got == want
