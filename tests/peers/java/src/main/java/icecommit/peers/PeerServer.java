// SPDX-License-Identifier: Apache-2.0
//
// The test-peer CLI (Peer) as a long-lived process, so that a test run pays for one JVM start
// and one warm-up of Iceberg's classes instead of one per call (a few hundred calls per run):
//
//   java -cp ... icecommit.peers.PeerServer PORT_FILE
//
// Listens on 127.0.0.1 (an ephemeral port, written to PORT_FILE once listening). Each connection
// carries one request, a JSON line {"args": ["dump", "--uri", ...], "env": {"PEER_CATALOG_X": ..}},
// and gets one JSON line back: {"status": 0, "out": "<the subcommand's stdout>"}, or status 1
// (failure) or 2 (usage) with "err" as the CLI would print on stderr. Requests run at once, each
// on its own thread, with the environment the client sent standing in for this process's
// (Peer.ENV): the same subcommands, the same Iceberg code, the same answers as a peer.sh run.
// tests/integration/conftest.py starts one per test session and stops it by pid.
package icecommit.peers;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

public final class PeerServer {
  private PeerServer() {}

  public static void main(String[] argv) throws IOException {
    if (argv.length != 1) {
      System.err.println("usage: PeerServer PORT_FILE");
      System.exit(2);
    }
    ExecutorService pool =
        Executors.newCachedThreadPool(
            r -> {
              Thread t = new Thread(r, "peer-request");
              t.setDaemon(true);
              return t;
            });
    try (ServerSocket server = new ServerSocket()) {
      server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 256);
      // Written whole, then renamed: a reader never sees half a number.
      Path file = Path.of(argv[0]);
      Path tmp = Path.of(argv[0] + ".tmp");
      Files.writeString(tmp, Integer.toString(server.getLocalPort()));
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
      while (true) {
        Socket client = server.accept();
        pool.execute(() -> serve(client));
      }
    }
  }

  private static void serve(Socket client) {
    try (client) {
      BufferedReader in =
          new BufferedReader(new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8));
      String line = in.readLine();
      ObjectNode answer = line == null ? null : answer(line);
      if (answer == null) {
        return;
      }
      OutputStream out = client.getOutputStream();
      out.write((Peer.JSON.writeValueAsString(answer) + "\n").getBytes(StandardCharsets.UTF_8));
      out.flush();
    } catch (IOException e) {
      // The client went away: nothing to answer.
    }
  }

  private static ObjectNode answer(String line) {
    ObjectNode answer = Peer.JSON.createObjectNode();
    String cmd = "";
    try {
      JsonNode request = Peer.JSON.readTree(line);
      List<String> args = new ArrayList<>();
      request.path("args").forEach(a -> args.add(a.asText()));
      Map<String, String> env = new HashMap<>();
      request.path("env").fields().forEachRemaining(e -> env.put(e.getKey(), e.getValue().asText()));
      if (args.isEmpty()) {
        throw new Args.UsageException("no subcommand");
      }
      cmd = args.get(0);
      Peer.ENV.set(env);
      try {
        answer.put("out", Peer.run(cmd, args.subList(1, args.size()).toArray(new String[0])));
      } finally {
        Peer.ENV.remove();
      }
      answer.put("status", 0);
    } catch (Args.UsageException e) {
      answer.put("status", 2);
      answer.put("err", "peer: " + e.getMessage() + "\n");
    } catch (Throwable e) {
      answer.put("status", 1);
      answer.put("err", Peer.failure(cmd, e, true));
    }
    return answer;
  }
}
