// SPDX-License-Identifier: Apache-2.0
//
// Test-peer CLI for icecommit: drives a REST catalog with Iceberg's own Java client (RESTCatalog),
// or a filesystem warehouse with Iceberg's HadoopCatalog when --uri is a directory, so the
// daemon's commits can be prepared, raced and checked against the reference implementation. Each subcommand prints exactly one JSON object on stdout; on failure it prints
// a message on stderr and exits non-zero (2 for usage errors, 1 for everything else).
//
//   create-table --uri U --table ns.name [--format-version N] [--partitioned] [--if-not-exists]
//                [--location LOC]   (e.g. s3://bucket/prefix; default: the catalog's choice)
//   stage        --uri U --table ns.name --files F --rows R --start-id K [--manifest-dir DIR] [--bucket B]
//                [--manifests M]   (M manifests in one run: {"manifests": [...]})
//   append       --uri U --table ns.name --rows R --start-id K [--branch B] [--count N] [--bucket B]
//                [--persist] [--give-up]   (an append Iceberg gave up on: started over | skipped,
//                counted; both: --timed's warm-up commits are started over, its timed ones skipped)
//                [--timed [--warmup W] [--wait-stdin]]   (benchmarks: data files written first, then
//                W untimed commits, then the N commits each timed: "commit-ms"; --wait-stdin prints
//                "peer: ready" on stderr after the warm-up and starts the N commits on a stdin line)
//   dump         --uri U --table ns.name [--branch B] [--no-rows]
//   dump         --metadata PATH/vN.metadata.json [--table NAME] [--branch B] [--no-rows]
//   metadata     --uri U --table ns.name
//   stage-eq-deletes --uri U --table ns.name --ids 1,2,3 [--manifest-dir DIR]   (EqDeletes.java)
//   evolve       --uri U --table ns.name --ops JSON   (schema changes, properties; Evolve.java)
//   datafile-json      --uri U --table ns.name [--files N]   (DataFileJson.java: real data files
//                      of every primitive type, described by ContentFileParser.toJson)
//   datafile-json-read --uri U --table ns.name   (the live files, as ContentFileParser JSON)
//   read-manifest --manifest PATH --list-entry JSON   (every entry, DELETED ones too, as Java
//                      reads it with that manifest-list entry's inheritance; ReadManifest.java)
//   bench-manifests, bench-history, bench-commit   (benchmarks only; Bench.java)
//   dv-write, dv-read   (deletion vectors in Puffin files with Iceberg's own writer and reader;
//                       no catalog; Dv.java)
//
// Table layout: schema {1: id long required, 2: data string optional}; with --partitioned a third
// column {3: bucket int optional} and spec identity(bucket). Rows get data = "row-<id>" and
// bucket = --bucket (default 0), so every data file lies in one partition.
// --format-version defaults to 3 (the catalog's own default would be 2).
//
// Environment: every PEER_CATALOG_* variable becomes a client catalog property, mapped as the REST
// server maps CATALOG_* (prefix dropped, "__" -> "-", "_" -> ".", lower-cased), e.g.
// PEER_CATALOG_S3_PATH__STYLE__ACCESS=true -> s3.path-style-access=true. That is how the client's
// FileIO reaches S3 (endpoint, path style, region; keys come vended from the catalog).
//
// PeerServer.java serves the same subcommands from one long-lived JVM (what the integration tests
// use: tests/integration/conftest.py); this CLI remains for scripts, benchmarks and debugging.
package icecommit.peers;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Closeable;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.HashMap;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.AppendFiles;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.exceptions.AlreadyExistsException;
import org.apache.iceberg.exceptions.CommitFailedException;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.catalog.SupportsNamespaces;
import org.apache.iceberg.hadoop.HadoopCatalog;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

public final class Peer {
  static final ObjectMapper JSON = new ObjectMapper();

