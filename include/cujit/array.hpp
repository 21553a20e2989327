#pragma once
/// \file cujit::Array: an N-d array in device memory, owning its memory or viewing memory
/// someone else owns (a raw pointer with shape and strides, or a DLPack tensor).

#include <cujit/device.hpp>
#include <cujit/dtype.hpp>
#include <cujit/export.hpp>
#include <cujit/shape.hpp>

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <type_traits>
#include <vector>
#if __cplusplus >= 202002L && __has_include(<span>)
#include <span>
#endif

struct DLManagedTensor;

namespace cujit {

class Scalar;

namespace detail {
/// An Array's extents and byte strides, made once and shared by its copies (never changed
/// after it is made): copying an Array copies no vector.
struct ShapeAndStrides {
  Shape shape;
  Shape strides;
};
}  // namespace detail

/// An N-d device array: a device address, a shape, byte strides and a dtype, plus a shared
/// owner that keeps the memory alive. Copying an Array copies the view, not the data (like a
/// NumPy view); views share the owner, and copies share their shape and strides (a copy
/// allocates nothing). Views of external memory (from_pointer) keep whatever
/// owner the caller passes. An Array may be used from several threads at once as long as no
/// thread writes the elements others read; the Array object itself is immutable except for
/// assignment (which, like destruction, needs exclusive access to that Array object; other
/// views of the same memory are separate objects). Allocation (empty, zeros, from_host, a
/// kernel's outputs) is thread-safe.
class CUJIT_EXPORT Array {
 public:
  /// A null array: no data, not valid().
  Array() = default;

