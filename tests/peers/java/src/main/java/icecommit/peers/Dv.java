// SPDX-License-Identifier: Apache-2.0
//
// The "dv-write" and "dv-read" subcommands: deletion vectors in Puffin files with Iceberg's own
// code, the oracle for icecommit's daemon/puffin/ (tests/integration/test_puffin_interop.py).
// dv-write runs BaseDVFileWriter (one DV per --data-file, each with its --positions, in one
// Puffin file, as a Spark delete writes them) and prints each DV's manifest-entry fields.
// dv-read reads one DV the way scans do (BaseDeleteLoader, then BitmapPositionDeleteIndex.deserialize,
// which checks the length, magic, CRC and that the cardinality equals the record count) and the footer with
// PuffinReader, and prints the positions and the footer's blobs.
//
//   dv-write --path OUT.puffin --data-file PATH --positions 1,5,4294967299
//            [--data-file2 PATH --positions2 LIST]
//   dv-read  --path IN.puffin --offset O --length L --record-count N --data-file PATH
package icecommit.peers;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.Files;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.data.BaseDeleteLoader;
import org.apache.iceberg.deletes.BaseDVFileWriter;
import org.apache.iceberg.deletes.PositionDeleteIndex;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.puffin.BlobMetadata;
import org.apache.iceberg.puffin.Puffin;
import org.apache.iceberg.puffin.PuffinReader;

final class Dv {
  private Dv() {}

  static boolean handles(String cmd) {
    return cmd.equals("dv-write") || cmd.equals("dv-read");
  }

  static String run(String cmd, String[] rest) throws Exception {
    if (cmd.equals("dv-write")) {
      return write(new Args(rest,
          java.util.Set.of("path", "data-file", "positions", "data-file2", "positions2"),
          java.util.Set.of()));
    }
    return read(new Args(rest,
        java.util.Set.of("path", "offset", "length", "record-count", "data-file"),
        java.util.Set.of()));
  }

  private static List<Long> positions(String list) {
    List<Long> out = new ArrayList<>();
    if (!list.isEmpty()) {
      for (String s : list.split(",")) {
        out.add(Long.parseLong(s.trim()));
      }
    }
    return out;
  }

  private static String write(Args args) throws Exception {
    String path = args.str("path");
    BaseDVFileWriter writer = new BaseDVFileWriter(() -> Files.localOutput(path), p -> null);
    PartitionSpec spec = PartitionSpec.unpartitioned();
    try (BaseDVFileWriter w = writer) {
      for (long pos : positions(args.str("positions"))) {
        w.delete(args.str("data-file"), pos, spec, null);
      }
      String second = args.str("data-file2", null);
      if (second != null) {
        for (long pos : positions(args.str("positions2"))) {
          w.delete(second, pos, spec, null);
        }
      }
    }
    List<Map<String, Object>> dvs = new ArrayList<>();
    for (DeleteFile dv : writer.result().deleteFiles()) {
      Map<String, Object> f = new LinkedHashMap<>();
      f.put("path", dv.location());
      f.put("format", dv.format().toString());
      f.put("file-size-in-bytes", dv.fileSizeInBytes());
      f.put("referenced-data-file", dv.referencedDataFile());
      f.put("content-offset", dv.contentOffset());
      f.put("content-size-in-bytes", dv.contentSizeInBytes());
      f.put("record-count", dv.recordCount());
      dvs.add(f);
    }
    return Peer.JSON.writeValueAsString(Map.of("dvs", dvs));
  }

  private static String read(Args args) throws Exception {
    String path = args.str("path");
    InputFile in = Files.localInput(path);
    long offset = args.lng("offset");
    int length = Math.toIntExact(args.lng("length"));
    DeleteFile dv = FileMetadata.deleteFileBuilder(PartitionSpec.unpartitioned())
        .ofPositionDeletes()
        .withFormat(FileFormat.PUFFIN)
        .withPath(path)
        .withFileSizeInBytes(in.getLength())
        .withReferencedDataFile(args.str("data-file"))
        .withContentOffset(offset)
        .withContentSizeInBytes(length)
        .withRecordCount(args.lng("record-count"))
        .build();
    // The scan path: BaseDeleteLoader reads content_size_in_bytes at content_offset and hands
    // them to BitmapPositionDeleteIndex.deserialize.
    PositionDeleteIndex index = new BaseDeleteLoader(f -> Files.localInput(f.location()))
        .loadPositionDeletes(List.of(dv), args.str("data-file"));
    List<Long> positions = new ArrayList<>();
    index.forEach(positions::add);

    List<Map<String, Object>> blobs = new ArrayList<>();
    try (PuffinReader reader = Puffin.read(in).build()) {
      for (BlobMetadata b : reader.fileMetadata().blobs()) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", b.type());
        m.put("fields", b.inputFields());
        m.put("snapshot-id", b.snapshotId());
        m.put("sequence-number", b.sequenceNumber());
        m.put("offset", b.offset());
        m.put("length", b.length());
        m.put("compression-codec", b.compressionCodec());
        m.put("properties", b.properties());
        blobs.add(m);
      }
    }
    Map<String, Object> out = new LinkedHashMap<>();
    out.put("positions", positions);
    out.put("cardinality", index.cardinality());
    out.put("blobs", blobs);
    return Peer.JSON.writeValueAsString(out);
  }
}
