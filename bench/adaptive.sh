#!/usr/bin/env bash
# Adaptive sweep vs the full grid, in the same run, on llm-sim's
# campaign-shaped curve (speculative-num-steps 1..10, levels c=1,4,16,32,64).
# First without noise: restarts, requests and wall time of each, and the
# pick. Then with llm-sim --noise (seeded, one speed draw per config start)
# for SEEDS seeds: how often each picks the noise-free truth (steps=4).
# Targets (issue 14): adaptive picks steps=4 with <= 60% of the grid's
# restarts and <= 50% of its requests; with noise, >= 19 of 20 seeds right
# and at least as often as one full-grid pass. Exits 1 when one is missed.
#
# The curve, and why each setting (measured with the release build on the
# shared 2-core VM; bench/README.md "adaptive sweep" has the figures):
# - loadgen --temperature 0: llm-sim's acceptance is P x (1 - 0.3 x
#   min(T, 1)); at its default temperature P = 0.9 drops to 0.63 and the
#   tokens per step flatten after steps=3 (1.63 ... 2.45). At T = 0 they are
#   1.9, 2.71, 3.44, 4.10, 4.2 for steps 1..5: the campaign's shape (123,
#   186, 234, 277, 282 tok/s: +51%, then a plateau after steps=4). EAGLE
#   campaigns are run greedy, so this is also the realistic setting.
# - --step-time 3ms, --max-tokens 32: with 2 ms steps and 16 tokens the
#   per-request overhead and the partial last step flattened c=1 (steps
#   3/4/5 within 5%); 32 tokens of 3 ms steps leave steps 4 ~15% above 3.
# - --draft-step-time 200us (6.7% of a step per draft step): an EAGLE draft
#   step (one decoder layer plus the LM head, Li et al. 2024, "EAGLE") costs
#   a few to ~10% of a target pass. With llm-sim's default 25us steps 5
#   still gained ~2% at c=1 (right at the 2% plateau threshold) although
#   its extra draft token is nearly never accepted (horizon 4); at 200us
#   steps 5 is ~3% behind steps 4 at c=1..16, and steps 4 still ~13%
#   ahead of steps 3 at c=1.
# - --kv-capacity-tokens 71680 = 32 x (128 prompt + 32 output + 4 x 512
#   speculative KV per step) + slack, --max-running-requests 32: steps <= 4
#   run 32 requests at once, steps 5 only 26 and steps 10 only 13, so past
#   steps=4 the higher levels lose 15-20%. The cap of 32 (operators set
#   one; SGLang's speculative default is 48) keeps steps <= 3 from running
#   more requests than steps 4 at c=64. Steps=4 then wins the weighted
#   objective by ~7-9% over steps 5 and ~7% over steps 3, above the 5%
#   noise margin and this machine's ~1-3% run-to-run spread.
# - -n 64 per level: c=64 then runs two full waves at steps 4 and three at
#   steps 5 (fewer requests would hide the KV limit at c=32 and c=64).
# - --until-stable 5 --min-requests 16: c=1 is half of a config's time
#   (64 requests x 37 ms); its throughput is known to 5% after 21-61
#   requests for steps 1..5, while steps >= 6 (more spread per request)
#   run to 64. The higher levels run all 64: in a
#   lock-step closed loop their completions come in waves and batch means
#   need ten batches longer than a wave (stability.rs), more than 64.
#   Grid and adaptive use the same loadgen settings (same precision).
# - --noise NOISE (default 5%): see bench/README.md; the factor is uniform
#   in 1 +/- NOISE per start (sd NOISE/sqrt(3), ~2.9% at 5%).
# Time: a grid pass ~40 s, an adaptive one ~20 s (up to ~35 s with
# repeats) on the 2-core VM, so SEEDS=20 takes 20-25 minutes quiet (about
# 100 s a seed, over 30 minutes, with other builds running).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${SWEEPKIT_BIN:-$PWD/target/release}"
SEEDS="${SEEDS:-20}"
NOISE="${NOISE:-5%}"
TRUTH=4
for t in llm-sim svc-swap wait-ready loadgen summarize; do
  [[ -x $BIN/$t ]] || { echo "bench: $BIN/$t missing (make release)" >&2; exit 1; }
done
# loadgen's settings, the same for the grid and the adaptive sweep.
LOAD=()
for a in --max-tokens 32 --ignore-eos --temperature 0 -n 64 --until-stable 5 --min-requests 16; do
  LOAD+=(--load-arg "$a")
