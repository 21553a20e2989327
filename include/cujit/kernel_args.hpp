#pragma once
/// \file Arguments of generated kernels (ElementwiseKernel, ReductionKernel): arrays, host
/// scalars, and call options (size, block size, stream) written inline in a call:
/// `kernel(x, 2.0f, y, cujit::on(stream))`.

#include <cujit/array.hpp>
#include <cujit/dtype.hpp>
#include <cujit/error.hpp>
#include <cujit/export.hpp>

#include <complex>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace cujit {

namespace detail {
/// Types a host scalar argument may have: every arithmetic type (those without a dtype, such as
/// long double, fail in dtype_of with a message) and every other type with a dtype (complex,
/// cujit::float16 and bfloat16, CUDA's __half and __nv_bfloat16 where their headers came first).
template <class T>
inline constexpr bool is_scalar_arg_v = std::is_arithmetic_v<T> || has_dtype_v<T>;
}  // namespace detail

/// A host scalar with its natural dtype: 2.0f is float32, 2.0 float64, 2 int32,
/// cujit::float16(0.5f) (or a __half) float16, std::complex<float> complex64.
class CUJIT_EXPORT Scalar {
 public:
  /// A value of any type with a dtype (arithmetic, complex, 16-bit floats), as T's dtype.
  template <class T, class = std::enable_if_t<detail::is_scalar_arg_v<T>>>
  Scalar(T value) noexcept : dtype_(dtype_of<T>()) {  // NOLINT: implicit on purpose
    static_assert(sizeof(T) <= sizeof(bytes_) && std::is_trivially_copyable_v<T>);
    std::memcpy(bytes_, &value, sizeof(T));
  }
  /// The scalar's own dtype.
  DType dtype() const noexcept { return dtype_; }
  /// The value's bytes in its own dtype.
  const unsigned char* bytes() const noexcept { return bytes_; }
  /// The value converted to `target` (C++ conversion rules; complex to real takes the real
  /// part), written to `out` (dtype_size(target) bytes).
  void convert_to(DType target, void* out) const noexcept;

 private:
  alignas(16) unsigned char bytes_[16] = {};
  DType dtype_;
};

/// Call options of generated kernels.
struct CUJIT_EXPORT LaunchOptions {
  std::int64_t size = -1;         ///< number of elements; required when only raw arrays are passed
  int block_size = 0;             ///< threads per block; 0 chooses
  CUstream_st* stream = nullptr;  ///< the stream to launch on (default: legacy default stream)
  /// The device `stream` belongs to, when known (cujit::on sets it); -1: unknown. A call with
  /// arrays of another device throws DeviceError; a call with no arrays runs on it.
  int stream_device = -1;
};

/// Option tags for the variadic call syntax. Tag of cujit::size.
struct CUJIT_EXPORT SizeOption {
  std::int64_t value;  ///< the number of elements
};
/// Tag of cujit::block_size.
struct CUJIT_EXPORT BlockSizeOption {
  int value;  ///< threads per block
};
/// Tag of cujit::on.
struct CUJIT_EXPORT StreamOption {
  CUstream_st* value;  ///< the stream to launch on
  int device = -1;     ///< its device; -1: unknown
};
/// `kernel(x, y, cujit::size(n))`: the element count when only raw arrays are passed.
inline SizeOption size(std::int64_t n) noexcept { return {n}; }
/// `kernel(x, y, cujit::block_size(128))`.
inline BlockSizeOption block_size(int threads) noexcept { return {threads}; }
/// `kernel(x, y, cujit::on(stream))`: launch on `stream` (outputs are allocated on it too).
inline StreamOption on(const Stream& stream) noexcept {
  return {stream.handle(), stream.device_id()};
}

