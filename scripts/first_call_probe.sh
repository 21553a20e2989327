#!/usr/bin/env bash
# Repeats the benchmarks' first-call children in fresh processes: NVRTC alone, a cold call on an
# empty cache directory, then warm calls (disk hits; the last one traced) on that directory.
# Shows how stable first-call times are on the GPU host, once per environment setting in
# PROBE_ENVS ("-" for none, the default), and with --heavy again after a heavy benchmark.
# Usage: [PROBE_ENVS="- LD_BIND_NOW=1"] scripts/first_call_probe.sh [STAGE_DIR] [ROUNDS] [--heavy]
set -u
stage=${1:-.devbuild}
rounds=${2:-4}
# gpu_run.sh stages each binary xz-compressed: unpack them first (idempotent); the benchmarks
# link cujit statically and find the analyser beside them.
find "$stage" -name '*.xz' -exec xz -d -f {} + 2>/dev/null
ln -sfn ../libcujit-analysis.so "$stage/bench/libcujit-analysis.so"
echo "host: $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), up $(cut -d' ' -f1 /proc/uptime) s"
probe() {
  local label=$1 mode b i d
  for mode in ${PROBE_ENVS:--}; do
    local setting=()
    [[ $mode == - ]] || setting=("$mode")
    for b in reduction elementwise; do
      for ((i = 1; i <= rounds; i++)); do
        d=$(mktemp -d)
        run() { local m=${*: -1}; env "${setting[@]}" CUJIT_CACHE_DIR="$d" "${@:1:$#-1}" "$stage/bench/$b" "$m"; }
        n=$(run --cold-nvrtc)
        c=$(run --cold-cujit)
        w="$(run --cold-cujit) | $(run --cold-cujit) | $(run --cold-cujit)"
        t=$(run CUJIT_TRACE_SPECIALIZE=1 --cold-cujit 2>&1 | sed 's/cujit: specialised //' | tr '\n' ' ')
        printf '%-5s %-14s %-11s %d  nvrtc %7.1f  cold %7.1f  warm %s | traced: %s\n' \
          "$label" "$mode" "$b" "$i" "$n" "${c%% *}" "$w" "$t"
        rm -rf "$d"
      done
    done
  done
}
probe start
[[ ${3:-} == --heavy ]] || exit 0
"$stage/bench/reduction" --only full > /dev/null 2>&1
probe after
