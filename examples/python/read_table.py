#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads a table of icecommitd's embedded filesystem catalog with PyIceberg, by its metadata
file, as any engine without a catalog would: the snapshots with their row-id ranges, then every
row. The table may be a local directory or on S3 (settings: see storage.py).

    read_table.py WAREHOUSE/NAMESPACE/TABLE
    read_table.py s3://BUCKET/WAREHOUSE/NAMESPACE/TABLE [--s3-endpoint URL]"""
import argparse

from pyiceberg.table import StaticTable

import storage


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table_location", metavar="WAREHOUSE/NAMESPACE/TABLE")
    storage.add_arguments(p)
    args = p.parse_args()
    location = storage.newest_metadata(args.table_location, args)
    table = StaticTable.from_metadata(location, properties=storage.pyiceberg_properties(location, args))
    md = table.metadata
    print(f"{location}: format version {md.format_version}, next-row-id {md.next_row_id}")
    for s in md.snapshots:
        last = s.first_row_id + s.added_rows - 1 if s.first_row_id is not None else None
        print(f"  snapshot {s.snapshot_id}: sequence number {s.sequence_number}, "
              f"row ids {s.first_row_id}..{last} ({s.added_rows} rows), "
              f"keys {s.summary.additional_properties.get('icecommit.idempotency-keys')}")
    rows = table.scan().to_arrow().sort_by("id").to_pylist()
    print(f"{len(rows)} rows:")
    print(f"  {'id':>5} {'name':<11} {'amount':>7}  day")
    for r in rows:
        print(f"  {r['id']:>5} {r['name']:<11} {r['amount']:>7.2f}  {r['day']}")


if __name__ == "__main__":
    main()
