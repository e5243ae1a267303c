# SPDX-License-Identifier: Apache-2.0
"""The few calls of icecommitd's writer API the examples use, with the standard library only.
The API is documented in proto/openapi.yaml."""
import json
import urllib.error
import urllib.request

# The demo table: events of a day, partitioned by that day. Field ids are proposals: the catalog
# may assign its own, so writers take them from the create answer.
SCHEMA = {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "name", "required": False, "type": "string"},
    {"id": 3, "name": "amount", "required": False, "type": "double"},
    {"id": 4, "name": "day", "required": False, "type": "date"},
]}
SPEC = {"fields": [{"source-id": 4, "name": "day", "transform": "identity"}]}


def call(method, url, body=None):
    """Sends JSON, returns (status, parsed answer). Errors come back too: icecommitd answers
    every error as {"error": {"code", "type", "message"}}."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def create_table(url, namespace, table):
    """Creates the demo table (format version 3) or finds it: creation is idempotent."""
    status, answer = call("POST", f"{url}/v1/namespaces/{namespace}/tables",
                          {"name": table, "schema": SCHEMA, "partition-spec": SPEC})
    if status not in (200, 201):
        raise SystemExit(f"create table: {status} {answer}")
    return answer


def commit(url, namespace, table, body):
    """Commits and returns the receipt. A 503/504 is retried with the same body and key: the
    key makes the retry safe (committed at most once)."""
    for _ in range(10):
        status, answer = call("POST", f"{url}/v1/namespaces/{namespace}/tables/{table}/commits", body)
        if status not in (503, 504):
            break
    if status != 200:
        raise SystemExit(f"commit: {status} {answer}")
    return answer


def print_receipt(receipt):
    print(f"committed snapshot {receipt['snapshot-id']} (sequence number {receipt['sequence-number']}, "
          f"first-row-id {receipt['snapshot-first-row-id']})")
    for m in receipt["manifests"]:
        for f in m["data-files"]:
            print(f"  {f['location']}: {f['record-count']} rows, _row_id {f['first-row-id']}..{f['last-row-id']}, "
                  f"_last_updated_sequence_number {f['last-updated-sequence-number']}")
