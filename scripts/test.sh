#!/usr/bin/env bash
# `make test`: lint and every test, with a missing prerequisite a failure.
# On a fresh machine most of the time is the real peers (llama-server's
# build, the vLLM and SGLang venvs: about 16 GB of downloads) and the Rust
# builds; they overlap here: scripts/real-peer.sh runs in the background
# while lint and the workspace build run, and the tests start once both are
# done. Prints each phase's time (where the time goes, issue 21).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
make=${MAKE:-make}
t0=$SECONDS
phase() { printf 'test: %s: %d s (at %d s)\n' "$1" "$2" "$((SECONDS - t0))" >&2; }

s=$SECONDS
"$make" deps
phase deps $((SECONDS - s))

mkdir -p target
peer_log=target/real-peer.log
# Its own time, not the wait for it: written by the background job.
peer_time=target/real-peer.seconds
rm -f "$peer_time"
(
  s=$SECONDS
  rc=0
  "$make" real-peer || rc=$?
  echo $((SECONDS - s)) >"$peer_time"
  exit "$rc"
) >"$peer_log" 2>&1 &
peer=$!
# Whatever happens below, the background build does not outlive this run.
trap 'kill "$peer" 2>/dev/null || true' EXIT

s=$SECONDS
"$make" lint
phase lint $((SECONDS - s))
s=$SECONDS
"$make" build
phase build $((SECONDS - s))

rc=0
wait "$peer" || rc=$?
trap - EXIT
cat "$peer_log" >&2
phase "real-peer (beside lint and build)" "$(cat "$peer_time" 2>/dev/null || echo 0)"
((rc == 0)) || { echo "test: error: make real-peer failed (exit $rc); log above" >&2; exit "$rc"; }

s=$SECONDS
rc=0
"$make" unit SWEEPKIT_REQUIRE_ALL=1 || rc=$?
phase unit $((SECONDS - s))
phase total $((SECONDS - t0))
exit "$rc"
