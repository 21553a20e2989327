#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang-14 (address and undefined-behaviour
# sanitizers) in their own build directory, and runs each on a copy of its seed corpus for a
# bounded time, as many at once as there are cores. Fails on any crash, leak, timeout,
# out-of-memory or sanitizer report, and keeps the failing inputs in BUILD/fuzz-artifacts.
# Usage: bash scripts/fuzz.sh [seconds-per-target]   (default 45; 0: build only)
# Environment: CUJIT_FUZZ_BUILD_DIR (default build-fuzz), CUJIT_FUZZ_TARGETS (default
# "signature snippet record manifest remote"), CUJIT_FUZZ_JOBS (targets run at once, default nproc).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
seconds="${1:-45}"
build="${CUJIT_FUZZ_BUILD_DIR:-$root/build-fuzz}"
read -r -a targets <<<"${CUJIT_FUZZ_TARGETS:-signature snippet record manifest remote}"
jobs="${CUJIT_FUZZ_JOBS:-$(nproc)}"

for tool in clang-14 clang++-14; do
  if ! command -v "$tool" >/dev/null; then
    echo "fuzz.sh: $tool not found: install clang-14 and libclang-rt-14-dev" >&2
    exit 1
  fi
done

CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCUJIT_BUILD_FUZZERS=ON -DCUJIT_BUILD_TESTS=OFF -DCUJIT_BUILD_SAMPLES=OFF \
  -DCUJIT_BUILD_BENCH=OFF -DCUJIT_BUILD_TOOLS=OFF >/dev/null
build_targets=()
for t in "${targets[@]}"; do build_targets+=("cujit_${t}_fuzz"); done
cmake --build "$build" -j"$(nproc)" --target "${build_targets[@]}"
[[ $seconds == 0 ]] && exit 0

# In memory when possible: the record and manifest targets write a file per execution.
work="$(mktemp -d -p /dev/shm cujit-fuzz.XXXXXX 2>/dev/null || mktemp -d)"
trap 'rm -rf "$work"' EXIT
artifacts="$build/fuzz-artifacts"

# Runs one target; its log goes to $work/<target>.log, its verdict to $work/<target>.rc.
run_target() {
  local t="$1" dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/tmp" "$dir/artifacts"
  cp "$root/tests/fuzz/corpus/$t/"* "$dir/corpus/"
  local rc=0
  # -timeout: one input running this long is a hang. -rss_limit_mb / -malloc_limit_mb: a
  # decoder that believes a length field shows up as an out-of-memory report. The snippet
  # target holds clang and its precompiled prelude, hence its larger limit.
  local rss=2048
  [[ $t == snippet ]] && rss=4096
  (cd "$dir" && TMPDIR="$dir/tmp" "$build/tests/fuzz/cujit_${t}_fuzz" \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb="$rss" -malloc_limit_mb="$rss" \
    -print_final_stats=1 -artifact_prefix="$dir/artifacts/" "$dir/corpus" \
    >"$work/$t.log" 2>&1) || rc=$?
  echo "$rc" >"$work/$t.rc"
}

echo "fuzz.sh: ${targets[*]}, ${seconds} s each, ${jobs} at once"
running=0
for t in "${targets[@]}"; do
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait || true

failed=0
for t in "${targets[@]}"; do
  rc="$(cat "$work/$t.rc" 2>/dev/null || echo missing)"
  stat() { sed -n "s/^stat::$1: *//p" "$work/$t.log" | tail -1; }
  corpus="$(find "$work/$t/corpus" -type f | wc -l)"
  if [[ $rc == 0 ]]; then
    echo "fuzz.sh: $t: ok: $(stat number_of_executed_units) executions," \
      "$(stat average_exec_per_sec) exec/s, corpus $corpus files, peak rss $(stat peak_rss_mb) MB"
  else
    failed=1
    mkdir -p "$artifacts/$t"
    cp "$work/$t/artifacts/"* "$artifacts/$t/" 2>/dev/null || true
    cp "$work/$t.log" "$artifacts/$t/fuzz.log"
    echo "fuzz.sh: $t: FAILED (exit $rc); log and inputs in $artifacts/$t (reproduce:" \
      "$build/tests/fuzz/cujit_${t}_fuzz INPUT). Last lines:" >&2
    grep -v -E '^#[0-9]+|^\s+NEW_FUNC|Uses: [0-9]+$' "$work/$t.log" | tail -40 >&2
  fi
done
exit "$failed"
