// ElementwiseKernel and ReductionKernel: construction, calls with the GIL released, and
// offline specialize().
#include "bindings.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cujit::python {
namespace {

Scalar make_scalar(DType t, nb::handle value) {
  return with_value(t, value, [](auto typed) { return Scalar(typed); });
}

// Where a call runs: the stream's handle and device (-1 unknown), and the launch options.
LaunchOptions launch_options(std::int64_t size, int block_size, std::uintptr_t stream,
                             int stream_device) {
  LaunchOptions o;
  o.size = size;
  o.block_size = block_size;
  o.stream = reinterpret_cast<CUstream_st*>(stream);
  o.stream_device = stream_device;
  return o;
}

nb::dict describe(const Specialization& s) {
  nb::dict d;
  d["kernel"] = s.kernel;
  d["target"] = s.target.name();
  d["origin"] = std::string(to_string(s.origin));
  d["binary_size"] = s.binary_size;
  d["request_key"] = s.request_key;
  return d;
}

ReduceOptions reduce_options(const std::optional<std::vector<int>>& axes, bool keepdims) {
  ReduceOptions r;
  if (axes) r.axes = Axes(*axes);
  r.keepdims = keepdims;
  return r;
}

ElementwiseKernel make_elementwise(std::string in, std::string out, std::string operation,
                                   std::string name, bool reduce_dims, std::string preamble,
                                   std::string loop_prep, std::string after_loop, bool no_return,
                                   std::vector<std::string> options) {
  ElementwiseOptions o;
  o.reduce_dims = reduce_dims;
  o.preamble = std::move(preamble);
  o.loop_prep = std::move(loop_prep);
  o.after_loop = std::move(after_loop);
  o.no_return = no_return;
  o.compile_options = std::move(options);
  return ElementwiseKernel(std::move(in), std::move(out), std::move(operation), std::move(name),
                           std::move(o));
}

ReductionKernel make_reduction(std::string in, std::string out, std::string map_expr,
                               std::string reduce_expr, std::string post_map_expr,
                               std::string identity, std::string name, std::string reduce_type,
                               bool reduce_dims, std::string preamble,
                               std::vector<std::string> options) {
  ReductionOptions o;
  o.reduce_type = std::move(reduce_type);
  o.reduce_dims = reduce_dims;
  o.preamble = std::move(preamble);
  o.compile_options = std::move(options);
  return ReductionKernel(std::move(in), std::move(out), std::move(map_expr), std::move(reduce_expr),
                         std::move(post_map_expr), std::move(identity), std::move(name),
                         std::move(o));
}

void bind_elementwise(nb::module_& m) {
  nb::class_<ElementwiseKernel>(m, "ElementwiseKernel")
      .def("__init__",
           [](ElementwiseKernel* self, std::string in, std::string out, std::string operation,
              std::string name, bool reduce_dims, std::string preamble, std::string loop_prep,
              std::string after_loop, bool no_return, std::vector<std::string> options) {
             new (self) ElementwiseKernel(make_elementwise(
                 std::move(in), std::move(out), std::move(operation), std::move(name), reduce_dims,
                 std::move(preamble), std::move(loop_prep), std::move(after_loop), no_return,
                 std::move(options)));
           })
      .def_prop_ro("name", &ElementwiseKernel::name)
      .def(
          "_call",
          [](const ElementwiseKernel& k, const nb::list& items, std::int64_t size, int block,
             std::uintptr_t stream, int stream_device, const PythonAllocator* outputs,
             bool want) -> std::optional<std::vector<Array>> {
            const CallArguments args(items, k.name());
            nb::gil_scoped_release released;
            std::optional<ScopedAllocator> guard;  // outputs from the caller's library
            if (outputs != nullptr) guard.emplace(outputs->allocator);
            std::vector<Array> result =
                k.call(args.args(), launch_options(size, block, stream, stream_device));
            if (!want) return std::nullopt;  // given outputs: no Python objects for them
            return result;
          },
          nb::arg("items"), nb::arg("size"), nb::arg("block"), nb::arg("stream"),
          nb::arg("stream_device"), nb::arg("outputs").none(), nb::arg("want"))
      .def("_specialize", [](const ElementwiseKernel& k, const nb::list& items,
                             const std::string& target, std::int64_t size, int block) {
        const std::vector<ArgSpec> specs = arg_specs(items, k.name());
        SpecializeOptions o;
        o.size = size;
        o.block_size = block;
        const Specialization s = [&] {
          nb::gil_scoped_release released;
          return k.specialize(specs, Target::parse(target), o);
        }();
        return describe(s);
      });
}

void bind_reduction(nb::module_& m) {
  nb::class_<ReductionKernel>(m, "ReductionKernel")
      .def("__init__",
           [](ReductionKernel* self, std::string in, std::string out, std::string map_expr,
              std::string reduce_expr, std::string post_map_expr, std::string identity,
              std::string name, std::string reduce_type, bool reduce_dims, std::string preamble,
              std::vector<std::string> options) {
             new (self) ReductionKernel(make_reduction(
                 std::move(in), std::move(out), std::move(map_expr), std::move(reduce_expr),
                 std::move(post_map_expr), std::move(identity), std::move(name),
                 std::move(reduce_type), reduce_dims, std::move(preamble), std::move(options)));
           })
      .def_prop_ro("name", &ReductionKernel::name)
      .def(
          "_call",
          [](const ReductionKernel& k, const nb::list& items,
             const std::optional<std::vector<int>>& axes, bool keepdims, int block,
             std::uintptr_t stream, int stream_device, const PythonAllocator* outputs) {
            const CallArguments args(items, k.name());
            const ReduceOptions reduce = reduce_options(axes, keepdims);
            nb::gil_scoped_release released;
            std::optional<ScopedAllocator> guard;  // outputs from the caller's library
            if (outputs != nullptr) guard.emplace(outputs->allocator);
            return k.call(args.args(), reduce, launch_options(-1, block, stream, stream_device));
          },
          nb::arg("items"), nb::arg("axes").none(), nb::arg("keepdims"), nb::arg("block"),
          nb::arg("stream"), nb::arg("stream_device"), nb::arg("outputs").none())
      .def(
          "_specialize",
          [](const ReductionKernel& k, const nb::list& items, const std::string& target,
             const std::optional<std::vector<int>>& axes, bool keepdims, int block, int sm_count) {
            const std::vector<ArgSpec> specs = arg_specs(items, k.name());
            SpecializeOptions o;
            o.block_size = block;
            o.device.sm_count = sm_count;
            const ReduceOptions reduce = reduce_options(axes, keepdims);
            const Specialization s = [&] {
              nb::gil_scoped_release released;
              return k.specialize(specs, reduce, Target::parse(target), o);
            }();
            return describe(s);
          },
          nb::arg("items"), nb::arg("target"), nb::arg("axes").none(), nb::arg("keepdims"),
          nb::arg("block"), nb::arg("sm_count"));
}

}  // namespace

