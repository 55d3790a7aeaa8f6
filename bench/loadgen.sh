#!/usr/bin/env bash
# loadgen's part of `make bench` (called from bench/run.sh; runs alone too):
#  1. requests/s and tokens/s per client CPU-second against llm-sim
#     --zero-delay (and a real llama-server with a tiny model when
#     scripts/real-peer.sh built one), for loadgen, vllm-rs (the Rust client in the vllm
#     wheel), guidellm (the published Python client, in a venv under
#     $SWEEPKIT_CACHE, run offline with a local word-level tokenizer) and a
#     minimal Python aiohttp client, printed as ratios;
#  2. TTFT and ITL error against llm-sim --exact-ttft/--exact-itl at
#     concurrency 1..512;
#  3. loadgen's peak RSS at concurrency 1024.
# Writes $OUT/results.md (the table for bench/README.md) and prints it.
# Env: BIN or SWEEPKIT_BIN (default target/release), OUT, SWEEPKIT_CACHE,
# REQUESTS (throughput run size), CONCS (accuracy levels), SKIP_VLLM=1,
# SKIP_GUIDELLM=1.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-${SWEEPKIT_BIN:-$ROOT/target/release}}
OUT=${OUT:-$ROOT/target/bench/loadgen}
CACHE=${SWEEPKIT_CACHE:-$HOME/.cache/sweepkit}
REQUESTS=${REQUESTS:-4000}
CONCS=${CONCS:-"1 4 16 64 128 256 512"}
VLLM_VERSION=0.33.0
GUIDELLM_VERSION=0.8.1
BENCH=loadgen
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

# Run a command under /usr/bin/time; prints "wall user sys maxrss_kb".
timed() {
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/cmd.out" 2>"$OUT/cmd.err" || {
        log "failed: $*"; tail -5 "$OUT/cmd.err" >&2; return 1; }
    cat "$OUT/time.txt"
}

# Like timed, but a non-zero exit (some requests failed) still counts.
timed_ok() {
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/cmd.out" 2>"$OUT/cmd.err" || true
    [ -s "$OUT/time.txt" ] && tail -1 "$OUT/time.txt"
}

# The vllm-rs binary from the vllm wheel (cached); empty when unobtainable.
vllm_rs() {
    local dir="$CACHE/vllm-$VLLM_VERSION"
    if [ ! -x "$dir/vllm-rs" ] && [ "${SKIP_VLLM:-0}" != 1 ]; then
        mkdir -p "$dir"
        log "downloading the vllm $VLLM_VERSION wheel (about 340 MB) for vllm-rs"
        if pip download --no-deps "vllm==$VLLM_VERSION" -d "$dir" >"$OUT/pip.log" 2>&1; then
            (cd "$dir" && unzip -o -q vllm-"$VLLM_VERSION"-*.whl vllm/vllm-rs \
                && mv vllm/vllm-rs . && rmdir vllm && rm -f vllm-"$VLLM_VERSION"-*.whl) || true
        fi
    fi
    if [ -x "$dir/vllm-rs" ]; then echo "$dir/vllm-rs"; fi
}

# guidellm (the published Python peer) in its own venv, installed once
# (it pulls torch: a few GB); prints its path, nothing when unobtainable.
GL_WHY=""
guidellm_bin() {
    local venv="$CACHE/pyclient-venv"
    if [ ! -x "$venv/bin/guidellm" ] && [ "${SKIP_GUIDELLM:-0}" != 1 ]; then
        log "installing guidellm $GUIDELLM_VERSION into $venv (pulls torch, a few GB)"
        { python3 -m venv "$venv" && "$venv/bin/pip" install -q "guidellm==$GUIDELLM_VERSION"; } \
            >"$OUT/pip-guidellm.log" 2>&1 || true
    fi
    if [ -x "$venv/bin/guidellm" ]; then echo "$venv/bin/guidellm"; fi
}

