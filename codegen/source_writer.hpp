#pragma once
// What both code generators write with: a text buffer that counts lines, so that a user's
// snippet is emitted under a #line directive naming it (NVRTC's errors then point at the
// snippet's own lines) and the generated file's numbering resumes after it.

#include <cujit/dtype.hpp>

#include <set>
#include <string>

namespace cujit::detail {

class SourceWriter {
 public:
  explicit SourceWriter(std::string file) : file_(std::move(file)) {}
  SourceWriter& operator<<(const std::string& text) {
    for (char c : text) line_ += (c == '\n');
    out_ += text;
    return *this;
  }
  /// Emits `code` followed by `end` and a newline, under "#line 1 \"label\"".
  void snippet(const std::string& label, const std::string& code, const std::string& end) {
    *this << "#line 1 \"" + label + "\"\n" << code << end << "\n";
    *this << "#line " + std::to_string(line_ + 1) + " \"" + file_ + "\"\n";
  }
  /// Statements get a closing ';' as in CuPy, so "z = x + y" needs none; empty code emits
  /// nothing.
  void statements(const std::string& label, const std::string& code) {
    if (!code.empty()) snippet(label, code, ";");
  }
  const std::string& str() const { return out_; }

 private:
  std::string file_;
  std::string out_;
  int line_ = 1;
};

/// "typedef float T;" for each type placeholder of `params` (inputs then outputs), bound to
/// the dtype of its first parameter in `dtypes` (same order), each line after `indent`.
/// Placeholders name their resolved types in the kernel, as in CuPy: T(0) and (T)i work.
template <class Params, class DTypes>
std::string placeholder_typedefs(const Params& params, const DTypes& dtypes,
                                 const std::string& indent) {
  std::string text;
  std::set<std::string> seen;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    if (p.is_generic && seen.insert(p.placeholder).second) {
      text += indent + "typedef " + std::string(dtype_cuda_type(dtypes[k].dtype)) + " " +
              p.placeholder + ";\n";
    }
  }
  return text;
}

/// The CUDA C++ spelling of a dtype ("float", "__half", "complex<double>").
inline std::string cuda_type(DType t) { return std::string(dtype_cuda_type(t)); }

}  // namespace cujit::detail
