#!/usr/bin/env bash
# Writes base.cuh and sel.cuh (git-ignored by being generated here, not committed) from the
# golden generated scan (tests/codegen/golden/scan_flat_f32.txt): the kernel renamed scan_base,
# the polling sleeps as macros (LAB_SLEEP_TILE, LAB_SLEEP_GROUP); sel.cuh scans int counts and
# stops before the kernel. Run from anywhere before building lab.cu or sel.cu.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
golden="$here/../../../tests/codegen/golden/scan_flat_f32.txt"
{
  printf '#ifndef LAB_SLEEP_TILE\n#define LAB_SLEEP_TILE 20\n#endif\n'
  printf '#ifndef LAB_SLEEP_GROUP\n#define LAB_SLEEP_GROUP 32\n#endif\n'
  sed -n '/^#ifndef CUJIT_DEVICE_SUPPORT/,$p' "$golden" |
    sed 's/cujit_scan_cumsum/scan_base/; s/__nanosleep(20)/__nanosleep(LAB_SLEEP_TILE)/; s/__nanosleep(32)/__nanosleep(LAB_SLEEP_GROUP)/'
} > "$here/base.cuh"
cut_at=$(grep -n '^#define _CJ_B ' "$here/base.cuh" | cut -d: -f1)
head -n $((cut_at - 1)) "$here/base.cuh" | sed 's/^typedef float _cj_T;/typedef int _cj_T;/' > "$here/sel.cuh"
echo "wrote $here/base.cuh and $here/sel.cuh"
