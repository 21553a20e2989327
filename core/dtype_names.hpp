#pragma once
// The dtype aliases parse_dtype accepts besides the dtype names, for the signature parser's
// list of accepted type names.

#include <cujit/dtype.hpp>

#include <string_view>
#include <vector>

namespace cujit::detail {

struct DTypeAlias {
  std::string_view name;
  DType type;
};

/// NumPy's aliases that parse_dtype accepts ("float", "double", "half", "single", ...), in a
/// fixed order.
std::vector<DTypeAlias> numpy_dtype_aliases();

}  // namespace cujit::detail
