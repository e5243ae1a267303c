#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs inside the throwaway container tests/package/run.sh boots (systemd as PID 1 on an overlay
# of the host, loopback only), as the one unit of its boot: installs the package with dpkg, which
# starts icecommitd.service as shipped (the installed binary, the installed example config, the
# hardened unit, a dynamic user, the default warehouse in its StateDirectory, port 8080 on the
# container's own loopback); checks /readyz and a commit by the repository's example writers;
# then purges the package. Each check prints "ok NAME" or "FAIL NAME"; the results go to
# /pkgtest/results, the journal to /pkgtest/journal.txt.
#   in-container.sh REPO
set -uo pipefail
repo=$1
io=/pkgtest
py=$repo/.venv/bin/python
url=http://127.0.0.1:8080
exec >"$io/in-container.log" 2>&1

check() {  # NAME COMMAND...: one result line per check
    local name=$1; shift
    if "$@"; then echo "ok $name" >>"$io/results"; else echo "FAIL $name" >>"$io/results"; fi
}

ready() {
    for _ in $(seq 300); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz")" = 200 ] && return 0
        sleep 0.1
    done
    return 1
}

installed_files() {  # the package's files where the unit and the docs say they are
    local f
    for f in /usr/bin/icecommitd /lib/systemd/system/icecommitd.service \
            /etc/icecommit/icecommitd.conf /usr/share/doc/icecommit/operations.md \
            /usr/share/doc/icecommit/examples/icecommitd.conf /usr/share/man/man8/icecommitd.8.gz; do
        [ -f "$f" ] || { echo "missing $f"; return 1; }
    done
    # Every doc of the repository, uncompressed (Documentation= names operations.md).
    for f in "$repo"/docs/*.md "$repo"/README.md; do
        [ -f "/usr/share/doc/icecommit/${f##*/}" ] || { echo "missing doc ${f##*/}"; return 1; }
    done
    cmp -s "$repo/conf/icecommitd.conf" /etc/icecommit/icecommitd.conf || return 1
    grep -q '^Documentation=file:///usr/share/doc/icecommit/operations.md' \
        /lib/systemd/system/icecommitd.service
}

running_as_shipped() {  # the unit's process is the installed binary, as a dynamic user
    local pid exe user
    systemctl is-active -q icecommitd || return 1
    pid=$(systemctl show -P MainPID icecommitd)
    exe=$(readlink "/proc/$pid/exe")
    user=$(stat -c %U "/proc/$pid")
    echo "icecommitd pid=$pid exe=$exe user=$user"
    [ "$exe" = /usr/bin/icecommitd ] && [ "$user" != root ] &&
        [ "$(systemctl show -P DynamicUser icecommitd)" = yes ] &&
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- '--config /etc/icecommit/icecommitd.conf'
}

commit_by_examples() {  # the quick start's writers: Python describes a file, curl commits another
    local file
    PYTHONPATH=$repo/examples/python "$py" "$repo/examples/python/write_without_iceberg.py" \
        --url "$url" --files 2 --rows 4 --start-id 0 --key pkg-1 >"$io/receipt-1.txt" || return 1
    file=$(PYTHONPATH=$repo/examples/python "$py" "$repo/examples/python/write_without_iceberg.py" \
        --url "$url" --files 1 --rows 3 --start-id 100 --day 2026-12-02 --write-only |
        "$py" -c 'import json,sys; print(json.load(sys.stdin)[0]["file-path"])') || return 1
    "$repo/examples/curl/commit.sh" "$url" demo events "$file" 3 2026-12-02 pkg-2 \
        >"$io/receipt-2.json" || return 1
    "$py" - "$io/receipt-2.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "committed", r
m = r["manifests"][0]
# The first commit assigned row ids 0..7 (two files of 4 rows): this one continues at 8.
assert (m["first-row-id"], m["last-row-id"]) == (8, 10), m
print("committed snapshot", r["snapshot-id"], "sequence", r["sequence-number"])
PY
}

# The table is in the unit's StateDirectory, written by the dynamic user with UMask=0077.
warehouse_private() {
    local meta=/var/lib/icecommit/warehouse/demo/events/metadata
    ls -l "$meta"
    [ -f "$meta/v3.metadata.json" ] &&
        [ "$(stat -c %a "$meta/v3.metadata.json")" = 600 ] &&
        [ "$(stat -c %U "$meta/v3.metadata.json")" != root ]
}

online_exposure() {  # the running unit rated by the manager itself, at most 1.5
    systemd-analyze security icecommitd.service | tail -1
    systemd-analyze security --threshold=15 icecommitd.service >/dev/null
}

reload_keeps_serving() {
    systemctl reload icecommitd && sleep 0.5 && systemctl is-active -q icecommitd && ready
}

no_denied_calls() {  # no system call refused by the filter, no restart
    ! journalctl -b -u icecommitd --no-pager | grep -Ei 'operation not permitted|seccomp|EPERM' &&
        [ "$(systemctl show -P NRestarts icecommitd)" = 0 ]
}

# IPAddressDeny= is enforced (cgroup BPF): else the manager says it proceeds without.
ip_firewall() {
    [ "$(systemctl show -P IPAddressDeny icecommitd)" != "" ] &&
        ! journalctl -b --no-pager | grep -i 'firewalling not supported'
}

purged() {
    systemctl is-active -q icecommitd && return 1
    [ ! -e /usr/bin/icecommitd ] && [ ! -e /lib/systemd/system/icecommitd.service ] &&
        [ ! -e /etc/icecommit ] && ! dpkg -s icecommit >/dev/null 2>&1
}

: >"$io/results"
check install dpkg -i "$io/icecommit.deb"
check installed-files installed_files
check readyz ready
check running-as-shipped running_as_shipped
check commit-by-examples commit_by_examples
check warehouse-private warehouse_private
check online-exposure online_exposure
check reload reload_keeps_serving
check no-denied-calls no_denied_calls
check ip-firewall ip_firewall
journalctl -b -a --no-pager >"$io/journal.txt" 2>&1
check purge dpkg --purge icecommit
check purged purged
echo done >>"$io/results"
