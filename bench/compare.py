#!/usr/bin/env python3
"""CuPy and PyTorch on the cases cujit's C++ benchmarks measure, timed the same way.

Modes:
  compare.py --json PATH [--quick] [--repeats N]   measure; append JSON lines to PATH
  compare.py --plot --json PATH [--png FILE]       draw elementwise throughput vs size
  compare.py --summary --json PATH                 print the key figures of every record
  compare.py --cold-child                          (internal) one cold ReductionKernel call

Method (as bench/bench_util.hpp): every sample is one call between its own pair of CUDA
events; a spin kernel queued ahead of each group of samples keeps the stream ahead of the
GPU, so the events time device work and not Python's launch latency (measured separately as
host time per call); warm-up first, then the median of many samples with min and max;
inputs that would fit in L2 are rotated among enough sets to fill four L2 caches; data are
random and never zero (the same hash as the C++ benchmarks, so both see the same values);
every output is poisoned with NaN first and checked afterwards.

Records (one JSON object per line, the format of bench_util.hpp's JsonLines):
  bench   "cupy" (CuPy functions and ElementwiseKernel), "cupy_reduction_kernel",
          "torch"; the C++ side writes "baseline", "cujit_elementwise", ...
  case    copy, add, add_broadcast, add_transposed, add_transposed_mixed, host_call_1elem, sum,
          l2norm, sum_axis0, sum_axis1, max_rows_vocab, first_call_cold, first_call_disk_cache,
          second_call, expr_gelu, expr_sqdiff_rows, expr_softmax_rows (compare_expressions.py)
  size    elements (bytes for copy); gbps and us are medians; ratio is the fraction of
          the device-to-device copy bandwidth measured in the same run.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback

import compare_expressions
from compare_expressions import bench_expressions
from compare_scan import bench_scans

L2_ROTATION_FACTOR = 4
MAX_SPIN_US = 10000.0
MIN_SPIN_US = 50.0
MAX_GROUP = 32
EVENT_RECORD_US = 10.0  # generous host cost of two event records from Python

# The same kernels as bench_util.hpp's Kernels (spin, random fill).
HELPER_SOURCE = r"""
typedef unsigned long long u64;
__device__ inline u64 cujit_bench_now() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
extern "C" __global__ void cujit_bench_spin(u64 ns) {
  const u64 start = cujit_bench_now();
  while (cujit_bench_now() - start < ns) {
  }
}
__device__ inline unsigned cujit_bench_hash(u64 i, unsigned seed) {
  u64 z = i + 0x9E3779B97F4A7C15ull * (u64(seed) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return unsigned((z ^ (z >> 31)) >> 32);
}
extern "C" __global__ void cujit_bench_fill_f32(float* out, u64 n, unsigned seed) {
  for (u64 i = blockIdx.x * u64(blockDim.x) + threadIdx.x; i < n; i += u64(gridDim.x) * blockDim.x) {
    const unsigned h = cujit_bench_hash(i, seed);
    out[i] = __uint_as_float((h & 0x80000000u) | 0x3f800000u | (h & 0x007fffffu));
  }
}
"""

# Labels of the implementations in the plot and the summary.
LABELS = {
    "baseline": "raw float4 kernel (cuLaunchKernel)",
    "cujit_elementwise": "cujit ElementwiseKernel",
    "cupy": "CuPy ElementwiseKernel",
    "torch": "PyTorch torch.add",
}


# ---------------------------------------------------------------------------------------------
# Measuring (needs CuPy; PyTorch is optional)


class Bench:
    """CuPy (and PyTorch, when importable) with the helpers every case uses."""

    def __init__(self, args):
        import cupy

        self.cp = cupy
        self.args = args
        self.repeats = args.repeats
        self.failures = []
        device = cupy.cuda.Device(0)
        props = cupy.cuda.runtime.getDeviceProperties(0)
        self.device_name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        self.l2_bytes = int(device.attributes["L2CacheSize"])
        self.sm_count = int(device.attributes["MultiProcessorCount"])
        module = cupy.RawModule(code=HELPER_SOURCE)
        self._spin = module.get_function("cujit_bench_spin")
        self._fill = module.get_function("cujit_bench_fill_f32")
        self.copy_gbps = float("nan")
        self.json = open(args.json, "a") if args.json else None
        try:
            import torch

            torch.cuda.init()
            self.torch = torch
        except Exception as error:  # PyTorch is optional
            print(f"compare.py: PyTorch unavailable ({error}); its cases are skipped")
            self.torch = None
        print(
            f"device: {self.device_name}, {self.sm_count} SMs, L2 {self.l2_bytes / 2**20:.1f} MiB; "
            f"CuPy {cupy.__version__}"
            + (f", PyTorch {self.torch.__version__}" if self.torch else "")
            + f", CUPY_ACCELERATORS={os.environ.get('CUPY_ACCELERATORS', '(default)')}"
        )

    # -- data ------------------------------------------------------------------------------

    def random(self, n, seed, shape=None):
        """n float32 values of magnitude [1, 2), random sign: never zero."""
        x = self.cp.empty(n, dtype=self.cp.float32)
        grid = max(1, min((n + 255) // 256, self.sm_count * 16))
        self._fill((grid,), (256,), (x, self.cp.uint64(n), self.cp.uint32(seed)))
        return x.reshape(shape) if shape is not None else x

    def rotation_sets(self, bytes_per_set):
        target = L2_ROTATION_FACTOR * self.l2_bytes
        return max(1, -(-target // bytes_per_set))

    def free(self):
        """Returns cached blocks to the device. Cases set their arrays to None first: a closure
        still refers to them, so `del` would not release them."""
        self.cp.get_default_memory_pool().free_all_blocks()
        if self.torch is not None:
            self.torch.cuda.empty_cache()

    def as_torch(self, array):
        return self.torch.from_dlpack(array)

    # -- timing ----------------------------------------------------------------------------

    def time_device(self, work, repeats=None, warmup=10):
        """Per-call device time of work(i) in microseconds: (median, min, max)."""
        cp = self.cp
        repeats = repeats or self.repeats
        stream = cp.cuda.get_current_stream()
        stream.synchronize()
        # The second half of the warm-up (after compilation) measures the host's time per
        # call; the spin ahead of each group of samples must outlast enqueuing the group.
        half = warmup // 2
        for i in range(warmup):
            if i == half:
                start = time.perf_counter()
            work(i)
        host_us = (time.perf_counter() - start) * 1e6 / (warmup - half) + EVENT_RECORD_US
        stream.synchronize()
        group = int(min(max(MAX_SPIN_US / (2.0 * host_us), 1), MAX_GROUP))
        spin_ns = int(1e3 * min(max(2.0 * host_us * group, MIN_SPIN_US), MAX_SPIN_US))
        starts = [cp.cuda.Event() for _ in range(repeats)]
        stops = [cp.cuda.Event() for _ in range(repeats)]
        for r in range(repeats):
            if r % group == 0:
                self._spin((1,), (1,), (cp.uint64(spin_ns),))
            starts[r].record()
            work(warmup + r)
            stops[r].record()
        stops[-1].synchronize()
        samples = sorted(1e3 * cp.cuda.get_elapsed_time(a, b) for a, b in zip(starts, stops))
        n = len(samples)
        median = samples[n // 2] if n % 2 else 0.5 * (samples[n // 2 - 1] + samples[n // 2])
        return median, samples[0], samples[-1]

    def check_torch_stream(self):
        """The timer records CuPy events on CuPy's current stream (the legacy default
        stream); PyTorch must launch on that same stream for the events to bracket its work."""
        handle = self.torch.cuda.current_stream().cuda_stream
        if handle != self.cp.cuda.get_current_stream().ptr:
            raise RuntimeError(f"PyTorch's current stream ({handle:#x}) is not CuPy's")

    # -- output ----------------------------------------------------------------------------

    def record(self, bench, case, size, nbytes, timing, dtype="float32", shape="", note="",
               ratio=True, us=None):
        median, lo, hi = timing if timing is not None else (us, None, None)
        gbps = nbytes / (median * 1e3) if nbytes and median else None
        rec = {
            "bench": bench,
            "case": case,
            "size": int(size),
            "dtype": dtype,
            "gbps": gbps,
            "us": median,
            "us_min": lo,
            "us_max": hi,
            "ratio": gbps / self.copy_gbps if ratio and gbps and self.copy_gbps == self.copy_gbps else None,
            "shape": shape,
            "note": note,
            "device": self.device_name,
        }
        if self.json:
            self.json.write(json.dumps(rec) + "\n")
            self.json.flush()
        size_text = f"2^{int(math.log2(size))}" if size > 0 and size & (size - 1) == 0 else str(size)
        print(
            f"  {bench:22s} {case:22s} {size_text:>9s} {shape:>12s}  "
            + (f"{gbps:9.1f} GB/s" if gbps else " " * 14)
            + f"  {median:12.3f} us"
            + (f"  [{lo:.3f} .. {hi:.3f}]" if lo is not None else "")
            + (f"  {note}" if "WRONG" in note else "")
        )
        return rec

    def verdict(self, ok, what):
        if ok:
            return ""
        self.failures.append(what)
        return "WRONG: " + what

    def section(self, name, body):
        """Runs one group of cases; an error is reported and the other groups still run."""
        print(f"\n[{name}]")
        try:
            body()
        except Exception:
            traceback.print_exc()
            self.failures.append(f"{name}: exception")
        finally:
            self.free()


def bench_copy(b):
    cp = b.cp
    sizes = [1 << 30, 2 << 30]
    if not b.args.quick and cp.cuda.runtime.memGetInfo()[0] > (16 << 30):
        sizes.append(4 << 30)
    best = 0.0
    for nbytes in sizes:
        n = nbytes // 4
        src = b.random(n, 1)
        dst = cp.full(n, cp.nan, dtype=cp.float32)

        def memcpy(_):
            dst.data.copy_from_device_async(src.data, nbytes)

        timing = b.time_device(memcpy, repeats=min(b.repeats, 50), warmup=3)
        ok = bool(cp.array_equal(src, dst))
        note = "cudaMemcpyAsync device to device; size in bytes; bytes read + written"
        rec = b.record("cupy", "copy", nbytes, 2 * nbytes, timing, dtype="uint8", ratio=False,
                       note=(b.verdict(ok, f"cupy copy {nbytes}") or note))
        best = max(best, rec["gbps"])
        if b.torch is not None:
            b.check_torch_stream()
            ts, td = b.as_torch(src), b.as_torch(dst)
            td.fill_(float("nan"))
            timing = b.time_device(lambda _: td.copy_(ts), repeats=min(b.repeats, 50), warmup=3)
            ok = bool(b.torch.equal(ts, td))
            b.record("torch", "copy", nbytes, 2 * nbytes, timing, dtype="uint8", ratio=False,
                     note=(b.verdict(ok, f"torch copy {nbytes}") or "Tensor.copy_; bytes read + written"))
            ts = td = None
        src = dst = None
        b.free()
    b.copy_gbps = best


def bench_add(b):
    cp = b.cp
    kernel = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "cujit_compare_add")
    max_log2 = 24 if b.args.quick else 28
    for log2 in range(10, max_log2 + 1):
        n = 1 << log2
        sets = b.rotation_sets(3 * 4 * n)
        xs, ys = b.random(n * sets, 11), b.random(n * sets, 12)
        zs = cp.empty(n * sets, dtype=cp.float32)
        note = f"output passed; {sets} input sets rotated"

        def view(pool, i):
            o = (i % sets) * n
            return pool[o:o + n]

        zs.fill(cp.nan)
        timing = b.time_device(lambda i: kernel(view(xs, i), view(ys, i), view(zs, i)))
        ok = bool((zs[:n] == xs[:n] + ys[:n]).all())
        b.record("cupy", "add", n, 12 * n, timing,
                 note=b.verdict(ok, f"cupy add 2^{log2}") or "cupy.ElementwiseKernel; " + note)
        if b.torch is not None:
            b.check_torch_stream()
            zs.fill(cp.nan)
            tx, ty, tz = b.as_torch(xs), b.as_torch(ys), b.as_torch(zs)
            torch = b.torch
            timing = b.time_device(lambda i: torch.add(view(tx, i), view(ty, i), out=view(tz, i)))
            ok = bool(torch.equal(tz[:n], tx[:n] + ty[:n]))
            b.record("torch", "add", n, 12 * n, timing,
                     note=b.verdict(ok, f"torch add 2^{log2}") or "torch.add(out=); " + note)
            tx = ty = tz = None
        xs = ys = zs = None
        b.free()


def bench_add_strided(b):
    """Broadcast (8192,1)+(1,8192) into a preallocated output, and x.T + y.T of 8192x8192
    with the output each library chooses (CuPy: C order; PyTorch: the inputs' order)."""
    cp = b.cp
    kernel = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "cujit_compare_add")
    m = 8192
    x, y = b.random(m, 21, (m, 1)), b.random(m, 22, (1, m))
    z = cp.full((m, m), cp.nan, dtype=cp.float32)
    nbytes = 4 * (m * m + 2 * m)
    timing = b.time_device(lambda _: kernel(x, y, z))
    ok = bool((z == x + y).all())
    b.record("cupy", "add_broadcast", m * m, nbytes, timing, shape=f"{m}x1+1x{m}",
             note=b.verdict(ok, "cupy broadcast") or "output passed, C order")
    if b.torch is not None:
        torch = b.torch
        b.check_torch_stream()
        tx, ty, tz = b.as_torch(x), b.as_torch(y), b.as_torch(z)
        tz.fill_(float("nan"))
        timing = b.time_device(lambda _: torch.add(tx, ty, out=tz))
        ok = bool(torch.equal(tz, tx + ty))
        b.record("torch", "add_broadcast", m * m, nbytes, timing, shape=f"{m}x1+1x{m}",
                 note=b.verdict(ok, "torch broadcast") or "output passed, C order")
        tx = ty = tz = None
    x = y = z = None
    b.free()

    x, y = b.random(m * m, 23, (m, m)), b.random(m * m, 24, (m, m))
    nbytes = 3 * 4 * m * m
    out = kernel(x.T, y.T)
    order = "C" if out.flags.c_contiguous else ("F" if out.flags.f_contiguous else "strided")
    timing = b.time_device(lambda _: kernel(x.T, y.T))
    ok = bool((kernel(x.T, y.T) == (x + y).T).all())
    b.record("cupy", "add_transposed", m * m, nbytes, timing, shape=f"{m}x{m}",
             note=b.verdict(ok, "cupy transposed") or f"x.T + y.T; output allocated by CuPy ({order} order)")
    out = None
    if b.torch is not None:
        torch = b.torch
        b.check_torch_stream()
        tx, ty = b.as_torch(x), b.as_torch(y)
        out = torch.add(tx.T, ty.T)
        order = "C" if out.is_contiguous() else ("F" if out.T.is_contiguous() else "strided")
        timing = b.time_device(lambda _: torch.add(tx.T, ty.T))
        ok = bool(torch.equal(torch.add(tx.T, ty.T), (tx + ty).T))
        b.record("torch", "add_transposed", m * m, nbytes, timing, shape=f"{m}x{m}",
                 note=b.verdict(ok, "torch transposed") or f"x.T + y.T; output allocated by PyTorch ({order} order)")
        tx = ty = out = None
    # One transposed and one C-contiguous input, into a preallocated C-order output.
    z = cp.empty((m, m), dtype=cp.float32)
    timing = b.time_device(lambda _: kernel(x.T, y, z))
    ok = bool((z == x.T + y).all())
    b.record("cupy", "add_transposed_mixed", m * m, nbytes, timing, shape=f"{m}x{m}",
             note=b.verdict(ok, "cupy mixed") or "x.T + y, output passed, C order")
    if b.torch is not None:
        torch = b.torch
        b.check_torch_stream()
        tx, ty, tz = b.as_torch(x), b.as_torch(y), b.as_torch(z)
        timing = b.time_device(lambda _: torch.add(tx.T, ty, out=tz))
        ok = bool(torch.equal(tz, tx.T + ty))
        b.record("torch", "add_transposed_mixed", m * m, nbytes, timing, shape=f"{m}x{m}",
                 note=b.verdict(ok, "torch mixed") or "x.T + y, output passed, C order")
        tx = ty = tz = None
    x = y = z = None
    b.free()


