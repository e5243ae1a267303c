#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# House rules a compiler does not check (STYLE.md sections 1 and 8):
#   - no banned C string functions anywhere in daemon/ or tests/;
#   - module includes only point down the dependency table;
#   - only main.c includes daemon.h;
#   - proto/openapi.yaml parses as YAML (python3-yaml).
set -uo pipefail
cd "${1:-$(dirname "$0")/..}"
status=0

banned='\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|atoi|atol|sscanf|gets|alloca)[[:space:]]*\('
if hits=$(grep -rnE "$banned" --include='*.c' --include='*.h' daemon tests); then
    echo "banned functions:"; echo "$hits"; status=1
fi

# module -> project modules it may include (util/, config/ and metrics/ are open to all but util;
# avro/, the container format below iceberg/, uses util/ only)
declare -A allowed=(
    [util]="util"
    [config]="util config"
    [metrics]="util metrics"
    [net]="util net"
    [storage]="util config metrics net storage"
    [parquet]="util parquet"
    [avro]="util avro"
    [iceberg]="util config metrics avro iceberg"
    [http]="util config metrics http"
    [catalog]="util config metrics net storage iceberg catalog"
    [auth]="util config metrics http auth"
    [writer]="util config metrics http auth iceberg storage writer"
    [commit]="util config metrics http auth iceberg storage writer catalog parquet commit"
    [tables]="util config metrics http auth iceberg storage catalog writer tables"
    [audit]="util config metrics http auth iceberg storage writer catalog audit"
)
# module -> system headers it must never include
declare -A forbidden=(
    [util]="uv.h curl/curl.h h2o.h jansson.h avro.h"
    [config]="uv.h curl/curl.h h2o.h"
    [avro]="uv.h curl/curl.h h2o.h"
    [iceberg]="uv.h curl/curl.h h2o.h"
    [net]="h2o.h jansson.h avro.h"
    [storage]="curl/curl.h h2o.h avro.h"
    [parquet]="uv.h curl/curl.h h2o.h jansson.h avro.h"
    [metrics]="uv.h curl/curl.h h2o.h"
    [http]="curl/curl.h avro.h"
    [auth]="uv.h curl/curl.h avro.h jansson.h"
    [catalog]="h2o.h avro.h"
)
for dir in daemon/*/; do
    module=$(basename "$dir")
    for f in "$dir"*.c "$dir"*.h; do
        [ -e "$f" ] || continue
        while IFS= read -r inc; do
            target=${inc%%/*}
            case " ${allowed[$module]:-} " in
            *" $target "*) ;;
            *) echo "$f: includes \"$inc\": $module may not depend on $target"; status=1 ;;
            esac
        done < <(sed -n 's/^#include "\([a-z_]*\/[^"]*\)".*/\1/p' "$f")
        for h in ${forbidden[$module]:-}; do
            if grep -q "^#include <$h>" "$f"; then
                echo "$f: includes <$h>, which module $module must never use"; status=1
            fi
        done
        if grep -q '^#include "daemon.h"' "$f"; then
            echo "$f: only main.c includes daemon.h"; status=1
        fi
    done
done
# The API document must stay machine-readable (a stray quote once made it unparsable).
if ! python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' proto/openapi.yaml 2>/tmp/lint-openapi.$$; then
    echo "proto/openapi.yaml does not parse as YAML:"; cat /tmp/lint-openapi.$$; status=1
fi
rm -f /tmp/lint-openapi.$$
[ $status -eq 0 ] && echo "lint: ok"
exit $status
