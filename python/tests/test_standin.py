"""The Python call path end to end on the driver stand-in (tests/driver_standin): arguments
read in the extension, NVRTC, the cache, loading and the launch all run without a GPU, and the
stand-in counts the launches. Kernels do not compute there, so these tests check the path
(outputs' types, shapes and identity, streams, errors, copies), never kernel results. The
ctest python_standin runs this file with the stand-in first on LD_LIBRARY_PATH."""

import ctypes
import os

import numpy as np
import pytest

import cujit

pytestmark = pytest.mark.skipif(os.environ.get("CUJIT_STANDIN") != "1",
                                reason="runs on the driver stand-in only (ctest python_standin)")


@pytest.fixture
def launches():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cujit_standin_launches.restype = ctypes.c_ulonglong
    return lib.cujit_standin_launches


class Interface:
    """Only a __cuda_array_interface__ (v3) over `array`, naming `stream`."""

    def __init__(self, array, stream=None, version=3):
        self._array = array
        interface = dict(array.__cuda_array_interface__)
        interface["version"] = version
        interface["stream"] = stream
        self.__cuda_array_interface__ = interface


def test_outputs_are_made_given_or_returned_as_asked(launches):
    add = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "standin_add")
    x = cujit.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    before = launches()
    z = add(x, 2.0)
    assert type(z) is cujit.Array and z.shape == (2, 3) and z.dtype == "float32"
    out = cujit.asarray(np.zeros((2, 3), np.float32))
    assert add(x, x, out) is out
    assert launches() == before + 2
    pair = cujit.ElementwiseKernel("T x", "T y, T w", "y = x; w = x", "standin_pair")
    y, w = pair(x)
    assert y.shape == w.shape == (2, 3)
    single = cujit.ElementwiseKernel("T x", "T y", "y = x", "standin_tuple", return_tuple=True)
    assert isinstance(single(x), tuple)
    quiet = cujit.ElementwiseKernel("T x", "T y", "y = x", "standin_none", no_return=True)
    assert quiet(x) is None
    assert launches() == before + 5
    assert (add.nin, add.nout, add.nargs, add.name) == (2, 1, 3, "standin_add")


def test_keywords_scalars_and_size(launches):
    scale = cujit.ElementwiseKernel("T x, T a", "T y", "y = a * x", "standin_scale")
    x = cujit.asarray(np.ones(8, np.float64))
    for a in (2.0, 3, True, np.float64(1.5), 1 << 63):  # 2^63: uint64, through the slow path
        assert scale(x, a, size=None, block_size=None, stream=None).shape == (8,)
    fill = cujit.ElementwiseKernel("", "float32 y", "y = i", "standin_fill")
    assert fill(cujit.asarray(np.zeros(5, np.float32)), size=5).shape == (5,)
    with pytest.raises(TypeError):
        scale(x, 2.0, colour="red")


def test_streams_raw_handles_and_objects(launches):
    copy = cujit.ElementwiseKernel("T x", "T y", "y = x", "standin_copy")
    x = cujit.asarray(np.ones(4, np.float32))

    class HasPtr:
        ptr = 0

    class HasCudaStream:
        cuda_stream = 0

    for stream in (0, HasPtr(), HasCudaStream()):
        assert copy(x, stream=stream).shape == (4,)
    with pytest.raises(cujit.TypeError, match="stream: unsupported type"):
        copy(x, stream="now")


def test_interface_inputs_and_their_streams(launches):
    copy = cujit.ElementwiseKernel("T x", "T y", "y = x", "standin_copy_cai")
    x = cujit.asarray(np.arange(4, dtype=np.float32))
    out = cujit.asarray(np.zeros(4, np.float32))
    before = launches()
    assert copy(Interface(x, stream=None), out) is out
    assert copy(Interface(x, stream=1), out) is out  # waits for the legacy default stream
    assert copy(Interface(x, version=2), out) is out
    with pytest.raises(cujit.TypeError, match="stream 0 is not allowed"):
        copy(Interface(x, stream=0), out)
    raw = cujit.RawKernel('extern "C" __global__ void standin_raw(float* x, int n) {}',
                          "standin_raw")
    raw((1,), (32,), (Interface(x, stream=1), 4))
    assert launches() == before + 4


def test_reductions_axes_keepdims_and_out(launches):
    total = cujit.ReductionKernel("T x", "T y", "x", "a + b", "y = a", "0", "standin_sum")
    x = cujit.asarray(np.ones((4, 6), np.float32))
    assert total(x).shape == ()
    assert total(x, axis=1).shape == (4,)
    assert total(x, axis=(0, 1), keepdims=True).shape == (1, 1)
    out = cujit.asarray(np.zeros(6, np.float32))
    assert total(x, axis=0, out=out) is out
    assert (total.nin, total.nout, total.name) == (1, 1, "standin_sum")


