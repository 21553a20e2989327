"""Why a cold first call from Python took 2.5-6 x the C++ benchmark's (issue 33): new
processes with an empty cache, CuPy imported (and its context made) or not, the snippet
analyser found or not (CUJIT_ANALYSIS_PATH), the call and its NVRTC time traced."""

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import sys, time
with_cupy = sys.argv[1] == "cupy"
if with_cupy:
    import cupy as cp
    x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
    cp.cuda.Device().synchronize()
import cujit
if not with_cupy:
    x = cujit.Array._empty((1 << 20,), "float32", 0)
f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_cold_diff")
s = time.perf_counter()
f(x, x)
ms = (time.perf_counter() - s) * 1e3
maps = sorted({l.split()[-1] for l in open("/proc/self/maps") if "nvrtc" in l or "cuda" in l.split()[-1]})
print(f"first call {ms:.1f} ms; mapped: {maps}")
"""

for analyser in ("on", "off") * 4:
    for mode in ("cupy", "nocupy"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, CUJIT_CACHE_DIR=cache, CUJIT_TRACE_SPECIALIZE="1",
                       CUJIT_LOG="info")
            if analyser == "off":
                env["CUJIT_ANALYSIS_PATH"] = "/nonexistent/libcujit-analysis.so"
            out = subprocess.run([sys.executable, "-c", CHILD, mode], env=env,
                                 capture_output=True, text=True, timeout=300)
            compiled = [l for l in out.stderr.splitlines() if "compiled in" in l]
            print(f"analyser {analyser}, {mode}: {out.stdout.strip().split(';')[0]}; {compiled}")
