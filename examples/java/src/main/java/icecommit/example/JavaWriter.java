// SPDX-License-Identifier: Apache-2.0
//
// A writer job for icecommitd, with Iceberg's own Java API (examples/java/README.md):
//   1. creates the demo table through icecommitd (idempotent) and takes the table as it is:
//      from the REST catalog (--catalog-uri), or from icecommitd's answer (location, schema,
//      partition spec and format version as stored) when icecommitd keeps its own catalog;
//   2. writes one Parquet data file with Iceberg's generic Parquet writer (field ids, partition
//      value and column metrics are Iceberg's own);
//   3. stages a manifest for it with ManifestFiles.write (one ADDED entry; snapshot id,
//      sequence numbers and first_row_id left null, so the commit assigns them) under the
//      table's staging/ prefix: a writer needs no write access to metadata/, where only
//      icecommitd writes (it commits its own copy of the staged manifest);
//   4. commits the manifest through icecommitd under one idempotency key, retrying the same
//      request on 503, 504 and lost connections, and prints the receipt;
//   5. cleans up as docs/exactly-once.md says: only after a receipt that lists what it staged,
//      it deletes the files it wrote that are not the table's: the staged manifest icecommitd
//      copied, and a data file the receipt does not list (--abandoned-attempt leaves one, as a
//      task attempt superseded by another would). After a 504, a timeout or a refusal it
//      deletes nothing.
// It never commits to the catalog itself: icecommitd batches many such writers per table and
// assigns row lineage once.
package icecommit.example;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.LocationProviders;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.PartitionSpecParser;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableOperations;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.LocationProvider;
import org.apache.iceberg.io.ResolvingFileIO;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.util.JsonUtil;

public final class JavaWriter {
  private static final ObjectMapper JSON = JsonUtil.mapper();

  // The demo table (examples/python/icecommit_api.py): events of a day, partitioned by day.
  // Field ids are proposals; the catalog may assign its own, so the job uses the table's.
  private static final String SCHEMA =
      "{\"type\": \"struct\", \"fields\": ["
          + "{\"id\": 1, \"name\": \"id\", \"required\": true, \"type\": \"long\"},"
          + "{\"id\": 2, \"name\": \"name\", \"required\": false, \"type\": \"string\"},"
          + "{\"id\": 3, \"name\": \"amount\", \"required\": false, \"type\": \"double\"},"
          + "{\"id\": 4, \"name\": \"day\", \"required\": false, \"type\": \"date\"}]}";
  private static final String SPEC =
      "{\"fields\": [{\"source-id\": 4, \"name\": \"day\", \"transform\": \"identity\"}]}";

  private static final int MAX_TRIES = 10;

  private JavaWriter() {}

  /** The table as this job writes it: what Iceberg needs to name, write and describe files. */
  private record Target(
      Schema schema,
      PartitionSpec spec,
      int formatVersion,
      FileIO io,
      LocationProvider locations,
      Function<String, String> stagingLocation) {}

  /** One answer of icecommitd; status 0 when the connection failed (no answer at all). */
  private record Answer(int status, JsonNode body, String retryAfter) {}

  public static void main(String[] argv) throws Exception {
    Map<String, String> args = parse(argv);
    String url = required(args, "url");
    String namespace = args.getOrDefault("namespace", "demo");
    String table = args.getOrDefault("table", "events");
    int rows = Integer.parseInt(args.getOrDefault("rows", "4"));
    long startId = Long.parseLong(args.getOrDefault("start-id", "300"));
    LocalDate day = LocalDate.parse(args.getOrDefault("day", "2026-12-03"));
    String key = args.getOrDefault("key", "java-" + UUID.randomUUID());
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    ObjectNode create = JSON.createObjectNode();
    create.put("name", table);
    create.set("schema", JSON.readTree(SCHEMA));
    create.set("partition-spec", JSON.readTree(SPEC));
    String tables = url + "/v1/namespaces/" + encode(namespace) + "/tables";
    Answer created = call(http, "POST", tables, create);
    if (created.status() != 200 && created.status() != 201) {
      fail("create table: " + created.status() + " " + created.body());
    }

    RESTCatalog catalog = null;
    try {
      Target target;
      if (args.containsKey("catalog-uri")) {
        catalog = new RESTCatalog();
        catalog.setConf(hadoopConf());
        catalog.initialize("writer", Map.of(CatalogProperties.URI, args.get("catalog-uri")));
        target = fromTable(catalog.loadTable(TableIdentifier.of(namespace, table)));
      } else {
        target = fromAnswer(created.body());
      }
      run(http, url, namespace, table, target, rows, startId, day, key, args);
    } finally {
      if (catalog != null) {
        catalog.close();
      }
    }
  }

