#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The alerting rules through Prometheus's own checker: `check.sh ROOT rules` runs promtool check
# rules on conf/icecommitd-alerts.yml (syntax, PromQL, lint), `check.sh ROOT test` runs its unit
# test tests/promtool/alerts-test.yml. promtool comes from Debian's prometheus package
# (tests/install-deps.sh); without it the test fails rather than skips, so that a run that did
# not check the rules never counts as passed.
set -uo pipefail
cd "$1" || exit 1
if ! command -v promtool >/dev/null; then
    echo "promtool not found: install Debian's prometheus package (tests/install-deps.sh)" >&2
    exit 1
fi
case "$2" in
rules) exec promtool check rules conf/icecommitd-alerts.yml ;;
test) exec promtool test rules tests/promtool/alerts-test.yml ;;
*) echo "usage: check.sh ROOT rules|test" >&2; exit 2 ;;
esac
