# shellcheck shell=bash
# slurm: `sweep --slurm`, each config of the grid one Slurm job. Sourced by
# sweep.sh, whose settings and functions (table, say) it uses. See sweep(1),
# SLURM, and sweep-plan(1) for the decisions.
# shellcheck disable=SC2154 # sweep.sh's settings (sweep-plan options)
#
# Slurm is the job engine and sweep-plan slurm its typed driver: it writes
# the batch script, submits the grid as one array, reads each job's end
# from scontrol, appends the job's records to the results file, submits
# again what a node failure or an outside cancel took, and on Ctrl-C
# cancels every job of the sweep (scancel) and keeps what they measured.
# With --adaptive it submits each config the search decides (scoring the
# file with summarize, as sweep_loop does); with --schedule it derives the
# schedule after them and runs it as one more job. This file only runs it
# and prints the table.

slurm_main() {
  local rc=0 pid
  ((dry_run == 0)) || exec "$SWEEP_PLAN" slurm --tools "$SVC_SWAP" "$WAIT_READY" "$LOADGEN" -- "${argv[@]}"
  mkdir -p "$(dirname "$results")"
  touch "$results"
  # A terminal's Ctrl-C reaches sweep-plan too; a signal to this script
  # alone is forwarded. Either way sweep-plan cancels the jobs, collects
  # what they wrote and ends 130.
  "$SWEEP_PLAN" slurm --tools "$SVC_SWAP" "$WAIT_READY" "$LOADGEN" --summarize "$SUMMARIZE" -- "${argv[@]}" &
  pid=$!
  trap 'kill -INT "$pid" 2>/dev/null || true' INT TERM
  while kill -0 "$pid" 2>/dev/null; do wait "$pid" || true; done
  wait "$pid" || rc=$? # bash keeps an ended job's status for a second wait
  trap '' INT TERM
  table
  exit "$rc"
}