  private static void run(
      HttpClient http,
      String url,
      String namespace,
      String table,
      Target target,
      int rows,
      long startId,
      LocalDate day,
      String key,
      Map<String, String> args)
      throws Exception {
    // Every file this job writes, in order: what it may have to clean up later.
    List<String> written = new ArrayList<>();
    if (args.containsKey("abandoned-attempt")) {
      // The first attempt of a task that the scheduler ran again: its file is in no manifest.
      written.add(writeDataFile(target, rows, startId, day).location());
    }
    DataFile file = writeDataFile(target, rows, startId, day);
    written.add(file.location());
    String manifest = stageManifest(target, List.of(file));
    written.add(manifest);

    ObjectNode body = JSON.createObjectNode();
    body.put("idempotency-key", key);
    body.putArray("staged-manifests").add(manifest);
    String commits =
        url + "/v1/namespaces/" + encode(namespace) + "/tables/" + encode(table) + "/commits";
    Answer answer = commit(http, commits, body);
    if (answer.status() != 200) {
      // A refusal (4xx) committed nothing, but the staged files stay the job's to fix or
      // remove; after a 503, 504 or lost answer the commit may still land: keep everything and
      // send the same request again later, under the same key.
      fail(
          "commit: "
              + (answer.status() == 0 ? "no answer" : answer.status() + " " + answer.body())
              + "; staged files kept: "
              + written);
    }
    JsonNode receipt = answer.body();
    printReceipt(receipt);

    if (args.containsKey("resend")) {
      // A writer that lost the answer sends the same request again: the key makes it safe.
      Answer resent = commit(http, commits, body);
      if (resent.status() != 200) {
        fail("the same request again: " + resent.status() + " " + resent.body());
      }
      JsonNode again = resent.body();
      long snapshot = again.path("snapshot-id").asLong();
      if (snapshot != receipt.path("snapshot-id").asLong()) {
        fail("the same request again: another snapshot " + snapshot + ": " + again);
      }
      System.out.println("the same request again: same snapshot " + snapshot + ", committed once");
    }
    cleanUp(target.io(), receipt, manifest, List.of(file.location()), written);
  }

  /** The table as the REST catalog has it: its FileIO and location rules are the catalog's. */
  private static Target fromTable(Table table) {
    TableOperations ops = ((HasTableOperations) table).operations();
    // Staged under the table location (icecommitd reads staged manifests beneath it), in a
    // prefix of the writers' own.
    return new Target(
        table.schema(),
        table.spec(),
        ops.current().formatVersion(),
        table.io(),
        table.locationProvider(),
        name -> table.location() + "/staging/" + name);
  }

  /**
   * The table as icecommitd's create answer describes it, for its embedded catalog (no catalog
   * service to ask). Local paths and file: locations go through HadoopFileIO, s3:// ones through
   * S3FileIO with the usual AWS_* settings.
   */
  private static Target fromAnswer(JsonNode created) throws IOException {
    Schema schema = SchemaParser.fromJson(JSON.writeValueAsString(created.get("schema")));
    String specJson = JSON.writeValueAsString(created.get("partition-spec"));
    PartitionSpec spec = PartitionSpecParser.fromJson(schema, specJson);
    String location = created.get("location").asText();
    ResolvingFileIO io = new ResolvingFileIO();
    io.setConf(hadoopConf());
    io.initialize(s3Properties());
    return new Target(
        schema,
        spec,
        created.get("format-version").asInt(),
        io,
        LocationProviders.locationsFor(location, Map.of()),
        name -> location + "/staging/" + name);
  }

  /**
   * Hadoop's settings for HadoopFileIO: local files without Hadoop's ".name.crc" sidecar files,
   * which no Iceberg reader looks at and which would only litter the table's directories.
   */
  private static Configuration hadoopConf() {
    Configuration conf = new Configuration();
    conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
    return conf;
  }

