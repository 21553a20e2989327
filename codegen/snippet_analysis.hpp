#pragma once
// Checking user snippets with clang before NVRTC sees them: syntax errors, assignments to
// inputs and reserved names are reported in milliseconds with the snippet's own line and
// column; whatever clang cannot decide (CUDA intrinsics, unknown functions or types) is left
// to NVRTC, so a snippet NVRTC accepts is never rejected.

#include <set>
#include <string>
#include <vector>

namespace cujit::detail {

/// A variable visible to a snippet.
struct SnippetVariable {
  std::string name;
  std::string cuda_type;  ///< C++ spelling: "float", "double", "half", "complex<float>"
  enum class Kind { Element, RawArray, Index, Size } kind = Kind::Element;
  bool writable = false;  ///< outputs are writable; inputs are not
};

/// One piece of user code.
struct Snippet {
  std::string label;  ///< "operation", "preamble", "map_expr", ... (used in messages)
  std::string text;
  enum class Form { Statements, Expression, TopLevel } form = Form::Statements;
  std::vector<SnippetVariable> variables;  ///< in scope (TopLevel: none)
};

struct SnippetSet {
  std::string kernel_name;
  std::vector<Snippet> snippets;  ///< any TopLevel (preamble) snippet comes first
};

struct SnippetReport {
  /// Identifiers each snippet references (same order as SnippetSet::snippets).
  std::vector<std::set<std::string>> identifiers;
  /// True when clang could fully check the set; false when it deferred to NVRTC.
  bool fully_checked = true;
};

/// Analyses the snippets. Throws CompileError pointing at the snippet's line and column,
/// with the snippet's line and a caret under the column in the message, for errors clang is
/// certain of. Never throws for code NVRTC would accept. Thread-safe.
SnippetReport analyze_snippets(const SnippetSet& set);

/// Formats "<label> line L, column C" plus the snippet's line and a caret under the column.
std::string format_snippet_location(const std::string& label, const std::string& text, int line,
                                    int column);

}  // namespace cujit::detail
