// ElementwiseKernel and ReductionKernel: construction, calls with the GIL released, and
// offline specialize().
#include "bindings.hpp"
#include "call_path.hpp"

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

// Counts a parameter list's entries ("T x, T y": 2).
std::size_t count_params(const std::string& params) {
  std::size_t count = 0;
  bool seen = false;
  for (char c : params) {
    if (c == ',') {
      count += seen ? 1 : 0;
      seen = false;
    } else if (c != ' ' && c != '\t' && c != '\n') {
      seen = true;
    }
  }
  return count + (seen ? 1 : 0);
}

// An ElementwiseKernel as cujit.ElementwiseKernel holds it: CuPy's call conventions around
// the C++ kernel.
struct PyElementwise {
  ElementwiseKernel kernel;
  std::string who;  // "kernel 'name'", for messages
  std::size_t nin = 0, nout = 0;
  bool no_return = false, return_tuple = false;
};

struct PyReduction {
  ReductionKernel kernel;
  std::string who;
  std::size_t nin = 0, nout = 0;
};

std::int64_t int_or(nb::handle value, std::int64_t otherwise) {
  return value.is_none() ? otherwise : nb::cast<std::int64_t>(value);
}

// The outputs of a call: the given ones as themselves, else those cujit allocated as arrays of
// the inputs' library (`pool`: its (OutputAllocator, source) pair, or None).
nb::object results(nb::handle args, std::size_t nin, std::vector<Array>&& made,
                   const nb::object& pool, bool given, bool return_tuple) {
  if (given && !return_tuple && nb::len(args) == nin + 1) return nb::borrow(args[nin]);
  nb::list out;
  if (given) {
    const std::size_t count = nb::len(args);
    for (std::size_t i = nin; i < count; ++i) out.append(args[i]);
  } else {
    for (Array& a : made) {
      nb::object array = nb::cast(std::move(a));
      out.append(pool.is_none() ? array : pool[1].attr("wrap")(array));
    }
  }
  if (return_tuple || out.size() != 1) return nb::tuple(out);
  return out[0];
}

// Runs `launch` with the GIL released, after the producers' streams, with the outputs from
// `pool` (a library's (OutputAllocator, source) pair, or None).
template <class F>
std::vector<Array> run(const PythonCall& call, std::uintptr_t stream, const nb::object& pool,
                       F&& launch) {
  const PythonAllocator* outputs =
      pool.is_none() ? nullptr : &nb::cast<const PythonAllocator&>(pool[0]);
  nb::gil_scoped_release released;
  call.wait_for_producers(stream);
  std::optional<ScopedAllocator> guard;  // outputs from the caller's library
  if (outputs != nullptr) guard.emplace(outputs->allocator);
  return launch();
}

nb::object call_elementwise(const PyElementwise& k, nb::args args, nb::handle size,
                            nb::handle block_size, nb::handle stream) {
  const std::size_t count = args.size();
  const PythonCall call(args, count, k.who, stream);
  const std::uintptr_t handle = call.stream();
  const bool given = count == k.nin + k.nout;
  const nb::object pool = given ? nb::none() : outputs_of(call.library());
  const LaunchOptions o = launch_options(int_or(size, -1), static_cast<int>(int_or(block_size, 0)),
                                         handle, call.device());
  std::vector<Array> made = run(call, handle, pool, [&] {
    if (!given) return k.kernel.call(call.args(), o);
    const std::vector<Arg>& a = call.args();
    k.kernel.call_into(a.data(), a.size(), o);  // the caller holds the outputs: none copied
    return std::vector<Array>();
  });
  if (k.no_return) return nb::none();
  return results(args, k.nin, std::move(made), pool, given, k.return_tuple);
}

std::optional<std::vector<int>> axes_of(nb::handle axis) {
  if (axis.is_none()) return std::nullopt;
  if (PyLong_Check(axis.ptr())) return std::vector<int>{nb::cast<int>(axis)};
  std::vector<int> axes;
  for (nb::handle a : axis) axes.push_back(nb::cast<int>(a));
  return axes;
}

nb::object call_reduction(const PyReduction& k, nb::args given_args, nb::handle out,
                          nb::handle axis, bool keepdims, nb::handle stream,
                          nb::handle block_size) {
  nb::object args = given_args;
  if (!out.is_none()) args = nb::borrow<nb::object>(given_args) + nb::make_tuple(out);
  const std::size_t count = nb::len(args);
  const PythonCall call(args, count, k.who, stream);
  const std::uintptr_t handle = call.stream();
  const nb::object pool = outputs_of(call.library());  // outputs and scratch
  const ReduceOptions reduce = reduce_options(axes_of(axis), keepdims);
  const LaunchOptions o =
      launch_options(-1, static_cast<int>(int_or(block_size, 0)), handle, call.device());
  std::vector<Array> made =
      run(call, handle, pool, [&] { return k.kernel.call(call.args(), reduce, o); });
  return results(args, k.nin, std::move(made), pool, count == k.nin + k.nout, false);
}

