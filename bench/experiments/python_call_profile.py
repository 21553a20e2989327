"""Where a Python call's host time goes (issue 33): each step of cujit's call path timed alone
on 1-element CuPy arrays, then cProfile's top entries over 20,000 calls."""

import cProfile
import pstats
import time

import cupy as cp

import cujit
from cujit import _arrays, _kernels

k = cujit.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "prof_add")
x, y, z = (cp.ones(1, cp.float32) for _ in range(3))
k(x, y, z)
cp.cuda.Device().synchronize()


def per_call(f, n=20000):
    for _ in range(500):
        f()
    start = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - start) * 1e6 / n


views = [_arrays.describe(a, "k") for a in (x, y, z)]
steps = {
    "whole call": lambda: k(x, y, z),
    "describe(x)": lambda: _arrays.describe(x, "k"),
    "_cupy_describe(x)": lambda: _arrays._cupy_describe(x),
    "x.data.ptr": lambda: x.data.ptr,
    "x.device.id": lambda: x.device.id,
    "x.dtype.name": lambda: x.dtype.name,
    "Array._view(...)": lambda: cujit.Array._view(x.data.ptr, x.shape, x.strides, "float32", 0, x),
    "_arguments(args)": lambda: _kernels._arguments((x, y, z), "k"),
    "current stream": lambda: cp.cuda.get_current_stream().ptr,
    "_call (C++ only)": lambda: k._kernel._call(views, -1, 0, 0, 0, None, False),
}
for name, f in steps.items():
    print(f"{name:<24} {per_call(f):8.3f} us")
cp.cuda.Device().synchronize()
profile = cProfile.Profile()
profile.enable()
for _ in range(20000):
    k(x, y, z)
profile.disable()
pstats.Stats(profile).sort_stats("tottime").print_stats(12)