/// The axes a reduction reduces, written inline in a call: `norm(x, cujit::axis{1})`,
/// `norm(x, cujit::axis{0, 2})`; negative axes count from the end. `cujit::axis{}` reduces no
/// axis. Without an axis tag a reduction reduces every axis. Holds up to kMaxAxes axes inline
/// (no heap allocation); more throw ArgumentError.
class CUJIT_EXPORT Axes {
 public:
  static constexpr int kMaxAxes = 32;  ///< the most axes an Axes holds
  /// The axes listed; throws ArgumentError for more than kMaxAxes.
  Axes(std::initializer_list<int> axes) { assign(axes.begin(), axes.size()); }  // NOLINT
  /// One axis.
  explicit Axes(int axis) noexcept : count_(1) { values_[0] = axis; }
  /// The axes of a list known at run time; throws ArgumentError for more than kMaxAxes.
  explicit Axes(const std::vector<int>& axes) { assign(axes.data(), axes.size()); }
  /// Number of axes.
  int size() const noexcept { return count_; }
  /// The `k`th axis as given (negative ones not yet resolved).
  int operator[](int k) const noexcept { return values_[k]; }
  /// First axis, for range-for.
  const int* begin() const noexcept { return values_; }
  /// Past the last axis.
  const int* end() const noexcept { return values_ + count_; }

 private:
  void assign(const int* axes, std::size_t count) {
    if (count > static_cast<std::size_t>(kMaxAxes)) {
      throw ArgumentError("cujit: cujit::axis: " + std::to_string(count) +
                          " axes given; at most 32");
    }
    for (std::size_t k = 0; k < count; ++k) values_[count_++] = axes[k];
  }

  int values_[kMaxAxes] = {};
  int count_ = 0;
};
/// `cujit::axis{1}` and `cujit::axis{0, 2}`: the spelling of Axes in calls.
using axis = Axes;

/// Tag type of cujit::keepdims.
struct CUJIT_EXPORT KeepDims {};
/// `norm(x, cujit::axis{1}, cujit::keepdims)`: keep reduced axes with extent 1.
inline constexpr KeepDims keepdims{};

/// The segments of a segmented reduction, written inline in a call:
/// `sum(values, cujit::segments(offsets))` reduces values[offsets[k]:offsets[k + 1]] into
/// element k of a 1-d output (CSR rows of any lengths), and `cujit::segments(begin, end)`
/// reduces values[begin[k]:end[k]] (CUB's form: segments may overlap, leave gaps or come in
/// any order). Offsets are 1-d int32 or int64 device arrays on the inputs' device (any
/// stride); they stay on the device: a call reads them in the kernel, without a host round
/// trip. Offsets past the input are clamped to it and an end before its begin gives an empty
/// segment, so no offset reads outside the input. Holds views of the arrays (copies of the
/// Array handles), so it may outlive them.
class CUJIT_EXPORT Segments {
 public:
  /// CSR offsets: offsets.size() - 1 segments, segment k from offsets[k] to offsets[k + 1].
  explicit Segments(const Array& offsets);
  /// Segment k from begin[k] to end[k]; begin and end have one dtype and one length.
  Segments(const Array& begin, const Array& end);
  /// A description for specialize() (no arrays): `count` segments with offsets of `dtype`.
  Segments(DType dtype, std::int64_t count);

  /// Whether the segments are described by arrays (else by a dtype and a count).
  bool has_arrays() const noexcept { return has_arrays_; }
  /// The begin offsets' view (has_arrays(); for CSR offsets, all but the last).
  const Array& begin() const noexcept { return begin_; }
  /// The end offsets' view (has_arrays(); for CSR offsets, all but the first).
  const Array& end() const noexcept { return end_; }
  /// The offsets' dtype.
  DType dtype() const noexcept { return dtype_; }
  /// The number of segments; -1 when the arrays given cannot describe segments (calls
  /// throw ShapeError or TypeError naming the kernel).
  std::int64_t count() const noexcept { return count_; }
  /// What is wrong with the arrays given, or empty.
  const std::string& problem() const noexcept { return problem_; }

 private:
  Array begin_, end_;
  DType dtype_ = DType::Int64;
  std::int64_t count_ = -1;
  bool has_arrays_ = false;
  std::string problem_;
};
/// `sum(x, cujit::segments(offsets))`: CSR offsets (Segments).
inline Segments segments(const Array& offsets) { return Segments(offsets); }
/// `sum(x, cujit::segments(begin, end))`: begin and end offsets (Segments).
inline Segments segments(const Array& begin, const Array& end) { return Segments(begin, end); }

