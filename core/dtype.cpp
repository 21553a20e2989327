#include <cujit/dtype.hpp>

#include "core/dtype_names.hpp"

#include <array>
#include <iterator>

namespace cujit {
namespace {

struct DTypeInfo {
  std::string_view name;
  std::string_view cuda_type;
  std::size_t size;
  DTypeKind kind;
};

constexpr std::array<DTypeInfo, kDTypeCount> kInfo = {{
    {"bool", "bool", 1, DTypeKind::Bool},
    {"int8", "signed char", 1, DTypeKind::SignedInt},
    {"int16", "short", 2, DTypeKind::SignedInt},
    {"int32", "int", 4, DTypeKind::SignedInt},
    {"int64", "long long", 8, DTypeKind::SignedInt},
    {"uint8", "unsigned char", 1, DTypeKind::UnsignedInt},
    {"uint16", "unsigned short", 2, DTypeKind::UnsignedInt},
    {"uint32", "unsigned int", 4, DTypeKind::UnsignedInt},
    {"uint64", "unsigned long long", 8, DTypeKind::UnsignedInt},
    {"float16", "half", 2, DTypeKind::Float},
    {"bfloat16", "__nv_bfloat16", 2, DTypeKind::Float},
    {"float32", "float", 4, DTypeKind::Float},
    {"float64", "double", 8, DTypeKind::Float},
    {"complex64", "complex<float>", 8, DTypeKind::Complex},
    {"complex128", "complex<double>", 16, DTypeKind::Complex},
}};

const DTypeInfo& info(DType t) noexcept { return kInfo[static_cast<std::size_t>(t)]; }

// Aliases NumPy users write.
constexpr detail::DTypeAlias kAliases[] = {
    {"float", DType::Float32},     {"double", DType::Float64},     {"half", DType::Float16},
    {"int", DType::Int32},         {"uint", DType::UInt32},        {"complex", DType::Complex128},
    {"float_", DType::Float64},    {"bool_", DType::Bool},         {"byte", DType::Int8},
    {"ubyte", DType::UInt8},       {"short", DType::Int16},        {"ushort", DType::UInt16},
    {"longlong", DType::Int64},    {"ulonglong", DType::UInt64},   {"single", DType::Float32},
    {"csingle", DType::Complex64}, {"cdouble", DType::Complex128},
};

}  // namespace

std::size_t dtype_size(DType t) noexcept { return info(t).size; }
std::string_view dtype_name(DType t) noexcept { return info(t).name; }
std::string_view dtype_cuda_type(DType t) noexcept { return info(t).cuda_type; }
DTypeKind dtype_kind(DType t) noexcept { return info(t).kind; }

bool parse_dtype(std::string_view name, DType& out) noexcept {
  for (int i = 0; i < kDTypeCount; ++i) {
    if (kInfo[i].name == name) {
      out = static_cast<DType>(i);
      return true;
    }
  }
  for (const detail::DTypeAlias& alias : kAliases) {
    if (alias.name == name) {
      out = alias.type;
      return true;
    }
  }
  return false;
}

namespace detail {

std::vector<DTypeAlias> numpy_dtype_aliases() {
  return std::vector<DTypeAlias>(std::begin(kAliases), std::end(kAliases));
}

}  // namespace detail

}  // namespace cujit
