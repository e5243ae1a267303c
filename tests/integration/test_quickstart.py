# SPDX-License-Identifier: Apache-2.0
"""The README's first command runs to the end (so it cannot rot) and shows the lineage numbers."""
import os
import re
import subprocess

from conftest import ROOT


def test_quickstart_runs_end_to_end():
    out = subprocess.run(["bash", os.path.join(ROOT, "tests", "quickstart.sh")], capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert '"status": "committed"' in out.stdout or '"status":"committed"' in out.stdout, out.stdout
    assert "table next-row-id: 6" in out.stdout, out.stdout
    rows = re.findall(r"^\s+(\d+)\s+(\d+)\s+(\d+)$", out.stdout, re.M)
    # 2 files x 3 rows, ids 100..105, _row_id 0..5 in manifest order, sequence number 1.
    assert [(int(i), int(r), int(s)) for i, r, s in rows] == [(100 + k, k, 1) for k in range(6)]
