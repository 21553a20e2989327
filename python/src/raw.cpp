// RawModule and RawKernel: a module compiled per device through the kernel cache, its kernels
// launched with arguments checked against their parameters.
#include "bindings.hpp"
#include "call_path.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cujit::python {
namespace {

RawModule make_module(const std::optional<std::string>& code,
                      const std::optional<std::string>& path, std::vector<std::string> options,
                      std::vector<std::string> name_expressions) {
  if (code.has_value() == path.has_value()) {
    throw ArgumentError("cujit: RawModule: give exactly one of code= and path=");
  }
  if (path) return RawModule::from_file(*path, std::move(options), std::move(name_expressions));
  return RawModule(*code, std::move(options), std::move(name_expressions));
}

// A grid or block: an int, or a tuple or list (any sequence) of 1 to 3 ints.
Dim3 dim3(nb::handle value, const char* what) {
  unsigned e[3] = {1, 1, 1};
  if (PyLong_Check(value.ptr())) {
    e[0] = nb::cast<unsigned>(value);
    return Dim3(e[0]);
  }
  const nb::object items = nb::steal(PySequence_Fast(value.ptr(), ""));
  if (!items.is_valid()) {
    if (!PyErr_ExceptionMatches(PyExc_TypeError)) throw nb::python_error();
    PyErr_Clear();
    throw TypeError(std::string("cujit: RawKernel: ") + what +
                    " must be an int or a sequence of 1 to 3 ints, not '" +
                    Py_TYPE(value.ptr())->tp_name + "'");
  }
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(items.ptr());
  if (n == 0 || n > 3) {
    throw ArgumentError(std::string("cujit: RawKernel: ") + what + " has " + std::to_string(n) +
                        " extents; give 1 to 3");
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    e[i] = nb::cast<unsigned>(nb::handle(PySequence_Fast_GET_ITEM(items.ptr(), i)));
  }
  return Dim3(e[0], e[1], e[2]);
}

// A scalar's value as a kernel argument of its own dtype's C++ type.
KernelArg typed_arg(const Scalar& s) {
  auto as = [&](auto typed) {
    std::memcpy(&typed, s.bytes(), sizeof typed);
    return KernelArg(typed);
  };
  switch (s.dtype()) {
    case DType::Bool:
      return as(bool{});
    case DType::Int8:
      return as(std::int8_t{});
    case DType::Int16:
      return as(std::int16_t{});
    case DType::Int32:
      return as(std::int32_t{});
    case DType::Int64:
      return as(std::int64_t{});
    case DType::UInt8:
      return as(std::uint8_t{});
    case DType::UInt16:
      return as(std::uint16_t{});
    case DType::UInt32:
      return as(std::uint32_t{});
    case DType::UInt64:
      return as(std::uint64_t{});
    case DType::Float16:
      return as(float16{});
    case DType::BFloat16:
      return as(bfloat16{});
    case DType::Float32:
      return as(float{});
    case DType::Float64:
      return as(double{});
    case DType::Complex64:
      return as(std::complex<float>{});
    default:
      return as(std::complex<double>{});
  }
}

template <class Signed, class Unsigned>
std::optional<KernelArg> fitted(nb::handle value) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow == 0 && v >= std::numeric_limits<Signed>::min() &&
      v <= std::numeric_limits<Signed>::max()) {
    return KernelArg(static_cast<Signed>(v));
  }
  if (overflow >= 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(value.ptr());
    if (!PyErr_Occurred() && u <= std::numeric_limits<Unsigned>::max()) {
      return KernelArg(static_cast<Unsigned>(u));
    }
    PyErr_Clear();
  }
  return std::nullopt;
}

// A Python int takes its parameter's width (signed if it fits, else unsigned; OverflowError
// otherwise) and a Python float a 4-byte parameter's float32, as NumPy 2 treats such scalars.
KernelArg weak_arg(nb::handle value, const Arg& arg, std::size_t size, std::size_t index,
                   const std::string& who) {
  if (PyFloat_CheckExact(value.ptr())) {
    if (size == 4) return KernelArg(static_cast<float>(PyFloat_AS_DOUBLE(value.ptr())));
    return typed_arg(arg.scalar());
  }
  std::optional<KernelArg> fit;
  if (size == 1) fit = fitted<std::int8_t, std::uint8_t>(value);
  if (size == 2) fit = fitted<std::int16_t, std::uint16_t>(value);
  if (size == 4) fit = fitted<std::int32_t, std::uint32_t>(value);
  if (size == 8) fit = fitted<std::int64_t, std::uint64_t>(value);
  if (fit) return *fit;
  if (size != 1 && size != 2 && size != 4 && size != 8) return typed_arg(arg.scalar());
  const std::string text = nb::cast<std::string>(nb::str(value));
  PyErr_SetString(PyExc_OverflowError,
                  ("cujit: " + who + ": argument " + std::to_string(index) + ": Python int " +
                   text + " does not fit its " + std::to_string(8 * size) + "-bit parameter")
                      .c_str());
  throw nb::python_error();
}