done
OUT=$(mktemp -d)
cleanup() {
  [[ -f $OUT/s.spec.pid ]] && kill "$(cat "$OUT/s.spec.pid")" 2>/dev/null
  rm -rf "$OUT"
}
trap cleanup EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# One sweep: MODE (grid|adaptive) SEED NOISE -> "restarts requests wall_s pick"
sweep_once() {
  local mode=$1 seed=$2 noise=$3 res="$OUT/$1-$2.jsonl" t0 t1 extra=()
  rm -f "$res" "$OUT/starts"
  [[ -f $OUT/s.spec.pid ]] && kill "$(cat "$OUT/s.spec.pid")" 2>/dev/null || true
  cat >"$OUT/s.spec" <<EOF
ExecStart=$BIN/llm-sim --host 127.0.0.1 --port $PORT --load-time 100ms --warmup-time 50ms --health-probe-time 10ms --seed $seed --noise $noise --noise-counter $OUT/starts --kv-capacity-tokens 71680 --max-running-requests 32 --step-time 3ms --draft-step-time 200us --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 4
TimeoutStopSec=10
Port=$PORT
EOF
  [[ $mode == adaptive ]] && extra=(--adaptive)
  t0=$(date +%s.%N)
  bash scripts/sweep.sh --bin-dir "$BIN" -q --spec "$OUT/s.spec" --url "http://127.0.0.1:$PORT" \
    --server llm-sim --results "$res" --param speculative-num-steps --values 1,2,3,4,5,6,7,8,9,10 \
    "${extra[@]}" --concurrency 1,4,16,32,64 "${LOAD[@]}" --load-arg --seed --load-arg "$seed" \
    >/dev/null 2>"$OUT/err" || { cat "$OUT/err" >&2; return 1; }
  t1=$(date +%s.%N)
  # KEEP=DIR keeps each results file (MODE-SEED-NOISE.jsonl) for a look
  # with summarize, e.g. summarize --next on its prefixes.
  [[ -z ${KEEP:-} ]] || cp "$res" "$KEEP/$mode-$seed-$noise.jsonl"
  local next cost pick
  # The cost comes from --next with no repeat budget, which answers "done"
  # on a finished results file with the cost line and the search's best.
  # The pick is summarize's own (what sweep --keep-winner applies); the
  # search ranks on the same scores (summarize(1) "Cell score": noise
  # moderated towards the level's), so the two must agree: a difference
  # is reported as a bug.
  next=$("$BIN/summarize" --next speculative-num-steps=1,2,3,4,5,6,7,8,9,10 --repeat-budget 0 "$res" 2>/dev/null || true)
  cost=$(grep "^cost" <<<"$next" || true)
  pick=$("$BIN/summarize" --format json "$res" 2>/dev/null | jq -r '.best_config["speculative-num-steps"] // "none"')
  local best
  best=$(sed -n 's/^done\t[a-z]*\tspeculative-num-steps=//p' <<<"$next")
  [[ $best == "$pick" ]] || echo "bench: $mode seed $seed: the search's best ($best) is not summarize's pick ($pick)" >&2
  local restarts requests
  restarts=$(tr '\t' '\n' <<<"$cost" | sed -n 's/^restarts=//p')
  requests=$(tr '\t' '\n' <<<"$cost" | sed -n 's/^requests=//p')
  printf '%s %s %.1f %s\n' "$restarts" "$requests" "$(echo "$t1 - $t0" | bc)" "$pick"
}

status=0
read -r g_re g_rq g_w g_p < <(sweep_once grid 1 0)
read -r a_re a_rq a_w a_p < <(sweep_once adaptive 1 0)
echo "## adaptive vs full grid, no noise (llm-sim campaign curve)"
echo
echo "| run | restarts | requests | wall s | pick | right |"
echo "|---|---:|---:|---:|---:|---|"
echo "| full grid | $g_re | $g_rq | $g_w | steps=$g_p | $([[ $g_p == "$TRUTH" ]] && echo yes || echo no) |"
echo "| adaptive | $a_re | $a_rq | $a_w | steps=$a_p | $([[ $a_p == "$TRUTH" ]] && echo yes || echo no) |"
r_re=$(echo "scale=3; $a_re / $g_re" | bc)
r_rq=$(echo "scale=3; $a_rq / $g_rq" | bc)
r_w=$(echo "scale=3; $a_w / $g_w" | bc)
echo "| adaptive / grid | $r_re | $r_rq | $r_w | | |"
[[ $a_p == "$TRUTH" && $g_p == "$TRUTH" ]] || status=1
(($(echo "$r_re <= 0.60" | bc))) || status=1
(($(echo "$r_rq <= 0.50" | bc))) || status=1

echo
echo "## with llm-sim --noise $NOISE, $SEEDS seeds"
echo
echo "| seed | grid pick | adaptive pick | grid requests | adaptive restarts | adaptive requests | grid s | adaptive s |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
g_ok=0 a_ok=0 a_re_sum=0 a_rq_sum=0 g_re_sum=0 g_rq_sum=0 g_w_sum=0 a_w_sum=0
for ((s = 1; s <= SEEDS; s++)); do
  read -r gre grq gw gp < <(sweep_once grid "$s" "$NOISE")
  read -r are arq aw ap < <(sweep_once adaptive "$s" "$NOISE")
  [[ $gp == "$TRUTH" ]] && g_ok=$((g_ok + 1))
  [[ $ap == "$TRUTH" ]] && a_ok=$((a_ok + 1))
  a_re_sum=$((a_re_sum + are)) a_rq_sum=$((a_rq_sum + arq))
  g_re_sum=$((g_re_sum + gre)) g_rq_sum=$((g_rq_sum + grq))
  g_w_sum=$(echo "$g_w_sum + $gw" | bc) a_w_sum=$(echo "$a_w_sum + $aw" | bc)
  echo "| $s | $gp | $ap | $grq | $are | $arq | $gw | $aw |"
done
echo
echo "picks right: full grid (one pass) $g_ok/$SEEDS, adaptive $a_ok/$SEEDS;" \
  "restarts $a_re_sum vs $g_re_sum, requests $a_rq_sum vs $g_rq_sum," \
  "wall s $a_w_sum vs $g_w_sum"
echo "noise-free targets (pick, restarts <= 60%, requests <= 50%):" \
  "$([[ $status == 0 ]] && echo met || echo MISSED)"
((a_ok * 20 >= 19 * SEEDS && a_ok >= g_ok)) || status=1
echo "all targets: $([[ $status == 0 ]] && echo met || echo MISSED) (bench took $SECONDS s)"
exit "$status"
