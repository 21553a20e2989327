"""CuPy's user kernels over cujit's engine: the classes take CuPy's constructor parameters
and call keywords, and return arrays of the inputs' library."""

from dataclasses import dataclass

from . import _arrays, _cujit
from ._errors import ArgumentError, TypeError as _TypeError

# Accepted for CuPy compatibility; cujit has one backend (NVRTC through its cache).
_CUPY_ONLY = {"backend", "jitify"}


def _check_keywords(kwargs, who):
    unknown = sorted(set(kwargs) - _CUPY_ONLY)
    if unknown:
        raise ArgumentError(f"cujit: {who}: unexpected keyword argument {unknown[0]!r}")


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


class ElementwiseKernel(_cujit.ElementwiseKernel):
    """CuPy's ``ElementwiseKernel``: a typed snippet run over broadcast arrays.

    ``ElementwiseKernel(in_params, out_params, operation, name='kernel', reduce_dims=True,
    preamble='', no_return=False, return_tuple=False, loop_prep='', after_loop='',
    options=())``; calls take the inputs, optionally followed by every output, and the
    keywords ``size``, ``block_size`` and ``stream``. A call runs in the extension
    (python/src/call_path.cpp): arguments are read there, outputs made by the inputs' library."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True,
                 preamble="", no_return=False, return_tuple=False, loop_prep="",
                 after_loop="", options=(), **kwargs):
        _check_keywords(kwargs, f"kernel '{name}'")
        super().__init__(in_params, out_params, operation, name, reduce_dims, preamble,
                         loop_prep, after_loop, no_return, return_tuple, list(options))

    def specialize(self, *args, target, size=None, block_size=None):
        """Compiles the kernel for a call with arguments like `args` on GPUs of `target`
        ("sm_90"), without a GPU; a later call with such arguments finds it in the cache."""
        who = f"kernel '{self.name}'"
        items = [_describe(a, who) for a in args]
        result = self._specialize(items, target, -1 if size is None else size,
                                  block_size or 0)
        return Specialization(**result)


def _axes(axis):
    if axis is None:
        return None
    if isinstance(axis, int):
        return [axis]
    return [int(a) for a in axis]


class ReductionKernel(_cujit.ReductionKernel):
    """CuPy's ``ReductionKernel``: map, reduce and post-map snippets over any axes.

    ``ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
    name='reduce_kernel', reduce_type=None, reduce_dims=True, preamble='', options=())``;
    calls take the inputs (optionally followed by every output) and the keywords ``out``,
    ``axis``, ``keepdims``, ``stream`` and ``block_size`` (read in the extension)."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 options=(), **kwargs):
        _check_keywords(kwargs, f"reduction kernel '{name}'")
        super().__init__(in_params, out_params, map_expr, reduce_expr, post_map_expr,
                         "" if identity is None else str(identity), name, reduce_type or "",
                         reduce_dims, preamble, list(options))

    def specialize(self, *args, target, axis=None, keepdims=False, block_size=None,
                   sm_count=132):
        """Compiles the reduction for a call with arguments like `args` on GPUs of `target`
        with `sm_count` multiprocessors, without a GPU."""
        who = f"reduction kernel '{self.name}'"
        items = [_describe(a, who) for a in args]
        result = self._specialize(items, target, _axes(axis), bool(keepdims),
                                  block_size or 0, sm_count)
        return Specialization(**result)