std::vector<KernelArg> kernel_args(const PythonCall& call, nb::handle args, const RawKernel& k,
                                   const std::string& who) {
  const std::vector<std::size_t>& sizes = k.param_sizes();
  std::vector<KernelArg> out;
  out.reserve(call.args().size());
  for (std::size_t i = 0; i < call.args().size(); ++i) {
    const Arg& arg = call.args()[i];
    if (arg.is_array()) {
      out.emplace_back(arg.array());
    } else if (call.weak(i) && i < sizes.size()) {
      out.push_back(weak_arg(args[i], arg, sizes[i], i, who));
    } else {
      out.push_back(typed_arg(arg.scalar()));
    }
  }
  return out;
}

// A RawKernel as Python holds it: a module's kernel by name, loaded once per device and kept
// here, called as CuPy calls its RawKernel with no Python frame in between.
class RawFunction {
 public:
  RawFunction(RawModule module, std::string name, bool cooperative)
      : module_(std::move(module)),
        name_(std::move(name)),
        who_("kernel '" + name_ + "'"),
        cooperative_(cooperative) {}

  bool cooperative() const noexcept { return cooperative_; }

  /// The kernel on `device` (-1: the current one), compiled and loaded there on first use
  /// with the GIL released. Called with the GIL held.
  std::shared_ptr<const RawKernel> on(int device) {
    if (device < 0) device = Device::current().id();
    if (auto found = find(device)) return found;
    auto loaded = [&] {
      nb::gil_scoped_release released;
      return std::make_shared<const RawKernel>(module_.get_function(name_, Device::get(device)));
    }();
    if (auto found = find(device)) return found;  // another thread loaded it meanwhile
    kernels_.emplace_back(device, loaded);
    return loaded;
  }

  /// kernel(grid, block, args, shared_mem=, stream=, enable_cooperative_groups=): CuPy's
  /// call; a cooperative launch goes through a LaunchConfig.
  void call(nb::handle grid, nb::handle block, nb::handle args, std::size_t shared_mem,
            nb::handle stream, nb::handle cooperative) {
    bool together = cooperative_;
    if (!cooperative.is_none()) {
      const int truth = PyObject_IsTrue(cooperative.ptr());
      if (truth < 0) throw nb::python_error();
      together = truth == 1;
    }
    if (!together) return launch(nullptr, grid, block, args, shared_mem, stream);
    LaunchConfig config;
    config.grid = dim3(grid, "grid");
    config.block = dim3(block, "block");
    config.shared_mem = shared_mem;
    config.cooperative = true;
    launch(&config, grid, block, args, shared_mem, stream);
  }

  /// A launch: the arguments read in C++, the kernel of their device, then `config` applied
  /// through cuLaunchKernelEx, or, without one, a plain launch of `grid` by `block`.
  void launch(const LaunchConfig* config, nb::handle grid, nb::handle block, nb::handle args,
              std::size_t shared_mem, nb::handle stream) {
    const nb::tuple items = nb::steal<nb::tuple>(PySequence_Tuple(args.ptr()));
    if (!items.is_valid()) throw nb::python_error();
    const PythonCall call(items, items.size(), who_, stream);
    const std::shared_ptr<const RawKernel> kernel = on(call.device());
    const RawKernel& k = *kernel;
    const std::vector<KernelArg> launch_args = kernel_args(call, items, k, who_);
    const std::uintptr_t handle = stream_handle(stream, call.library(), k.device_id());
    const Stream on_stream =
        Stream::wrap(reinterpret_cast<CUstream_st*>(handle), Device::get(k.device_id()));
    if (config != nullptr) {
      nb::gil_scoped_release released;
      call.wait_for_producers(handle);
      k.launch(*config, launch_args, on_stream);
      return;
    }
    const Dim3 g = dim3(grid, "grid"), b = dim3(block, "block");
    nb::gil_scoped_release released;
    call.wait_for_producers(handle);
    k.launch(g, b, launch_args, shared_mem, on_stream);
  }

 private:
  std::shared_ptr<const RawKernel> find(int device) const {
    for (const auto& [d, k] : kernels_) {
      if (d == device) return k;
    }
    return nullptr;
  }

  RawModule module_;
  std::string name_;
  std::string who_;  // "kernel 'name'", for messages
  bool cooperative_ = false;
  std::vector<std::pair<int, std::shared_ptr<const RawKernel>>> kernels_;
};

Dim3 dim3_or_one(nb::handle value, const char* what) {
  return value.is_none() ? Dim3() : dim3(value, what);
}

nb::tuple dim3_tuple(const Dim3& d) { return nb::make_tuple(d.x, d.y, d.z); }

