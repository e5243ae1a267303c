#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A writer that uses PyIceberg to write Parquet files (field ids, partition split, and column
statistics as Iceberg computes them) and icecommitd to commit them: PyIceberg never commits, so
many such writers never race each other on the catalog; icecommitd batches them and assigns
row lineage.

    write_with_pyiceberg.py --url http://127.0.0.1:8080 --namespace demo --table events \
        --rows 5 --start-id 100 --key job-2 [--catalog-uri http://127.0.0.1:8181] [--s3-endpoint URL]

The table is read with PyIceberg from the REST catalog (--catalog-uri), or on icecommitd's
embedded filesystem catalog from its newest metadata file. PyIceberg writes the files where the
table is: a local directory, or for an s3:// location the bucket (its FileIO gets the s3.*
properties from the settings in storage.py)."""
import argparse
import datetime
import uuid

import pyarrow as pa
from pyiceberg.conversions import from_bytes
from pyiceberg.io.pyarrow import _dataframe_to_data_files  # PyIceberg's own file writer
from pyiceberg.table import StaticTable
from pyiceberg.types import DateType, DecimalType, TimestampType, TimestamptzType

import storage
from icecommit_api import commit, create_table, print_receipt

EPOCH = datetime.date(1970, 1, 1)


def load(created, args, identifier):
    properties = storage.pyiceberg_properties(created["location"], args)
    if args.catalog_uri:
        from pyiceberg.catalog.rest import RestCatalog
        return RestCatalog("writer", uri=args.catalog_uri, **properties).load_table(identifier)
    return StaticTable.from_metadata(storage.newest_metadata(created["location"], args), properties=properties)


def json_single_value(iceberg_type, value):
    """Iceberg's JSON single-value form (spec Appendix D) of a Python value PyIceberg holds."""
    if value is None:
        return None
    if isinstance(iceberg_type, DateType):
        return (EPOCH + datetime.timedelta(days=value)).isoformat() if isinstance(value, int) else value.isoformat()
    if isinstance(iceberg_type, (TimestampType, TimestamptzType)) and isinstance(value, int):
        ts = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=value)
        return ts.isoformat(timespec="microseconds") + ("+00:00" if isinstance(iceberg_type, TimestamptzType) else "")
    if isinstance(iceberg_type, DecimalType):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return value


def describe(data_file, table):
    """A PyIceberg DataFile in the REST spec's DataFile form icecommitd takes."""
    schema, spec = table.schema(), table.spec()

    def counts(d):
        return {"keys": list(d), "values": list(d.values())} if d else None

    def bounds(d):
        if not d:
            return None
        keys = [k for k in d if schema.find_field(k).field_type.is_primitive]
        return {"keys": keys, "values": [json_single_value(schema.find_field(k).field_type,
                                                           from_bytes(schema.find_field(k).field_type, d[k]))
                                         for k in keys]}

    partition = [json_single_value(field.transform.result_type(schema.find_field(field.source_id).field_type),
                                   data_file.partition[i])
                 for i, field in enumerate(spec.fields)]
    out = {
        "file-path": data_file.file_path,
        "file-format": data_file.file_format.name.lower(),
        "record-count": data_file.record_count,
        "file-size-in-bytes": data_file.file_size_in_bytes,
        "partition": partition,
        "column-sizes": counts(data_file.column_sizes),
        "value-counts": counts(data_file.value_counts),
        "null-value-counts": counts(data_file.null_value_counts),
        "nan-value-counts": counts(data_file.nan_value_counts),
        "lower-bounds": bounds(data_file.lower_bounds),
        "upper-bounds": bounds(data_file.upper_bounds),
        "split-offsets": data_file.split_offsets,
    }
    return {k: v for k, v in out.items() if v is not None}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--namespace", default="demo")
    p.add_argument("--table", default="events")
    p.add_argument("--rows", type=int, default=5)
    p.add_argument("--start-id", type=int, default=100)
    p.add_argument("--day", default="2026-12-01")
    p.add_argument("--catalog-uri", default=None)
    p.add_argument("--key", default=None, help="idempotency key (default: a new one)")
    storage.add_arguments(p)
    args = p.parse_args()

    created = create_table(args.url, args.namespace, args.table)
    table = load(created, args, f"{args.namespace}.{args.table}")
    day = datetime.date.fromisoformat(args.day)
    ids = list(range(args.start_id, args.start_id + args.rows))
    df = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"event-{i}" for i in ids],
                   "amount": [i * 1.25 for i in ids], "day": [day] * len(ids)},
                  schema=table.schema().as_arrow())
    files = [describe(f, table) for f in _dataframe_to_data_files(table.metadata, df, table.io)]
    receipt = commit(args.url, args.namespace, args.table,
                     {"idempotency-key": args.key or f"pyiceberg-{uuid.uuid4()}", "data-files": files})
    print_receipt(receipt)


if __name__ == "__main__":
    main()
