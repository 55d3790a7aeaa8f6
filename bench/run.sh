#!/usr/bin/env bash
# `make bench`: every benchmark, each measuring sweepkit and a peer in the same
# run and printing ratios. Uses the release binaries built by `make release`.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWEEPKIT_BIN="${SWEEPKIT_BIN:-$PWD/target/release}"
status=0
for b in bench/wait-ready.sh bench/ssh.sh bench/loadgen.sh bench/scrape.sh bench/trace.sh bench/svc-swap.sh bench/real-servers.sh bench/fleet.sh bench/slots.sh bench/slurm.sh bench/adaptive.sh bench/schedule.sh bench/compare.sh; do
  if [[ -x $b ]]; then
    echo "== $b" >&2
    bash "$b" || { echo "bench: $b failed" >&2; status=1; }
  else
    echo "bench: $b not present, skipped" >&2
  fi
done
exit "$status"
