#pragma once
/// \file Specialising kernels without a GPU: describe the arguments a call will have and the
/// target it will run on, and ElementwiseKernel::specialize / ReductionKernel::specialize
/// check the snippets, generate and compile the kernel through the kernel cache (recording it
/// to CUJIT_RECORD as a call would), with no device or driver present. A later call on a GPU
/// with arguments of that description finds the kernel in the cache: the offline path asks
/// the cache exactly the request the first call asks.
///
///     cujit::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
///                                           "squared_diff");
///     cujit::Specialization s = squared_diff.specialize(
///         {cujit::ArgSpec::array(cujit::DType::Float32, {1024, 1024}),
///          cujit::ArgSpec::array(cujit::DType::Float32, {1024})},
///         cujit::Target::parse("sm_90"));

#include <cujit/dtype.hpp>
#include <cujit/export.hpp>
#include <cujit/program.hpp>
#include <cujit/shape.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace cujit {

/// The alignment in bytes of the memory cujit allocates for arrays (the driver's allocations
/// are aligned to at least 256 bytes): the default alignment of a described array.
inline constexpr std::uint64_t kArrayAlignment = 256;

/// How a described array's elements are laid out in memory.
enum class ArrayLayout : std::uint8_t {
  CContiguous,  ///< row-major, as Array::empty allocates
  FContiguous,  ///< column-major (a transposed C-contiguous array)
  Strided,      ///< the byte strides in ArgSpec::strides
};

/// One argument of a kernel call as a description: an array (dtype, shape, layout, and the
/// alignment of its data pointer) or a host scalar (dtype only: its value does not change the
/// kernel). A plain value.
struct CUJIT_EXPORT ArgSpec {
  /// A plain C++ number passed to a fused function (cujit::fuse), weak as Python numbers are
  /// in NumPy 2 (`x * 2.0` stays float32): which kind. None for arrays and typed scalars.
  enum class Weak : unsigned char { None, Bool, Integer, Floating };

  /// An array (else a host scalar).
  bool is_array = false;
  /// The element or scalar type.
  DType dtype = DType::Float32;
  Shape shape;                                    ///< arrays: extents
  ArrayLayout layout = ArrayLayout::CContiguous;  ///< arrays
  /// Arrays with ArrayLayout::Strided: byte strides, one per dimension (Array's unit;
  /// negative and 0 allowed, as views and broadcasts have them). Ignored otherwise.
  Shape strides;
  /// Arrays: the largest power of two the data pointer (the element at index 0, ..., 0) is a
  /// multiple of. At least the dtype's size, as Array::from_pointer requires. Vectorised
  /// layouts need 16 bytes, so alignments above 16 all give the same kernel.
  std::uint64_t alignment = kArrayAlignment;

  /// An array of `shape` laid out as `layout` (not Strided: use strided()).
  static ArgSpec array(DType dtype, Shape shape, ArrayLayout layout = ArrayLayout::CContiguous,
                       std::uint64_t alignment = kArrayAlignment);
  /// An array with the given byte `strides`.
  static ArgSpec strided(DType dtype, Shape shape, Shape strides,
                         std::uint64_t alignment = kArrayAlignment);
  /// Scalars: a plain C++ number of a fused call (weak_number()); None for a typed one.
  Weak weak = Weak::None;

  /// A host scalar of `dtype` (2.0f is float32, 2 int32, as in calls).
  static ArgSpec scalar(DType dtype);
  /// A plain C++ number of `kind` passed to a fused function (bool; an integer such as 2,
  /// described as int64; a floating-point number such as 2.0, as float64): its type follows
  /// the arrays it meets, as in a call with that number. Kernels other than fused ones see a
  /// scalar of the dtype given here.
  static ArgSpec weak_number(Weak kind);
};

/// What specialisation assumes of the GPU besides its architecture (the target's). An
/// elementwise kernel's code does not depend on it; a reduction's may (whether it reduces
/// rows with one block each or splits them over several blocks in two passes follows from
/// how many blocks the GPU holds at once): pass the real GPU's values so that the kernel is
/// the one its first call looks up.
struct CUJIT_EXPORT DeviceDescription {
  /// Streaming multiprocessors. Default 132: an H100 SXM or an H200.
  int sm_count = 132;
  /// Resident threads per multiprocessor; 0: the architecture's (1024 for sm_75; 1536 for
  /// sm_86, sm_89 and sm_120; 2048 otherwise).
  int max_threads_per_sm = 0;
};

/// Options of specialize(), mirroring those of a call that change the kernel.
struct CUJIT_EXPORT SpecializeOptions {
  std::int64_t size = -1;  ///< elementwise: the element count, as cujit::size(n) in a call
  int block_size = 0;      ///< threads per block, as cujit::block_size(t) in a call; 0 chooses
  /// The GPU's size (reductions' plans depend on it).
  DeviceDescription device;
};

/// Where the kernel cache found a kernel.
enum class CacheOrigin : std::uint8_t {
  Memory,      ///< this process's memory
  Disk,        ///< the writable cache database
  Deployment,  ///< a read-only deployment database
  Remote,      ///< the fleet tier (CacheConfig::remote_url), signature verified
  Compiled,    ///< compiled now (and stored in the writable database when there is one)
};

/// "memory", "disk", "deployment", "remote" or "compiled".
CUJIT_EXPORT const char* to_string(CacheOrigin origin) noexcept;

/// The result of specialising a kernel: a plain value describing the compiled kernel.
struct CUJIT_EXPORT Specialization {
  std::string kernel;  ///< the kernel's name
  Target target;       ///< what it was compiled for
  /// Where the kernel came from.
  CacheOrigin origin = CacheOrigin::Compiled;
  std::size_t binary_size = 0;  ///< bytes of cubin or PTX, as `cujit-cache ls` and `show` say
  /// The cache's request key (64 hex digits). `cujit-cache show KEY` (or a prefix of 4 or more
  /// digits) shows the entry it maps to, and lists it among that entry's request keys
  /// ("request key:" lines; "request_keys" with --json). `ls` lists entries by content key.
  std::string request_key;
};

}  // namespace cujit
