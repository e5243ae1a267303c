#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Starts Keycloak (the server distribution from tests/peers/nessie-fetch.sh, dev mode, in-memory
# database, HTTP on 127.0.0.1 only) in the background as the OAuth2 server of the Nessie tests.
#   tests/peers/keycloak-start.sh DIR PORT [REALM_JSON]
# REALM_JSON (default tests/peers/nessie/iceberg-realm.json) is imported at start: realm "iceberg",
# its token endpoint http://127.0.0.1:PORT/realms/iceberg/protocol/openid-connect/token.
# The distribution is unpacked into DIR/keycloak (one per DIR: Keycloak writes into its home).
# Tokens name http://127.0.0.1:PORT/realms/R as their issuer whatever Host they were asked
# through (a counting proxy in front of the token endpoint does not change it).
# State in DIR: keycloak/, keycloak.log, keycloak.pid. The management interface (health, metrics)
# is off. Idempotent: if the server recorded in DIR/keycloak.pid is alive and answers, does
# nothing. Waits up to KEYCLOAK_START_TIMEOUT (180) s for the realm's OpenID configuration; on
# failure prints the log tail, exit 1. Stopped by tests/peers/nessie-stop.sh DIR.
set -euo pipefail

# True while PID exists and is not a zombie (an exited child not yet reaped still answers kill -0).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

if [[ $# -lt 2 || $# -gt 3 ]]; then
  echo "usage: $0 DIR PORT [REALM_JSON]" >&2
  exit 2
fi
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PORT="$2"
REALM="${3:-$HERE/nessie/iceberg-realm.json}"
if ! [[ "$PORT" =~ ^[0-9]+$ ]]; then
  echo "keycloak-start: PORT must be a number, got: $PORT" >&2
  exit 2
fi
mkdir -p "$1"
DIR="$(cd "$1" && pwd)"
PIDFILE="$DIR/keycloak.pid"
LOG="$DIR/keycloak.log"
HOME_DIR="$DIR/keycloak"
REALM_NAME="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["realm"])' "$REALM")"
URL="http://127.0.0.1:$PORT/realms/$REALM_NAME/.well-known/openid-configuration"

if [[ -f "$PIDFILE" ]]; then
  OLD="$(cat "$PIDFILE")"
  if [[ -n "$OLD" ]] && alive "$OLD" && tr '\0' ' ' <"/proc/$OLD/cmdline" | grep -qF "$HOME_DIR/"; then
    if curl -sf -o /dev/null "$URL"; then
      echo "keycloak-start: already running (pid $OLD) at http://127.0.0.1:$PORT"
      exit 0
    fi
    echo "keycloak-start: pid $OLD is running but $URL does not answer; stop it first:" \
      "$HERE/nessie-stop.sh $DIR" >&2
    exit 1
  fi
  rm -f "$PIDFILE"
fi
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then
  echo "keycloak-start: something else already listens on 127.0.0.1:$PORT" >&2
  exit 1
fi

"$HERE/nessie-fetch.sh"
{ read -r _; read -r ZIP; read -r JAVA; } < <("$HERE/nessie-fetch.sh" --paths)
if [[ ! -x "$HOME_DIR/bin/kc.sh" ]]; then
  rm -rf "$HOME_DIR" "$DIR/keycloak.unzip"
  mkdir -p "$DIR/keycloak.unzip"
  unzip -q "$ZIP" -d "$DIR/keycloak.unzip"
  mv "$DIR"/keycloak.unzip/keycloak-* "$HOME_DIR"
  rmdir "$DIR/keycloak.unzip"
fi
mkdir -p "$HOME_DIR/data/import"
cp "$REALM" "$HOME_DIR/data/import/realm.json"

# kc.sh runs java as its child, or execs it after rebuilding for the options; SIGTERM to the
# recorded pid reaches the server either way (kc.sh forwards it).
JAVA_HOME="$(dirname "$(dirname "$JAVA")")" JAVA_OPTS_KC_HEAP="-Xms64m -Xmx512m" \
  nohup "$HOME_DIR/bin/kc.sh" start-dev --db=dev-mem --http-host=127.0.0.1 --http-port="$PORT" \
  --hostname="http://127.0.0.1:$PORT" --health-enabled=false --metrics-enabled=false --import-realm \
  </dev/null >>"$LOG" 2>&1 &
PID=$!
echo "$PID" >"$PIDFILE"

for _ in $(seq 1 $((2 * ${KEYCLOAK_START_TIMEOUT:-180}))); do
  if ! alive "$PID"; then
    echo "keycloak-start: Keycloak (pid $PID) exited during startup; last lines of $LOG:" >&2
    tail -n 40 "$LOG" >&2
    rm -f "$PIDFILE"
    exit 1
  fi
  if curl -sf -o /dev/null "$URL"; then
    echo "keycloak-start: Keycloak pid $PID at http://127.0.0.1:$PORT, realm $REALM_NAME (state in $DIR)"
    exit 0
  fi
  sleep 0.5
done
echo "keycloak-start: $URL did not answer within ${KEYCLOAK_START_TIMEOUT:-180} s; last lines of $LOG:" >&2
tail -n 40 "$LOG" >&2
exit 1
