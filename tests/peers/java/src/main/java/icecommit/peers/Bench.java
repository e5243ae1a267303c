// SPDX-License-Identifier: Apache-2.0
//
// Subcommands for the benchmarks under tests/bench (never used by the tests):
//
//   bench-manifests --uri U --table ns.name --manifests N [--rows R]
//       one commit that leaves N manifests in the table's manifest list: one real Parquet file
//       of R rows per 50,000 manifests, N hard links to them (distinct data files, no extra disk), N staged manifests of
//       one file each, then one FastAppend of all N manifests (manifest_count.py)
//   bench-history --uri U --table ns.name --snapshots N
//       adds N empty-append snapshots (BenchHistory) in one new metadata file: a HadoopCatalog
//       table gets it as its next version; a REST table is dropped (files kept) and registered
//       again at the new metadata file (table_age.py)
//   bench-commit --uri U --table ns.name --count C [--rows R] [--start-id K] [--warmup W
//       --warmup-table ns.other] [--merge] [--row-ids]
//       every data file written first, W untimed appends to the warm-up table (JIT, connection
//       pool) and then C appends of one file each to the table, each measured around commit():
//       wall "commit-ms", this thread's CPU "thread-cpu-ms" and the whole JVM's "process-cpu-ms"
//       (GC and compiler threads included). FastAppend unless --merge (table.newAppend(): merge
//       append, manifests merged by the table's commit.manifest-merge.* properties). --row-ids:
//       after each commit, the first_row_id its file got ("first-row-ids", by data file path;
//       read from the snapshot's added files, outside the measured part) (merging.py)
package icecommit.peers;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.BenchHistory;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.DataFiles;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;

final class Bench {
  private static final long LINKS_PER_FILE = 50_000;

  private Bench() {}

  static boolean handles(String cmd) {
    return cmd.equals("bench-manifests") || cmd.equals("bench-history") || cmd.equals("bench-commit");
  }

  static String run(String cmd, String[] rest) throws Exception {
    switch (cmd) {
      case "bench-manifests":
        return manifests(new Args(rest, Set.of("uri", "table", "manifests", "rows"), Set.of()));
      case "bench-history":
        return history(new Args(rest, Set.of("uri", "table", "snapshots"), Set.of()));
      default:
        return commit(new Args(rest,
            Set.of("uri", "table", "count", "rows", "start-id", "warmup", "warmup-table"),
            Set.of("merge", "row-ids")));
    }
  }

  private static Path localPath(String location) {
    return location.startsWith("file:") ? Paths.get(java.net.URI.create(location)) : Paths.get(location);
  }

  private static String manifests(Args args) throws Exception {
    long n = args.lng("manifests");
    long rows = args.lng("rows", 4);
    long t0 = System.nanoTime();
    try (var catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(Peer.ident(args));
      String dir = PeerData.metadataDir(table);
      AppendFiles append = table.newFastAppend();
      List<Path> sources = new ArrayList<>();
      DataFile first = null;
      Path firstPath = null;
      for (long i = 0; i < n; i++) {
        if (i % LINKS_PER_FILE == 0) { // ext4 allows 65000 links to one file
          first = PeerData.writeDataFile(table, 0, rows, 0);
          firstPath = localPath(first.location());
          sources.add(firstPath);
        }
        String location = first.location().replace(".parquet", "-" + i + ".parquet");
        Files.createLink(localPath(location), firstPath);
        DataFile df = DataFiles.builder(table.spec()).copy(first).withPath(location).build();
        ManifestFile mf = PeerData.writeStagedManifest(
            table, dir + "/bench-" + UUID.randomUUID() + "-m0.avro", List.of(df));
        append.appendManifest(mf);
      }
      append.commit();
      for (Path p : sources) {
        Files.delete(p); // only their links are in the table
      }
      table.refresh();
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("manifests", table.currentSnapshot().allManifests(table.io()).size());
      out.put("snapshot-id", table.currentSnapshot().snapshotId());
      out.put("seconds", (System.nanoTime() - t0) / 1e9);
      return Peer.JSON.writeValueAsString(out);
    }
  }

