// SPDX-License-Identifier: Apache-2.0
//
// The "commit-overlap" subcommand: writes one Parquet data file of --rows rows (ids from
// --start-id) and commits it in a data manifest whose first_row_id is --manifest-first-row-id,
// through Iceberg's low-level API (org.apache.iceberg.LowLevelCommit), so that the table holds
// two manifests claiming the same row ids. Prints the snapshot's numbers as JSON.
//
//   commit-overlap --uri U --table ns.name --rows R --start-id K --manifest-first-row-id F
package icecommit.peers;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.LowLevelCommit;
import org.apache.iceberg.Table;
import org.apache.iceberg.rest.RESTCatalog;

final class CommitOverlap {
  private CommitOverlap() {}

  static String run(Args args) throws Exception {
    long rows = args.lng("rows");
    long startId = args.lng("start-id");
    long manifestFirstRowId = args.lng("manifest-first-row-id");
    if (rows < 1 || manifestFirstRowId < 0) {
      throw new Args.UsageException("--rows must be >= 1 and --manifest-first-row-id >= 0");
    }
    try (RESTCatalog catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(Peer.ident(args));
      DataFile file = PeerData.writeDataFile(table, startId, rows, 0);
      String manifest = PeerData.metadataDir(table) + "/overlap-" + UUID.randomUUID() + "-m0.avro";
      Map<String, Object> out =
          LowLevelCommit.commitWithManifestFirstRowId(table, List.of(file), manifest, manifestFirstRowId);
      out.put("data-file", file.location());
      return Peer.JSON.writeValueAsString(out);
    }
  }
}