void bind_elementwise(nb::module_& m) {
  nb::class_<PyElementwise>(m, "ElementwiseKernel")
      .def("__init__",
           [](PyElementwise* self, std::string in, std::string out, std::string operation,
              std::string name, bool reduce_dims, std::string preamble, std::string loop_prep,
              std::string after_loop, bool no_return, bool return_tuple,
              std::vector<std::string> options) {
             const std::size_t nin = count_params(in), nout = count_params(out);
             new (self) PyElementwise{
                 make_elementwise(std::move(in), std::move(out), std::move(operation), name,
                                  reduce_dims, std::move(preamble), std::move(loop_prep),
                                  std::move(after_loop), no_return, std::move(options)),
                 "kernel '" + name + "'",
                 nin,
                 nout,
                 no_return,
                 return_tuple};
           })
      .def_prop_ro("name", [](const PyElementwise& k) { return k.kernel.name(); })
      .def_ro("nin", &PyElementwise::nin)
      .def_ro("nout", &PyElementwise::nout)
      .def_prop_ro("nargs", [](const PyElementwise& k) { return k.nin + k.nout; })
      .def_ro("no_return", &PyElementwise::no_return)
      .def_ro("return_tuple", &PyElementwise::return_tuple)
      .def("__call__", &call_elementwise, nb::arg("args"), nb::arg("size").none() = nb::none(),
           nb::arg("block_size").none() = nb::none(), nb::arg("stream").none() = nb::none())
      .def("_specialize", [](const PyElementwise& k, const nb::list& items,
                             const std::string& target, std::int64_t size, int block) {
        const std::vector<ArgSpec> specs = arg_specs(items, k.kernel.name());
        SpecializeOptions o;
        o.size = size;
        o.block_size = block;
        const Specialization s = [&] {
          nb::gil_scoped_release released;
          return k.kernel.specialize(specs, Target::parse(target), o);
        }();
        return describe(s);
      });
}

void bind_reduction(nb::module_& m) {
  nb::class_<PyReduction>(m, "ReductionKernel")
      .def("__init__",
           [](PyReduction* self, std::string in, std::string out, std::string map_expr,
              std::string reduce_expr, std::string post_map_expr, std::string identity,
              std::string name, std::string reduce_type, bool reduce_dims, std::string preamble,
              std::vector<std::string> options) {
             const std::size_t nin = count_params(in), nout = count_params(out);
             new (self)
                 PyReduction{make_reduction(std::move(in), std::move(out), std::move(map_expr),
                                            std::move(reduce_expr), std::move(post_map_expr),
                                            std::move(identity), name, std::move(reduce_type),
                                            reduce_dims, std::move(preamble), std::move(options)),
                             "reduction kernel '" + name + "'", nin, nout};
           })
      .def_prop_ro("name", [](const PyReduction& k) { return k.kernel.name(); })
      .def_ro("nin", &PyReduction::nin)
      .def_ro("nout", &PyReduction::nout)
      .def_prop_ro("nargs", [](const PyReduction& k) { return k.nin + k.nout; })
      .def("__call__", &call_reduction, nb::arg("args"), nb::arg("out").none() = nb::none(),
           nb::arg("axis").none() = nb::none(), nb::arg("keepdims") = false,
           nb::arg("stream").none() = nb::none(), nb::arg("block_size").none() = nb::none())
      .def(
          "_specialize",
          [](const PyReduction& k, const nb::list& items, const std::string& target,
             const std::optional<std::vector<int>>& axes, bool keepdims, int block, int sm_count) {
            const std::vector<ArgSpec> specs = arg_specs(items, k.kernel.name());
            SpecializeOptions o;
            o.block_size = block;
            o.device.sm_count = sm_count;
            const ReduceOptions reduce = reduce_options(axes, keepdims);
            const Specialization s = [&] {
              nb::gil_scoped_release released;
              return k.kernel.specialize(specs, reduce, Target::parse(target), o);
            }();
            return describe(s);
          },
          nb::arg("items"), nb::arg("target"), nb::arg("axes").none(), nb::arg("keepdims"),
          nb::arg("block"), nb::arg("sm_count"));
}

}  // namespace

// Without nanobind's generic conversion.
Shape int_sequence(nb::handle sequence) {
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

DType dtype_of_code(nb::handle code, const std::string& who) {
  if (PyLong_Check(code.ptr())) {
    const long value = PyLong_AsLong(code.ptr());
    if (value >= 0 && value < kDTypeCount) return static_cast<DType>(value);
  }
  return dtype_named(nb::cast<std::string>(code), "kernel '" + who + "'");
}

Array call_view(const nb::tuple& t, const std::string& who) {
  const DType dtype = dtype_of_code(t[3], who);
  Shape strides = int_sequence(t[2]);
  if (t.size() > 5) {  // strides in elements (PyTorch's)
    for (std::int64_t& s : strides) s *= static_cast<std::int64_t>(dtype_size(dtype));
  }
  return Array::from_pointer(nb::cast<std::uint64_t>(t[0]), int_sequence(t[1]), std::move(strides),
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
