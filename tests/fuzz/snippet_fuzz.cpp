// Fuzzes the snippet analyser (codegen/snippet_analysis.*): clang parses the fuzzed text as one
// snippet of a kernel whose signature is fixed and valid. analyze_snippets must return a
// report or throw CompileError pointing inside the offending snippet; anything else (another
// exception, a crash in clang or in cujit's checks, a sanitizer report) is a bug. Slow: every
// execution is a clang run (milliseconds).
//
// Input: one selector character, then the snippet text. The selector picks the snippet that
// receives the text ('o' operation, 'p' preamble, 'l' loop_prep, 'a' after_loop of an
// elementwise kernel; 'm' map_expr, 'r' reduce_expr, 'q' post_map_expr, 'i' identity of a
// reduction); an upper-case selector analyses as C++20. Any other first byte: the whole input
// is an elementwise operation (C++17).

#include "codegen/snippet_analysis.hpp"

#include "fuzz_check.hpp"

#include <cujit/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cujit::detail {
namespace {

// T x, float32 y, raw int32 r -> T z, bfloat16 w; T is float32. Inputs, an output, a raw
// array and a placeholder alias are all in scope.
ResolvedTypes elementwise_types(const std::vector<Param>& in, const std::vector<Param>& out) {
  ResolvedTypes types;
  types.placeholders["T"] = DType::Float32;
  for (const Param& p : in) types.in.push_back(p.is_generic ? DType::Float32 : p.dtype);
  for (const Param& p : out) types.out.push_back(p.is_generic ? DType::Float32 : p.dtype);
  return types;
}

SnippetSet make_set(char selector, const std::string& text) {
  static const std::vector<Param> ew_in =
      parse_signature("T x, float32 y, raw int32 r", "fuzz_kernel", "in_params");
  static const std::vector<Param> ew_out =
      parse_signature("T z, bfloat16 w", "fuzz_kernel", "out_params");
  static const std::vector<Param> red_in =
      parse_signature("T x, raw float32 t", "fuzz_kernel", "in_params");
  static const std::vector<Param> red_out = parse_signature("T y", "fuzz_kernel", "out_params");
  const ResolvedTypes ew_types = elementwise_types(ew_in, ew_out);
  const ResolvedTypes red_types = elementwise_types(red_in, red_out);
  const std::string op = "z = x + y; w = __float2bfloat16(y)";
  const char lower = static_cast<char>(selector | 0x20);
  switch (lower) {
    case 'p':
      return elementwise_snippet_set("fuzz_kernel", ew_in, ew_out, ew_types, op, text);
    case 'l':
      return elementwise_snippet_set("fuzz_kernel", ew_in, ew_out, ew_types, op, "", text);
    case 'a':
      return elementwise_snippet_set("fuzz_kernel", ew_in, ew_out, ew_types, op, "", "", text);
    case 'm':
      return reduction_snippet_set("fuzz_kernel", red_in, red_out, red_types, "float", text,
                                   "a + b", "y = a", "0");
    case 'r':
      return reduction_snippet_set("fuzz_kernel", red_in, red_out, red_types, "float", "x * x",
                                   text, "y = a", "0");
    case 'q':
      return reduction_snippet_set("fuzz_kernel", red_in, red_out, red_types, "float", "x * x",
                                   "a + b", text, "0");
    case 'i':
      return reduction_snippet_set("fuzz_kernel", red_in, red_out, red_types, "float", "x * x",
                                   "a + b", "y = a", text);
    default:
      return elementwise_snippet_set("fuzz_kernel", ew_in, ew_out, ew_types, text);
  }
}

}  // namespace
}  // namespace cujit::detail

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace cujit::detail;
  if (size == 0 || size > 4096) return 0;  // longer snippets only slow the search down
  const std::string_view input = cujit::fuzz::as_text(data, size);
  const char selector = input[0];
  const bool selected =
      std::string_view("oplamrqiOPLAMRQI").find(selector) != std::string_view::npos;
  const std::string text(selected ? input.substr(1) : input);
  SnippetSet set = make_set(selected ? selector : 'o', text);
  if (selected && selector >= 'A' && selector <= 'Z') set.cxx_standard = 20;
  SnippetReport report;
  try {
    report = analyze_snippets(set, PreludeMode::Precompiled);
  } catch (const cujit::CompileError& e) {
    // The error points into the snippet that has it (1-based, clamped to its text).
    const std::string message = e.what();
    CUJIT_FUZZ_CHECK(message.rfind("cujit: kernel 'fuzz_kernel': ", 0) == 0,
                     "message does not name the kernel");
    CUJIT_FUZZ_CHECK(e.line() >= 1 && e.column() >= 1, "error position is not 1-based");
    // "<label> line L, column C" on a line of its own, for a snippet of the set.
    bool inside = false, located = false;
    for (const Snippet& s : set.snippets) {
      const std::string where = "\n" + s.label + " line " + std::to_string(e.line()) + ", column " +
                                std::to_string(e.column());
      if (message.find(where) == std::string::npos) continue;
      located = true;
      const int lines = 1 + static_cast<int>(std::count(s.text.begin(), s.text.end(), '\n'));
      inside = inside || e.line() <= lines;
    }
    CUJIT_FUZZ_CHECK(located, "message has no snippet location");
    CUJIT_FUZZ_CHECK(inside, "error line is outside the snippet it names");
    return 0;
  }
  CUJIT_FUZZ_CHECK(report.identifiers.size() == set.snippets.size(),
                   "one identifier set per snippet");
  return 0;
}
