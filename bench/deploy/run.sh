#!/usr/bin/env bash
# A deployed program's start-up with a warm deployment database, for one build of cujit:
# records its kernels, precompiles them with that build's cujit-cache, then runs it N times
# with only the database (read-only cache), printing each run's whole-process wall time, its
# main()-to-first-results time and its peak RSS as JSON lines.
#
#   bench/deploy/run.sh DEPLOYED_START CUJIT_CACHE_TOOL LABEL [N] [ENV...]
set -euo pipefail
app=$1 tool=$2 label=$3 runs=${4:-15}
shift $(($# < 4 ? $# : 4))
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
CUJIT_CACHE_DIR="$work/record-cache" CUJIT_RECORD="$work/kernels.jsonl" "$app" >&2 || true  # it compiles
"$tool" precompile "$work/kernels.jsonl" --arch sm_80,sm_90 -o "$work/app.db" -j 2 >&2
for ((i = 0; i < runs; i++)); do
  t0=$(date +%s%N)
  line=$(env "$@" CUJIT_CACHE=readonly CUJIT_CACHE_PATH="$work/app.db" \
    CUJIT_CACHE_DIR="$work/run-cache" "$app")
  t1=$(date +%s%N)
  echo "{\"label\": \"$label\", \"process_ms\": $(((t1 - t0) / 1000)).0e-3, \"run\": $line}"
done
