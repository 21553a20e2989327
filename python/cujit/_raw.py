"""CuPy's RawModule and RawKernel over cujit's: CUDA source compiled per device through cujit's
kernel cache, kernels launched on a grid with arguments checked against their parameters."""

from . import _cujit
from ._errors import ArgumentError

def _unsupported(flag, value, default=False):
    if value != default:
        raise ArgumentError(f"cujit: RawModule: {flag}={value!r} is not supported")


class RawModule:
    """CuPy's ``RawModule(code=None, path=None, options=(), backend='nvrtc',
    translate_cucomplex=False, enable_cooperative_groups=False, name_expressions=None,
    jitify=False)``: compiled for the current device's exact architecture on the first
    ``get_function``, through cujit's cache. With ``enable_cooperative_groups``, its kernels
    launch cooperatively (all blocks resident, so ``this_grid().sync()`` works), as CuPy's do;
    ``<cooperative_groups.h>`` compiles either way."""

    def __init__(self, code=None, path=None, options=(), backend="nvrtc",
                 translate_cucomplex=False, enable_cooperative_groups=False,
                 name_expressions=None, jitify=False):
        _unsupported("translate_cucomplex", translate_cucomplex)
        self.enable_cooperative_groups = bool(enable_cooperative_groups)
        self.code, self.path = code, path
        self.options = tuple(options)
        self.name_expressions = tuple(name_expressions or ())
        self._module = _cujit.RawModule(code, path, list(self.options),
                                        list(self.name_expressions))
        self._kernels = {}

    def get_function(self, name):
        """The kernel `name` (an extern "C" name or one of the name expressions), compiled and
        loaded on each device where it is first called. The same object for the same name, so
        that `module.get_function(name)(...)` in a loop loads nothing again."""
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = self._kernels[name] = RawKernel._of(self, name)
        return kernel

    def get_global(self, name):
        """The ``__device__`` or ``__constant__`` variable `name` (or a name expression) on the
        current device: a ``cupy.cuda.MemoryPointer`` to it when CuPy is installed, as CuPy
        returns, else a ``cujit.Array`` of its bytes. Either keeps the module loaded."""
        device = _cujit.current_device()
        variable = self._module.get_global(name, device)
        try:
            import cupy
        except ImportError:
            return variable
        memory = cupy.cuda.UnownedMemory(variable.data_ptr, variable.nbytes, variable, device)
        return cupy.cuda.MemoryPointer(memory, 0)

    def compile(self, target):
        """The module's binary for `target` ("sm_90"), compiled without a GPU (bytes)."""
        return self._module.compile_for(target)


class RawKernel(_cujit.RawFunction):
    """CuPy's ``RawKernel(code, name, options=(), backend='nvrtc', translate_cucomplex=False,
    *, enable_cooperative_groups=False, jitify=False)``, called as
    ``kernel(grid, block, args, *, shared_mem=0, stream=None)``. Python ints and floats are
    passed at the width of their parameter (an ``int`` parameter gets an int32); NumPy scalars
    keep their type; arrays (CuPy, PyTorch, cujit) pass their device address. Calls and
    ``launch(config, args, stream=None)`` (a ``cujit.LaunchConfig``: clusters, cooperative,
    programmatic dependent launch, priority, checked against the device's and the kernel's
    limits first) run in the extension (python/src/raw.cpp)."""

    def __init__(self, code, name, options=(), backend="nvrtc", translate_cucomplex=False, *,
                 enable_cooperative_groups=False, jitify=False):
        self._setup(RawModule(code=code, options=options,
                              translate_cucomplex=translate_cucomplex,
                              enable_cooperative_groups=enable_cooperative_groups), name)

    @classmethod
    def _of(cls, module, name):
        kernel = cls.__new__(cls)
        kernel._setup(module, name)
        return kernel

    def __copy__(self):
        return type(self)._of(self._module, self.name)

    def __deepcopy__(self, memo):
        return self.__copy__()

    def _setup(self, module, name):
        _cujit.RawFunction.__init__(self, module._module, name,
                                    module.enable_cooperative_groups)
        self._module, self.name = module, name
        self.code, self.options = module.code, module.options

    @property
    def attributes(self):
        """The loaded kernel's attributes on the current device (CuPy's keys)."""
        return self._kernel().attributes

    def __getattr__(self, name):
        if name in ("max_threads_per_block", "shared_size_bytes", "const_size_bytes",
                    "local_size_bytes", "num_regs", "ptx_version", "binary_version"):
            return self._kernel().attributes[name]
        raise AttributeError(name)

    @property
    def max_dynamic_shared_size_bytes(self):
        """The dynamic shared memory limit last set here (0: the driver's default, 48 KiB)."""
        return self.__dict__.get("_max_dynamic", 0)

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value):
        self._kernel().set_max_dynamic_shared_memory(int(value))
        self.__dict__["_max_dynamic"] = int(value)
