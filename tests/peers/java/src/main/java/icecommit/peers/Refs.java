// SPDX-License-Identifier: Apache-2.0
//
// Table-state subcommands the upgrade, branch and format-version tests need, done with Iceberg's
// own API so the state is exactly what Java writers leave behind:
//
//   branch        --uri U --table ns.name --name B [--snapshot-id S]
//                 creates branch B at snapshot S (default: the current snapshot), like
//                 table.manageSnapshots().createBranch(B, S); prints {"branch", "snapshot-id"}
//   set-property  --uri U --table ns.name --key K --value V   (either kind of catalog)
//                 table.updateProperties().set(K, V); prints {"key", "value", "format-version"}
package icecommit.peers;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.rest.RESTCatalog;

final class Refs {
  private Refs() {}

  static boolean handles(String cmd) {
    return cmd.equals("branch") || cmd.equals("set-property");
  }

  static String run(String cmd, String[] rest) throws Exception {
    if (cmd.equals("branch")) {
      return branch(new Args(rest, Set.of("uri", "table", "name", "snapshot-id"), Set.of()));
    }
    return setProperty(new Args(rest, Set.of("uri", "table", "key", "value"), Set.of()));
  }

  private static String branch(Args args) throws Exception {
    TableIdentifier id = Peer.ident(args);
    String name = args.str("name");
    try (RESTCatalog catalog = Peer.catalog(args)) {
      Table table = catalog.loadTable(id);
      long snapshotId =
          args.str("snapshot-id", null) != null
              ? args.lng("snapshot-id")
              : table.currentSnapshot().snapshotId();
      table.manageSnapshots().createBranch(name, snapshotId).commit();
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("branch", name);
      out.put("snapshot-id", snapshotId);
      return Peer.JSON.writeValueAsString(out);
    }
  }

  private static String setProperty(Args args) throws Exception {
    TableIdentifier id = Peer.ident(args);
    try (var catalog = Peer.catalog(args)) { // REST, or a filesystem warehouse (HadoopCatalog)
      Table table = catalog.loadTable(id);
      table.updateProperties().set(args.str("key"), args.str("value")).commit();
      table.refresh();
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("key", args.str("key"));
      out.put("value", table.properties().get(args.str("key")));
      out.put("format-version", PeerData.formatVersion(table));
      return Peer.JSON.writeValueAsString(out);
    }
  }
}
