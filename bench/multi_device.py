#!/usr/bin/env python3
"""CuPy and PyTorch twins of bench/multi_device.cpp: several GPUs from one process.

Modes:
  multi_device.py --json PATH [--quick] [--repeats N]   measure; append JSON lines to PATH
  multi_device.py --summary --json PATH                 print the multi-device records of PATH
                                                        (cujit's, CuPy's and PyTorch's)

Cases (as the C++ benchmark; size is per device, 2^26 float32):
  ew_one_device, ew_all_devices     z = x * a + y (cupy.ElementwiseKernel; torch.add(y, x,
                                    alpha=a, out=z)) on device 0 alone, then on every device at
                                    once, one Python thread and one stream per device; shape
                                    "device i" (ratio to device 0 alone), "total" (sum of the
                                    per-device GB/s, ratio to N x device 0 alone) and the wall
                                    clock of a burst of calls
  red_one_device, red_all_devices   the sum of 2^26 float32 (cupy.sum, torch.sum, output given)
  host_call_threads                 host us per 1-element call (output given) per thread, with 1
                                    thread and with a thread per device
  copy_same_device, peer_copy       256 MiB copied within device 0, and between devices 0 and 1
                                    (cudaMemcpyPeerAsync through CuPy; Tensor.to('cuda:1')),
                                    GB/s of the bytes copied once

Method (bench_util.hpp's, as compare.py): each sample is one call between its own pair of CUDA
events on the device's own stream, a spin kernel queued ahead of each group of samples so that
the events time device work, not Python's launch latency (the GIL serialises the threads'
launches; the device time does not depend on it as long as the stream stays ahead); warm-up
first, then the median of many samples; random data, never zero; every result checked.
Records: bench "cupy_multi_device" or "torch_multi_device", the JSON-lines format of
compare.py plus "devices": N. Skips (exit 0, one line) with fewer than 2 GPUs, or without
CuPy and PyTorch.
"""

import argparse
import contextlib
import json
import math
import os
import sys
import threading
import time
import traceback

N_ELEMENTS = 1 << 26  # per device: 256 MiB of float32, far beyond L2
A = 2.0
WARMUP = 10
MAX_SPIN_US = 10000.0
MIN_SPIN_US = 50.0
MAX_GROUP = 32
EVENT_RECORD_US = 10.0  # generous host cost of two event records from Python

SPIN_SOURCE = r"""
extern "C" __global__ void cujit_md_spin(unsigned long long ns) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ns);
}
"""


def median_stats(samples):
    """(median, min, max) of a list of numbers."""
    s = sorted(samples)
    n = len(s)
    return (s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])), s[0], s[-1]


# ---------------------------------------------------------------------------------------------
# One device per lane: its stream, arrays and the calls every case makes