CallArguments::CallArguments(const nb::list& items, const std::string& who) {
  const std::size_t count = items.size();
  views_.reserve(count);  // never reallocates: each Arg points at its view
  args_.reserve(count);
  for (nb::handle item : items) {
    if (nb::isinstance<Array>(item)) {
      args_.emplace_back(nb::cast<const Array&>(item));
      continue;
    }
    const nb::tuple t = nb::borrow<nb::tuple>(item);
    if (t.size() >= 5) {  // (address, shape, strides, dtype, device[, in elements]): a view
      views_.push_back(call_view(t, who));
      args_.emplace_back(views_.back());
      continue;
    }
    const DType dtype = dtype_named(nb::cast<std::string>(t[0]), "kernel '" + who + "'");
    args_.emplace_back(make_scalar(dtype, t[1]));
  }
}

namespace {

// A tuple (or list) of Python ints as a Shape, without nanobind's generic conversion.
Shape to_shape(nb::handle sequence) {
  PyObject* fast = PySequence_Fast(sequence.ptr(), "cujit: a shape must be a sequence");
  if (fast == nullptr) throw nb::python_error();
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  Shape shape(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    shape[static_cast<std::size_t>(i)] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
  }
  Py_DECREF(fast);
  if (PyErr_Occurred()) throw nb::python_error();
  return shape;
}

}  // namespace

DType dtype_of_code(nb::handle code, const std::string& who) {
  if (PyLong_Check(code.ptr())) {
    const long value = PyLong_AsLong(code.ptr());
    if (value >= 0 && value < kDTypeCount) return static_cast<DType>(value);
  }
  return dtype_named(nb::cast<std::string>(code), "kernel '" + who + "'");
}

Array call_view(const nb::tuple& t, const std::string& who) {
  const DType dtype = dtype_of_code(t[3], who);
  Shape strides = to_shape(t[2]);
  if (t.size() > 5) {  // strides in elements (PyTorch's)
    for (std::int64_t& s : strides) s *= static_cast<std::int64_t>(dtype_size(dtype));
  }
  return Array::from_pointer(nb::cast<std::uint64_t>(t[0]), to_shape(t[1]), std::move(strides),
                             dtype, Device::get(nb::cast<int>(t[4])));
}

std::vector<ArgSpec> arg_specs(const nb::list& items, const std::string& who) {
  std::vector<ArgSpec> specs;
  for (nb::handle item : items) {
    const nb::tuple t = nb::cast<nb::tuple>(item);
    const DType dtype = dtype_named(nb::cast<std::string>(t[0]), "kernel '" + who + "'");
    if (t.size() == 1) {
      specs.push_back(ArgSpec::scalar(dtype));
      continue;
    }
    const Shape shape = nb::cast<Shape>(t[1]);
    if (t[2].is_none()) {
      specs.push_back(ArgSpec::array(dtype, shape));
    } else {
      specs.push_back(ArgSpec::strided(dtype, shape, nb::cast<Shape>(t[2])));
    }
  }
  return specs;
}

void bind_kernels(nb::module_& m) {
  bind_elementwise(m);
  bind_reduction(m);
}

}  // namespace cujit::python
