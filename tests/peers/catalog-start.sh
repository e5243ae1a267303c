#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Starts the real Apache Iceberg REST catalog (org.apache.iceberg.rest.LoopbackCatalogServer:
# JdbcCatalog on a SQLite file, local warehouse, Jetty bound to 127.0.0.1 only) in the background.
#   tests/peers/catalog-start.sh DIR PORT
# State in DIR: catalog.db (SQLite), wh/ (warehouse), catalog.log, catalog.pid.
# Idempotent: if the server recorded in DIR/catalog.pid is alive and answers on PORT, does nothing.
# Waits up to 120 s for GET http://127.0.0.1:PORT/v1/config; on failure prints the log tail, exit 1.
# Extra CATALOG_* variables in the environment pass through as catalog properties.
# CATALOG_ADVERTISE_IDEMPOTENCY=PT30M (any ISO-8601 duration) makes /v1/config advertise
# idempotency-key-lifetime and sets the server's idempotency store lifetime to it.
# Faults are injected at runtime through http://127.0.0.1:PORT/__faults (see FaultInjector.java and
# tests/integration/faults.py).
# CATALOG_LOG_LEVEL (default info) and CATALOG_JAVA_OPTS tune the JVM.
set -euo pipefail

# True while PID exists and is not a zombie (an exited child not yet reaped still answers kill -0).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

if [[ $# -ne 2 ]]; then
  echo "usage: $0 DIR PORT" >&2
  exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PORT="$2"
if ! [[ "$PORT" =~ ^[0-9]+$ ]]; then
  echo "catalog-start: PORT must be a number, got: $PORT" >&2
  exit 2
fi
mkdir -p "$1/wh"
DIR="$(cd "$1" && pwd)"
PIDFILE="$DIR/catalog.pid"
LOG="$DIR/catalog.log"
URL="http://127.0.0.1:$PORT/v1/config"

is_our_server() { # pid
  [[ -n "$1" ]] && alive "$1" &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -q 'org.apache.iceberg.rest.LoopbackCatalogServer'
}

if [[ -f "$PIDFILE" ]]; then
  OLD="$(cat "$PIDFILE")"
  if is_our_server "$OLD"; then
    if curl -sf -o /dev/null "$URL"; then
      echo "catalog-start: already running (pid $OLD) at http://127.0.0.1:$PORT"
      exit 0
    fi
    echo "catalog-start: pid $OLD from $PIDFILE is running but $URL does not answer" >&2
    echo "catalog-start: stop it first: $HERE/catalog-stop.sh $DIR" >&2
    exit 1
  fi
  rm -f "$PIDFILE"
fi

if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
  echo "catalog-start: something else already listens on 127.0.0.1:$PORT" >&2
  exit 1
fi

"$HERE/peer.sh" --ensure-built

TARGET="$HERE/java/target"
# shellcheck disable=SC2086
CATALOG_URI="jdbc:sqlite:$DIR/catalog.db" \
CATALOG_WAREHOUSE="$DIR/wh" \
CATALOG_REST_PORT="$PORT" \
CATALOG_JDBC_STRICT__MODE=true \
  nohup java -Dorg.slf4j.simpleLogger.defaultLogLevel="${CATALOG_LOG_LEVEL:-info}" ${CATALOG_JAVA_OPTS:-} \
    -cp "$TARGET/lib/*:$TARGET/classes" org.apache.iceberg.rest.LoopbackCatalogServer \
    </dev/null >>"$LOG" 2>&1 &
PID=$!
echo "$PID" >"$PIDFILE"

for _ in $(seq 1 240); do
  if ! alive "$PID"; then
    echo "catalog-start: server (pid $PID) exited during startup; last log lines of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    rm -f "$PIDFILE"
    exit 1
  fi
  if curl -sf -o /dev/null "$URL"; then
    echo "catalog-start: Iceberg REST catalog pid $PID at http://127.0.0.1:$PORT (state in $DIR)"
    exit 0
  fi
  sleep 0.5
done

echo "catalog-start: $URL did not answer within 120 s; last log lines of $LOG:" >&2
tail -n 40 "$LOG" >&2
exit 1
