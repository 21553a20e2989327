"""CuPy arrays in, CuPy arrays out: a program written for cupy.ElementwiseKernel and
cupy.ReductionKernel runs unchanged on cujit's (results checked against CuPy's own)."""

import numpy as np
import pytest

import cujit


def test_elementwise_on_cupy_arrays_broadcasts_and_returns_cupy(cupy):
    k = cujit.ElementwiseKernel("T x, T y", "T z", "z = (x - y) * (x - y)", "squared_diff")
    x = cupy.random.rand(256, 64, dtype=cupy.float32)
    y = cupy.random.rand(64, dtype=cupy.float32)
    z = k(x, y)
    assert isinstance(z, cupy.ndarray) and z.shape == (256, 64) and z.dtype == cupy.float32
    cupy.testing.assert_allclose(z, (x - y) ** 2, rtol=1e-6)
    # Transposed and sliced views, without copies.
    w = k(x.T, x.T[::-1])
    cupy.testing.assert_allclose(w, (x.T - x.T[::-1]) ** 2, rtol=1e-6)


def test_given_outputs_are_returned_as_themselves(cupy):
    k = cujit.ElementwiseKernel("T x", "T y", "y = 2 * x", "twice")
    x = cupy.arange(10, dtype=cupy.float64)
    out = cupy.empty_like(x)
    assert k(x, out) is out
    cupy.testing.assert_array_equal(out, 2 * x)


def test_scalars_are_cast_to_the_parameter_type(cupy):
    k = cujit.ElementwiseKernel("T x, T a", "T y", "y = a * x", "scale")
    x = cupy.ones(5, dtype=cupy.float32)
    y = k(x, 2.5)  # a Python float takes T = float32 from x, as in CuPy
    assert y.dtype == cupy.float32
    cupy.testing.assert_array_equal(y, cupy.full(5, 2.5, cupy.float32))
    fixed = cujit.ElementwiseKernel("float32 x, int32 k", "float32 y", "y = x * k", "times")
    cupy.testing.assert_array_equal(fixed(x, 3), cupy.full(5, 3, cupy.float32))


def test_several_outputs_come_back_as_a_tuple(cupy):
    k = cujit.ElementwiseKernel("T x", "T lo, T hi", "lo = x - 1; hi = x + 1", "band")
    x = cupy.arange(4, dtype=cupy.int32)
    lo, hi = k(x)
    cupy.testing.assert_array_equal(lo, x - 1)
    cupy.testing.assert_array_equal(hi, x + 1)
    one = cujit.ElementwiseKernel("T x", "T y", "y = x", "copy_tuple", return_tuple=True)
    (y,) = one(x)
    cupy.testing.assert_array_equal(y, x)
    none = cujit.ElementwiseKernel("T x", "raw T y", "y[i] = x", "fill_raw", no_return=True)
    out = cupy.zeros(4, dtype=cupy.int32)
    assert none(x, out) is None
    cupy.testing.assert_array_equal(out, x)


def test_size_with_raw_arrays_and_zero_size(cupy):
    k = cujit.ElementwiseKernel("raw T x", "raw T y", "y[i] = x[x.size() - 1 - i]", "rev")
    x = cupy.arange(8, dtype=cupy.float32)
    y = cupy.empty_like(x)
    k(x, y, size=8)
    cupy.testing.assert_array_equal(y, x[::-1])
    add = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add0")
    empty = add(cupy.empty((0, 3), cupy.float32), cupy.empty((0, 3), cupy.float32))
    assert isinstance(empty, cupy.ndarray) and empty.shape == (0, 3)


def test_errors_are_the_exceptions_cupy_code_catches(cupy):
    k = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add_err")
    with pytest.raises(TypeError, match="expected float32"):
        k(cupy.ones(3, cupy.float32), cupy.ones(3, cupy.float64))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        k(cupy.ones(3, cupy.float32), cupy.ones(4, cupy.float32))
    with pytest.raises(TypeError, match="takes 2 input"):
        k(cupy.ones(3, cupy.float32))


def test_calls_follow_cupys_current_stream_and_take_stream(cupy):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x + 1", "inc")
    x = cupy.zeros(1 << 20, dtype=cupy.float32)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        y = k(x)  # on the current stream, as CuPy's own kernels
        z = k(y)
    stream.synchronize()
    cupy.testing.assert_array_equal(z, cupy.full(1 << 20, 2, cupy.float32))
    other = cupy.cuda.Stream()
    w = k(x, stream=other)
    other.synchronize()
    cupy.testing.assert_array_equal(w, cupy.ones(1 << 20, cupy.float32))
    assert cupy.cuda.Device().id == 0  # the caller's current device is unchanged


