// SPDX-License-Identifier: Apache-2.0
//
// The "stage-eq-deletes" subcommand: writes one Parquet equality delete file on column "id"
// (equality field id 1) holding the given key values, and a staged delete manifest listing it as
// an ADDED entry with no snapshot id (ManifestFiles.writeDeleteManifest), with stock Iceberg
// writers. Nothing is committed. Unpartitioned tables only.
//
//   stage-eq-deletes --uri U --table ns.name --ids 1,2,3 [--manifest-dir DIR]
package icecommit.peers;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.ManifestFile;
import org.apache.iceberg.ManifestFiles;
import org.apache.iceberg.ManifestWriter;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetWriter;
import org.apache.iceberg.deletes.EqualityDeleteWriter;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.parquet.schema.MessageType;

final class EqDeletes {
  private EqDeletes() {}

  static String run(Args args) throws Exception {
    TableIdentifier id = Peer.ident(args);
    List<Long> ids = new ArrayList<>();
    for (String s : args.str("ids").split(",")) {
      ids.add(Long.parseLong(s.trim()));
    }
    try (RESTCatalog catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(id);
      if (table.spec().isPartitioned()) {
        throw new Args.UsageException("stage-eq-deletes supports unpartitioned tables only");
      }
      String dir = args.str("manifest-dir", PeerData.metadataDir(table));
      if (dir.endsWith("/")) {
        dir = dir.substring(0, dir.length() - 1);
      }

      Schema deleteSchema = table.schema().select("id");
      int idField = table.schema().findField("id").fieldId();
      OutputFile out =
          table.io().newOutputFile(
              table.locationProvider().newDataLocation("eq-delete-" + UUID.randomUUID() + ".parquet"));
      EqualityDeleteWriter<Record> writer =
          Parquet.writeDeletes(out)
              .forTable(table)
              .withSpec(table.spec())
              .rowSchema(deleteSchema)
              .createWriterFunc((Schema s, MessageType t) -> GenericParquetWriter.create(s, t))
              .equalityFieldIds(idField)
              .overwrite()
              .buildEqualityWriter();
      try (writer) {
        for (long v : ids) {
          GenericRecord r = GenericRecord.create(deleteSchema);
          r.setField("id", v);
          writer.write(r);
        }
      }
      DeleteFile deleteFile = writer.toDeleteFile();

      String location = dir + "/staged-eqdel-" + UUID.randomUUID() + "-m0.avro";
      ManifestWriter<DeleteFile> mw =
          ManifestFiles.writeDeleteManifest(
              PeerData.formatVersion(table), table.spec(), table.io().newOutputFile(location), null);
      try (mw) {
        mw.add(deleteFile);
      }
      ManifestFile mf = mw.toManifestFile();

      Map<String, Object> file = new LinkedHashMap<>();
      file.put("path", deleteFile.location());
      file.put("record-count", deleteFile.recordCount());
      file.put("file-size-in-bytes", deleteFile.fileSizeInBytes());
      file.put("equality-ids", deleteFile.equalityFieldIds());
      Map<String, Object> o = new LinkedHashMap<>();
      o.put("manifest", mf.path());
      o.put("manifest-length", mf.length());
      o.put("content", mf.content().id());
      o.put("format-version", PeerData.formatVersion(table));
      o.put("added-files", mf.addedFilesCount());
      o.put("added-rows", mf.addedRowsCount());
      o.put("delete-files", List.of(file));
      return Peer.JSON.writeValueAsString(o);
    }
  }
}
