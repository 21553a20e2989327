#!/usr/bin/env bash
# Installs cujit's build dependencies from Debian's packages, and what the Python package's
# build and tests need from PyPI (python/requirements-dev.txt) into the python3 on PATH.
# The CUDA 13 toolkit is expected at /usr/local/cuda (not installed here).
set -euo pipefail
packages=(
  cmake g++ make
  libsqlite3-dev libsodium-dev libzstd-dev libhiredis-dev
  redis-server  # tests of the fleet tier run a real server on loopback and unix sockets
  libclang-14-dev llvm-14-dev
  clang-14 libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer and the sanitizers
  universal-ctags  # scripts/check_layers.sh: function lengths
  doxygen  # scripts/api_docs.sh: the API reference, warnings as errors
  pkg-config dpkg-dev  # tests/consumer: the pkg-config consumer; the .deb's dependencies
  ninja-build  # tests/consumer/check_subproject.sh: what a parent project's `all` builds
  libgtest-dev libfmt-dev libcli11-dev nlohmann-json3-dev libxxhash-dev libdlpack-dev
)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  $sudo apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [[ ! -x /usr/local/cuda/bin/nvcc && ! -f /usr/local/cuda/include/nvrtc.h ]]; then
  echo "error: the CUDA toolkit was not found at /usr/local/cuda" >&2
  exit 1
fi
# The Python package (python/): nanobind and scikit-build-core to build it, NumPy and pytest to
# test it. Skipped when they are importable already.
if ! python3 -c "import nanobind, scikit_build_core, numpy, pytest" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check \
    -r "$(dirname "${BASH_SOURCE[0]}")/../python/requirements-dev.txt"
fi