def test_reductions_match_cupy(cupy):
    total = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total")
    x = cupy.random.rand(300, 200).astype(cupy.float64)
    s = total(x)
    assert isinstance(s, cupy.ndarray) and s.shape == ()
    assert float(s) == pytest.approx(float(x.sum()), rel=1e-12)
    cupy.testing.assert_allclose(total(x, axis=1), x.sum(axis=1), rtol=1e-12)
    cupy.testing.assert_allclose(total(x, axis=0, keepdims=True), x.sum(axis=0, keepdims=True),
                                 rtol=1e-12)
    out = cupy.empty(300, cupy.float64)
    assert total(x, axis=(1,), out=out) is out
    cupy.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-12)
    l2 = cujit.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    cupy.testing.assert_allclose(l2(x.T, axis=0), cupy.linalg.norm(x, axis=1), rtol=1e-12)


def test_cujit_arrays_speak_both_protocols(cupy):
    a = cujit.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    assert isinstance(a, cujit.Array) and a.shape == (3, 4) and a.dtype == "int32"
    np.testing.assert_array_equal(a.get(), np.arange(12).reshape(3, 4))
    c = cupy.asarray(a)  # __cuda_array_interface__, no copy
    assert c.data.ptr == a.data_ptr
    cupy.testing.assert_array_equal(c, cupy.arange(12, dtype=cupy.int32).reshape(3, 4))
    d = cupy.from_dlpack(a)
    assert d.data.ptr == a.data_ptr
    k = cujit.ElementwiseKernel("T x", "T y", "y = -x", "neg")
    assert isinstance(k(a), cujit.Array)  # cujit in, cujit out


def test_outputs_come_from_cupys_pool(cupy):
    k = cujit.ElementwiseKernel("T x", "T y", "y = x + 1", "inc_pool")
    pool = cupy.get_default_memory_pool()
    x = cupy.zeros(1 << 20, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    before = pool.used_bytes()
    y = k(x)
    assert pool.used_bytes() - before >= y.nbytes  # in CuPy's pool, counted as CuPy's
    assert y.base is None  # owns its memory, as CuPy's own kernels' outputs do
    cupy.testing.assert_array_equal(y, cupy.ones_like(x))
    del y
    assert pool.used_bytes() == before
    total = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total_pool")
    assert float(total(cupy.ones(1 << 24, cupy.float32))) == float(1 << 24)  # scratch too


def test_one_kernel_shared_by_threads(cupy):
    """The GIL is released while cujit compiles and launches: threads share one kernel object,
    each on its own stream, and the first call's compilation happens once."""
    import threading

    k = cujit.ElementwiseKernel("T x, T a", "T y", "y = a * x", "threads_scale")
    results, errors = {}, []

    def work(t):
        try:
            stream = cupy.cuda.Stream(non_blocking=True)
            with stream:
                x = cupy.arange(1 << 16, dtype=cupy.float32)
                for _ in range(20):
                    y = k(x, float(t))
                stream.synchronize()
                results[t] = float(y[-1])
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    cujit.reset_cache_stats()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert results == {t: float(t * ((1 << 16) - 1)) for t in range(8)}
    assert cujit.cache_stats().misses <= 1  # one compilation, whoever came first


def test_a_reduction_on_another_stream_takes_its_scratch_there(cupy):
    total = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "total_streams")
    x = cupy.ones(1 << 24, dtype=cupy.float32)
    side = cupy.cuda.Stream(non_blocking=True)
    with cupy.cuda.Stream(non_blocking=True):
        for _ in range(10):
            s = total(x, stream=side)
            noise = cupy.full(1 << 22, 7, cupy.float32)  # CuPy's current stream allocates too
        side.synchronize()
        assert float(s) == float(1 << 24)
        del noise


class _Interface:
    """An object that is only a __cuda_array_interface__ (v3) over `array`, naming `stream` as
    the stream its pending work runs on."""

    def __init__(self, array, stream):
        self._array = array
        interface = dict(array.__cuda_array_interface__)
        interface["stream"] = stream
        self.__cuda_array_interface__ = interface


_LATE_WRITE = r"""
extern "C" __global__ void late_write(float* x, int n, long long spin) {
  long long start = clock64();
  while (clock64() - start < spin) {}
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = 7.0f;
}
"""


