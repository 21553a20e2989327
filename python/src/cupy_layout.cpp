// CuPy's ndarray read through its C layout. Cython lays out an extension type's object as
// PyObject_HEAD, the pointer to its table of cdef methods, then its cdef attributes in the
// order its .pxd declares them; Cython modules that cimport CuPy compile against that layout,
// which is the same from CuPy 12 to 14 (cupy/_core/core.pxd: _ndarray_base;
// cupy/cuda/memory.pxd: MemoryPointer). Reading an array this way costs a few loads where its
// attributes cost a dozen Python calls and as many objects made (shape and strides are tuples
// built on each read). A type is read so only after the layout was checked on an instance
// against its attributes; any difference leaves the type to its attributes.
#include "cupy_layout.hpp"

#include <cstring>

namespace cujit::python {
namespace {

// std::vector<Py_ssize_t> (CuPy's shape_t and strides_t): begin, end and capacity, in
// libstdc++ and libc++ alike.
struct VectorFields {
  Py_ssize_t* begin;
  Py_ssize_t* end;
  Py_ssize_t* capacity;
};

struct NdarrayBaseFields {
  PyObject head;
  void* vtab;
  PyObject* weakref;
  Py_ssize_t size;
  VectorFields shape;
  VectorFields strides;
  int c_contiguous;  // bint
  int f_contiguous;
  int index_32_bits;
  PyObject* dtype;
  PyObject* data;  // MemoryPointer
  PyObject* base;
};

struct MemoryPointerFields {
  PyObject head;
  void* vtab;
  std::intptr_t ptr;
  int device_id;
  PyObject* mem;
};

// The exact type of the data of the arrays read by layout (held for the process).
PyTypeObject* memory_pointer_type = nullptr;

template <class T>
T load(const void* object, std::size_t offset) noexcept {
  T value;
  std::memcpy(&value, static_cast<const char*>(object) + offset, sizeof value);
  return value;
}

// `type` or the type it derives from that is the Cython type `name` with objects of `size`
// bytes and a table of cdef methods; null when there is none.
PyTypeObject* cython_base(PyTypeObject* type, const char* name, std::size_t size) {
  PyObject* mro = type->tp_mro;
  if (mro == nullptr || !PyTuple_Check(mro)) return nullptr;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(mro); ++i) {
    auto* t = reinterpret_cast<PyTypeObject*>(PyTuple_GET_ITEM(mro, i));
    if (std::strcmp(t->tp_name, name) != 0) continue;
    if (t->tp_basicsize != static_cast<Py_ssize_t>(size)) return nullptr;
    const bool cython =
        PyObject_HasAttrString(reinterpret_cast<PyObject*>(t), "__pyx_vtable__") == 1;
    return cython ? t : nullptr;
  }
  return nullptr;
}

constexpr const char* kMemoryPointer = "cupy.cuda.memory.MemoryPointer";

// attribute `name` of `o` as a Py_ssize_t; -1 with a Python error set on failure.
Py_ssize_t ssize_attr(PyObject* o, const char* name) {
  PyObject* value = PyObject_GetAttrString(o, name);
  if (value == nullptr) return -1;
  const Py_ssize_t v = PyLong_AsSsize_t(value);
  Py_DECREF(value);
  return v;
}

bool attr_is(PyObject* o, const char* name, PyObject* expected) {
  PyObject* value = PyObject_GetAttrString(o, name);
  if (value == nullptr) return false;
  const bool same = value == expected;
  Py_DECREF(value);
  return same;
}

// Whether the tuple attribute `name` of `o` holds the values in [begin, end).
bool tuple_attr_equals(PyObject* o, const char* name, const VectorFields& v) {
  PyObject* value = PyObject_GetAttrString(o, name);
  if (value == nullptr) return false;
  bool equal = PyTuple_Check(value) && PyTuple_GET_SIZE(value) == v.end - v.begin;
  for (Py_ssize_t i = 0; equal && i < v.end - v.begin; ++i) {
    equal = PyLong_AsSsize_t(PyTuple_GET_ITEM(value, i)) == v.begin[i];
  }
  Py_DECREF(value);
  return equal;
}

bool memory_pointer_holds(PyObject* data) {
  if (data == nullptr ||
      cython_base(Py_TYPE(data), kMemoryPointer, sizeof(MemoryPointerFields)) == nullptr) {
    return false;
  }
  const auto ptr = load<std::intptr_t>(data, offsetof(MemoryPointerFields, ptr));
  const int device = load<int>(data, offsetof(MemoryPointerFields, device_id));
  // Through the attributes: int(ptr) is the address as CuPy reports it.
  PyObject* reported = PyObject_GetAttrString(data, "ptr");
  if (reported == nullptr) return false;
  const auto address = static_cast<std::intptr_t>(PyLong_AsSsize_t(reported));
  Py_DECREF(reported);
  return address == ptr && ssize_attr(data, "device_id") == device;
}

bool instance_matches(PyObject* x) {
  const auto f = load<NdarrayBaseFields>(x, 0);
  if (f.shape.end - f.shape.begin != f.strides.end - f.strides.begin) return false;
  return attr_is(x, "dtype", f.dtype) && attr_is(x, "data", f.data) &&
         memory_pointer_holds(f.data) && ssize_attr(x, "size") == f.size &&
         tuple_attr_equals(x, "shape", f.shape) && tuple_attr_equals(x, "strides", f.strides);
}

}  // namespace

bool cupy_layout_holds(PyTypeObject* type, PyObject* instance) {
  if (Py_TYPE(instance) != type ||
      cython_base(type, "cupy._core.core._ndarray_base", sizeof(NdarrayBaseFields)) == nullptr ||
      type->tp_weaklistoffset != static_cast<Py_ssize_t>(offsetof(NdarrayBaseFields, weakref))) {
    return false;
  }
  const bool holds = instance_matches(instance);
  if (PyErr_Occurred() != nullptr) {
    PyErr_Clear();
    return false;
  }
  if (holds && memory_pointer_type == nullptr) {
    // CuPy's MemoryPointer itself (the instance's data may be of a type derived from it):
    // arrays whose data is exactly that type are read through the layout.
    PyObject* data = load<PyObject*>(instance, offsetof(NdarrayBaseFields, data));
    memory_pointer_type = cython_base(Py_TYPE(data), kMemoryPointer, sizeof(MemoryPointerFields));
    Py_INCREF(reinterpret_cast<PyObject*>(memory_pointer_type));
  }
  return holds;
}

bool read_cupy_fields(PyObject* array, CupyFields& out) noexcept {
  const auto f = load<NdarrayBaseFields>(array, 0);
  if (f.data == nullptr || Py_TYPE(f.data) != memory_pointer_type || f.dtype == nullptr) {
    return false;
  }
  const auto ndim = static_cast<std::size_t>(f.shape.end - f.shape.begin);
  if (static_cast<std::size_t>(f.strides.end - f.strides.begin) != ndim) return false;
  out.address =
      static_cast<std::uint64_t>(load<std::intptr_t>(f.data, offsetof(MemoryPointerFields, ptr)));
  out.device = load<int>(f.data, offsetof(MemoryPointerFields, device_id));
  out.dtype = f.dtype;
  out.shape = f.shape.begin;
  out.strides = f.strides.begin;
  out.ndim = ndim;
  return true;
}

}  // namespace cujit::python
