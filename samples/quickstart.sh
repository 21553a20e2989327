#!/usr/bin/env bash
# The quickstart says what happened: a first run on an empty cache compiles, a second run finds
# every kernel in the cache on disk, and both name NVRTC by its version.
#
#   samples/quickstart.sh PATH/TO/quickstart
set -euo pipefail
app=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CUJIT_CACHE_DIR="$work/cache"

first=$("$app")
echo "$first"
second=$("$app")
echo "$second"
fail() { echo "error: $*" >&2; exit 1; }
grep -Eq '^cujit quickstart \(cache in .*, NVRTC [0-9]+\.[0-9]+\)$' <<<"$first" ||
  fail "the first line does not name NVRTC as 'NVRTC major.minor'"
grep -Eq 'NVRTC [0-9.]+ \([0-9]+ bytes' <<<"$first" && fail "NVRTC is named by a file identity"
[[ $(grep -c '^  saxpy for sm_[0-9]*: compiled' <<<"$first") == 2 ]] ||
  fail "the first run did not compile sm_80 and sm_90"
grep -q '^  saxpy for sm_90: cache hit (process memory)' <<<"$first" ||
  fail "the first run's repeated request is not a memory hit"
[[ $(grep -c '^  saxpy for sm_[0-9]*: cache hit' <<<"$second") == 3 ]] ||
  fail "the second run compiled what the first had cached"
grep -q 'compiled' <<<"$(grep '^  saxpy' <<<"$second")" && fail "the second run says compiled"
echo "quickstart output checked"
