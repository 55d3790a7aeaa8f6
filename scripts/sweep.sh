#!/usr/bin/env bash
# sweep: for each value (or grid point) of one or more launch parameters,
# run `svc-swap --set P=V | wait-ready | loadgen >> RESULTS`, keep going
# past configs that fail, then restore the original config (or apply the
# winner) and print summarize's table. See sweep(1) and `sweep --help`.
#
# Why bash: the four tools do the work and sweep-plan decides; this script
# strings their pipes together, so a user can read it and run any step by
# hand. Records are whole lines flushed per line by the tools and appended
# with >>, so the results file is whole whatever happens to this script.
# The settings (sweep-plan options; EXIT_<NAME> from the shared exit-code
# table among them) assign what is read here before any visible assignment.
# shellcheck disable=SC2154
set -euo pipefail

say() { ((quiet)) || printf 'sweep: %s%s\n' "${say_prefix:-}" "$*" >&2; }
# "config 3/10, ETA 14 min (...)": sweep-plan(1) progress; plain lines in
# a fleet's jobs (they share one terminal).
progress() { # INDEX
  ((quiet)) || plan progress --index "$1" --show "sweep: ${say_prefix:-}" ${plain_progress:+--plain} "$results" || true
}
warn() { printf 'sweep: warning: %s\n' "$*" >&2; }
err() { printf 'sweep: error: %s\n' "$*" >&2; }
die() { err "${@:2}"; exit "$1"; } # CODE MESSAGE...

