#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A writer with nothing but a shell and curl: creates the demo table (idempotent) and commits one
# Parquet file that already lies in the table's location (written by any tool: DuckDB, Spark,
# pyarrow, a Go service). icecommitd writes the manifest, assigns row ids and commits.
#
#   examples/curl/commit.sh URL NAMESPACE TABLE FILE RECORD_COUNT DAY KEY
#   e.g. examples/curl/commit.sh http://127.0.0.1:8080 demo events /wh/demo/events/data/day=2026-12-02/f.parquet 3 2026-12-02 job-3
set -euo pipefail
url=$1 namespace=$2 table=$3 file=$4 records=$5 day=$6 key=$7

# The table: format version 3 (the default), partitioned by day. A second call finds it.
curl -sS --fail-with-body -X POST "$url/v1/namespaces/$namespace/tables" -H 'Content-Type: application/json' -d '{
  "name": "'"$table"'",
  "schema": {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": true, "type": "long"},
    {"id": 2, "name": "name", "required": false, "type": "string"},
    {"id": 3, "name": "amount", "required": false, "type": "double"},
    {"id": 4, "name": "day", "required": false, "type": "date"}]},
  "partition-spec": {"fields": [{"source-id": 4, "name": "day", "transform": "identity"}]}}' >/dev/null

# The commit: the file described, its size read from storage. Retrying with the same key (after
# a 503, a 504 or a lost connection) is safe: it is committed at most once.
size=$(stat -c %s "$file")
curl -sS --fail-with-body -X POST "$url/v1/namespaces/$namespace/tables/$table/commits" \
    -H 'Content-Type: application/json' -d '{
  "idempotency-key": "'"$key"'",
  "data-files": [{"file-path": "'"$file"'", "file-format": "parquet",
                  "record-count": '"$records"', "file-size-in-bytes": '"$size"',
                  "partition": ["'"$day"'"]}]}'
echo
