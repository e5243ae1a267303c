// SPDX-License-Identifier: Apache-2.0
//
// Every entry of one manifest as Iceberg Java reads it, DELETED ones included: ManifestReader's
// entries() (package-private, hence this package) with Java's inheritance from the manifest-list
// entry applied (snapshot id, sequence numbers, first_row_id). Used by icecommit.peers.ReadManifest.
package org.apache.iceberg;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;

public final class PeerManifestEntries {
  private PeerManifestEntries() {}

  /** The entries of {@code manifest} (its list entry), in file order. */
  public static List<Map<String, Object>> read(ManifestFile manifest, FileIO io) throws IOException {
    List<Map<String, Object>> out = new ArrayList<>();
    if (manifest.content() == ManifestContent.DATA) {
      try (ManifestReader<DataFile> reader = ManifestFiles.read(manifest, io);
          CloseableIterable<ManifestEntry<DataFile>> entries = reader.entries()) {
        for (ManifestEntry<DataFile> e : entries) {
          out.add(entry(e));
        }
      }
    } else {
      try (ManifestReader<DeleteFile> reader = ManifestFiles.readDeleteManifest(manifest, io, null);
          CloseableIterable<ManifestEntry<DeleteFile>> entries = reader.entries()) {
        for (ManifestEntry<DeleteFile> e : entries) {
          out.add(entry(e));
        }
      }
    }
    return out;
  }

  // Copied at once: the reader reuses its entry objects.
  private static Map<String, Object> entry(ManifestEntry<? extends ContentFile<?>> e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("status", e.status().name().toLowerCase(Locale.ROOT));
    m.put("snapshot-id", e.snapshotId());
    m.put("data-sequence-number", e.dataSequenceNumber());
    m.put("file-sequence-number", e.fileSequenceNumber());
    m.put("path", e.file().location());
    m.put("content", e.file().content().id());
    m.put("first-row-id", e.file().firstRowId());
    m.put("record-count", e.file().recordCount());
    m.put("file-size-in-bytes", e.file().fileSizeInBytes());
    return m;
  }
}