def bench_host_call(b):
    """Host time per call of a 1-element elementwise kernel (no device time involved)."""
    cp = b.cp
    kernel = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x + y", "cujit_compare_add")
    x, y, z = b.random(1, 31), b.random(1, 32), cp.empty(1, dtype=cp.float32)
    calls = 5000 if b.args.quick else 20000

    def host_time(call):
        for _ in range(200):
            call()
        cp.cuda.Device().synchronize()
        start = time.perf_counter()
        for _ in range(calls):
            call()
        enqueued = time.perf_counter()
        cp.cuda.Device().synchronize()
        return (enqueued - start) * 1e6 / calls

    us = host_time(lambda: kernel(x, y, z))
    b.record("cupy", "host_call_1elem", 1, 0, None, us=us, ratio=False,
             note=f"host us per ElementwiseKernel call (output passed) over {calls} calls")
    if b.torch is not None:
        tx, ty, tz = b.as_torch(x), b.as_torch(y), b.as_torch(z)
        us = host_time(lambda: b.torch.add(tx, ty, out=tz))
        b.record("torch", "host_call_1elem", 1, 0, None, us=us, ratio=False,
                 note=f"host us per torch.add(out=) call over {calls} calls")


def bench_reductions(b):
    cp = b.cp
    rk_sum = cp.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "cujit_compare_sum")
    rk_l2 = cp.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "cujit_compare_l2norm")
    n = 1 << (24 if b.args.quick else 28)
    x = b.random(n, 41)
    ref_sum = float(cp.sum(x, dtype=cp.float64))
    abs_sum = float(cp.sum(cp.abs(x), dtype=cp.float64))
    ref_l2 = float(cp.sqrt(cp.sum(cp.square(x, dtype=cp.float64))))

    def check(value, ref, scale, what):
        return b.verdict(abs(float(value) - ref) <= 1e-5 * scale, f"{what}: {float(value)} vs {ref}")

    cases = [
        ("cupy", "sum", lambda: cp.sum(x), ref_sum, abs_sum, "cupy.sum"),
        ("cupy_reduction_kernel", "sum", lambda: rk_sum(x), ref_sum, abs_sum, "cupy.ReductionKernel a + b"),
        ("cupy", "l2norm", lambda: cp.linalg.norm(x), ref_l2, ref_l2, "cupy.linalg.norm"),
        ("cupy_reduction_kernel", "l2norm", lambda: rk_l2(x), ref_l2, ref_l2,
         "cupy.ReductionKernel x * x, a + b, sqrt"),
    ]
    if b.torch is not None:
        b.check_torch_stream()
        tx = b.as_torch(x)
        cases += [
            ("torch", "sum", lambda: b.torch.sum(tx), ref_sum, abs_sum, "torch.sum"),
            ("torch", "l2norm", lambda: b.torch.linalg.vector_norm(tx), ref_l2, ref_l2,
             "torch.linalg.vector_norm"),
        ]
    for bench, case, call, ref, scale, what in cases:
        timing = b.time_device(lambda _: call())
        b.record(bench, case, n, 4 * n, timing, note=check(call(), ref, scale, f"{bench} {case}") or what)

    m = 1 << (12 if b.args.quick else 14)
    a = x[: m * m].reshape(m, m)
    for axis in (0, 1):
        ref = cp.sum(a, axis=axis, dtype=cp.float64)
        scale = cp.sum(cp.abs(a), axis=axis, dtype=cp.float64)

        def check_axis(value, what):
            err = float(cp.max(cp.abs(cp.asarray(value, dtype=cp.float64) - ref) / scale))
            return b.verdict(err <= 1e-5, f"{what} relative error {err:.2e}")

        axis_cases = [
            ("cupy", lambda: cp.sum(a, axis=axis), f"cupy.sum(axis={axis})"),
            ("cupy_reduction_kernel", lambda: rk_sum(a, axis=axis), f"ReductionKernel sum, axis={axis}"),
        ]
        if b.torch is not None:
            ta = b.as_torch(a)
            axis_cases.append(("torch", lambda: b.torch.sum(ta, dim=axis), f"torch.sum(dim={axis})"))
        for bench, call, what in axis_cases:
            timing = b.time_device(lambda _: call())
            b.record(bench, f"sum_axis{axis}", m * m, 4 * (m * m + m), timing, shape=f"{m}x{m}",
                     note=check_axis(cp.asarray(call()), f"{bench} {what}") or what)

    # The maximum of each vocabulary-sized row (4096, 50257), as a language model's logits.
    rows, cols = 4096, 50257
    if n >= rows * cols:
        v = x[: rows * cols].reshape(rows, cols)
        ref = cp.max(v, axis=1)
        rk_max = cp.ReductionKernel("T x", "T y", "x", "max(a, b)", "y = a", "-3.402823466e38f",
                                    "cujit_compare_max")
        max_cases = [
            ("cupy", lambda: cp.max(v, axis=1), "cupy.max(axis=1)"),
            ("cupy_reduction_kernel", lambda: rk_max(v, axis=1), "ReductionKernel max, axis=1"),
        ]
        if b.torch is not None:
            tv = b.as_torch(v)
            max_cases.append(("torch", lambda: b.torch.amax(tv, dim=1), "torch.amax(dim=1)"))
        for bench, call, what in max_cases:
            timing = b.time_device(lambda _: call())
            ok = bool((cp.asarray(call()) == ref).all())
            b.record(bench, "max_rows_vocab", rows * cols, 4 * (rows * cols + rows), timing,
                     shape=f"{rows}x{cols} axis 1", note=b.verdict(ok, f"{bench} {what}") or what)


