#!/usr/bin/env bash
# make demo: the whole sweepkit loop against llm-sim, a SIMULATED inference
# server (no model runs; its speed follows a model of speculative decoding).
# Writes a process spec for llm-sim in a temp dir, sweeps
# speculative-num-steps 1,2,3,4,5,8 at concurrency 1,4,16,64 with sweep.sh
# (svc-swap | wait-ready | loadgen per value), prints summarize's table, the
# plateau and the pick, applies the pick, writes the HTML report and prints
# its path, then stops the server.
# Uses target/release (make demo builds it); SWEEPKIT_BIN overrides.
# DEMO_VALUES, DEMO_CONCURRENCY and DEMO_MAX_TOKENS shrink the grid (the
# test that runs this script, tests/tests/demo_report.rs, uses them).
set -euo pipefail
values=${DEMO_VALUES:-1,2,3,4,5,8}
levels=${DEMO_CONCURRENCY:-1,4,16,64}
max_tokens=${DEMO_MAX_TOKENS:-128}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${SWEEPKIT_BIN:-$here/../target/release}
for t in llm-sim svc-swap wait-ready loadgen summarize; do
  [[ -x $bin/$t ]] || {
    echo "demo: error: $bin/$t missing; run 'make demo' (it builds the release tools)" >&2
    exit 1
  }
done
bin=$(cd "$bin" && pwd)

# A free port on 127.0.0.1: connecting is refused when nobody listens.
port=""
for _ in $(seq 50); do
  p=$((20000 + RANDOM % 30000))
  if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    port=$p
    break
  fi
done
[[ -n $port ]] || { echo "demo: error: no free port found" >&2; exit 1; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/sweepkit-demo.XXXXXX")
spec=$dir/llm-sim.spec
results=$dir/results.jsonl
# shellcheck disable=SC2317 # called by the EXIT trap
stop_server() {
  if [[ -s $spec.pid ]]; then
    kill "$(cat "$spec.pid")" 2>/dev/null || true
  fi
}
trap stop_server EXIT

# Load 1 s, warm up 0.5 s: a small stand-in for a model loading weights.
# The seed makes the simulated numbers the same on every run.
cat >"$spec" <<EOF
# llm-sim as a supervised process (svc-swap's process manager)
ExecStart=$bin/llm-sim --host 127.0.0.1 --port $port --model-name sim-llama-8b --load-time 1s --warmup-time 500ms --seed 42 --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1
TimeoutStopSec=10
Port=$port
EOF

banner() { printf '\n=== %s ===\n' "$*" >&2; }
banner "SIMULATED SERVER: llm-sim stands in for SGLang; no model runs, the numbers are not measurements"
echo "demo: spec $spec, results $results" >&2

t0=$SECONDS
rc=0
bash "$here/sweep.sh" \
  --bin-dir "$bin" \
  --spec "$spec" \
  --url "http://127.0.0.1:$port" \
  --server llm-sim \
  --expect-config \
  --param speculative-num-steps --values "$values" \
  --concurrency "$levels" \
  --load-arg --max-tokens --load-arg "$max_tokens" \
  --load-arg --input-tokens --load-arg 128 \
  --load-arg --ignore-eos \
  --load-arg --temperature --load-arg 0.2 \
  --load-arg --seed --load-arg 1 \
  --keep-winner \
  --results "$results" || rc=$?

banner "the pick, as a record a script can apply (summarize --format json)"
"$bin/summarize" --format json "$results" 2>/dev/null |
  sed -n 's/.*"best_config":\({[^}]*}\).*"plateau":\("[^"]*"\).*/best_config \1\nplateau     \2/p'
echo "applied to the spec by sweep --keep-winner:" >&2
grep '^ExecStart=' "$spec" >&2
banner "the report: one self-contained HTML page (summarize --report)"
report=$dir/report.html
if "$bin/summarize" --format json --pareto --report "$report" "$results" >/dev/null 2>&1 ||
  [[ -s $report ]]; then
  echo "demo: report $report" >&2
  echo "$report"
fi
banner "done in $((SECONDS - t0)) s; SIMULATED (llm-sim), results in $results"
exit "$rc"
