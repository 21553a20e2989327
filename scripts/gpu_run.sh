#!/usr/bin/env bash
# cujit's GPU workflow, in one script with two modes.
#
#   scripts/gpu_run.sh build
#       On the build machine (no GPU needed), from anywhere: installs the dependencies
#       (scripts/install_deps.sh), configures and builds Release with tests, samples, tools
#       and benchmarks into build-gpu/, then stages into .devbuild/ (git-ignored) only what
#       the GPU host needs, stripped: libcujit.so.0, tests/cujit_*_tests, bench/<each
#       benchmark>, samples/<each sample>, tools/cujit-cache, each binary xz-compressed (run
#       and sanitize unpack them), and wheels/ with the nanobind the Python package builds with. The samples find libcujit through their $ORIGIN/.. run path
#       (CMAKE_BUILD_RPATH_USE_ORIGIN), so .devbuild/ keeps the build tree's layout; the
#       tests, the tool and the benchmarks link cujit statically. Fails if .devbuild/ grows
#       past 60 MiB.
#
#   scripts/gpu_run.sh run [--quick]
#       On the GPU host, from the repository root, with .devbuild/ carried along (CUDA 13
#       toolkit at /usr/local/cuda for libnvrtc; python3 with CuPy, PyTorch, matplotlib):
#       prints nvidia-smi; runs every test binary (--gtest_brief=1, XML reports into $OUT);
#       runs every sample; builds the Python package's module with the host's python3 against
#       the staged library and runs its pytest suite and quickstart; runs every benchmark with
#       --json $OUT/bench.jsonl; runs
#       bench/compare.py and bench/multi_device.py (CuPy and PyTorch, same file); draws
#       bench/elementwise_throughput.png and copies it to $OUT; prints a summary table last
#       (tests per binary, the other steps, key GB/s figures and ratios, multi-device figures).
#       Logs of every step are in $OUT (default ./out).
#       Keeps going when a step fails or times out; the whole run stays under
#       GPU_RUN_BUDGET_S seconds (default 510). Exit status: 1 if a test binary failed or
#       timed out, else 2 if another step failed, else 0. --quick: smaller sizes, fewer
#       repeats (a smoke test). --tests: the tests and samples only (no benchmarks).
#
#   scripts/gpu_run.sh python
#       On the GPU host, like run: only the Python package's step (its module built into
#       /tmp/cujit-pybuild with the host's python3, its pytest suite, its quickstart).
#
#   scripts/gpu_run.sh sanitize
#       On the GPU host, like run: every test binary under compute-sanitizer's memcheck
#       (out-of-bounds and misaligned accesses), then the reduction and tiled elementwise
#       tests under racecheck (shared-memory hazards), synccheck (barrier misuse) and
#       initcheck (reads of uninitialised device memory); a summary table of the
#       checkers' error counts last. The >2^31-element tests and the multi-process cache
#       tests are left out (minutes under the checker; their children do not use the GPU).
#       Exit status 1 if a checker found an error or a test failed.
#
#   scripts/gpu_run.sh stage-fuzz [TARGET...]
#       On the build machine: builds the libFuzzer targets (scripts/fuzz.sh's build, default
#       all five) and stages each stripped binary, xz-compressed, with its checked-in corpus
#       into .devbuild-fuzz/ (git-ignored; carry it beside .devbuild/).
#
#   scripts/gpu_run.sh fuzz TARGET SECONDS JOBS
#       On the GPU host's CPUs (beside a run, or alone): unpacks the staged TARGET fuzzer to
#       /tmp and runs scripts/fuzz_many.sh with JOBS processes for SECONDS each. Failing inputs
#       and logs go to $OUT/fuzz-<TARGET>/, the grown corpus stays in /tmp (thousands of files
#       in $OUT would keep anything from coming back). Exit status 1 on a finding.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${CUJIT_GPU_BUILD_DIR:-$root/build-gpu}"  # another tree: CUJIT_GPU_BUILD_DIR
stage="$root/.devbuild"
fuzz_stage="$root/.devbuild-fuzz"
max_stage_mib=60

is_elf() { [[ -f "$1" && "$(head -c 4 "$1" | tail -c 3)" == "ELF" ]]; }

