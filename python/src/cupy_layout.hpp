#pragma once
// CuPy's ndarray read through the C layout its Cython declaration gives it
// (python/src/cupy_layout.cpp): the address, device, dtype, shape and strides of an array with
// no Python call, as CuPy's own kernels read them.

#include <Python.h>

#include <cstddef>
#include <cstdint>

namespace cujit::python {

/// What one CuPy array's fields say. The pointers point into the array object: valid while it
/// lives and is not reshaped, so for the call that read them.
struct CupyFields {
  std::uint64_t address = 0;
  int device = 0;
  PyObject* dtype = nullptr;  ///< borrowed
  const Py_ssize_t* shape = nullptr;
  const Py_ssize_t* strides = nullptr;  ///< in bytes
  std::size_t ndim = 0;
};

/// Whether instances of `type` can be read by read_cupy_fields: `type` derives from CuPy's
/// `_ndarray_base` of the expected size, and the fields of `instance` (an instance of `type`)
/// read through the layout equal what its attributes give (dtype, data, its pointer and
/// device, size, shape, strides). Runs Python (attribute reads); raises nothing (a Python
/// error while checking answers false and is cleared).
bool cupy_layout_holds(PyTypeObject* type, PyObject* instance);

/// Reads `array`, an instance of a type cupy_layout_holds accepted. False (nothing read) when
/// this instance's data is not a plain CuPy MemoryPointer (then read its attributes).
bool read_cupy_fields(PyObject* array, CupyFields& out) noexcept;

}  // namespace cujit::python
