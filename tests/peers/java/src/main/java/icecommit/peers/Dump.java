// SPDX-License-Identifier: Apache-2.0
//
// The "dump" subcommand: the reference reader's view of a table, as JSON. Reports table-level
// row-lineage state (next-row-id, last-sequence-number), every snapshot, the manifests and data
// files of the chosen ref's snapshot with their values *after* Iceberg's inheritance rules
// (first_row_id, sequence numbers), and every row with _row_id, _last_updated_sequence_number,
// _file and _pos as produced by IcebergGenerics. Rows are sorted by _row_id (nulls last), then
// file and position, so output is stable.
package icecommit.peers;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestReader;
import org.apache.iceberg.MetadataColumns;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.SnapshotRef;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.io.ResolvingFileIO;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.types.Types;

final class Dump {
  private static final String ROW_ID = MetadataColumns.ROW_ID.name();
  private static final String LAST_UPDATED = MetadataColumns.LAST_UPDATED_SEQUENCE_NUMBER.name();

  private Dump() {}

  static String run(Args args) throws Exception {
    String metadataPath = args.str("metadata", null);
    if (metadataPath != null) {
      // No catalog: read the table by its metadata file, as an engine reading a filesystem
      // (Hadoop-layout) catalog's table directly would. ResolvingFileIO picks HadoopFileIO for
      // local paths and S3FileIO for s3:// (configured from PEER_CATALOG_*: s3.endpoint, keys).
      ResolvingFileIO io = new ResolvingFileIO();
      io.setConf(new Configuration());
      io.initialize(Peer.envCatalogProperties());
      Table table = new BaseTable(new StaticTableOperations(metadataPath, io), args.str("table", metadataPath));
      return dump(table, args.str("table", metadataPath), args);
    }
    TableIdentifier id = Peer.ident(args);
    try (var catalog = Peer.catalog(args)) {
      return dump(catalog.loadTable(id), id.toString(), args);
    }
  }

