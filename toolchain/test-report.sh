#!/usr/bin/env bash
# After make test: how long it took, and its ten slowest tests (from XCTest's log), so a
# test that grows slow is seen before CI's 60 minutes are.
#   toolchain/test-report.sh LOG STARTED   (STARTED: `date +%s` before the build)
set -euo pipefail
log=${1:?usage: toolchain/test-report.sh LOG STARTED}
started=${2:?usage: toolchain/test-report.sh LOG STARTED}
seconds=$(( $(date +%s) - started ))
echo "== make test: $(( seconds / 60 )) min $(( seconds % 60 )) s in all; the ten slowest tests (s):"
sed -nE "s/^Test Case '([^']+)' (passed|failed) \(([0-9.]+) seconds\)$/\3 \1/p" "$log" | sort -rn | head -10 | \
    awk '{ printf "  %7.1f  %s\n", $1, $2 }'
