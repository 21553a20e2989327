// DLPack import and export: share device memory with PyTorch, CuPy, JAX without copies.
#include <cujit/array.hpp>

#include <cujit/error.hpp>

#include <dlpack/dlpack.h>

#include <memory>

namespace cujit {
namespace {

bool to_dl(DType t, DLDataType& out) {
  auto set = [&](std::uint8_t code, std::uint8_t bits) {
    out.code = code;
    out.bits = bits;
    out.lanes = 1;
    return true;
  };
  switch (t) {
    case DType::Bool:
      return set(6 /* kDLBool, DLPack >= 0.8 */, 8);
    case DType::Int8:
      return set(kDLInt, 8);
    case DType::Int16:
      return set(kDLInt, 16);
    case DType::Int32:
      return set(kDLInt, 32);
    case DType::Int64:
      return set(kDLInt, 64);
    case DType::UInt8:
      return set(kDLUInt, 8);
    case DType::UInt16:
      return set(kDLUInt, 16);
    case DType::UInt32:
      return set(kDLUInt, 32);
    case DType::UInt64:
      return set(kDLUInt, 64);
    case DType::Float16:
      return set(kDLFloat, 16);
    case DType::BFloat16:
      return set(kDLBfloat, 16);
    case DType::Float32:
      return set(kDLFloat, 32);
    case DType::Float64:
      return set(kDLFloat, 64);
    case DType::Complex64:
      return set(kDLComplex, 64);
    case DType::Complex128:
      return set(kDLComplex, 128);
  }
  return false;
}

bool from_dl(const DLDataType& t, DType& out) {
  if (t.lanes != 1) return false;
  for (int i = 0; i < kDTypeCount; ++i) {
    DLDataType candidate{};
    to_dl(static_cast<DType>(i), candidate);
    if (candidate.code == t.code && candidate.bits == t.bits) {
      out = static_cast<DType>(i);
      return true;
    }
  }
  return false;
}

// What an exported tensor owns: the array (keeping its memory alive) and the shape arrays.
struct Export {
  Array array;
  std::vector<std::int64_t> shape;
  std::vector<std::int64_t> strides;
  DLManagedTensor tensor{};
};

// Runs the producer's deleter when the last cujit view of an imported tensor goes.
struct Import {
  DLManagedTensor* tensor = nullptr;
  Import() = default;
  Import(const Import&) = delete;
  Import& operator=(const Import&) = delete;
  ~Import() {
    if (tensor != nullptr && tensor->deleter != nullptr) tensor->deleter(tensor);
  }
};

}  // namespace

Array Array::from_dlpack(DLManagedTensor* tensor) {
  if (tensor == nullptr) throw ArgumentError("cujit: from_dlpack: null tensor");
  auto owner = std::make_shared<Import>();
  owner->tensor = tensor;
  const DLTensor& t = tensor->dl_tensor;
  if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCUDAManaged) {
    throw ArgumentError("cujit: from_dlpack: only CUDA tensors can be wrapped (device type " +
                        std::to_string(t.device.device_type) + ")");
  }
  DType dtype;
  if (!from_dl(t.dtype, dtype)) {
    throw TypeError("cujit: from_dlpack: unsupported DLPack dtype (code " +
                    std::to_string(t.dtype.code) + ", " + std::to_string(t.dtype.bits) + " bits, " +
                    std::to_string(t.dtype.lanes) + " lanes)");
  }
  const std::size_t item = dtype_size(dtype);
  Shape shape(t.shape, t.shape + t.ndim);
  Shape strides;
  if (t.strides != nullptr) {
    for (int i = 0; i < t.ndim; ++i)
      strides.push_back(t.strides[i] * static_cast<std::int64_t>(item));
  }
  const std::uint64_t address = reinterpret_cast<std::uintptr_t>(t.data) + t.byte_offset;
  return from_pointer(address, shape, strides, dtype, Device::get(t.device.device_id),
                      std::move(owner));
}

DLManagedTensor* Array::to_dlpack() const {
  if (!valid()) throw ArgumentError("cujit: to_dlpack on a null array");
  auto e = std::make_unique<Export>();
  e->array = *this;
  e->shape = shape();
  const auto item = static_cast<std::int64_t>(itemsize());
  for (std::int64_t stride : strides()) {
    if (stride % item != 0) {
      throw ArgumentError("cujit: to_dlpack: byte stride " + std::to_string(stride) +
                          " is not a multiple of the item size " + std::to_string(item));
    }
    e->strides.push_back(stride / item);
  }
  DLTensor& t = e->tensor.dl_tensor;
  t.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(data_));
  t.device = DLDevice{kDLCUDA, device_};
  t.ndim = ndim();
  to_dl(dtype_, t.dtype);
  t.shape = e->shape.data();
  t.strides = e->strides.data();
  t.byte_offset = 0;
  e->tensor.manager_ctx = e.get();
  e->tensor.deleter = [](DLManagedTensor* self) { delete static_cast<Export*>(self->manager_ctx); };
  return &e.release()->tensor;
}

}  // namespace cujit
