#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A writer with nothing but a shell and curl: creates the demo table (idempotent) and commits one
# Parquet file that already lies in the table's location (written by any tool: DuckDB, Spark,
# pyarrow, a Go service). icecommitd writes the manifest, assigns row ids and commits.
#
#   examples/curl/commit.sh URL NAMESPACE TABLE FILE RECORD_COUNT DAY KEY
#   e.g. examples/curl/commit.sh http://127.0.0.1:8080 demo events /wh/demo/events/data/day=2026-12-02/f.parquet 3 2026-12-02 job-3
#
# FILE may be s3://BUCKET/KEY: its size is then read with a HEAD that curl signs (SigV4, curl
# 7.75 or later) with AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN), AWS_REGION
# (default us-east-1), at AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL path-style (default AWS).
set -euo pipefail
url=$1 namespace=$2 table=$3 file=$4 records=$5 day=$6 key=$7

s3_size() {  # the Content-Length of s3://BUCKET/KEY
    local LC_ALL=C rest=${1#*://} bucket path= c i region endpoint
    bucket=${rest%%/*} rest=${rest#*/}
    for ((i = 0; i < ${#rest}; i++)); do  # the key URI-encoded, as SigV4 signs it
        c=${rest:i:1}
        case $c in [A-Za-z0-9._~/-]) path+=$c ;; *) printf -v c '%%%02X' "'$c"; path+=$c ;; esac
    done
    region=${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}
    endpoint=${AWS_ENDPOINT_URL_S3:-${AWS_ENDPOINT_URL:-https://s3.$region.amazonaws.com}}
    # The SHA-256 of the empty body: SigV4 signs the payload's hash.
    curl -sS --fail -I --aws-sigv4 "aws:amz:$region:s3" \
        --user "${AWS_ACCESS_KEY_ID:?for an s3:// file}:${AWS_SECRET_ACCESS_KEY:?for an s3:// file}" \
        -H "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" \
        ${AWS_SESSION_TOKEN:+-H "x-amz-security-token: $AWS_SESSION_TOKEN"} \
        "${endpoint%/}/$bucket/$path" | tr -d '\r' | awk -F': *' 'tolower($1) == "content-length" {print $2}'
}

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
case $file in
s3://* | s3a://* | s3n://*) size=$(s3_size "$file") ;;
*) size=$(stat -c %s "$file") ;;
esac
[ -n "$size" ] || { echo "commit.sh: no size for $file" >&2; exit 1; }
curl -sS --fail-with-body -X POST "$url/v1/namespaces/$namespace/tables/$table/commits" \
    -H 'Content-Type: application/json' -d '{
  "idempotency-key": "'"$key"'",
  "data-files": [{"file-path": "'"$file"'", "file-format": "parquet",
                  "record-count": '"$records"', "file-size-in-bytes": '"$size"',
                  "partition": ["'"$day"'"]}]}'
echo
