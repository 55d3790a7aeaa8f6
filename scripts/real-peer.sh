#!/usr/bin/env bash
# Builds llama.cpp's llama-server and the test models into $SWEEPKIT_CACHE (placeholder; being built).
set -euo pipefail
echo "real-peer: not built yet" >&2
