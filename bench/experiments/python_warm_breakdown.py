"""Where a warm first call from Python goes (issue 33), as bench/python_calls.py's warm child
makes it (cujit imported with the program's other imports, a disk cache filled by an earlier
process): the call's Python functions (cProfile, cumulative) and cujit's own phases
(CUJIT_TRACE_SPECIALIZE, CUJIT_LOG=debug), in new processes; then first calls of three
kernels in one process (what the first pays once per process), with CUDA's lazy module
loading and without it. Usage: python3 python_warm_breakdown.py (it makes its own cache
directory)."""

import os
import subprocess
import sys
import tempfile

CHILD = r"""
import cProfile, io, pstats, sys, time
import cupy as cp
import cujit
x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
cp.cuda.Device().synchronize()
t0 = time.perf_counter()
f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_warm_parts")
t1 = time.perf_counter()
profile = cProfile.Profile() if sys.argv[1] == "profile" else None
if profile:
    profile.enable()
r = f(x, x)
if profile:
    profile.disable()
t2 = time.perf_counter()
cp.cuda.Device().synchronize()
t3 = time.perf_counter()
print(f"construct {1e3 * (t1 - t0):.3f} ms, call {1e3 * (t2 - t1):.3f} ms, "
      f"synchronize {1e3 * (t3 - t2):.3f} ms", file=sys.stderr)
if profile:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(15)
    print(out.getvalue(), file=sys.stderr)
"""

BEFORE = r"""
import sys, time
import cupy as cp
import cujit
x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
cp.cuda.Device().synchronize()
what = sys.argv[1]
s = time.perf_counter()
if what == "current_device":
    cujit._cujit.current_device()
elif what == "asarray":
    cujit.asarray(x)
elif what == "empty":
    cujit.Array._empty((4,), "float32", 0)
elif what == "stream":
    cujit._cujit.ElementwiseKernel  # nothing: the stream lookup is part of the call
t = time.perf_counter()
f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_before")
f(x, x)
cp.cuda.Device().synchronize()
print(f"{what} {1e3 * (t - s):.3f} ms, then the first call {1e3 * (time.perf_counter() - t):.3f} ms")
"""

THREE = r"""
import time
import cupy as cp
import cujit
x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
out = cp.empty_like(x)
cp.cuda.Device().synchronize()
times = []
for name, args in (("a", (x, x)), ("b", (x, x)), ("c", (x, x, out))):
    f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_three_" + name)
    s = time.perf_counter()
    f(*args)
    cp.cuda.Device().synchronize()
    times.append(f"{name} {1e3 * (time.perf_counter() - s):.3f} ms")
print(", ".join(times))
"""

with tempfile.TemporaryDirectory() as cache:
    env = dict(os.environ, CUJIT_CACHE_DIR=cache)
    subprocess.run([sys.executable, "-c", CHILD, "plain"], env=env, check=True,
                   capture_output=True)  # compiles into the cache
    for mode, extra in (("plain", {}), ("plain", {}), ("plain", {}),
                        ("traced", {"CUJIT_TRACE_SPECIALIZE": "1", "CUJIT_LOG": "debug"}),
                        ("profile", {})):
        out = subprocess.run([sys.executable, "-c", CHILD, mode], env=dict(env, **extra),
                             capture_output=True, text=True, check=True)
        print(f"-- {mode}\n{out.stderr.strip()}")
    subprocess.run([sys.executable, "-c", THREE], env=env, check=True, capture_output=True)
    for extra in ({}, {}, {"CUDA_MODULE_LOADING": "EAGER"}, {"CUDA_MODULE_LOADING": "EAGER"}):
        out = subprocess.run([sys.executable, "-c", THREE], env=dict(env, **extra),
                             capture_output=True, text=True, check=True)
        print(f"-- three kernels {extra}: {out.stdout.strip()}")
    subprocess.run([sys.executable, "-c", BEFORE, "nothing"], env=env, check=True,
                   capture_output=True)
    for what in ("nothing", "current_device", "asarray", "empty") * 2:
        out = subprocess.run([sys.executable, "-c", BEFORE, what], env=env, capture_output=True,
                             text=True, check=True)
        print(f"-- before the call: {out.stdout.strip()}")
