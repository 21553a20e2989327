#!/usr/bin/env bash
# No compiler on the target: build a deployment database on this (build) machine, then run the
# application as a target without NVRTC would: CUJIT_NVRTC_PATH names a file that does not
# exist, and an explicit path is the only place cujit looks.
#
#   samples/no_compiler.sh PATH/TO/no_compiler PATH/TO/cujit-cache
set -euo pipefail
app=$1
tool=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUJIT_CACHE_DIR="$work/user-cache"

echo "== 1. build machine: record the kernels the application uses"
CUJIT_RECORD="$work/kernels.jsonl" "$app" --record
echo "== 2. build machine: precompile them (cubins for sm_80 and sm_90, PTX for newer GPUs)"
"$tool" precompile "$work/kernels.jsonl" --arch sm_80,sm_90 --ptx -o "$work/app.db" -j 2
echo "== 3. target: no NVRTC, no analyser, a read-only cache"
CUJIT_NVRTC_PATH=/nonexistent/libnvrtc.so.13 CUJIT_ANALYSIS_PATH=/nonexistent/libcujit-analysis.so \
  CUJIT_CACHE=readonly CUJIT_CACHE_PATH="$work/app.db" "$app" --expect-no-compiler
