// cujit._cujit: the extension module of the Python package.
#include "bindings.hpp"
#include "call_path.hpp"

#include <nanobind/stl/string.h>

NB_MODULE(_cujit, m) {
  m.doc() = "cujit's C++ API, as the cujit package uses it (import cujit instead).";
  cujit::python::bind_errors(m);
  cujit::python::bind_arrays(m);
  cujit::python::bind_kernels(m);
  cujit::python::bind_raw(m);
  cujit::python::bind_cache(m);
  m.def("device_count", &cujit::Device::count, "Number of CUDA devices (0 without a driver).");
  m.def("current_device", [] { return cujit::Device::current().id(); });
  m.def("_reading_of", [](nanobind::handle o) -> nanobind::object {
    const char* how = cujit::python::reading_of(o);
    return how == nullptr ? nanobind::none() : nanobind::object(nanobind::str(how));
  });
  m.attr("__version__") = cujit::version().string;
  m.def("dtype_code", [](const std::string& name) {
    return static_cast<int>(cujit::python::dtype_named(name, "dtype_code"));
  });
}
