// SPDX-License-Identifier: Apache-2.0
//
// Ages a table cheaply for the benchmarks (tests/bench/table_age.py): N snapshots built in
// memory through Iceberg's package-private low-level API (ManifestLists, BaseSnapshot) and
// written as one new metadata file, instead of N commits that would each rewrite a growing
// metadata file. Every new snapshot is an append of no files on top of its parent (what
// table.newFastAppend().commit() with nothing appended writes): its own manifest list holding
// the parent's manifests, its sequence number, first-row-id = next-row-id and 0 added rows, so
// the metadata is valid v3 and the current snapshot still reads the same rows.
package org.apache.iceberg;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

public final class BenchHistory {
  private BenchHistory() {}

  /**
   * Metadata of {@code table} with {@code count} more snapshots on main, each an empty append
   * with its own manifest list (written to the table's metadata directory). Nothing is committed.
   */
  public static TableMetadata withEmptyAppends(Table table, long count) throws IOException {
    TableOperations ops = ((HasTableOperations) table).operations();
    TableMetadata base = ops.refresh();
    Snapshot parent = base.currentSnapshot();
    if (parent == null) {
      throw new IllegalArgumentException("the table needs a current snapshot to age");
    }
    List<ManifestFile> manifests = parent.allManifests(table.io());
    TableMetadata.Builder builder = TableMetadata.buildFrom(base);
    long sequenceNumber = base.lastSequenceNumber();
    long nextRowId = base.nextRowId();
    // Timestamps one millisecond apart, ending now: increasing, never in the future.
    long timestamp = System.currentTimeMillis() - count;
    for (long i = 0; i < count; i++) {
      long snapshotId = ops.newSnapshotId();
      sequenceNumber++;
      timestamp++;
      String listLocation =
          ops.metadataFileLocation("snap-" + snapshotId + "-1-" + UUID.randomUUID() + ".avro");
      ManifestListWriter list =
          ManifestLists.write(base.formatVersion(), table.io().newOutputFile(listLocation),
              ops.encryption(), snapshotId, parent.snapshotId(), sequenceNumber, nextRowId);
      try {
        list.addAll(manifests); // all have a first_row_id already: no rows added
      } finally {
        list.close();
      }
      Map<String, String> summary = new LinkedHashMap<>();
      for (Map.Entry<String, String> e : parent.summary().entrySet()) {
        if (e.getKey().startsWith("total-")) {
          summary.put(e.getKey(), e.getValue());
        }
      }
      Snapshot snapshot =
          new BaseSnapshot(sequenceNumber, snapshotId, parent.snapshotId(), timestamp,
              DataOperations.APPEND, summary, base.currentSchemaId(), listLocation,
              base.formatVersion() >= 3 ? nextRowId : null, base.formatVersion() >= 3 ? 0L : null,
              null);
      builder.setBranchSnapshot(snapshot, SnapshotRef.MAIN_BRANCH);
      parent = snapshot;
    }
    return builder.build();
  }
}
