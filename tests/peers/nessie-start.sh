#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Starts Project Nessie's server (the runner jar from tests/peers/nessie-fetch.sh; Iceberg REST at
# http://127.0.0.1:PORT/iceberg, its own API at /api) in the background, every listener on
# 127.0.0.1, version store in memory.
#   tests/peers/nessie-start.sh DIR PORT [key=value ...]
# Each key=value is one more Quarkus/Nessie property, e.g. the warehouse and its S3 store:
#   nessie.catalog.default-warehouse=wh nessie.catalog.warehouses.wh.location=s3://bucket/prefix
#   nessie.catalog.service.s3.default-options.endpoint=http://127.0.0.1:9000 ...
# or OAuth2 (tokens from Keycloak, tests/peers/keycloak-start.sh):
#   nessie.server.authentication.enabled=true quarkus.oidc.auth-server-url=http://.../realms/R
# (Nessie 0.99 accepts no file:// warehouse: "Unknown or unsupported scheme: file".)
# State in DIR: config/application.properties (written from the arguments), nessie.log,
# nessie.pid. Idempotent: if the server recorded in DIR/nessie.pid is alive and answers, does
# nothing. Waits up to NESSIE_START_TIMEOUT (120) s for an answer (200, or 401 with
# authentication on) on /iceberg/v1/config; on failure prints the log tail, exit 1.
# NESSIE_JAVA_OPTS tunes the JVM. Stopped by tests/peers/nessie-stop.sh DIR.
set -euo pipefail

# True while PID exists and is not a zombie (an exited child not yet reaped still answers kill -0).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

if [[ $# -lt 2 ]]; then
  echo "usage: $0 DIR PORT [key=value ...]" >&2
  exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PORT="$2"
if ! [[ "$PORT" =~ ^[0-9]+$ ]]; then
  echo "nessie-start: PORT must be a number, got: $PORT" >&2
  exit 2
fi
mkdir -p "$1/config"
DIR="$(cd "$1" && pwd)"
shift 2
PIDFILE="$DIR/nessie.pid"
LOG="$DIR/nessie.log"
URL="http://127.0.0.1:$PORT/iceberg/v1/config"

answers() { # HTTP status of GET $URL is 200 or 401
  local code
  code="$(curl -s -o /dev/null -w '%{http_code}' "$URL" || true)"
  [[ "$code" == 200 || "$code" == 401 ]]
}

if [[ -f "$PIDFILE" ]]; then
  OLD="$(cat "$PIDFILE")"
  if [[ -n "$OLD" ]] && alive "$OLD" && tr '\0' ' ' <"/proc/$OLD/cmdline" | grep -qF "$DIR/nessie.marker"; then
    if answers; then
      echo "nessie-start: already running (pid $OLD) at http://127.0.0.1:$PORT/iceberg"
      exit 0
    fi
    echo "nessie-start: pid $OLD is running but $URL does not answer; stop it first:" \
      "$HERE/nessie-stop.sh $DIR" >&2
    exit 1
  fi
  rm -f "$PIDFILE"
fi
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
  echo "nessie-start: something else already listens on 127.0.0.1:$PORT" >&2
  exit 1
fi

"$HERE/nessie-fetch.sh"
{ read -r JAR; read -r _; read -r JAVA; } < <("$HERE/nessie-fetch.sh" --paths)

# Quarkus reads config/application.properties under its working directory. The management
# interface (health, metrics) gets a free port of its own: its default, 9000, is often taken.
{
  echo "quarkus.http.host=127.0.0.1"
  echo "quarkus.http.port=$PORT"
  echo "quarkus.management.host=127.0.0.1"
  echo "quarkus.management.port=0"
  echo "quarkus.otel.sdk.disabled=true"
  echo "quarkus.log.file.enable=false"
  for prop in "$@"; do
    if [[ "$prop" != *=* ]]; then
      echo "nessie-start: property '$prop' is not key=value" >&2
      exit 2
    fi
    echo "$prop"
  done
} >"$DIR/config/application.properties"

# -Dicecommit.marker names DIR in the command line: nessie-stop.sh checks it before signalling.
# shellcheck disable=SC2086
(cd "$DIR" && exec nohup "$JAVA" -Xmx512m -XX:+UseSerialGC ${NESSIE_JAVA_OPTS:-} \
  -Dicecommit.marker="$DIR/nessie.marker" -jar "$JAR" </dev/null >>"$LOG" 2>&1) &
PID=$!
echo "$PID" >"$PIDFILE"

for _ in $(seq 1 $((2 * ${NESSIE_START_TIMEOUT:-120}))); do
  if ! alive "$PID"; then
    echo "nessie-start: Nessie (pid $PID) exited during startup; last lines of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    rm -f "$PIDFILE"
    exit 1
  fi
  if answers; then
    echo "nessie-start: Nessie pid $PID at http://127.0.0.1:$PORT/iceberg (state in $DIR)"
    exit 0
  fi
  sleep 0.5
done
echo "nessie-start: $URL did not answer within ${NESSIE_START_TIMEOUT:-120} s; last lines of $LOG:" >&2
tail -n 40 "$LOG" >&2
exit 1
