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

Dim3 dim3(const std::vector<unsigned>& extents, const char* what) {
  if (extents.empty() || extents.size() > 3) {
    throw ArgumentError(std::string("cujit: RawKernel: ") + what + " has " +
                        std::to_string(extents.size()) + " extents; give 1 to 3");
  }
  return Dim3(extents[0], extents.size() > 1 ? extents[1] : 1, extents.size() > 2 ? extents[2] : 1);
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
  const std::vector<std::size_t> sizes = k.param_sizes();
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

std::vector<unsigned> extents(nb::handle value) {
  if (PyLong_Check(value.ptr())) return {nb::cast<unsigned>(value)};
  std::vector<unsigned> out;
  for (nb::handle v : value) out.push_back(nb::cast<unsigned>(v));
  return out;
}

// A launch from Python: the arguments read in C++, the kernel of their device from
// `kernel_for(device)` (the package's per-device cache), then `config` applied through
// cuLaunchKernelEx, or, without one, a plain launch of `grid` by `block`.
void raw_launch(nb::handle kernel_for, const LaunchConfig* config, nb::handle grid,
                nb::handle block, nb::handle args, std::size_t shared_mem, nb::handle stream,
                const std::string& who) {
  const nb::tuple items = nb::steal<nb::tuple>(PySequence_Tuple(args.ptr()));
  if (!items.is_valid()) throw nb::python_error();
  const PythonCall call(items, items.size(), who, stream);
  const nb::object device = call.device() < 0 ? nb::none() : nb::object(nb::int_(call.device()));
  const nb::object found = kernel_for(device);
  const RawKernel& k = nb::cast<const RawKernel&>(found);
  const std::vector<KernelArg> launch_args = kernel_args(call, items, k, who);
  const std::uintptr_t handle = stream_handle(stream, call.library(), k.device_id());
  const Stream on =
      Stream::wrap(reinterpret_cast<CUstream_st*>(handle), Device::get(k.device_id()));
  if (config != nullptr) {
    nb::gil_scoped_release released;
    call.wait_for_producers(handle);
    k.launch(*config, launch_args, on);
    return;
  }
  const Dim3 g = dim3(extents(grid), "grid"), b = dim3(extents(block), "block");
  nb::gil_scoped_release released;
  call.wait_for_producers(handle);
  k.launch(g, b, launch_args, shared_mem, on);
}

// kernel(grid, block, args, shared_mem=, stream=, enable_cooperative_groups=) (CuPy's call);
// a cooperative launch goes through a LaunchConfig.
void raw_call(nb::handle kernel_for, nb::handle grid, nb::handle block, nb::handle args,
              std::size_t shared_mem, nb::handle stream, const std::string& who, bool cooperative) {
  if (!cooperative)
    return raw_launch(kernel_for, nullptr, grid, block, args, shared_mem, stream, who);
  LaunchConfig config;
  config.grid = dim3(extents(grid), "grid");
  config.block = dim3(extents(block), "block");
  config.shared_mem = shared_mem;
  config.cooperative = true;
  raw_launch(kernel_for, &config, grid, block, args, shared_mem, stream, who);
}

Dim3 dim3_or_one(nb::handle value, const char* what) {
  return value.is_none() ? Dim3() : dim3(extents(value), what);
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
            new (self) LaunchConfig{dim3(extents(grid), "grid"),
                                    dim3(extents(block), "block"),
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
      .def("set_max_dynamic_shared_memory", &RawKernel::set_max_dynamic_shared_memory)
      .def_static("_call", &raw_call, nb::arg("kernel_for"), nb::arg("grid"), nb::arg("block"),
                  nb::arg("args"), nb::arg("shared_mem"), nb::arg("stream").none(), nb::arg("who"),
                  nb::arg("cooperative"))
      .def_static(
          "_launch_config",
          [](nb::handle kernel_for, const LaunchConfig& config, nb::handle args, nb::handle stream,
             const std::string& who) {
            raw_launch(kernel_for, &config, nb::none(), nb::none(), args, 0, stream, who);
          },
          nb::arg("kernel_for"), nb::arg("config"), nb::arg("args"), nb::arg("stream").none(),
          nb::arg("who"));
  bind_launch_config(m);
}

}  // namespace cujit::python
