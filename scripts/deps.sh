#!/usr/bin/env bash
# Install what sweepkit's tests need on a fresh Debian machine: shellcheck,
# a real sshd, systemd-nspawn, GNU parallel (sweep --hosts), podman and runc
# (svc-swap --container and wait-ready --container run real containers; podman
# 4.3 here needs runc, crun fails with "cgroups in hybrid mode not supported";
# testkit's nspawn containers boot none of the host's services, so podman
# cannot hold their boot up), podman-compose from PyPI (svc-swap --compose;
# Debian's 1.0.3 dates from 2022, PyPI's 1.x is maintained), and the Python
# packages that build the real llama-server and its test models; chromium
# renders summarize's --report in a headless browser test.
# Idempotent: quick when all is present.
set -euo pipefail

apt_pkgs=(shellcheck openssh-server systemd-container podman runc parallel iproute2 psmisc curl pkg-config libssl-dev g++ chromium)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py_pkgs=(cmake ninja gguf numpy podman-compose)
py_missing=()
for p in "${py_pkgs[@]}"; do
  python3 -m pip show -q "$p" >/dev/null 2>&1 || py_missing+=("$p")
done
if ((${#py_missing[@]})); then
  echo "deps: pip installing ${py_missing[*]}" >&2
  python3 -m pip install -q "${py_missing[@]}"
fi
