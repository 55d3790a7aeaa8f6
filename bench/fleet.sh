#!/usr/bin/env bash
# sweep --hosts: wall time of a 9-config sweep on 3 hosts (systemd in
# nspawn containers, llm-sim loading for 8 s) against the same sweep on 1
# host, in the same run; prints the ratio (target: at most 0.40). Needs
# systemd-nspawn, GNU parallel and root, like the container tests.
#
# Each config is benchmarked at two levels (c=1 and c=4) for 2 s each
# after one warm-up request: about half the load time, as on the reference
# campaign (a ~100 s load, then five levels taking a minute or more). A
# token benchmark (2 requests of 8 tokens) against an 8 s load would make
# the final restore, one more load on every host that no pool can split,
# weigh as much as a config: the ratio would then measure the restore, not
# the fleet. The single-host baseline is plain `sweep` with the same
# per-config work.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=fleet
# shellcheck source=bench/lib.sh
. bench/lib.sh
run_bench_test sweep_fleet bench_nine_configs_on_three_hosts_against_one 'bench|fleet'