  private static String dump(Table table, String id, Args args) throws Exception {
    String refName = args.str("branch", SnapshotRef.MAIN_BRANCH);
    {
      TableMetadata md = Peer.current(table);
      SnapshotRef ref = md.ref(refName);
      if (ref == null && !refName.equals(SnapshotRef.MAIN_BRANCH)) {
        throw new IllegalArgumentException("table " + id + " has no ref " + refName);
      }
      Snapshot refSnapshot = ref == null ? null : md.snapshot(ref.snapshotId());

      Map<String, Object> out = new LinkedHashMap<>();
      out.put("table", id);
      out.put("table-uuid", md.uuid());
      out.put("location", md.location());
      out.put("metadata-location", md.metadataFileLocation());
      out.put("format-version", md.formatVersion());
      out.put("next-row-id", md.formatVersion() >= 3 ? md.nextRowId() : null);
      out.put("last-sequence-number", md.lastSequenceNumber());
      out.put("current-snapshot-id", md.currentSnapshot() == null ? null
          : md.currentSnapshot().snapshotId());
      out.put("ref", refName);
      out.put("ref-snapshot-id", refSnapshot == null ? null : refSnapshot.snapshotId());

      Map<String, Object> refs = new LinkedHashMap<>();
      for (Map.Entry<String, SnapshotRef> e : md.refs().entrySet()) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("type", e.getValue().type().name().toLowerCase(java.util.Locale.ROOT));
        r.put("snapshot-id", e.getValue().snapshotId());
        refs.put(e.getKey(), r);
      }
      out.put("refs", refs);

      List<Map<String, Object>> snapshots = new ArrayList<>();
      for (Snapshot s : md.snapshots()) {
        snapshots.add(snapshot(s));
      }
      out.put("snapshots", snapshots);

      List<Map<String, Object>> manifests = new ArrayList<>();
      if (refSnapshot != null) {
        for (ManifestFile m : refSnapshot.allManifests(table.io())) {
          manifests.add(manifest(table, m));
        }
      }
      out.put("manifests", manifests);

      if (!args.flag("no-rows")) {
        out.put("rows", refSnapshot == null ? List.of() : rows(table, refSnapshot));
      }
      return Peer.JSON.writeValueAsString(out);
    }
  }

  private static Map<String, Object> snapshot(Snapshot s) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("snapshot-id", s.snapshotId());
    m.put("parent-snapshot-id", s.parentId());
    m.put("sequence-number", s.sequenceNumber());
    m.put("timestamp-ms", s.timestampMillis());
    m.put("first-row-id", s.firstRowId());
    m.put("added-rows", s.addedRows());
    m.put("operation", s.operation());
    m.put("summary", s.summary());
    m.put("manifest-list", s.manifestListLocation());
    m.put("schema-id", s.schemaId());
    return m;
  }

  private static Map<String, Object> manifest(Table table, ManifestFile mf) throws Exception {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("path", mf.path());
    m.put("length", mf.length());
    m.put("partition-spec-id", mf.partitionSpecId());
    m.put("content", mf.content().id());
    m.put("first-row-id", mf.firstRowId());
    m.put("added-files", mf.addedFilesCount());
    m.put("existing-files", mf.existingFilesCount());
    m.put("deleted-files", mf.deletedFilesCount());
    m.put("added-rows", mf.addedRowsCount());
    m.put("existing-rows", mf.existingRowsCount());
    m.put("deleted-rows", mf.deletedRowsCount());
    m.put("sequence-number", mf.sequenceNumber());
    m.put("min-sequence-number", mf.minSequenceNumber());
    m.put("added-snapshot-id", mf.snapshotId());

    List<Map<String, Object>> files = new ArrayList<>();
    if (mf.content() == ManifestContent.DATA) {
      try (ManifestReader<?> reader = ManifestFiles.read(mf, table.io(), table.specs())) {
        for (ContentFile<?> f : reader) {
          files.add(file(f));
        }
      }
    } else {
      try (ManifestReader<?> reader =
          ManifestFiles.readDeleteManifest(mf, table.io(), table.specs())) {
        for (ContentFile<?> f : reader) {
          files.add(file(f));
        }
      }
    }
    m.put("files", files);
    return m;
  }

  private static Map<String, Object> file(ContentFile<?> f) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("path", f.location());
    m.put("content", f.content().id());
    m.put("first-row-id", f.firstRowId());
    m.put("record-count", f.recordCount());
    m.put("file-size-in-bytes", f.fileSizeInBytes());
    m.put("data-sequence-number", f.dataSequenceNumber());
    m.put("file-sequence-number", f.fileSequenceNumber());
    m.put("partition", f.partition() == null || f.partition().size() == 0 ? null
        : partitionValues(f));
    return m;
  }

  private static List<Object> partitionValues(ContentFile<?> f) {
    List<Object> values = new ArrayList<>();
    for (int i = 0; i < f.partition().size(); i++) {
      values.add(jsonValue(f.partition().get(i, Object.class)));
    }
    return values;
  }

  private static List<Map<String, Object>> rows(Table table, Snapshot snapshot) throws Exception {
    List<Types.NestedField> cols =
        new ArrayList<>(MetadataColumns.schemaWithRowLineage(table.schema()).columns());
    cols.add(MetadataColumns.FILE_PATH);
    cols.add(MetadataColumns.ROW_POSITION);
    Schema projection = new Schema(cols);

    List<Map<String, Object>> rows = new ArrayList<>();
    try (CloseableIterable<Record> records =
        IcebergGenerics.read(table)
            .useSnapshot(snapshot.snapshotId())
            .project(projection)
            .build()) {
      for (Record r : records) {
        Map<String, Object> row = new LinkedHashMap<>();
        for (Types.NestedField c : table.schema().columns()) {
          row.put(c.name(), jsonValue(r.getField(c.name())));
        }
        row.put(ROW_ID, r.getField(ROW_ID));
        row.put(LAST_UPDATED, r.getField(LAST_UPDATED));
        row.put("file", jsonValue(r.getField(MetadataColumns.FILE_PATH.name())));
        row.put("pos", r.getField(MetadataColumns.ROW_POSITION.name()));
        rows.add(row);
      }
    }
    rows.sort(
        Comparator.comparing((Map<String, Object> r) -> (Long) r.get(ROW_ID),
                Comparator.nullsLast(Comparator.naturalOrder()))
            .thenComparing(r -> (String) r.get("file"), Comparator.nullsLast(Comparator.naturalOrder()))
            .thenComparing(r -> (Long) r.get("pos"), Comparator.nullsLast(Comparator.naturalOrder())));
    return rows;
  }

  private static Object jsonValue(Object v) {
    if (v == null || v instanceof Number || v instanceof Boolean) {
      return v;
    }
    return v.toString();
  }
}