# guidellm's synthetic prompts are corpus text re-tokenized and decoded: with
# [UNK] special every word decodes to nothing (empty prompt, every request
# rejected), so its copy of the word-level tokenizer keeps [UNK] plain text.
make_guidellm_tokenizer() {
    mkdir -p "$OUT/tok-guidellm"
    python3 - "$OUT/tok" "$OUT/tok-guidellm" <<'PY'
import json, shutil, sys
tok = json.load(open(sys.argv[1] + "/tokenizer.json"))
tok["added_tokens"] = []
json.dump(tok, open(sys.argv[2] + "/tokenizer.json", "w"))
shutil.copy(sys.argv[1] + "/tokenizer_config.json", sys.argv[2])
PY
}

py() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)"; }

# --- 1. throughput per client CPU-second ------------------------------------
# throughput SERVER_LABEL REQUESTS CONCURRENCY OUTPUT_TOKENS: appends table
# rows for loadgen, vllm-rs and the Python client against $URL.
rows=()
throughput() {
    local label=$1 n=$2 conc=$3 outtok=$4 model lw lu ls l_cpu l_tok l_ok l_fail
    model=$(curl -fs --max-time 5 "$URL/v1/models" | python3 -c 'import sys, json; print(json.load(sys.stdin)["data"][0]["id"])')
    log "throughput ($label): $n requests at concurrency $conc, $outtok tokens each"
    read -r lw lu ls _ < <(timed_ok "$BIN/loadgen" "$URL" -c "$conc" -n "$n" --max-tokens "$outtok" \
        --input-tokens 64 --ignore-eos --warmup 0 --no-upstream --quiet --no-tokenize)
    head -1 "$OUT/cmd.out" >"$OUT/loadgen-$label.json"
    l_cpu=$(echo "$lu + $ls" | bc -l)
    l_tok=$(py "$OUT/loadgen-$label.json" "d['counts']['output_tokens']")
    l_ok=$(py "$OUT/loadgen-$label.json" "d['counts']['completed']")
    l_fail=$(py "$OUT/loadgen-$label.json" "d['counts']['failed']")
    rows+=("| $label | loadgen | $l_ok | $l_fail | $lw | $l_cpu | $(per "$l_ok" "$l_cpu") | $(per "$l_tok" "$l_cpu") | 1.00 |")
    if [ -n "$VR" ]; then
        local vw vu vs v_cpu v_ok
        # vllm-rs's random dataset fixes prompt lengths through /tokenize,
        # which llama-server answers in another shape: use a JSONL dataset.
        python3 -c "import json
with open('$OUT/custom.jsonl', 'w') as f:
    for i in range($n): f.write(json.dumps({'prompt': ' '.join(f'w{(i * 7 + j) % 4999 + 1}' for j in range(64))}) + '\\n')"
        if read -r vw vu vs _ < <(timed_ok "$VR" bench serve --base-url "$URL" --model "$model" \
            --tokenizer "$OUT/tok" --dataset-name custom --dataset-path "$OUT/custom.jsonl" \
            --custom-output-len "$outtok" --num-prompts "$n" --max-concurrency "$conc" \
            --ignore-eos --disable-tqdm); then
            v_cpu=$(echo "$vu + $vs" | bc -l)
            v_ok=$(sed -n 's/^Successful requests: *\([0-9]*\).*/\1/p' "$OUT/cmd.out" | head -1)
            v_ok=${v_ok:-0}
            rows+=("| $label | vllm-rs $VLLM_VERSION | $v_ok | $((n - v_ok)) | $vw | $v_cpu | $(per "$v_ok" "$v_cpu") | $(per "$((v_ok * outtok))" "$v_cpu") | $(ratio "$l_ok" "$l_cpu" "$v_ok" "$v_cpu") |")
        fi
    else
        rows+=("| $label | vllm-rs | - | - | - | - | - | - | not obtainable (pip download failed) |")
    fi
    if python3 -c 'import aiohttp' 2>/dev/null; then
        local pw pu ps p_cpu p_tok p_ok
        if read -r pw pu ps _ < <(timed_ok python3 "$ROOT/bench/loadgen_pyclient.py" --url "$URL" \
            --model "$model" --concurrency "$conc" --requests "$n" --max-tokens "$outtok"); then
            p_cpu=$(echo "$pu + $ps" | bc -l)
            p_tok=$(py "$OUT/cmd.out" "d['tokens']")
            p_ok=$(py "$OUT/cmd.out" "d['requests']")
            rows+=("| $label | python aiohttp (minimal) | $p_ok | $(py "$OUT/cmd.out" "d['failed']") | $pw | $p_cpu | $(per "$p_ok" "$p_cpu") | $(per "$p_tok" "$p_cpu") | $(ratio "$l_ok" "$l_cpu" "$p_ok" "$p_cpu") |")
        fi
    fi
    # guidellm last: a run of it must not disturb the rows above.
    if [ -n "$GL" ]; then
        local gw gu gs g_cpu g_ok g_fail g_tok
        # Closed loop of $conc streams, $n requests; ignore_eos and max_tokens
        # come from output_tokens. Offline: local tokenizer, no hub.
        rm -f "$OUT/guidellm-$label.json"
        read -r gw gu gs _ < <(HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 \
            timed_ok "$GL" run \
            --backend "kind=openai_http,target=$URL,model=$model,request_format=/v1/completions,stream=true" \
            --profile "kind=concurrent,streams=$conc" --constraint "kind=max_requests,count=$n" \
            --tokenizer "kind=huggingface_auto,model=$OUT/tok-guidellm" \
            --data "kind=synthetic_text,prompt_tokens=64,output_tokens=$outtok" \
            --output "kind=json,path=$OUT/guidellm-$label.json" --disable-console-interactive) || true
        if [ -s "$OUT/guidellm-$label.json" ]; then
            g_cpu=$(echo "$gu + $gs" | bc -l)
            g_ok=$(py "$OUT/guidellm-$label.json" "d['benchmarks'][0]['metrics']['request_totals']['successful']")
            # Its own failure count; a run may report one request short of
            # max_requests (3999 of 4000 seen) without any error.
            g_fail=$(py "$OUT/guidellm-$label.json" "(lambda t: t['errored'] + t['incomplete'])(d['benchmarks'][0]['metrics']['request_totals'])")
            g_tok=$(py "$OUT/guidellm-$label.json" "int(d['benchmarks'][0]['metrics']['output_token_count']['successful']['total_sum'])")
            rows+=("| $label | guidellm $GUIDELLM_VERSION | $g_ok | $g_fail | $gw | $g_cpu | $(per "$g_ok" "$g_cpu") | $(per "$g_tok" "$g_cpu") | $(ratio "$l_ok" "$l_cpu" "$g_ok" "$g_cpu") |")
        else
            rows+=("| $label | guidellm $GUIDELLM_VERSION | - | - | - | - | - | - | failed (no JSON report; see $OUT/cmd.err) |")
        fi
    else
        rows+=("| $label | guidellm $GUIDELLM_VERSION | - | - | - | - | - | - | not obtainable (${GL_WHY:-skipped}) |")
    fi
}
per() { echo "$1 / $2" | bc -l | xargs printf %.0f; }
ratio() {
    if [ "$3" -gt 0 ]; then echo "($1 / $2) / ($3 / $4)" | bc -l | xargs printf %.2f; else echo "-"; fi
}

