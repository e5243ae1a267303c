#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs the Java test-peer CLI (icecommit.peers.Peer) with the right classpath, from any cwd:
#   tests/peers/peer.sh dump --uri http://127.0.0.1:8181 --table ns.t
# Builds tests/peers/java first if its target/ is missing or older than the sources.
#   tests/peers/peer.sh --ensure-built    only (re)build if needed, then exit
# PEER_JAVA_OPTS adds JVM options; PEER_DEBUG=1 makes failures print a stack trace.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
JAVA_DIR="$HERE/java"
TARGET="$JAVA_DIR/target"
MARKER="$TARGET/.peers-built"

ensure_built() {
  if [[ -f "$MARKER" ]] && [[ -z "$(find "$JAVA_DIR/pom.xml" "$JAVA_DIR/src" -newer "$MARKER" -print -quit)" ]]; then
    return 0
  fi
  mkdir -p "$TARGET"
  (
    # Serialise concurrent first runs; re-check under the lock.
    exec 9>"$TARGET/.build.lock"
    flock 9
    if [[ -f "$MARKER" ]] && [[ -z "$(find "$JAVA_DIR/pom.xml" "$JAVA_DIR/src" -newer "$MARKER" -print -quit)" ]]; then
      exit 0
    fi
    echo "peer.sh: building Java peers (mvn package; first run downloads ~210 MB to ~/.m2)" >&2
    rm -rf "${TARGET:?}/lib"
    if ! mvn -B -q -f "$JAVA_DIR/pom.xml" package dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory=target/lib >"$TARGET/build.log" 2>&1; then
      echo "peer.sh: Java peer build failed; $TARGET/build.log:" >&2
      cat "$TARGET/build.log" >&2
      exit 1
    fi
    touch "$MARKER"
  )
}

ensure_built
if [[ "${1:-}" == "--ensure-built" ]]; then
  exit 0
fi

# shellcheck disable=SC2086
exec java -XX:+UseSerialGC -XX:TieredStopAtLevel=1 ${PEER_JAVA_OPTS:-} \
  -cp "$TARGET/lib/*:$TARGET/classes" icecommit.peers.Peer "$@"
