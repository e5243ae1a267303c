#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Stops the REST catalog started by catalog-start.sh DIR: signals only the pid recorded in
# DIR/catalog.pid (after checking it is that server), waits for it to exit (SIGKILL after 30 s).
#   tests/peers/catalog-stop.sh DIR
# Exits 0 if nothing was running.
set -euo pipefail

# True while PID exists and is not a zombie (an exited child not yet reaped still answers kill -0).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
PIDFILE="$1/catalog.pid"
if [[ ! -f "$PIDFILE" ]]; then
  echo "catalog-stop: no $PIDFILE; nothing to stop"
  exit 0
fi
PID="$(cat "$PIDFILE")"
if ! [[ "$PID" =~ ^[0-9]+$ ]] || ! alive "$PID"; then
  echo "catalog-stop: pid '$PID' is not running"
  rm -f "$PIDFILE"
  exit 0
fi
if ! tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null | grep -q 'org.apache.iceberg.rest.LoopbackCatalogServer'; then
  echo "catalog-stop: pid $PID is not the catalog server (stale pid file); not killing it" >&2
  rm -f "$PIDFILE"
  exit 1
fi

kill -TERM "$PID"
for _ in $(seq 1 300); do
  alive "$PID" || break
  sleep 0.1
done
if alive "$PID"; then
  echo "catalog-stop: pid $PID still alive after 30 s; sending SIGKILL" >&2
  kill -KILL "$PID" 2>/dev/null || true
  for _ in $(seq 1 50); do
    alive "$PID" || break
    sleep 0.1
  done
fi
rm -f "$PIDFILE"
echo "catalog-stop: stopped pid $PID"
