#!/usr/bin/env bash
# The Python package as `pip install .` makes it (ctest python_wheel): a wheel built from the
# source tree installs into a fresh venv, holds the module, libcujit and the analyser once each
# (no duplicated libraries), and from outside the source tree imports, specialises a kernel with
# NVRTC and reports a snippet error at its line and column (the analyser found next to libcujit).
# Usage: check_wheel.sh PYTHON SOURCE_DIR WORK_DIR
set -euo pipefail
python="$1" source="$2" work="$3"
rm -rf "$work"
mkdir -p "$work"
# The build dependencies are those installed with python (scripts/install_deps.sh): no download.
"$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$work/dist" \
  -C build-dir="$work/build" "$source"
wheel=$(ls "$work"/dist/cujit-*.whl)
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/pip" install --quiet --no-deps --no-index "$wheel"
listing=$("$python" -m zipfile -l "$wheel" | awk '{print $1}' | grep '^cujit/' | sort)
echo "$listing"
for file in cujit/__init__.py cujit/libcujit.so.0 cujit/libcujit-analysis.so; do
  grep -qx "$file" <<<"$listing" || { echo "check_wheel: $file is missing" >&2; exit 1; }
done
grep -q '^cujit/_cujit\..*\.so$' <<<"$listing" || { echo "check_wheel: no module" >&2; exit 1; }
if grep -E '^cujit/libcujit\.so(\.0\.[0-9.]+)?$' <<<"$listing"; then
  echo "check_wheel: libcujit is in the wheel more than once" >&2
  exit 1
fi
cd "$work"
CUJIT_CACHE_DIR="$work/cache" "$work/venv/bin/python" - <<'PY'
import numpy as np

import cujit

assert cujit.__file__.startswith(__import__("sys").prefix), cujit.__file__
k = cujit.ElementwiseKernel("T x", "T y", "y = x * 2", "wheel_twice")
s = k.specialize(np.empty(16, np.float32), target="sm_90")
assert s.origin == "compiled" and s.binary_size > 0, s
bad = cujit.ElementwiseKernel("T x", "T y", "y = x +* 2", "wheel_typo")
try:
    bad.specialize(np.empty(16, np.float32), target="sm_90")
    raise SystemExit("check_wheel: the typo compiled")
except cujit.CompileError as e:
    assert (e.line, e.column) == (1, 8), (e.line, e.column, str(e))
print("check_wheel: ok,", cujit.__version__, s.binary_size, "bytes")
PY
