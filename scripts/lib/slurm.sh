# shellcheck shell=bash
# slurm: `sweep --slurm`, each config of the grid one Slurm job. Sourced by
# sweep.sh, whose settings it uses. See sweep(1), SLURM, and sweep-plan(1)
# for the decisions.
# shellcheck disable=SC2154 # sweep.sh's settings (sweep-plan options)
#
# Slurm is the job engine and sweep-plan slurm its typed driver, which this
# script becomes: it takes the look at the spec every path takes before its
# first stop (and refuses what the run would), writes the batch script,
# submits the grid as one array, reads each job's end from scontrol,
# appends the job's records to the results file, submits again what a node
# failure or an outside cancel took, and on Ctrl-C, TERM or HUP (a lost
# SSH session) cancels every job of the sweep (scancel) and keeps what
# they measured; then it prints the table. With --adaptive it submits each
# config the search decides (scoring the file with summarize, as sweep_loop
# does); with --schedule it derives the schedule after them and runs it as
# one more job; with --dry-run it prints the batch script and sbatch line.

slurm_main() {
  exec "$SWEEP_PLAN" slurm --tools "$SVC_SWAP" "$WAIT_READY" "$LOADGEN" --summarize "$SUMMARIZE" -- "${argv[@]}"
}
