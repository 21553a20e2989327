"""CuPy's user kernels over cujit's engine: the classes take CuPy's constructor parameters
and call keywords, and return arrays of the inputs' library."""

from dataclasses import dataclass

from . import _arrays, _cujit
from ._errors import ArgumentError, TypeError as _TypeError

# Accepted for CuPy compatibility; cujit has one backend (NVRTC through its cache).
_CUPY_ONLY = {"backend", "jitify"}


def _count(params):
    return len([p for p in params.split(",") if p.strip()])


def _check_keywords(kwargs, who):
    unknown = sorted(set(kwargs) - _CUPY_ONLY)
    if unknown:
        raise ArgumentError(f"cujit: {who}: unexpected keyword argument {unknown[0]!r}")


def _stream(stream, library, device):
    """The stream handle a call runs on: the one given (a CuPy or PyTorch stream, or a raw
    handle), else the current stream of the inputs' library, else the legacy default."""
    if stream is not None:
        if isinstance(stream, int):
            return stream
        for attribute in ("ptr", "cuda_stream", "handle"):
            handle = getattr(stream, attribute, None)
            if handle is not None:
                return int(handle)
        raise _TypeError(f"cujit: stream: unsupported type {type(stream).__name__!r}")
    if library == "cupy":
        import cupy

        return cupy.cuda.get_current_stream().ptr
    if library == "torch":
        import torch

        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # no Stream object made
        if raw is not None:
            return raw(device)
        return torch.cuda.current_stream(device).cuda_stream
    return 0


def _arguments(args, who):
    """One call's items (array descriptions and scalar pairs: _arrays.describe, scalar), and the
    library and device of its first array."""
    items, library, device = [], None, -1
    for arg in args:
        kind = type(arg)
        fast = _FAST.get(kind)
        if fast is not None:
            item = fast(arg, who)
        else:
            item = _arrays.scalar(arg, who)
            if item is None:
                item = _arrays.describe(arg, f"{who}: argument {len(items)}")
                _learn(kind)
        if device < 0:
            if type(item) is _arrays.Array:
                device, library = item.device_id, _arrays.library_of(arg)
            elif len(item) >= 5:
                device, library = item[4], _LIBRARY.get(kind) or _arrays.library_of(arg)
        items.append(item)
    return items, library, device


# Array types seen before, by type: their description without the checks, and their library.
_FAST, _LIBRARY = {}, {}


def _learn(kind):
    if kind.__module__.startswith("cupy") and kind.__name__ == "ndarray":
        _FAST[kind], _LIBRARY[kind] = _arrays._cupy_describe, "cupy"
    elif kind.__module__.startswith("torch") and kind.__name__ in ("Tensor", "Parameter"):
        _FAST[kind], _LIBRARY[kind] = _arrays._torch_describe, "torch"


def _results(outputs, given, pool, return_tuple):
    """The call's results: the outputs given, as themselves, else those cujit allocated from the
    inputs' library's pool, as that library's arrays."""
    if given:
        results = list(given)
    elif pool is not None:
        results = [pool[1].wrap(o) for o in outputs]
    else:
        results = outputs
    if return_tuple or len(results) != 1:
        return tuple(results)
    return results[0]


@dataclass(frozen=True)
class Specialization:
    """A kernel specialised without a GPU: its name, target, where it came from ("compiled",
    "disk", "memory", "deployment", "remote"), its binary's size and its cache request key."""

    kernel: str
    target: str
    origin: str
    binary_size: int
    request_key: str


def _describe(arg, who):
    """An argument description for specialize(): an object with dtype and shape (a NumPy or
    CuPy array, a tensor, a cujit.ArgSpec), or a scalar."""
    pair = _arrays.scalar(arg, who)
    if pair is not None:
        return (pair[0],)
    dtype = getattr(arg, "dtype", None)
    shape = getattr(arg, "shape", None)
    if dtype is None or shape is None:
        raise _TypeError(f"cujit: {who}: cannot describe {type(arg).__name__!r}; give an "
                         "object with dtype and shape, or a scalar")
    name = getattr(dtype, "name", None) or str(dtype).rpartition(".")[2]
    strides = getattr(arg, "strides", None)
    if callable(strides):  # torch: strides in elements
        strides = tuple(s * arg.element_size() for s in arg.stride())
    return (name, tuple(shape), tuple(strides) if strides is not None else None)