  /// Uninitialised C-contiguous array on `device`, allocated stream-ordered on `stream` from
  /// the device's memory pool (cheap after warm-up). Throws ShapeError for negative extents.
  [[nodiscard]] static Array empty(const Shape& shape, DType dtype,
                                   const Device& device = Device::current(),
                                   const Stream& stream = Stream());
  /// Zero-filled C-contiguous array.
  [[nodiscard]] static Array zeros(const Shape& shape, DType dtype,
                                   const Device& device = Device::current(),
                                   const Stream& stream = Stream());
  /// C-contiguous array of ones.
  [[nodiscard]] static Array ones(const Shape& shape, DType dtype,
                                  const Device& device = Device::current(),
                                  const Stream& stream = Stream());
  /// C-contiguous array with every element `value` converted to `dtype` (C++ conversions;
  /// complex to real: the real part).
  [[nodiscard]] static Array full(const Shape& shape, const Scalar& value, DType dtype,
                                  const Device& device = Device::current(),
                                  const Stream& stream = Stream());
  ///@{
  /// An array of `like`'s shape and dtype (or `dtype`) on its device: uninitialised, zeros,
  /// ones, or `value` (numpy.empty_like and its siblings; always C-contiguous).
  [[nodiscard]] static Array empty_like(const Array& like);
  [[nodiscard]] static Array zeros_like(const Array& like);
  [[nodiscard]] static Array ones_like(const Array& like);
  [[nodiscard]] static Array full_like(const Array& like, const Scalar& value);
  ///@}
  /// numpy.arange: `start`, `start + step`, ... while below `stop` (above, for a negative
  /// step), as `dtype`: ceil((stop - start) / step) elements (none when that is not positive).
  /// ArgumentError for a zero step. Computed by a kernel (NVRTC on its first use, then cached).
  [[nodiscard]] static Array arange(double start, double stop, double step = 1.0,
                                    DType dtype = DType::Float64,
                                    const Device& device = Device::current());
  /// numpy.arange(n) for an integer n: 0, 1, ..., n - 1 as int64 (or `dtype`).
  [[nodiscard]] static Array arange(std::int64_t stop, DType dtype = DType::Int64,
                                    const Device& device = Device::current());
  /// numpy.linspace: `num` evenly spaced values from `start` to `stop` (included when
  /// `endpoint`), computed in float64 and converted to `dtype`. ArgumentError for num < 0.
  [[nodiscard]] static Array linspace(double start, double stop, std::int64_t num,
                                      DType dtype = DType::Float64, bool endpoint = true,
                                      const Device& device = Device::current());
  /// Copies `shape`'s product of elements from host memory (C order) into a new array.
  [[nodiscard]] static Array from_host(const void* data, const Shape& shape, DType dtype,
                                       const Device& device = Device::current());
  /// Copies a host vector; `shape` defaults to {data.size()}. T is any type with a dtype
  /// (dtype_of: the numbers, std::complex<float/double>, cujit::float16 and bfloat16, __half
  /// and __nv_bfloat16); other types fail to compile. Throws ShapeError when the shape's size
  /// differs from data.size().
  template <class T>
  [[nodiscard]] static Array from_host(const std::vector<T>& data, Shape shape = {},
                                       const Device& device = Device::current()) {
    constexpr DType dtype = dtype_of<T>();
    if (shape.empty()) shape = {static_cast<std::int64_t>(data.size())};
    check_host_size(shape, data.size());
    return from_host(data.data(), shape, dtype, device);
  }
  /// Copies `count` host elements at `data` (any contiguous range: a std::array, a span's
  /// data(), a buffer of your own); `shape` defaults to {count}. Throws ShapeError when the
  /// shape's size differs from `count`.
  template <class T>
  [[nodiscard]] static Array from_host(const T* data, std::size_t count, Shape shape = {},
                                       const Device& device = Device::current()) {
    constexpr DType dtype = dtype_of<T>();
    if (shape.empty()) shape = {static_cast<std::int64_t>(count)};
    check_host_size(shape, count);
    return from_host(static_cast<const void*>(data), shape, dtype, device);
  }
#if defined(__cpp_lib_span)
  /// Copies a contiguous host range (std::span of any extent); as from_host(data(), size()).
  template <class T, std::size_t Extent>
  [[nodiscard]] static Array from_host(std::span<T, Extent> data, Shape shape = {},
                                       const Device& device = Device::current()) {
    return from_host(static_cast<const std::remove_cv_t<T>*>(data.data()), data.size(),
                     std::move(shape), device);
  }
#endif
  /// A bool array from std::vector<bool> (bit-packed on the host): one byte per element.
  [[nodiscard]] static Array from_host(const std::vector<bool>& data, Shape shape = {},
                                       const Device& device = Device::current()) {
    const std::vector<unsigned char> bytes(data.begin(), data.end());  // 0 or 1 each
    if (shape.empty()) shape = {static_cast<std::int64_t>(data.size())};
    check_host_size(shape, data.size());
    return from_host(bytes.data(), shape, DType::Bool, device);
  }
  /// A view of device memory owned by someone else: `address` is the element at index
  /// (0, ..., 0); `strides` in bytes (empty: C-contiguous). `owner`, if given, is kept alive
  /// as long as any view exists. Throws ArgumentError for a null address of a non-empty
  /// array, or an address not aligned to the dtype.
  [[nodiscard]] static Array from_pointer(std::uint64_t address, Shape shape, Shape strides,
                                          DType dtype, const Device& device,
                                          std::shared_ptr<const void> owner = nullptr);
  /// A view of an application's typed device pointer (dtype from T), C-contiguous unless
  /// `strides` (bytes) are given; nothing keeps the memory alive.
  template <class T>
  [[nodiscard]] static Array from_pointer(T* pointer, const Shape& shape, const Device& device,
                                          const Shape& strides = {}) {
    return from_pointer(reinterpret_cast<std::uintptr_t>(pointer), shape, strides, dtype_of<T>(),
                        device);
  }
  /// Wraps a DLPack tensor without copying, taking ownership (its deleter runs when the last
  /// view is gone). Only CUDA device tensors are accepted; throws ArgumentError otherwise.
  [[nodiscard]] static Array from_dlpack(DLManagedTensor* tensor);
  /// Exports a DLPack tensor sharing this array's memory; the consumer must call its
  /// deleter. Strides are exported in elements; byte strides that are not a multiple of the
  /// item size throw ArgumentError.
  [[nodiscard]] DLManagedTensor* to_dlpack() const;

