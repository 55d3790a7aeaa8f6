#!/usr/bin/env bash
# sweep: for each value (or grid point) of one or more launch parameters,
# run `svc-swap --set P=V | wait-ready | loadgen >> RESULTS`, keep going
# past configs that fail, then restore the original config (or apply the
# winner) and print summarize's table. See sweep(1) and `sweep --help`.
#
# The script pipes; sweep-plan decides (sweep-plan(1)): it parses sweep's
# options, names each step with every tool's words, judges each run and
# says how to end. Its answers are bash assignments (--shell), every value
# single-quoted, so the evals run no user text. The tools flush whole
# records, appended with >>: the results file is whole whatever happens.
# shellcheck disable=SC2154 # assigned by the evals of sweep-plan's answers
set -euo pipefail

# A terminal that hung up (SIGHUP) fails their writes: the sweep goes on.
say() { ((quiet)) || printf 'sweep: %s%s\n' "${say_prefix:-}" "$*" >&2 || true; }
warn() { printf 'sweep: warning: %s\n' "$*" >&2 || true; }
err() { printf 'sweep: error: %s\n' "$*" >&2 || true; }
die() { err "${@:2}"; exit "$1"; } # CODE MESSAGE...

# ---- tools: --bin-dir, else beside this script (as installed), PATH, then
# the checkout's newer build (a stale release never shadows a fresh debug
# one). --bin-dir is read first: it says which sweep-plan parses the rest.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin_dir=${SWEEPKIT_BIN:-} prev=""
for a; do [[ $prev != --bin-dir ]] || bin_dir=$a; [[ $a != --bin-dir=* ]] || bin_dir=${a#*=}; prev=$a; done
find_tool() {
  local t=$1 d found=""
  if [[ -n $bin_dir ]]; then
    [[ -x $bin_dir/$t ]] || die "${EXIT_FAILURE:-1}" "$bin_dir/$t: not found or not executable (--bin-dir)"
    printf '%s\n' "$bin_dir/$t" && return
  fi
  [[ -x $here/$t ]] && { printf '%s\n' "$here/$t"; return; }
  command -v "$t" 2>/dev/null && return
  for d in "$here/../target/release" "$here/../target/debug"; do
    [[ -x $d/$t && ( -z $found || $d/$t -nt $found ) ]] && found=$d/$t
  done
  [[ -n $found ]] || die "${EXIT_FAILURE:-1}" "$t: not found on PATH; build the tools (cargo build --release) or give --bin-dir DIR"
  printf '%s\n' "$(cd "$(dirname "$found")" && pwd)/$t"
}
SWEEP_PLAN=$(find_tool sweep-plan)

# ---- settings: sweep's one option definition (sweep-plan options) ------
# The stages' shared words (target, ready, load; a pool host gets its
# own), the grid's words for sweep-plan (grid), labels, n_configs, the
# loop's words (step_args, say_to) and EXIT_<NAME> from the shared table.
settings=$("$SWEEP_PLAN" options --start -- "$@") || exit $?
eval "$settings"
[[ -z $help ]] || { printf '%s' "$help"; exit 0; }
SVC_SWAP=$(find_tool svc-swap)
WAIT_READY=$(find_tool wait-ready)
LOADGEN=$(find_tool loadgen)
SUMMARIZE=$(find_tool summarize)
plan() { "$SWEEP_PLAN" "$1" "${grid[@]}" "${@:2}"; } # SUBCOMMAND ARGS...
ask() { local a; a=$(plan "$@" --shell) && eval "$a"; } # an answer, as variables

# ---- before the first stop: sweep-plan origin reads the target's launch
# line (a dry-run swap, which changes nothing), refuses what would fail
# every config (the same checks on every path: --hosts, --slurm and
# --dry-run too), and keeps the original once per results file (and pool
# host); every restore (after Ctrl-C, after --resume) puts that one back.
originals() { "$SWEEP_PLAN" origin --tools "$SVC_SWAP" "$WAIT_READY" "$LOADGEN" ${1:+--host "$1"} "${@:2}" -- "${argv[@]}"; } # [HOST [--only-refusals]]

# ---- one step (a config, the schedule), tried till it stands -----------
signalled=0 pipe_sub="" swaps=0 last_state="" last_rc_swap=0
# The step sweep-plan named (label, to_swap, to_ready, to_load, judge): a
# transport failure (SSH lost) says nothing about the config, so the
# verdict says when to run it again; then act on the verdict.
run_step() {
  local attempt
  say "$label" # then "config 3/10, ETA 14 min (...)"; plain lines in a pool's jobs
  [[ -z $index ]] || ((quiet)) || plan progress --index "$index" "${progress_args[@]}" --show "sweep: ${say_prefix:-}" ${plain_progress:+--plain} "$results" || true
  for ((attempt = 0; ; attempt++)); do
    run_pipe
    ask verdict "${judge[@]}" --since "$pipe_before" --exits "${pipe_rc[@]}" --retries "$retries" --attempt "$attempt" --tally "$work/tally" "${say_to[@]}" \
      "$results" --field={retry_in_s,retry_note,state,usage_exit,stop_note,interrupted,refused,warning,note} || finish_and_exit "$EXIT_FAILURE" "sweep-plan verdict failed"
    { [[ -n $retry_in_s ]] && ((!signalled)); } || break
    say "$retry_note"
    sleep "$retry_in_s" &
    wait $! || true
    ((!signalled)) || break
  done
  last_state=${state:-pending} last_rc_swap=${pipe_rc[0]} # for a pool's job
  [[ -z $warning ]] || warn "$warning"
  # A usage error, a missing tool or a wrong probe path fails every config alike: stop.
  [[ -z $usage_exit ]] || finish_and_exit "$EXIT_USAGE" "$stop_note"
  [[ $interrupted != true ]] || signalled=1
  [[ $refused != true ]] || swaps=$((swaps - 1)) # pre-flight refused: the server was not touched
  [[ -z $note ]] || say "$note"
}

# One try of the step's pipe: pipe_before (the file's length) and pipe_rc
# (the stages' statuses). Each tool hands the upstream record (or a failure
# record) down, so the last record lands in the results file. A GPU slot's
# loadgen runs under sweep-plan slot-bench (bench_gate): its bench waits
# for the machine's other slots' benches, not their loads. It runs in a
# background subshell we `wait` for, so a signal to this script alone is
# handled at once (on_signal forwards it to the tools); the statuses come
# back as one line on its stdout, a pipe read after the wait.
run_pipe() {
  local st
  pipe_before=$(wc -l <"$results")
  swaps=$((swaps + 1))
  exec {st}< <(
    set +e
    trap : INT TERM HUP # a signal to the group is the tools' to act on
    "$SVC_SWAP" "${target[@]}" "${swap_own[@]}" "${to_swap[@]}" </dev/null | "$WAIT_READY" "${ready[@]}" "${to_ready[@]}" |
      ${bench_gate:+"$SWEEP_PLAN"} "${bench_gate[@]}" "$LOADGEN" "${load[@]}" "${to_load[@]}" >>"$results"
    echo "${PIPESTATUS[*]}"
  )
  pipe_sub=$!
  wait "$pipe_sub" || true
  pipe_sub=""
  read -r -t 5 -a pipe_rc <&"$st" || pipe_rc=("$EXIT_FAILURE" "$EXIT_FAILURE" "$EXIT_FAILURE")
  exec {st}<&-
}

# ---- the end: sweep-plan end names each swap (the winner, the original,
# its retries) till the server is ready, or says why not (exit 42) ------
final_rc=0
restore() {
  ((!no_restore && (swaps > 0 || resume))) || return 0
  local w
  local -a e=() more=()
  w=$(mktemp -d "$work/end.XXXXXX") # a pool restores its hosts at once
  # sweep-plan end runs summarize once when it needs the pick (end_args).
  e=(--origin "${origin_file:-$results}" --retries "$retries" --work "$w" --interrupted "$signalled" ${schedule:+--schedule "$schedule"} --summarize "$SUMMARIZE" "${end_args[@]}")
  ((!keep_winner)) || e+=(--keep-winner) # a pool may have refused it (lib/fleet.sh)
  set +e
  while ask end "${e[@]}" "${more[@]}" "$results" || { error="sweep-plan end failed; check the server" exit=$EXIT_RESTORE_FAILED && false; }; do
    [[ -z $warning ]] || warn "$warning"
    [[ -z $note ]] || say "$note"
    [[ $action != "done" ]] || break
    sleep "$pause_s"
    say "$line"
    # --validate-on's replay: its records marked, never the sweep's results.
    if [[ $action == validate ]]; then "$LOADGEN" "${to_load[@]}" </dev/null | "$SWEEP_PLAN" validation "${mark[@]}" >>"$results"
    else "$SVC_SWAP" "${target[@]}" "${to_swap[@]}" </dev/null | "$WAIT_READY" "${ready[@]}" "${to_ready[@]}" --quiet; fi
    more=("${again[@]}" --exits "${PIPESTATUS[@]}")
  done
  set -e
  [[ -z $error ]] || { err "$error"; final_rc=$exit; }
}

print_table=1 # a pool's job leaves the table to the driver (lib/fleet.sh)
# table [--compare]: at the end of the whole grid, --compare-to's earlier run against this one.
table() {
  ((print_table)) && [[ -s $results ]] || return 0
  "$SUMMARIZE" --format text "${sum_args[@]}" ${report:+--report "$report"} "$results" || warn "summarize failed on $results"
  [[ -z $report || ! -s $report ]] || say "report: $report"
  [[ -z ${1-} || -z $compare_to ]] || "$SUMMARIZE" --compare "$compare_to" "$results" || warn "summarize --compare $compare_to $results exited $?"
}

finished=0
finish_and_exit() { # CODE [MESSAGE]
  ((finished)) && exit "$1"
  finished=1
  trap '' INT TERM HUP
  [[ -z ${2:-} ]] || err "$2"
  restore
  (($1 != 0 || final_rc == 0)) || exit "$final_rc"
  exit "$1"
}

# The tools of the running pipeline: children of its subshell (from /proc).
pipeline_pids() {
  local f rest
  for f in /proc/[0-9]*/stat; do
    { read -r rest <"$f"; } 2>/dev/null || continue
    rest=${rest##*) }
    [[ ${rest#* } == "$1 "* ]] && { f=${f#/proc/}; printf '%s\n' "${f%/stat}"; }
  done
  return 0
}

# A terminal's Ctrl-C (or a signal to the whole group) reached the tools
# too: loadgen ends its level and writes what it measured, wait-ready an
# interrupted record. Give them a moment (a second signal makes loadgen
# quit without its record); only a signal sent to this script alone needs
# forwarding. svc-swap, if killed, has left the old or the new file.
on_signal() {
  signalled=1
  if [[ -n $pipe_sub ]]; then
    local p i
    for ((i = 0; i < 50; i++)); do kill -0 "$pipe_sub" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pipe_sub" 2>/dev/null; then
      for p in $(pipeline_pids "$pipe_sub"); do kill -TERM "$p" 2>/dev/null || true; done
    fi
    wait "$pipe_sub" 2>/dev/null || true
    pipe_sub=""
  fi
  say "interrupted; the results file is whole"
  table
  finish_and_exit "$EXIT_INTERRUPTED"
}

# ---- the loop: sweep-plan step names each step -------------------------
# The grid's configs in order (--resume skips those with a result), or
# --adaptive's next value from the whole file and summarize's scores of
# it; then --schedule's step: derived (summarize --schedule appends the
# schedule record, which a resumed sweep applies again), run, or done.
# sweep-plan runs summarize for both, and stops a loop that is stuck.
sweep_loop() {
  local -a after=(--after 0) search=()
  ((!adaptive)) || search=(--adaptive "$work/scores")
  while :; do
    ask step "${after[@]}" "${step_args[@]}" "${search[@]}" --summarize "$SUMMARIZE" "${say_to[@]}" --work "$work" --tally "$work/tally" "$results" ||
      finish_and_exit $? "sweep-plan step failed (exit $?)"
    [[ $action != fail ]] || finish_and_exit "$exit" "$error"
    [[ $action == run ]] || return 0
    run_step
    ((!signalled)) || on_signal
    after=("${again[@]}")
  done
}

# ---- main ---------------------------------------------------------------
# A library beside this script, or installed: PREFIX/lib/sweepkit beside PREFIX/bin.
find_lib() { # NAME: lib_file
  local d
  for d in "$here/lib" "$here/../lib/sweepkit"; do [[ -f $d/$1 ]] && lib_file=$d/$1 && return; done
  die "$EXIT_FAILURE" "$here/lib/$1 or $here/../lib/sweepkit/$1 not found; reinstall sweepkit (make install)"
}
# shellcheck source=scripts/lib/slurm.sh # --slurm (its --dry-run prints the batch script)
((!slurm)) || { find_lib slurm.sh && source "$lib_file" && slurm_main; }
((dry_run == 0)) || exec "$SWEEP_PLAN" dry-run --tools "$SVC_SWAP" "$WAIT_READY" "$LOADGEN" -- "${argv[@]}"
work=$(mktemp -d "${TMPDIR:-/tmp}/sweep.XXXXXX") # scores, tally, records to apply
export SWEEPKIT_SAID=${SWEEPKIT_SAID:-$work/said} # a tool's line on the server itself, once per sweep
trap 'rm -rf "$work"; ((quiet)) || "$SWEEP_PLAN" progress-end || true' EXIT
# shellcheck source=scripts/lib/fleet.sh # --hosts, --gpus
((!pool)) || { find_lib fleet.sh && source "$lib_file" && fleet_main; }
originals # nothing is written before it passed
trap on_signal INT TERM HUP # a lost terminal (SSH) is an interrupt too
say "$plan_line" # N config(s), the results file, the levels
sweep_loop
# sweep-plan tally: the done line and the exit status (41, 40 or 0).
mapfile -t end < <("$SWEEP_PLAN" tally --from "$work/tally" --field 'done' --field exit)
say "${end[0]:-done}"
trap '' INT TERM HUP
finished=1
restore
table --compare
((final_rc == 0)) || exit "$final_rc"
exit "${end[1]:-$EXIT_FAILURE}"
