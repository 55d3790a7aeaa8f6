#!/usr/bin/env bash
# summarize --compare against what users do by hand (issue 43): on llm-sim
# with --noise 10% (each start draws one speed in 1 +/- 10%), STARTS fresh
# starts a side, TRIALS times. Prints, for `summarize --compare` at its
# default settings (95% intervals, Welch's t over the starts) and for the
# hand rule "the medians of the starts differ by more than 5%":
#   - the A/A false-positive rate: the same config on both sides (other
#     seeds), share of cells called better or worse;
#   - the power at each slowdown of the decode step (--step-time raised
#     by PCT): share of the decode cells (TPOT p50, E2E p50, output tok/s at
#     each level) called worse; and the smallest slowdown detected in at
#     least 95% of them.
# Settings: TRIALS (20), STARTS (3), NOISE (10%), STEP (2ms), SLOWDOWNS
# ("10 20 30 40 50": tried in order until one reaches 95%), SEED (1).
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=compare
BIN=${SWEEPKIT_BIN:-$PWD/target/release}
[[ -x $BIN/llm-sim ]] || BIN=$PWD/target/debug
OUT=$(mktemp -d)
# shellcheck source=bench/lib.sh
source bench/lib.sh
trap 'stop_sim; rm -rf "$OUT"' EXIT
trials=${TRIALS:-20} starts=${STARTS:-3} noise=${NOISE:-10%} step=${STEP:-2ms}
slowdowns=${SLOWDOWNS:-10 20 30 40 50} seed=${SEED:-1}
step_us=$(python3 -c "print(round(float('${step%ms}') * 1000))")

# bench_start SEED STEP_US LABEL >> FILE: one fresh start, two levels.
bench_start() {
    start_sim --seed "$1" --noise "$noise" --step-time "${2}us" \
        --per-seq-time 0s --prefill-per-token 0s --eos-prob 0
    "$BIN/loadgen" --url "$URL" --no-upstream --quiet --label "$3" \
        --concurrency 1,8 --requests 16 --max-tokens 16 --input-tokens 16 --warmup 1
    stop_sim
}

# trial N PCT: STARTS starts a side, alternating; B's step PCT% longer.
trial() {
    local n=$1 pct=$2 s slow
    slow=$(python3 -c "print(round($step_us * (1 + $pct / 100)))")
    : >"$OUT/a.jsonl"
    : >"$OUT/b.jsonl"
    for s in $(seq 1 "$starts"); do
        bench_start $((seed * 100000 + n * 100 + s)) "$step_us" A >>"$OUT/a.jsonl"
        bench_start $((seed * 100000 + n * 100 + 50 + s)) "$slow" B >>"$OUT/b.jsonl"
    done
    "$BIN/summarize" --compare "$OUT/a.jsonl" "$OUT/b.jsonl" --format json >"$OUT/cmp.json"
    # One line per decision: METHOD METRIC VERDICT.
    python3 - "$OUT/a.jsonl" "$OUT/b.jsonl" "$OUT/cmp.json" <<'EOF'
import json, statistics, sys
a, b, cmp = sys.argv[1:4]
def runs(path):
    out = {}
    for line in open(path):
        r = json.loads(line)
        lvl = r["load"]["concurrency"]
        for m, v in [("throughput.output_tok_per_s", r["throughput"]["output_tok_per_s"]),
                     ("ttft_ms.p50", r["ttft_ms"]["p50"]), ("ttft_ms.p99", r["ttft_ms"]["p99"]),
                     ("tpot_ms.p50", r["tpot_ms"]["p50"]), ("itl_ms.p99", r["itl_ms"]["p99"]),
                     ("e2e_ms.p50", r["e2e_ms"]["p50"])]:
            out.setdefault((lvl, m), []).append(v)
    return out
ra, rb = runs(a), runs(b)
for row in json.load(open(cmp))["rows"]:
    v = row["verdict"]
    if v in ("not_comparable", "noise_unknown"):
        continue
    print("compare", row["metric"], v)
    key = (int(row["level"][2:]), row["metric"])
    ma, mb = statistics.median(ra[key]), statistics.median(rb[key])
    ch = 100 * (mb - ma) / ma
    higher_better = row["metric"].startswith("throughput")
    if abs(ch) <= 5:
        hand = "no_change"
    elif (ch > 0) == higher_better:
        hand = "better"
    else:
        hand = "worse"
    print("median5", row["metric"], hand)
EOF
}

decode="tpot_ms.p50|e2e_ms.p50|throughput.output_tok_per_s"
# rate FILE METHOD WHAT: share (%) of METHOD's cells that are WHAT
# (flagged: better or worse over all cells; worse: over the decode cells).
rate() {
    awk -v m="$2" -v what="$3" -v dec="$decode" '
        $1 != m { next }
        what == "flagged" { n++; k += ($3 != "no_change") }
        what == "worse" && $2 ~ "^(" dec ")$" { n++; k += ($3 == "worse") }
        END { if (n) printf "%.1f%% (%d of %d)", 100 * k / n, k, n; else printf "-" }' "$1"
}

log "llm-sim --noise $noise, step $step, $starts starts a side, $trials trials a row; binaries $BIN"
: >"$OUT/aa.txt"
for n in $(seq 1 "$trials"); do trial "$n" 0 >>"$OUT/aa.txt"; done
printf '%-34s %-24s %s\n' "" "summarize --compare" "medians, fixed 5%"
printf '%-34s %-24s %s\n' "A/A false positives" "$(rate "$OUT/aa.txt" compare flagged)" "$(rate "$OUT/aa.txt" median5 flagged)"
found_c="" found_m=""
for pct in $slowdowns; do
    : >"$OUT/s.txt"
    for n in $(seq 1 "$trials"); do trial "$n" "$pct" >>"$OUT/s.txt"; done
    c=$(rate "$OUT/s.txt" compare worse) m=$(rate "$OUT/s.txt" median5 worse)
    printf '%-34s %-24s %s\n' "step +$pct%: decode cells worse" "$c" "$m"
    [[ -z $found_c ]] && awk -v x="${c%%%*}" 'BEGIN { exit !(x >= 95) }' && found_c=$pct
    [[ -z $found_m ]] && awk -v x="${m%%%*}" 'BEGIN { exit !(x >= 95) }' && found_m=$pct
    [[ -n $found_c && -n $found_m ]] && break
done
found() { if [[ -n $1 ]]; then echo "$1%"; else echo "above the last tried"; fi; }
printf '%-34s %-24s %s\n' "smallest slowdown at 95% power" "$(found "$found_c")" "$(found "$found_m")"
