#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# meson install step (conf/meson.build): install the example config as SOURCE -> TARGET unless
# TARGET exists, so an operator's config is never overwritten. Honours DESTDIR.
set -eu
source=$1
target=${DESTDIR:-}$2
if [ -e "$target" ]; then
    echo "Keeping existing $target (the example is in the doc directory's examples/)"
    exit 0
fi
install -d -m 0755 "$(dirname "$target")"
install -m 0644 "$source" "$target"
echo "Installing $source to $target"
