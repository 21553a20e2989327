#!/usr/bin/env bash
# Installs the dependencies, builds cujit with its tests, and runs every test (GPU tests skip
# with a reason when no device is present), then fuzzes briefly (scripts/fuzz.sh).
# Usage: bash scripts/test.sh [build-dir]
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
# Then a short fuzzing run of every libFuzzer target (scripts/fuzz.sh, tests/fuzz/README.md):
# CUJIT_CI_FUZZ_SECONDS per target, default 30 (with the ~3.5 min build of the fuzzers on two
# cores, about 4.5 min in all); 0 skips it.
fuzz_seconds="${CUJIT_CI_FUZZ_SECONDS:-30}"
if [[ $fuzz_seconds == 0 ]]; then
  echo "test.sh: fuzzing skipped (CUJIT_CI_FUZZ_SECONDS=0)"
elif ! command -v clang++-14 >/dev/null ||
  ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "test.sh: fuzzing skipped: clang-14 and libclang-rt-14-dev (libFuzzer) are not installed"
else
  CUJIT_FUZZ_BUILD_DIR="$build-fuzz" bash "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi
# CI (.ci/run) sets CUJIT_CI_SANITIZERS=1: the suite again under ASan+UBSan, and the
# multi-thread tests under TSan (scripts/sanitize.sh; about 6.5 min more on two cores).
if [[ ${CUJIT_CI_SANITIZERS:-0} == 1 ]]; then
  CUJIT_ASAN_BUILD="$build-asan" CUJIT_TSAN_BUILD="$build-tsan" bash "$root/scripts/sanitize.sh"
fi
