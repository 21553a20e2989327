// RawModule and RawKernel: a module compiled per device through the kernel cache, its kernels
// launched with arguments checked against their parameters.
#include "bindings.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
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

// The arguments of a launch: arrays (cujit Arrays or call views) and typed scalars.
struct LaunchArgs {
  std::vector<Array> views;
  std::vector<KernelArg> args;

  LaunchArgs(const nb::list& items, const std::string& who) {
    views.reserve(items.size());
    args.reserve(items.size());
    for (nb::handle item : items) {
      if (nb::isinstance<Array>(item)) {
        args.emplace_back(nb::cast<const Array&>(item));
        continue;
      }
      const nb::tuple t = nb::borrow<nb::tuple>(item);
      if (t.size() >= 5) {
        views.push_back(call_view(t, who));
        args.emplace_back(views.back());
        continue;
      }
      const DType dtype = dtype_named(nb::cast<std::string>(t[0]), "kernel '" + who + "'");
      args.push_back(with_value(dtype, t[1], [](auto typed) { return KernelArg(typed); }));
    }
  }
};

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

void launch(const RawKernel& k, const std::vector<unsigned>& grid,
            const std::vector<unsigned>& block, const nb::list& items, std::size_t shared_mem,
            std::uintptr_t stream) {
  const LaunchArgs launch_args(items, k.name());
  const Stream on =
      Stream::wrap(reinterpret_cast<CUstream_st*>(stream), Device::get(k.device_id()));
  nb::gil_scoped_release released;
  k.launch(dim3(grid, "grid"), dim3(block, "block"), launch_args.args, shared_mem, on);
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
      .def("_launch", &launch);
}

}  // namespace cujit::python
