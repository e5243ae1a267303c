// SPDX-License-Identifier: Apache-2.0
//
// The "read-manifest" subcommand: one manifest file read by Iceberg Java as a reader of the table
// would, given its manifest-list entry, so that inheritance applies:
//
//   read-manifest --manifest PATH --list-entry JSON
//
// JSON is the entry as icecommit-avro-tool prints it (read-list, filter-manifest): manifest_path,
// manifest_length, partition_spec_id, content, sequence_number, min_sequence_number,
// added_snapshot_id, counts {added_files_count, ...}, first_row_id (null: none). The manifest is
// read from PATH (the entry's manifest_path is reported, not opened). Prints {"entries": [...]},
// each entry with status, snapshot-id, data- and file-sequence-number, path, content,
// first-row-id, record-count, file-size-in-bytes: DELETED entries included.
package icecommit.peers;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.ManifestContent;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PeerManifestEntries;
import org.apache.iceberg.io.ResolvingFileIO;

final class ReadManifest {
  private ReadManifest() {}

  static String run(Args args) throws Exception {
    String path = args.str("manifest");
    JsonNode entry = Peer.JSON.readTree(args.str("list-entry"));
    ResolvingFileIO io = new ResolvingFileIO();
    io.setConf(new Configuration());
    io.initialize(Peer.envCatalogProperties());
    List<Map<String, Object>> entries = PeerManifestEntries.read(new ListEntry(path, entry), io);
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("manifest", entry.path("manifest_path").asText(path));
    out.put("entries", entries);
    return Peer.JSON.writeValueAsString(out);
  }

  private static Integer optInt(JsonNode n) {
    return n == null || n.isNull() || n.isMissingNode() ? null : n.asInt();
  }

  private static Long optLong(JsonNode n) {
    return n == null || n.isNull() || n.isMissingNode() ? null : n.asLong();
  }

  /** A manifest-list entry from the tool's JSON, the file read from {@code path}. */
  private static final class ListEntry implements ManifestFile {
    private final String path;
    private final JsonNode e;
    private final JsonNode counts;

    ListEntry(String path, JsonNode e) {
      this.path = path;
      this.e = e;
      this.counts = e.path("counts");
    }

    @Override public String path() { return path; }
    @Override public long length() { return e.path("manifest_length").asLong(); }
    @Override public int partitionSpecId() { return e.path("partition_spec_id").asInt(); }
    @Override public ManifestContent content() {
      return ManifestContent.fromId(e.path("content").asInt());
    }
    @Override public long sequenceNumber() { return e.path("sequence_number").asLong(); }
    @Override public long minSequenceNumber() { return e.path("min_sequence_number").asLong(); }
    @Override public Long snapshotId() { return optLong(e.get("added_snapshot_id")); }
    @Override public Integer addedFilesCount() { return optInt(counts.get("added_files_count")); }
    @Override public Long addedRowsCount() { return optLong(counts.get("added_rows_count")); }
    @Override public Integer existingFilesCount() { return optInt(counts.get("existing_files_count")); }
    @Override public Long existingRowsCount() { return optLong(counts.get("existing_rows_count")); }
    @Override public Integer deletedFilesCount() { return optInt(counts.get("deleted_files_count")); }
    @Override public Long deletedRowsCount() { return optLong(counts.get("deleted_rows_count")); }
    @Override public List<PartitionFieldSummary> partitions() { return null; }
    @Override public ByteBuffer keyMetadata() { return null; }
    @Override public Long firstRowId() { return optLong(e.get("first_row_id")); }
    @Override public ManifestFile copy() { return this; }
  }
}
