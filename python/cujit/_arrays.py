"""Arrays in and out: views of CuPy arrays, PyTorch tensors and any object with
``__cuda_array_interface__``, without copies; outputs returned as arrays of the inputs'
library."""

import atexit
import numbers

from . import _cujit
from ._errors import TypeError as _TypeError

Array = _cujit.Array

_INT64_MIN, _UINT64_END = -(1 << 63), 1 << 64


# A NumPy or PyTorch dtype -> cujit's dtype code (cujit::DType's value), filled on first use
# (NumPy's dtype.name is slow: 3 us).
_DTYPE_CODES = {}


def _dtype_code(dtype):
    code = _DTYPE_CODES.get(dtype)
    if code is None:
        name = getattr(dtype, "name", None) or str(dtype).rpartition(".")[2]
        code = _DTYPE_CODES[dtype] = _cujit.dtype_code(name)
    return code


def _cupy_describe(x, who=None):
    return (x.data.ptr, x.shape, x.strides, _dtype_code(x.dtype), x.device.id)


def _torch_describe(x, who="a kernel"):
    if not x.is_cuda:
        raise _TypeError(f"cujit: {who}: a host tensor (device {x.device}) was given; pass a "
                         "CUDA tensor")
    if x.is_conj() or x.is_neg():  # a flag over unchanged memory, as PyTorch's DLPack refuses
        raise _TypeError(f"cujit: {who}: a conjugate or negative view was given; pass "
                         "x.resolve_conj() or x.resolve_neg()")
    # Strides in elements, as PyTorch keeps them: the sixth field says so.
    return (x.data_ptr(), x.shape, x.stride(), _dtype_code(x.dtype), x.get_device(), True)


def _interface_describe(x, interface):
    import numpy

    shape = tuple(interface["shape"])
    dtype = numpy.dtype(interface["typestr"])
    if not dtype.isnative:
        raise _TypeError(f"cujit: __cuda_array_interface__ type {interface['typestr']!r} is not "
                         "in the machine's byte order")
    strides = tuple(interface.get("strides") or ())  # none: C-contiguous, as cujit takes ()
    return (interface["data"][0], shape, strides, dtype.name, _cujit.current_device())


def _producer_stream(x):
    """The stream that __cuda_array_interface__ v3 names for `x`'s pending work (a consumer
    orders its own work after it), or None: no stream given, or an older version."""
    interface = x.__cuda_array_interface__
    if interface.get("version", 0) < 3:
        return None
    stream = interface.get("stream")
    if stream == 0:  # the protocol forbids it: ambiguous between the two default streams
        raise _TypeError("cujit: __cuda_array_interface__ stream 0 is not allowed; give 1 "
                         "(legacy default), 2 (per-thread default) or a stream's handle")
    return stream


# Array types seen before, by type: their description without the checks, and their library.
_FAST, _FAST_LIBRARY = {}, {}


def _learn(kind):
    if kind.__module__.startswith("cupy") and kind.__name__ == "ndarray":
        _FAST[kind], _FAST_LIBRARY[kind] = _cupy_describe, "cupy"
    elif kind.__module__.startswith("torch") and kind.__name__ in ("Tensor", "Parameter"):
        _FAST[kind], _FAST_LIBRARY[kind] = _torch_describe, "torch"


def slow_item(arg, who, consumer=None):
    """An argument that is not a CuPy array, PyTorch tensor, cujit Array or a plain Python
    number: (item, library name or None, producer stream or None), the item a cujit Array, a
    view tuple (describe) or a (dtype name, value) scalar. `consumer`: the call's stream, for
    DLPack producers to order their work before. The extension calls this."""
    kind = type(arg)
    fast = _FAST.get(kind)
    if fast is not None:
        return (fast(arg, who), _FAST_LIBRARY[kind], None)
    library = library_of(arg)
    # CuPy's and PyTorch's arrays are never scalars: asking numbers.Integral and the others
    # about a type never seen walks their ABC registries (0.1-0.15 ms, the first call's).
    pair = scalar(arg, who) if library is None else None
    if pair is not None:
        return (pair, None, None)
    item = describe(arg, who, consumer)
    _learn(kind)
    producer = None
    if library is None and type(item) is tuple:
        producer = _producer_stream(arg)
    return (item, library, producer)


def library_of(x):
    """'cupy', 'torch' or None (cujit arrays and other libraries' objects)."""
    module = type(x).__module__
    if module.startswith("cupy"):
        return "cupy"
    if module.startswith("torch"):
        return "torch"
    return None


def _dlpack_capsule(x, consumer):
    """x.__dlpack__(stream=consumer): the producer orders its pending work before the
    consumer's stream (producers from before the stream keyword are asked without it)."""
    if consumer is None:
        return x.__dlpack__()
    try:
        return x.__dlpack__(stream=consumer)
    except TypeError:
        return x.__dlpack__()


