#!/usr/bin/env bash
# Builds the API reference of include/cujit/ with Doxygen (docs/Doxyfile), warnings as errors.
# On failure, lists each header line whose declaration lacks a /// comment (or whose comment
# Doxygen cannot read) and exits 1. HTML goes to OUT_DIR/html (default build/api-docs).
#   bash scripts/api_docs.sh [OUT_DIR]        (also the ctest api_docs)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/build/api-docs}"
if ! command -v doxygen >/dev/null; then
  echo "api_docs: doxygen is not installed (Debian: doxygen; scripts/install_deps.sh installs it)" >&2
  exit 1
fi
mkdir -p "$out"
log="$out/doxygen.log"
cd "$root"
if CUJIT_DOCS_OUTPUT="$out" doxygen docs/Doxyfile >"$log" 2>&1; then
  echo "api_docs: the API reference is at $out/html/index.html"
  exit 0
fi
# Doxygen's messages, with paths relative to the repository; repeated ones (a base class's
# member, reported again for each derived class) once.
problems="$(grep -E '^/.*:[0-9]+: ' "$log" | sed "s|^$root/||" | sort -t: -k1,1 -k2,2n -u)"
count="$(grep -c . <<<"$problems" || true)"
echo "api_docs: Doxygen failed on the public headers (docs/Doxyfile treats warnings as errors)." >&2
if ((count > 0)); then
  echo "api_docs: $count declarations lack a /// comment or have a comment Doxygen cannot read;" \
    "add or fix the comment at each FILE:LINE:" >&2
  echo "$problems" >&2
else
  cat "$log" >&2
fi
exit 1