def test_interface_inputs_wait_for_the_stream_they_name(cupy):
    # The producer writes 7s after a long spin on its own stream; a consumer that did not wait
    # for that stream would read the zeros that were there before.
    n = 1 << 16
    x = cupy.zeros(n, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    producer, consumer = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    late = cupy.RawKernel(_LATE_WRITE, "late_write")
    copy = cujit.ElementwiseKernel("T x", "T y", "y = x", "copy_after_producer")
    y = cupy.empty_like(x)
    with producer:
        late((1,), (256,), (x, cupy.int32(n), cupy.int64(200_000_000)))  # ~0.1 s
    copy(_Interface(x, producer.ptr), y, stream=consumer)
    consumer.synchronize()
    assert float(y.min()) == 7.0
    # RawKernel launches wait the same way.
    x.fill(0)
    cupy.cuda.Device().synchronize()
    raw = cujit.RawKernel(r"""
extern "C" __global__ void copy_raw(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}""", "copy_raw")
    with producer:
        late((1,), (256,), (x, cupy.int32(n), cupy.int64(200_000_000)))
    raw((n // 256,), (256,), (_Interface(x, producer.ptr), y, n), stream=consumer)
    consumer.synchronize()
    assert float(y.min()) == 7.0
    # Without a stream named (None), nothing is waited for: the call is ordered by the caller.
    copy(_Interface(x, None), y, stream=consumer)
    consumer.synchronize()
    cupy.testing.assert_array_equal(y, x)


def test_interface_stream_zero_is_refused(cupy):
    copy = cujit.ElementwiseKernel("T x", "T y", "y = x", "copy_zero_stream")
    x = cupy.zeros(4, dtype=cupy.float32)
    with pytest.raises(cujit.TypeError, match="stream 0 is not allowed"):
        copy(_Interface(x, 0), cupy.empty_like(x))


def test_cupy_arrays_are_read_through_their_c_layout(cupy):
    k = cujit.ElementwiseKernel("T x, T y", "T z", "z = x - y", "layout_diff")
    base = cupy.random.rand(64, 48)
    k(base, base)  # the first sight of cupy.ndarray: its layout is checked
    assert cujit._cujit._reading_of(base) == "fields"
    views = [base[3:, 5::2], base[::-1], base.T, base[7], base[2, 3], base[:0], base[:, ::-3]]
    for v in views:
        cupy.testing.assert_array_equal(k(v, v[()] * 2), -v)
    # A Python subclass of CuPy's array is another library's array to cujit: read through
    # __cuda_array_interface__ each call.
    class Sub(cupy.ndarray):
        pass
    s = base.view(Sub)
    cupy.testing.assert_array_equal(k(s, base), cupy.zeros_like(base))
    assert cujit._cujit._reading_of(s) is None
    # Reshaped in place: the fields read each call see it.
    c = cupy.arange(12, dtype=cupy.int32)
    k(c, c)
    c.shape = (3, 4)
    assert k(c, cupy.ones(4, cupy.int32)).shape == (3, 4)
    cupy.testing.assert_array_equal(k(c, c.T.T), cupy.zeros((3, 4), cupy.int32))
    # Other dtypes, each its own dtype object.
    for dtype in (cupy.float16, cupy.int8, cupy.uint64, cupy.complex64, cupy.bool_):
        a = cupy.ones(5, dtype)
        assert k(a, a).dtype == a.dtype


def test_views_kept_between_calls_follow_the_arrays(cupy):
    # Calls keep their views of CuPy arrays per thread (16 slots) and find them again by the
    # arrays' fields: more arrays than slots in one call, and a call made while another reads
    # its arguments, still see every array as it is.
    n = 20
    names = ", ".join(f"T x{i}" for i in range(n))
    total = cujit.ElementwiseKernel(names, "T y", "y = " + " + ".join(f"x{i}" for i in range(n)),
                                    "sum_of_twenty")
    xs = [cupy.full(7, i, cupy.int64) for i in range(n)]
    for _ in range(3):
        cupy.testing.assert_array_equal(total(*xs), cupy.full(7, n * (n - 1) // 2))
    twice = cujit.ElementwiseKernel("T x", "T y", "y = 2 * x", "twice_nested")

    class CallsWhileRead:
        """A __cuda_array_interface__ that runs kernels on 20 other arrays when read."""

        def __init__(self, array):
            self._array = array

        @property
        def __cuda_array_interface__(self):
            for x in xs:
                twice(x)
            return self._array.__cuda_array_interface__

    diff = cujit.ElementwiseKernel("T a, T b", "T c", "c = a - b", "diff_nested")
    a, b = cupy.full(7, 100, cupy.int64), cupy.full(7, 1, cupy.int64)
    for _ in range(2):
        cupy.testing.assert_array_equal(diff(a, CallsWhileRead(b)), cupy.full(7, 99))
    a.shape = (7, 1)  # the same memory, another shape: another view
    assert diff(a, b).shape == (7, 7)
