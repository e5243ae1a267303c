#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Stops the SeaweedFS server started by s3-start.sh DIR: SIGKILL to the pid recorded in
# DIR/weed.pid (after checking it is that server), then waits up to 10 s for it to exit.
# SIGKILL because SIGTERM takes 12-17 s and DIR is throw-away test state (a server restarted on
# the same DIR and ports still serves the old objects).
#   tests/peers/s3-stop.sh DIR
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
PIDFILE="$1/weed.pid"
if [[ ! -f "$PIDFILE" ]]; then
  echo "s3-stop: no $PIDFILE; nothing to stop"
  exit 0
fi
DIR="$(cd "$1" && pwd)"
PID="$(cat "$PIDFILE")"
if ! [[ "$PID" =~ ^[0-9]+$ ]] || ! alive "$PID"; then
  echo "s3-stop: pid '$PID' is not running"
  rm -f "$PIDFILE"
  exit 0
fi
if ! tr '\0' ' ' <"/proc/$PID/cmdline" 2>/dev/null | grep -qF -- "-s3.config=$DIR/s3.json"; then
  echo "s3-stop: pid $PID is not the SeaweedFS server of $DIR (stale pid file); not killing it" >&2
  rm -f "$PIDFILE"
  exit 1
fi

# The ports, to remove the unix sockets SeaweedFS creates next to its TCP listeners
# (/tmp/seaweedfs-<service>[-grpc]-<port>.sock) and leaves behind when killed.
PORTS=()
while read -r arg; do
  if [[ "$arg" =~ ^-(master|volume|filer|s3)\.port=([0-9]+)$ ]]; then PORTS+=("${BASH_REMATCH[2]}"); fi
done < <(tr '\0' '\n' <"/proc/$PID/cmdline")

kill -KILL "$PID"
for _ in $(seq 1 100); do
  alive "$PID" || break
  sleep 0.1
done
if alive "$PID"; then
  echo "s3-stop: pid $PID still alive 10 s after SIGKILL" >&2
  exit 1
fi
rm -f "$PIDFILE"
for p in "${PORTS[@]}"; do
  for svc in master volume filer s3; do
    rm -f "/tmp/seaweedfs-$svc-$p.sock" "/tmp/seaweedfs-$svc-grpc-$((p + 10000)).sock"
  done
done
echo "s3-stop: stopped pid $PID"