  private static final String USAGE =
      "usage: peer <create-table|stage|append|dump|metadata|stage-eq-deletes|evolve|datafile-json|datafile-json-read|read-manifest|bench-manifests|bench-history|bench-commit> --uri URI --table NS.NAME [options]";

  private Peer() {}

  public static void main(String[] argv) {
    int status;
    String cmd = argv.length > 0 ? argv[0] : "";
    try {
      if (argv.length == 0 || cmd.equals("-h") || cmd.equals("--help")) {
        throw new Args.UsageException("no subcommand");
      }
      String[] rest = java.util.Arrays.copyOfRange(argv, 1, argv.length);
      String out = run(cmd, rest);
      System.out.println(out);
      System.out.flush();
      status = 0;
    } catch (Args.UsageException e) {
      System.err.println("peer: " + e.getMessage());
      System.err.println(USAGE);
      status = 2;
    } catch (Throwable e) {
      System.err.print(failure(cmd, e, System.getenv("PEER_DEBUG") != null));
      status = 1;
    }
    // RESTCatalog and FileIO keep non-daemon worker threads; do not wait for them.
    System.exit(status);
  }

  /** What a failed subcommand says on stderr (PeerServer answers the same text). */
  static String failure(String cmd, Throwable e, boolean withStackTrace) {
    StringWriter text = new StringWriter();
    PrintWriter err = new PrintWriter(text);
    err.println("peer: " + cmd + " failed: " + e.getClass().getName() + ": " + e.getMessage());
    for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      err.println("  caused by: " + c.getClass().getName() + ": " + c.getMessage());
    }
    if (withStackTrace) {
      e.printStackTrace(err);
    }
    err.flush();
    return text.toString();
  }

  static String run(String cmd, String[] rest) throws Exception {
    if (Refs.handles(cmd)) return Refs.run(cmd, rest); // branch, set-property (Refs.java)
    if (Bench.handles(cmd)) return Bench.run(cmd, rest); // tests/bench only (Bench.java)
    if (Dv.handles(cmd)) return Dv.run(cmd, rest); // dv-write, dv-read (Dv.java)
    switch (cmd) {
      case "create-table":
        return createTable(
            new Args(rest, Set.of("uri", "table", "format-version", "location"),
                Set.of("partitioned", "if-not-exists")));
      case "stage":
        return stage(
            new Args(rest,
                Set.of("uri", "table", "files", "rows", "start-id", "manifest-dir", "bucket", "manifests"),
                Set.of()));
      case "append":
        return append(
            new Args(rest,
                Set.of("uri", "table", "rows", "start-id", "branch", "count", "bucket", "warmup"),
                Set.of("persist", "give-up", "timed", "wait-stdin")));
      case "dump":
        return Dump.run(new Args(rest, Set.of("uri", "table", "branch", "metadata"), Set.of("no-rows")));
      case "commit-overlap":
        return CommitOverlap.run(new Args(rest, Set.of("uri", "table", "rows", "start-id", "manifest-first-row-id"), Set.of()));
      case "metadata":
        return metadata(new Args(rest, Set.of("uri", "table"), Set.of()));
      case "stage-eq-deletes":
        return EqDeletes.run(new Args(rest, Set.of("uri", "table", "ids", "manifest-dir"), Set.of()));
      case "evolve":
        return Evolve.run(new Args(rest, Set.of("uri", "table", "ops"), Set.of()));
      case "datafile-json":
        return DataFileJson.write(new Args(rest, Set.of("uri", "table", "files"), Set.of()));
      case "datafile-json-read":
        return DataFileJson.read(new Args(rest, Set.of("uri", "table"), Set.of()));
      case "read-manifest":
        return ReadManifest.run(new Args(rest, Set.of("manifest", "list-entry"), Set.of()));
      default:
        throw new Args.UsageException("unknown subcommand: " + cmd);
    }
  }

  /**
   * Opens the catalog --uri names: Iceberg's REST client for http(s)://, else a HadoopCatalog on
   * that warehouse directory, the layout icecommit's embedded filesystem catalog keeps
   * (metadata/vN.metadata.json + version-hint.text). Callers may name RESTCatalog as the type for
   * a REST uri.
   */
  @SuppressWarnings("unchecked")
  static <C extends Catalog & SupportsNamespaces & Closeable> C catalog(Args args) {
    String uri = args.str("uri");
    Map<String, String> props = new HashMap<>(envCatalogProperties());
    props.put(CatalogProperties.METRICS_REPORTER_IMPL, CommitAttempts.class.getName());
    if (uri.startsWith("http://") || uri.startsWith("https://")) {
      RESTCatalog catalog = new RESTCatalog();
      catalog.setConf(new Configuration());
      props.put(CatalogProperties.URI, uri);
      catalog.initialize("peer", props);
      return (C) catalog;
    }
    HadoopCatalog catalog = new HadoopCatalog();
    catalog.setConf(new Configuration());
    props.put(CatalogProperties.WAREHOUSE_LOCATION, uri);
    catalog.initialize("peer", props);
    return (C) catalog;
  }

  static final String CATALOG_ENV_PREFIX = "PEER_CATALOG_";

  /**
   * The environment of the subcommand running on this thread: PeerServer runs each request with
   * its client's variables; null means this process's own.
   */
  static final ThreadLocal<Map<String, String>> ENV = new ThreadLocal<>();

  /** PEER_CATALOG_* environment variables as catalog properties (see the header comment). */
  static Map<String, String> envCatalogProperties() {
    Map<String, String> props = new HashMap<>();
    Map<String, String> env = ENV.get() != null ? ENV.get() : System.getenv();
    for (Map.Entry<String, String> e : env.entrySet()) {
      String name = e.getKey();
      if (name.startsWith(CATALOG_ENV_PREFIX) && name.length() > CATALOG_ENV_PREFIX.length()) {
        String key = name.substring(CATALOG_ENV_PREFIX.length())
            .replace("__", "-").replace("_", ".").toLowerCase(Locale.ROOT);
        props.put(key, e.getValue());
      }
    }
    return props;
  }

  static TableIdentifier ident(Args args) {
    String name = args.str("table");
    TableIdentifier id = TableIdentifier.parse(name);
    if (id.namespace().isEmpty()) {
      throw new Args.UsageException("--table must be NAMESPACE.NAME, got: " + name);
    }
    return id;
  }

  static TableMetadata current(Table table) {
    return ((HasTableOperations) table).operations().current();
  }

  static Schema tableSchema(boolean partitioned) {
    List<Types.NestedField> cols = new ArrayList<>();
    cols.add(Types.NestedField.required(1, "id", Types.LongType.get()));
    cols.add(Types.NestedField.optional(2, "data", Types.StringType.get()));
    if (partitioned) {
      cols.add(Types.NestedField.optional(3, PeerData.BUCKET_COLUMN, Types.IntegerType.get()));
    }
    return new Schema(cols);
  }

  private static String createTable(Args args) throws Exception {
    TableIdentifier id = ident(args);
    int formatVersion = args.integer("format-version", 3);
    boolean partitioned = args.flag("partitioned");
    try (var catalog = catalog(args)) {
      Namespace ns = id.namespace();
      if (!catalog.namespaceExists(ns)) {
        try {
          catalog.createNamespace(ns);
        } catch (AlreadyExistsException e) {
          // created concurrently: fine
        }
      }
      Schema schema = tableSchema(partitioned);
      PartitionSpec spec =
          partitioned
              ? PartitionSpec.builderFor(schema).identity(PeerData.BUCKET_COLUMN).build()
              : PartitionSpec.unpartitioned();
      Table table;
      boolean created = true;
      try {
        table =
            catalog
                .buildTable(id, schema)
                .withPartitionSpec(spec)
                .withLocation(args.str("location", null)) // null: the catalog's default location
                .withProperty(TableProperties.FORMAT_VERSION, Integer.toString(formatVersion))
                .create();
      } catch (AlreadyExistsException e) {
        if (!args.flag("if-not-exists")) {
          throw e;
        }
        table = catalog.loadTable(id);
        created = false;
      }
      TableMetadata md = current(table);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("table", id.toString());
      out.put("location", table.location());
      out.put("format-version", md.formatVersion());
      out.put("table-uuid", md.uuid());
      out.put("metadata-location", md.metadataFileLocation());
      out.put("partitioned", table.spec().isPartitioned());
      out.put("created", created);
      return JSON.writeValueAsString(out);
    }
  }

  private static String stage(Args args) throws Exception {
    TableIdentifier id = ident(args);
    long files = args.lng("files");
    long rows = args.lng("rows");
    long startId = args.lng("start-id");
    int bucket = args.integer("bucket", 0);
    long manifests = args.lng("manifests", 0);
    if (files < 1 || rows < 0 || manifests < 0) {
      throw new Args.UsageException("--files must be >= 1, --rows and --manifests >= 0");
    }
    try (var catalog = catalog(args)) {
      Table table = catalog.loadTable(id);
      String dir = args.str("manifest-dir", PeerData.metadataDir(table));
      if (dir.endsWith("/")) {
        dir = dir.substring(0, dir.length() - 1);
      }
      if (manifests == 0) {
        return JSON.writeValueAsString(stageOne(table, dir, files, rows, startId, bucket));
      }
      // --manifests M: M staged manifests in one JVM run (ids consecutive across them), so that
      // load tests do not pay a JVM start per manifest.
      List<Map<String, Object>> all = new ArrayList<>();
      for (long m = 0; m < manifests; m++) {
        all.add(stageOne(table, dir, files, rows, startId + m * files * rows, bucket));
      }
      return JSON.writeValueAsString(Map.of("manifests", all));
    }
  }

  private static Map<String, Object> stageOne(
      Table table, String dir, long files, long rows, long startId, int bucket) throws Exception {
    List<DataFile> dataFiles = new ArrayList<>();
    List<Map<String, Object>> fileInfo = new ArrayList<>();
    for (long i = 0; i < files; i++) {
      long firstId = startId + i * rows;
      DataFile df = PeerData.writeDataFile(table, firstId, rows, bucket);
      dataFiles.add(df);
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("path", df.location());
      f.put("record-count", df.recordCount());
      f.put("file-size-in-bytes", df.fileSizeInBytes());
      f.put("first-id", firstId);
      fileInfo.add(f);
    }
    String location = dir + "/staged-" + UUID.randomUUID() + "-m0.avro";
    ManifestFile mf = PeerData.writeStagedManifest(table, location, dataFiles);

    Map<String, Object> out = new LinkedHashMap<>();
    out.put("manifest", mf.path());
    out.put("manifest-length", mf.length());
    out.put("partition-spec-id", mf.partitionSpecId());
    out.put("format-version", PeerData.formatVersion(table));
    out.put("added-files", mf.addedFilesCount());
    out.put("added-rows", mf.addedRowsCount());
    out.put("data-files", fileInfo);
    return out;
  }

  private static String append(Args args) throws Exception {
    TableIdentifier id = ident(args);
    long rows = args.lng("rows");
    long startId = args.lng("start-id");
    long count = args.lng("count", 1);
    int bucket = args.integer("bucket", 0);
    String branch = args.str("branch", null);
    boolean timed = args.flag("timed");
    long warmup = args.lng("warmup", 0);
    if (count < 1 || rows < 0 || warmup < 0) {
      throw new Args.UsageException("--count must be >= 1, --rows and --warmup >= 0");
    }
    if (!timed && (warmup > 0 || args.flag("wait-stdin"))) {
      throw new Args.UsageException("--warmup and --wait-stdin need --timed");
    }
    try (var catalog = catalog(args)) {
      Table table = catalog.loadTable(id);
      List<Long> snapshots = new ArrayList<>();
      List<Long> attempts = new ArrayList<>();
      List<String> paths = new ArrayList<>();
      List<Double> commitMs = new ArrayList<>();
      List<Double> failedMs = new ArrayList<>();
      long[] gaveUp = {0};
      if (!timed) {
        for (long i = 0; i < count; i++) {
          DataFile df = PeerData.writeDataFile(table, startId + i * rows, rows, bucket);
          appendOne(table, df, branch, args.flag("persist"), false, gaveUp);
          Snapshot s = branch != null ? table.snapshot(branch) : table.currentSnapshot();
          snapshots.add(s.snapshotId());
          attempts.add(CommitAttempts.attempts(s.snapshotId()));
          paths.add(df.location());
        }
      } else {
        // --timed: every data file first, so that the timed loop (and a proxy counting the
        // store's requests meanwhile) sees nothing but commits; then the warm-up commits (JIT,
        // connection pools), then each of the N commits timed around newFastAppend()...commit().
        List<DataFile> files = new ArrayList<>();
        for (long i = 0; i < warmup + count; i++) {
          files.add(PeerData.writeDataFile(table, startId + i * rows, rows, bucket));
        }
        for (long i = 0; i < warmup; i++) {
          appendOne(table, files.get((int) i), branch, args.flag("persist"), false, new long[1]);
        }
        if (args.flag("wait-stdin")) {
          System.err.println("peer: ready");
          System.err.flush();
          new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        }
        for (long i = warmup; i < warmup + count; i++) {
          DataFile df = files.get((int) i);
          long t0 = System.nanoTime();
          if (!appendOne(table, df, branch, args.flag("persist"), args.flag("give-up"), gaveUp)) {
            failedMs.add((System.nanoTime() - t0) / 1e6);
            continue;
          }
          commitMs.add((System.nanoTime() - t0) / 1e6);
          Snapshot s = branch != null ? table.snapshot(branch) : table.currentSnapshot();
          snapshots.add(s.snapshotId());
          attempts.add(CommitAttempts.attempts(s.snapshotId()));
          paths.add(df.location());
        }
      }
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("commits", count);
      out.put("snapshots", snapshots);
      out.put("attempts", attempts); // 1 = first try; more = lost that many races
      out.put("branch", branch == null ? "main" : branch);
      out.put("data-files", paths);
      if (timed) {
        out.put("warmup", warmup);
        out.put("commit-ms", commitMs); // the N timed commits, each until commit() returned
        out.put("gave-up", gaveUp[0]); // --persist, --give-up: CommitFailedExceptions after Iceberg's retries
        out.put("failed-ms", failedMs); // --give-up: each append given up, until Iceberg gave up
      }
      return JSON.writeValueAsString(out);
    }
  }

  /** One FastAppend of df; with persist, a CommitFailedException (Iceberg gave up after its
   *  commit.retry.* attempts) is counted in gaveUp[0] and the append starts over; with giveUp it
   *  is counted and the append skipped (returns false). */
  private static boolean appendOne(
      Table table, DataFile df, String branch, boolean persist, boolean giveUp, long[] gaveUp) {
    for (;;) {
      AppendFiles append = table.newFastAppend().appendFile(df);
      if (branch != null) {
        append.toBranch(branch);
      }
      try {
        append.commit(); // retries on 409 like any Iceberg writer (commit.retry.* properties)
        return true;
      } catch (CommitFailedException e) {
        if (giveUp) {
          gaveUp[0]++;
          table.refresh();
          return false;
        }
        // --persist: a racing competitor that never gives up (it would lose every race
        // against a faster committer and stop after its 4 retries otherwise).
        if (!persist) {
          throw e;
        }
        gaveUp[0]++;
        table.refresh();
      }
    }
  }

  private static String metadata(Args args) throws Exception {
    TableIdentifier id = ident(args);
    try (var catalog = catalog(args)) {
      return TableMetadataParser.toJson(current(catalog.loadTable(id)));
    }
  }
}
