#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Stops what tests/peers/nessie-start.sh DIR and tests/peers/keycloak-start.sh DIR started:
# Nessie first, then Keycloak. Signals only the pids recorded in DIR/nessie.pid and
# DIR/keycloak.pid, each after checking that its command line names DIR; waits for each to exit
# (SIGKILL after 30 s).
#   tests/peers/nessie-stop.sh DIR
# Exits 0 if nothing was running, 1 if a pid file named another process (not signalled).
set -euo pipefail

# True while PID exists and is not a zombie (an exited child not yet reaped still answers kill -0).
alive() {
  kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
if [[ ! -d "$1" ]]; then
  echo "nessie-stop: no directory $1; nothing to stop"
  exit 0
fi
DIR="$(cd "$1" && pwd)"
status=0

stop_one() { # name pidfile marker
  local name="$1" pidfile="$2" marker="$3" pid
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile")"
  if ! [[ "$pid" =~ ^[0-9]+$ ]] || ! alive "$pid"; then
    echo "nessie-stop: $name pid '$pid' is not running"
    rm -f "$pidfile"
    return 0
  fi
  if ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "$marker"; then
    echo "nessie-stop: pid $pid is not the $name of $DIR (stale pid file); not killing it" >&2
    rm -f "$pidfile"
    status=1
    return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 300); do
    alive "$pid" || break
    sleep 0.1
  done
  if alive "$pid"; then
    echo "nessie-stop: $name pid $pid still alive after 30 s; sending SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      alive "$pid" || break
      sleep 0.1
    done
  fi
  rm -f "$pidfile"
  echo "nessie-stop: stopped $name pid $pid"
}

stop_one Nessie "$DIR/nessie.pid" "$DIR/nessie.marker"
stop_one Keycloak "$DIR/keycloak.pid" "$DIR/keycloak/"
exit "$status"
