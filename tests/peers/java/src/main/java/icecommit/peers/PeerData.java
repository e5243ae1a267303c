// SPDX-License-Identifier: Apache-2.0
//
// Writes the peers' test data with stock Iceberg writers: Parquet data files of consecutive ids
// (Parquet.writeData + GenericParquetWriter) and staged, uncommitted manifests
// (ManifestFiles.write with a null snapshot id, so entries inherit snapshot id and sequence
// numbers when some later commit adds the manifest to a manifest list).
package icecommit.peers;

import java.io.IOException;
import java.util.List;
import java.util.UUID;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.PartitionKey;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.InternalRecordWrapper;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;

final class PeerData {
  /** Name of the optional partition column of the peers' partitioned table layout. */
  static final String BUCKET_COLUMN = "bucket";

  private PeerData() {}

  static int formatVersion(Table table) {
    return ((HasTableOperations) table).operations().current().formatVersion();
  }

  /**
   * Writes one Parquet data file with {@code rows} rows: id = startId .. startId+rows-1, data =
   * "row-&lt;id&gt;", and (if the table has it) bucket = {@code bucket}. All rows must fall in one
   * partition of the table's current spec.
   */
  static DataFile writeDataFile(Table table, long startId, long rows, int bucket)
      throws IOException {
    Schema schema = table.schema();
    PartitionSpec spec = table.spec();
    boolean hasBucket = schema.findField(BUCKET_COLUMN) != null;

    PartitionKey partition = null;
    if (spec.isPartitioned()) {
      PartitionKey key = new PartitionKey(spec, schema);
      InternalRecordWrapper wrapper = new InternalRecordWrapper(schema.asStruct());
      for (long i = 0; i < rows; i++) {
        key.partition(wrapper.wrap(record(schema, startId + i, hasBucket, bucket)));
        if (partition == null) {
          partition = key.copy();
        } else if (!partition.equals(key)) {
          throw new IllegalArgumentException(
              "rows of one data file span several partitions of spec " + spec
                  + "; use identity(" + BUCKET_COLUMN + ") partitioning");
        }
      }
      if (partition == null) { // zero rows: partition the row that would have come first
        key.partition(wrapper.wrap(record(schema, startId, hasBucket, bucket)));
        partition = key.copy();
      }
    }

    String fileName = "peer-" + UUID.randomUUID() + ".parquet";
    String location =
        spec.isPartitioned()
            ? table.locationProvider().newDataLocation(spec, partition, fileName)
            : table.locationProvider().newDataLocation(fileName);
    OutputFile out = table.io().newOutputFile(location);

    Parquet.DataWriteBuilder builder =
        Parquet.writeData(out)
            .forTable(table)
            .createWriterFunc(GenericParquetWriter::create)
            .withSpec(spec)
            .overwrite();
    if (partition != null) {
      builder.withPartition(partition);
    }
    DataWriter<Record> writer = builder.build();
    try (writer) {
      for (long i = 0; i < rows; i++) {
        writer.write(record(schema, startId + i, hasBucket, bucket));
      }
    }
    return writer.toDataFile();
  }

  private static Record record(Schema schema, long id, boolean hasBucket, int bucket) {
    GenericRecord r = GenericRecord.create(schema);
    r.setField("id", id);
    r.setField("data", "row-" + id);
    if (hasBucket) {
      r.setField(BUCKET_COLUMN, bucket);
    }
    return r;
  }

  /**
   * Writes a staged manifest (format version of the table, current spec) listing {@code files} as
   * ADDED entries with no snapshot id, at {@code location}. Nothing is committed.
   */
  static ManifestFile writeStagedManifest(Table table, String location, List<DataFile> files)
      throws IOException {
    OutputFile out = table.io().newOutputFile(location);
    ManifestWriter<DataFile> writer =
        ManifestFiles.write(formatVersion(table), table.spec(), out, null);
    try (writer) {
      for (DataFile f : files) {
        writer.add(f);
      }
    }
    return writer.toManifestFile();
  }

  /** Default directory for staged manifests: the table's metadata directory. */
  static String metadataDir(Table table) {
    String loc = table.location();
    return (loc.endsWith("/") ? loc.substring(0, loc.length() - 1) : loc) + "/metadata";
  }
}
