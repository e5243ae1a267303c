#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Starts SeaweedFS (`weed server`: master, volume, filer and S3 gateway in one process, every
# listener on 127.0.0.1) in the background as the S3 peer of the integration tests.
#   tests/peers/s3-start.sh DIR PORT
# PORT is the S3 port. The other HTTP ports are PORT+1000 (master), PORT-262 (volume) and
# PORT+555 (filer); each also has a gRPC port at HTTP+10000. All 8 must be free (exit 3 if one is
# not), so PORT must lie in 1286..54535.
# Auth is on (-s3.config): every request must be SigV4-signed with access key AKIDICECOMMIT,
# secret icecommit-test-secret, region us-east-1. Without -s3.config SeaweedFS accepts anything.
# A second identity, icecommit_writer (AKIDICECOMMITWRITER / icecommit-writer-secret), may read,
# list and write: a writer job that bucket policies restrict (test_committed_copies.py).
# State in DIR: s3.json (identities), data/, weed.log, weed.pid.
# Ready when a signed object PUT succeeds (the first write waits ~10 s for the filer's lock
# ring); then bucket "icecommit" exists. Waits up to S3_START_TIMEOUT (60) s; on failure prints
# the log tail, exit 1. Idempotent: if the server recorded in DIR/weed.pid is alive and answers,
# does nothing. The binary comes from tests/peers/weed-build.sh (or $ICECOMMIT_WEED).
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
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || ((PORT < 1286 || PORT > 54535)); then
  echo "s3-start: PORT must be a number in 1286..54535, got: $PORT" >&2
  exit 2
fi
mkdir -p "$1/data"
DIR="$(cd "$1" && pwd)"
PIDFILE="$DIR/weed.pid"
LOG="$DIR/weed.log"
CONF="$DIR/s3.json"
WEED="${ICECOMMIT_WEED:-$("$HERE/weed-build.sh" --path)}"
ACCESS_KEY=AKIDICECOMMIT
SECRET_KEY=icecommit-test-secret
BUCKET=icecommit
ENDPOINT="http://127.0.0.1:$PORT"
E0=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 # sha256("")

# Signed S3 request; prints the HTTP status (000 if there was no answer).
#   s3 METHOD PATH [BODY-FILE] [curl args...]
s3() {
  local method="$1" path="$2" body="${3:-}" sha="$E0"
  shift 3 || shift $#
  local data=() verb=(-X "$method")
  [[ "$method" == HEAD ]] && verb=(-I)
  if [[ -n "$body" ]]; then
    sha="$(sha256sum "$body" | cut -d' ' -f1)"
    data=(--data-binary "@$body")
  fi
  curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:us-east-1:s3" \
    --user "$ACCESS_KEY:$SECRET_KEY" "${verb[@]}" -H "x-amz-content-sha256: $sha" \
    "${data[@]}" "$@" "$ENDPOINT$path" || true
}

is_our_server() { # pid
  [[ -n "$1" ]] && alive "$1" &&
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "-s3.config=$CONF"
}

if [[ -f "$PIDFILE" ]]; then
  OLD="$(cat "$PIDFILE")"
  if is_our_server "$OLD"; then
    if [[ "$(s3 HEAD "/$BUCKET" "" --max-time 5)" == 200 ]]; then
      echo "s3-start: already running (pid $OLD) at $ENDPOINT"
      exit 0
    fi
    echo "s3-start: pid $OLD from $PIDFILE is running but $ENDPOINT/$BUCKET does not answer" >&2
    echo "s3-start: stop it first: $HERE/s3-stop.sh $DIR" >&2
    exit 1
  fi
  rm -f "$PIDFILE"
fi

if [[ ! -x "$WEED" ]]; then
  echo "s3-start: no SeaweedFS binary at $WEED; build it with $HERE/weed-build.sh (~16 min)" >&2
  exit 1
fi

MASTER=$((PORT + 1000)) VOLUME=$((PORT - 262)) FILER=$((PORT + 555))
for p in "$PORT" "$MASTER" "$VOLUME" "$FILER"; do
  for q in "$p" $((p + 10000)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$q") 2>/dev/null; then
      echo "s3-start: something already listens on 127.0.0.1:$q (ports: $PORT $MASTER $VOLUME $FILER, each +10000)" >&2
      exit 3
    fi
  done
done

cat >"$CONF" <<EOF
{ "identities": [ { "name": "icecommit_test",
    "credentials": [ { "accessKey": "$ACCESS_KEY", "secretKey": "$SECRET_KEY" } ],
    "actions": ["Admin", "Read", "List", "Tagging", "Write"] },
  { "name": "icecommit_writer",
    "credentials": [ { "accessKey": "AKIDICECOMMITWRITER", "secretKey": "icecommit-writer-secret" } ],
    "actions": ["Read", "List", "Write"] } ] }
EOF

# -s3.port.iceberg=0 / -s3.port.lance=0: no built-in Iceberg REST catalog (default port 8181) or
# Lance listener; -master.telemetry=false: no reports to telemetry.seaweedfs.com.
nohup "$WEED" server -ip=127.0.0.1 -ip.bind=127.0.0.1 -dir="$DIR/data" \
  -master.port="$MASTER" -volume.port="$VOLUME" -filer.port="$FILER" \
  -s3 -s3.port="$PORT" -s3.config="$CONF" -s3.port.iceberg=0 -s3.port.lance=0 \
  -master.telemetry=false -master.volumeSizeLimitMB=64 -volume.max=20 -volume.preStopSeconds=0 \
  </dev/null >>"$LOG" 2>&1 &
PID=$!
disown "$PID" # no "Killed" job notice if fail() below has to kill it
echo "$PID" >"$PIDFILE"

fail() {
  echo "s3-start: $1; last log lines of $LOG:" >&2
  tail -n 40 "$LOG" >&2
  "$HERE/s3-stop.sh" "$DIR" >/dev/null || true
  rm -f "$PIDFILE"
  exit 1
}

PROBE="$DIR/.probe"
echo ready >"$PROBE"
DEADLINE=$((SECONDS + ${S3_START_TIMEOUT:-60}))
stage=bucket
while ((SECONDS < DEADLINE)); do
  alive "$PID" || fail "SeaweedFS (pid $PID) exited during startup"
  if [[ $stage == bucket ]]; then
    # 200 when created; 409 BucketAlreadyExists/OwnedByYou on a restart over an old DIR.
    case "$(s3 PUT "/$BUCKET" "" --max-time 10)" in
      200 | 409) stage=object ;;
      *) sleep 0.25 ;;
    esac
  fi
  if [[ $stage == object ]]; then
    # The first object write blocks until the filer's lock ring is up (about 10 s after start).
    left=$((DEADLINE - SECONDS))
    if [[ "$(s3 PUT "/$BUCKET/.icecommit-probe" "$PROBE" --max-time $((left > 1 ? left : 1)))" == 200 ]]; then
      s3 DELETE "/$BUCKET/.icecommit-probe" "" --max-time 10 >/dev/null
      echo "s3-start: SeaweedFS pid $PID at $ENDPOINT, bucket $BUCKET (state in $DIR)"
      exit 0
    fi
    sleep 0.25
  fi
done
fail "no signed PUT to $ENDPOINT/$BUCKET succeeded within ${S3_START_TIMEOUT:-60} s"
