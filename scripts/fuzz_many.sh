#!/usr/bin/env bash
# Runs one libFuzzer binary as JOBS independent processes for SECONDS each (one per core, each
# on its own copy of CORPUS in /dev/shm, its own seed and its own TMPDIR), then prints every
# process's executions and the total, and fails if any process found a crash, leak, timeout,
# out-of-memory or sanitizer report (its input and log are kept in ARTIFACTS). Long runs for
# the closing note's execution counts; scripts/fuzz.sh builds the binaries and is what CI runs.
# Usage: scripts/fuzz_many.sh BINARY CORPUS SECONDS JOBS [ARTIFACTS] [-- LIBFUZZER_FLAGS...]
set -u
binary=$(readlink -f "$1")
corpus=$(readlink -f "$2")
seconds=$3
jobs=$4
artifacts=$(readlink -f "${5:-fuzz-artifacts}")
shift 5 2>/dev/null || shift $#
[[ ${1:-} == -- ]] && shift
mkdir -p "$artifacts"
work=$(mktemp -d -p /dev/shm cujit-fuzz-many.XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fuzz_many: $(basename "$binary"), $jobs processes x ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs, $(date -u '+%Y-%m-%d %H:%M UTC')"
pids=()
for ((j = 0; j < jobs; j++)); do
  mkdir -p "$work/$j/corpus" "$work/$j/tmp"
  cp "$corpus"/* "$work/$j/corpus/"
  (cd "$work/$j" && TMPDIR="$work/$j/tmp" exec "$binary" -max_total_time="$seconds" \
    -seed=$((1000 + j)) -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$work/$j/" "$@" corpus >"$work/$j/log" 2>&1) &
  pids+=($!)
done
failed=0 total=0
for ((j = 0; j < jobs; j++)); do
  wait "${pids[$j]}"
  rc=$?
  runs=$(grep -oP 'stat::number_of_executed_units: \K[0-9]+' "$work/$j/log" | tail -1)
  total=$((total + ${runs:-0}))
  printf 'fuzz_many: process %2d: exit %d, %s executions\n' "$j" "$rc" "${runs:-?}"
  if ((rc != 0)); then
    failed=1
    mkdir -p "$artifacts/$j"
    cp "$work/$j/log" "$work/$j"/crash-* "$work/$j"/leak-* "$work/$j"/timeout-* \
      "$work/$j"/oom-* "$artifacts/$j/" 2>/dev/null
    tail -30 "$work/$j/log"
    # The failing inputs themselves, so that a log that is all that comes back still has them.
    for f in "$work/$j"/crash-* "$work/$j"/leak-* "$work/$j"/timeout-* "$work/$j"/oom-*; do
      [[ -f $f ]] && echo "fuzz_many: input $(basename "$f") (base64): $(base64 -w0 "$f")"
    done
  fi
done
# New inputs every process found, for the next run's corpus.
mkdir -p "$artifacts/corpus"
for ((j = 0; j < jobs; j++)); do cp -n "$work/$j/corpus"/* "$artifacts/corpus/" 2>/dev/null; done
echo "fuzz_many: total $total executions in $jobs x ${seconds} s; $(ls "$artifacts/corpus" | wc -l) corpus inputs; $( ((failed)) && echo FAILED || echo 'no findings')"
exit $failed
