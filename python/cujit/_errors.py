"""cujit's exceptions: one class per kind of failure, mirroring the C++ ``cujit::Error``
hierarchy. Each also derives from the built-in exception CuPy raises for the same mistake, so
``except TypeError`` or ``except ValueError`` written for CuPy keeps working."""

import builtins


class Error(Exception):
    """Base of every error cujit raises."""


class SignatureError(Error, builtins.ValueError):
    """A malformed parameter list ("T x, float32 y")."""


class TypeError(Error, builtins.TypeError):  # noqa: A001 (shadows the builtin on purpose)
    """An argument whose dtype does not match what the kernel expects, or a host array."""


class ShapeError(Error, builtins.ValueError):
    """Shapes that do not broadcast, a wrong output shape, a bad axis."""


class ArgumentError(Error, builtins.TypeError, builtins.ValueError):
    """A wrong argument count, a bad block size or size, a name that is not an identifier.
    CuPy raises TypeError for some of these and ValueError for others: this is both."""


class DeviceError(Error, builtins.ValueError):
    """Arrays on different devices, or a stream of another device."""


class CompileError(Error):
    """A snippet that does not compile. ``line`` and ``column`` point into the user's snippet
    (1-based; 0 when unknown); ``log``, ``source`` and ``options`` are the compiler's."""

    line = 0
    column = 0
    log = ""
    source = ""
    options = ()


class CompilerUnavailableError(CompileError):
    """A kernel that must be compiled where no compiler can be loaded, and was not shipped."""


class CudaError(Error, builtins.RuntimeError):
    """A failure the CUDA driver reported, or no driver or device at all."""


class CacheError(Error, builtins.RuntimeError):
    """A kernel-cache failure from an explicit cache operation."""
