#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the SeaweedFS binary (`weed`) that tests/peers/s3-start.sh runs as the S3 peer of the
# integration tests, once, into a cache keyed by its Go pseudo-version:
#   tests/peers/weed-build.sh           build if missing (about 16 min and ~475 MB of Go modules
#                                       on 2 cores), else do nothing
#   tests/peers/weed-build.sh --path    only print the binary's path
# Why SeaweedFS: of the S3 servers installable without Docker it was the only one measured to
# verify SigV4 strictly (signature and x-amz-content-sha256 payload hash) *and* to make
# conditional creates (If-None-Match: *) atomic under concurrent writers, which the daemon's
# commit protocol relies on (s3s-fs lets several racing creators win; moto and s3rver accept bad
# signatures by default); measured when the test rig was chosen (docs/design.md section 6.3 says
# why the bucket catalog needs atomic conditional creates).
# `go install ...@version` does not work (its go.mod has a replace directive), so the module is
# downloaded and built inside the read-only module-cache copy with -o.
# The build writes to a .tmp file and renames it, so a killed build never leaves a half binary.
set -euo pipefail

WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/icecommit/peers"
BIN="$CACHE/weed-$WEED_VERSION"

if [[ "${1:-}" == "--path" ]]; then
  echo "$BIN"
  exit 0
fi
if [[ $# -ne 0 ]]; then
  echo "usage: $0 [--path]" >&2
  exit 2
fi
[[ -x "$BIN" ]] && exit 0

export PATH="/usr/local/go/bin:$PATH"
if ! command -v go >/dev/null; then
  echo "weed-build: Go (>= 1.26.6, expected at /usr/local/go/bin/go) is needed to build SeaweedFS" >&2
  exit 1
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.weed-build.lock"
flock 9 # serialise concurrent builds; re-check under the lock
[[ -x "$BIN" ]] && exit 0

echo "weed-build: building SeaweedFS $WEED_VERSION into $BIN (about 16 min at -p=1)" >&2
SRC="$(go mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')"
rm -f "$BIN.tmp"
(cd "$SRC" && GOFLAGS="-buildvcs=false -p=1" go build -o "$BIN.tmp" ./weed)
mv "$BIN.tmp" "$BIN"
echo "weed-build: built $BIN" >&2
