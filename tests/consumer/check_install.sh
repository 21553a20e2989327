#!/usr/bin/env bash
# Installs a built cujit into a scratch prefix and checks that the installed tree runs from
# there alone, wherever the prefix is moved:
#  - every installed ELF file has only $ORIGIN-relative RUNPATH/RPATH entries (none at all is
#    fine; an empty entry, which means the current directory, is not);
#  - libcujit-analysis.so is installed beside libcujit.so, with no RUNPATH;
#  - bin/cujit-cache runs with an empty environment (no LD_LIBRARY_PATH), and finds the
#    snippet analyser in the prefix's library directory (it links cujit statically, so the
#    module is not beside its library; codegen/analysis_loader.cpp);
#  - libcujit.so names no NVRTC, driver or LLVM library as DT_NEEDED (it loads NVRTC and the
#    driver with dlopen).
#
#  - with SIZE_BUDGET (bytes, > 0), the stripped libcujit.so is at most that large.
#
#   tests/consumer/check_install.sh BUILD_DIR WORK_DIR [SIZE_BUDGET]
set -euo pipefail
build="$1" work="$2" budget="${3:-0}"
rm -rf "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
prefix="$work/prefix"
failed=0

runpath_of() {
  readelf -d "$1" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]$/\2/p'
}

checked=0
while IFS= read -r -d '' file; do
  [[ $(head -c 4 "$file" | od -An -c | tr -d ' ') == '177ELF' ]] || continue
  checked=$((checked + 1))
  name="${file#"$prefix"/}"
  while IFS= read -r -d ':' entry; do
    if [[ $entry != '$ORIGIN'* ]]; then
      echo "error: $name: RUNPATH entry '$entry' is not \$ORIGIN-relative" >&2
      failed=1
    fi
  done < <(runpath=$(runpath_of "$file"); [[ -n $runpath ]] && printf '%s:' "$runpath")
  echo "$name: RUNPATH '$(runpath_of "$file")'"
done < <(find "$prefix" -type f -print0)

lib="$(dirname "$(find "$prefix" -name 'libcujit.so.*.*' -type f | head -1)")"
if [[ ! -f $lib/libcujit-analysis.so ]]; then
  echo "error: libcujit-analysis.so is not installed beside libcujit.so ($lib)" >&2
  failed=1
elif [[ -n $(runpath_of "$lib/libcujit-analysis.so") ]]; then
  echo "error: libcujit-analysis.so has a RUNPATH" >&2
  failed=1
fi
if readelf -d "$lib"/libcujit.so.*.* | grep -E 'NEEDED.*\[lib(nvrtc|cuda|LLVM|clang|crypto|ssl|tinfo)'; then
  echo "error: libcujit.so depends on a compiler, driver or crypto library (above)" >&2
  failed=1
fi
if ((budget > 0)); then
  stripped="$work/libcujit.stripped"
  strip --strip-unneeded -o "$stripped" "$lib"/libcujit.so.*.*
  size=$(stat -c %s "$stripped")
  echo "stripped libcujit.so: $size bytes (budget $budget)"
  if ((size > budget)); then
    echo "error: the stripped libcujit.so is $size bytes, over its budget of $budget" >&2
    failed=1
  fi
fi
# The licence and the notices of what the binaries link in.
for doc in LICENSE NOTICE licenses/sqlite.txt licenses/llvm-clang.txt; do
  if [[ ! -f $prefix/share/doc/cujit/$doc ]]; then
    echo "error: share/doc/cujit/$doc is not installed" >&2
    failed=1
  fi
done
if ((checked < 3)); then
  echo "error: only $checked ELF files installed (libcujit, its analyser, cujit-cache expected)" >&2
  failed=1
fi
if ! env -i "$prefix/bin/cujit-cache" --help >/dev/null; then
  echo "error: $prefix/bin/cujit-cache --help failed with an empty environment" >&2
  failed=1
fi
# A snippet error makes the analyser load (to point at the user's line); compiling needs NVRTC
# but no GPU. Where NVRTC is missing the tool says so and the check is skipped.
manifest="$work/error.jsonl"
params='{"dtype":"float32","load_output":false,"raw_contiguous":true,"raw_view_used":false,"row_broadcast":false,"scalar":false,"transposed":false,"used":true}'
printf '%s\n' '{"after_loop":"","in_params":"T x","kind":"elementwise","loop_prep":"","name":"typo","operation":"y = x * not_declared","options":[],"out_params":"T y","preamble":"","reduce_dims":true,"specialization":{"block_size":256,"index64":false,"layout":0,"ndim":1,"params":['"$params,$params"'],"tile_rows":64,"vec":4}}' >"$manifest"
loaded=$(env -i LD_DEBUG=files "$prefix/bin/cujit-cache" precompile "$manifest" --arch sm_80 \
  -o "$work/error.db" 2>&1 || true)
if grep -q "NVRTC" <<<"$loaded" && ! grep -q "not_declared" <<<"$loaded"; then
  echo "note: no NVRTC here; the analyser's discovery by the installed tool is not checked"
elif ! grep -q "file=$prefix/bin/../${lib#"$prefix"/}/libcujit-analysis.so .*dynamically loaded" <<<"$loaded"; then
  echo "error: the installed cujit-cache did not load $lib/libcujit-analysis.so on a snippet error:" >&2
  grep -i "analy\|error" <<<"$loaded" | head -5 >&2
  failed=1
else
  echo "bin/cujit-cache loads the analyser from $lib"
fi
exit $failed
