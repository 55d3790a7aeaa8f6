# shellcheck shell=bash
# What bench/loadgen.sh and bench/trace.sh share, sourced by both: the
# llm-sim server under test (start, health wait, stop, all bounded) and the
# offline word-level tokenizer the Python peers need. The sourcing script
# sets BENCH (its name in messages), BIN (the release binaries) and OUT
# (its output folder) first.

SIM_PID=""

log() { echo "bench/$BENCH: $*" >&2; }

# Stop the server under test (llm-sim, or llama-server started with
# SIM_PID set), if one runs. Also the EXIT trap.
stop_sim() {
    if [ -n "$SIM_PID" ]; then
        kill "$SIM_PID" 2>/dev/null || true
        wait "$SIM_PID" 2>/dev/null || true
        SIM_PID=""
    fi
}
trap stop_sim EXIT

# wait_healthy URL SECONDS: poll URL/health until it answers 200; false
# after SECONDS. Each probe is capped at 2 s, so the wait is bounded.
wait_healthy() {
    local url=$1 end=$((SECONDS + $2))
    while [ "$SECONDS" -lt "$end" ]; do
        curl -fs --max-time 2 "$url/health" >/dev/null 2>&1 && return 0
        sleep 0.05
    done
    return 1
}

# start_sim ARGS...: llm-sim with ARGS on a free port; sets PORT and URL.
# --health-probe-time 0s: llm-sim's SGLang /health takes a generated token
# and 1 s by default, as SGLang's does; a bench only needs to know it is
# up (a 1 s probe under curl --max-time 1 never succeeded: the health wait
# spun for 200 probes, the stall of the first trace bench runs).
start_sim() {
    stop_sim
    rm -f "$OUT/sim.out" # a stale port line would win the race below
    "$BIN/llm-sim" --host 127.0.0.1 --port 0 --load-time 0s --warmup-time 0s \
        --health-probe-time 0s --max-running-requests 4096 "$@" \
        >"$OUT/sim.out" 2>"$OUT/sim.err" &
    SIM_PID=$!
    local i
    for i in $(seq 100); do
        [ -s "$OUT/sim.out" ] && break
        [ "$i" -eq 100 ] && { log "llm-sim printed no port in 5 s"; cat "$OUT/sim.err" >&2; exit 1; }
        sleep 0.05
    done
    PORT=$(head -1 "$OUT/sim.out" | python3 -c 'import sys, json; print(json.load(sys.stdin)["port"])')
    URL="http://127.0.0.1:$PORT"
    wait_healthy "$URL" 20 && return 0
    log "llm-sim did not become healthy in 20 s"; cat "$OUT/sim.err" >&2; exit 1
}

# make_tokenizer DIR: a word-level tokenizer.json for the peers that need
# one (vllm-rs's datasets, bench_serving, guidellm), loaded offline: no
# model may be downloaded, and llm-sim ignores token identity.
make_tokenizer() {
    mkdir -p "$1"
    python3 - "$1" <<'PY'
import json, sys
words = ["[UNK]"] + [f"w{i}" for i in range(1, 5000)]
tok = {"version": "1.0", "truncation": None, "padding": None,
       "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": False, "lstrip": False,
                         "rstrip": False, "normalized": False, "special": True}],
       "normalizer": None, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
       "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
       "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(words)}, "unk_token": "[UNK]"}}
json.dump(tok, open(sys.argv[1] + "/tokenizer.json", "w"))
json.dump({"model_max_length": 1000000}, open(sys.argv[1] + "/tokenizer_config.json", "w"))
PY
}

# run_bench_test TEST NAME PREFIXES: build, then run the #[ignore]d
# benchmark NAME of tests/tests/TEST.rs (bench/fleet.sh, bench/slurm.sh)
# and print its lines that start with one of PREFIXES (`bench|fleet`); a
# failed run shows why (which sweep, its exit code and its stderr) and
# keeps its log.
run_bench_test() {
    cargo build -q --workspace
    uptime
    local log rc=0
    log=$(mktemp "${TMPDIR:-/tmp}/$1-bench.XXXXXX")
    cargo test -q -p sweepkit-tests --test "$1" -- --ignored --nocapture "$2" >"$log" 2>&1 || rc=$?
    grep -E "^($3):" "$log" || true
    ((rc == 0)) || { grep -v -E '^ +([0-9]+: |at )' "$log" | tail -n 60; echo "log: $log"; return "$rc"; }
    rm -f "$log"
}
