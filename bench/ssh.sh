#!/usr/bin/env bash
# The SSH transport's tunnel: 40 probe-style GETs, each on a fresh
# connection, through a real sshd on 127.0.0.1 (target: under 1.2 s; 2 s
# before the pump set TCP_QUICKACK). A wall-clock figure, so it is measured
# here and not asserted by `make test` on a shared machine. Needs sshd.
set -euo pipefail
cd "$(dirname "$0")/.."
uptime
log=$(mktemp "${TMPDIR:-/tmp}/ssh-bench.XXXXXX")
rc=0
cargo test -q -p sweepkit --features "ssh cli" --test ssh -- --ignored --nocapture bench_forty_tunnelled_gets >"$log" 2>&1 || rc=$?
grep -E '^bench:' "$log" || true
((rc == 0)) || { tail -n 40 "$log"; echo "log: $log"; exit "$rc"; }
rm -f "$log"
