#!/usr/bin/env bash
# sweep --hosts: wall time of a 9-config sweep on 3 hosts (systemd in
# nspawn containers, llm-sim loading for 8 s) against the same sweep on 1
# host, in the same run; prints the ratio (target: at most 0.40). Needs
# systemd-nspawn, GNU parallel and root, like the container tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -q --workspace
cargo test -q -p sweepkit-tests --test sweep_fleet -- --ignored --nocapture \
  bench_nine_configs_on_three_hosts_against_one 2>&1 | grep -E '^(bench|fleet):|panicked|FAILED'
