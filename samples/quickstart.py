"""cujit's Python quick start: CuPy's ElementwiseKernel and ReductionKernel, run on CuPy arrays
or PyTorch tensors (whichever is installed), results checked against the library's own.
Without a GPU it specialises the kernels for an H100 (sm_90), as a build box would, and shows
the error a mistyped snippet gives."""

import numpy as np

import cujit

squared_diff = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)",
                                       "squared_diff")
l2norm = cujit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")


def without_a_gpu():
    x, y = np.empty((1024, 1024), np.float32), np.empty(1024, np.float32)
    s = squared_diff.specialize(x, y, target="sm_90")
    r = l2norm.specialize(x, target="sm_90", axis=1)
    print(f"no GPU: specialised {s.kernel} ({s.binary_size} bytes, {s.origin}) and {r.kernel} "
          f"per row ({r.binary_size} bytes, {r.origin}) for sm_90")
    typo = cujit.ElementwiseKernel("T x", "T y", "y = x +* 2", "typo")
    try:
        typo.specialize(x, target="sm_90")
    except cujit.CompileError as e:
        print(f"a mistyped snippet gives (line {e.line}, column {e.column}):\n{e}")


def with_a_gpu():
    try:
        import cupy as xp

        on = {}
    except ImportError:
        import torch as xp  # the same calls, on CUDA tensors

        on = {"device": "cuda"}
    x = xp.arange(12, dtype=xp.float32, **on).reshape(3, 4)
    y = xp.ones(4, dtype=xp.float32, **on)
    z = squared_diff(x, y)  # y broadcasts over x's rows; z is the library's own array type
    norms = l2norm(x, axis=1)
    assert bool(((z - (x - y) ** 2) == 0).all())
    print(f"squared_diff gave a {type(z).__module__}.{type(z).__name__} of shape {tuple(z.shape)}")
    print("l2norm per row:", [round(float(v), 4) for v in norms])
    print("python quickstart: ok")


if __name__ == "__main__":
    with_a_gpu() if cujit.device_count() > 0 else without_a_gpu()