  /** S3FileIO properties from the AWS_* variables AWS tools read (examples/python/storage.py). */
  private static Map<String, String> s3Properties() {
    Map<String, String> env = System.getenv();
    Map<String, String> props = new HashMap<>();
    String endpoint = env.getOrDefault("AWS_ENDPOINT_URL_S3", env.get("AWS_ENDPOINT_URL"));
    if (endpoint != null) {
      props.put("s3.endpoint", endpoint);
      props.put("s3.path-style-access", "true"); // MinIO, SeaweedFS: no bucket host names
    }
    String region = env.getOrDefault("AWS_REGION", env.get("AWS_DEFAULT_REGION"));
    if (region != null) {
      props.put("client.region", region);
    }
    if (env.containsKey("AWS_ACCESS_KEY_ID")) {
      props.put("s3.access-key-id", env.get("AWS_ACCESS_KEY_ID"));
      props.put("s3.secret-access-key", env.getOrDefault("AWS_SECRET_ACCESS_KEY", ""));
    }
    if (env.containsKey("AWS_SESSION_TOKEN")) {
      props.put("s3.session-token", env.get("AWS_SESSION_TOKEN"));
    }
    return props;
  }

  /** One Parquet file of `rows` events of `day`, named and placed by the table's rules. */
  private static DataFile writeDataFile(Target target, int rows, long startId, LocalDate day)
      throws IOException {
    Schema schema = target.schema();
    GenericRecord template = GenericRecord.create(schema);
    PartitionKey partition = new PartitionKey(target.spec(), schema);
    // The partition of a row as Iceberg computes it (dates as days since the epoch).
    InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
    partition.partition(wrapper.wrap(event(template, startId, day)));
    String location =
        target
            .locations()
            .newDataLocation(target.spec(), partition, "java-" + UUID.randomUUID() + ".parquet");
    DataWriter<Record> writer =
        Parquet.writeData(target.io().newOutputFile(location))
            .schema(schema)
            .withSpec(target.spec())
            .withPartition(partition)
            .createWriterFunc(GenericParquetWriter::create)
            .build();
    try (writer) {
      for (long id = startId; id < startId + rows; id++) {
        writer.write(event(template, id, day));
      }
    }
    return writer.toDataFile();
  }

  private static Record event(GenericRecord template, long id, LocalDate day) {
    Record r = template.copy();
    r.setField("id", id);
    r.setField("name", "event-" + id);
    r.setField("amount", id * 1.25);
    r.setField("day", day);
    return r;
  }

  /**
   * A staged manifest: ADDED entries, snapshot id null (no snapshot exists yet), so the
   * sequence numbers and first_row_id are inherited from the snapshot icecommitd commits.
   */
  private static String stageManifest(Target target, List<DataFile> files) throws IOException {
    String location = target.stagingLocation().apply("staged-" + UUID.randomUUID() + "-m0.avro");
    ManifestWriter<DataFile> writer =
        ManifestFiles.write(
            target.formatVersion(), target.spec(), target.io().newOutputFile(location), null);
    try (writer) {
      for (DataFile file : files) {
        writer.add(file);
      }
    }
    return location;
  }

  /**
   * Commits and returns the last answer. 503 (nothing committed) and 504 or a lost connection
   * (outcome unknown) are retried with the same body and key: a commit that landed meanwhile
   * is found in the table's history and answered 200, never committed twice.
   */
  private static Answer commit(HttpClient http, String url, JsonNode body) throws Exception {
    Answer answer = null;
    for (int attempt = 1; attempt <= MAX_TRIES; attempt++) {
      answer = call(http, "POST", url, body);
      if (answer.status() != 0 && answer.status() != 503 && answer.status() != 504) {
        return answer;
      }
      long waitMs = Math.min(250L << Math.min(attempt, 5), 5000L);
      if (answer.retryAfter() != null) {
        waitMs = Math.max(waitMs, 1000L * Long.parseLong(answer.retryAfter().trim()));
      }
      Thread.sleep(waitMs);
    }
    return answer;
  }

