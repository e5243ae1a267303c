#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# meson install steps (conf/meson.build), both honouring DESTDIR:
#   install-config.sh keep SOURCE TARGET       SOURCE -> TARGET unless TARGET exists, so an
#                                              operator's config is never overwritten
#   install-config.sh if-present SOURCE TARGET SOURCE -> TARGET if SOURCE exists (looked for at
#                                              install time, so a file added after meson setup
#                                              is installed without reconfiguring)
set -eu
mode=$1
source=$2
target=${DESTDIR:-}$3
case $mode in
keep)
    if [ -e "$target" ]; then
        echo "Keeping existing $target (the example is in the doc directory's examples/)"
        exit 0
    fi
    ;;
if-present)
    [ -e "$source" ] || exit 0
    ;;
*)
    echo "install-config.sh: unknown mode '$mode'" >&2
    exit 2
    ;;
esac
install -d -m 0755 "$(dirname "$target")"
install -m 0644 "$source" "$target"
echo "Installing $source to $target"
