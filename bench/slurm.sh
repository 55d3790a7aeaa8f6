#!/usr/bin/env bash
# sweep --slurm: wall time of a 6-config grid on the two-node test cluster
# (testkit::slurm: munged, slurmctld and two slurmd on this machine, 4 fake
# GPUs each) against the same grid with one node drained, in the same run;
# prints the ratio (target: at most 0.55, issue #34). Each config asks for
# a whole node (--gres gpu:4), so two nodes take three rounds where one
# takes six, and the bound is 0.50 plus what the sweep spends once.
#
# Per config, llm-sim loads for 8 s, then two levels (c=1 and c=4) of 2 s
# after one warm-up request: about half the load time, as bench/fleet.sh
# argues (a token benchmark would make fixed costs weigh as much as a
# config). Beside it, in the same run, the per-config overhead from
# hand-out to server start of a one-host SSH fleet (`sweep --hosts` over
# a real sshd on 127.0.0.1, the server a process spec) with the same
# work, read from the records' time stamps like Slurm's. Needs root,
# Slurm, munge, sshd and GNU parallel (make deps).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=slurm
# shellcheck source=bench/lib.sh
. bench/lib.sh
run_bench_test sweep_slurm_bench bench_six_configs_on_two_nodes_against_one 'bench|slurm'
