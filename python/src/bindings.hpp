#pragma once
// The pieces of the extension module cujit._cujit: errors, arrays, kernels. Each binds a part
// of cujit's public C++ API and nothing else; the Python package (python/cujit) gives them
// CuPy's interface.

#include <cujit/cujit.hpp>

#include <nanobind/nanobind.h>

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

/// The dtype named `name` ("float32", "int64", ...); throws cujit::TypeError naming `who`.
DType dtype_named(const std::string& name, const std::string& who);

/// A call's positional arguments, from `items`: each a _cujit.Array; an (address, shape, byte
/// strides, dtype name, device) tuple describing another library's array, viewed for this call
/// only (the caller's objects keep the memory alive while it runs); or a (dtype name, value)
/// pair, a scalar of that dtype.
class CallArguments {
 public:
  CallArguments(const nb::list& items, const std::string& who);
  const std::vector<Arg>& args() const noexcept { return args_; }

 private:
  std::vector<Array> views_;
  std::vector<Arg> args_;
};

/// Argument descriptions for specialize(): (dtype, shape, strides or None) for an array,
/// (dtype,) for a scalar.
std::vector<ArgSpec> arg_specs(const nb::list& items, const std::string& who);

}  // namespace cujit::python