/// Call options of reductions (ReductionKernel).
struct CUJIT_EXPORT ReduceOptions {
  std::optional<Axes> axes;  ///< the axes to reduce; none: every axis
  bool keepdims = false;     ///< keep reduced axes with extent 1
  /// Reduce a 1-d input in segments (ReductionKernel only): one output element per segment.
  std::optional<Segments> segments;
};

/// One positional argument: an array or a host scalar. Holds a pointer to the caller's Array,
/// so it must not outlive the call it is passed to.
class CUJIT_EXPORT Arg {
 public:
  /// An array argument (a pointer to `array` is kept).
  Arg(const Array& array) noexcept : array_(&array), scalar_(0) {}  // NOLINT
  /// A scalar argument.
  Arg(Scalar scalar) noexcept : scalar_(scalar) {}  // NOLINT
  /// A scalar argument of T's dtype (any type Scalar takes).
  template <class T, class = std::enable_if_t<detail::is_scalar_arg_v<T>>>
  Arg(T value) noexcept : scalar_(value) {}  // NOLINT

  /// Whether the argument is an array (else a scalar).
  bool is_array() const noexcept { return array_ != nullptr; }
  /// The array; only when is_array().
  const Array& array() const noexcept { return *array_; }
  /// The scalar; only when !is_array().
  const Scalar& scalar() const noexcept { return scalar_; }
  /// The array's or the scalar's dtype.
  DType dtype() const noexcept { return array_ ? array_->dtype() : scalar_.dtype(); }

 private:
  const Array* array_ = nullptr;
  Scalar scalar_;
};

namespace detail {

/// Collects the positional arguments and option tags of a variadic kernel call without heap
/// allocation.
class CallArgs {
 public:
  static constexpr std::size_t kMaxArgs = 48;
  void add(const Array& array) { push(Arg(array)); }
  void add(const Scalar& scalar) { push(Arg(scalar)); }
  template <class T, class = std::enable_if_t<is_scalar_arg_v<T>>>
  void add(T value) {
    push(Arg(value));
  }
  void add(SizeOption o) noexcept { options.size = o.value; }
  void add(BlockSizeOption o) noexcept { options.block_size = o.value; }
  void add(StreamOption o) noexcept {
    options.stream = o.value;
    options.stream_device = o.device;
  }
  void add(const LaunchOptions& o) noexcept { options = o; }
  void add(const Axes& a) noexcept { reduce.axes = a; }
  void add(KeepDims) noexcept { reduce.keepdims = true; }
  void add(const ReduceOptions& o) { reduce = o; }
  void add(const Segments& s) { reduce.segments = s; }
  /// Anything else: one readable error at compile time instead of a wall of candidates.
  template <class T, class = std::enable_if_t<!is_scalar_arg_v<std::decay_t<T>>>, class = void>
  void add(const T&) {
    static_assert(!std::is_same_v<T, T>,
                  "cujit: a kernel argument must be a cujit::Array, a scalar (an arithmetic type, "
                  "std::complex, cujit::float16/bfloat16, __half, ...) or an option tag "
                  "(cujit::size, block_size, on, axis, keepdims, segments)");
  }

  const Arg* data() const noexcept { return reinterpret_cast<const Arg*>(storage_); }
  /// Arguments given. Above kMaxArgs only the first kMaxArgs are stored; kernels (at most
  /// kMaxArgs parameters) refuse such a call by its count alone.
  std::size_t count() const noexcept { return count_; }
  LaunchOptions options;
  ReduceOptions reduce;  ///< axis and keepdims tags (reductions only)

 private:
  // Past kMaxArgs only the count grows: no kernel takes that many, so the kernel's own count
  // check refuses the call, naming the kernel, before any argument is read. Inline: the
  // library exports nothing of cujit::detail.
  void push(const Arg& arg) noexcept {
    if (count_ < kMaxArgs) new (storage_ + count_ * sizeof(Arg)) Arg(arg);
    ++count_;
  }
  alignas(Arg) unsigned char storage_[kMaxArgs * sizeof(Arg)];
  std::size_t count_ = 0;
};

}  // namespace detail
}  // namespace cujit
