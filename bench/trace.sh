#!/usr/bin/env bash
# Trace replay's part of `make bench` (issue 35's Target; runs alone too):
# the same Mooncake-style trace (RATE req/s on average, Poisson gaps off
# the millisecond grid, shared prefix blocks) replayed against llm-sim
# --zero-delay by loadgen --trace and by `python -m sglang.bench_serving
# --dataset-name mooncake` (from $SWEEPKIT_CACHE/venv-sglang, installed
# by make real-peer; run offline on the local file with a word-level
# tokenizer) in the same run. For each: the send lag (actual minus the
# trace's time; loadgen's own load.workload.send_lag_*, bench_serving's
# measured by bench/sglang_mooncake_lag.py at its scheduler) and the client
# CPU (user + system of the process tree, /usr/bin/time). Each client also
# replays the trace's first request alone: its CPU is the start-up cost
# (bench_serving imports sglang, transformers and torch), so the table
# gives the ratio with and without it. Target: loadgen's lag p99 <= 1 ms
# and its CPU <= 1/5 of bench_serving's.
#
# The same trace for both: the same file, all N requests, the same
# timestamps (bench_serving's scheduler checked against the file by the
# wrapper), output_length tokens each with EOS ignored, both streaming
# from SGLang's native /generate (loadgen --endpoint generate,
# bench_serving --backend sglang). What differs: the prompt text.
# bench_serving ignores input_length and writes each hash id as the id
# followed by 128 "hi" words (sglang/benchmark/datasets/mooncake.py),
# plus "user: Round 1: " and a closing sentence (no chat template in the
# word-level tokenizer), about 268 tokens here; loadgen writes each hash
# id as a block of --block-size 128 words, input_length 256 tokens. Each
# warms up with one request before the trace (bench_serving then sleeps
# 1 s); neither counts it, both pay its CPU.
#
# Writes $OUT/results.md and prints it. Every run is bounded (timeout).
# Env: BIN or SWEEPKIT_BIN (default target/release), OUT, SWEEPKIT_CACHE,
# RATE (200), SECONDS_LONG (10), OLD_LOADGEN (another loadgen binary to
# put beside, e.g. one built before the send clock).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-${SWEEPKIT_BIN:-$ROOT/target/release}}
OUT=${OUT:-$ROOT/target/bench/trace}
CACHE=${SWEEPKIT_CACHE:-$HOME/.cache/sweepkit}
RATE=${RATE:-200}
SECONDS_LONG=${SECONDS_LONG:-10}
PY=$CACHE/venv-sglang/bin/python
BENCH=trace
# A client that has not finished in this time is stopped (and its row says
# so): 3x the trace plus bench_serving's start-up of about 15 s.
LIMIT=$((SECONDS_LONG * 3 + 120))
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

