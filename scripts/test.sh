#!/usr/bin/env bash
# Installs the dependencies, builds cujit with its tests, and runs every test (GPU tests skip
# with a reason when no device is present). Usage: bash scripts/test.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
bash "$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCUJIT_BUILD_TESTS=ON \
  -DCUJIT_BUILD_SAMPLES=ON -DCUJIT_BUILD_BENCH=ON
cmake --build "$build" -j"$(nproc)"
# A private kernel cache, so tests never touch the user's.
CUJIT_CACHE_DIR="$(mktemp -d)"
export CUJIT_CACHE_DIR
trap 'rm -rf "$CUJIT_CACHE_DIR"' EXIT
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 900
