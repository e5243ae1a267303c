// SPDX-License-Identifier: Apache-2.0
//
// Commits a snapshot the way no well-behaved writer would, through Iceberg's package-private
// low-level API (ManifestLists, GenericManifestFile, BaseSnapshot) and TableOperations: a new
// data manifest whose first_row_id is set explicitly, so that its row ids overlap ids assigned
// before. The snapshot itself takes first-row-id = next-row-id, so the catalog accepts it. Used
// by the lineage-audit tests, which must see the overlap flagged.
package org.apache.iceberg;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

public final class LowLevelCommit {
  private LowLevelCommit() {}

  /**
   * Writes a v3 manifest of {@code files} at {@code manifestLocation} and commits to main a snapshot
   * whose manifest list holds it, with first_row_id {@code manifestFirstRowId}, before every manifest
   * of the current snapshot. Returns the snapshot's numbers.
   */
  public static Map<String, Object> commitWithManifestFirstRowId(
      Table table, List<DataFile> files, String manifestLocation, long manifestFirstRowId)
      throws IOException {
    TableOperations ops = ((HasTableOperations) table).operations();
    TableMetadata base = ops.refresh();
    Snapshot parent = base.currentSnapshot();
    long snapshotId = ops.newSnapshotId();
    long sequenceNumber = base.nextSequenceNumber();
    long firstRowId = base.nextRowId();

    ManifestWriter<DataFile> writer =
        ManifestFiles.write(3, table.spec(), table.io().newOutputFile(manifestLocation), snapshotId);
    try {
      for (DataFile f : files) {
        writer.add(f);
      }
    } finally {
      writer.close();
    }
    ManifestFile written = writer.toManifestFile();
    ManifestFile explicit =
        new GenericManifestFile(
            written.path(), written.length(), written.partitionSpecId(), written.content(),
            written.sequenceNumber(), written.minSequenceNumber(), written.snapshotId(),
            written.partitions(), written.keyMetadata(), written.addedFilesCount(),
            written.addedRowsCount(), written.existingFilesCount(), written.existingRowsCount(),
            written.deletedFilesCount(), written.deletedRowsCount(), manifestFirstRowId);

    String listLocation =
        ops.metadataFileLocation("snap-" + snapshotId + "-1-" + UUID.randomUUID() + ".avro");
    ManifestListWriter list =
        ManifestLists.write(
            3, table.io().newOutputFile(listLocation), ops.encryption(), snapshotId,
            parent == null ? null : parent.snapshotId(), sequenceNumber, firstRowId);
    long addedRows;
    try {
      list.add(explicit);                       // kept as it is: it has a first_row_id
      if (parent != null) {
        list.addAll(parent.allManifests(table.io()));
      }
    } finally {
      list.close();
    }
    addedRows = list.nextRowId() - firstRowId;

    Map<String, String> summary = new LinkedHashMap<>();
    summary.put("added-data-files", Integer.toString(files.size()));
    summary.put("added-records", Long.toString(written.addedRowsCount()));
    Snapshot snapshot =
        new BaseSnapshot(
            sequenceNumber, snapshotId, parent == null ? null : parent.snapshotId(),
            System.currentTimeMillis(), DataOperations.APPEND, summary, base.currentSchemaId(),
            listLocation, firstRowId, addedRows, null);
    TableMetadata updated = TableMetadata.buildFrom(base).setBranchSnapshot(snapshot, SnapshotRef.MAIN_BRANCH).build();
    ops.commit(base, updated);

    Map<String, Object> out = new LinkedHashMap<>();
    out.put("snapshot-id", snapshotId);
    out.put("sequence-number", sequenceNumber);
    out.put("first-row-id", firstRowId);
    out.put("added-rows", addedRows);
    out.put("manifest", written.path());
    out.put("manifest-first-row-id", manifestFirstRowId);
    out.put("manifest-list", listLocation);
    return out;
  }
}