def test_bad_arguments_name_the_kernel_and_position():
    add = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "standin_bad")
    x = cujit.asarray(np.ones(3, np.float32))
    with pytest.raises(cujit.TypeError, match=r"kernel 'standin_bad': argument 1: a host array"):
        add(x, np.ones(3, np.float32))
    with pytest.raises(cujit.TypeError, match="argument 0: unsupported type 'object'"):
        add(object(), x)
    with pytest.raises(TypeError):  # a cujit.TypeError is a builtins.TypeError
        add(x, "two")


def test_copies_round_trip_through_the_standins_memory():
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert np.array_equal(cujit.asarray(data).get(), data)


class LastLaunch:
    """The stand-in's record of the last launch."""

    def __init__(self):
        self._lib = ctypes.CDLL("libcuda.so.1")
        self._lib.cujit_standin_last_param.restype = ctypes.c_long
        dims, shared, stream = (ctypes.c_uint * 6)(), ctypes.c_uint(), ctypes.c_size_t()
        self._lib.cujit_standin_last_geometry(dims, ctypes.byref(shared), ctypes.byref(stream))
        self.grid, self.block = tuple(dims[:3]), tuple(dims[3:])
        self.shared, self.stream = shared.value, stream.value

    def param(self, index):
        out = ctypes.create_string_buffer(64)
        size = self._lib.cujit_standin_last_param(index, out, 64)
        return None if size < 0 else out.raw[:size]


_WIDTHS = r"""
extern "C" __global__ void standin_widths(int a, long long b, unsigned long long c,
                                          unsigned int d, float e, double f, float* x) {}
"""


def test_raw_kernels_get_python_numbers_at_their_parameters_width():
    kernel = cujit.RawKernel(_WIDTHS, "standin_widths")
    x = cujit.asarray(np.zeros(8, np.float32))
    kernel((2,), 128, (5, 1 << 40, 1 << 63, 3_000_000_000, 0.5, 0.5, x), shared_mem=16,
           stream=5)
    last = LastLaunch()
    assert (last.grid, last.block, last.shared, last.stream) == ((2, 1, 1), (128, 1, 1), 16, 5)
    expected = [np.int32(5), np.int64(1 << 40), np.uint64(1 << 63), np.uint32(3_000_000_000),
                np.float32(0.5), np.float64(0.5), np.uint64(x.data_ptr)]
    assert [last.param(i) for i in range(7)] == [e.tobytes() for e in expected]
    # NumPy scalars keep their own type (and a width that differs is refused).
    kernel((1,), (1,), (np.int32(7), np.int64(1), np.uint64(2), np.uint32(3), np.float32(1),
                        np.float64(2), x))
    assert LastLaunch().param(0) == np.int32(7).tobytes()
    with pytest.raises(OverflowError, match="does not fit its 32-bit parameter"):
        kernel((1,), (1,), (1 << 40, 1, 1, 1, 0.5, 0.5, x))
    with pytest.raises(cujit.ArgumentError):
        kernel((1,), (1,), (np.int64(1), 1, 1, 1, 0.5, 0.5, x))


def _attributes():
    lib = ctypes.CDLL("libcuda.so.1")
    cluster, cooperative = (ctypes.c_uint * 3)(), ctypes.c_int()
    lib.cujit_standin_last_attributes(cluster, ctypes.byref(cooperative))
    return tuple(cluster), bool(cooperative.value)


_GRID_SYNC = r"""
#include <cooperative_groups.h>
extern "C" __global__ void standin_grid_sync(float* x) {
  cooperative_groups::this_grid().sync();
  x[0] = 1;
}
"""


def test_launch_configs_clusters_and_cooperative_launches():
    x = cujit.asarray(np.zeros(4, np.float32))
    module = cujit.RawModule(code=_GRID_SYNC, enable_cooperative_groups=True)
    kernel = module.get_function("standin_grid_sync")
    kernel((4,), (64,), (x,))  # CuPy's rule: a cooperative module's kernels launch so
    assert _attributes() == ((1, 1, 1), True)
    kernel((4,), (64,), (x,), enable_cooperative_groups=False)
    plain = cujit.RawKernel(_GRID_SYNC, "standin_grid_sync")
    plain((4,), (64,), (x,), enable_cooperative_groups=True)
    assert _attributes()[1] is True
    config = cujit.LaunchConfig(grid=(8,), block=(128,), cluster=(2,), shared_mem=1024)
    assert (config.grid, config.block, config.cluster, config.shared_mem) == (
        (8, 1, 1), (128, 1, 1), (2, 1, 1), 1024)
    plain.launch(config, (x,))
    last = LastLaunch()
    assert (last.grid, last.block, last.shared) == ((8, 1, 1), (128, 1, 1), 1024)
    assert _attributes() == ((2, 1, 1), False)
    with pytest.raises(cujit.ArgumentError, match="cluster"):
        plain.launch(cujit.LaunchConfig(grid=(9,), block=(128,), cluster=(2,)), (x,))


