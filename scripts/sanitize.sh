#!/usr/bin/env bash
# Builds cujit with sanitizers and runs the tests under them; no GPU needed (GPU tests skip
# themselves without a device, as in the main suite).
#
#   asan: build-asan/, AddressSanitizer + UndefinedBehaviorSanitizer (leak checking on), every
#         test of the main suite but install_consumer and package_deb (they build uninstrumented
#         programs against the instrumented libcujit, which ASan refuses to start).
#   tsan: build-tsan/, ThreadSanitizer, the multi-thread and multi-process tests of the cache,
#         the snippet analysis and the API (GPU ones skip without a device).
#
# Usage: bash scripts/sanitize.sh [asan|tsan|all] (default all). CI runs it after the main
# suite (scripts/test.sh with CUJIT_CI_SANITIZERS=1). CUJIT_ASAN_BUILD / CUJIT_TSAN_BUILD
# choose other build directories. Only cujit's own code is instrumented: the static
# clang/LLVM/SQLite archives, NVRTC and the CUDA driver are not.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
what="${1:-all}"
asan_build="${CUJIT_ASAN_BUILD:-$root/build-asan}"
tsan_build="${CUJIT_TSAN_BUILD:-$root/build-tsan}"
jobs="$(nproc)"

# -O1 -g1 (line tables only) keeps the instrumented build and its tests quick and the stacks
# readable.
configure() {
  cmake -S "$root" -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DCUJIT_SANITIZE="$2" \
    -DCUJIT_BUILD_TESTS=ON -DCUJIT_BUILD_SAMPLES=OFF -DCUJIT_BUILD_BENCH=OFF >/dev/null
}

# A private kernel cache, so tests never touch the user's.
CUJIT_CACHE_DIR="$(mktemp -d)"
export CUJIT_CACHE_DIR
trap 'rm -rf "$CUJIT_CACHE_DIR"' EXIT

run_asan() {
  echo "== sanitize: AddressSanitizer + UndefinedBehaviorSanitizer ($asan_build)"
  configure "$asan_build" "address,undefined"
  cmake --build "$asan_build" -j"$jobs"
  # protect_shadow_gap=0: the CUDA driver maps memory where ASan's shadow gap would be
  # (only matters on a GPU host). Leaks are reported at each test program's exit; none needs
  # a suppression today.
  ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:protect_shadow_gap=0:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    ctest --test-dir "$asan_build" -E '^(install_consumer|package_deb)$' --output-on-failure -j"$jobs" \
    --timeout 1800
}

run_tsan() {
  echo "== sanitize: ThreadSanitizer ($tsan_build)"
  configure "$tsan_build" "thread"
  cmake --build "$tsan_build" -j"$jobs" --target cujit_cache_tests cujit_codegen_tests \
    cujit_api_tests
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
  # The cache's tests that run threads, or processes sharing one database.
  local cache="Concurrency.*:KernelCache.Concurrent*:KernelCache.CompileErrorsPropagate*"
  cache+=":KernelCache.DamageSeenByManyThreads*:KernelCache.Prefetch*:CacheApi.Prefetch*"
  cache+=":KernelCache.ManifestFromConcurrentProcesses*:Warnings.*"
  cache+=":FaultInjection.WriterKilled*:FaultInjection.LockHeld*"
  # The fleet tier: its background publisher against a real redis-server.
  cache+=":Fleet.*:FleetHostile.*"
  # A process exiting, or forking, while prefetch()'s thread works.
  cache+=":PrefetchExit.*:ForkAfterPrefetch.*"
  # Each program under a time limit: a deadlock fails the step in minutes, not at CI's limit
  # (a forked child once hung on a lock copied from prefetch()'s thread).
  timeout 900 "$tsan_build/tests/cujit_cache_tests" --gtest_filter="$cache"
  # Concurrent clang analyses, and kernels defined and compiled from many threads.
  timeout 600 "$tsan_build/tests/cujit_codegen_tests" --gtest_filter='SnippetAnalysis.Concurrent*'
  timeout 600 "$tsan_build/tests/cujit_api_tests" --gtest_filter='ThreadSafety*'
}

case "$what" in
  asan) run_asan ;;
  tsan) run_tsan ;;
  all) run_asan && run_tsan ;;
  *)
    echo "usage: $0 [asan|tsan|all]" >&2
    exit 2
    ;;
esac
