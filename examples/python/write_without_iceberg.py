#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A writer with no Iceberg library: pyarrow writes Parquet files, and icecommitd is told what
they are (the `data-files` of a commit request); icecommitd writes the manifest and commits.

    write_without_iceberg.py --url http://127.0.0.1:8080 --namespace demo --table events \
        --files 3 --rows 4 --start-id 0 --key job-1 [--write-only] [--s3-endpoint URL]

With --write-only the files are written but not committed; their descriptions are printed as
JSON (for examples/curl/commit.sh, or any other client). The files go where the table is: a
local directory, or for an s3:// location the bucket (settings: see storage.py)."""
import argparse
import datetime
import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

import storage
from icecommit_api import commit, create_table, print_receipt


def arrow_schema(table_schema):
    """The Parquet schema with Iceberg field ids (PARQUET:field_id), so that readers map columns
    by id, which survives renames. Writers that cannot set ids need the table property
    schema.name-mapping.default instead."""
    types = {"long": pa.int64(), "string": pa.string(), "double": pa.float64(), "date": pa.date32()}
    return pa.schema([pa.field(f["name"], types[f["type"]], nullable=not f["required"],
                               metadata={b"PARQUET:field_id": str(f["id"]).encode()})
                      for f in table_schema["fields"]])


def describe(path, size, table, ids_by_name, day):
    """The REST spec's DataFile form: what icecommitd needs, plus statistics keyed by field id,
    which let readers skip the file (bounds are Iceberg JSON single values)."""
    ids = table.column("id").to_pylist()
    amounts = table.column("amount").to_pylist()
    id_field, amount_field = ids_by_name["id"], ids_by_name["amount"]
    return {
        "file-path": path,
        "file-format": "parquet",
        "record-count": table.num_rows,
        "file-size-in-bytes": size,
        "partition": [day.isoformat()],
        "value-counts": {"keys": [id_field, amount_field], "values": [table.num_rows, table.num_rows]},
        "null-value-counts": {"keys": [id_field, amount_field], "values": [0, 0]},
        "lower-bounds": {"keys": [id_field, amount_field], "values": [min(ids), min(amounts)]},
        "upper-bounds": {"keys": [id_field, amount_field], "values": [max(ids), max(amounts)]},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--namespace", default="demo")
    p.add_argument("--table", default="events")
    p.add_argument("--files", type=int, default=3)
    p.add_argument("--rows", type=int, default=4)
    p.add_argument("--start-id", type=int, default=0)
    p.add_argument("--day", default="2026-11-30")
    p.add_argument("--key", default=None, help="idempotency key (default: a new one)")
    p.add_argument("--write-only", action="store_true")
    storage.add_arguments(p)
    args = p.parse_args()

    created = create_table(args.url, args.namespace, args.table)
    schema = arrow_schema(created["schema"])
    ids_by_name = {f["name"]: f["id"] for f in created["schema"]["fields"]}
    day = datetime.date.fromisoformat(args.day)
    # Data files go under the table location, in the partition's directory (on S3, a key prefix).
    if storage.is_s3(created["location"]):
        directory = f"{created['location'].rstrip('/')}/data/day={day.isoformat()}"
    else:
        directory = os.path.join(created["location"], "data", f"day={day.isoformat()}")
        os.makedirs(directory, exist_ok=True)
    fs, fs_directory = storage.filesystem(directory, args)

    files = []
    for f in range(args.files):
        first = args.start_id + f * args.rows
        ids = list(range(first, first + args.rows))
        table = pa.table({"id": ids, "name": [f"event-{i}" for i in ids],
                          "amount": [i * 1.25 for i in ids], "day": [day] * len(ids)}, schema=schema)
        name = f"{uuid.uuid4()}.parquet"
        pq.write_table(table, f"{fs_directory}/{name}", filesystem=fs)
        size = fs.get_file_info(f"{fs_directory}/{name}").size
        files.append(describe(f"{directory}/{name}", size, table, ids_by_name, day))

    if args.write_only:
        print(json.dumps(files))
        return
    receipt = commit(args.url, args.namespace, args.table,
                     {"idempotency-key": args.key or f"writer-{uuid.uuid4()}", "data-files": files})
    print_receipt(receipt)


if __name__ == "__main__":
    main()
