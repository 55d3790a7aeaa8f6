#!/usr/bin/env bash
# Install what sweepkit's tests need on a fresh Debian machine: shellcheck,
# a real sshd, systemd-nspawn, GNU parallel (sweep --hosts), podman and runc
# (svc-swap --container and wait-ready --container run real containers; podman
# 4.3 here needs runc, crun fails with "cgroups in hybrid mode not supported";
# testkit's nspawn containers boot none of the host's services, so podman
# cannot hold their boot up), podman-compose from PyPI (svc-swap --compose;
# Debian's 1.0.3 dates from 2022, PyPI's 1.x is maintained), and the Python
# packages that build the real llama-server and its test models; chromium
# renders summarize's --report in a headless browser test; docker.io gives
# the Docker engine tests a dockerd of their own (testkit/src/docker.rs
# starts one per test on a socket under /tmp, never the system's); slurmctld,
# slurmd, slurm-client and munge (22.05) give sweep --slurm a real cluster
# (testkit/src/slurm.rs starts munged and the daemons per test in a temp
# folder, no systemd).
# Idempotent: quick when all is present.
set -euo pipefail

apt_pkgs=(shellcheck openssh-server systemd-container podman runc parallel iproute2 psmisc curl pkg-config libssl-dev g++ chromium docker.io slurmctld slurmd slurm-client munge)
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
  # docker.io just installed enables a system dockerd on the default socket
  # where systemd runs; the tests want none there (an --engine-less swap of
  # a podman container would pick it), so it stays off until a user wants it.
  if [[ " ${missing[*]} " == *" docker.io "* && -d /run/systemd/system ]]; then
    $SUDO systemctl disable --now docker.socket docker.service >/dev/null 2>&1 || true
  fi
  # Likewise the Slurm and munge units: each test starts its own daemons.
  if [[ " ${missing[*]} " == *" slurmd "* && -d /run/systemd/system ]]; then
    $SUDO systemctl disable --now slurmd slurmctld munge >/dev/null 2>&1 || true
  fi
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