class DLPackOnly:
    """Only __dlpack__ and __dlpack_device__ over `array`, remembering the streams asked for."""

    def __init__(self, array, takes_stream=True):
        self._array, self._takes_stream, self.streams = array, takes_stream, []

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        if not self._takes_stream and kwargs:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'stream'")
        self.streams.append(kwargs.get("stream"))
        return self._array.__dlpack__()


def test_dlpack_producers_are_told_the_calls_stream():
    copy = cujit.ElementwiseKernel("T x", "T y", "y = x", "standin_copy_dlpack")
    x = cujit.asarray(np.arange(4, dtype=np.float32))
    out = cujit.asarray(np.zeros(4, np.float32))
    producer = DLPackOnly(x)
    assert copy(producer, out, stream=7) is out
    assert copy(producer, out) is out
    assert producer.streams == [7, 1]  # 1: DLPack's legacy default stream (0 is ambiguous)
    old = DLPackOnly(x, takes_stream=False)
    assert copy(old, out) is out and old.streams == [None]


class Offset:
    """A float32 vector of `n` elements starting `offset` elements into `array`'s memory."""

    def __init__(self, array, offset, n):
        self._array = array
        address = array.__cuda_array_interface__["data"][0] + 4 * offset
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f4",
                                         "data": (address, False), "version": 3,
                                         "strides": None, "stream": None}


def test_calls_alike_but_for_alignment_are_planned_apart(launches):
    # The kernel object keeps each call's plan by the call's look (dtypes, shapes, strides,
    # 16-byte alignment): a view one element off must not reuse the vectorised plan of an
    # aligned one, and the aligned call gets its plan back after it.
    add = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "standin_aligned")
    base = cujit.asarray(np.ones(4100, np.float32))
    z = cujit.asarray(np.zeros(4096, np.float32))

    def threads(offset):
        add(Offset(base, offset, 4096), Offset(base, offset, 4096), z)
        last = LastLaunch()
        return last.grid[0] * last.block[0]

    aligned, shifted = threads(0), threads(1)
    assert aligned < shifted  # 16-byte vectors over the aligned views: fewer threads
    assert threads(0) == aligned and threads(1) == shifted and threads(4) == aligned


class _FakeMemory:
    def __init__(self, ptr):
        self.ptr, self.device_id = ptr, 0


class ndarray:  # noqa: N801 (named as CuPy's array is)
    """An object named like CuPy's array, without its C layout: calls read its attributes."""

    __module__ = "cupy._core.core"

    def __init__(self, base):
        self._base = base
        self.data = _FakeMemory(base.data_ptr)
        self.shape, self.strides, self.size = base.shape, base.strides, base.size
        self.dtype = np.dtype(base.dtype)
        self.__cuda_array_interface__ = base.__cuda_array_interface__


def test_an_array_named_like_cupys_is_read_through_its_attributes(launches):
    add = cujit.ElementwiseKernel("T x, T y", "T z", "z = x + y", "standin_named_cupy")
    x, y, z = (ndarray(cujit.asarray(np.ones((4, 3), np.float32))) for _ in range(3))
    before = launches()
    add(x, y, z, stream=0)  # the first sight: the package's slow path, then the type is known
    assert cujit._cujit._reading_of(x) == "attributes"
    add(x, y, z, stream=0)
    assert launches() == before + 2
    z.shape = (3, 4)  # an attribute read each call: the new shape is seen
    with pytest.raises(cujit.ShapeError):
        add(x, y, z, stream=0)


def test_raw_kernels_from_a_module_are_kept_and_copy(launches):
    import copy

    module = cujit.RawModule(code='extern "C" __global__ void standin_kept(float* x, int n) {}')
    kernel = module.get_function("standin_kept")
    assert module.get_function("standin_kept") is kernel  # loaded once, kept by name
    x = cujit.asarray(np.ones(4, np.float32))
    before = launches()
    kernel(1, (32,), (x, 4))
    copy.copy(kernel)([1, 1], 32, [x, 4], shared_mem=0, stream=None)
    copy.deepcopy(kernel)((1,), (32, 1, 1), (x, 4), enable_cooperative_groups=False)
    assert launches() == before + 3
    with pytest.raises(cujit.ArgumentError, match="grid has 4 extents"):
        kernel((1, 1, 1, 1), (32,), (x, 4))
    with pytest.raises(TypeError, match="grid must be an int or a sequence"):
        kernel(1.5, (32,), (x, 4))

    class Untrue:
        def __bool__(self):
            raise ValueError("no truth here")

    with pytest.raises(ValueError, match="no truth here"):
        kernel(1, 32, (x, 4), enable_cooperative_groups=Untrue())