void bind_launch_config(nb::module_& m) {
  nb::class_<LaunchConfig>(m, "LaunchConfig",
                           "How a RawKernel launches: grid, block, dynamic shared memory, "
                           "thread-block cluster, cooperative and programmatic dependent "
                           "launch, priority (cujit::LaunchConfig).")
      .def(
          "__init__",
          [](LaunchConfig* self, nb::handle grid, nb::handle block, std::size_t shared_mem,
             nb::handle cluster, bool cooperative, bool programmatic_dependent_launch,
             std::optional<int> priority) {
            new (self) LaunchConfig{dim3(grid, "grid"),
                                    dim3(block, "block"),
                                    shared_mem,
                                    dim3_or_one(cluster, "cluster"),
                                    cooperative,
                                    programmatic_dependent_launch,
                                    priority};
          },
          nb::arg("grid"), nb::arg("block"), nb::arg("shared_mem") = 0,
          nb::arg("cluster").none() = nb::none(), nb::arg("cooperative") = false,
          nb::arg("programmatic_dependent_launch") = false, nb::arg("priority").none() = nb::none())
      .def_prop_ro("grid", [](const LaunchConfig& c) { return dim3_tuple(c.grid); })
      .def_prop_ro("block", [](const LaunchConfig& c) { return dim3_tuple(c.block); })
      .def_prop_ro("cluster", [](const LaunchConfig& c) { return dim3_tuple(c.cluster); })
      .def_ro("shared_mem", &LaunchConfig::shared_mem)
      .def_ro("cooperative", &LaunchConfig::cooperative)
      .def_ro("programmatic_dependent_launch", &LaunchConfig::programmatic_dependent_launch)
      .def_ro("priority", &LaunchConfig::priority);
}

nb::dict attributes(const RawKernel& k) {
  const KernelAttributes a = k.attributes();
  nb::dict d;
  d["max_threads_per_block"] = a.max_threads_per_block;
  d["shared_size_bytes"] = a.shared_size_bytes;
  d["const_size_bytes"] = a.const_size_bytes;
  d["local_size_bytes"] = a.local_size_bytes;
  d["num_regs"] = a.num_registers;
  d["ptx_version"] = a.ptx_version;
  d["binary_version"] = a.binary_version;
  return d;
}

}  // namespace

void bind_raw(nb::module_& m) {
  nb::class_<RawModule>(m, "RawModule")
      .def(
          "__init__",
          [](RawModule* self, const std::optional<std::string>& code,
             const std::optional<std::string>& path, std::vector<std::string> options,
             std::vector<std::string> name_expressions) {
            new (self)
                RawModule(make_module(code, path, std::move(options), std::move(name_expressions)));
          },
          nb::arg("code").none(), nb::arg("path").none(), nb::arg("options"),
          nb::arg("name_expressions"))
      .def("get_function",
           [](const RawModule& module, const std::string& name, int device) {
             nb::gil_scoped_release released;  // the first request compiles and loads
             return module.get_function(name, Device::get(device));
           })
      .def("get_global",
           [](const RawModule& module, const std::string& name, int device) {
             nb::gil_scoped_release released;
             return module.get_global(name, Device::get(device));
           })
      .def("compile_for", [](const RawModule& module, const std::string& target) {
        const auto program = [&] {
          nb::gil_scoped_release released;
          return module.compile_for(Target::parse(target));
        }();
        return nb::bytes(program->binary.data(), program->binary.size());
      });
  nb::class_<RawKernel>(m, "RawKernel")
      .def_prop_ro("name", &RawKernel::name)
      .def_prop_ro("device_id", &RawKernel::device_id)
      .def_prop_ro("param_sizes", &RawKernel::param_sizes)
      .def_prop_ro("param_types", &RawKernel::param_types)
      .def_prop_ro("attributes", &attributes)
      .def("set_max_dynamic_shared_memory", &RawKernel::set_max_dynamic_shared_memory);
  nb::class_<RawFunction>(m, "RawFunction",
                          "A module's kernel by name, loaded once per device (the base of "
                          "cujit.RawKernel).")
      .def(nb::init<RawModule, std::string, bool>(), nb::arg("module"), nb::arg("name"),
           nb::arg("cooperative"))
      .def_prop_ro("enable_cooperative_groups", &RawFunction::cooperative)
      .def(
          "_kernel",
          [](RawFunction& f, std::optional<int> device) { return *f.on(device.value_or(-1)); },
          nb::arg("device").none() = nb::none())
      .def("__call__", &RawFunction::call, nb::arg("grid"), nb::arg("block"), nb::arg("args"),
           nb::kw_only(), nb::arg("shared_mem") = 0, nb::arg("stream").none() = nb::none(),
           nb::arg("enable_cooperative_groups").none() = nb::none())
      .def(
          "launch",
          [](RawFunction& f, const LaunchConfig& config, nb::handle args, nb::handle stream) {
            f.launch(&config, nb::none(), nb::none(), args, 0, stream);
          },
          nb::arg("config"), nb::arg("args"), nb::arg("stream").none() = nb::none(),
          "Launches with a cujit.LaunchConfig (grid, block, shared_mem, cluster, cooperative, "
          "programmatic_dependent_launch, priority), checked against the device's and the "
          "kernel's limits first (cujit.ArgumentError naming the setting).");
  bind_launch_config(m);
}

}  // namespace cujit::python