class ElementwiseKernel:
    """CuPy's ``ElementwiseKernel``: a typed snippet run over broadcast arrays.

    ``ElementwiseKernel(in_params, out_params, operation, name='kernel', reduce_dims=True,
    preamble='', no_return=False, return_tuple=False, loop_prep='', after_loop='',
    options=())``; calls take the inputs, optionally followed by every output, and the
    keywords ``size``, ``block_size`` and ``stream``."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, loop_prep="",
                 after_loop="", options=(), **kwargs):
        _check_keywords(kwargs, f"kernel '{name}'")
        self._kernel = _cujit.ElementwiseKernel(in_params, out_params, operation, name,
                                                reduce_dims, preamble, loop_prep, after_loop,
                                                no_return, list(options))
        self.name, self._who = name, f"kernel '{name}'"
        self.nin, self.nout = _count(in_params), _count(out_params)
        self.nargs = self.nin + self.nout
        self.no_return, self.return_tuple = no_return, return_tuple

    def __call__(self, *args, size=None, block_size=None, stream=None):
        items, library, device = _arguments(args, self._who)
        handle = _stream(stream, library, max(device, 0))
        given = args[self.nin:] if len(args) == self.nargs else None
        pool = None if given else _arrays.outputs_of(library)
        outputs = self._kernel._call(items, -1 if size is None else size, block_size or 0,
                                     handle, device, None if pool is None else pool[0],
                                     not given)
        if self.no_return:
            return None
        return _results(outputs, given, pool, self.return_tuple)

    def specialize(self, *args, target, size=None, block_size=None):
        """Compiles the kernel for a call with arguments like `args` on GPUs of `target`
        ("sm_90"), without a GPU; a later call with such arguments finds it in the cache."""
        who = f"kernel '{self.name}'"
        items = [_describe(a, who) for a in args]
        result = self._kernel._specialize(items, target, -1 if size is None else size,
                                          block_size or 0)
        return Specialization(**result)


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, int):
        return [axis]
    return [int(a) for a in axis]


class ReductionKernel:
    """CuPy's ``ReductionKernel``: map, reduce and post-map snippets over any axes.

    ``ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
    name='reduce_kernel', reduce_type=None, reduce_dims=True, preamble='', options=())``;
    calls take the inputs (optionally followed by every output) and the keywords ``out``,
    ``axis``, ``keepdims``, ``stream`` and ``block_size``."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 options=(), **kwargs):
        _check_keywords(kwargs, f"reduction kernel '{name}'")
        self._kernel = _cujit.ReductionKernel(
            in_params, out_params, map_expr, reduce_expr, post_map_expr,
            "" if identity is None else str(identity), name, reduce_type or "", reduce_dims,
            preamble, list(options))
        self.name, self._who = name, f"reduction kernel '{name}'"
        self.nin, self.nout = _count(in_params), _count(out_params)
        self.nargs = self.nin + self.nout

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None,
                 block_size=None):
        if out is not None:
            args = args + (out,)
        items, library, device = _arguments(args, self._who)
        handle = _stream(stream, library, max(device, 0))
        given = args[self.nin:] if len(args) == self.nargs else None
        pool = _arrays.outputs_of(library)  # outputs and scratch
        outputs = self._kernel._call(items, _axes(axis), bool(keepdims), block_size or 0,
                                     handle, device, None if pool is None else pool[0])
        return _results(outputs, given, pool, False)

    def specialize(self, *args, target, axis=None, keepdims=False, block_size=None,
                   sm_count=132):
        """Compiles the reduction for a call with arguments like `args` on GPUs of `target`
        with `sm_count` multiprocessors, without a GPU."""
        who = f"reduction kernel '{self.name}'"
        items = [_describe(a, who) for a in args]
        result = self._kernel._specialize(items, target, _axes(axis), bool(keepdims),
                                          block_size or 0, sm_count)
        return Specialization(**result)
