#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
#
# Fetches Apache Iceberg's Spark runtime (one shaded jar, ~46 MB) that the Spark reader test
# (tests/integration/test_spark_reader.py) hands to pyspark with spark.jars, once, through Maven
# (checksums checked) into a cache outside git, keyed by its version:
#   tests/peers/spark-fetch.sh           fetch if missing, else do nothing
#   tests/peers/spark-fetch.sh --path    only print the jar's path
# Spark never downloads anything itself at test time (no spark.jars.packages): the test fails if
# this jar is missing. pyspark itself comes from PyPI (tests/install-deps.sh, pinned there); its
# Scala 2.13 and Spark 4.0 must match the runtime's name.
# The copy goes to a temporary directory and is renamed, so a killed fetch never leaves half a jar.
set -euo pipefail

ARTIFACT=iceberg-spark-runtime-4.0_2.13
VERSION=1.11.0
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/icecommit/peers"
JAR="$CACHE/$ARTIFACT-$VERSION.jar"

if [[ "${1:-}" == "--path" ]]; then
  echo "$JAR"
  exit 0
fi
if [[ $# -ne 0 ]]; then
  echo "usage: $0 [--path]" >&2
  exit 2
fi
[[ -f "$JAR" ]] && exit 0

mkdir -p "$CACHE"
exec 9>"$CACHE/.spark-fetch.lock"
flock 9
[[ -f "$JAR" ]] && exit 0
tmp="$(mktemp -d "$CACHE/.spark-fetch.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
# The plugin's version is pinned: Maven 3.8's default maven-dependency-plugin is older.
if ! mvn -B -q -C org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy \
  -Dartifact="org.apache.iceberg:$ARTIFACT:$VERSION" -DoutputDirectory="$tmp" \
  >"$tmp/fetch.log" 2>&1; then
  echo "spark-fetch: mvn could not fetch org.apache.iceberg:$ARTIFACT:$VERSION:" >&2
  cat "$tmp/fetch.log" >&2
  exit 1
fi
mv "$tmp/$ARTIFACT-$VERSION.jar" "$JAR"
