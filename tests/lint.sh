#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# House rules a compiler does not check (docs/design.md section 11):
#   - no banned C string functions anywhere in daemon/ or tests/;
#   - module includes only point down the dependency table, read from daemon/README.md; every
#     folder of daemon/ has its row there and every row its folder;
#   - only main.c includes daemon.h;
#   - inside a module, includes go one way: no loop among its files' headers;
#   - every non-static function in daemon/<module>/<file>.c is named after its file (STYLE §2);
#   - every .c/.h of daemon/ and tests/ is as clang-format 14 formats it (.clang-format), and no
#     line is over 100 columns (what clang-format cannot break, such as a long #include);
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
# Inside a module, calls go one way (STYLE section 1): X includes Y's header (from X.c or X.h)
# means Y's files never include X's header, directly or through others of the module. A file
# and its header are one node (X-internal.h belongs to X); a header without a .c (a struct's
# owner, such as commit/batch.h) is a node like any other. The module's face, <module>.h and
# what belongs to it, is the interface its files implement: including it draws no edge.
if ! hits=$(python3 - <<'PY'
import glob, os, re, sys

bad = False
for module in sorted(d for d in glob.glob("daemon/*/") if os.path.isdir(d)):
    name = os.path.basename(module.rstrip("/"))
    edges = {}
    for path in glob.glob(module + "*.[ch]"):
        stem = os.path.basename(path)[:-2].removesuffix("-internal")
        for inc in re.findall(r'^#include "' + name + r'/([\w-]+)\.h"', open(path, encoding="utf-8").read(), re.M):
            inc = inc.removesuffix("-internal")
            if inc != stem and inc != name:
                edges.setdefault(stem, set()).add(inc)
    state, stack = {}, []

    def visit(n):
        global bad
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                loop = stack[stack.index(m):] + [m]
                print(f"daemon/{name}/: includes go round: " + " -> ".join(loop))
                bad = True
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(edges):
        if n not in state:
            visit(n)
sys.exit(1 if bad else 0)
PY
); then
    echo "includes inside a module that go both ways:"; echo "$hits"; status=1
fi
# Names say their owner (STYLE section 2): a function daemon/<module>/<file>.c exports is named
# <file>_* (manifest_list.c: manifest_list_writer_new), <module>_* (http/reply.c:
# http_reply_error, which also covers <module>_<file>_*), or <file> itself. daemon.c and main.c
# sit above the modules and are not checked. Exceptions, each with its reason; a trailing '*'
# matches a prefix.
prefix_exceptions='
util/siphash.c siphash128            the algorithm is called SipHash-2-4-128
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
# The format (STYLE section 9): .clang-format, for clang-format 14 (what Debian 12 ships and
# tests/install-deps.sh installs; other versions format some constructs differently).
# CLANG_FORMAT names another binary, such as clang-format-14.
sources=$(find daemon tests -name '*.[ch]' -not -path 'tests/fuzz/corpus/*' | sort)
clang_format=${CLANG_FORMAT:-clang-format}
if ! command -v "$clang_format" >/dev/null; then
    echo "$clang_format not found: the format is not checked (tests/install-deps.sh installs it)"
    status=1
elif ! "$clang_format" --version | grep -q 'version 14\.'; then
    echo "$("$clang_format" --version): the format is defined by clang-format 14, not checked" \
         "(set CLANG_FORMAT to a clang-format 14)"; status=1
elif ! hits=$("$clang_format" --dry-run --Werror $sources 2>&1); then
    echo "not formatted as .clang-format says (fix: $clang_format -i <file>):"
    echo "$hits" | sed -n 's/^\([^:]*:[0-9]*\):[0-9]*: error:.*/\1/p' |
        sort -u -t: -k1,1 -k2,2n | head -50
    status=1
fi
# .editorconfig's limit, also on what clang-format leaves long (an #include, a word longer than
# a comment line, a region between clang-format off and on): split a string literal by hand
# into concatenated pieces. Columns are characters (C.UTF-8), as clang-format counts them.
if hits=$(LC_ALL=C.UTF-8 grep -nE '^.{101}' $sources | cut -d: -f1,2); then
    echo "lines over 100 columns:"; echo "$hits"; status=1
fi
# The API document must stay machine-readable (a stray quote once made it unparsable).
if ! python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' proto/openapi.yaml 2>/tmp/lint-openapi.$$; then
    echo "proto/openapi.yaml does not parse as YAML:"; cat /tmp/lint-openapi.$$; status=1
fi
rm -f /tmp/lint-openapi.$$
[ $status -eq 0 ] && echo "lint: ok"
exit $status
