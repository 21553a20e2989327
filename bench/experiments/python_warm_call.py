"""A warm first call from Python, taken apart (issue 33): which compiler libraries the process
maps afterwards, and the first call's time with the output given or allocated, after cujit's
device start. Run it twice with the same CUJIT_CACHE_DIR (the first run compiles)."""

import sys
import time

import cupy as cp

x = cp.ones(4, cp.float32)
z = cp.empty_like(x)
cp.cuda.Device().synchronize()
import cujit  # noqa: E402

cujit.asarray(x)
mode = sys.argv[1]
if mode == "alloc-first":
    cujit.Array._empty((4,), "float32", 0)
f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_warm_diff")
args = (x, x, z) if mode == "given" else (x, x)
t0 = time.perf_counter()
f(*args)
cp.cuda.Device().synchronize()
t1 = time.perf_counter()
f(*args)
cp.cuda.Device().synchronize()
t2 = time.perf_counter()
mapped = sorted({line.split()[-1].rpartition("/")[2] for line in open("/proc/self/maps")
                 if "nvrtc" in line or "cujit" in line or "clang" in line})
print(f"{mode:<12} first {1e3 * (t1 - t0):7.3f} ms, second {1e3 * (t2 - t1):6.3f} ms; {mapped}")
