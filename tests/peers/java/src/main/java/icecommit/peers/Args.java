// SPDX-License-Identifier: Apache-2.0
//
// Minimal "--name value" / "--flag" command-line parser for the Peer CLI. Unknown or repeated
// options are errors, so a typo in a test script fails loudly instead of being ignored.
package icecommit.peers;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

final class Args {
  private final Map<String, String> values = new HashMap<>();
  private final Set<String> flags = new HashSet<>();

  /**
   * Parses {@code argv} (without the subcommand).
   *
   * @param withValue option names (without "--") that take a value
   * @param flagNames option names that take no value
   */
  Args(String[] argv, Set<String> withValue, Set<String> flagNames) {
    for (int i = 0; i < argv.length; i++) {
      String arg = argv[i];
      if (!arg.startsWith("--")) {
        throw new UsageException("unexpected argument: " + arg);
      }
      String name = arg.substring(2);
      String inline = null;
      int eq = name.indexOf('=');
      if (eq >= 0) {
        inline = name.substring(eq + 1);
        name = name.substring(0, eq);
      }
      if (flagNames.contains(name)) {
        if (inline != null) {
          throw new UsageException("option --" + name + " takes no value");
        }
        flags.add(name);
      } else if (withValue.contains(name)) {
        String value = inline;
        if (value == null) {
          if (i + 1 >= argv.length) {
            throw new UsageException("option --" + name + " needs a value");
          }
          value = argv[++i];
        }
        if (values.put(name, value) != null) {
          throw new UsageException("option --" + name + " given twice");
        }
      } else {
        throw new UsageException("unknown option: --" + name);
      }
    }
  }

  boolean flag(String name) {
    return flags.contains(name);
  }

  String str(String name) {
    String v = values.get(name);
    if (v == null) {
      throw new UsageException("missing required option --" + name);
    }
    return v;
  }

  String str(String name, String dflt) {
    return values.getOrDefault(name, dflt);
  }

  long lng(String name) {
    return parseLong(name, str(name));
  }

  long lng(String name, long dflt) {
    String v = values.get(name);
    return v == null ? dflt : parseLong(name, v);
  }

  int integer(String name, int dflt) {
    long v = lng(name, dflt);
    if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
      throw new UsageException("option --" + name + " out of range: " + v);
    }
    return (int) v;
  }

  private static long parseLong(String name, String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new UsageException("option --" + name + " is not an integer: " + v);
    }
  }

  /** A command-line mistake: reported on stderr, exit status 2. */
  static final class UsageException extends RuntimeException {
    UsageException(String message) {
      super(message);
    }
  }
}