VR=$(vllm_rs)
GL=$(guidellm_bin)
[ -z "$GL" ] && [ -z "$GL_WHY" ] && [ "${SKIP_GUIDELLM:-0}" != 1 ] \
    && GL_WHY="pip install guidellm==$GUIDELLM_VERSION failed; see $OUT/pip-guidellm.log"
make_tokenizer "$OUT/tok"
[ -n "$GL" ] && make_guidellm_tokenizer
python3 -c 'import aiohttp' 2>/dev/null || pip install -q aiohttp >/dev/null 2>&1 || true

start_sim --zero-delay
throughput llm-sim "$REQUESTS" 64 64
stop_sim

# A real llama-server with a tiny model, when scripts/real-peer.sh built one.
if [ -f "$CACHE/env" ]; then
    # shellcheck disable=SC1091
    . "$CACHE/env"
    if [ -x "${LLAMA_SERVER:-}" ] && [ -f "${TINY_TARGET_GGUF:-}" ]; then
        LPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        "$LLAMA_SERVER" -m "$TINY_TARGET_GGUF" --host 127.0.0.1 --port "$LPORT" -np 8 -c 8192 \
            >"$OUT/llama.log" 2>&1 &
        SIM_PID=$!
        URL="http://127.0.0.1:$LPORT"
        if wait_healthy "$URL" 30; then
            throughput llama-server 100 8 16
        else
            log "llama-server did not become healthy in 30 s; its rows are missing"
            tail -3 "$OUT/llama.log" >&2
        fi
        stop_sim
    fi