# ---- tools ------------------------------------------------------------
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The tools: --bin-dir, else beside this script (an installed sweep finds
# the tools it was installed with even off PATH), PATH, then the
# repository's builds. --bin-dir is looked up before sweep-plan parses the
# rest, since it says which sweep-plan parses them.
bin_dir=${SWEEPKIT_BIN:-} prev=""
for a; do [[ $prev != --bin-dir ]] || bin_dir=$a; [[ $a != --bin-dir=* ]] || bin_dir=${a#*=}; prev=$a; done
find_tool() {
  local t=$1 d
  if [[ -n $bin_dir ]]; then
    [[ -x $bin_dir/$t ]] && { printf '%s\n' "$bin_dir/$t"; return; }
    die "${EXIT_FAILURE:-1}" "$bin_dir/$t: not found or not executable (--bin-dir)"
  fi
  [[ -x $here/$t ]] && { printf '%s\n' "$here/$t"; return; }
  command -v "$t" 2>/dev/null && return
  # In a checkout: the newer of the release and debug builds, so a stale
  # release binary never shadows a fresh debug one.
  local found=""
  for d in "$here/../target/release" "$here/../target/debug"; do
    [[ -x $d/$t && ( -z $found || $d/$t -nt $found ) ]] && found=$d/$t
  done
  [[ -n $found ]] && { printf '%s\n' "$(cd "$(dirname "$found")" && pwd)/$t"; return; }
  die "${EXIT_FAILURE:-1}" "$t: not found on PATH; build the tools (cargo build --release) or give --bin-dir DIR"
}
SWEEP_PLAN=$(find_tool sweep-plan)

# ---- arguments --------------------------------------------------------
# Defined once, in sweep-plan's clap definition of sweep (sweep_options.rs:
# --help, man page, completions). It prints the settings as assignments,
# every value single-quoted (the eval runs no user text), or one usage line.
settings=$("$SWEEP_PLAN" options -- "$@") || exit $?
eval "$settings"
[[ -z $help ]] || { printf '%s' "$help"; exit 0; }
[[ -n $bin_dir ]] || bin_dir=${SWEEPKIT_BIN:-}
origin_file="" # a fleet's host keeps its origin in a file of its own
SVC_SWAP=$(find_tool svc-swap)
WAIT_READY=$(find_tool wait-ready)
LOADGEN=$(find_tool loadgen)
SUMMARIZE=$(find_tool summarize)
# The settings also hold the stages' shared words (target, ready, load; a
# fleet's host gets its own) and the grid: its words for sweep-plan, which
# answers every question about it and the results file, labels[i] (config
# i+1's "a=1 b=2") and n_configs. Configs are named here by their index.
plan() { "$SWEEP_PLAN" "$1" "${grid[@]}" "${@:2}"; } # SUBCOMMAND ARGS...

# ---- originals, for the restore ----------------------------------------
# The original config is recorded once, as an origin record at the first
# start of the results file, and every restore (after Ctrl-C, after
# --resume) puts that one back, not whatever runs when a resumed sweep
# starts. A dry-run swap changes nothing but reports each flag's current
# value (changes[].old) and checks the target before a server is touched;
# sweep-plan turns it into the origin record and reads the record back.
orig_set=() # --set/--unset arguments that put the original values back
originals() {
  local rec rc=0 new of=${origin_file:-$results}
  local -a sets=()
  mapfile -t sets < <(plan args --index 1 --for swap)
  # --no-preflight: this only reads the old values; each config is checked
  # when it is swapped in.
  rec=$("$SVC_SWAP" "${target[@]}" --dry-run --no-preflight "${sets[@]}" 2>/dev/null </dev/null) || rc=$?
  if ((rc)); then
    "$SVC_SWAP" "${target[@]}" --dry-run --no-preflight "${sets[@]}" </dev/null >/dev/null || true
    die "$rc" "svc-swap --dry-run failed (exit $rc); the target was not touched"
  fi
  # A fleet keeps each host's origin record in a file of its own too.
  new=$(printf '%s\n' "$rec" | "$SWEEP_PLAN" origin "$of") ||
    die "$EXIT_FAILURE" "sweep-plan origin failed; the target was not touched"
  if [[ -n $new ]]; then
    printf '%s\n' "$new" >>"$results"
    [[ -z $origin_file ]] || printf '%s\n' "$new" >"$origin_file"
  elif [[ -z $origin_file ]]; then
    say "restores will put back the original recorded in $of"
  fi
  mapfile -t orig_set < <(plan restore "$of")
  wait $! || exit $? # sweep-plan named the missing key
}

# ---- one config --------------------------------------------------------
interrupted=0
pipe_sub=""
swaps=0 last_rc_swap=0
last_state="" # run_config's verdict on its config, for sweep_loop
# One config's three stages, as stage_args sets them and run_pipe runs
# them; run_pipe's answer: the file's length before the try and each
# stage's exit status. Named globals, so no function reads another's locals.
swap_cmd=() ready_cmd=() load_cmd=()
pipe_before=0 pipe_rc=()
judged=() verdict=() # sweep-plan verdict's words for what runs, a try's verdict

# The arguments of config IDX's three stages, into swap_cmd, ready_cmd and
# load_cmd. A stage whose upstream dies without a record measures nothing
# and records this config's failure (not `config: {}`).
stage_args() { # IDX
  local -a sets=() expect=() stage=()
  mapfile -t sets < <(plan args --index "$1" --for swap)
  if ((expect_config)); then mapfile -t expect < <(plan args --index "$1" --for expect); fi
  mapfile -t stage < <(plan args --index "$1" --for stage)
  swap_cmd=("$SVC_SWAP" "${target[@]}" "${sets[@]}")
  ready_cmd=("$WAIT_READY" "${ready[@]}" "${expect[@]}" "${stage[@]}")
  load_cmd=("$LOADGEN" "${load[@]}" "${stage[@]}")
}

# --dry-run: sweep-plan prints each config's pipe (with --hosts each host
# and its URL first) as a command to copy; nothing runs.
dry_run_plan() { "$SWEEP_PLAN" dry-run --tools "$SVC_SWAP" "$WAIT_READY" "$LOADGEN" -- "${argv[@]}"; exit $?; }

run_config() { # INDEX
  judged=(--index "$1")
  stage_args "$1"
  say "[$1/$n_configs] ${labels[$1 - 1]}"
  progress "$1"
  try_pipe
}

# What the last try appended for the config or schedule (a fleet's other
# hosts append to FILE too), judged by sweep-plan with the stages' exit
# statuses: the retry's pause and note first, then count_config's fields;
# a finished run's count goes to the tally file (sweep-plan tally).
judge_config() { # ATTEMPT
  mapfile -t verdict < <(plan verdict "${judged[@]}" --since "$pipe_before" \
    --exits "${pipe_rc[@]}" --retries "$retries" --attempt "$1" ${tally_file:+--tally "$tally_file"} \
    "$results" --field retry_in_s --field retry_note --field state --field usage_exit \
    --field interrupted --field refused --field warning --field note)
}

# Run the pipe, judge each try and act on the last. A transport failure
# (SSH lost, host unreachable) says nothing about the config: sweep-plan
# says when to run it again, backing off, before moving on.
try_pipe() {
  local attempt
  for ((attempt = 0; ; attempt++)); do
    run_pipe
    judge_config "$attempt"
    { [[ -n ${verdict[0]:-} ]] && ((!interrupted)); } || break
    say "${verdict[1]}"
    sleep "${verdict[0]}" &
    wait $! || true
    ((!interrupted)) || break
  done
  count_config "${verdict[@]:2}"
}

# Act on a verdict (sweep-plan verdict's fields STATE USAGE_EXIT
# INTERRUPTED REFUSED WARNING NOTE) and say it.
count_config() {
  last_state=${1:-pending} last_rc_swap=${pipe_rc[0]} # for the adaptive loop, a fleet job
  [[ -z ${5:-} ]] || warn "$5"
  # A usage error or a missing tool fails every config alike: stop.
  [[ -z ${2:-} ]] || finish_and_exit "$EXIT_USAGE" "a tool rejected its arguments (exit $2); fix the pass-through options"
  [[ ${3:-} != true ]] || interrupted=1
  # Refused by pre-flight: the server was not touched, not a swap (with
  # none left, the final restore is skipped).
  [[ ${4:-} != true ]] || swaps=$((swaps - 1))
  [[ -z ${6:-} ]] || say "$6"
}

# One try of stage_args' pipe (sets pipe_before and pipe_rc). Each tool
# passes the upstream record (or a failure record) down, so whatever
# happens, the last record lands in the results file. It runs in a
# background subshell that we `wait` for, so a signal sent to this script
# alone (timeout(1), kill PID) is handled at once rather than when the
# pipeline ends: the trap forwards it to the tools. The subshell hands back
# the stages' exit statuses on its stdout, a pipe (no status file): one
# line, read after the wait, which the pipe's buffer holds till then.
run_pipe() {
  local st
  pipe_before=$(wc -l <"$results")
  swaps=$((swaps + 1))
  exec {st}< <(
    set +e
    # A TERM or INT to the whole group (a fleet's job is stopped so) is the
    # tools' to act on: this shell waits for them and reports, rather than
    # die and let the job end while they still write their records.
    trap : INT TERM
    "${swap_cmd[@]}" </dev/null | "${ready_cmd[@]}" | "${load_cmd[@]}" >>"$results"
    echo "${PIPESTATUS[*]}"
  )
  pipe_sub=$!
  wait "$pipe_sub" || true
  pipe_sub=""
  read -r -t 5 -a pipe_rc <&"$st" || pipe_rc=("$EXIT_FAILURE" "$EXIT_FAILURE" "$EXIT_FAILURE")
  exec {st}<&-
  return 0
}

# ---- the end: apply the winner or restore the original ----------------
# Either ends with a ready server, checked by the configs' wait-ready
# words, or says why not (exit 42). summarize picks the winner; sweep-plan
# schedule says whether the schedule beats it by the objective.
final_rc=0 end_rc=0 end_why="" end_st=() end_expect=() sched_restore=()
end_swap() { # SVC-SWAP-ARGS...: one swap and the wait (end_rc, end_why)
  "$SVC_SWAP" "${target[@]}" "$@" </dev/null | "$WAIT_READY" "${ready[@]}" "${end_expect[@]}" --quiet
  end_st=("${PIPESTATUS[@]}")
  end_rc=$((end_rc | end_st[0] | end_st[1])) end_why+="${end_why:+, }svc-swap exit ${end_st[0]}, wait-ready exit ${end_st[1]}"
}
apply_winner() {
  local f keep=static
  f=$(mktemp "${TMPDIR:-/tmp}/sweep-summary.XXXXXX")
  "$SUMMARIZE" --format json "${sum_args[@]}" "$results" >"$f"
  end_rc=$?
  end_why="summarize exit $end_rc"
  [[ -z $schedule ]] || keep=$(sched --summary "$f" --field keep)
  if [[ $keep == schedule ]]; then
    say "applying the $schedule schedule (it wins by the objective; see the table)"
    end_rc=0 # the schedule does not need a static pick
    sched --emit-record >"$f" && mapfile -t end_expect < <(sched --words expect)
    end_swap --apply-from "$f"
  elif ((end_rc == 0)); then
    say "applying summarize's pick" # with the schedule's own flags undone
    end_swap --apply-from "$f" "${sched_restore[@]}"
  fi
  rm -f "$f"
}
# The original config, as it was even if pre-flight would balk; a
# transport failure (exit.rs: SSH lost) is retried like a config's.
restore_original() {
  local a
  for ((a = 0; ; a++)); do
    say "restoring the original config"
    end_rc=0 end_why="" end_expect=()
    end_swap --no-preflight "${orig_set[@]}" "${sched_restore[@]}"
    { [[ " ${end_st[*]} " == *" $EXIT_TRANSPORT_ERROR "* ]] && ((a < retries)); } || break
    say "  transport failure; retry $((a + 1))/$retries in $((2 << a))s"
    sleep $((2 << a))
  done
}
# --resume restores even if nothing ran (a swept value may be left).
restore() {
  ((!no_restore && (swaps > 0 || resume))) || return 0
  set +e
  # The words that undo the schedule's flags outside the grid.
  [[ -z $schedule ]] || mapfile -t sched_restore < <(sched --words restore "${params[@]/#/--key=}")
  ((keep_winner)) && apply_winner
  if ((!keep_winner || end_rc != 0)); then
    ((keep_winner)) && warn "applying the winner failed ($end_why); restoring the original config"
    restore_original
  fi
  set -e
  ((end_rc == 0)) || { err "the final swap did not end with a ready server ($end_why); check the server" && final_rc=$EXIT_RESTORE_FAILED; }
}

print_table=1 # a fleet job leaves the table to the driver (lib/fleet.sh)
table() {
  ((print_table)) && [[ -s $results ]] || return 0
  local -a rep=()
  [[ -z $report ]] || rep=(--report "$report") # --report: the HTML too
  "$SUMMARIZE" --format text "${sum_args[@]}" "${rep[@]}" "$results" || warn "summarize failed on $results"
  [[ -z $report || ! -s $report ]] || say "report: $report"
}

finished=0
finish_and_exit() { # CODE [MESSAGE]
  ((finished)) && exit "$1"
  finished=1
  trap '' INT TERM
  [[ -z ${2:-} ]] || err "$2"
  restore
  local code=$1
  ((code == 0 && final_rc != 0)) && code=$final_rc
  exit "$code"
}

# The tools of the running pipeline: children of its subshell (read from
# /proc, so no procps is needed).
pipeline_pids() {
  local f rest
  for f in /proc/[0-9]*/stat; do
    { read -r rest <"$f"; } 2>/dev/null || continue
    rest=${rest##*) }
    [[ ${rest#* } == "$1 "* ]] && { f=${f#/proc/}; printf '%s\n' "${f%/stat}"; }
  done
  return 0
}

on_signal() {
  interrupted=1
  if [[ -n $pipe_sub ]]; then
    # A terminal's Ctrl-C (or a signal to the whole process group) reached
    # the tools too: loadgen ends its level and writes what it measured,
    # wait-ready writes an interrupted record. Give them a moment, since a
    # second signal makes loadgen quit without its record; only a signal
    # sent to this script alone needs forwarding. svc-swap, if killed, has
    # left the old or the new file, never a torn one.
    local p i
    for ((i = 0; i < 50; i++)); do
      kill -0 "$pipe_sub" 2>/dev/null || break
      sleep 0.1
    done
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

# ---- the loop: sweep-plan step says which config runs next ------------
# The grid's configs in order (--resume skips those with a result), or
# --adaptive's next value, decided from the whole results file and
# summarize's scores of it, so a resumed sweep takes the same decisions;
# sweep-plan says the skips, the search's reasons, its end and its cost.
score() { # summarize's scores of the results so far, into scores_file
  local rc=0
  "$SUMMARIZE" --format json "${sum_args[@]}" --objective weighted --pool-hosts \
    "$results" 2>/dev/null >"$scores_file" || rc=$?
  # 1: nothing picked yet, 3: nothing measured yet; the scores say so.
  ((rc == 0 || rc == EXIT_FAILURE || rc == EXIT_BAD_INPUT)) || finish_and_exit "$rc" "summarize failed on $results (exit $rc)"
}
sweep_loop() {
  local i=0 round=0
  local -a st ask=() say=(--say "sweep: ")
  ((!quiet)) || say=()
  ((!resume)) || ask=(--resume)
  ((!adaptive)) || ask=(--adaptive "$scores_file" "${adaptive_args[@]}")
  while :; do
    ((!adaptive)) || score
    mapfile -t st < <(plan step --after "$i" "${ask[@]}" "${say[@]}" --tally "$tally_file" "$results" \
      --field action --field index)
    wait $! || finish_and_exit $? "sweep-plan step failed (exit $?)"
    [[ ${st[0]} == run ]] || break
    i=${st[1]}
    # A guard, never reached by design.
    ((++round <= n_configs * 4 + 40)) || finish_and_exit "$EXIT_FAILURE" "sweep-plan step keeps asking for ${labels[i - 1]}; stopping"
    run_config "$i"
    ((interrupted)) && on_signal
    # A value that only failed in transport would be asked for forever.
    if ((adaptive)) && [[ $last_state == transport ]]; then
      finish_and_exit "$EXIT_FAILURE" "${labels[i - 1]}: transport failures after $retries retries; fix the target and rerun (the file resumes)"
    fi
  done
  # The values a finished search never tried get skipped records.
  # shellcheck disable=SC2094 # sweep-plan reads the file whole, then answers
  ((!adaptive)) || plan next "${adaptive_args[@]}" --summary "$scores_file" --emit-skipped "$results" >>"$results" ||
    warn "could not append the skipped records"
}
# ---- --schedule: the server's own per-load schedule, validated ---------
# After the grid: summarize derives it into the results file (a resumed
# sweep applies that same one), and it runs as one more config: svc-swap
# --apply-from it, wait-ready checks the server runs it, loadgen measures
# every level. sweep-plan schedule decides (sweep-plan(1)).
sched() { "$SWEEP_PLAN" schedule --server "$schedule" "$@" "$results"; }
# Derive it into the results file, unless --resume finds one (then run
# it again only if it was not measured to the end).
schedule_step() {
  local -a expect_s=() stage_s=() keep=()
  local f rc=0
  ((resume)) && keep=(--resume)
  case $(sched "${keep[@]}" --field action) in
    "done") say "schedule: already measured in $results, skipped"; return 0 ;;
    derive)
      say "schedule: deriving the $schedule schedule (summarize --schedule $schedule)"
      f=$("$SUMMARIZE" --schedule "$schedule" "${schedule_args[@]}" "${sum_args[@]}" "$results") || rc=$?
      if ((rc == EXIT_SCHEDULE_REFUSED)); then
        say "schedule: the results cannot support a $schedule schedule (summarize said why above); keeping the static pick"
        return 0
      fi
      ((rc == 0)) || finish_and_exit "$rc" "summarize --schedule $schedule failed (exit $rc)"
      printf '%s\n' "$f" >>"$results" ;;
  esac
  f=$(mktemp "${TMPDIR:-/tmp}/sweep-schedule.XXXXXX")
  sched --emit-record >"$f"
  mapfile -t expect_s < <(sched --words expect)
  mapfile -t stage_s < <(sched --words stage)
  say "[schedule] $schedule per-load schedule"
  swap_cmd=("$SVC_SWAP" "${target[@]}" --apply-from "$f")
  ready_cmd=("$WAIT_READY" "${ready[@]}" "${expect_s[@]}" "${stage_s[@]}")
  load_cmd=("$LOADGEN" "${load[@]}" "${stage_s[@]}")
  judged=(--schedule "$schedule")
  try_pipe
  rm -f "$f"
  ((!interrupted)) || on_signal
}
# ---- main ---------------------------------------------------------------
if [[ -n $hosts ]]; then
  # In the repository beside this script; installed (make install) in
  # PREFIX/lib/sweepkit beside PREFIX/bin.
  fleet_lib=$here/lib/fleet.sh
  [[ -f $fleet_lib ]] || fleet_lib=$here/../lib/sweepkit/fleet.sh
  [[ -f $fleet_lib ]] || die "$EXIT_FAILURE" "--hosts: $here/lib/fleet.sh or $here/../lib/sweepkit/fleet.sh not found; reinstall sweepkit (make install)"
  # shellcheck source=scripts/lib/fleet.sh
  source "$fleet_lib"
  fleet_main
fi
((dry_run == 0)) || dry_run_plan
mkdir -p "$(dirname "$results")"
touch "$results"
scores_file=$(mktemp "${TMPDIR:-/tmp}/sweep-scores.XXXXXX")
tally_file=$(mktemp "${TMPDIR:-/tmp}/sweep-tally.XXXXXX") # sweep-plan verdict/step --tally
trap 'rm -f "$scores_file" "$tally_file"; ((quiet)) || "$SWEEP_PLAN" progress-end || true' EXIT
originals
trap on_signal INT TERM
if ((adaptive)); then say "adaptive over $n_configs value(s); results: $results"; else say "$n_configs config(s); results: $results"; fi
sweep_loop
[[ -z $schedule ]] || schedule_step
# sweep-plan tally: the done line and the exit status (41, 40 or 0).
mapfile -t end < <("$SWEEP_PLAN" tally --from "$tally_file" --field 'done' --field exit)
say "${end[0]:-done}"
trap '' INT TERM
finished=1
restore
table
((final_rc == 0)) || exit "$final_rc"
exit "${end[1]:-$EXIT_FAILURE}"
