#!/usr/bin/env bash
# What sampling the server's /metrics costs the client (`make bench`, issue
# 44), in the same run against the same llm-sim (vLLM personality, whose
# /metrics loadgen reads: KV cache, queue, preemptions, spec counters):
#  1. client CPU of a loaded level (c=32, --duration) with scraping off
#     (--no-scrape), at 1 s (the default) and at 100 ms (ten times the
#     default rate: llm-sim's exposition is ~3 KB where a real vLLM's is
#     ~70 KB, so this stands in for a big one at 1 s);
#  2. TTFT p50 at c=1 with scraping off and at 1 s, llm-sim timing exact
#     (--exact-ttft 20ms), so any difference is the client's.
# Runs alternate (off, 1 s, 100 ms, ...) REPEATS times so drift on a
# shared machine hits each alike; each figure is the median over repeats.
# Targets: scraping at 1 s adds at most 5% client CPU; TTFT p50 at c=1
# moves by less than 0.5 ms or the repeats' own spread, whichever is
# larger. Exits 1 when one is missed. Env: BIN or SWEEPKIT_BIN (default
# target/release), OUT, REPEATS (default 5), DURATION (default 10s).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${BIN:-${SWEEPKIT_BIN:-$ROOT/target/release}}
OUT=${OUT:-$ROOT/target/bench/scrape}
REPEATS=${REPEATS:-5}
DURATION=${DURATION:-10s}
BENCH=scrape
mkdir -p "$OUT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
for t in llm-sim loadgen; do
    [ -x "$BIN/$t" ] || { log "$BIN/$t missing (make release)"; exit 1; }
done

# field FILE PATH: a number from loadgen's one bench record in FILE.
field() {
    python3 -c 'import json,sys
r=json.loads(open(sys.argv[1]).readline())
v=r
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"
}

# run NAME SCRAPE ARGS...: one loadgen level; its record in $OUT/NAME.json.
run() {
    local name=$1 scrape=$2
    shift 2
    local s=(--scrape-interval "$scrape")
    [ "$scrape" = off ] && s=(--no-scrape)
    "$BIN/loadgen" "$URL" --no-upstream --quiet --warmup 8 "${s[@]}" "$@" >"$OUT/$name.json" 2>"$OUT/$name.err" ||
        { log "loadgen failed ($name)"; cat "$OUT/$name.err" >&2; exit 1; }
}

start_sim --personality vllm --kv-capacity-tokens 1000000 \
    --speculative-config '{"method":"eagle","num_speculative_tokens":3}'
declare -A cpu ttft
for i in $(seq "$REPEATS"); do
    for s in off 1s 100ms; do
        run "cpu-$s-$i" "$s" -c 32 --duration "$DURATION" --max-tokens 64 --ignore-eos
        cpu[$s]+="$(field "$OUT/cpu-$s-$i.json" client_cpu_s) "
    done
done
stop_sim
start_sim --personality vllm --exact-ttft 20ms --exact-itl 5ms
for i in $(seq "$REPEATS"); do
    for s in off 1s; do
        run "ttft-$s-$i" "$s" -c 1 -n 40 --max-tokens 8 --ignore-eos
        ttft[$s]+="$(field "$OUT/ttft-$s-$i.json" ttft_ms.p50) "
    done
done
stop_sim
scrapes=$(field "$OUT/cpu-1s-1.json" server_metrics.scrapes)

python3 - "${cpu[off]}" "${cpu[1s]}" "${cpu[100ms]}" "${ttft[off]}" "${ttft[1s]}" "$DURATION" "$scrapes" <<'EOF' | tee "$OUT/results.md"
import statistics as st, sys
cpu_off, cpu_1s, cpu_100, t_off, t_1s = ([float(x) for x in a.split()] for a in sys.argv[1:6])
dur, scrapes = sys.argv[6], sys.argv[7]
med = st.median
spread = lambda xs: max(xs) - min(xs)
r1, r100 = med(cpu_1s) / med(cpu_off), med(cpu_100) / med(cpu_off)
dt = med(t_1s) - med(t_off)
noise = max(0.5, spread(t_off), spread(t_1s))
print(f"| scraping | client CPU s (c=32, {dur}, median of {len(cpu_off)}) | vs off | TTFT p50 ms (c=1) |")
print("|---|---:|---:|---:|")
print(f"| off | {med(cpu_off):.3f} | 1.000 | {med(t_off):.2f} |")
print(f"| every 1 s ({scrapes} scrapes a level) | {med(cpu_1s):.3f} | {r1:.3f} | {med(t_1s):.2f} |")
print(f"| every 100 ms | {med(cpu_100):.3f} | {r100:.3f} | - |")
print()
ok_cpu, ok_ttft = r1 <= 1.05, abs(dt) <= noise
print(f"target: client CPU at 1 s <= 1.05 x off: {r1:.3f} {'met' if ok_cpu else 'MISSED'}")
print(f"target: TTFT p50 change at c=1 within {noise:.2f} ms (0.5 ms or the repeats' spread): "
      f"{dt:+.2f} ms {'met' if ok_ttft else 'MISSED'}")
print(f"runs: CPU off {cpu_off}, 1 s {cpu_1s}, 100 ms {cpu_100}; TTFT off {t_off}, 1 s {t_1s}")
sys.exit(0 if ok_cpu and ok_ttft else 1)
EOF
