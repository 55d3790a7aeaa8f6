#!/usr/bin/env bash
# The --gpu checks on a real NVIDIA machine (bench/gpu/README.md): run by
# hand where one is lent; nothing in `make test` depends on it.
# Usage: bench/gpu/check.sh BIN_DIR OLD_BIN_DIR OUT_DIR
#   BIN_DIR: svc-swap, wait-ready, llm-sim, loadgen under test;
#   OLD_BIN_DIR: an earlier svc-swap to compare (may equal BIN_DIR).
# Writes nvidia-smi's raw output, each tool's records and a verdict file.
set -uo pipefail
bin=$(cd "$1" && pwd) old=$(cd "$2" && pwd) out=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
w=$(mktemp -d)
log() { printf '%s\n' "$*" | tee -a "$out/verdict.txt" >&2; }
smi_apps() { nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader; }

nvidia-smi >"$out/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader >"$out/query-gpu.txt" 2>&1
log "query-gpu: $(cat "$out/query-gpu.txt")"

# 1. --gpu: the old group's worker keeps 2 GiB for 4 s after SIGTERM.
gpu_case() { # NAME SVC_SWAP
  local name=$1 swap=$2 port=$((18600 + RANDOM % 300)) d=$w/$1
  mkdir -p "$d"
  printf 'ExecStart=%s %s --port %s --tag 0\nTimeoutStopSec=20\nPort=%s\n' \
    "$(command -v python3)" "$here/gpu_server.py" "$port" "$port" >"$d/s.spec"
  "$swap" --spec "$d/s.spec" --set tag=0 >"$d/first.json" 2>"$d/first.err"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  # Until the worker holds its 2 GiB (its SIGTERM handler is set by then).
  for _ in $(seq 150); do smi_apps | grep -Eq ', (2[0-9]{3}|[3-9][0-9]{3}) MiB' && break; sleep 0.2; done
  smi_apps >"$d/apps-before.txt"
  local t0=$SECONDS
  "$swap" --spec "$d/s.spec" --gpu --set tag=1 >"$d/swap.json" 2>"$d/swap.err"
  local rc=$? dt=$((SECONDS - t0))
  smi_apps >"$d/apps-after.txt"
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done
  log "$name: svc-swap exit $rc in ${dt}s"
  log "$name: compute apps before: $(tr '\n' ';' <"$d/apps-before.txt")"
  log "$name: compute apps right after the swap: $(tr '\n' ';' <"$d/apps-after.txt")"
  log "$name: stop: $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(json.dumps(r.get("stop")))' "$d/swap.json" 2>&1)"
  cp "$d/swap.json" "$out/$name-swap.json"
  cp "$d/swap.err" "$out/$name-swap.err"
  pid=$(cat "$d/s.spec.pid" 2>/dev/null) && kill -KILL -- "-$pid" 2>/dev/null
  sleep 5
}
gpu_case old "$old/svc-swap"
gpu_case new "$bin/svc-swap"

# 2. The hardware record: wait-ready and loadgen on llm-sim read nvidia-smi.
port=18950
printf 'ExecStart=%s --host 127.0.0.1 --port %s --load-time 1s --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1\nPort=%s\nTimeoutStopSec=5\n' \
  "$bin/llm-sim" "$port" "$port" >"$w/sim.spec"
"$bin/svc-swap" --spec "$w/sim.spec" --gpu --set speculative-num-steps=2 |
  "$bin/wait-ready" --server llm-sim "http://127.0.0.1:$port" --timeout 60s |
  "$bin/loadgen" --concurrency 1,2 --requests 4 --max-tokens 16 --temperature 0.7 >"$out/bench.jsonl" 2>"$out/pipeline.err"
log "pipeline: $(wc -l <"$out/bench.jsonl") bench records; host: $(head -1 "$out/bench.jsonl" | python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.readline())["server"]["host"]))' 2>&1)"
pid=$(cat "$w/sim.spec.pid" 2>/dev/null) && kill -- "-$pid" 2>/dev/null
true