# A redis-server for the fleet tier's tests and benchmarks (the GPU hosts have no packages):
# the binary, the libraries it needs beyond the C and C++ runtimes, and a wrapper that points
# the loader at them for the server alone. It keeps its own name out of "redis-check-rdb",
# which would make the binary start as the RDB checker.
stage_redis() {
  local server lib
  server=$(command -v redis-server) || { echo "note: no redis-server to stage"; return 0; }
  mkdir -p "$stage/redis"
  cp -L "$server" "$stage/redis/redis-server.bin"
  strip --strip-all "$stage/redis/redis-server.bin"
  while read -r lib; do
    cp -L "$lib" "$stage/redis/"
  done < <(ldd "$server" | awk '$3 ~ /^\// { print $3 }' |
    grep -vE '/(libc|libm|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so')
  printf '%s\n' '#!/bin/sh' 'here=$(dirname "$(readlink -f "$0")")' \
    'LD_LIBRARY_PATH="$here${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "$here/redis-server.bin" "$@"' \
    >"$stage/redis/redis-server"
  chmod +x "$stage/redis/redis-server"
}

# ---------------------------------------------------------------------------------------------
# The staged binaries, xz-compressed one by one (each statically linked test, tool and
# benchmark carries cujit's objects: uncompressed they would not fit the carry), and the
# reverse on the GPU host, where the programs linking cujit statically also get the analyser
# module beside them, where cujit looks for it. unpack_stage is idempotent.
pack_stage() {
  find "$stage" -type f -print0 | while IFS= read -r -d '' f; do
    is_elf "$f" && printf '%s\0' "$f"
  done | xargs -0 -r -n 1 -P "$(nproc)" xz -6
}
unpack_stage() {
  find "$stage" -type f -name '*.xz' -print0 | xargs -0 -r -n 1 -P "$(nproc)" xz -d -f
  local dir
  for dir in tests bench tools; do
    [[ -d "$stage/$dir" ]] && ln -sfn ../libcujit-analysis.so "$stage/$dir/libcujit-analysis.so"
  done
  return 0
}

