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
