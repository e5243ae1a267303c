// SPDX-License-Identifier: Apache-2.0
//
// The "evolve" subcommand: changes a table through the catalog with Iceberg's own API, so tests
// can change a schema (or a property) between staging a manifest and committing it. --ops is a
// JSON array of operations applied in order, schema changes in one UpdateSchema commit:
//   ["add", NAME, TYPE]            optional column (TYPE as in Types.fromPrimitiveString: int,
//                                  long, float, double, string, decimal(P,S))
//   ["add-required", NAME, TYPE]   required column without default (allowIncompatibleChanges)
//   ["drop", NAME]   ["rename", OLD, NEW]   ["promote", NAME, TYPE]
//   ["set-property", KEY, VALUE]   table property (its own commit)
//   ["delete-file", PATH]          removes a data file from the table (DeleteFiles, its own
//                                  commit: its manifest is rewritten with the entry DELETED)
// Prints the new schema id and the schema as JSON.
//
//   evolve --uri U --table ns.name --ops JSON
package icecommit.peers;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.iceberg.SchemaParser;
import org.apache.iceberg.Table;
import org.apache.iceberg.UpdateSchema;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Type;
import org.apache.iceberg.types.Types;

final class Evolve {
  private Evolve() {}

  private static Type.PrimitiveType type(String s) {
    return Types.fromPrimitiveString(s);
  }

  static String run(Args args) throws Exception {
    TableIdentifier id = Peer.ident(args);
    JsonNode ops = Peer.JSON.readTree(args.str("ops"));
    if (!ops.isArray()) {
      throw new Args.UsageException("--ops must be a JSON array");
    }
    try (RESTCatalog catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(id);
      UpdateSchema update = table.updateSchema();
      boolean schemaChanged = false;
      for (JsonNode op : ops) {
        String kind = op.get(0).asText();
        switch (kind) {
          case "add":
            update.addColumn(op.get(1).asText(), type(op.get(2).asText()));
            break;
          case "add-required":
            update.allowIncompatibleChanges().addRequiredColumn(op.get(1).asText(), type(op.get(2).asText()));
            break;
          case "drop":
            update.deleteColumn(op.get(1).asText());
            break;
          case "rename":
            update.renameColumn(op.get(1).asText(), op.get(2).asText());
            break;
          case "promote":
            update.updateColumn(op.get(1).asText(), type(op.get(2).asText()));
            break;
          case "set-property":
            table.updateProperties().set(op.get(1).asText(), op.get(2).asText()).commit();
            continue;
          case "delete-file":
            table.newDelete().deleteFile(op.get(1).asText()).commit();
            continue;
          default:
            throw new Args.UsageException("unknown evolve operation: " + kind);
        }
        schemaChanged = true;
      }
      if (schemaChanged) {
        update.commit();
      }
      table.refresh();
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("schema-id", table.schema().schemaId());
      out.put("schema", Peer.JSON.readTree(SchemaParser.toJson(table.schema())));
      out.put("properties", table.properties());
      return Peer.JSON.writeValueAsString(out);
    }
  }
}