build() {
  set -e
  cd "$root"
  bash scripts/install_deps.sh
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    -DCUJIT_BUILD_TESTS=ON -DCUJIT_BUILD_SAMPLES=ON -DCUJIT_BUILD_BENCH=ON -DCUJIT_BUILD_TOOLS=ON \
    -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON
  cmake --build "$build_dir" -j"$(nproc)"

  rm -rf "$stage"
  mkdir -p "$stage"/{tests,bench,samples,tools}
  # The library under its soname, as a plain file (no symlinks to carry).
  cp -L "$build_dir/libcujit.so.0" "$stage/libcujit.so.0"
  strip --strip-unneeded "$stage/libcujit.so.0"
  # The snippet analyser, loaded from the library's directory on the first analysis.
  cp "$build_dir/libcujit-analysis.so" "$stage/libcujit-analysis.so"
  strip --strip-unneeded "$stage/libcujit-analysis.so"
  local dir exe
  for dir in tests bench samples tools; do
    [[ -d "$build_dir/$dir" ]] || continue
    for exe in "$build_dir/$dir"/*; do
      if [[ ! -x "$exe" || -L "$exe" ]] || ! is_elf "$exe"; then continue; fi
      [[ $dir != tests || $(basename "$exe") == cujit_*_tests ]] || continue
      cp "$exe" "$stage/$dir/"
      strip --strip-all "$stage/$dir/$(basename "$exe")"
    done
  done
  stage_redis
  # nanobind for the Python package's build on the GPU host (no network there): the version
  # built against here, as a wheel.
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$stage/wheels" \
    "nanobind==$(python3 -c 'import nanobind; print(nanobind.__version__)')"
  {
    echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
    echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
      git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (working tree has changes)')"
    echo "compiler: $(c++ --version | head -1)"
  } >"$stage/BUILD_INFO"
  set +e

  # Every staged binary that links libcujit.so must find the staged one. The tests, the tool
  # and the benchmarks link cujit statically (they reach below the public API) and find the
  # analyser through the links unpack_stage makes.
  local bad=0
  local resolved
  while IFS= read -r exe; do
    readelf -d "$exe" | grep -q 'NEEDED.*\[libcujit\.so\.0\]' || continue
    resolved=$(ldd "$exe" | awk '$1 == "libcujit.so.0" { print $3 }')
    if [[ -z $resolved || $(readlink -f "$resolved") != "$(readlink -f "$stage/libcujit.so.0")" ]]; then
      echo "error: $exe does not resolve libcujit.so.0 to $stage/ (run path: $(
        readelf -d "$exe" | grep -oP 'R(UN)?PATH.*\[\K[^]]*'))" >&2
      bad=1
    fi
  done < <(find "$stage" -mindepth 2 -type f -perm -u+x -not -path "$stage/redis/*")

  pack_stage

  echo
  echo "staged in $stage:"
  (cd "$stage" && find . -type f -printf '%s\t%p\n' | sort -rn |
    awk -F'\t' '{ printf "  %8.2f MiB  %s\n", $1 / 1048576, $2 }')
  local total
  total=$(du -sb "$stage" | cut -f1)
  awk -v t="$total" -v m="$max_stage_mib" 'BEGIN { printf "  total %.2f MiB (limit %d MiB)\n", t / 1048576, m }'
  if ((total > max_stage_mib * 1024 * 1024)); then
    echo "error: $stage is larger than $max_stage_mib MiB" >&2
    bad=1
  fi
  cat "$stage/BUILD_INFO"
  return $bad
}

# The Python package on the GPU host (run's "python package" step, and the python mode): its
# module built with this host's python3 against the staged libcujit (nanobind from the staged
# wheel), into /tmp/cujit-pybuild; then its pytest suite and its quickstart.
python_package() {
  set -e
  local nb=/tmp/cujit-nanobind build=/tmp/cujit-pybuild
  python3 -m pip install --quiet --upgrade --no-index --find-links "$stage/wheels" --target "$nb" \
    nanobind
  PYTHONPATH="$nb" cmake -S python -B "$build" -DCMAKE_BUILD_TYPE=Release \
    -DPython_EXECUTABLE="$(command -v python3)" -DCUJIT_LIBRARY="$stage/libcujit.so.0" >/dev/null
  cmake --build "$build" -j"$(nproc)" >/dev/null
  PYTHONPATH="$build" python3 -m pytest -q -p no:cacheprovider \
    --junitxml="${OUT:-$root/out}/python_tests.xml" python/tests
  PYTHONPATH="$build" python3 samples/quickstart.py
}

# ---------------------------------------------------------------------------------------------
# run: every step goes through step(), which enforces the time budget, logs to $OUT and
# records a status line for the summary.
budget_s=${GPU_RUN_BUDGET_S:-510}
reserve_s=25 # kept for the plot and the summary
step_names=()
step_status=()
step_seconds=()

# step NAME CAP_SECONDS LOG COMMAND...: runs COMMAND with a timeout of CAP_SECONDS or what is
# left of the budget, output to the terminal and to LOG; sets last_rc.
step() {
  local name=$1 cap=$2 log=$3
  shift 3
  local left=$((budget_s - SECONDS - reserve_s))
  local limit=$((cap < left ? cap : left))
  if ((limit < 5)); then
    echo "== $name: skipped, out of time"
    step_names+=("$name")
    step_status+=("SKIPPED (no time)")
    step_seconds+=(0)
    last_rc=125
    return
  fi
  echo
  echo "== $name (limit ${limit}s)"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$log"
  last_rc=${PIPESTATUS[0]}
  local status=ok
  if ((last_rc == 124 || last_rc == 137)); then
    status="TIMEOUT after ${limit}s"
  elif ((last_rc != 0)); then
    status="FAILED (exit $last_rc)"
  fi
  step_names+=("$name")
  step_status+=("$status")
  step_seconds+=($((SECONDS - start)))
}

run() {
  local quick=() benchmarks=1
  [[ ${1:-} == --quick ]] && quick=(--quick)
  [[ ${1:-} == --tests ]] && benchmarks=0
  cd "$root"
  OUT=${OUT:-$root/out}
  mkdir -p "$OUT"
  unpack_stage
  if [[ ! -f "$stage/libcujit.so.0" ]]; then
    echo "error: $stage/libcujit.so.0 not found: run 'scripts/gpu_run.sh build' on the build" \
      "machine and carry .devbuild/ here" >&2
    exit 2
  fi
  export LD_LIBRARY_PATH="$stage:/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The fleet tier's tests run the staged redis-server, and must (not skip for want of one).
  if [[ -x "$stage/redis/redis-server" ]]; then
    export CUJIT_REDIS_SERVER="$stage/redis/redis-server" CUJIT_TEST_REQUIRE_REDIS=1
  fi
  # A fresh kernel cache, so that every run starts from the same (cold) state.
  CUJIT_CACHE_DIR="$(mktemp -d /tmp/cujit-cache.XXXXXX)"
  export CUJIT_CACHE_DIR
  rm -f "$OUT/bench.jsonl"

  echo "== cujit GPU run, $(date -u '+%Y-%m-%d %H:%M UTC'), budget ${budget_s}s"
  cat "$stage/BUILD_INFO" 2>/dev/null
  step "nvidia-smi" 30 "$OUT/nvidia-smi.txt" bash -c \
    'nvidia-smi && nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv'

  # Tests: one row per binary.
  local test_rows=() any_test_failed=0 t name log ran passed failed skipped
  for t in "$stage"/tests/cujit_*_tests; do
    [[ -x $t ]] || continue
    name=$(basename "$t")
    log="$OUT/$name.log"
    GTEST_OUTPUT="xml:$OUT/$name.xml" step "$name" 240 "$log" "$t" --gtest_brief=1
    # --gtest_brief=1 prints the totals but not always the FAILED count: derive it.
    ran=$(grep -oP '^\[==========\] \K[0-9]+(?= tests? from .* ran)' "$log" | tail -1)
    passed=$(grep -oP '^\[  PASSED  \] \K[0-9]+' "$log" | tail -1)
    skipped=$(grep -oP '^\[  SKIPPED \] \K[0-9]+(?= tests?)' "$log" | tail -1)
    failed=$((${ran:-0} - ${passed:-0} - ${skipped:-0}))
    test_rows+=("$(printf '%-28s %-24s %7s %7s %8s %6ss' "$name" "${step_status[-1]}" \
      "${passed:-0}" "$failed" "${skipped:-0}" "${step_seconds[-1]}")")
    ((last_rc != 0)) && any_test_failed=1
  done

  # Samples, each in a scratch directory (some write files).
  local s sample_dir
  sample_dir=$(mktemp -d /tmp/cujit-samples.XXXXXX)
  for s in "$stage"/samples/*; do
    [[ -x $s ]] || continue
    # shellcheck disable=SC2016 # $1 and $2 expand in the inner shell
    step "sample $(basename "$s")" 60 "$OUT/sample_$(basename "$s").log" \
      bash -c 'cd "$1" && "$2"' _ "$sample_dir" "$s"
  done

  # The Python package: its module built with this host's python3 against the staged library,
  # then its pytest suite (CuPy and PyTorch on the GPU) and its quickstart.
  export -f python_package
  export stage root OUT
  step "python package" 240 "$OUT/python_tests.log" bash -c python_package

  # The fleet tier's first calls (bench/bench_process.hpp) against a server on loopback.
  local redis_pid=""
  if [[ -n ${CUJIT_REDIS_SERVER:-} ]] && ((benchmarks)); then
    local redis_port=$((16379 + $$ % 1000))
    "$CUJIT_REDIS_SERVER" --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
      --dir /tmp --logfile "$OUT/redis-bench.log" &
    redis_pid=$!
    export CUJIT_BENCH_REMOTE="redis://127.0.0.1:$redis_port"
  fi

  # Benchmarks: the baseline first, then the others; all append to one JSON-lines file.
  local b benches=()
  [[ -x "$stage/bench/baseline" ]] && benches+=("$stage/bench/baseline")
  for b in "$stage"/bench/*; do
    [[ -x $b && ! -L $b && $(basename "$b") != baseline ]] && benches+=("$b")
  done
  ((benchmarks)) || benches=()
  for b in "${benches[@]}"; do
    step "bench $(basename "$b")" 180 "$OUT/bench_$(basename "$b").log" \
      "$b" --json "$OUT/bench.jsonl" "${quick[@]}"
  done
  if ((benchmarks)); then
    step "compare.py (CuPy, PyTorch)" 240 "$OUT/compare.log" \
      python3 bench/compare.py --json "$OUT/bench.jsonl" "${quick[@]}"
    # The Python package against CuPy and PyTorch (its module from the "python package" step).
    step "python_calls.py (cujit, CuPy, PyTorch)" 240 "$OUT/python_calls.log" \
      env PYTHONPATH=/tmp/cujit-pybuild python3 bench/python_calls.py --json "$OUT/python.jsonl"
    # Several GPUs from one process (exits 0 with one line on a host with fewer than 2).
    step "multi_device.py (CuPy, PyTorch)" 240 "$OUT/multi_device_py.log" \
      python3 bench/multi_device.py --json "$OUT/bench.jsonl" "${quick[@]}"
  fi

  [[ -n $redis_pid ]] && kill "$redis_pid" 2>/dev/null
  reserve_s=0
  if [[ -s "$OUT/bench.jsonl" ]]; then
    step "plot" 20 "$OUT/plot.log" python3 bench/compare.py --plot --json "$OUT/bench.jsonl" \
      --png bench/elementwise_throughput.png
    ((last_rc == 0)) && cp bench/elementwise_throughput.png "$OUT/"
  fi
  rm -rf "$sample_dir" "$CUJIT_CACHE_DIR"

  # The summary, last.
  echo
  echo "================================ summary ================================"
  head -2 "$stage/BUILD_INFO" 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
  printf '%-28s %-24s %7s %7s %8s %7s\n' "test binary" "status" "passed" "failed" "skipped" "time"
  local row
  for row in "${test_rows[@]}"; do echo "$row"; done
  ((${#test_rows[@]} == 0)) && echo "(no test binaries in $stage/tests)"
  echo
  local i other_failed=0
  for i in "${!step_names[@]}"; do
    [[ ${step_names[$i]} == cujit_*_tests ]] && continue
    printf '%-36s %-24s %6ss\n' "${step_names[$i]}" "${step_status[$i]}" "${step_seconds[$i]}"
    [[ ${step_status[$i]} == ok ]] || other_failed=1
  done
  echo
  if [[ -s "$OUT/bench.jsonl" ]]; then
    python3 bench/compare.py --summary --json "$OUT/bench.jsonl" || other_failed=1
    echo
    python3 bench/multi_device.py --summary --json "$OUT/bench.jsonl" || other_failed=1
  else
    echo "no benchmark records ($OUT/bench.jsonl is empty)"
  fi
  echo
  echo "total ${SECONDS}s; logs, GoogleTest XML, bench.jsonl and the plot in $OUT"
  if ((any_test_failed)); then
    echo "RESULT: test failures"
    exit 1
  elif ((other_failed)); then
    echo "RESULT: tests passed; some other step failed"
    exit 2
  fi
  echo "RESULT: all passed"
  exit 0
}

# Every checker step: its log's gtest totals and compute-sanitizer's error count.
sanitize() {
  cd "$root"
  OUT=${OUT:-$root/out}
  mkdir -p "$OUT"
  unpack_stage
  [[ -f "$stage/libcujit.so.0" ]] || { echo "error: $stage/libcujit.so.0 not found" >&2; exit 2; }
  export LD_LIBRARY_PATH="$stage:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  CUJIT_CACHE_DIR="$(mktemp -d /tmp/cujit-cache.XXXXXX)"
  export CUJIT_CACHE_DIR
  local cs=/usr/local/cuda/bin/compute-sanitizer
  local skip='*MoreThanTwoTo31*:ConcurrencyTest.*:Concurrency.*:FaultInjection.*'
  echo "== compute-sanitizer, $(date -u '+%Y-%m-%d %H:%M UTC'), budget ${budget_s}s"
  cat "$stage/BUILD_INFO" 2>/dev/null
  "$cs" --version | tail -1
  local rows=() bad=0 t name log errors passed ran
  checked() {  # TOOL NAME CAP FILTER BINARY
    local tool=$1 name=$2 cap=$3 filter=$4 bin=$5
    log="$OUT/${tool}_$name.log"
    # API errors are not reported: RawKernel counts a kernel's parameters by asking
    # cuFuncGetParamInfo for one past the last (the driver API has no count query), and
    # tests look up missing kernels on purpose; every such call's result is checked.
    step "$tool $name" "$cap" "$log" "$cs" --tool "$tool" --report-api-errors no \
      --error-exitcode 99 --print-limit 50 \
      "$bin" --gtest_brief=1 --gtest_filter="$filter"
    errors=$(grep -oP 'ERROR SUMMARY: \K[0-9]+' "$log" | awk '{ s += $1 } END { print s + 0 }')
    ran=$(grep -oP '^\[==========\] \K[0-9]+(?= tests? from .* ran)' "$log" | tail -1)
    passed=$(grep -oP '^\[  PASSED  \] \K[0-9]+' "$log" | tail -1)
    rows+=("$(printf '%-10s %-28s %-22s %6s %6s %7s %6ss' "$tool" "$name" "${step_status[-1]}" \
      "${ran:-0}" "${passed:-0}" "$errors" "${step_seconds[-1]}")")
    [[ ${step_status[-1]} == ok && $errors == 0 ]] || bad=1
  }
  for t in "$stage"/tests/cujit_*_tests; do
    [[ -x $t ]] || continue
    name=$(basename "$t")
    checked memcheck "$name" 300 "-$skip" "$t"
  done
  local shared_memory_tests="Reduction.*:Elementwise.TransposedOutputsThroughTiles"
  shared_memory_tests+=":Elementwise.EveryLayoutMatchesTheHost:Elementwise.RowsOfBroadcastColumnsAndRows"
  local tool
  if [[ -x "$stage/tests/cujit_api_tests" ]]; then
    for tool in racecheck synccheck initcheck; do
      checked "$tool" cujit_api_tests 180 "$shared_memory_tests-$skip" "$stage/tests/cujit_api_tests"
    done
  fi
  rm -rf "$CUJIT_CACHE_DIR"
  echo
  echo "============================ compute-sanitizer ============================"
  head -2 "$stage/BUILD_INFO" 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
  printf '%-10s %-28s %-22s %6s %6s %7s %7s\n' tool "test binary" status ran passed errors time
  local row
  for row in "${rows[@]}"; do echo "$row"; done
  echo "total ${SECONDS}s"
  if ((bad)); then
    echo "RESULT: checker errors or test failures"
    exit 1
  fi
  echo "RESULT: clean"
}

# ---------------------------------------------------------------------------------------------
stage_fuzz() {
  set -e
  local targets=("$@")
  ((${#targets[@]})) || targets=(signature snippet record manifest remote)
  cd "$root"
  bash scripts/install_deps.sh
  local fuzz_build="$root/build-fuzz"
  CUJIT_FUZZ_BUILD_DIR="$fuzz_build" CUJIT_FUZZ_TARGETS="${targets[*]}" bash scripts/fuzz.sh 0
  rm -rf "$fuzz_stage"
  mkdir -p "$fuzz_stage"
  local t
  for t in "${targets[@]}"; do
    strip --strip-all -o "$fuzz_stage/cujit_${t}_fuzz" "$fuzz_build/tests/fuzz/cujit_${t}_fuzz"
    xz -T0 -6 "$fuzz_stage/cujit_${t}_fuzz"
    tar -C tests/fuzz/corpus -cJf "$fuzz_stage/corpus_$t.tar.xz" "$t"
  done
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (working tree has changes)')" \
    >"$fuzz_stage/BUILD_INFO"
  du -sh "$fuzz_stage"/*
}

fuzz() {
  local target=$1 seconds=$2 jobs=$3
  cd "$root"
  OUT=${OUT:-$root/out}
  local work
  work=$(mktemp -d /tmp/cujit-fuzz-host.XXXXXX)
  xz -dc "$fuzz_stage/cujit_${target}_fuzz.xz" >"$work/fuzzer"
  chmod +x "$work/fuzzer"
  tar -C "$work" -xJf "$fuzz_stage/corpus_$target.tar.xz"
  mkdir -p "$OUT/fuzz-$target"
  echo "== fuzz $target: $(cat "$fuzz_stage/BUILD_INFO"), $(nproc) CPUs"
  bash scripts/fuzz_many.sh "$work/fuzzer" "$work/$target" "$seconds" "$jobs" "$work/artifacts" \
    2>&1 | tee "$OUT/fuzz-$target/fuzz_many.log"
  local rc=${PIPESTATUS[0]}
  find "$work/artifacts" -mindepth 1 -maxdepth 1 -type d ! -name corpus \
    -exec cp -r {} "$OUT/fuzz-$target/" \;
  return "$rc"
}

case "${1:-}" in
  build) build ;;
  run) run "${2:-}" ;;
  python)
    cd "$root" && unpack_stage && mkdir -p "${OUT:=$root/out}" && export OUT
    export LD_LIBRARY_PATH="$stage:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    python_package
    ;;
  sanitize) sanitize ;;
  stage-fuzz) shift && stage_fuzz "$@" ;;
  fuzz) fuzz "$2" "$3" "$4" ;;
  *)
    sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 2
    ;;
esac
