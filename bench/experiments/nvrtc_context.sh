#!/usr/bin/env bash
# Issue 35: does NVRTC run slower in a process that holds a CUDA context and device arrays?
# Alternates, in new processes on the cold call's own source (recorded first): NVRTC alone,
# NVRTC alone after the cold child's set-up (context, arrays), and the cujit cold call (its
# "compiled in" line is NVRTC inside the call, with the process's CPU time), the last also with
# the background work off. Each child prints its rusage over the timed part.
# Usage: bench/experiments/nvrtc_context.sh BUILD_DIR [ROUNDS] [elementwise|reduction]
set -u
bench="$1/bench/${3:-elementwise}"
rounds="${2:-6}"
work=$(mktemp -d)
CUJIT_CACHE_DIR="$work/record" CUJIT_RECORD="$work/calls.jsonl" "$bench" --cold-cujit >/dev/null
for i in $(seq "$rounds"); do
  for mode in --cold-nvrtc --cold-nvrtc-setup; do
    ms=$(CUJIT_TRACE_SPECIALIZE=1 CUJIT_BENCH_MANIFEST="$work/calls.jsonl" "$bench" "$mode" \
      2>"$work/err")
    echo "round $i $mode: $ms ms; $(tail -1 "$work/err")"
  done
  for quiet in "" "CUJIT_CACHE_PRELOAD=0 CUJIT_MODULE_PRELOAD=0"; do
    ms=$(env $quiet CUJIT_TRACE_SPECIALIZE=1 CUJIT_LOG=info CUJIT_CACHE_DIR="$work/cold$i${quiet:+q}" \
      "$bench" --cold-cujit 2>"$work/err")
    echo "round $i cold call ${quiet:-(background work on)}: $ms ms;" \
      "$(grep -o 'compiled in .* faults)' "$work/err" | head -1); $(grep '^construction and call' "$work/err")"
  done
done
rm -rf "$work"