  /// Copies the elements to host memory in C order (size() * itemsize() bytes); any strides.
  /// Synchronises `stream`.
  void to_host(void* destination, const Stream& stream = Stream()) const;
  /// Copies the elements into a vector; throws TypeError unless T's dtype (dtype_of) is
  /// dtype(). to_host<bool>() gives a std::vector<bool> (any non-zero byte is true).
  template <class T>
  [[nodiscard]] std::vector<T> to_host() const {
    check_host_type(dtype_of<T>());
    if constexpr (std::is_same_v<T, bool>) {
      std::vector<unsigned char> bytes(static_cast<std::size_t>(size()));
      to_host(bytes.data());
      return std::vector<bool>(bytes.begin(), bytes.end());
    } else {
      std::vector<T> result(static_cast<std::size_t>(size()));
      to_host(result.data());
      return result;
    }
  }
  /// Copies the elements into `count` host elements at `destination` (any contiguous range);
  /// throws TypeError unless T's dtype is dtype(), ShapeError unless `count` is size().
  template <class T>
  void to_host(T* destination, std::size_t count) const {
    check_host_type(dtype_of<T>());
    check_host_count(count);
    if constexpr (std::is_same_v<T, bool>) {  // any non-zero byte is true, as in to_host<bool>()
      std::vector<unsigned char> bytes(count);
      to_host(bytes.data());
      for (std::size_t k = 0; k < count; ++k) destination[k] = bytes[k] != 0;
    } else {
      to_host(static_cast<void*>(destination));
    }
  }
#if defined(__cpp_lib_span)
  /// Copies the elements into a host span; as to_host(data(), size()).
  template <class T, std::size_t Extent>
  void to_host(std::span<T, Extent> destination) const {
    to_host(destination.data(), destination.size());
  }
#endif
  /// Copies the elements in C order to `destination` (size() * itemsize() bytes), ordered on
  /// `stream` after the work already submitted to it, and returns without waiting when
  /// `destination` is page-locked (a HostBuffer): the bytes are there once the stream has
  /// reached the copy (stream.synchronize(), or an Event recorded after it). Into pageable
  /// memory the driver waits for the copy. A view that is not C-contiguous is gathered on the
  /// device first (a copy kernel into a temporary on `stream`; like any kernel, it needs NVRTC
  /// or a deployment that ships it, where to_host gathers on the host). Throws ArgumentError for a
  /// null array or destination, DeviceError for a stream of another device.
  void copy_to_host_async(void* destination, const Stream& stream) const;
  /// Copies size() * itemsize() bytes in C order from host memory at `source` into this
  /// array's elements (any view: one that is not C-contiguous is written from a temporary by
  /// a copy kernel), ordered on `stream`. Returns without waiting when `source` is page-locked
  /// (a HostBuffer), which must then stay unchanged until the stream has reached the copy; from
  /// pageable memory the driver has read `source` when it returns. Throws ArgumentError for a
  /// null array or source, DeviceError for a stream of another device.
  void copy_from_host_async(const void* source, const Stream& stream) const;
  /// The value of a one-element array (any shape whose size is 1: a 0-d reduction's result, or
  /// x[i][j]), copied to the host. Throws TypeError unless T's dtype is dtype(), ShapeError
  /// unless size() is 1.
  template <class T>
  [[nodiscard]] T item() const {
    check_host_type(dtype_of<T>());
    check_one_element();
    if constexpr (std::is_same_v<T, bool>) {
      unsigned char byte = 0;
      to_host(&byte);
      return byte != 0;
    } else {
      T value{};
      to_host(&value);
      return value;
    }
  }
  /// This array on `device`: the array itself (no copy) when it is there already, else a copy
  /// made peer to peer (directly where the GPUs can access each other's memory, which is
  /// enabled once per pair; staged through host memory, synchronously, where they cannot). A view
  /// spanning no more bytes than its elements (C- or F-contiguous, transposed, broadcast) keeps
  /// its strides; a sparser one (a slice with steps) is gathered to C order. The copy is ordered on
  /// `stream` (a stream of `device`; default: its default stream) after all work already submitted
  /// to this array's device on its blocking streams (every cujit Stream is one); it returns without
  /// waiting. Never changes the calling thread's current device. Throws ArgumentError for a null
  /// array, DeviceError when `stream` belongs to another device, CudaError when the copy fails.
  [[nodiscard]] Array to(const Device& device, const Stream& stream = Stream()) const;
  /// Sets every element to the value whose bytes are at `element` (itemsize() bytes).
  void fill_bytes(const void* element, const Stream& stream = Stream()) const;
  /// Sets every element to `value` converted to dtype() (complex: real part).
  void fill(double value, const Stream& stream = Stream()) const;
  /// A C-contiguous copy converted to `dtype` (one kernel; C++ conversions, complex to real:
  /// the real part), on `stream`.
  [[nodiscard]] Array astype(DType dtype, const Stream& stream = Stream()) const;
  /// A C-contiguous copy (one kernel), on `stream`.
  [[nodiscard]] Array copy(const Stream& stream = Stream()) const;

