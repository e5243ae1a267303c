#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's first command: install, build, and run icecommit's whole job once, on the
# embedded filesystem catalog, with no other service:
#   1. starts icecommitd with a fresh warehouse directory
#   2. three writers commit to demo.events (created through icecommitd, format version 3):
#      pyarrow files described in the request, PyIceberg-written files, and curl
#   3. shows the snapshots and row-id ranges (the lineage audit), where one row id came from,
#      and the rows read back with PyIceberg
# Everything runs on loopback and is stopped at the end. QUICKSTART_KEEP=DIR keeps the
# warehouse in DIR (the test suite reads it back with Iceberg Java).
#
# On a bucket instead, still with no catalog service: QUICKSTART_S3_ENDPOINT=URL (e.g.
# http://127.0.0.1:8333), QUICKSTART_S3_ACCESS_KEY_ID, QUICKSTART_S3_SECRET_ACCESS_KEY,
# QUICKSTART_S3_BUCKET (default icecommit, must exist), QUICKSTART_S3_REGION (default us-east-1).
# The warehouse is then s3://BUCKET/quickstart-<random>/warehouse; the examples write their
# Parquet files there and read back through S3 (they take the AWS_* variables set below); the
# prefix is deleted at the end unless QUICKSTART_KEEP is set (DIR then holds config and logs).
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/install-deps.sh --runtime
[ -f build-release/build.ninja ] || meson setup build-release --buildtype=release >/dev/null
ninja -C build-release daemon/icecommitd >/dev/null

work=${QUICKSTART_KEEP:-$(mktemp -d "${TMPDIR:-/tmp}/icecommit-quickstart-XXXXXX")}
mkdir -p "$work"
warehouse=$work/warehouse
s3_endpoint=${QUICKSTART_S3_ENDPOINT:-}
if [ -n "$s3_endpoint" ]; then
    bucket=${QUICKSTART_S3_BUCKET:-icecommit}
    warehouse=s3://$bucket/quickstart-$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')/warehouse
    # The settings the examples take, as any AWS tool would (examples/python/storage.py).
    export AWS_ENDPOINT_URL=$s3_endpoint AWS_REGION=${QUICKSTART_S3_REGION:-us-east-1}
    export AWS_ACCESS_KEY_ID=${QUICKSTART_S3_ACCESS_KEY_ID:?is needed with QUICKSTART_S3_ENDPOINT}
    export AWS_SECRET_ACCESS_KEY=${QUICKSTART_S3_SECRET_ACCESS_KEY:?is needed with QUICKSTART_S3_ENDPOINT}
    unset AWS_ENDPOINT_URL_S3 AWS_SESSION_TOKEN
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
py=.venv/bin/python
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    [ -n "${QUICKSTART_KEEP:-}" ] || rm -rf "$work"
    if [ -n "$s3_endpoint" ] && [ -z "${QUICKSTART_KEEP:-}" ]; then  # the bucket prefix
        PYTHONPATH=examples/python $py -c 'import sys, storage
fs, path = storage.filesystem(sys.argv[1], storage.from_environment()); fs.delete_dir(path)' \
            "${warehouse%/warehouse}" || echo "could not delete ${warehouse%/warehouse}" >&2
    fi
}
trap cleanup EXIT

echo "== starting icecommitd on $url, embedded catalog in $warehouse"
cat >"$work/icecommitd.conf" <<CONF
[http]
port = $port
[catalog]
warehouse = $warehouse
CONF
if [ -n "$s3_endpoint" ]; then
    chmod 600 "$work/icecommitd.conf"   # it holds the secret key
    cat >>"$work/icecommitd.conf" <<CONF
[s3]
endpoint = $s3_endpoint
path-style-access = true
access-key-id = $AWS_ACCESS_KEY_ID
secret-access-key = $AWS_SECRET_ACCESS_KEY
[client]
region = $AWS_REGION
CONF
fi
build-release/daemon/icecommitd --config "$work/icecommitd.conf" 2>"$work/icecommitd.log" &
daemon_pid=$!
for _ in $(seq 100); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.1; done

echo
echo "== 1. a writer without an Iceberg library: pyarrow writes 3 Parquet files, the request describes them"
$py examples/python/write_without_iceberg.py --url "$url" --files 3 --rows 4 --start-id 0 \
    --day 2026-11-30 --key quickstart-1

echo
echo "== 2. a writer using PyIceberg to write the files, icecommitd to commit them"
$py examples/python/write_with_pyiceberg.py --url "$url" --rows 5 --start-id 100 --day 2026-12-01 \
    --key quickstart-2

echo
echo "== 3. curl commits a Parquet file another tool wrote"
file=$($py examples/python/write_without_iceberg.py --url "$url" --files 1 --rows 3 --start-id 200 \
    --day 2026-12-02 --write-only | $py -c 'import json,sys; print(json.load(sys.stdin)[0]["file-path"])')
examples/curl/commit.sh "$url" demo events "$file" 3 2026-12-02 quickstart-3 >"$work/receipt-3.json"
$py -c 'import json,sys; r=json.load(open(sys.argv[1])); print("committed snapshot", r["snapshot-id"], "row ids",
        r["manifests"][0]["first-row-id"], "..", r["manifests"][0]["last-row-id"])' "$work/receipt-3.json"
echo "the same request again, as a writer that lost the answer would send it:"
examples/curl/commit.sh "$url" demo events "$file" 3 2026-12-02 quickstart-3 >"$work/receipt-3-again.json"
$py -c 'import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2]))
print("same snapshot" if a["snapshot-id"] == b["snapshot-id"] else "DIFFERENT SNAPSHOT", b["snapshot-id"], "- committed once")' \
    "$work/receipt-3.json" "$work/receipt-3-again.json"

echo
echo "== the lineage audit: every snapshot's row-id range, and the table's checks"
curl -sS "$url/v1/namespaces/demo/tables/events/lineage" | $py -c '
import json, sys
a = json.load(sys.stdin)
print("next-row-id %d" % a["next-row-id"])
for s in a["snapshots"]:
    print("  snapshot %d: sequence number %d, row ids %s..%s" % (s["snapshot-id"], s["sequence-number"], s["first-row-id"], s["last-row-id"]))
for c in a["checks"]:
    print("  check %-36s %s" % (c["name"], "ok" if c["ok"] else "FAILED"))'

echo
echo "== where row id 13 came from"
curl -sS "$url/v1/namespaces/demo/tables/events/row-ids/13" | $py -c '
import json, sys
r = json.load(sys.stdin)
print("row id 13: snapshot %d, file %s, position %d, _last_updated_sequence_number %d" % (
    r["snapshot"]["snapshot-id"], r["data-file"]["path"], r["position"], r["last-updated-sequence-number"]))'

echo
echo "== the rows, read back with PyIceberg (by metadata file, no catalog)"
$py examples/python/read_table.py "$warehouse/demo/events"
echo "== done"
