// _cujit.Array: cujit::Array in Python. Views of another library's memory keep that library's
// object alive; every array exports __cuda_array_interface__ (v3) and DLPack.
#include "bindings.hpp"

#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace cujit::python {
namespace {

// Keeps a Python object alive for as long as a C++ view of its memory exists; the last view
// may go on a thread without the GIL (a stream's cache, another thread's kernel call).
std::shared_ptr<const void> keep_alive(nb::object owner) {
  if (!owner.is_valid() || owner.is_none()) return nullptr;
  PyObject* held = owner.release().ptr();
  return std::shared_ptr<const void>(held, [](const void* p) {
    if (!nb::is_alive()) return;  // the interpreter is finalizing or gone: leave it
    nb::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(const_cast<void*>(p)));
  });
}

nb::tuple as_tuple(const Shape& values) {
  nb::list items;
  for (std::int64_t v : values) items.append(v);
  return nb::tuple(items);
}

// NumPy's type string of `dtype` for __cuda_array_interface__ (bfloat16 has none).
std::string typestr(DType dtype) {
  const std::size_t size = dtype_size(dtype);
  const std::string bytes = std::to_string(size);
  switch (dtype) {
    case DType::Bool:
      return "|b1";
    case DType::Int8:
    case DType::UInt8:
      return std::string("|") + (dtype == DType::Int8 ? "i" : "u") + "1";
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return "<i" + bytes;
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
      return "<u" + bytes;
    case DType::Float16:
    case DType::Float32:
    case DType::Float64:
      return "<f" + bytes;
    case DType::Complex64:
    case DType::Complex128:
      return "<c" + bytes;
    default:
      throw TypeError("cujit: __cuda_array_interface__ has no type for " +
                      std::string(dtype_name(dtype)) + " (use DLPack: torch.from_dlpack)");
  }
}

nb::dict cuda_array_interface(const Array& a) {
  nb::dict d;
  d["shape"] = as_tuple(a.shape());
  d["typestr"] = typestr(a.dtype());
  d["data"] = nb::make_tuple(a.data(), false);
  d["version"] = 3;
  // C-contiguous arrays say so with None, as NumPy and CuPy do.
  if (a.is_c_contiguous()) {
    d["strides"] = nb::none();
  } else {
    d["strides"] = as_tuple(a.strides());
  }
  d["stream"] = nb::none();  // ordered on the stream of the call that made it (see the docs)
  return d;
}

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  using code = nb::dlpack::dtype_code;
  const auto bits = static_cast<std::uint8_t>(8 * dtype_size(dtype));
  switch (dtype) {
    case DType::Bool:
      return {static_cast<std::uint8_t>(code::Bool), 8, 1};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64:
      return {static_cast<std::uint8_t>(code::Int), bits, 1};
    case DType::UInt8:
    case DType::UInt16:
    case DType::UInt32:
    case DType::UInt64:
      return {static_cast<std::uint8_t>(code::UInt), bits, 1};
    case DType::BFloat16:
      return {static_cast<std::uint8_t>(code::Bfloat), 16, 1};
    case DType::Complex64:
    case DType::Complex128:
      return {static_cast<std::uint8_t>(code::Complex), bits, 1};
    default:
      return {static_cast<std::uint8_t>(code::Float), bits, 1};
  }
}

// A DLPack capsule of the array, owned by `self` (strides in elements, as DLPack has them).
nb::object dlpack(nb::handle self, nb::kwargs kwargs) {
  const Array& a = nb::cast<const Array&>(self);
  const auto item = static_cast<std::int64_t>(a.itemsize());
  std::vector<std::size_t> shape;
  std::vector<std::int64_t> strides;
  for (std::size_t d = 0; d < a.shape().size(); ++d) {
    shape.push_back(static_cast<std::size_t>(a.shape()[d]));
    if (a.strides()[d] % item != 0) {
      throw ArgumentError("cujit: __dlpack__: byte stride " + std::to_string(a.strides()[d]) +
                          " is not a multiple of the item size " + std::to_string(item));
    }
    strides.push_back(a.strides()[d] / item);
  }
  nb::ndarray<> view(reinterpret_cast<void*>(a.data()), shape.size(), shape.data(), self,
                     strides.data(), dlpack_dtype(a.dtype()), nb::device::cuda::value,
                     a.device_id());
  // nanobind exports an ndarray of no framework as a DLPack capsule itself; the stream and
  // version keywords change nothing here (the array is ordered on the stream that made it).
  nb::object exported = nb::cast(view);
  if (PyCapsule_CheckExact(exported.ptr())) return exported;
  return exported.attr("__dlpack__")(**kwargs);
}

Array view(std::uint64_t address, const Shape& shape, const std::optional<Shape>& strides,
           nb::handle dtype, int device, nb::object owner) {
  return Array::from_pointer(address, shape, strides.value_or(Shape{}),
                             dtype_of_code(dtype, "Array"), Device::get(device),
                             keep_alive(std::move(owner)));
}

