#!/usr/bin/env bash
# Say how many prerequisite-gated tests (sshd, systemd-nspawn, network
# namespaces, llama-server, the real-peer cache, shellcheck) ran for real
# and how many skipped, from the log testkit's gates append to
# (tools/testkit/src/gate.rs). `make unit` prints it after the tests.
#
# Usage: gated-summary.sh [LOG]   (default: $SWEEPKIT_TEST_LOG)
# Exit status: 0 the summary was printed; 1 no log (no gated test ran);
# 2 usage.
set -euo pipefail
PROG=gated-summary
if (($# > 1)) || [[ ${1:-} == -* ]]; then
  printf '%s: error: usage: gated-summary.sh [LOG]\n' "$PROG" >&2
  exit 2
fi
log=${1:-${SWEEPKIT_TEST_LOG:-}}
if [[ -z $log || ! -s $log ]]; then
  printf '%s: error: %s: no gated test recorded anything (were the tests run with SWEEPKIT_TEST_LOG set?)\n' \
    "$PROG" "${log:-SWEEPKIT_TEST_LOG unset}" >&2
  exit 1
fi
# A test that got one prerequisite but skipped on another counts as skipped.
awk -F'\t' '
  $1 == "ran" { ran[$2] = 1 }
  $1 == "skipped" { skipped[$2] = 1; why[$2] = $3 }
  END {
    n = 0; s = 0
    for (t in ran) if (!(t in skipped)) n++
    for (t in skipped) { s++; printf "  skipped: %s (%s)\n", t, why[t] | "sort >&2" }
    close("sort >&2")
    printf "%d prerequisite-gated tests ran for real, %d skipped\n", n, s
  }' "$log"