class CupyLane:
    """Device d with its own (blocking) stream, x, y, z (2^26 float32) and a 0-d output."""

    bench = "cupy_multi_device"

    def __init__(self, cp, d, x0, y0):
        self.cp, self.d = cp, d
        self.device = cp.cuda.Device(d)
        name = cp.cuda.runtime.getDeviceProperties(d)["name"]
        self.device_name = name.decode() if isinstance(name, bytes) else str(name)
        with self.device:
            self.stream = cp.cuda.Stream(non_blocking=False)
            self._spin = cp.RawModule(code=SPIN_SOURCE).get_function("cujit_md_spin")
            self.kernel = cp.ElementwiseKernel("float32 x, float32 a, float32 y", "float32 z",
                                               "z = x * a + y", "md_axpy")
            with self.stream:
                self.x, self.y = self.peer_copy(x0), self.peer_copy(y0)
                self.z = cp.empty_like(self.x)
                self.total = cp.empty((), dtype=cp.float32)
                self.ew(self.x, self.y, self.z)  # compile and load here, not in the threads
                self.red(self.x)
            self.stream.synchronize()

    @contextlib.contextmanager
    def ctx(self):
        with self.device, self.stream:
            yield

    def spin(self, ns):
        self._spin((1,), (1,), (self.cp.uint64(ns),))

    def event(self):
        return self.cp.cuda.Event()

    def record(self, event):
        event.record(self.stream)

    def elapsed_ms(self, start, stop):
        return self.cp.cuda.get_elapsed_time(start, stop)

    def sync(self):
        self.stream.synchronize()

    def ew(self, x, y, z):
        self.kernel(x, self.cp.float32(A), y, z)

    def red(self, x):
        self.cp.sum(x, out=self.total)

    def peer_copy(self, src):
        """A copy of `src` (any device) on this device, on this lane's stream (ctx() current)."""
        dst = self.cp.empty(src.shape, src.dtype)  # on the current device (ctx())
        self.cp.cuda.runtime.memcpyPeerAsync(dst.data.ptr, self.d, src.data.ptr, src.device.id,
                                             src.nbytes, self.stream.ptr)
        return dst

    def copy_same(self):
        self.z.data.copy_from_device_async(self.x.data, self.x.nbytes, self.stream)

    def ew_ok(self, k):
        with self.ctx():
            x, y, z = self.x[:k], self.y[:k], self.z[:k]
            return bool((abs(z - (x * A + y)) <= 1e-6 * (abs(x * A) + abs(y))).all())

    def sum_ref(self):
        with self.ctx():
            cp = self.cp
            return float(cp.sum(self.x, dtype=cp.float64)), float(cp.sum(abs(self.x), dtype=cp.float64))

    def total_value(self):
        with self.ctx():
            return float(self.total)

    def equal_to(self, other):
        """Whether `other` (a copy of x, any device) holds x's values."""
        with self.ctx():
            return bool(self.cp.array_equal(self.x, self.peer_copy(other)))


def cupy_lanes(count):
    import cupy as cp

    from compare import HELPER_SOURCE  # the random fill of the C++ benchmarks

    for d in range(count):  # peer access both ways where the GPUs have it, as cujit enables
        with cp.cuda.Device(d):
            for other in range(count):
                if other != d and cp.cuda.runtime.deviceCanAccessPeer(d, other):
                    try:
                        cp.cuda.runtime.deviceEnablePeerAccess(other)
                    except cp.cuda.runtime.CUDARuntimeError:
                        pass  # already enabled
    with cp.cuda.Device(0):
        fill = cp.RawModule(code=HELPER_SOURCE).get_function("cujit_bench_fill_f32")
        sms = cp.cuda.Device(0).attributes["MultiProcessorCount"]
        x0, y0 = cp.empty(N_ELEMENTS, cp.float32), cp.empty(N_ELEMENTS, cp.float32)
        for seed, a in ((51, x0), (52, y0)):
            fill((sms * 16,), (256,), (a, cp.uint64(N_ELEMENTS), cp.uint32(seed)))
        cp.cuda.Device(0).synchronize()
    return [CupyLane(cp, d, x0, y0) for d in range(count)]


class TorchLane:
    """The same with PyTorch: torch.cuda.Stream per device, torch.cuda._sleep as spin."""

    bench = "torch_multi_device"

    def __init__(self, torch, d, x0, y0):
        self.torch, self.d = torch, d
        self.dev = torch.device(f"cuda:{d}")
        self.device_name = torch.cuda.get_device_name(d)
        self.stream = torch.cuda.Stream(device=self.dev)
        with self.ctx():
            self.x, self.y = x0.to(self.dev), y0.to(self.dev)
            self.z = torch.empty_like(self.x)
            self.total = torch.empty((), dtype=torch.float32, device=self.dev)
            self.cycles_per_ns = self._calibrate()
            self.ew(self.x, self.y, self.z)
            self.red(self.x)
            self.sync()

    @contextlib.contextmanager
    def ctx(self):
        with self.torch.cuda.device(self.d), self.torch.cuda.stream(self.stream):
            yield

    def _calibrate(self):
        """GPU clock cycles per nanosecond of torch.cuda._sleep, from events."""
        start, stop = self.event(), self.event()
        self.torch.cuda._sleep(1000)
        self.record(start)
        self.torch.cuda._sleep(10_000_000)
        self.record(stop)
        self.sync()
        return 10_000_000 / (self.elapsed_ms(start, stop) * 1e6)

    def spin(self, ns):
        self.torch.cuda._sleep(int(ns * self.cycles_per_ns))

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def record(self, event):
        event.record(self.stream)

    def elapsed_ms(self, start, stop):
        return start.elapsed_time(stop)

    def sync(self):
        self.stream.synchronize()

    def ew(self, x, y, z):
        self.torch.add(y, x, alpha=A, out=z)

    def red(self, x):
        self.torch.sum(x, dim=0, out=self.total)

    def peer_copy(self, src):
        # The copy runs on the source device's current stream, fenced by events with this
        # device's current stream (ours, under ctx()) on both sides.
        return src.to(self.dev, non_blocking=True)

    def copy_same(self):
        self.z.copy_(self.x)

    def ew_ok(self, k):
        x, y, z = self.x[:k], self.y[:k], self.z[:k]
        return bool(((z - (x * A + y)).abs() <= 1e-6 * ((x * A).abs() + y.abs())).all())

    def sum_ref(self):
        return float(self.x.double().sum()), float(self.x.double().abs().sum())

    def total_value(self):
        return float(self.total)

    def equal_to(self, other):
        return bool(self.torch.equal(self.x, other.to(self.dev)))