def describe(x, who, consumer=None):
    """What a call needs of the GPU array `x`, without copying it: a cujit Array, or an
    (address, shape, byte strides, dtype, device) tuple for CuPy arrays, PyTorch tensors and
    __cuda_array_interface__ objects (the caller keeps `x` alive while the call runs).
    cujit.TypeError for host arrays and other objects."""
    if type(x) is Array:
        return x
    library = library_of(x)
    if library == "cupy" and hasattr(x, "data") and hasattr(x, "device"):
        return _cupy_describe(x)
    if library == "torch" and hasattr(x, "data_ptr"):
        return _torch_describe(x, who)
    interface = getattr(x, "__cuda_array_interface__", None)
    if interface is not None:
        return _interface_describe(x, interface)
    if type(x).__module__ == "numpy" and hasattr(x, "shape"):
        raise _TypeError(f"cujit: {who}: a host array (numpy.ndarray) was given; pass a GPU "
                         "array (cupy.ndarray, a CUDA torch.Tensor, cujit.asarray(...))")
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        device_type = x.__dlpack_device__()[0]
        if device_type in (2, 13):  # kDLCUDA, kDLCUDAManaged
            return Array._from_dlpack(_dlpack_capsule(x, consumer))
        raise _TypeError(f"cujit: {who}: a DLPack tensor on device type {device_type} was "
                         "given; pass a CUDA one")
    raise _TypeError(f"cujit: {who}: unsupported type {type(x).__name__!r}; pass a GPU array "
                     "or a scalar")


def view(x, who):
    """A cujit Array viewing the GPU array `x` (no copy; the Array keeps `x` alive)."""
    d = describe(x, who)
    if type(d) is Array:
        return d
    strides = d[2]
    if len(d) > 5:  # in elements (PyTorch's)
        strides = tuple(s * x.element_size() for s in strides)
    return Array._view(d[0], d[1], strides, d[3], d[4], x)


def scalar(value, who):
    """A host scalar as (dtype name, value): Python's bool, int, float and complex as NumPy
    types them (int64, float64, complex128), NumPy scalars with their own dtype."""
    kind = type(value)
    if kind is float:
        return ("float64", value)
    if kind is bool:
        return ("bool", value)
    if kind is int and _INT64_MIN <= value < (1 << 63):
        return ("int64", value)
    if isinstance(value, bool):
        return ("bool", value)
    if type(value).__module__ == "numpy":
        import numpy

        if isinstance(value, numpy.generic):
            return (value.dtype.name, value.item())
        return None
    if isinstance(value, numbers.Integral):
        value = int(value)
        if _INT64_MIN <= value < (1 << 63):
            return ("int64", value)
        if 0 <= value < _UINT64_END:
            return ("uint64", value)
        raise OverflowError(f"cujit: {who}: Python int {value} is too large for any dtype")
    if isinstance(value, numbers.Real):
        return ("float64", float(value))
    if isinstance(value, numbers.Complex):
        return ("complex128", complex(value))
    return None


class _CupyOutputs:
    """A call's memory from CuPy's pool (cupy.cuda.alloc); its outputs become cupy.ndarrays
    that own their memory, as CuPy's own kernels' outputs do."""

    def __init__(self):
        import cupy

        self._cupy, self._live = cupy, {}

    def allocate(self, nbytes, device, stream):
        cuda = self._cupy.cuda
        if stream == cuda.get_current_stream().ptr and device == cuda.runtime.getDevice():
            memory = cuda.alloc(nbytes)
        else:
            # The pool keeps blocks per stream: a block freed on the call's stream is reused only
            # in that stream's order, never by CuPy's current one while the call still runs.
            with cuda.Device(device), cuda.ExternalStream(stream, device):
                memory = cuda.alloc(nbytes)
        self._live[memory.ptr] = memory
        return memory.ptr

    def deallocate(self, address, nbytes, device, stream):
        self._live.pop(address, None)

    def wrap(self, array):
        memory = self._live.get(array.data_ptr)
        if memory is None:
            return self._cupy.asarray(array)
        return self._cupy.ndarray(array.shape, array.dtype, memory, strides=array.strides)


class _TorchOutputs:
    """A call's memory from PyTorch's caching allocator; its outputs become tensors."""

    def __init__(self):
        import torch

        self._torch = torch

    def allocate(self, nbytes, device, stream):
        return self._torch.cuda.caching_allocator_alloc(nbytes, device, stream)

    def deallocate(self, address, nbytes, device, stream):
        self._torch.cuda.caching_allocator_delete(address)

    def wrap(self, array):
        return self._torch.from_dlpack(array)


_OUTPUTS = {}  # library -> (its _cujit.OutputAllocator, its outputs object)
# Dropped before the interpreter tears the extension's types down (nanobind reports instances
# still alive then as leaks).
atexit.register(_OUTPUTS.clear)


def outputs_of(library):
    """What allocates and wraps a call's outputs for `library` ('cupy', 'torch'), or None."""
    found = _OUTPUTS.get(library)
    if found is None and library in ("cupy", "torch"):
        source = _CupyOutputs() if library == "cupy" else _TorchOutputs()
        found = _OUTPUTS[library] = (_cujit.OutputAllocator(source), source)
    return found


def asarray(obj, dtype=None, device=None):
    """A cujit Array: a view of a GPU array (no copy), or a copy of host data (a NumPy array,
    a list) on `device` (default: the current device)."""
    try:
        return view(obj, "asarray")
    except _TypeError:
        pass
    import numpy

    host = numpy.ascontiguousarray(obj, dtype=dtype)
    name = host.dtype.name
    device = _cujit.current_device() if device is None else int(device)
    return Array._from_host(host.tobytes(), host.shape, name, device)


def _get(self):
    """The array's elements copied to a NumPy array (waits for the copy)."""
    import numpy

    data = numpy.frombuffer(self._to_host(), dtype=self.dtype)
    return data.reshape(self.shape)


def _repr(self):
    return f"cujit.Array(shape={self.shape}, dtype={self.dtype}, device={self.device_id})"


Array.get = _get
Array.__repr__ = _repr
