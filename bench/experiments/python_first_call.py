"""Where a Python process's first cujit call goes (issues 33 and 35): in new processes with
CuPy's context already made, `import cujit`, the kernel's construction and its first call
(cold: empty cache; warm: the cache on disk), with what ran before the timed call varied:
nothing; prefetch_cache() just before; prefetch_cache() and 50 ms; cujit's device start (an
asarray) and 50 ms (what the C++ benchmark's warm first call has). Then traced runs
(CUJIT_TRACE_SPECIALIZE, CUJIT_LOG=debug) of the cold and the warm first call."""

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, sys, time
import cupy as cp
x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
cp.cuda.Device().synchronize()
kind, before = sys.argv[1], sys.argv[2]
t = {}
s = time.perf_counter()
import cujit
t["import"] = time.perf_counter() - s
if before in ("prefetch", "prefetch+50ms"):
    cujit.prefetch_cache()
if before == "device+50ms":
    cujit.asarray(x)
if before.endswith("50ms"):
    time.sleep(0.05)
s = time.perf_counter()
if kind == "elementwise":
    f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_first_diff")
    call = lambda: f(x, x)
else:
    f = cujit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "py_first_l2")
    call = lambda: f(x)
t["construct"] = time.perf_counter() - s
s = time.perf_counter()
call()
cp.cuda.Device().synchronize()
t["first_call"] = time.perf_counter() - s
s = time.perf_counter()
call()
cp.cuda.Device().synchronize()
t["second_call"] = time.perf_counter() - s
print(json.dumps({k: round(v * 1e3, 3) for k, v in t.items()}))
"""


def child(env, kind, before="nothing", extra=None):
    out = subprocess.run([sys.executable, "-c", CHILD, kind, before],
                         env=dict(env, **(extra or {})), capture_output=True, text=True,
                         timeout=300)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


TRACE = {"CUJIT_TRACE_SPECIALIZE": "1", "CUJIT_LOG": "debug", "CUJIT_RED_DEBUG": "1"}
for kind in ("elementwise", "reduction"):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CUJIT_CACHE_DIR=cache)
        timings, log = child(env, kind, extra=TRACE)
        print(kind, "cold, traced", timings)
        print(log)
        for before in ("nothing", "device+50ms"):
            for _ in range(5):
                print(kind, "warm,", before, child(env, kind, before)[0])
        timings, log = child(env, kind, extra=TRACE)
        print(kind, "warm, traced", timings)
        print(log)
