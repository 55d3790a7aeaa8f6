#!/usr/bin/env python3
"""Replay the adaptive decision offline under llm-sim's noise model.

bench/adaptive.sh takes a minute per seed; this takes a fraction of a
second. It reads a finished noise-free grid results file (one bench record
per value and level, e.g. from `KEEP=DIR bench/adaptive.sh`), and for each
seed plays sweep --adaptive's loop against `summarize --next`: every config
start appends that value's records with output_tok_per_s multiplied by one
factor drawn uniformly from 1 +/- NOISE (llm-sim --noise's model: one speed
factor per start, the same at every level; the grid pass and the adaptive
walk see the same factor for their k-th start, as in the bench). It prints
each seed's grid pick, adaptive pick and walk, and the totals. Use it to
check a change to the decision (tools/summarize/src/adapt.rs) or a knob on
many seeds before spending a bench run on it.

usage: adaptive_replay.py GRID.jsonl NOISE SEEDS [summarize --next args...]
  e.g. adaptive_replay.py grid-1-0.jsonl 0.05 100 --repeat-budget 6
  SUMMARIZE=path/to/summarize (default target/release/summarize)
"""
import copy
import json
import os
import random
import subprocess
import sys
import tempfile

KEY = "speculative-num-steps"
TRUTH = "4"


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__.split("\n\n")[-1])
    path, noise, seeds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    extra = sys.argv[4:]
    summ = os.environ.get("SUMMARIZE", "target/release/summarize")
    lines = [json.loads(l) for l in open(path) if l.strip()]
    origin = next(l for l in lines if l["type"] == "origin")
    bench = [l for l in lines if l["type"] == "bench"]
    vals = sorted({l["config"][KEY] for l in bench}, key=float)
    base = {v: [l for l in bench if l["config"][KEY] == v] for v in vals}
    space = KEY + "=" + ",".join(vals)

    def start(v, f, n):
        """Value v's records as config start number n at speed factor f."""
        out = []
        for r in base[v]:
            r = copy.deepcopy(r)
            r["throughput"]["output_tok_per_s"] *= f
            u = r
            while "upstream" in u:  # a distinct swap per start
                u = u["upstream"]
                if u.get("type") == "swap":
                    u["provenance"]["started_at"] = "2026-01-01T%02d:%02d:%02d.000Z" % (
                        n // 3600, n // 60 % 60, n % 60)
                    if u.get("swap_id"):
                        u["swap_id"] = "replay-%d" % n
            out.append(r)
        return out

    def summarize(recs, *args):
        fd, p = tempfile.mkstemp(suffix=".jsonl")
        with os.fdopen(fd, "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in recs)
        try:
            return subprocess.run([summ, *args, p], capture_output=True, text=True,
                                  check=True).stdout
        finally:
            os.unlink(p)

    def done_pick(out):
        done = next(l for l in out.splitlines() if l.startswith("done")).split("\t")
        return done[2].split("=")[1] if len(done) > 2 and done[2] else None

    g_ok = a_ok = s_ok = restarts = 0
    for s in range(1, seeds + 1):
        rng = random.Random(s)
        fs = [1 + rng.uniform(-noise, noise) for _ in range(4 * len(vals) + 40)]
        grid = [origin] + [r for i, v in enumerate(vals) for r in start(v, fs[i], i)]
        gp = done_pick(summarize(grid, "--next", space, "--repeat-budget", "0"))
        recs, walk = [origin], []
        while True:
            out = summarize(recs, "--next", space, *extra)
            todo = [l.split("\t")[1].split("=")[1] for l in out.splitlines()
                    if l.startswith("measure")]
            if not todo:
                break
            # sweep --adaptive starts only the first and asks again.
            recs += start(todo[0], fs[len(walk)], len(walk))
            walk.append(todo[0])
        ap = done_pick(out)
        # What the user gets: summarize's own pick of the results file
        # (sweep --keep-winner applies it).
        sp = json.loads(summarize(recs, "--format", "json")).get("best_config", {}).get(KEY)
        g_ok += gp == TRUTH
        a_ok += ap == TRUTH
        s_ok += sp == TRUTH
        restarts += len(walk)
        print(f"seed {s}: grid {gp} adaptive {ap} (summarize {sp}) restarts {len(walk)} walk {','.join(walk)}")
    print(f"noise {noise:g}: picks right: grid {g_ok}/{seeds}, adaptive {a_ok}/{seeds}"
          f" (summarize's pick of the adaptive results {s_ok}/{seeds});"
          f" adaptive restarts {restarts} (grid {seeds * len(vals)})")


if __name__ == "__main__":
    main()
