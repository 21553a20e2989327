#!/usr/bin/env bash
# cujit as a subproject (add_subdirectory / FetchContent) changes nothing of its parent:
#  - the parent's build type stays unset (cujit writes nothing into its cache);
#  - the parent's `all` builds cujit's library and analyser, not the tool, tests, samples,
#    benchmarks or header checks;
#  - the parent's install rules install the parent's program alone (CUJIT_INSTALL is off).
# Configures tests/consumer/parent (no build: the library's own build is tested elsewhere).
#   check_subproject.sh SOURCE_DIR WORK_DIR
set -euo pipefail
source_dir=$1
work=$2
rm -rf "$work"
cmake -S "$source_dir/tests/consumer/parent" -B "$work" -G Ninja \
  -DCUJIT_SOURCE_DIR="$source_dir" >"$work.log" 2>&1 || {
  cat "$work.log" >&2
  exit 1
}
failed=0
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$work/CMakeCache.txt")
if [[ -n $build_type ]]; then
  echo "error: the parent's CMAKE_BUILD_TYPE became '$build_type'" >&2
  failed=1
fi
targets=$(ninja -C "$work" -t targets all)
for wanted in libcujit.so parent_app; do
  if ! grep -q "$wanted" <<<"$targets"; then
    echo "error: the parent's build has no $wanted" >&2
    failed=1
  fi
done
# What the parent's `all` builds: every input of its default target, recursively.
inputs=$(ninja -C "$work" -t inputs all)
for unwanted in cujit-cache.dir header_check/ cujit_api_tests.dir quickstart.dir \
  elementwise.dir; do
  if grep -qE "$unwanted" <<<"$inputs"; then
    echo "error: the parent's 'all' builds cujit's $unwanted" >&2
    failed=1
  fi
done
if grep -q "include/cujit\|libcujit\|cujit-cache" "$work/cujit/cmake_install.cmake"; then
  echo "error: cujit adds install rules to the parent (CUJIT_INSTALL should be off)" >&2
  failed=1
fi
if grep -q "^CPACK_" "$work/CMakeCache.txt"; then
  echo "error: cujit set CPack variables in the parent" >&2
  failed=1
fi
((failed == 0)) && echo "cujit as a subproject leaves the parent's build type, all and install alone"
exit $failed