// A DLPack capsule's tensor, owned from now on by the views of the returned array (the capsule
// is renamed "used_dltensor" first, as the protocol asks, so it never frees the tensor too).
Array from_dlpack(const nb::capsule& capsule) {
  void* tensor = PyCapsule_GetPointer(capsule.ptr(), "dltensor");
  if (tensor == nullptr) throw nb::python_error();
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  return Array::from_dlpack(static_cast<DLManagedTensor*>(tensor));
}

Array from_host(const nb::bytes& data, const Shape& shape, const std::string& dtype, int device) {
  const DType t = dtype_named(dtype, "Array");
  std::int64_t count = 1;
  for (std::int64_t e : shape) count *= e;
  if (static_cast<std::size_t>(count) * dtype_size(t) != data.size()) {
    throw ShapeError("cujit: asarray: " + std::to_string(data.size()) + " bytes for " +
                     std::to_string(count) + " elements of " + dtype);
  }
  return Array::from_host(data.c_str(), shape, t, Device::get(device));
}

nb::bytes to_host(const Array& a) {
  std::string bytes(a.nbytes(), '\0');
  {
    nb::gil_scoped_release released;
    a.to_host(bytes.data());
  }
  return nb::bytes(bytes.data(), bytes.size());
}

// A shared reference to a Python object, released with the GIL from any thread (and not at
// all once the interpreter is gone).
std::shared_ptr<nb::object> share(nb::object object) {
  return std::shared_ptr<nb::object>(new nb::object(std::move(object)), [](nb::object* p) {
    if (!nb::is_alive()) {
      (void)p->release();  // leaked: nothing can take the GIL any more
      delete p;
      return;
    }
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

PythonAllocator python_allocator(nb::object source) {
  const std::shared_ptr<nb::object> held = share(std::move(source));
  Allocator a;
  a.allocate = [held](std::size_t bytes, int device, CUstream_st* stream) -> void* {
    nb::gil_scoped_acquire gil;
    const nb::object address =
        held->attr("allocate")(bytes, device, reinterpret_cast<std::uintptr_t>(stream));
    return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(address));
  };
  a.deallocate = [held](void* pointer, std::size_t bytes, int device, CUstream_st* stream) {
    if (!nb::is_alive()) return;
    nb::gil_scoped_acquire gil;
    try {
      held->attr("deallocate")(reinterpret_cast<std::uintptr_t>(pointer), bytes, device,
                               reinterpret_cast<std::uintptr_t>(stream));
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("cujit: returning an output's memory to its library");
    }
  };
  return PythonAllocator{std::move(a)};
}

}  // namespace

void bind_arrays(nb::module_& m) {
  nb::class_<PythonAllocator>(m, "OutputAllocator",
                              "Outputs from a library's pool (its allocate and deallocate).")
      .def("__init__", [](PythonAllocator* self, nb::object source) {
        new (self) PythonAllocator(python_allocator(std::move(source)));
      });
  nb::class_<Array>(m, "Array", "A device array cujit made or views (import cujit.Array).")
      .def_static("_view", &view, nb::arg("address"), nb::arg("shape"), nb::arg("strides"),
                  nb::arg("dtype"), nb::arg("device"), nb::arg("owner").none())
      .def_static("_from_host", &from_host)
      .def_static("_from_dlpack", &from_dlpack)
      .def_static("_empty",
                  [](const Shape& shape, const std::string& dtype, int device) {
                    return Array::empty(shape, dtype_named(dtype, "empty"), Device::get(device));
                  })
      .def("_to_host", &to_host)
      .def_prop_ro("shape", [](const Array& a) { return as_tuple(a.shape()); })
      .def_prop_ro("strides", [](const Array& a) { return as_tuple(a.strides()); })
      .def_prop_ro("dtype", [](const Array& a) { return std::string(dtype_name(a.dtype())); })
      .def_prop_ro("device_id", &Array::device_id)
      .def_prop_ro("data_ptr", &Array::data)
      .def_prop_ro("size", &Array::size)
      .def_prop_ro("nbytes", &Array::nbytes)
      .def_prop_ro("ndim", [](const Array& a) { return a.shape().size(); })
      .def_prop_ro("__cuda_array_interface__", &cuda_array_interface)
      .def("__dlpack__", &dlpack)
      .def("__dlpack_device__",
           [](const Array& a) { return nb::make_tuple(nb::device::cuda::value, a.device_id()); });
}

DType dtype_named(const std::string& name, const std::string& who) {
  DType t;
  if (!parse_dtype(name, t)) {
    throw TypeError("cujit: " + who + ": dtype '" + name + "' is not one cujit supports");
  }
  return t;
}

}  // namespace cujit::python
