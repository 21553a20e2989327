"""How much the Python package's call on CuPy arrays saves by reading CuPy's current stream
through CuPy's Cython C API (cupy_backends.cuda.stream's get_current_stream_ptr) instead of
cupy.cuda.get_current_stream().ptr (issue 33's host time per call).

Runs children in turn, each measuring the host time of a 1-element ElementwiseKernel call on
CuPy arrays (output given) and CuPy's own ElementwiseKernel, with the C API path ("capi") or
with it hidden ("python": a stand-in module without __pyx_capi__ is put in sys.modules before
cujit's first call, so cujit falls back to the Python path). Medians of 7 rounds of 20,000
calls per child; the children alternate so that drift on the shared host hits both alike.

Usage (GPU host, the module built by scripts/gpu_run.sh python):
  PYTHONPATH=/tmp/cujit-pybuild python3 bench/experiments/python_cupy_stream.py [ROUNDS]
"""

import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def child(mode):
    import types

    import cupy as cp

    if mode == "python":
        sys.modules["cupy_backends.cuda.stream"] = types.ModuleType("cupy_backends.cuda.stream")
    import cujit
    from python_calls import host_us  # bench/python_calls.py's timing, the same method

    add = "z = x + y"
    ours = cujit.ElementwiseKernel("float32 x, float32 y", "float32 z", add, "py_stream_add")
    theirs = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", add, "py_stream_add")
    x, y, z = (cp.ones(1, cp.float32) for _ in range(3))
    print(f"{host_us(lambda: ours(x, y, z)):.3f} {host_us(lambda: theirs(x, y, z)):.3f}")


def main(rounds):
    results = {"capi": [], "python": []}
    for _ in range(rounds):
        for mode in ("capi", "python"):
            out = subprocess.run([sys.executable, __file__, "--child", mode], check=True,
                                 capture_output=True, text=True).stdout.split()
            results[mode].append((float(out[0]), float(out[1])))
    for mode, rows in results.items():
        ours = statistics.median(r[0] for r in rows)
        theirs = statistics.median(r[1] for r in rows)
        ratios = [r[0] / r[1] for r in rows]
        print(f"{mode:7s} cujit {ours:.3f} us, CuPy {theirs:.3f} us; cujit/CuPy per child "
              + " ".join(f"{v:.2f}" for v in ratios) + f" (median {statistics.median(ratios):.2f})")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
