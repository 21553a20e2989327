"""PyTorch tensors in, PyTorch tensors out, on PyTorch's current stream."""

import pytest

import cujit


def test_elementwise_on_tensors_returns_tensors(torch):
    k = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
    x = torch.rand(128, 64, device="cuda")
    y = torch.rand(64, device="cuda")
    z = k(x, y)
    assert isinstance(z, torch.Tensor) and z.shape == (128, 64) and z.is_cuda
    torch.testing.assert_close(z, (x - y) ** 2)
    torch.testing.assert_close(k(x.t(), x.t()), torch.zeros(64, 128, device="cuda"))


def test_sixteen_bit_floats_and_given_outputs(torch):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x * T(2)", "twice16")
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.arange(8, device="cuda").to(dtype)
        y = k(x)
        assert y.dtype == dtype
        torch.testing.assert_close(y, 2 * x)
        out = torch.empty_like(x)
        assert k(x, out) is out


def test_reductions_match_torch(torch):
    total = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total")
    x = torch.rand(257, 129, device="cuda", dtype=torch.float64)
    torch.testing.assert_close(total(x, axis=1), x.sum(dim=1))
    torch.testing.assert_close(total(x, axis=0, keepdims=True), x.sum(dim=0, keepdim=True))
    assert float(total(x)) == pytest.approx(float(x.sum()), rel=1e-12)


def test_calls_run_on_torchs_current_stream(torch):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x + 1", "inc_torch")
    x = torch.zeros(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = k(k(x))
    side.synchronize()
    torch.testing.assert_close(y, torch.full_like(x, 2))
    z = k(x, stream=side)
    side.synchronize()
    torch.testing.assert_close(z, torch.ones_like(x))


def test_host_tensors_are_refused(torch):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x", "copy_host")
    with pytest.raises(TypeError, match="host tensor"):
        k(torch.ones(3))


class DLPackOnly:
    """A GPU array known only through DLPack (as JAX's and others' are)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, **kwargs):
        return self.tensor.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_dlpack_only_inputs_are_viewed_without_copies(torch):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x * x", "square_dl")
    x = torch.arange(6, device="cuda", dtype=torch.float32).reshape(2, 3)
    y = k(DLPackOnly(x))
    assert isinstance(y, cujit.Array) and y.shape == (2, 3)
    torch.testing.assert_close(torch.from_dlpack(y), x * x)
    with pytest.raises(TypeError, match="DLPack tensor on device type 1"):
        k(DLPackOnly(torch.ones(3)))


def test_outputs_come_from_torchs_caching_allocator(torch):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x + 1", "inc_torch_pool")
    x = torch.zeros(1 << 20, device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    y = k(x)
    assert torch.cuda.memory_allocated() - before >= y.numel() * y.element_size()
    torch.testing.assert_close(y, torch.ones_like(x))
    del y
    assert torch.cuda.memory_allocated() == before


def test_asarray_views_a_strided_tensor_without_copying(torch):
    t = torch.arange(12, device="cuda", dtype=torch.float64).reshape(3, 4).t()
    a = cujit.asarray(t)
    assert a.shape == (4, 3) and a.strides == (8, 32) and a.data_ptr == t.data_ptr()
    torch.testing.assert_close(torch.from_dlpack(a), t)


def test_conjugate_views_are_refused_not_read_unresolved(torch):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x", "copy_conj")
    z = torch.tensor([1 + 2j, 3 - 4j], device="cuda")
    with pytest.raises(TypeError, match="resolve_conj"):
        k(z.conj())
    torch.testing.assert_close(k(z.conj().resolve_conj()), z.conj().resolve_conj())
