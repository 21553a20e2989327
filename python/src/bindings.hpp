#pragma once
// The pieces of the extension module cujit._cujit: errors, arrays, kernels. Each binds a part
// of cujit's public C++ API and nothing else; the Python package (python/cujit) gives them
// CuPy's interface.

#include <cujit/cujit.hpp>

#include <nanobind/nanobind.h>
// The casters of every STL type the extension converts, in every file: a file without one
// would instantiate nb::cast<std::string> differently, and the linker keeps one of the two
// (an std::bad_cast at run time).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstdint>
#include <string>
#include <vector>

namespace cujit::python {

namespace nb = nanobind;

/// cujit::Error and its subclasses become the classes of cujit._errors (which also derive
/// from the Python exceptions CuPy raises in their place).
void bind_errors(nb::module_& m);
/// cujit.Array (the _cujit.Array class): views of any library's device memory, and the arrays
/// cujit allocates, with __cuda_array_interface__ and __dlpack__.
void bind_arrays(nb::module_& m);
/// ElementwiseKernel and ReductionKernel, their calls and offline specialize().
void bind_kernels(nb::module_& m);
/// RawModule and RawKernel: CUDA source compiled per device, kernels launched on a grid.
void bind_raw(nb::module_& m);
/// The kernel cache's configuration and counters.
void bind_cache(nb::module_& m);

/// A Python object's allocate(bytes, device, stream) -> address and deallocate(address, bytes,
/// device, stream) as a cujit::Allocator; the callables take the GIL. Built once per object
/// (the Python package keeps one per array library) and set around a call with a
/// ScopedAllocator, so that the call's outputs come from the caller's library.
struct PythonAllocator {
  Allocator allocator;
};

/// The dtype of a call item's code: an int (cujit::DType's value) or a dtype name.
DType dtype_of_code(nb::handle code, const std::string& who);

/// A view of another library's array described by an (address, shape, byte strides, dtype
/// code or name, device) tuple, with no owner: for the duration of one call. A sixth field
/// says the strides are in elements (PyTorch's).
Array call_view(const nb::tuple& t, const std::string& who);

/// Calls `f` with the Python number `value` converted to the C++ type of `t` (nanobind raises
/// TypeError for a value of the wrong kind).
template <class F>
auto with_value(DType t, nb::handle value, F&& f) {
  switch (t) {
    case DType::Bool:
      return f(nb::cast<bool>(value));
    case DType::Int8:
      return f(static_cast<std::int8_t>(nb::cast<std::int64_t>(value)));
    case DType::Int16:
      return f(static_cast<std::int16_t>(nb::cast<std::int64_t>(value)));
    case DType::Int32:
      return f(static_cast<std::int32_t>(nb::cast<std::int64_t>(value)));
    case DType::Int64:
      return f(nb::cast<std::int64_t>(value));
    case DType::UInt8:
      return f(static_cast<std::uint8_t>(nb::cast<std::uint64_t>(value)));
    case DType::UInt16:
      return f(static_cast<std::uint16_t>(nb::cast<std::uint64_t>(value)));
    case DType::UInt32:
      return f(static_cast<std::uint32_t>(nb::cast<std::uint64_t>(value)));
    case DType::UInt64:
      return f(nb::cast<std::uint64_t>(value));
    case DType::Float16:
      return f(float16(nb::cast<float>(value)));
    case DType::BFloat16:
      return f(bfloat16(nb::cast<float>(value)));
    case DType::Float32:
      return f(nb::cast<float>(value));
    case DType::Float64:
      return f(nb::cast<double>(value));
    default: {
      const nb::object c = nb::borrow(value);
      const double re = nb::cast<double>(c.attr("real")), im = nb::cast<double>(c.attr("imag"));
      if (t == DType::Complex64) {
        return f(std::complex<float>(static_cast<float>(re), static_cast<float>(im)));
      }
      return f(std::complex<double>(re, im));
    }
  }
}

/// The dtype named `name` ("float32", "int64", ...); throws cujit::TypeError naming `who`.
DType dtype_named(const std::string& name, const std::string& who);

/// Argument descriptions for specialize(): (dtype, shape, strides or None) for an array,
/// (dtype,) for a scalar.
std::vector<ArgSpec> arg_specs(const nb::list& items, const std::string& who);

}  // namespace cujit::python
