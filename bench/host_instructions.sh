#!/usr/bin/env bash
# Host instructions per call of cujit's launch paths, counted by callgrind on the driver
# stand-in (bench/host_instructions.cpp says what each row makes), and of the Python package's
# calls (bench/python_instructions.py) when it is built. No GPU needed; the counts repeat
# exactly for the same build. Usage: bash bench/host_instructions.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
program="$build/bench/host_instructions"
standin="$build/tests/driver_standin"
for needed in "$program" "$standin/libcuda.so.1"; do
  [[ -e $needed ]] || { echo "host_instructions: $needed is missing; build with tests and benchmarks" >&2; exit 2; }
done
command -v valgrind >/dev/null || { echo "host_instructions: valgrind is not installed" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CUJIT_CACHE_DIR="$work/cache" LD_LIBRARY_PATH="$standin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Natively first: NVRTC fills the cache, so the run under valgrind loads from disk.
"$program" >/dev/null
valgrind --tool=callgrind --callgrind-out-file="$work/out" --toggle-collect='measure_*' \
  "$program" >/dev/null 2>"$work/log" || { cat "$work/log" >&2; exit 1; }
calls=1000
echo "host instructions per call (callgrind, driver stand-in, $calls calls each):"
callgrind_annotate --inclusive=yes "$work/out" 2>/dev/null |
  awk -v calls="$calls" '/measure_[a-z_]+/ {
      gsub(",", "", $1); match($0, /measure_[a-z_]+/)
      printf "  %-28s %10.0f\n", substr($0, RSTART + 8, RLENGTH - 8), $1 / calls }'
if [[ -f $build/python/cujit/__init__.py ]] && python3 -c "import numpy" 2>/dev/null; then
  PYTHONPATH="$build/python" python3 "$root/bench/python_instructions.py" "$work"
fi
