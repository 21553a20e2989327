"""Host instructions per call of the Python package's kernels, counted by callgrind on the
driver stand-in (bench/host_instructions.sh runs this with LD_LIBRARY_PATH set): each kind runs
in two processes under callgrind, with 200 and 1,200 calls after the same warm-up, and the
difference of their main threads' totals over 1,000 is the cost of one call from Python
(interpreter, extension, cujit, stand-in). bench/host_instructions.cpp's rows are the same calls from C++.

Usage: python_instructions.py WORK_DIR   (its cache already holds the kernels, or gets them)"""

import os
import re
import subprocess
import sys

KINDS = ("elementwise_given", "elementwise_allocated", "reduction", "raw_launch")
# With CuPy installed (it imports and makes arrays over given memory without a GPU): the
# elementwise call on CuPy arrays, output given, its stream given (CuPy's current-stream lookup
# would start CUDA's runtime).
CUPY_KINDS = ("elementwise_cupy_given",)


def cupy_views(arrays):
    """CuPy arrays over the memory of cujit `arrays` (no CUDA call made)."""
    import cupy
    from cupy.cuda import memory

    def view(a):
        mem = memory.UnownedMemory(a.data_ptr, a.nbytes, a, device_id=a.device_id)
        return cupy.ndarray(a.shape, a.dtype, memptr=memory.MemoryPointer(mem, 0))

    return [view(a) for a in arrays]


def child(kind, calls):
    import numpy as np

    import cujit

    add = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "py_instructions_add")
    total = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "py_instructions_sum")
    raw = cujit.RawKernel('extern "C" __global__ void py_instructions_raw(float* x, int n) {}',
                          "py_instructions_raw")
    x, y, z = (cujit.asarray(np.ones(1, np.float32)) for _ in range(3))
    call = {
        "elementwise_given": lambda: add(x, y, z),
        "elementwise_allocated": lambda: add(x, y),
        "reduction": lambda: total(x),
        "raw_launch": lambda: raw((1,), (32,), (x, 1)),
    }.get(kind)
    if call is None:
        cx, cy, cz = cupy_views((x, y, z))
        call = lambda: add(cx, cy, cz, stream=0)  # noqa: E731
    for _ in range(50):
        call()
    for _ in range(calls):
        call()


def total_instructions(work, kind, calls):
    out = os.path.join(work, f"py-{kind}-{calls}.out")
    # The main thread's count only: prefetch()'s background thread does work that varies with
    # timing under valgrind.
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    "--separate-threads=yes", sys.executable,
                    __file__, "--child", kind, str(calls)], check=True,
                   env=dict(os.environ, PYTHONHASHSEED="0"),  # the same dict probes each run
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    main_thread = out + "-01"  # callgrind names per-thread files so when there were threads
    with open(main_thread if os.path.exists(main_thread) else out) as f:
        for line in f:
            match = re.match(r"(summary|totals): (\d+)", line)
            if match:
                return int(match.group(2))
    raise RuntimeError(f"no totals in {out}")


def has_cupy():
    try:
        import cupy  # noqa: F401
    except Exception:  # not installed, or installed without what it loads
        return False
    return True


def main(work):
    kinds = KINDS + (CUPY_KINDS if has_cupy() else ())
    subprocess.run([sys.executable, __file__, "--child", "elementwise_given", "1"], check=True)
    for kind in kinds:  # natively first: the kernels compile into the cache outside valgrind
        subprocess.run([sys.executable, __file__, "--child", kind, "1"], check=True)
    print("Python calls, host instructions per call (callgrind, driver stand-in):")
    for kind in kinds:
        few, many = total_instructions(work, kind, 200), total_instructions(work, kind, 1200)
        print(f"  {kind:<28} {(many - few) / 1000:10.0f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]))
    else:
        main(sys.argv[1])
