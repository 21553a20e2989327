#pragma once
// Parsing kernel parameter signatures ("raw T x, float32 y") and resolving type placeholders
// from actual arguments, as CuPy's ElementwiseKernel does.

#include <cujit/dtype.hpp>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cujit::detail {

/// One declared parameter.
struct Param {
  std::string name;
  bool raw = false;          ///< "raw" prefix: indexable array, not broadcast
  bool is_generic = false;   ///< type is a placeholder such as T
  std::string placeholder;   ///< "T" when is_generic
  DType dtype = DType::Float32;  ///< the type when !is_generic
  std::size_t column = 0;    ///< zero-based column of the parameter in the signature

  friend bool operator==(const Param& a, const Param& b) {
    return a.name == b.name && a.raw == b.raw && a.is_generic == b.is_generic &&
           a.placeholder == b.placeholder && (a.is_generic || a.dtype == b.dtype);
  }
};

/// Parses a comma-separated list of "[raw] TYPE NAME". TYPE is a dtype name or NumPy alias (see
/// parse_dtype), a C++ spelling of one ("int64_t", "std::size_t", "unsigned int", "long long",
/// "__half", "std::complex<float>"; the unknown-type message lists them all), or a one-letter
/// placeholder (A-Z). The spelling only selects the dtype: Param holds no trace of it. Names are C identifiers; "i", "n" and
/// names starting with "_" are reserved, as are C++ keywords. An empty string is an empty
/// list. `what` is "in_params" or "out_params", `kernel` the kernel name, both used in
/// messages. Throws SignatureError whose message shows the signature with a caret.
std::vector<Param> parse_signature(std::string_view text, std::string_view kernel,
                                   std::string_view what);

/// Checks the in and out lists together (no duplicate names across them, outputs not raw
/// unless `allow_raw_outputs`); throws SignatureError.
void check_signatures(const std::vector<Param>& in, const std::vector<Param>& out,
                      std::string_view kernel, bool allow_raw_outputs = true);

/// What the caller passed for one parameter.
struct ArgType {
  bool present = true;  ///< false for an output the caller did not give
  bool is_array = true; ///< false for a host scalar
  DType dtype = DType::Float32;
};

/// The resolved dtype of every parameter plus the placeholder bindings.
struct ResolvedTypes {
  std::vector<DType> in;
  std::vector<DType> out;
  std::map<std::string, DType> placeholders;
};

/// Resolves placeholders as CuPy does: given outputs bind first, then input arrays, with
/// exact dtype matches (no silent casts); scalars never fail a match (they are cast to the
/// parameter's type) and a placeholder bound only by scalars takes the first such scalar's
/// own dtype. Missing outputs take their declared or bound type. Throws TypeError naming the
/// kernel, the parameter, the expected and the actual dtype; throws TypeError when a
/// placeholder cannot be resolved at all, or a raw parameter gets a scalar (or an output a
/// scalar). `out_args` is empty (no outputs given) or has one entry per output; other counts,
/// and an input marked not present, throw ArgumentError.
ResolvedTypes resolve_types(const std::vector<Param>& in, const std::vector<Param>& out,
                            const std::vector<ArgType>& in_args,
                            const std::vector<ArgType>& out_args, std::string_view kernel);

/// True if `name` is a valid C identifier and not reserved by cujit or C++.
bool is_valid_kernel_name(std::string_view name);

}  // namespace cujit::detail