def bench_cold_call(b):
    """First call of a ReductionKernel never seen before, in a fresh process: once with an
    empty CuPy kernel cache directory (NVRTC compile), once more with the same directory."""
    with tempfile.TemporaryDirectory(prefix="cupy_cache_") as cache_dir:
        env = dict(os.environ, CUPY_CACHE_DIR=cache_dir)
        for case in ("first_call_cold", "first_call_disk_cache"):
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--cold-child"], env=env,
                                  capture_output=True, text=True, timeout=180)
            if proc.returncode != 0:
                raise RuntimeError(f"--cold-child failed:\n{proc.stdout}\n{proc.stderr}")
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            b.record("cupy_reduction_kernel", case, result["n"], 0, None, us=result["first_us"], ratio=False,
                     note=b.verdict(result["ok"], case) or
                     ("fresh process, empty CUPY_CACHE_DIR" if case == "first_call_cold"
                      else "fresh process, kernel in CUPY_CACHE_DIR") +
                     "; host us from the call to its result (synchronised)")
            if case == "first_call_cold":
                b.record("cupy_reduction_kernel", "second_call", result["n"], 0, None, us=result["second_us"],
                         ratio=False, note="the next call in the same process, synchronised")


def cold_child():
    import cupy
    import numpy

    n = 1 << 20
    x = cupy.asarray(numpy.linspace(1.0, 2.0, n, dtype=numpy.float32))  # a copy, no kernel
    cupy.cuda.Device().synchronize()
    kernel = cupy.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "cujit_cold_l2norm")
    start = time.perf_counter()
    y = kernel(x)
    cupy.cuda.Device().synchronize()
    first = time.perf_counter() - start
    start = time.perf_counter()
    y = kernel(x)
    cupy.cuda.Device().synchronize()
    second = time.perf_counter() - start
    ref = float(numpy.sqrt(numpy.sum(cupy.asnumpy(x).astype(numpy.float64) ** 2)))
    ok = abs(float(y) - ref) <= 1e-5 * ref
    print(json.dumps({"n": n, "first_us": first * 1e6, "second_us": second * 1e6, "ok": ok}))