  /// The same memory with a new shape (one extent may be -1). Throws ShapeError when the
  /// sizes differ or when the strides cannot express the new shape without a copy.
  [[nodiscard]] Array reshape(const Shape& shape) const;
  /// Reverses the axes.
  [[nodiscard]] Array transpose() const;
  /// Permutes the axes; `axes` is a permutation of 0..ndim-1 (negative counts from the end).
  [[nodiscard]] Array transpose(const std::vector<int>& axes) const;
  /// A broadcast view with stride 0 along new or stretched axes (NumPy rules); throws
  /// ShapeError when the shapes are incompatible.
  [[nodiscard]] Array broadcast_to(const Shape& shape) const;
  /// Basic slicing along one axis, Python semantics: start/stop clamp, negative values count
  /// from the end, step may be negative but not zero.
  [[nodiscard]] Array slice(int axis, std::int64_t start, std::int64_t stop,
                            std::int64_t step = 1) const;
  /// Element `index` along axis 0, with that axis removed.
  [[nodiscard]] Array operator[](std::int64_t index) const;

  /// False for a null (default-constructed) array.
  bool valid() const noexcept { return device_ >= 0; }
  /// Number of axes.
  int ndim() const noexcept { return static_cast<int>(shape().size()); }
  /// Extents of the axes.
  const Shape& shape() const noexcept { return layout_ ? layout_->shape : no_shape(); }
  /// Byte strides of the axes.
  const Shape& strides() const noexcept { return layout_ ? layout_->strides : no_shape(); }
  /// Number of elements (the product of the extents; 1 for a 0-d array).
  std::int64_t size() const noexcept;
  /// Element type.
  DType dtype() const noexcept { return dtype_; }
  /// Bytes per element.
  std::size_t itemsize() const noexcept { return dtype_size(dtype_); }
  /// size() * itemsize(): the bytes of the elements (not of the memory a view spans).
  std::size_t nbytes() const noexcept { return static_cast<std::size_t>(size()) * itemsize(); }
  /// Device address of the element at index (0, ..., 0).
  std::uint64_t data() const noexcept { return data_; }
  /// data() as a typed device pointer (not checked against dtype()).
  template <class T>
  T* data_as() const noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(data_));
  }
  /// Id of the device the memory is on.
  int device_id() const noexcept { return device_; }
  /// The device the memory is on. Throws CudaError when there is no driver or device.
  Device device() const { return Device::get(device_); }
  /// Whether the elements are contiguous in C order.
  bool is_c_contiguous() const noexcept;
  /// The object keeping the memory alive (shared by all views); may be null for external
  /// memory.
  const std::shared_ptr<const void>& owner() const noexcept { return owner_; }

 private:
  static void check_host_size(const Shape& shape, std::size_t count);
  void check_host_type(DType requested) const;
  void check_host_count(std::size_t count) const;
  void check_one_element() const;
  /// The empty extents of a null array.
  static const Shape& no_shape() noexcept;
  /// Gives this array a new layout (its copies keep theirs).
  void set_layout(Shape shape, Shape strides);
  /// set_layout with C-contiguous strides for this array's dtype.
  void set_contiguous_layout(const Shape& shape);

  std::shared_ptr<const void> owner_;
  std::uint64_t data_ = 0;
  std::shared_ptr<const detail::ShapeAndStrides> layout_;  ///< null for a null array
  DType dtype_ = DType::Float32;
  int device_ = -1;
};

/// Prints the array in NumPy's layout: its values in nested brackets, right-aligned to one
/// width (more than 1,000 elements: the first and last three of each axis, "..." between;
/// floats as printf's %.8g, not NumPy's own float format), then its shape, dtype and device.
/// Copies the elements to the host and waits for that copy.
CUJIT_EXPORT std::ostream& operator<<(std::ostream& out, const Array& array);

}  // namespace cujit
