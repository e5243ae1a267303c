#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installation and packaging checks of tests/run-all (issue 13 item 7), as root on Debian 12:
#   meson-install      meson install (DESTDIR) puts the binary, unit, config, docs and man page
#                      where the unit says, and a second install keeps an edited config
#   unit-exposure      systemd-analyze security --offline=true rates that unit at most 1.5
#   package-build      dpkg-buildpackage -us -uc -b, in a copy of the tree (tracked and new files)
#   lintian            no error or warning (overrides, if any, in debian/*.lintian-overrides)
#   package-exposure   the unit inside the .deb, rated as above
#   container:NAME     tests/package/in-container.sh's checks: the .deb installed with dpkg in a
#                      throwaway system (systemd booted by systemd-nspawn on an overlay of this
#                      machine's root, so the machine itself is never changed, loopback only),
#                      the unit started by the package as shipped, /readyz, a commit, a reload,
#                      then purged
# Prints "ok NAME" / "FAIL NAME" per check and writes "PASSED FAILED" to RESULTS/package.counts.
#   tests/package/run.sh RESULTS_DIR [MESON_BUILD_DIR (default build-release)]
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
results=$1
build=${2:-build-release}
work=$root/build-tests/package
passed=0 failed=0
rm -rf "$work"
mkdir -p "$work" "$results"

result() {  # NAME STATUS
    if [ "$2" -eq 0 ]; then echo "ok $1"; passed=$((passed + 1)); else echo "FAIL $1"; failed=$((failed + 1)); fi
}

exposure() {  # UNIT_FILE: prints the overall exposure; fails above 1.5
    systemd-analyze security --offline=true "$1" 2>&1 | tail -1
    systemd-analyze security --offline=true --threshold=15 "$1" >/dev/null 2>&1
}

unit_value() {  # UNIT_FILE KEY: the first word of KEY's value
    sed -n "s#^$2=\\([^ ]*\\).*#\\1#p" "$1" | head -1
}

meson_install() {
    local dest=$work/destdir unit doc exe config
    meson install -C "$build" --no-rebuild --destdir "$dest" >"$work/meson-install.log" 2>&1 || return 1
    unit=$(find "$dest" -name icecommitd.service -path '*/systemd/system/*')
    [ -n "$unit" ] || { echo "no unit installed"; return 1; }
    doc=$(unit_value "$unit" Documentation) doc=${doc#file://}
    exe=$(unit_value "$unit" ExecStart)
    config=$(sed -n 's#^ExecStart=.* --config \([^ ]*\).*#\1#p' "$unit")
    for f in "$doc" "$exe" "$config" "${doc%/*}/examples/icecommitd.conf"; do
        [ -f "$dest$f" ] || { echo "missing $f (from the unit $unit)"; return 1; }
    done
    for f in docs/*.md README.md; do
        [ -f "$dest${doc%/*}/${f##*/}" ] || { echo "missing doc $f"; return 1; }
    done
    # The alerts file is optional in the tree; when it is there it is installed.
    if [ -f conf/icecommitd-alerts.yml ]; then
        [ -f "$dest${doc%/*}/examples/icecommitd-alerts.yml" ] || { echo "missing alerts"; return 1; }
    fi
    cp "$unit" "$work/meson-icecommitd.service"
    echo '# edited by the operator' >>"$dest$config"
    meson install -C "$build" --no-rebuild --destdir "$dest" >>"$work/meson-install.log" 2>&1 &&
        [ "$(tail -1 "$dest$config")" = '# edited by the operator' ]
}

package_build() {
    local src=$work/src
    mkdir -p "$src"
    git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src" || return 1
    # nocheck: the release build above already ran the same unit and fuzz suites.
    (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b) \
        >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; return 1; }
    ls "$work"/*.deb
}

lintian_clean() {
    lintian --fail-on error,warning --display-info "$work"/icecommit_*.changes 2>&1 |
        grep -v 'running with root privileges' | tee "$work/lintian.log"
    return "${PIPESTATUS[0]}"
}

package_exposure() {
    dpkg-deb -x "$work"/icecommit_*_"$(dpkg --print-architecture)".deb "$work/deb" &&
        exposure "$work/deb/lib/systemd/system/icecommitd.service"
}

# The container: an overlay (this root read-only below, a tmpfs above) in a private mount
# namespace, booted by systemd-nspawn with only its own loopback; its one unit runs
# in-container.sh and exits the container. The repository (and its venv, for the example
# writers) is bound in read-only.
container() {
    local io=$work/io machine=icecommit-pkgtest-$$ venv
    mkdir -p "$io"
    cp "$work"/icecommit_*_"$(dpkg --print-architecture)".deb "$io/icecommit.deb"
    cat >"$work/pkgtest.service" <<EOF
[Unit]
Description=icecommit package test (tests/package/run.sh)
SuccessAction=exit
FailureAction=exit
[Service]
Type=oneshot
TimeoutStartSec=600
ExecStart=$root/tests/package/in-container.sh $root
EOF
    venv=$(realpath .venv)
    timeout -k 30 900 unshare -m --propagation private bash -c '
        set -e
        work=$1 machine=$2 root=$3 venv=$4 io=$5
        mkdir -p "$work/overlay"
        mount -t tmpfs tmpfs "$work/overlay"
        mkdir "$work/overlay/upper" "$work/overlay/work" "$work/overlay/merged"
        mount -t overlay overlay -o "lowerdir=/,upperdir=$work/overlay/upper,workdir=$work/overlay/work" \
            "$work/overlay/merged"
        cp "$work/pkgtest.service" "$work/overlay/merged/etc/systemd/system/pkgtest.service"
        # A policy-rc.d that exits 101, as container images ship, stops dpkg starting the unit.
        rm -f "$work/overlay/merged/usr/sbin/policy-rc.d"
        binds=(--bind="$io:/pkgtest" --bind-ro="$root")
        case $venv in "$root"/*) ;; *) binds+=(--bind-ro="$venv") ;; esac
        systemd-nspawn -q -D "$work/overlay/merged" --machine="$machine" --register=no \
            --keep-unit --private-network --link-journal=no "${binds[@]}" \
            --boot systemd.unit=pkgtest.service
    ' container "$work" "$machine" "$root" "$venv" "$io" >"$work/console.log" 2>&1
    # nspawn leaves its propagation directory behind when /run is not a tmpfs.
    rm -rf "/run/systemd/nspawn/propagate/$machine"
    [ -f "$io/results" ] || { tail -40 "$work/console.log"; return 1; }
}

meson_install; result meson-install $?
exposure "$work/meson-icecommitd.service"; result unit-exposure $?
if package_build; then
    result package-build 0
    lintian_clean; result lintian $?
    package_exposure; result package-exposure $?
    container; status=$?
    if [ -f "$work/io/results" ]; then
        while read -r outcome name; do
            [ "$outcome" = done ] && continue
            [ "$outcome" = ok ]; result "container:$name" $?
        done <"$work/io/results"
        grep -qx done "$work/io/results" || result container-finished 1
    else
        result container "$status"
    fi
    if [ "$failed" -gt 0 ]; then
        tail -60 "$work/io/in-container.log" 2>/dev/null
        grep icecommitd "$work/io/journal.txt" 2>/dev/null | tail -40
    fi
else
    result package-build 1
fi
echo "$passed $failed" >"$results/package.counts"
echo "package: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
