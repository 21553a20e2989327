#pragma once
// The argument block of a generated kernel's launch, built on the stack: each parameter's bytes
// in a 16-byte slot and the pointer array cuLaunchKernel takes.

#include <cujit/array.hpp>
#include <cujit/kernel_args.hpp>

#include "codegen/kernel_abi.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace cujit::detail {

class KernelParams {
 public:
  static constexpr std::size_t kMax = 3 * CallArgs::kMaxArgs + 8;

  /// Appends a parameter of `size` <= 16 bytes.
  void push_value(const void* bytes, std::size_t size) { std::memcpy(next_slot(), bytes, size); }
  /// Appends a host scalar converted to the parameter's dtype.
  void push_scalar(const Scalar& scalar, DType dtype) { scalar.convert_to(dtype, next_slot()); }
  /// Appends an array's address; a raw array also passes its size and its byte stride (its
  /// only stride when 1-d, else the item size: raw arrays are C-contiguous or 1-d).
  void push_array(const Array& array, bool raw) {
    const std::uint64_t address = array.data();
    push_value(&address, 8);
    if (raw) {
      const std::int64_t size = array.size();
      const std::int64_t stride =
          array.ndim() == 1 ? array.strides()[0] : static_cast<std::int64_t>(array.itemsize());
      push_value(&size, 8);
      push_value(&stride, 8);
    }
  }
  /// Appends a parameter whose bytes live elsewhere (a layout struct); they must outlive the
  /// launch.
  void push_external(void* bytes) { pointers_[count_++] = bytes; }

  void** data() noexcept { return pointers_; }

 private:
  void* next_slot() {
    void* slot = values_[count_];
    pointers_[count_++] = slot;
    return slot;
  }
  void* pointers_[kMax];
  alignas(16) unsigned char values_[kMax][16];
  std::size_t count_ = 0;
};

/// Where the values of a call's parameters come from.
struct PackSources {
  const Arg* args = nullptr;             ///< the call's arguments (scalars)
  const Array* const* arrays = nullptr;  ///< per parameter, its array (null for a scalar)
  std::int64_t count = 0;                ///< the element count (AbiParam::Kind::Count)
  void* layout = nullptr;                ///< the layout struct's bytes
  std::uint64_t* scratch = nullptr;      ///< the scratch address
};

/// Packs the parameters `abi` lists (the table the generated signature was written from).
inline void pack_parameters(const std::vector<AbiParam>& abi, const PackSources& from,
                            KernelParams& into) {
  for (const AbiParam& p : abi) {
    switch (p.kind) {
      case AbiParam::Kind::Array:
        into.push_array(*from.arrays[p.param], false);
        break;
      case AbiParam::Kind::RawArray:
        into.push_array(*from.arrays[p.param], true);
        break;
      case AbiParam::Kind::Scalar:
        into.push_scalar(from.args[p.param].scalar(), p.dtype);
        break;
      case AbiParam::Kind::Count:
        if (p.index64) {
          into.push_value(&from.count, 8);
        } else {
          const auto n32 = static_cast<std::int32_t>(from.count);
          into.push_value(&n32, 4);
        }
        break;
      case AbiParam::Kind::Struct:
        into.push_external(from.layout);
        break;
      case AbiParam::Kind::Scratch:
        into.push_external(from.scratch);
        break;
    }
  }
}

}  // namespace cujit::detail
