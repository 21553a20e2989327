#!/usr/bin/env bash
# Builds cujit's .deb with CPack (cmake/CujitPackaging.cmake), checks its metadata and file
# list (dpkg-deb --info / --contents), unpacks it into a scratch root with dpkg -x (no root
# needed, the system is left alone) and builds and runs the consumers against that tree, with
# find_package and with pkg-config (run_check.cmake); then runs the packaged cujit-cache.
#
#   tests/consumer/check_deb.sh BUILD_DIR WORK_DIR CXX_COMPILER
set -euo pipefail
build="$1" work="$2" cxx="$3"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rm -rf "$work"
mkdir -p "$work"
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/package" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; echo "error: cpack failed" >&2; exit 1; }
deb="$(find "$work/package" -maxdepth 1 -name 'cujit_*.deb' | head -1)"
[[ -n $deb ]] || { echo "error: cpack made no cujit_*.deb in $work/package" >&2; exit 1; }
echo "package: $deb ($(stat -c %s "$deb") bytes)"
failed=0

info="$(dpkg-deb --info "$deb")"
echo "$info"
version="$(sed -n 's/^#define CUJIT_VERSION_STRING "\([0-9.]*\)"/\1/p' "$here/../../include/cujit/version.hpp")"
[[ -n $version ]] || { echo "error: no CUJIT_VERSION_STRING in include/cujit/version.hpp" >&2; exit 1; }
for field in "Package: cujit" "Version: $version" "Depends: .*libc6" "Depends: .*libstdc\+\+6" \
  "Architecture: $(dpkg --print-architecture)" "Section: libdevel"; do
  if ! grep -qE "^ *$field" <<<"$info"; then
    echo "error: dpkg-deb --info lacks '$field'" >&2
    failed=1
  fi
done

contents="$(dpkg-deb --contents "$deb" | awk '{print $6}')"
for path in ./usr/include/cujit/cujit.hpp ./usr/include/cujit/allocator.hpp \
  ./usr/lib/libcujit.so "./usr/lib/libcujit.so.$version" ./usr/lib/libcujit-analysis.so \
  ./usr/lib/cmake/cujit/cujitConfig.cmake ./usr/lib/cmake/cujit/cujitConfigVersion.cmake \
  ./usr/lib/cmake/cujit/cujitTargets.cmake ./usr/lib/pkgconfig/cujit.pc ./usr/bin/cujit-cache; do
  if ! grep -qxF "$path" <<<"$contents"; then
    echo "error: the package lacks $path" >&2
    failed=1
  fi
done
((failed == 0)) || exit 1

dpkg-deb -x "$deb" "$work/root"
cmake -DPREFIX="$work/root/usr" -DCONSUMER_SOURCE_DIR="$here" -DWORK_DIR="$work/consumer" \
  -DCXX_COMPILER="$cxx" -P "$here/run_check.cmake"
env -i "$work/root/usr/bin/cujit-cache" --help >/dev/null ||
  { echo "error: the packaged cujit-cache --help failed" >&2; exit 1; }
echo "the .deb installs, and consumers build and run against it"
