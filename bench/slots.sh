#!/usr/bin/env bash
# sweep with GPU slots: wall time of a 6-config sweep (llm-sim loading for
# 8 s, each config benchmarked for about 4 s) on two and three slots of
# this machine against the same sweep on one slot, in the same run; prints
# `slots: 2 slots R2, 3 slots R3 of one slot's wall` (to each run's last
# record; targets R2 <= 0.60, R3 <= 0.48: a load overlaps the other slots'
# benches, which take turns), then the whole wall with the final restores
# and whether the picks and per-config numbers agree. Needs GNU parallel.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=slots
# shellcheck source=bench/lib.sh
. bench/lib.sh
run_bench_test sweep_slots bench_six_configs_on_two_and_three_slots_against_one 'bench|slots'