def torch_lanes(count):
    import torch

    generator = torch.Generator(device="cuda:0").manual_seed(51)
    inputs = []
    for _ in range(2):  # magnitude [1, 2), random sign: never zero
        v = torch.empty(N_ELEMENTS, device="cuda:0").uniform_(1.0, 2.0, generator=generator)
        sign = torch.randint(0, 2, (N_ELEMENTS,), device="cuda:0", generator=generator)
        inputs.append(v * (sign * 2 - 1).float())
    torch.cuda.synchronize(0)
    return [TorchLane(torch, d, *inputs) for d in range(count)]


# ---------------------------------------------------------------------------------------------
# Timing


def run_threads(count, barrier, body):
    """body(k) for k < count, each in its own thread; re-raises the first failure."""
    errors = [None] * count

    def main(k):
        try:
            body(k)
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            errors[k] = error
            barrier.abort()

    threads = [threading.Thread(target=main, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for error in errors:
        if error is not None and not isinstance(error, threading.BrokenBarrierError):
            raise error
    for error in errors:
        if error is not None:
            raise error


def time_lane(lane, work, repeats, barrier):
    """bench_util.hpp's Timer on the lane's stream: (median, min, max) device us per call. Every
    thread of a measurement passes the barrier before its warm-up and its timed calls."""
    with lane.ctx():
        barrier.wait()
        half = WARMUP // 2
        for i in range(WARMUP):
            if i == half:
                start = time.perf_counter()
            work(i)
        host_us = (time.perf_counter() - start) * 1e6 / (WARMUP - half) + EVENT_RECORD_US
        lane.sync()
        group = int(min(max(MAX_SPIN_US / (2.0 * host_us), 1), MAX_GROUP))
        spin_ns = int(1e3 * min(max(2.0 * host_us * group, MIN_SPIN_US), MAX_SPIN_US))
        starts = [lane.event() for _ in range(repeats)]
        stops = [lane.event() for _ in range(repeats)]
        barrier.wait()
        for r in range(repeats):
            if r % group == 0:
                lane.spin(spin_ns)
            lane.record(starts[r])
            work(WARMUP + r)
            lane.record(stops[r])
        lane.sync()
        return median_stats([1e3 * lane.elapsed_ms(a, b) for a, b in zip(starts, stops)])


def measure(lanes, count, work, repeats, calls):
    """Events per call on the first `count` lanes at once, then a burst of `calls` calls per lane
    timed on the host from a common start: ([stats per lane], wall seconds of the bursts)."""
    barrier = threading.Barrier(count)
    stats, spans = [None] * count, [None] * count

    def body(k):
        lane = lanes[k]
        stats[k] = time_lane(lane, lambda i: work(lane), repeats, barrier)
        with lane.ctx():
            barrier.wait()
            start = time.perf_counter()
            for _ in range(calls):
                work(lane)
            lane.sync()
            spans[k] = (start, time.perf_counter())

    run_threads(count, barrier, body)
    return stats, max(s[1] for s in spans) - min(s[0] for s in spans)


# ---------------------------------------------------------------------------------------------
# Cases


class Recorder:
    """Writes records (compare.py's JSON-lines format plus "devices") and prints them."""

    def __init__(self, path, device_name, devices):
        self.json = open(path, "a") if path else None
        self.device_name, self.devices = device_name, devices
        self.failures = []

    def write(self, bench, case, size, nbytes, timing=None, dtype="float32", shape="", note="",
              ratio=None, gbps=None, us=None):
        median, lo, hi = timing if timing is not None else (us, None, None)
        if gbps is None and nbytes and median:
            gbps = nbytes / (median * 1e3)
        rec = {"bench": bench, "case": case, "size": int(size), "dtype": dtype, "gbps": gbps,
               "us": median, "us_min": lo, "us_max": hi, "ratio": ratio, "shape": shape,
               "note": note, "device": self.device_name, "devices": self.devices}
        if self.json:
            self.json.write(json.dumps(rec) + "\n")
            self.json.flush()
        print(f"  {bench:20s} {case:18s} {shape:22s}"
              + (f"{gbps:10.1f} GB/s" if gbps else " " * 15)
              + (f"{median:12.3f} us" if median is not None else " " * 15)
              + (f"  ratio {ratio:.3f}" if ratio is not None else "")
              + (f"  {note}" if "WRONG" in note else ""))
        return rec

    def verdict(self, ok, what):
        if ok:
            return ""
        self.failures.append(what)
        return "; WRONG: " + what


def throughput(rec, lanes, name, what, nbytes, work, check, repeats, calls):
    bench, count = lanes[0].bench, len(lanes)
    one, wall_one = measure(lanes, 1, work, repeats, calls)
    every, wall_all = measure(lanes, count, work, repeats, calls)
    wrong = rec.verdict(check(), f"{bench} {name}")
    single = rec.write(bench, f"{name}_one_device", N_ELEMENTS, nbytes, one[0], shape="device 0",
                       note=f"{what}; device 0 alone, own thread and stream; size per device{wrong}")
    total, slowest = 0.0, 0.0
    for k, stats in enumerate(every):
        r = rec.write(bench, f"{name}_all_devices", N_ELEMENTS, nbytes, stats, shape=f"device {k}",
                      ratio=nbytes / (stats[0] * 1e3) / single["gbps"],
                      note=f"{what}; all {count} devices at once, a thread and stream each; "
                           f"ratio to device 0 alone{wrong}")
        total += r["gbps"]
        slowest = max(slowest, r["us"])
    rec.write(bench, f"{name}_all_devices", N_ELEMENTS, 0, us=slowest, gbps=total, shape="total",
              ratio=total / (count * single["gbps"]),
              note=f"sum of the per-device GB/s (us: slowest device's median); ratio to {count} x "
                   f"device 0 alone (expected 1 within 5%){wrong}")
    one_gbps = nbytes * calls / (wall_one * 1e9)
    all_gbps = nbytes * calls * count / (wall_all * 1e9)
    rec.write(bench, f"{name}_one_device", N_ELEMENTS, 0, gbps=one_gbps, shape="device 0, wall clock",
              note=f"{calls} calls without events, host time to the stream's end")
    rec.write(bench, f"{name}_all_devices", N_ELEMENTS, 0, gbps=all_gbps, shape="total, wall clock",
              ratio=all_gbps / (count * one_gbps),
              note=f"{calls} calls per device without events, from the first thread's start to "
                   "the last stream's end; ratio to N x device 0 alone (wall clock)")


def throughput_cases(rec, lanes, args):
    repeats, calls = args.repeats, (20 if args.quick else 100)
    n_bytes = 4 * N_ELEMENTS

    def sum_ok():
        want, scale = lanes[0].sum_ref()
        values = [lane.total_value() for lane in lanes]
        return abs(values[0] - want) <= 1e-5 * scale and len(set(values)) == 1

    throughput(rec, lanes, "ew", "z = x * a + y, float32", 3 * n_bytes,
               lambda lane: lane.ew(lane.x, lane.y, lane.z),
               lambda: all(lane.ew_ok(1 << 20) for lane in lanes), repeats, calls)
    throughput(rec, lanes, "red", "sum of float32", n_bytes, lambda lane: lane.red(lane.x), sum_ok,
               repeats, calls)


def lane_host_us(lane, call, batches, barrier, batch=200):
    """Host us per call on one lane, median over batches (the stream drains in between)."""
    with lane.ctx():
        for _ in range(50):
            call()
        lane.sync()
        barrier.wait()
        samples = []
        for _ in range(batches):
            start = time.perf_counter()
            for _ in range(batch):
                call()
            samples.append((time.perf_counter() - start) * 1e6 / batch)
            lane.sync()
    return median_stats(samples)[0]


def host_calls(rec, lanes, args):
    """Host time per 1-element call (output given), one thread, then a thread per device."""
    bench, batches = lanes[0].bench, (5 if args.quick else 20)
    kinds = {
        "elementwise": lambda lane: (lambda x=lane.x[:1], y=lane.y[:1], z=lane.z[:1]: lane.ew(x, y, z)),
        "reduction": lambda lane: (lambda x=lane.x[:1]: lane.red(x)),
    }
    for kind, make_call in kinds.items():
        one_thread = None
        for threads in sorted({1, len(lanes)}):
            barrier = threading.Barrier(threads)
            per_thread = [None] * threads

            def body(k):
                per_thread[k] = lane_host_us(lanes[k], make_call(lanes[k]), batches, barrier)

            run_threads(threads, barrier, body)
            timing = median_stats(per_thread)
            one_thread = one_thread or timing[0]
            rec.write(bench, "host_call_threads", 1, 0, timing,
                      shape=f"{kind}, {threads} thread" + ("s" if threads > 1 else ""),
                      ratio=timing[0] / one_thread,
                      note="host us per call per thread (median over threads; min, max of threads), "
                           "output given, a stream per thread, each thread on its own device; "
                           "ratio to 1 thread")


def peer_copies(rec, lanes, args):
    """256 MiB within device 0 (the ceiling), then 0 -> 1 and 1 -> 0, events on the
    destination's stream; GB/s of the bytes copied once."""
    bench, nbytes, solo = lanes[0].bench, 4 * N_ELEMENTS, threading.Barrier(1)
    same = time_lane(lanes[0], lambda i: lanes[0].copy_same(), args.repeats, solo)
    ceiling = rec.write(bench, "copy_same_device", nbytes, nbytes, same, dtype="uint8",
                        shape="device 0", ratio=1.0,
                        note="device-to-device copy within device 0; GB/s of the bytes copied, counted once")
    how = "cudaMemcpyPeerAsync" if bench.startswith("cupy") else "Tensor.to(device)"
    for src, dst in ((0, 1), (1, 0)):
        source, dest = lanes[src], lanes[dst]
        timing = time_lane(dest, lambda i: dest.peer_copy(source.x), args.repeats, solo)
        with dest.ctx():
            copy = dest.peer_copy(source.x)
            dest.sync()
        wrong = rec.verdict(lanes[0].equal_to(copy), f"{bench} peer copy {src} -> {dst}")
        rec.write(bench, "peer_copy", nbytes, nbytes, timing, dtype="uint8",
                  shape=f"device {src} -> {dst}", ratio=nbytes / (timing[0] * 1e3) / ceiling["gbps"],
                  note=f"{how}, events on the destination's stream; ratio to the copy within "
                       f"device 0{wrong}")


def run_library(name, make_lanes, count, args):
    """Every case for one library; an error is reported and the next library still runs."""
    print(f"\n[{name}, {count} devices]")
    rec = None
    try:
        lanes = make_lanes(count)
        rec = Recorder(args.json, lanes[0].device_name, count)
        throughput_cases(rec, lanes, args)
        host_calls(rec, lanes, args)
        peer_copies(rec, lanes, args)
        return rec.failures
    except Exception:  # noqa: BLE001 - reported, and the run fails
        traceback.print_exc()
        return (rec.failures if rec else []) + [f"{name}: exception"]


# ---------------------------------------------------------------------------------------------
# Summary of the records of every implementation (no GPU needed)


def summary(args):
    """Key multi-device figures of cujit, CuPy and PyTorch side by side."""
    from compare import load

    records = [r for r in load(args.json) if str(r.get("bench", "")).endswith("multi_device")]
    if not records:
        print("no multi-device records (fewer than 2 GPUs, or not run)")
        return 0
    columns = [("cujit", "cujit_multi_device"), ("CuPy", "cupy_multi_device"),
               ("torch", "torch_multi_device")]

    def find(bench, case, shape):
        for r in records:
            if r.get("bench") == bench and r.get("case") == case and shape(r.get("shape") or ""):
                return r
        return None

    def is_(text):
        return lambda shape: shape == text

    threads = lambda kind: lambda shape: shape.startswith(kind + ",") and shape.endswith("threads")  # noqa: E731
    rows = []
    for name, label in (("ew", "z = x * a + y"), ("red", "sum")):
        rows += [(f"{label}, device 0 alone GB/s", f"{name}_one_device", is_("device 0"), "gbps"),
                 (f"{label}, all devices GB/s", f"{name}_all_devices", is_("total"), "gbps"),
                 ("  total / (N x alone)", f"{name}_all_devices", is_("total"), "ratio"),
                 ("  same, wall clock", f"{name}_all_devices", is_("total, wall clock"), "ratio")]
    for kind in ("elementwise", "reduction"):
        rows += [(f"host us/call, {kind}, 1 thread", "host_call_threads", is_(f"{kind}, 1 thread"), "us"),
                 (f"host us/call, {kind}, N threads", "host_call_threads", threads(kind), "us")]
    rows += [("copy within device 0 GB/s", "copy_same_device", is_("device 0"), "gbps"),
             ("peer copy 0 -> 1 GB/s", "peer_copy", is_("device 0 -> 1"), "gbps"),
             ("peer copy 1 -> 0 GB/s", "peer_copy", is_("device 1 -> 0"), "gbps"),
             ("  0 -> 1 / within device 0", "peer_copy", is_("device 0 -> 1"), "ratio")]
    devices = sorted({f"{r.get('devices')} x {r.get('device')}" for r in records})
    print(f"multi-device ({', '.join(devices)}); median device time unless wall clock")
    header = f"{'':36s}" + "".join(f"{name:>10s}" for name, _ in columns)
    print(header)
    print("-" * len(header))
    for label, case, shape, field in rows:
        values = [(find(bench, case, shape) or {}).get(field) for _, bench in columns]
        if any(v is not None for v in values):
            digits = 3 if field == "ratio" else (2 if field == "us" else 1)
            print(f"{label:36s}" + "".join(f"{v:10.{digits}f}" if v is not None else f"{'-':>10s}"
                                           for v in values))
    wrong = [r for r in records if "WRONG" in (r.get("note") or "")]
    for r in wrong:
        print(f"WRONG: {r['bench']} {r['case']} {r.get('shape')}: {r['note']}")
    return 1 if wrong else 0


# ---------------------------------------------------------------------------------------------


def available_libraries():
    """([(name, make_lanes)], device count, [why a library is missing])."""
    libraries, missing, count = [], [], 0
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        libraries.append(("CuPy", cupy_lanes))
    except Exception as error:  # noqa: BLE001 - CuPy is optional
        missing.append(f"CuPy ({error})")
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
        count = count or torch.cuda.device_count()
        libraries.append(("PyTorch", torch_lanes))
    except Exception as error:  # noqa: BLE001 - PyTorch is optional
        missing.append(f"PyTorch ({error})")
    return libraries, count, missing


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", help="JSON-lines file to append to (measure) or read (--summary)")
    parser.add_argument("--summary", action="store_true", help="print the multi-device figures")
    parser.add_argument("--quick", action="store_true", help="fewer repeats, for a smoke test")
    parser.add_argument("--repeats", type=int, default=100)
    args = parser.parse_args()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # compare.py
    if args.summary:
        if not args.json:
            parser.error("--summary needs --json PATH")
        return summary(args)
    args.repeats = max(1, min(args.repeats, 20 if args.quick else 100))
    libraries, count, missing = available_libraries()
    if not libraries:
        print(f"multi_device.py: no CuPy and no PyTorch ({'; '.join(missing)}); nothing measured")
        return 0
    if count < 2:
        print(f"multi_device.py: needs 2 GPUs, {count} found; nothing measured")
        return 0
    for what in missing:
        print(f"multi_device.py: {what} unavailable; its cases are skipped")
    failures = []
    for name, make_lanes in libraries:
        failures += run_library(name, make_lanes, count, args)
    if failures:
        print("\nmulti_device.py: FAILED: " + "; ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
