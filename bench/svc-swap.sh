#!/usr/bin/env bash
# svc-swap's overhead per config over SSH: N swaps of a process spec
# through a throw-away sshd on 127.0.0.1, against the same steps (stop the
# old server, wait until it is gone, edit the spec, start the new one, wait
# for its pid file) run as one plain `ssh` command per config, in the same
# run. The server is a shell that sleeps, so its own stop and load cost
# nothing and the difference is the tools' overhead. Prints a table and
# the ratio; exits 1 when svc-swap's overhead per config is 1.5 s or more.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${SWEEPKIT_BIN:-$PWD/target/release}"
N="${N:-10}"
SSHD=/usr/sbin/sshd
[[ -x $BIN/svc-swap ]] || { echo "bench: $BIN/svc-swap missing (make release)" >&2; exit 1; }
[[ -x $SSHD ]] || { echo "bench: $SSHD not installed" >&2; exit 1; }
OUT=$(mktemp -d)
cleanup() {
  [[ -f $OUT/sshd.pid ]] && kill "$(cat "$OUT/sshd.pid")" 2>/dev/null
  [[ -f $OUT/k.spec.pid ]] && kill -- "-$(cat "$OUT/k.spec.pid")" 2>/dev/null
  rm -rf "$OUT"
}
trap cleanup EXIT
mkdir -p /run/sshd 2>/dev/null || true
ssh-keygen -q -t ed25519 -N '' -f "$OUT/host" >/dev/null
ssh-keygen -q -t ed25519 -N '' -f "$OUT/client" >/dev/null
cp "$OUT/client.pub" "$OUT/authorized_keys"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat >"$OUT/sshd_config" <<EOF
ListenAddress 127.0.0.1:$PORT
HostKey $OUT/host
PidFile $OUT/sshd.pid
AuthorizedKeysFile $OUT/authorized_keys
StrictModes no
UsePAM no
PasswordAuthentication no
KbdInteractiveAuthentication no
MaxSessions 64
UseDNS no
EOF
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$OUT/host.pub")" >"$OUT/known_hosts"
"$SSHD" -f "$OUT/sshd_config"
for _ in $(seq 100); do [[ -s $OUT/sshd.pid ]] && break; sleep 0.05; done
USER_AT="$(id -un)@127.0.0.1"
SPEC="$OUT/k.spec"
printf 'ExecStart=/bin/sh -c "sleep 600" sleeper --k 0\nTimeoutStopSec=5\n' >"$SPEC"
SWAP=("$BIN/svc-swap" --ssh "$USER_AT:$PORT" --ssh-key "$OUT/client" --known-hosts "$OUT/known_hosts")
"${SWAP[@]}" --spec "$SPEC" --set k=0 >/dev/null 2>&1
SSH=(ssh -q -i "$OUT/client" -p "$PORT" -o UserKnownHostsFile="$OUT/known_hosts"
  -o StrictHostKeyChecking=yes -o BatchMode=yes -o IdentitiesOnly=yes "$(id -un)@127.0.0.1")
# The same steps as one far-side script: the least any SSH tool can do.
PLAIN='spec=$1 k=$2; pidf=$spec.pid; p=$(cat "$pidf")
env kill -s TERM -- "-$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.05; done
sed -i "s/--k [0-9]*/--k $k/" "$spec"; rm -f "$pidf"
setsid sh -c '"'"'echo $$ > "$0"; exec /bin/sh -c "sleep 600" sleeper --k "$1"'"'"' "$pidf" "$k" >/dev/null 2>&1 </dev/null &
while [ ! -s "$pidf" ]; do sleep 0.05; done'
now() { date +%s.%N; }
t0=$(now)
for i in $(seq 1 "$N"); do "${SWAP[@]}" --spec "$SPEC" --set "k=$i" >/dev/null 2>&1; done
t1=$(now)
for i in $(seq $((N + 1)) $((2 * N))); do "${SSH[@]}" sh -c "$(printf %q "$PLAIN")" sh "$SPEC" "$i"; done
t2=$(now)
python3 - "$t0" "$t1" "$t2" "$N" <<'PY'
import sys
t0, t1, t2, n = map(float, sys.argv[1:])
sw, pl = (t1 - t0) / n, (t2 - t1) / n
print(f"{'':28} {'s/config':>9}")
print(f"{'svc-swap over SSH':28} {sw:9.3f}")
print(f"{'plain ssh, one script':28} {pl:9.3f}")
print(f"{'overhead (svc-swap - plain)':28} {sw - pl:9.3f}")
print(f"{'ratio svc-swap / plain':28} {sw / pl:9.2f}")
sys.exit(0 if sw - pl < 1.5 else 1)
PY
