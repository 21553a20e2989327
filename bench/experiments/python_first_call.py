"""Where a new process's first warm call from Python goes (issue 33): a child process per row,
the kernel cache on disk already; times cujit's device start (its first array) apart from the
kernel's first call, and the elementwise first call with and without that start done."""

import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import cupy as cp
x = cp.linspace(1, 2, 1 << 20, dtype=cp.float32)
cp.cuda.Device().synchronize()
t0 = time.perf_counter()
import cujit
t1 = time.perf_counter()
if sys.argv[1] == "start-first":
    cujit.asarray(x)  # a view: cujit's driver, device and context, no kernel
t2 = time.perf_counter()
f = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "py_first_diff")
t3 = time.perf_counter()
r = f(x, x)
cp.cuda.Device().synchronize()
t4 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "start_ms": (t2 - t1) * 1e3,
                  "define_ms": (t3 - t2) * 1e3, "call_ms": (t4 - t3) * 1e3}))
"""

with tempfile.TemporaryDirectory() as cache:
    env = dict(os.environ, CUJIT_CACHE_DIR=cache)
    for mode in ("cold", "start-first", "call-only", "start-first"):
        out = subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True,
                             text=True, timeout=120)
        if out.returncode:
            sys.exit(out.stderr)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(mode, {k: round(v, 3) for k, v in row.items()})
