#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# House rules a compiler does not check (STYLE.md sections 1 and 8):
#   - no banned C string functions anywhere in daemon/ or tests/;
#   - module includes only point down the dependency table;
#   - only main.c includes daemon.h;
#   - every non-static function in daemon/<module>/<file>.c is named after its file (STYLE §2);
#   - proto/openapi.yaml parses as YAML (python3-yaml).
set -uo pipefail
cd "${1:-$(dirname "$0")/..}"
status=0

banned='\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|atoi|atol|sscanf|gets|alloca)[[:space:]]*\('
if hits=$(grep -rnE "$banned" --include='*.c' --include='*.h' daemon tests); then
    echo "banned functions:"; echo "$hits"; status=1
fi

# module -> project modules it may include (util/, config/ and metrics/ are open to all but util)
declare -A allowed=(
    [util]="util"
    [config]="util config"
    [metrics]="util metrics"
    [net]="util net"
    [storage]="util config metrics net storage"
    [parquet]="util parquet"
    [iceberg]="util config metrics iceberg"
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
# Names say their owner (STYLE section 2): a function daemon/<module>/<file>.c exports is named
# <file>_* (manifest_list.c: manifest_list_writer_new), <module>_* (http/reply.c:
# http_reply_error, which also covers <module>_<file>_*), or <file> itself. daemon.c and main.c
# sit above the modules and are not checked. Exceptions, each with its reason; a trailing '*'
# matches a prefix. The "pending" ones are iceberg/ names whose files issue 11's Avro move
# (item 5) rewrites: rename them there, then drop the line.
prefix_exceptions='
util/siphash.c siphash128            the algorithm is called SipHash-2-4-128
iceberg/ocf_read.c ocf_reader_*      pending: moves to daemon/avro/
iceberg/ocf_write.c ocf_writer_*     pending: moves to daemon/avro/
iceberg/manifest.c staged_manifest_* pending: iceberg/ is being reorganised
iceberg/table.c json_*               pending: iceberg/ is being reorganised (a dependency prefix, STYLE section 2)
iceberg/table_schema.c schema_field_ids_* pending: iceberg/ is being reorganised
iceberg/table_schema.c metadata_*    pending: iceberg/ is being reorganised
iceberg/table_schema.c partition_spec_fresh pending: iceberg/ is being reorganised
iceberg/table_schema.c sort_order_validate pending: iceberg/ is being reorganised
iceberg/table_update.c table_metadata_create pending: iceberg/ is being reorganised
util/utf8.c ascii_is_printable       pending: called from iceberg/manifest.c (rename with it)
'
if ! hits=$(PREFIX_EXCEPTIONS="$prefix_exceptions" python3 - <<'PY'
import glob, os, re, sys

exceptions = {}
for line in os.environ["PREFIX_EXCEPTIONS"].strip().splitlines():
    path, name = line.split()[:2]
    exceptions.setdefault("daemon/" + path, []).append(name)

def excepted(path, name):
    for e in exceptions.get(path, []):
        if name == e or (e.endswith("*") and name.startswith(e[:-1])):
            return True
    return False

def definitions(path):
    """(line, name) of each function definition at column 0 that is not static."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        stmt, j = lines[i], i
        if re.match(r"[A-Za-z_]", stmt) and not re.match(r"(typedef|struct\s+\w+\s*\{|enum|union|extern)\b", stmt):
            while not re.search(r"[;{]\s*$", stmt) and j + 1 < len(lines):
                j += 1
                stmt += "\n" + lines[j]
            head = re.sub(r"^(_\w+_(\([^)]*\))?\s+)+", "", stmt)  # attributes: _printf_(2, 3) static ...
            m = re.search(r"(\w+)\s*\(", head)
            if m and re.search(r"\)\s*\{\s*$", stmt) and not re.match(r"static\b", head):
                yield i + 1, m.group(1)
        i = j + 1

bad = False
for path in sorted(glob.glob("daemon/*/*.c")):
    module, base = path.split("/")[1], os.path.basename(path)[:-2]
    for lineno, name in definitions(path):
        if name == base or name.startswith((base + "_", module + "_")) or excepted(path, name):
            continue
        print(f"{path}:{lineno}: {name}() is exported but named after neither {base}_ nor {module}_")
        bad = True
sys.exit(1 if bad else 0)
PY
); then
    echo "exported names without their file's prefix:"; echo "$hits"; status=1
fi
# The API document must stay machine-readable (a stray quote once made it unparsable).
if ! python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' proto/openapi.yaml 2>/tmp/lint-openapi.$$; then
    echo "proto/openapi.yaml does not parse as YAML:"; cat /tmp/lint-openapi.$$; status=1
fi
rm -f /tmp/lint-openapi.$$
[ $status -eq 0 ] && echo "lint: ok"
exit $status