  private static String history(Args args) throws Exception {
    long n = args.lng("snapshots");
    long t0 = System.nanoTime();
    TableIdentifier id = Peer.ident(args);
    try (var catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(id);
      TableOperations ops = ((HasTableOperations) table).operations();
      TableMetadata base = ops.current();
      TableMetadata aged = BenchHistory.withEmptyAppends(table, n);
      if (catalog instanceof RESTCatalog) {
        // One metadata file written whole and registered: a commit of N snapshot updates would
        // be one request of N changes for the server to replay.
        String location = ops.metadataFileLocation("bench-aged-" + UUID.randomUUID() + ".metadata.json");
        TableMetadataParser.write(aged, table.io().newOutputFile(location));
        catalog.dropTable(id, false);
        catalog.registerTable(id, location);
      } else {
        ops.commit(base, aged); // HadoopTableOperations: writes the next vN.metadata.json
      }
      table = catalog.loadTable(id);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("snapshots", Peer.current(table).snapshots().size());
      out.put("metadata-location", Peer.current(table).metadataFileLocation());
      out.put("seconds", (System.nanoTime() - t0) / 1e9);
      return Peer.JSON.writeValueAsString(out);
    }
  }

  private static String commit(Args args) throws Exception {
    long count = args.lng("count");
    long rows = args.lng("rows", 4);
    long startId = args.lng("start-id", 0);
    long warmup = args.lng("warmup", 0);
    boolean merge = args.flag("merge");
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    com.sun.management.OperatingSystemMXBean os =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
    try (var catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(Peer.ident(args));
      List<DataFile> files = new ArrayList<>();
      for (long i = 0; i < count; i++) {
        files.add(PeerData.writeDataFile(table, startId + i * rows, rows, 0));
      }
      if (warmup > 0) {
        Table warm = catalog.loadTable(TableIdentifier.parse(args.str("warmup-table")));
        for (long i = 0; i < warmup; i++) {
          DataFile df = PeerData.writeDataFile(warm, startId + (count + i) * rows, rows, 0);
          (merge ? warm.newAppend() : warm.newFastAppend()).appendFile(df).commit();
        }
      }
      List<Double> wall = new ArrayList<>();
      List<Double> threadCpu = new ArrayList<>();
      List<Double> processCpu = new ArrayList<>();
      List<Long> snapshots = new ArrayList<>();
      Map<String, Long> firstRowIds = new LinkedHashMap<>();
      for (DataFile df : files) {
        AppendFiles append = merge ? table.newAppend() : table.newFastAppend();
        append.appendFile(df);
        long c0 = threads.getCurrentThreadCpuTime();
        long p0 = os.getProcessCpuTime();
        long t0 = System.nanoTime();
        append.commit();
        wall.add((System.nanoTime() - t0) / 1e6);
        threadCpu.add((threads.getCurrentThreadCpuTime() - c0) / 1e6);
        processCpu.add((os.getProcessCpuTime() - p0) / 1e6);
        Snapshot s = table.currentSnapshot();
        snapshots.add(s.snapshotId());
        if (args.flag("row-ids")) {
          for (DataFile added : s.addedDataFiles(table.io())) {
            firstRowIds.put(added.location(), added.firstRowId());
          }
        }
      }
      table.refresh();
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("commits", count);
      out.put("commit-ms", wall);
      out.put("thread-cpu-ms", threadCpu);
      out.put("process-cpu-ms", processCpu);
      out.put("snapshots", snapshots);
      out.put("manifests", table.currentSnapshot().allManifests(table.io()).size());
      if (args.flag("row-ids")) {
        out.put("first-row-ids", firstRowIds);
      }
      return Peer.JSON.writeValueAsString(out);
    }
  }
}