  private static Answer call(HttpClient http, String method, String url, JsonNode body)
      throws InterruptedException {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create(url))
            .timeout(Duration.ofSeconds(120))
            .header("Content-Type", "application/json")
            .method(method, HttpRequest.BodyPublishers.ofString(body.toString()))
            .build();
    HttpResponse<String> response;
    try {
      response = http.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      return new Answer(0, JSON.createObjectNode().put("error", e.toString()), null);
    }
    return new Answer(
        response.statusCode(),
        parseBody(response.body()),
        response.headers().firstValue("Retry-After").orElse(null));
  }

  /** icecommitd answers JSON; anything else (a proxy's error page) is kept as text. */
  private static JsonNode parseBody(String text) {
    try {
      return text.isEmpty() ? JSON.createObjectNode() : JSON.readTree(text);
    } catch (IOException e) {
      return JSON.createObjectNode().put("text", text);
    }
  }

  private static void printReceipt(JsonNode receipt) {
    System.out.printf(
        "committed snapshot %d (sequence number %d, first-row-id %s)%s%n",
        receipt.path("snapshot-id").asLong(),
        receipt.path("sequence-number").asLong(),
        receipt.path("snapshot-first-row-id").asText(),
        receipt.path("found-in-history").asBoolean() ? ", found in the table's history" : "");
    for (JsonNode m : receipt.path("manifests")) {
      System.out.printf("  manifest %s%n", m.path("location").asText());
      if (m.hasNonNull("staged-location")) {
        System.out.printf("  (icecommitd's copy of %s)%n", m.path("staged-location").asText());
      }
      for (JsonNode f : m.path("data-files")) {
        System.out.printf(
            "  %s: %d rows, _row_id %d..%d, _last_updated_sequence_number %d%n",
            f.path("location").asText(),
            f.path("record-count").asLong(),
            f.path("first-row-id").asLong(),
            f.path("last-row-id").asLong(),
            f.path("last-updated-sequence-number").asLong());
      }
    }
  }

  /**
   * docs/exactly-once.md: the manifests (location) and data files a receipt lists are part of
   * the table, and must stay. A staged manifest the receipt names as staged-location is not:
   * icecommitd committed its own copy of it. Any other file this job wrote is garbage, but only
   * a receipt that lists everything the request carried proves it: a receipt without manifests
   * (or naming them in another spelling) deletes nothing.
   */
  private static void cleanUp(
      FileIO io, JsonNode receipt, String manifest, List<String> committed, List<String> written) {
    Set<String> listed = new HashSet<>();
    Map<String, String> copies = new HashMap<>();
    for (JsonNode m : receipt.path("manifests")) {
      listed.add(m.path("location").asText());
      if (m.hasNonNull("staged-location")) {
        copies.put(m.path("staged-location").asText(), m.path("location").asText());
      }
      for (JsonNode f : m.path("data-files")) {
        listed.add(f.path("location").asText());
      }
    }
    if (!(listed.contains(manifest) || copies.containsKey(manifest))
        || !listed.containsAll(committed)) {
      System.out.println("the receipt does not list the staged files: nothing deleted");
      return;
    }
    int kept = 0;
    for (String location : written) {
      if (listed.contains(location)) {
        kept++;
      } else if (copies.containsKey(location)) {
        io.deleteFile(location);
        System.out.println(
            "deleted " + location + " (the table holds icecommitd's copy " + copies.get(location) + ")");
      } else {
        io.deleteFile(location);
        System.out.println("deleted " + location + " (not in the receipt)");
      }
    }
    System.out.println(kept + " files this job wrote are part of the table now, kept");
  }

  private static Map<String, String> parse(String[] argv) {
    Map<String, String> args = new HashMap<>();
    Set<String> flags = Set.of("resend", "abandoned-attempt");
    for (int i = 0; i < argv.length; i++) {
      if (!argv[i].startsWith("--")) {
        fail("unexpected argument '" + argv[i] + "'");
      }
      String name = argv[i].substring(2);
      if (flags.contains(name)) {
        args.put(name, "");
      } else if (i + 1 < argv.length) {
        args.put(name, argv[++i]);
      } else {
        fail("--" + name + " needs a value");
      }
    }
    return args;
  }

  private static String required(Map<String, String> args, String name) {
    String value = args.get(name);
    if (value == null) {
      fail(
          "usage: java -jar icecommit-java-writer.jar --url URL [--namespace NS] [--table NAME]"
              + " [--rows N] [--start-id ID] [--day YYYY-MM-DD] [--key KEY] [--catalog-uri URI]"
              + " [--resend] [--abandoned-attempt]");
    }
    return value;
  }

  private static String encode(String pathSegment) {
    return URLEncoder.encode(pathSegment, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private static void fail(String message) {
    System.err.println("java-writer: " + message);
    System.exit(1);
  }
}
