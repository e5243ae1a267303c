#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# House rules a compiler does not check (docs/design.md section 11):
#   - no banned C string functions anywhere in daemon/ or tests/;
#   - module includes only point down the dependency table, read from daemon/README.md; every
#     folder of daemon/ has its row there and every row its folder;
#   - only main.c includes daemon.h;
#   - proto/openapi.yaml parses as YAML (python3-yaml).
set -uo pipefail
cd "${1:-$(dirname "$0")/..}"
status=0

banned='\b(sprintf|vsprintf|strcpy|strcat|strncpy|strtok|atoi|atol|sscanf|gets|alloca)[[:space:]]*\('
if hits=$(grep -rnE "$banned" --include='*.c' --include='*.h' daemon tests); then
    echo "banned functions:"; echo "$hits"; status=1
fi

# The dependency table is daemon/README.md's module map, the one copy: each row
# "| `name/` | what it owns | may use | never includes |" gives the project modules the module's
# files may include (its own folder always; "nothing" for none; "(...)" is a note) and the system
# headers they must never include ("—" for none). The columns are found by their headings.
table=daemon/README.md
declare -A allowed=() forbidden=()
rows=$(awk -F'|' '
    function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
    !header && trim($2) == "module" {
        for (i = 2; i < NF; i++) {
            h = trim($i)
            if (h == "may use") use = i
            if (h == "never includes") never = i
        }
        header = 1
        if (!use || !never) exit
        next
    }
    header && /^\|/ {
        name = trim($2)
        if (name !~ /^`[a-z_]+\/`$/) next        # the separator, daemon.c and main.c
        gsub(/[`\/]/, "", name)
        u = trim($use); gsub(/\([^)]*\)/, "", u); gsub(/,/, " ", u)
        if (u == "nothing") u = ""
        f = trim($never); gsub(/[`,]/, " ", f); if (f == "—") f = ""
        print name "|" u "|" f
    }
    header && !/^\|/ { exit }
    END { if (!use || !never) print "ERROR|no table with columns \"module\", \"may use\" and \"never includes\"" }
' "$table")
while IFS='|' read -r name uses never; do
    [ -n "$name" ] || continue
    if [ "$name" = ERROR ]; then echo "$table: $uses"; status=1; continue; fi
    if [ -n "${allowed[$name]+set}" ]; then echo "$table: module $name has two rows"; status=1; fi
    read -ra words <<<"$uses"; allowed[$name]="$name ${words[*]}"
    read -ra words <<<"$never"; forbidden[$name]="${words[*]}"
done <<<"$rows"
if [ ${#allowed[@]} -eq 0 ]; then echo "$table: no module rows read: module includes not checked"; status=1; fi
for module in "${!allowed[@]}"; do
    [ -d "daemon/$module" ] || { echo "$table: a row names module $module, but daemon/$module/ does not exist"; status=1; }
    for dep in ${allowed[$module]}; do
        [ -n "${allowed[$dep]+set}" ] || { echo "$table: module $module may use $dep, which has no row"; status=1; }
    done
done
[ ${#allowed[@]} -eq 0 ] || for dir in daemon/*/; do
    module=$(basename "$dir")
    [ -n "${allowed[$module]+set}" ] || { echo "daemon/$module/ has no row in $table (module, may use, never includes)"; status=1; }
done
# Without its row a module's includes are not checked: the line above is the one complaint.

for dir in daemon/*/; do
    module=$(basename "$dir")
    [ -n "${allowed[$module]+set}" ] || continue
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
