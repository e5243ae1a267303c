# SPDX-License-Identifier: Apache-2.0
"""The S3 test peers on their own, without icecommitd: SeaweedFS (strict SigV4) behind Apache
Iceberg's REST catalog (ResolvingFileIO, vended credentials), and Iceberg Java writing, staging
and reading a v3 table at an s3:// location. What the daemon's S3 tests build on."""
import json
import urllib.parse
import uuid

from conftest import S3_ACCESS_KEY, S3_SECRET_KEY, http, peer, s3_key, s3_peer_env, s3_request


def test_java_table_on_s3(s3_rest_catalog):
    catalog, s3 = s3_rest_catalog, s3_rest_catalog["s3"]
    env = s3_peer_env(s3)
    name = "t_" + uuid.uuid4().hex[:12]
    ident = f"s3ns.{name}"
    location = f"{catalog['location_prefix']}/{name}"

    created = peer("create-table", "--uri", catalog["uri"], "--table", ident,
                   "--format-version", 3, "--location", location, env=env)
    assert created["location"] == location, created
    assert created["format-version"] == 3
    assert created["metadata-location"].startswith(location + "/metadata/"), created

    # The catalog vends its own S3 keys (include-credentials); endpoint and region it does not.
    status, _, loaded = http("GET", f"{catalog['uri']}/v1/namespaces/s3ns/tables/{name}")
    assert status == 200, loaded
    assert loaded["config"]["s3.access-key-id"] == S3_ACCESS_KEY
    assert loaded["config"]["s3.secret-access-key"] == S3_SECRET_KEY

    appended = peer("append", "--uri", catalog["uri"], "--table", ident, "--rows", 5,
                    "--start-id", 0, env=env)
    assert all(p.startswith(location + "/data/") for p in appended["data-files"]), appended

    staged = peer("stage", "--uri", catalog["uri"], "--table", ident, "--files", 1, "--rows", 3,
                  "--start-id", 5, env=env)
    manifest = staged["manifest"]
    assert manifest.startswith(location + "/metadata/staged-"), staged
    assert staged["format-version"] == 3 and staged["added-rows"] == 3

    dump = peer("dump", "--uri", catalog["uri"], "--table", ident, env=env)
    assert dump["next-row-id"] == 5  # the staged manifest is not committed
    assert [(r["id"], r["_row_id"]) for r in dump["rows"]] == [(i, i) for i in range(5)]

    # What Java wrote is in the bucket, readable with libcurl's SigV4 (as the daemon signs).
    status, headers = s3_request(s3, "HEAD", s3_key(s3, manifest))
    assert status == 200, headers
    assert f"content-length: {staged['manifest-length']}" in headers.decode().lower()
    status, body = s3_request(s3, "GET", s3_key(s3, created["metadata-location"]))
    assert status == 200 and json.loads(body)["format-version"] == 3
    for f in staged["data-files"]:
        status, body = s3_request(s3, "HEAD", s3_key(s3, f["path"]))
        assert status == 200, (f, body)
    prefix = urllib.parse.quote(s3_key(s3, location) + "/metadata/", safe="")
    status, body = s3_request(s3, "GET", f"?list-type=2&prefix={prefix}")
    assert status == 200 and f"<Key>{s3_key(s3, manifest)}</Key>".encode() in body, body

    # Auth is enforced: unsigned and wrongly signed requests are refused.
    status, body = s3_request(s3, "GET", s3_key(s3, manifest), signed=False)
    assert status == 403, body
    status, body = s3_request(s3, "GET", s3_key(s3, manifest), secret_key="wrong")
    assert status == 403 and b"SignatureDoesNotMatch" in body, body


def test_local_tables_stay_local(s3_rest_catalog):
    """Variant B: tables created without a location stay in the catalog's local warehouse."""
    name = "t_" + uuid.uuid4().hex[:12]
    created = peer("create-table", "--uri", s3_rest_catalog["uri"], "--table", f"s3ns.{name}")
    assert created["location"].startswith("file:" + s3_rest_catalog["dir"]) or \
        created["location"].startswith(s3_rest_catalog["dir"]), created
