"""cujit: CuPy's user kernels on any GPU array, compiled at run time and cached.

``cujit.ElementwiseKernel``, ``cujit.ReductionKernel``, ``cujit.RawModule`` and
``cujit.RawKernel`` take CuPy's parameters and call keywords; arguments are CuPy arrays, PyTorch CUDA tensors, or any object with
``__cuda_array_interface__``, and results come back as arrays of the inputs' library. Kernels
are generated, compiled with NVRTC, and kept in cujit's cache (``CUJIT_*`` variables, as in
C++). Errors are ``cujit.Error`` subclasses that also derive from the built-in exceptions CuPy
raises in their place."""

from . import _cujit
from ._arrays import Array, asarray
from ._errors import (ArgumentError, CacheError, CompileError, CompilerUnavailableError,
                      CudaError, DeviceError, Error, ShapeError, SignatureError)
from ._errors import TypeError  # noqa: A004 (cujit.TypeError, a builtins.TypeError subclass)
from ._kernels import ElementwiseKernel, ReductionKernel, Specialization
from ._raw import RawKernel, RawModule

__version__ = _cujit.__version__
LaunchConfig = _cujit.LaunchConfig
device_count = _cujit.device_count

# The kernel cache, as in C++ (include/cujit/cache.hpp) and with the same CUJIT_* variables.
CacheConfig, CacheStats = _cujit.CacheConfig, _cujit.CacheStats
configure_cache, cache_config, disable_cache = (_cujit.configure_cache, _cujit.cache_config,
                                                _cujit.disable_cache)
add_deployment_database, prefetch_cache = _cujit.add_deployment_database, _cujit.prefetch_cache
cache_stats, reset_cache_stats = _cujit.cache_stats, _cujit.reset_cache_stats
default_cache_directory = _cujit.default_cache_directory

# The cache's databases are opened and their most recently used kernels read on a background
# thread while the program sets up (no CUDA call), so that a new process's first call of a
# kernel it ran before finds it in memory (issue 33: 0.4-0.6 ms less on an H200). A bad
# CUJIT_* setting is reported by the first call that uses the cache, not by the import.
try:
    _cujit.prefetch_cache()
except Error:
    pass

__all__ = ["Array", "asarray", "ElementwiseKernel", "ReductionKernel", "RawKernel", "RawModule",
           "LaunchConfig",
           "Specialization",
           "Error", "SignatureError", "ShapeError", "ArgumentError", "DeviceError",
           "CompileError", "CompilerUnavailableError", "CudaError", "CacheError",
           "device_count", "CacheConfig", "CacheStats", "configure_cache", "cache_config",
           "disable_cache", "add_deployment_database", "prefetch_cache", "cache_stats",
           "reset_cache_stats", "default_cache_directory"]
