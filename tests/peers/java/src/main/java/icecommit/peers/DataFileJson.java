// SPDX-License-Identifier: Apache-2.0
//
// Data files as Iceberg Java describes them in JSON, for icecommitd's `data-files`:
//   datafile-json      --uri U --table ns.name [--files N]
//     creates a v3 table with a column of every primitive type and a spec with a partition
//     field of each kind of transform over them, writes N Parquet data files with Iceberg's
//     generic Parquet writer (so their metrics, bounds included, are Java's own) and prints
//     {"location", "spec-id", "data-files": [ContentFileParser.toJson(file, spec), ...]}.
//     Nothing is committed.
//   datafile-json-read --uri U --table ns.name
//     prints {"data-files": [...]}, the live data files of the current snapshot as the table's
//     manifests give them back (ContentFileParser.toJson, sorted by file-path), and "rows", the
//     ids of every row Iceberg's generic reader returns, sorted.
package icecommit.peers;

import com.fasterxml.jackson.databind.JsonNode;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.ContentFileParser;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;

final class DataFileJson {
  private DataFileJson() {}

  static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "b", Types.BooleanType.get()),
          Types.NestedField.optional(3, "i", Types.IntegerType.get()),
          Types.NestedField.optional(4, "l", Types.LongType.get()),
          Types.NestedField.optional(5, "f", Types.FloatType.get()),
          Types.NestedField.optional(6, "d", Types.DoubleType.get()),
          Types.NestedField.optional(7, "dec", Types.DecimalType.of(9, 2)),
          Types.NestedField.optional(8, "dec0", Types.DecimalType.of(18, 0)),
          Types.NestedField.optional(9, "dt", Types.DateType.get()),
          Types.NestedField.optional(10, "tm", Types.TimeType.get()),
          Types.NestedField.optional(11, "ts", Types.TimestampType.withoutZone()),
          Types.NestedField.optional(12, "tstz", Types.TimestampType.withZone()),
          Types.NestedField.optional(13, "ts_ns", Types.TimestampNanoType.withoutZone()),
          Types.NestedField.optional(14, "tstz_ns", Types.TimestampNanoType.withZone()),
          Types.NestedField.optional(15, "s", Types.StringType.get()),
          Types.NestedField.optional(16, "u", Types.UUIDType.get()),
          Types.NestedField.optional(17, "fx", Types.FixedType.ofLength(4)),
          Types.NestedField.optional(18, "bin", Types.BinaryType.get()),
          Types.NestedField.optional(19, "note", Types.StringType.get()),
          Types.NestedField.optional(20, "n", Types.IntegerType.get()));

  /**
   * Identity over every type a partition can hold, and each other transform once. (The fixed
   * one is what icecommitd writes as Avro bytes, which Iceberg Java 1.11 reads: it misreads a
   * spec-encoded Avro fixed, apache/iceberg#17501.)
   */
  static PartitionSpec spec(Schema schema) {
    return PartitionSpec.builderFor(schema)
        .identity("b")
        .identity("i")
        .identity("dec")
        .identity("dt")
        .identity("tm")
        .identity("ts")
        .identity("tstz_ns")
        .identity("s")
        .identity("u")
        .identity("fx")
        .identity("bin")
        .identity("n")
        .year("ts")
        .month("dt")
        .day("tstz")
        .hour("ts_ns")
        .bucket("u", 4)
        .truncate("s", 2)
        .build();
  }

  /** Row `row` of file `k`: the partition columns depend on k only, the others vary by row. */
  static Record record(Schema schema, int k, long row) {
    long id = k * 1000L + row;
    GenericRecord r = GenericRecord.create(schema);
    r.setField("id", id);
    r.setField("b", k % 2 == 1);
    r.setField("i", -7 + k);
    r.setField("l", 5_000_000_000L - row * 3);
    r.setField("f", 1.5f + row);
    r.setField("d", -2.25 - row * 0.5);
    r.setField("dec", new BigDecimal("-12.50").add(BigDecimal.valueOf(k)).setScale(2));
    r.setField("dec0", BigDecimal.valueOf(4660 + row)); // 0x1234: its decimal text is hex too
    r.setField("dt", LocalDate.of(2024, 2, 29).plusDays(k));
    r.setField("tm", LocalTime.of(22, 31, 8, 123_456_000).plusSeconds(k));
    r.setField("ts", LocalDateTime.of(2017, 11, 16, 22, 31, 8, 123_456_000).plusDays(k));
    r.setField("tstz", OffsetDateTime.of(2017, 11, 16, 1, 2, 3, 4_000, ZoneOffset.UTC).plusDays(k));
    r.setField("ts_ns", LocalDateTime.of(1969, 12, 31, 23, 59, 59, 999_999_999).plusHours(k));
    r.setField("tstz_ns", OffsetDateTime.of(2024, 1, 1, 0, 0, 0, 1, ZoneOffset.UTC).plusMinutes(k));
    r.setField("s", "cafe" + k); // hex-looking: "cafe0" is odd, the bounds' binary hex is not
    r.setField("u", UUID.fromString("f79c3e09-677c-4bbd-a479-3f349cb785e" + k));
    r.setField("fx", new byte[] {0x0a, (byte) 0xff, 0, (byte) k});
    r.setField("bin", ByteBuffer.wrap(new byte[] {(byte) 0xde, (byte) 0xad, (byte) k}));
    r.setField("note", "row-" + id + "-\u00e9");
    r.setField("n", null);
    return r;
  }

  static String write(Args args) throws Exception {
    TableIdentifier id = Peer.ident(args);
    int files = args.integer("files", 2);
    try (RESTCatalog catalog = Peer.catalog(args)) {
      Namespace ns = id.namespace();
      if (!catalog.namespaceExists(ns)) {
        catalog.createNamespace(ns);
      }
      Table table =
          catalog
              .buildTable(id, SCHEMA)
              .withPartitionSpec(spec(SCHEMA))
              .withProperty(TableProperties.FORMAT_VERSION, "3")
              .create();
      Schema schema = table.schema();
      PartitionSpec spec = table.spec();
      List<JsonNode> described = new ArrayList<>();
      for (int k = 0; k < files; k++) {
        int rows = 3 + k;
        PartitionKey partition = new PartitionKey(spec, schema);
        InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
        partition.partition(wrapper.wrap(record(schema, k, 0)));
        String location =
            table.locationProvider()
                .newDataLocation(spec, partition, "java-" + UUID.randomUUID() + ".parquet");
        DataWriter<Record> writer =
            Parquet.writeData(table.io().newOutputFile(location))
                .forTable(table)
                .createWriterFunc(GenericParquetWriter::create)
                .withSpec(spec)
                .withPartition(partition)
                .overwrite()
                .build();
        try (writer) {
          for (long row = 0; row < rows; row++) {
            writer.write(record(schema, k, row));
          }
        }
        DataFile file = writer.toDataFile();
        described.add(Peer.JSON.readTree(ContentFileParser.toJson(file, spec)));
      }
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("table", id.toString());
      out.put("location", table.location());
      out.put("spec-id", spec.specId());
      out.put("data-files", described);
      return Peer.JSON.writeValueAsString(out);
    }
  }

  static String read(Args args) throws Exception {
    TableIdentifier id = Peer.ident(args);
    try (RESTCatalog catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(id);
      List<JsonNode> described = new ArrayList<>();
      try (CloseableIterable<FileScanTask> tasks =
          table.newScan().includeColumnStats().planFiles()) {
        for (FileScanTask task : tasks) {
          DataFile file = task.file();
          described.add(
              Peer.JSON.readTree(ContentFileParser.toJson(file, table.specs().get(file.specId()))));
        }
      }
      described.sort(Comparator.comparing(n -> n.get("file-path").asText()));
      List<Long> ids = new ArrayList<>();
      try (CloseableIterable<Record> rows = IcebergGenerics.read(table).build()) {
        for (Record r : rows) {
          ids.add((Long) r.getField("id"));
        }
      }
      ids.sort(null);
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("data-files", described);
      out.put("rows", ids);
      return Peer.JSON.writeValueAsString(out);
    }
  }
}
