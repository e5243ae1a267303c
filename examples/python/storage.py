# SPDX-License-Identifier: Apache-2.0
"""Where the examples' files are: the table's location decides. s3://bucket/key (also s3a://,
s3n://) is S3, through pyarrow's S3 filesystem; anything else is a local directory.

S3 settings come from where AWS tools take them, or from flags:
  --s3-endpoint  or AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL (unset: AWS itself)
                 e.g. http://127.0.0.1:8333 for SeaweedFS or MinIO; addressing is path-style
  --s3-region    or AWS_REGION, AWS_DEFAULT_REGION (unset: us-east-1)
  keys           AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); unset: the
                 AWS SDK's default chain (~/.aws/credentials, AWS_PROFILE, instance roles)"""
import argparse
import os
import urllib.parse

import pyarrow.fs as pafs

S3_SCHEMES = ("s3", "s3a", "s3n")


def add_arguments(parser):
    g = parser.add_argument_group("S3 (tables whose location is s3://...)")
    g.add_argument("--s3-endpoint", default=os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL"),
                   help="S3 endpoint URL (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS)")
    g.add_argument("--s3-region",
                   default=os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1",
                   help="region (default: $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)")


def from_environment():
    """The settings without flags: from the environment alone."""
    p = argparse.ArgumentParser()
    add_arguments(p)
    return p.parse_args([])


def is_s3(location):
    return urllib.parse.urlparse(location).scheme in S3_SCHEMES


def _keys():
    key_id, secret = os.environ.get("AWS_ACCESS_KEY_ID"), os.environ.get("AWS_SECRET_ACCESS_KEY")
    if not (key_id and secret):
        return {}           # the AWS SDK's default credential chain
    return {"access_key": key_id, "secret_key": secret, "session_token": os.environ.get("AWS_SESSION_TOKEN")}


def filesystem(location, args):
    """(pyarrow filesystem, path in it) for a location: for s3://bucket/key, an S3FileSystem and
    "bucket/key"; for a local path, the local filesystem and the path itself."""
    if not is_s3(location):
        return pafs.LocalFileSystem(), location
    u = urllib.parse.urlparse(location)
    options = {"region": args.s3_region, **_keys()}
    if args.s3_endpoint:
        e = urllib.parse.urlparse(args.s3_endpoint if "://" in args.s3_endpoint else f"https://{args.s3_endpoint}")
        options.update(endpoint_override=e.netloc, scheme=e.scheme)
    return pafs.S3FileSystem(**options), u.netloc + u.path


def pyiceberg_properties(location, args):
    """PyIceberg FileIO properties (s3.*) for a table at location; none for a local table. The
    region is always given: without one PyIceberg asks AWS where the bucket is."""
    if not is_s3(location):
        return {}
    keys = _keys()
    props = {"s3.region": args.s3_region, "s3.endpoint": args.s3_endpoint,
             "s3.access-key-id": keys.get("access_key"), "s3.secret-access-key": keys.get("secret_key"),
             "s3.session-token": keys.get("session_token")}
    return {k: v for k, v in props.items() if v}


def newest_metadata(table_location, args):
    """The newest metadata file of a table of the embedded (Hadoop-layout) catalog, found as
    Iceberg's Hadoop tables are read: the version in metadata/version-hint.text, then
    v<N+1>.metadata.json as long as it exists (the hint may lag behind the newest version)."""
    table_location = table_location.rstrip("/")
    fs, path = filesystem(table_location, args)
    with fs.open_input_stream(f"{path}/metadata/version-hint.text") as f:
        version = int(f.read().decode().strip())
    while fs.get_file_info(f"{path}/metadata/v{version + 1}.metadata.json").type != pafs.FileType.NotFound:
        version += 1
    return f"{table_location}/metadata/v{version}.metadata.json"