fi

# --- 2. TTFT/ITL accuracy against exact timing ------------------------------
TTFT_MS=50
ITL_MS=10
acc=()
for c in $CONCS; do
    start_sim --exact-ttft "${TTFT_MS}ms" --exact-itl "${ITL_MS}ms"
    n=$((c * 2 > 64 ? c * 2 : 64))
    log "accuracy: concurrency $c, $n requests"
    "$BIN/loadgen" "$URL" -c "$c" -n "$n" --max-tokens 16 --ignore-eos --warmup "$c" \
        --requests-out "$OUT/acc-$c.req.jsonl" --no-upstream --quiet --no-tokenize \
        >"$OUT/acc-$c.json" 2>"$OUT/acc-$c.err" || true
    acc+=("$(python3 - "$OUT/acc-$c.json" "$OUT/acc-$c.req.jsonl" "$c" "$TTFT_MS" "$ITL_MS" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).readline())
c, t, i = sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
tt, it = d["ttft_ms"], d["itl_ms"]
# Client TTFT minus llm-sim's own on the wire (kernel receive stamp of the
# request to the completed write of the first token): what is left is the
# client's error plus loopback transfer, without the server's lateness
# (timer, scheduling on cores it shares with the client) that the nominal
# comparison includes.
diffs = sorted(r["ttft_ms"] - r["server_prompt_ms"] for r in map(json.loads, open(sys.argv[2]))
               if r.get("ok") and r.get("server_prompt_ms") is not None and r.get("ttft_ms") is not None)
def pct(v, q):
    if not v:
        return float("nan")
    h = (len(v) - 1) * q / 100
    lo = int(h)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (h - lo) * (v[hi] - v[lo])
print(f"| {c} | {tt['p50'] - t:+.3f} | {tt['p99'] - t:+.3f} | {pct(diffs, 50):+.3f} | {pct(diffs, 99):+.3f} "
      f"| {it['p50'] - i:+.3f} | {it['p99'] - i:+.3f} | {d['start_lag_ms']['p99']:.3f} |")
PY
)")
done

# --- 3. RSS at concurrency 1024 ----------------------------------------------
start_sim --zero-delay
log "RSS: concurrency 1024"
read -r _ _ _ rss_kb < <(timed "$BIN/loadgen" "$URL" -c 1024 -n 4096 --max-tokens 16 --warmup 0 \
    --no-upstream --quiet --no-tokenize)
stop_sim

{
    echo "### Throughput per client CPU-second"
    echo
    echo "llm-sim --zero-delay: c=64, 64 output tokens. llama-server (tiny model, 8 slots): c=8, 16 output tokens."
    echo "Per CPU-second figures count completed requests only."
    echo
    echo "| server | client | ok | failed | wall s | client CPU s | req per CPU-s | tok per CPU-s | loadgen ratio |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "### Timing error against llm-sim --exact-ttft ${TTFT_MS}ms --exact-itl ${ITL_MS}ms (measured - exact, ms)"
    echo
    echo "TTFT p50/p99: against the nominal 50 ms (server lateness included). TTFT vs wire: per request, client TTFT minus"
    echo "llm-sim's own TTFT on the wire (request's kernel receive stamp to the completed write of the first token): the client's error."
    echo
    echo "| concurrency | TTFT p50 | TTFT p99 | TTFT vs wire p50 | TTFT vs wire p99 | ITL p50 | ITL p99 | start lag p99 |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    printf '%s\n' "${acc[@]}"
    echo
    echo "### Memory"
    echo
    echo "loadgen peak RSS at concurrency 1024: $((rss_kb / 1024)) MB"
} | tee "$OUT/results.md"