def bench_shapes(b):
    """Issue 35's shapes (bench/reduction --only shapes): sums over 2^28 float32 viewed as short
    rows, few long rows and tall matrices, with cupy.sum and torch.sum on the same views."""
    cp = b.cp
    n = 1 << (24 if b.args.quick else 28)
    x = b.random(n, 43)
    shapes = [(n // c, c, 1) for c in (17, 24, 33, 48, 63, 100, 129, 250, 500, 1000, 1023)]
    shapes += [(r, n // r, 1) for r in (2, 3, 8, 33)]
    shapes += [(n // c, c, 0) for c in (2, 3, 8, 33, 100, 300, 1000, 4096)]
    tx = b.as_torch(x) if b.torch is not None else None
    if tx is not None:
        b.check_torch_stream()
    for rows, cols, axis in shapes:
        a = x[: rows * cols].reshape(rows, cols)
        ref = cp.sum(a, axis=axis, dtype=cp.float64)
        scale = cp.sum(cp.abs(a), axis=axis, dtype=cp.float64) + 1e-30
        n_out = cols if axis == 0 else rows
        cases = [("cupy", lambda: cp.sum(a, axis=axis), f"cupy.sum(axis={axis})")]
        if tx is not None:
            ta = tx[: rows * cols].reshape(rows, cols)
            cases.append(("torch", lambda: b.torch.sum(ta, dim=axis), f"torch.sum(dim={axis})"))
        for bench, call, what in cases:
            timing = b.time_device(lambda _: call())
            err = float(cp.max(cp.abs(cp.asarray(call(), dtype=cp.float64) - ref) / scale))
            b.record(bench, "sum_shape", rows * cols, 4 * (rows * cols + n_out), timing,
                     shape=f"{rows}x{cols} axis {axis}",
                     note=b.verdict(err <= 1e-5, f"{bench} {what} relative error {err:.2e}") or what)


SECTIONS = [
    ("copy", "copy", bench_copy),
    ("add", "add z = x + y, float32, contiguous", bench_add),
    ("strided", "add: broadcast and transposed", bench_add_strided),
    ("host", "host time per call", bench_host_call),
    ("reductions", "reductions", bench_reductions),
    ("shapes", "sums over issue 35's shapes (short rows, long rows, tall matrices)", bench_shapes),
    ("cold", "cold first call", bench_cold_call),
    ("expressions", "array expressions: GELU, squared differences per row, row softmax",
     bench_expressions),
    ("scans", "scans: cumsum of 2^28, along rows, a user-operator recurrence", bench_scans),
]


def measure(args):
    b = Bench(args)
    for key, title, body in SECTIONS:
        if not args.only or key in args.only.split(","):
            b.section(title, lambda body=body: body(b))
    if b.failures:
        print("\ncompare.py: FAILED: " + "; ".join(b.failures))
        return 1
    return 0


# ---------------------------------------------------------------------------------------------
# Reading records back: plot and summary (no GPU needed)


def load(path):
    """Records of a JSON-lines file; for the same (bench, case, size, shape, dtype) the
    last one wins. Lines that do not parse are skipped with a warning."""
    records = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError:
                print(f"{path}:{number}: not JSON, skipped", file=sys.stderr)
                continue
            key = (r.get("bench"), r.get("case"), r.get("size"), r.get("shape") or "", r.get("dtype"))
            records[key] = r
    return list(records.values())


def copy_bandwidth(records):
    """The device-to-device copy ceiling: best GB/s of the baseline's cuMemcpyDtoD, else
    of any copy record."""
    for bench in ("baseline", None):
        values = [r["gbps"] for r in records
                  if r.get("case") == "copy" and r.get("gbps") and (bench is None or r.get("bench") == bench)]
        if values:
            return max(values), bench or "any"
    return None, None


def plot(args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = load(args.json)
    series = {}
    for r in records:
        if r.get("case") == "add" and r.get("dtype") == "float32" and r.get("gbps") and not r.get("shape"):
            series.setdefault(r["bench"], []).append((r["size"], r["gbps"]))
    if not series:
        print("compare.py --plot: no 'add' float32 records in " + args.json)
        return 1
    order = ["baseline", "cujit_elementwise", "cupy", "torch"]
    benches = [k for k in order if k in series] + sorted(k for k in series if k not in order)
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    for bench in benches:
        points = sorted(series[bench])
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3,
                label=LABELS.get(bench, bench))
    copy_gbps, _ = copy_bandwidth(records)
    if copy_gbps:
        ax.axhline(copy_gbps, color="gray", linestyle="--", label=f"device copy {copy_gbps:.0f} GB/s")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("elements (float32)")
    ax.set_ylabel("GB/s (x, y read + z written; median device time)")
    devices = sorted({r.get("device") for r in records if r.get("device")})
    ax.set_title("z = x + y, float32, contiguous" + (" - " + ", ".join(devices) if devices else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.png)
    print(f"compare.py --plot: wrote {args.png}")
    return 0


def summary(args):
    """Key figures: GB/s per implementation for the main cases, ratios of cujit to the raw
    kernel and to CuPy, and host or latency figures in microseconds."""
    records = load(args.json)
    if not records:
        print("no benchmark records in " + args.json)
        return 1

    def find(bench_prefix, case, size=None, exact=True):
        matches = [r for r in records
                   if (r.get("bench") == bench_prefix if exact else str(r.get("bench", "")).startswith(bench_prefix))
                   and r.get("case") == case and (size is None or r.get("size") == size)]
        return max(matches, key=lambda r: r.get("size") or 0) if matches else None

    columns = [("raw", "baseline", True), ("cujit", "cujit", False), ("CuPy", "cupy", True),
               ("CuPy RK", "cupy_reduction_kernel", True), ("torch", "torch", True)]
    rows = [("copy (largest)", "copy", None)]
    rows += [(f"add 2^{k}", "add", 1 << k) for k in (10, 16, 20, 24, 28)]
    rows += [("add broadcast", "add_broadcast", None), ("add transposed", "add_transposed", None),
             ("sum 2^28", "sum", 1 << 28), ("l2norm 2^28", "l2norm", 1 << 28),
             ("sum axis 0", "sum_axis0", None), ("sum axis 1", "sum_axis1", None)]
    devices = sorted({r.get("device") for r in records if r.get("device")})
    copy_gbps, copy_from = copy_bandwidth(records)
    print(f"key figures ({', '.join(devices) or 'unknown device'}); GB/s of median device time")
    header = f"{'case':16s}" + "".join(f"{c[0]:>10s}" for c in columns) + f"{'cujit/raw':>10s}{'cujit/CuPy':>11s}"
    print(header)
    print("-" * len(header))
    for label, case, size in rows:
        cells, values = "", {}
        for name, bench, exact in columns:
            r = find(bench, case, size, exact)
            values[name] = r.get("gbps") if r else None
            cells += f"{values[name]:10.1f}" if values[name] else f"{'-':>10s}"
        if not any(values.values()):
            continue
        cujit = values["cujit"]
        vs_raw = f"{cujit / values['raw']:10.3f}" if cujit and values["raw"] else f"{'-':>10s}"
        cupy_ref = values["CuPy RK"] if case.startswith(("sum", "l2norm")) and values["CuPy RK"] else values["CuPy"]
        vs_cupy = f"{cujit / cupy_ref:11.3f}" if cujit and cupy_ref else f"{'-':>11s}"
        print(f"{label:16s}{cells}{vs_raw}{vs_cupy}")
    if copy_gbps:
        raw = find("baseline", "add", 1 << 28)
        if raw and raw.get("gbps"):
            print(f"raw add 2^28 reaches {raw['gbps'] / copy_gbps:.1%} of copy bandwidth ({copy_gbps:.0f} GB/s)")
    print(f"\n{'latency / host time':44s}{'us':>10s}")
    for bench, case, label in [
        ("baseline", "launch_host_raw", "empty kernel, host per cuLaunchKernel"),
        ("baseline", "launch_host_rawkernel", "empty kernel, host per RawKernel call"),
        ("baseline", "launch_device", "empty kernel, device per launch"),
        ("cujit", "host_call_1elem", "cujit 1-element elementwise, host per call"),
        ("cupy", "host_call_1elem", "CuPy 1-element ElementwiseKernel, host"),
        ("torch", "host_call_1elem", "torch.add 1 element, host per call"),
        ("cujit", "first_call_cold", "cujit first call, cold cache"),
        ("cupy_reduction_kernel", "first_call_cold", "CuPy ReductionKernel first call, cold"),
        ("cupy_reduction_kernel", "first_call_disk_cache", "CuPy ReductionKernel first call, disk cache"),
    ]:
        r = find(bench, case, None, bench != "cujit")
        if r and r.get("us") is not None:
            print(f"{label:44s}{r['us']:10.2f}")
    compare_expressions.summary(records)
    wrong = [r for r in records if "WRONG" in (r.get("note") or "")]
    for r in wrong:
        print(f"WRONG: {r['bench']} {r['case']} size {r['size']}: {r['note']}")
    return 1 if wrong else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="JSON-lines file to append to (measure) or read (--plot, --summary)")
    parser.add_argument("--plot", action="store_true", help="draw the elementwise throughput plot")
    parser.add_argument("--png", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "elementwise_throughput.png"))
    parser.add_argument("--summary", action="store_true", help="print the key figures")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--only", help="comma-separated sections to measure: " +
                        ", ".join(key for key, _, _ in SECTIONS))
    parser.add_argument("--cold-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_child:
        cold_child()
        return 0
    if (args.plot or args.summary) and not args.json:
        parser.error("--plot and --summary need --json PATH")
    if args.plot:
        return plot(args)
    if args.summary:
        return summary(args)
    if args.quick:
        args.repeats = min(args.repeats, 30)
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() == 0:
            raise RuntimeError("no device")
    except Exception as error:
        print(f"compare.py: no CUDA device or no CuPy ({error}); nothing measured")
        return 0
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