# The trace: Poisson arrivals at RATE for SECONDS_LONG s (seed 35),
# timestamps in ms with microsecond fractions (off tokio's 1 ms grid);
# 2 blocks of 128 tokens, the first shared by groups of 10, 8 out.
python3 - "$OUT/trace.jsonl" "$RATE" "$SECONDS_LONG" <<'PY'
import json, random, sys
path, rate, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rng, t, i = random.Random(35), 0.0, 0
with open(path, "w") as f:
    while t < secs * 1000:
        f.write(json.dumps({"timestamp": round(t, 3), "input_length": 256, "output_length": 8,
                            "hash_ids": [i // 10, 100000 + i]}) + "\n")
        t += rng.expovariate(rate) * 1000
        i += 1
PY
N=$(wc -l <"$OUT/trace.jsonl")
head -1 "$OUT/trace.jsonl" >"$OUT/trace-1.jsonl"

# bench_serving's tokenizer: a local word-level tokenizer.json (offline).
make_tokenizer "$OUT/tok"

# timed NAME CMD...: run CMD under the time limit and /usr/bin/time;
# NAME.out, NAME.err, NAME.time ("wall user sys"). False when it failed.
timed() {
    local name=$1
    shift
    /usr/bin/time -f "%e %U %S" -o "$OUT/$name.time" timeout -k 5 "$LIMIT" "$@" \
        >"$OUT/$name.out" 2>"$OUT/$name.err" && return 0
    log "$name failed (or ran past ${LIMIT}s): $*"
    tail -3 "$OUT/$name.err" >&2
    return 1
}

# run_loadgen NAME BINARY TRACE
run_loadgen() {
    start_sim --zero-delay
    timed "$1" "$2" --url "$URL" --trace "$3" --block-size 128 --endpoint generate \
        --no-upstream --quiet || true
}

# run_sglang NAME TRACE COUNT
run_sglang() {
    start_sim --zero-delay
    LAG_OUT="$OUT/$1.lag.json" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
        timed "$1" "$PY" "$ROOT/bench/sglang_mooncake_lag.py" \
        --backend sglang --base-url "$URL" --model sim-llama-8b --tokenizer "$OUT/tok" \
        --dataset-name mooncake --dataset-path "$2" --num-prompts "$3" \
        --use-trace-timestamps --disable-tqdm --ready-check-timeout-sec 20 \
        --output-file "$OUT/$1.result.jsonl" || true
}

clients=(loadgen)
load_before=$(cut -d' ' -f1 /proc/loadavg)
run_loadgen loadgen "$BIN/loadgen" "$OUT/trace.jsonl"
run_loadgen loadgen-1 "$BIN/loadgen" "$OUT/trace-1.jsonl"
if [ -n "${OLD_LOADGEN:-}" ]; then
    clients+=(old-loadgen)
    run_loadgen old-loadgen "$OLD_LOADGEN" "$OUT/trace.jsonl"
    run_loadgen old-loadgen-1 "$OLD_LOADGEN" "$OUT/trace-1.jsonl"
fi
if [ -x "$PY" ] && "$PY" -c 'import sglang.benchmark.serving' 2>/dev/null; then
    clients+=(sglang)
    run_sglang sglang "$OUT/trace.jsonl" "$N"
    run_sglang sglang-1 "$OUT/trace-1.jsonl" 1
else
    log "no SGLang in $CACHE/venv-sglang (make real-peer): bench_serving's row is missing"
fi
stop_sim
load_after=$(cut -d' ' -f1 /proc/loadavg)

python3 - "$OUT" "$N" "$RATE" "$load_before" "$load_after" "${clients[@]}" >"$OUT/results.md" <<'PY'
import json, os, re, sys
out, n, rate, lb, la, clients = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
label = {"loadgen": "loadgen", "old-loadgen": "loadgen (OLD_LOADGEN)",
         "sglang": "sglang.bench_serving (mooncake)"}
trace = [json.loads(l)["timestamp"] for l in open(f"{out}/trace.jsonl")]

def cpu(name):
    try:
        _, u, s = open(f"{out}/{name}.time").read().split()[-3:]
        return float(u) + float(s)
    except (OSError, ValueError):
        return None

def row(name):
    """completed, wall s, lag p50, lag p99, CPU s, start-up CPU s; or a reason."""
    try:
        wall = float(open(f"{out}/{name}.time").read().split()[-3])
        if name == "sglang":
            lag = json.load(open(f"{out}/sglang.lag.json"))
            # The wrapper's schedule is the file's: same count, same times.
            sched = lag["scheduled_ms"]
            if len(sched) != n or any(abs(a - (b - trace[0])) > 1e-6 for a, b in zip(sched, trace)):
                return "scheduled another trace than the file's"
            if lag["n"] != n:
                return f"sent {lag['n']} of the trace's {n} requests"
            m = re.search(r"Successful requests:\s+(\d+)", open(f"{out}/sglang.out").read())
            done, p50, p99 = int(m.group(1)), lag["p50_ms"], lag["p99_ms"]
        else:
            rec = [json.loads(l) for l in open(f"{out}/{name}.out") if l.strip()][-1]
            w = rec["load"]["workload"]
            done, p50, p99 = rec["counts"]["completed"], w["send_lag_p50_ms"], w["send_lag_p99_ms"]
    except (OSError, ValueError, KeyError, IndexError, AttributeError) as e:
        return f"no result ({type(e).__name__}: {e}; see {out}/{name}.err)"
    return done, wall, p50, p99, cpu(name), cpu(name + "-1")

rows = {c: row(c) for c in clients}
peer = rows.get("sglang") if isinstance(rows.get("sglang"), tuple) else None
print(f"#### Trace replay: {n} requests, Poisson at {rate} req/s, against llm-sim --zero-delay\n")
print(f"Load average (1 min) before {lb}, after {la}. Start-up CPU: the same client replaying the trace's first request alone.\n")
print("| client | completed | wall s | send lag p50 ms | send lag p99 ms | client CPU s | start-up CPU s | CPU / bench_serving's | without start-up |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for c in clients:
    r = rows[c]
    if not isinstance(r, tuple):
        print(f"| {label[c]} | {r} | | | | | | | |")
        continue
    done, wall, p50, p99, total, start = r
    ratio = margin = "-"
    if peer and total is not None and peer[4]:
        ratio = f"{total / peer[4]:.3f}"
        if start is not None and peer[5] is not None and peer[4] > peer[5]:
            margin = f"{max(total - start, 0) / (peer[4] - peer[5]):.3f}"
    fmt = lambda x, f: "-" if x is None else f % x
    print(f"| {label[c]} | {done} of {n} | {wall:.2f} | {p50:.3f} | {p99:.3f} | {fmt(total, '%.2f')} "
          f"| {fmt(start, '%.2f')} | {ratio} | {margin} |")
PY
cat "$OUT/results.md"
