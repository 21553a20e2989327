#!/usr/bin/env bash
# Checks cujit's layering with the project's own files.
#
#   scripts/check_layers.sh [BUILD_DIR]
#
# 1. The include graph between folders (support, core, codegen, cache, runtime, analysis,
#    include/cujit), printed as "from -> to: count"; an edge into runtime/ from support/, core/,
#    codegen/, cache/ or analysis/, an edge from support/ or core/ into any other folder of the
#    library, an edge into analysis/
#    (the clang analyser module, which libcujit loads and never includes), or cuda.h / nvrtc.h
#    included outside runtime/ fails.
# 2. With BUILD_DIR (a configured and built tree): the same at the symbol level. No object of
#    core/, codegen/ or cache/ may use a symbol that only runtime/ defines (a call back up
#    that no #include shows, such as a function declared in a public header). libcujit.so
#    holds no clang or LLVM symbol and needs no OpenSSL; libcujit-analysis.so exports only its
#    entry point.
# 3. With universal-ctags installed: no function in support/, core/, codegen/, cache/, runtime/,
#    analysis/ or tools/ is longer than 120 lines (STYLE.md: under ~80, none over 120).
# Exit status 1 when a check fails.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build="${1:-}"
failed=0
layers=(support core codegen cache runtime analysis)

echo "include edges between folders:"
for from in "${layers[@]}"; do
  for to in "${layers[@]}" include/cujit; do
    [[ $from == "$to" ]] && continue
    pattern="#include \"$to/"
    [[ $to == include/cujit ]] && pattern="#include <cujit/"
    n=$(cat "$from"/*.cpp "$from"/*.hpp 2>/dev/null | grep -c "^$pattern" || true)
    ((n > 0)) || continue
    echo "  $from -> $to: $n"
    if [[ $to == runtime && $from != runtime ]] ||
      [[ ($from == core || $from == support) && $to != include/cujit ]] ||
      [[ $to == analysis ]]; then
      echo "  error: $from/ must not include $to/" >&2
      failed=1
    fi
  done
done
for from in support core codegen cache analysis; do
  if grep -ln '^#include <\(cuda\|nvrtc\)\.h>' "$from"/*.cpp "$from"/*.hpp 2>/dev/null; then
    echo "  error: $from/ includes cuda.h or nvrtc.h (only runtime/ talks to the driver)" >&2
    failed=1
  fi
done

if [[ -n $build ]]; then
  # The library's objects are compiled once, in the object library cujit_objects (issue 31).
  objects="$build/CMakeFiles/cujit_objects.dir"
  if [[ ! -d $objects/runtime ]]; then
    echo "error: no objects under $objects (build the library first)" >&2
    exit 1
  fi
  defined() { nm --defined-only -C "$@" 2>/dev/null | awk '$2 ~ /^[TWVBDR]$/ {$1=""; $2=""; sub(/^  /, ""); print}' | sort -u; }
  upper=$(mktemp) lower=$(mktemp)
  defined "$objects"/runtime/*.o > "$upper"
  defined "$objects"/support/*.o "$objects"/core/*.o "$objects"/codegen/*.o "$objects"/cache/*.o \
    > "$lower"
  echo "symbol edges into runtime/:"
  for from in support core codegen cache; do
    used=$(nm --undefined-only -C "$objects/$from"/*.o 2>/dev/null | awk '$1 == "U" {$1=""; sub(/^ /, ""); print}' |
      sort -u | comm -12 - "$upper" | comm -23 - "$lower")
    n=$(printf '%s' "$used" | grep -c . || true)
    echo "  $from -> runtime: $n"
    if ((n > 0)); then
      printf '    %s\n' "$used" | head -20 >&2
      failed=1
    fi
  done
  rm -f "$upper" "$lower"

  echo "libraries:"
  lib="$build/libcujit.so" module="$build/libcujit-analysis.so"
  if [[ ! -f $lib || ! -f $module ]]; then
    echo "error: $lib or $module is missing (build the library first)" >&2
    exit 1
  fi
  # Both tables: a stripped library has only the dynamic one.
  n=$( (nm -C "$lib" 2>/dev/null; nm -DC "$lib") | grep -cE 'clang::|llvm::' || true)
  echo "  libcujit.so: $n clang/LLVM symbols"
  if ((n > 0)); then
    echo "  error: libcujit.so contains clang or LLVM (they belong in libcujit-analysis.so)" >&2
    failed=1
  fi
  if readelf -d "$lib" | grep 'NEEDED' | grep -qE 'lib(ssl|crypto|clang|LLVM)'; then
    echo "  error: libcujit.so needs OpenSSL, clang or LLVM:" >&2
    readelf -d "$lib" | grep NEEDED >&2
    failed=1
  fi
  exported=$(nm -D --defined-only "$module" | awk '{print $3}' | sort -u | tr '\n' ' ')
  echo "  libcujit-analysis.so exports: $exported"
  if [[ $exported != "cujit_analysis_entry_v1 " ]]; then
    echo "  error: libcujit-analysis.so must export cujit_analysis_entry_v1 only" >&2
    failed=1
  fi
fi

if command -v ctags >/dev/null && ctags --version 2>/dev/null | grep -q Universal; then
  long=$(ctags --fields=+ne --c++-kinds=f -o - support/*.cpp core/*.cpp codegen/*.cpp cache/*.cpp \
    runtime/*.cpp analysis/*.cpp tools/cujit_cache/*.cpp |
    awk -F'\t' '{l=""; e=""; for (i = 4; i <= NF; i++) { if ($i ~ /^line:/) l = substr($i, 6);
      if ($i ~ /^end:/) e = substr($i, 5) } if (e != "" && e - l + 1 > 120) print e - l + 1, $2, $1}')
  if [[ -n $long ]]; then
    echo "functions over 120 lines:" >&2
    echo "$long" >&2
    failed=1
  else
    echo "functions: none over 120 lines"
  fi
else
  echo "functions: universal-ctags not installed, length check skipped"
fi
exit $failed
