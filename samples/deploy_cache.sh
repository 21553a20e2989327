#!/usr/bin/env bash
# The deployment path end to end: record the kernels a run uses, precompile them for several
# architectures on a machine that needs no GPU, then run from the deployment database alone
# and check that nothing was compiled.
#
#   samples/deploy_cache.sh PATH/TO/deploy_cache PATH/TO/cujit-cache
set -euo pipefail
app=$1
tool=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUJIT_CACHE_DIR="$work/user-cache"

echo "== 1. record the kernels a run uses"
CUJIT_RECORD="$work/manifest.jsonl" "$app"
wc -l <"$work/manifest.jsonl"

echo "== 2. precompile them for sm_80 and sm_90 (no GPU needed)"
"$tool" precompile "$work/manifest.jsonl" --arch sm_80,sm_90 -o "$work/app.db" -j 2

echo "== 3. run from the deployment database only: zero NVRTC compilations"
CUJIT_CACHE=readonly CUJIT_CACHE_PATH="$work/app.db" "$app" --expect-no-compiles
