#pragma once
// A kernel's parameter struct described once: the table gives both the declaration the
// generated source contains and the bytes the host passes, so the two cannot drift apart.
// Pure; no CUDA headers.

#include <cujit/dtype.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cujit::detail {

/// One field: an index (int or long long, by the struct's index width) or an unsigned
/// 32-bit word, as a scalar (rows = cols = 0), a vector [cols] (rows = 0) or a matrix
/// [rows][cols]. Extents below 1 are stored as 1 (C arrays cannot be empty).
struct AbiField {
  enum class Type : unsigned char { Index, U32 };
  std::string name;
  Type type = Type::Index;
  int rows = 0;
  int cols = 0;
};

/// A struct passed by value to a kernel.
class AbiStruct {
 public:
  AbiStruct(std::string name, bool index64, std::vector<AbiField> fields);

  /// "struct NAME {\n  int a;\n  int b[3];\n  unsigned c[2][3];\n};\n"
  std::string declaration() const;
  /// Bytes of the struct, padded to its alignment as the device compiler lays it out.
  std::size_t size() const noexcept { return size_; }
  /// Index of the field called `name` (throws std::logic_error when there is none).
  int field(const std::string& name) const;

  /// Writes `value` into element `flat` (row-major) of field `field` of the struct at `out`
  /// (size() bytes): truncated to the field's type.
  void put(unsigned char* out, int field, std::size_t flat, std::int64_t value) const;

 private:
  std::string name_;
  bool index64_;
  std::vector<AbiField> fields_;
  std::vector<std::size_t> offsets_;
  std::size_t size_ = 0;
};

/// One entry of a kernel's parameter list, as the generated signature declares it and as the
/// host packs it: the generator joins the declarations, the launcher walks the same entries.
struct AbiParam {
  enum class Kind : unsigned char {
    Array,     ///< a device address: one pointer parameter
    RawArray,  ///< a raw array: pointer, long long size, long long byte stride
    Scalar,    ///< a host scalar converted to `dtype`, by value
    Count,     ///< the element count: int, or long long with `index64`
    Struct,    ///< the layout struct, by value
    Scratch,   ///< a device address of scratch memory (null for one-pass launches)
  };
  Kind kind = Kind::Array;
  int param = -1;                ///< the definition's parameter (Array, RawArray, Scalar)
  DType dtype = DType::Float32;  ///< Scalar
  bool index64 = false;          ///< Count
  std::string declaration;       ///< its text in the signature ("char* _cj_p0")

  /// Parameters of the kernel it stands for (a raw array passes three).
  int slots() const { return kind == Kind::RawArray ? 3 : 1; }
};

/// The entry of definition parameter `k` (spelled `_cj_p<k>`, `_cj_s<k>`, `_cj_size<k>`,
/// `_cj_stride<k>`): a raw array, a scalar of `dtype`, or an array whose address parameter is
/// declared as `pointer` (e.g. "char*", "const char* __restrict__").
AbiParam abi_argument(int k, bool raw, bool scalar, DType dtype, const std::string& pointer);

/// "decl, decl, ...": the parameter list of a generated kernel.
std::string abi_signature(const std::vector<AbiParam>& params);

/// Fills an AbiStruct's bytes field by field, in any order.
class AbiWriter {
 public:
  AbiWriter(const AbiStruct& abi, unsigned char* out) : abi_(abi), out_(out) {}
  /// Writes `values` into field `field` (its index in the table) from element 0.
  template <class Range>
  void fill(int field, const Range& values) {
    std::size_t k = 0;
    for (const auto& v : values) abi_.put(out_, field, k++, static_cast<std::int64_t>(v));
  }
  void set(int field, std::size_t flat, std::int64_t value) { abi_.put(out_, field, flat, value); }

 private:
  const AbiStruct& abi_;
  unsigned char* out_;
};

}  // namespace cujit::detail
