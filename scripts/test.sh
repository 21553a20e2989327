#!/usr/bin/env bash
# Installs the dependencies, builds cujit with its tests, and runs every test (GPU tests skip
# with a reason when no device is present), then fuzzes briefly (scripts/fuzz.sh).
# Usage: bash scripts/test.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
fuzz_seconds="${CUJIT_CI_FUZZ_SECONDS:-30}"
# What this runs and for how long (two cores, the first time; ccache and a warm build dir cut
# the build to seconds).
fuzz_plan="${fuzz_seconds} s per libFuzzer target after building them (about 4.5 min)"
if [[ $fuzz_seconds == 0 ]]; then fuzz_plan="skipped (CUJIT_CI_FUZZ_SECONDS=0)"; fi
cat <<BANNER
== scripts/test.sh: the whole suite, about 10 minutes on two cores:
   1. scripts/install_deps.sh (Debian packages; nothing to do when they are installed)
   2. build cujit with its tests, samples and benchmarks in $build (about 3 min)
   3. ctest: about 740 tests (1-2 min), the Python package's pytest suite among them; GPU
      tests skip without a device, and one line per reason sums the skips up at the end
   4. fuzzing: $fuzz_plan; CUJIT_CI_FUZZ_SECONDS=N sets the seconds, 0 skips it
BANNER
if [[ ${CUJIT_CI_SANITIZERS:-0} == 1 ]]; then
  echo "   5. CUJIT_CI_SANITIZERS=1: the suite under ASan+UBSan and TSan (about 6.5 min more)"
fi
bash "$root/scripts/install_deps.sh"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCUJIT_BUILD_TESTS=ON \
  -DCUJIT_BUILD_SAMPLES=ON -DCUJIT_BUILD_BENCH=ON -DCUJIT_PYTHON=ON
cmake --build "$build" -j"$(nproc)"
# A private kernel cache, so tests never touch the user's.
CUJIT_CACHE_DIR="$(mktemp -d)"
export CUJIT_CACHE_DIR
trap 'rm -rf "$CUJIT_CACHE_DIR"' EXIT
# ctest's closing list of tests that "did not run" is replaced by one line per reason the
# skipped tests gave (from the JUnit report); tests that did not run for another reason are
# still listed.
junit="$build/ctest-results.xml"
status=0
ctest --test-dir "$build" --output-on-failure -j"$(nproc)" --timeout 900 --output-junit "$junit" |
  awk '/^The following tests did not run:/ { listing = 1; next }
       listing && /\(Skipped\)$/ { skipped++; next }
       listing && /^[ \t]/ { others = others $0 "\n"; next }
       { listing = 0; print }
       END { if (others != "") printf "The following tests did not run:\n%s", others
             if (skipped) printf "%d tests skipped themselves; their reasons:\n", skipped }' ||
  status=$?
if [[ -f $junit ]]; then
  # GoogleTest prints "FILE:LINE: Skipped" and then the reason given to GTEST_SKIP().
  grep -A1 ': Skipped$' "$junit" | grep -vE ': Skipped$|^--$' |
    sed 's/&apos;/'"'"'/g; s/&quot;/"/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g' |
    sort | uniq -c | sort -rn | sed 's/^ *\([0-9]*\) \(.*\)/  \1 x "\2"/' || true
fi
((status == 0)) || exit "$status"
# Then a short fuzzing run of every libFuzzer target (scripts/fuzz.sh, tests/fuzz/README.md):
# CUJIT_CI_FUZZ_SECONDS per target, default 30 (with the ~3.5 min build of the fuzzers on two
# cores, about 4.5 min in all); 0 skips it.
if [[ $fuzz_seconds == 0 ]]; then
  echo "test.sh: fuzzing skipped (CUJIT_CI_FUZZ_SECONDS=0)"
elif ! command -v clang++-14 >/dev/null ||
  ! compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null; then
  echo "test.sh: fuzzing skipped: clang-14 and libclang-rt-14-dev (libFuzzer) are not installed"
else
  CUJIT_FUZZ_BUILD_DIR="$build-fuzz" bash "$root/scripts/fuzz.sh" "$fuzz_seconds"
fi
# CI (.ci/run) sets CUJIT_CI_SANITIZERS=1: the suite again under ASan+UBSan, and the
# multi-thread tests under TSan (scripts/sanitize.sh; about 6.5 min more on two cores).
if [[ ${CUJIT_CI_SANITIZERS:-0} == 1 ]]; then
  CUJIT_ASAN_BUILD="$build-asan" CUJIT_TSAN_BUILD="$build-tsan" bash "$root/scripts/sanitize.sh"
fi
