#!/usr/bin/env python3
"""cujit's Python package against CuPy and PyTorch, in one run on one GPU (issue 33):

  host   host time per call of a 1-element elementwise kernel, output given: cujit on CuPy
         arrays and on PyTorch tensors, cupy.ElementwiseKernel, torch.add(out=). The mean over
         20,000 calls after 500 of warm-up, the median of 7 such rounds (time.perf_counter),
         the four calls taken in turn in each round.
  first  the first call in a new process of an ElementwiseKernel and of a ReductionKernel never
         seen before: cold (empty cache directory) and warm (the same directory, a new
         process), cujit and CuPy; from the kernel's construction to its synchronised result,
         medians of 3 processes. cujit imported with the program's other imports, and just
         before the kernel (then nothing overlaps its cache's read-ahead).
  device throughput of z = x + y and of a sum over 2^28 float32 through the Python package,
         against CuPy's kernels and the device-to-device copy: CUDA events around each call
         after warm-up, the median of 30.

Usage: python_calls.py [--json PATH]   (needs cujit importable, CuPy; PyTorch optional)
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import cupy as cp

import cujit

try:
    import torch
except ImportError:  # the PyTorch rows are left out
    torch = None

ROWS = []


def record(case, library, value, unit, note=""):
    ROWS.append({"bench": "python", "case": case, "library": library, "value": value,
                 "unit": unit, "note": note, "device": cp.cuda.runtime.getDeviceProperties(0)
                 ["name"].decode()})
    print(f"{case:<28} {library:<34} {value:>10.3f} {unit:<5} {note}")


def host_us(calls, n=20000, rounds=7):
    """Median host microseconds per call of each of `calls` (name -> function), in rounds that
    take every call in turn, so that the machine's drift (10-40% between minutes on the shared
    hosts) hits every row alike."""
    for call in calls.values():
        for _ in range(500):
            call()
    cp.cuda.Device().synchronize()
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(n):
                call()
            samples[name].append((time.perf_counter() - start) * 1e6 / n)
            cp.cuda.Device().synchronize()
    return {name: statistics.median(times) for name, times in samples.items()}


def bench_host():
    add = "z = x + y"
    ours = cujit.ElementwiseKernel("float32 x, float32 y", "float32 z", add, "py_host_add")
    theirs = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", add, "py_host_add")
    x, y, z = (cp.ones(1, cp.float32) for _ in range(3))
    calls = {"cujit (cupy arrays)": lambda: ours(x, y, z),
             "cupy.ElementwiseKernel": lambda: theirs(x, y, z)}
    if torch is not None:
        tx, ty, tz = (torch.ones(1, device="cuda") for _ in range(3))
        calls["cujit (torch tensors)"] = lambda: ours(tx, ty, tz)
        calls["torch.add(out=)"] = lambda: torch.add(tx, ty, out=tz)
    for name, us in host_us(calls).items():
        record("host_call_1elem", name, us, "us")


CHILD = r"""
import json, sys, time
lib, kind, order = sys.argv[1], sys.argv[2], sys.argv[3]
import cupy as cp
if lib == "cujit" and order == "top":
    import cujit as k  # with the program's other imports, as usually written
x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
cp.cuda.Device().synchronize()
if lib == "cujit" and order == "late":
    import cujit as k  # just before the kernel: nothing overlaps its cache's read-ahead
if lib == "cupy":
    k = cp
start = time.perf_counter()
if kind == "elementwise":
    f = k.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_first_diff")
    r = f(x, x)
else:
    f = k.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "py_first_l2")
    r = f(x)
cp.cuda.Device().synchronize()
print(json.dumps({"ms": (time.perf_counter() - start) * 1e3}))
"""


def first_call_ms(lib, kind, order, env):
    out = subprocess.run([sys.executable, "-c", CHILD, lib, kind, order], env=env,
                         capture_output=True, text=True, timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])["ms"]


def bench_first_calls(repeats=3):
    """Cold: the median of `repeats` new processes, each on an empty cache directory. Warm:
    the median of `repeats` new processes on the directory a cold call filled. cujit's rows
    import it with the program's other imports ("top"), and just before the call ("late")."""
    for kind in ("elementwise", "reduction"):
        for lib, var, orders in (("cujit", "CUJIT_CACHE_DIR", ("top", "late")),
                                 ("cupy", "CUPY_CACHE_DIR", ("top",))):
            cold, warm = [], {order: [] for order in orders}
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as cache:
                    env = dict(os.environ, **{var: cache})
                    cold.append(first_call_ms(lib, kind, "top", env))
                    for order in orders:
                        warm[order].append(first_call_ms(lib, kind, order, env))
            record(f"first_call_{kind}_cold", lib, statistics.median(cold), "ms",
                   f"new process, empty cache; median of {repeats}")
            for order in orders:
                name = lib + (" (imported late)" if order == "late" else "")
                record(f"first_call_{kind}_warm", name, statistics.median(warm[order]), "ms",
                       f"new process, cache on disk; median of {repeats}")


def device_us(call, samples=30):
    for _ in range(5):
        call()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(samples):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return statistics.median(times)


def bench_device():
    n = 1 << 28
    x = cp.random.rand(n, dtype=cp.float32) + 0.5
    y = cp.random.rand(n, dtype=cp.float32) + 0.5
    z = cp.empty_like(x)
    copy_us = device_us(lambda: z.__setitem__(slice(None), x))
    copy_gbps = 2 * 4 * n / copy_us / 1e3
    record("d2d_copy", "cupy", copy_gbps, "GB/s", f"{copy_us:.1f} us")
    add = "z = x + y"
    ours = cujit.ElementwiseKernel("float32 x, float32 y", "float32 z", add, "py_dev_add")
    theirs = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", add, "py_dev_add")
    for name, call in (("cujit", lambda: ours(x, y, z)), ("cupy.ElementwiseKernel",
                                                          lambda: theirs(x, y, z))):
        us = device_us(call)
        gbps = 3 * 4 * n / us / 1e3
        record("add_2^28_f32", name, gbps / copy_gbps, "x copy", f"{gbps:.0f} GB/s")
    assert bool((z == x + y).all())
    ours_sum = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "py_dev_sum")
    theirs_sum = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "py_dev_sum")
    for name, call in (("cujit", lambda: ours_sum(x)), ("cupy.ReductionKernel",
                                                        lambda: theirs_sum(x))):
        us = device_us(call)
        gbps = 4 * n / us / 1e3
        record("sum_2^28_f32", name, gbps / copy_gbps, "x copy", f"{gbps:.0f} GB/s read")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    bench_host()
    bench_first_calls()
    bench_device()
    if args.json:
        with open(args.json, "a") as f:
            for row in ROWS:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
