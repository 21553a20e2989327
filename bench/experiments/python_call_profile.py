"""Where a Python call's host time goes (issue 33): the whole call on 1-element CuPy arrays
against the same call with the stream given (no current-stream lookup), on cujit Arrays (no
CuPy attribute reads), CuPy's own ElementwiseKernel and an empty RawKernel launch (about the
driver's floor), and the attribute reads the call path makes per CuPy array. Medians of 7
rounds of 20,000 calls, interleaved so that the machine's drift hits every row alike."""

import statistics
import time

import cupy as cp

import cujit

k = cujit.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "prof_add")
ck = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "prof_add_cupy")
empty = cp.RawKernel('extern "C" __global__ void nothing() {}', "nothing")
empty_cujit = cujit.RawKernel('extern "C" __global__ void nothing() {}', "nothing")
x, y, z = (cp.ones(1, cp.float32) for _ in range(3))
ax, ay, az = (cujit.asarray(a) for a in (x, y, z))
stream = cp.cuda.get_current_stream()
k(x, y, z)
ck(x, y, z)
empty((1,), (1,), ())
empty_cujit((1,), (1,), ())
cp.cuda.Device().synchronize()

steps = {
    "cujit, CuPy arrays": lambda: k(x, y, z),
    "cujit, stream given": lambda: k(x, y, z, stream=stream),
    "cujit, cujit Arrays": lambda: k(ax, ay, az),
    "cupy.ElementwiseKernel": lambda: ck(x, y, z),
    "cupy.RawKernel, empty": lambda: empty((1,), (1,), ()),
    "cujit.RawKernel, empty": lambda: empty_cujit((1,), (1,), ()),
    "x.data.ptr": lambda: x.data.ptr,
    "x.data.device_id": lambda: x.data.device_id,
    "x.shape, x.strides": lambda: (x.shape, x.strides),
    "current stream": lambda: cp.cuda.get_current_stream().ptr,
}


def per_call(f, n=20000):
    start = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - start) * 1e6 / n


rounds = {name: [] for name in steps}
for _ in range(7):
    for name, f in steps.items():
        rounds[name].append(per_call(f))
    cp.cuda.Device().synchronize()
base = statistics.median(rounds["cupy.ElementwiseKernel"])
for name, times in rounds.items():
    m = statistics.median(times)
    print(f"{name:<26} {m:8.3f} us   {m / base:5.2f} x cupy.ElementwiseKernel")
