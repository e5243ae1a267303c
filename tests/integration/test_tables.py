# SPDX-License-Identifier: Apache-2.0
"""Namespaces and tables created through icecommitd: the default format version is 3, creation
is idempotent for the same table and refused for a different one, a missing namespace is
created on the way, and the new table takes commits whose rows Iceberg Java reads back with
the row ids the rules predict."""
import uuid

import pytest

from conftest import BACKENDS, backend_catalog, filesystem_metadata_location, http, peer, pyiceberg_table


@pytest.fixture(params=BACKENDS)
def catalog(request):
    return backend_catalog(request)

# The schema the Java peer writes rows for: id, data, bucket (partition source).
SCHEMA = {"type": "struct", "fields": [
    {"id": 1, "name": "id", "required": True, "type": "long"},
    {"id": 2, "name": "data", "required": False, "type": "string"},
    {"id": 3, "name": "bucket", "required": False, "type": "int"},
]}
SPEC = {"fields": [{"source-id": 3, "name": "bucket", "transform": "identity"}]}


def create(daemon, ns, body):
    return http("POST", f"{daemon.url}/v1/namespaces/{ns}/tables", body)


def test_namespace_creation_is_idempotent(catalog, daemon):
    ns = "n_" + uuid.uuid4().hex[:8]
    # Namespace properties: stored by REST catalogs; a Hadoop-layout warehouse has nowhere to
    # keep them, and says so instead of dropping them.
    status, _, body = http("POST", f"{daemon.url}/v1/namespaces", {"namespace": [ns], "properties": {"owner": "etl"}})
    if catalog["backend"] == "filesystem":
        assert status == 422 and "not supported" in body["error"]["message"], body
        status, _, body = http("POST", f"{daemon.url}/v1/namespaces", {"namespace": [ns]})
    assert status == 201, body
    assert body == {"namespace": [ns], "created": True}
    status, _, body = http("POST", f"{daemon.url}/v1/namespaces", {"namespace": [ns]})
    assert status == 200, body
    assert body == {"namespace": [ns], "created": False}
    status, _, body = http("POST", f"{daemon.url}/v1/namespaces", {"namespace": "flat"})
    assert status == 400 and "\"namespace\" must be an array" in body["error"]["message"]


def test_table_created_as_v3_in_a_new_namespace_then_committed_to(catalog, daemon):
    ns, name = "n_" + uuid.uuid4().hex[:8], "events"
    request = {"name": name, "schema": SCHEMA, "partition-spec": SPEC,
               "properties": {"owner": "etl"}}
    status, _, created = create(daemon, ns, request)
    assert status == 201, created
    assert created["created"] is True and created["format-version"] == 3
    assert created["namespace"] == [ns] and created["name"] == name
    assert [f["name"] for f in created["schema"]["fields"]] == ["id", "data", "bucket"]
    assert [f["transform"] for f in created["partition-spec"]["fields"]] == ["identity"]

    # The same request again: the same table, 200, nothing created.
    status, _, again = create(daemon, ns, request)
    assert status == 200, again
    assert again["created"] is False and again["table-uuid"] == created["table-uuid"]
    assert again["metadata-location"] == created["metadata-location"]

    # Same name, other shape: refused with the difference, the table untouched.
    other = dict(request, schema={"type": "struct", "fields": SCHEMA["fields"][:2]}, **{"partition-spec": {"fields": []}})
    status, _, body = create(daemon, ns, other)
    assert status == 409 and body["error"]["type"] == "table-exists", body
    assert "the schema has 3 fields, the request 2" in body["error"]["message"]
    status, _, body = create(daemon, ns, dict(request, **{"format-version": 2}))
    assert status == 409
    assert "the table has format version 3, the request asks for 2" in body["error"]["message"]

    meta = peer("metadata", "--uri", catalog["uri"], "--table", f"{ns}.{name}")
    assert meta["format-version"] == 3 and meta["table-uuid"] == created["table-uuid"]
    assert meta["next-row-id"] == 0

    # A commit through icecommitd: ids from 0, in manifest order, read back by Iceberg Java.
    staged = peer("stage", "--uri", catalog["uri"], "--table", f"{ns}.{name}", "--files", 2, "--rows", 3,
                  "--start-id", 100)
    status, _, receipt = daemon.commit(ns, name, {"idempotency-key": "tables-1",
                                                  "staged-manifests": [staged["manifest"]]})
    assert status == 200, receipt
    assert receipt["snapshot-first-row-id"] == 0
    dump = peer("dump", "--uri", catalog["uri"], "--table", f"{ns}.{name}")
    assert dump["next-row-id"] == 6
    assert sorted((r["id"], r["_row_id"]) for r in dump["rows"]) == [(100 + i, i) for i in range(6)]
    if catalog["backend"] == "filesystem":
        # Engines without a catalog read the table by its metadata file: Iceberg Java
        # (StaticTableOperations) sees the same rows and ids, PyIceberg the same count.
        location = filesystem_metadata_location(catalog["uri"], f"{ns}.{name}")
        assert location.endswith("/v2.metadata.json")
        direct = peer("dump", "--metadata", location, "--table", f"{ns}.{name}")
        assert sorted((r["id"], r["_row_id"], r["_last_updated_sequence_number"]) for r in direct["rows"]) == \
            [(100 + i, i, 1) for i in range(6)]
    assert pyiceberg_table(catalog, f"{ns}.{name}").scan().to_arrow().num_rows == 6


def test_v2_on_request_and_bad_requests(catalog, daemon):
    ns = "n_" + uuid.uuid4().hex[:8]
    status, _, created = create(daemon, ns, {"name": "t2", "format-version": 2, "schema": SCHEMA})
    assert status == 201 and created["format-version"] == 2, created
    assert peer("metadata", "--uri", catalog["uri"], "--table", f"{ns}.t2")["format-version"] == 2

    status, _, body = create(daemon, ns, {"name": "t3"})
    assert status == 400 and body["error"]["message"] == "\"schema\" is required"
    status, _, body = create(daemon, ns, {"name": "t3", "schema": SCHEMA, "format-version": 9})
    assert status == 400 and "must be 1, 2 or 3" in body["error"]["message"]
    status, _, body = create(daemon, ns, {"name": "t4", "schema": {"type": "struct", "fields": [
        {"id": 1, "name": "x", "required": True, "type": "decimal(40,2)"}]}})
    assert status == 400 and "schema: field 'x' has unknown type 'decimal(40,2)'" in body["error"]["message"], body
    # What only the catalog can judge (here: a partition source that does not exist) comes back
    # as 422 with the catalog's reason, and no table is left behind.
    status, _, body = create(daemon, ns, {"name": "t5", "schema": SCHEMA, "partition-spec": {
        "fields": [{"source-id": 99, "name": "p", "transform": "identity"}]}})
    assert status == 422 and body["error"]["type"] == "invalid-table", body
    assert "99" in body["error"]["message"]
    status, _, body = create(daemon, ns, {"name": "t5", "schema": SCHEMA})
    assert status == 201, body
