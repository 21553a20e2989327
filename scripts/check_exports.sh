#!/usr/bin/env bash
# libcujit.so exports the public API and nothing else (issue 31): fails when a dynamic symbol
# of the library is not in namespace cujit, is defined in cujit::detail or in a public class's
# private nested type (Impl, State), or belongs to a library linked in statically (nlohmann, SQLite, zstd, libsodium,
# hiredis, xxHash, fmt), and when the type information of cujit's errors is not exported.
# Prints the counts. That every public header links against what is
# exported is checked by the tests that build programs against the shared library alone
# (one_include, install_consumer, package_deb).
# Usage: scripts/check_exports.sh BUILD_DIR
set -euo pipefail
build=${1:?usage: check_exports.sh BUILD_DIR}
lib="$build/libcujit.so"
[[ -f $lib ]] || { echo "error: $lib not found" >&2; exit 2; }

# Defined dynamic symbols, demangled, without address and type; the version node dropped.
symbols=$(nm -DC --defined-only "$lib" | cut -d' ' -f3- | grep -v '^CUJIT_0$' | sed 's/@@CUJIT_0$//')
total=$(grep -c . <<<"$symbols" || true)
# The qualified name alone: what precedes the parameter list (or the whole of a data symbol).
names=$(sed -E 's/^(typeinfo name for|typeinfo for|vtable for) //; s/\(.*//' <<<"$symbols")
foreign=$(grep -vE '^cujit::' <<<"$names" || true)
internal=$(grep -E '(^|::)detail::' <<<"$names" || true)
third=$(grep -E '(^|[ :])(nlohmann|fmt)::|^(sqlite3|ZSTD|ZDICT|XXH|sodium|crypto|randombytes|redis)' \
  <<<"$names" || true)
echo "libcujit.so exports $total symbols"
status=0
report() {
  local what=$1 list=$2
  [[ -z $list ]] && return 0
  echo "error: $(grep -c . <<<"$list") exported symbols $what:" >&2
  head -20 <<<"$list" | sed 's/^/  /' >&2
  status=1
}
report "outside namespace cujit" "$foreign"
report "of cujit's internals (detail)" "$internal"
report "of a library linked in statically" "$third"
# A program catches cujit's errors by their type information: the library must export it.
for needed in "typeinfo for cujit::Error" "typeinfo for cujit::CompileError" \
  "vtable for cujit::CudaError"; do
  if ! grep -qxF "$needed" <<<"$symbols"; then
    echo "error: libcujit.so does not export $needed" >&2
    status=1
  fi
done
# A public class's private nested type (Impl, State) stays hidden (CUJIT_HIDDEN).
nested=$(grep -E '^cujit::[A-Za-z]+::(Impl|State)::' <<<"$names" || true)
report "of a public class's private nested type" "$nested"
exit $status
