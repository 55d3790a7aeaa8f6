#!/usr/bin/env bash
# Detection latency of wait-ready against the usual shell idioms, on llm-sim:
#   ready: time from llm-sim's /health turning 200 to the waiter returning;
#   crash: time from llm-sim's OOM-at-load line to the waiter giving up.
# Peers: a `sleep 1 && curl` loop and `curl --retry --retry-delay 1`. They
# cannot tell a crash from loading, so they give up only at their own
# budget (10 s here; people use 80 s and more). Median and max over TRIALS
# (default 20) trials; ratios are peer / wait-ready. Uses the release
# binaries in $SWEEPKIT_BIN (default target/release). Takes about 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${SWEEPKIT_BIN:-$PWD/target/release}"
TRIALS="${TRIALS:-20}"
PEER_BUDGET=10
for b in wait-ready llm-sim; do
  [[ -x $BIN/$b ]] || { echo "bench: $BIN/$b missing; run 'make release'" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "bench: curl not installed" >&2; exit 1; }
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Prefix each line with the time it arrived ($EPOCHREALTIME: no fork).
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }

# start_sim NAME ARGS...: llm-sim with a stamped log; sets SIM_PID, PORT, LOG.
start_sim() {
  local name=$1
  shift
  LOG=$WORK/$name.log
  "$BIN/llm-sim" --host 127.0.0.1 --port 0 "$@" >"$LOG.out" 2> >(stamp >"$LOG") &
  SIM_PID=$!
  PIDS+=("$SIM_PID")

  for _ in $(seq 500); do
    [[ -s $LOG.out ]] && break
    sleep 0.01
  done
  PORT=$(sed -n 's/.*"port":\([0-9]*\).*/\1/p' "$LOG.out" | head -n1)
  [[ -n $PORT ]] || { echo "bench: llm-sim did not start" >&2; exit 1; }
}

# event_time LOG PATTERN: the stamp of the first line matching PATTERN
# (waits up to 5 s for the stamping reader to catch up).
event_time() {
  local t
  for _ in $(seq 500); do
    t=$(grep -m1 -- "$2" "$1" 2>/dev/null | cut -d' ' -f1 || true)
    [[ -n $t ]] && { echo "$t"; return; }
    sleep 0.01
  done
  echo "bench: no '$2' in $1" >&2
  exit 1
}

stop_sim() {
  kill "$SIM_PID" 2>/dev/null || true
  wait "$SIM_PID" 2>/dev/null || true
}

# The waiters. Each returns when it believes the server is ready (or gives up).
waiter() {
  local how=$1 url=http://127.0.0.1:$PORT/health
  case $how in
    wait-ready)
      "$BIN/wait-ready" --quiet --no-stdin --server llm-sim --pid "$SIM_PID" --log "$LOG" \
        --timeout "${PEER_BUDGET}s" "http://127.0.0.1:$PORT" 2>/dev/null ;;
    sleep-curl)

      for _ in $(seq "$PEER_BUDGET"); do
        sleep 1 && curl -sf -o /dev/null "$url" && return 0
      done
      return 1 ;;
    curl-retry)
      curl -sf -o /dev/null --retry "$PEER_BUDGET" --retry-delay 1 --retry-connrefused \
        --retry-max-time "$PEER_BUDGET" "$url" ;;
  esac
}

# trial KIND HOW: one measurement in seconds, on stdout.
trial() {
  local kind=$1 how=$2 t_done t_event
  # A random load time, so no waiter gains from a lucky phase.
  local load=$((200 + RANDOM % 1000))ms
  if [[ $kind == ready ]]; then
    start_sim "$kind-$how-$RANDOM" --load-time "$load" --warmup-time 300ms
  else
    start_sim "$kind-$how-$RANDOM" --crash-on-load --load-time "$load"
  fi
  waiter "$how" >/dev/null 2>&1 || true
  t_done=$EPOCHREALTIME
  if [[ $kind == ready ]]; then
    t_event=$(event_time "$LOG" 'ready (/health 200)')
  else
    t_event=$(event_time "$LOG" 'OutOfMemoryError')
  fi
  stop_sim
  awk -v a="$t_done" -v b="$t_event" 'BEGIN { printf "%.4f\n", a - b }'
}

# stats FILE: "median max" in milliseconds.
stats() {
  sort -n "$1" | awk '{ v[NR] = $1 * 1000 }
    END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
          printf "%.0f %.0f\n", m, v[NR] }'
}

declare -A MED MAX
for kind in ready crash; do
  for how in wait-ready sleep-curl curl-retry; do
    out=$WORK/$kind-$how.txt
    : >"$out"
    echo "bench: $kind / $how: $TRIALS trials" >&2
    if [[ $kind == crash && $how != wait-ready ]]; then
      # The peers wait out their whole budget on a crash: run the trials
      # side by side (they only sleep) to keep the bench short.
      for _ in $(seq "$TRIALS"); do trial "$kind" "$how" >>"$out" & done
      wait
    else
      for _ in $(seq "$TRIALS"); do trial "$kind" "$how" >>"$out"; done
    fi
    read -r MED[$kind-$how] MAX[$kind-$how] < <(stats "$out")
  done
done

# CPU while waiting on a server that is still loading (port refused, a
# process watched): 5 s of the default schedule.
TIMEFORMAT='%U %S'
start_sim cpu --load-time 30s
cpu=$( { time "$BIN/wait-ready" --quiet --no-stdin --pid "$SIM_PID" --timeout 5s \
  "http://127.0.0.1:$PORT/health" >/dev/null 2>/dev/null || true; } 2>&1 | tail -n1)
stop_sim
cpu_pct=$(awk -v u="${cpu% *}" -v s="${cpu#* }" 'BEGIN { printf "%.2f", (u + s) / 5 * 100 }')

printf '\nwait-ready detection latency (%s trials each; ms; ratio = peer / wait-ready)\n' "$TRIALS"
printf '%-8s %-28s %10s %10s %14s\n' event waiter median max "median ratio"
for kind in ready crash; do
  base=${MED[$kind-wait-ready]}
  for how in wait-ready sleep-curl curl-retry; do
    case $how in
      wait-ready) label="wait-ready (defaults)" ;;
      sleep-curl) label="sleep 1 && curl loop" ;;
      curl-retry) label="curl --retry --retry-delay 1" ;;
    esac
    ratio=$(awk -v p="${MED[$kind-$how]}" -v b="$base" 'BEGIN { printf "%.1fx", (b > 0 ? p / b : 0) }')
    printf '%-8s %-28s %10s %10s %14s\n' "$kind" "$label" "${MED[$kind-$how]}" "${MAX[$kind-$how]}" "$ratio"
  done
done
printf '\ncrash: the peers only give up at their %ss budget and cannot say "crashed";\n' "$PEER_BUDGET"
printf 'wait-ready exits 10 with kind oom and the log tail.\n'
printf 'wait-ready CPU while waiting 5 s on a loading server: %s%% of one core\n' "$cpu_pct"
