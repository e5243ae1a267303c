# SPDX-License-Identifier: Apache-2.0
"""The README's first command runs to the end (so it cannot rot) on the embedded filesystem
catalog, runs every writer example, and what it committed is what the rules predict, read back
by Iceberg Java: ids 0..11 (3 files x 4 rows, commit 1), 100..104 (commit 2), 200..202
(commit 3) get _row_id 0..19 in that order, at sequence numbers 1, 2 and 3. The same quick start
on a bucket (QUICKSTART_S3_*: the embedded catalog on s3://, no catalog service) writes every
file to the bucket and nothing to local disk but its config and logs."""
import os
import re
import subprocess
import tempfile

from conftest import ROOT, peer, s3_key, s3_peer_env, s3_request

ROWS = [(i, i, 1) for i in range(12)] + [(100 + k, 12 + k, 2) for k in range(5)] + \
    [(200 + k, 17 + k, 3) for k in range(3)]


def run_quickstart(keep, env=None):
    """Runs tests/quickstart.sh (environment: env, else this process's) and checks its output."""
    out = subprocess.run(["bash", os.path.join(ROOT, "tests", "quickstart.sh")], capture_output=True, text=True,
                         timeout=900, env=dict(env or os.environ, QUICKSTART_KEEP=keep))
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
    return text


def lineage(dump):
    assert dump["format-version"] == 3 and dump["next-row-id"] == 20
    return sorted((r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in dump["rows"])


def test_quickstart_runs_end_to_end_on_the_embedded_catalog():
    keep = tempfile.mkdtemp(prefix="quickstart-", dir=os.path.join(ROOT, "build-tests"))
    run_quickstart(keep)

    # Iceberg Java, through its HadoopCatalog on the same warehouse, sees every row's lineage.
    dump = peer("dump", "--uri", os.path.join(keep, "warehouse"), "--table", "demo.events")
    assert lineage(dump) == ROWS


def test_quickstart_runs_end_to_end_on_a_bucket(s3):
    keep = tempfile.mkdtemp(prefix="quickstart-s3-", dir=os.path.join(ROOT, "build-tests"))
    # The script sets the AWS_* variables the examples take; none leak in from here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(QUICKSTART_S3_ENDPOINT=s3["endpoint"], QUICKSTART_S3_BUCKET=s3["bucket"],
               QUICKSTART_S3_ACCESS_KEY_ID=s3["access_key"], QUICKSTART_S3_SECRET_ACCESS_KEY=s3["secret_key"],
               QUICKSTART_S3_REGION=s3["region"])
    text = run_quickstart(keep, env)
    warehouse = re.search(r"embedded catalog in (\S+)\n", text).group(1)
    assert re.fullmatch(rf"s3://{s3['bucket']}/quickstart-[0-9a-f]+/warehouse", warehouse), warehouse
    location = f"{warehouse}/demo/events"
    metadata = re.search(r"^(\S+): format version 3, next-row-id 20$", text, re.M).group(1)
    assert metadata == f"{location}/metadata/v4.metadata.json", metadata
    # Every file the receipts and the lookup name is in the table's location in the bucket.
    named = re.findall(r"(\S+\.parquet)", text)
    assert len(named) == 5 and all(p.startswith(f"{location}/data/day=") for p in named), named

    # Iceberg Java, by metadata location through S3FileIO, sees every row's lineage.
    dump = peer("dump", "--metadata", metadata, env=s3_peer_env(s3, keys=True))
    assert lineage(dump) == ROWS

    # The table's files are objects under the prefix: 5 data files (3 + 1 by PyIceberg + 1 for
    # curl), every one Java read, 3 manifests and 3 manifest lists, v1..v4 and the hint.
    prefix = s3_key(s3, location) + "/"
    status, body = s3_request(s3, "GET", f"?list-type=2&max-keys=1000&prefix={prefix.replace('/', '%2F')}")
    assert status == 200, body
    keys = [k.split("</Key>")[0][len(prefix):] for k in body.decode().split("<Key>")[1:]]
    data = sorted(k for k in keys if k.startswith("data/"))
    assert len(data) == 5 and all(k.endswith(".parquet") for k in data), keys
    assert {s3_key(s3, r["file"])[len(prefix):] for r in dump["rows"]} == set(data)
    meta = sorted(k for k in keys if k.startswith("metadata/"))
    assert [k for k in meta if k.endswith(".metadata.json")] == [f"metadata/v{v}.metadata.json" for v in range(1, 5)]
    assert "metadata/version-hint.text" in meta and len([k for k in meta if k.endswith(".avro")]) == 6, meta
    assert len(keys) == len(data) + len(meta), keys

    # Locally: the daemon's config and log and curl's receipts, no warehouse, no data file.
    assert sorted(os.listdir(keep)) == ["icecommitd.conf", "icecommitd.log", "receipt-3-again.json",
                                        "receipt-3.json"]
    assert not os.path.exists(os.path.join(ROOT, s3["bucket"])) and not os.path.exists(os.path.join(ROOT, "s3:"))
