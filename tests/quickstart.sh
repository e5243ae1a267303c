#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's first command: install, build, and run icecommit's main job once, end to end.
#   1. starts Apache Iceberg's REST catalog server on 127.0.0.1 (until icecommit's embedded
#      filesystem catalog lands, this stands in for "the embedded default")
#   2. creates a v3 table, and a writer job (Iceberg Java) writes Parquet files + a staged manifest
#   3. starts icecommitd and commits the staged manifest over HTTP with curl
#   4. reads every row back with Iceberg Java: _row_id and _last_updated_sequence_number
# Everything runs on loopback and is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bash tests/install-deps.sh
[ -f build-release/build.ninja ] || meson setup build-release --buildtype=release >/dev/null
ninja -C build-release daemon/icecommitd >/dev/null

work=$(mktemp -d "${TMPDIR:-/tmp}/icecommit-quickstart-XXXXXX")
port_of() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
catalog_port=$(port_of)
daemon_port=$(port_of)
catalog=http://127.0.0.1:$catalog_port
daemon_pid=
cleanup() {
    [ -n "$daemon_pid" ] && kill "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
    tests/peers/catalog-stop.sh "$work" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "== starting Apache Iceberg's REST catalog on $catalog"
tests/peers/catalog-start.sh "$work" "$catalog_port" >/dev/null

echo "== creating table demo.events (format-version 3) and a writer's staged manifest"
tests/peers/peer.sh create-table --uri "$catalog" --table demo.events --format-version 3 >/dev/null
staged=$(tests/peers/peer.sh stage --uri "$catalog" --table demo.events --files 2 --rows 3 --start-id 100)
manifest=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["manifest"])' <<<"$staged")
echo "staged manifest: $manifest"

echo "== starting icecommitd on 127.0.0.1:$daemon_port"
cat >"$work/icecommitd.conf" <<CONF
[http]
port = $daemon_port
[catalog]
uri = $catalog
CONF
build-release/daemon/icecommitd --config "$work/icecommitd.conf" 2>"$work/icecommitd.log" &
daemon_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$daemon_port/readyz" >/dev/null && break; sleep 0.1; done

echo "== committing (the writer's call)"
curl -sS -X POST "http://127.0.0.1:$daemon_port/v1/namespaces/demo/tables/events/commits" \
    -H 'Content-Type: application/json' \
    -d "{\"idempotency-key\": \"quickstart-1\", \"staged-manifests\": [\"$manifest\"]}" | tee "$work/receipt.json"
echo

echo "== rows read back by Apache Iceberg's Java reader"
tests/peers/peer.sh dump --uri "$catalog" --table demo.events | python3 -c '
import json, sys
d = json.load(sys.stdin)
print("table next-row-id:", d["next-row-id"])
for s in d["snapshots"]:
    print("snapshot %d: sequence %d, first-row-id %s, added-rows %s, operation %s" % (
        s["snapshot-id"], s["sequence-number"], s["first-row-id"], s["added-rows"], s["operation"]))
print("%6s %8s %30s" % ("id", "_row_id", "_last_updated_sequence_number"))
for r in d["rows"]:
    print("%6d %8d %30d" % (r["id"], r["_row_id"], r["_last_updated_sequence_number"]))
'
echo "== done (icecommitd log: $work/icecommitd.log)"
