"""RawModule and RawKernel with CuPy's parameters: construction and offline compilation on the
CPU; launches on CuPy arrays and PyTorch tensors on the GPU."""

import numpy as np
import pytest

import cujit

SAXPY = r"""
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <class T> __global__ void scale(T* x, T by, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= by;
}
"""


def test_a_module_compiles_without_a_gpu():
    module = cujit.RawModule(code=SAXPY, options=("-DUNUSED=1",), name_expressions=["scale<float>"])
    binary = module.compile("sm_90")
    assert binary[:4] == b"\x7fELF"


def test_bad_modules_are_refused_with_cujits_errors():
    with pytest.raises(cujit.ArgumentError, match="exactly one of code= and path="):
        cujit.RawModule()
    with pytest.raises(cujit.ArgumentError):
        cujit.RawModule(code=SAXPY, options=("no-dash",))
    with pytest.raises(cujit.ArgumentError, match="translate_cucomplex"):
        cujit.RawModule(code=SAXPY, translate_cucomplex=True)
    with pytest.raises(cujit.CompileError):
        cujit.RawModule(code="__global__ void k() { undefined_thing; }").compile("sm_90")


def test_a_module_from_a_file(tmp_path):
    path = tmp_path / "saxpy.cu"
    path.write_text(SAXPY)
    assert cujit.RawModule(path=str(path)).compile("sm_80")[:4] == b"\x7fELF"


def test_raw_kernels_on_cupy_arrays(cupy):
    kernel = cujit.RawKernel(SAXPY, "saxpy")
    n = 1000
    x = cupy.arange(n, dtype=cupy.float32)
    y = cupy.ones(n, dtype=cupy.float32)
    kernel(((n + 127) // 128,), (128,), (2.0, x, y, n))  # Python float and int: weak scalars
    cupy.testing.assert_array_equal(y, 2 * x + 1)
    kernel((8,), (128,), (np.float32(1), x, y, np.int32(n)))
    cupy.testing.assert_array_equal(y, 3 * x + 1)
    attributes = kernel.attributes
    assert attributes["max_threads_per_block"] > 0 and attributes["binary_version"] >= 75
    assert kernel.num_regs == attributes["num_regs"]
    with pytest.raises(cujit.ArgumentError):
        kernel((8,), (128,), (2.0, x, y))  # one argument short


def test_name_expressions_and_typed_parameters(cupy):
    module = cujit.RawModule(code=SAXPY, name_expressions=["scale<float>", "scale<double>"])
    scale = module.get_function("scale<double>")
    x = cupy.arange(10, dtype=cupy.float64)
    scale((1,), (32,), (x, 3.0, 10))
    cupy.testing.assert_array_equal(x, 3 * cupy.arange(10, dtype=cupy.float64))
    with pytest.raises(TypeError):  # a mangled name spells the types: float32 for a double
        scale((1,), (32,), (x, np.float32(2), 10))


def test_raw_kernels_on_torch_tensors_and_streams(torch):
    kernel = cujit.RawKernel(SAXPY, "saxpy")
    x = torch.arange(256, device="cuda", dtype=torch.float32)
    y = torch.zeros(256, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        kernel((2,), (128,), (1.5, x, y, 256))
    side.synchronize()
    torch.testing.assert_close(y, 1.5 * x)


def test_global_variables_as_cupy_does(cupy):
    module = cujit.RawModule(code=r"""
    __constant__ float table[4];
    extern "C" __global__ void read(float* out) { out[threadIdx.x] = 2 * table[threadIdx.x]; }
    """)
    pointer = module.get_global("table")
    assert isinstance(pointer, cupy.cuda.MemoryPointer)
    table = cupy.ndarray((4,), cupy.float32, pointer)
    table[...] = cupy.arange(4, dtype=cupy.float32)
    out = cupy.zeros(4, dtype=cupy.float32)
    module.get_function("read")((1,), (4,), (out,))
    cupy.testing.assert_array_equal(out, 2 * cupy.arange(4, dtype=cupy.float32))
    with pytest.raises(cujit.ArgumentError, match="no __device__ or __constant__ variable"):
        module.get_global("missing")


def test_python_numbers_take_their_parameters_width_when_they_fit():
    kernel = cujit.RawKernel.__new__(cujit.RawKernel)
    kernel.name = "widths"
    args = [5, 1 << 40, 1 << 63, 3_000_000_000, 0.5, 0.5]
    items = [("int64", a) for a in args[:3]] + [("int64", args[3]), ("float64", 0.5)] * 1
    items.append(("float64", 0.5))
    kernel._weak_scalars(args, items, [4, 8, 8, 4, 4, 8])
    assert items == [("int32", 5), ("int64", 1 << 40), ("uint64", 1 << 63),
                     ("uint32", 3_000_000_000), ("float32", 0.5), ("float64", 0.5)]
    with pytest.raises(OverflowError, match="does not fit its 32-bit parameter"):
        kernel._weak_scalars([1 << 40], [("int64", 1 << 40)], [4])


def test_a_launch_hands_the_kernel_its_arrays_scalars_and_stream_without_a_gpu():
    """RawKernel.__call__ up to the extension: a CuPy-like array is described without a copy,
    Python numbers take their parameters' widths, and the array's device picks the kernel."""
    from types import SimpleNamespace

    class ndarray:  # noqa: N801 (looks like CuPy's to the fast path)
        __module__ = "cupy._fake"
        data = SimpleNamespace(ptr=1 << 20)
        shape, strides = (8,), (4,)
        dtype = np.dtype(np.float32)
        device = SimpleNamespace(id=1)

    launched = {}

    class FakeKernel:
        param_sizes = [4, 8, 8, 4]
        device_id = 1

        def _launch(self, grid, block, items, shared_mem, stream):
            launched.update(grid=grid, block=block, items=items, shared=shared_mem,
                            stream=stream)

    class FakeModule:
        code, options = "", ()

        def _function(self, name, device):
            launched["device"] = device
            return FakeKernel()

    kernel = cujit.RawKernel._of(FakeModule(), "saxpy")
    kernel((2,), 128, (2.0, ndarray(), ndarray(), 8), shared_mem=16, stream=5)
    code = cujit._cujit.dtype_code("float32")
    assert launched == {"device": 1, "grid": [2], "block": [128], "shared": 16, "stream": 5,
                        "items": [("float32", 2.0), (1 << 20, (8,), (4,), code, 1),
                                  (1 << 20, (8,), (4,), code, 1), ("int32", 8)]}
