#pragma once
// Checking user snippets with clang: syntax errors, assignments to inputs and reserved names
// are reported with the snippet's own line and column; whatever clang cannot decide (CUDA
// intrinsics, unknown functions or types) is left to NVRTC. The launcher runs the analysis
// only after NVRTC rejected a program (runtime/launcher.cpp, issue 35), to report its error
// more precisely: a snippet NVRTC accepts is never rejected, including one that declares a
// reserved name in its own scope (which shadows cujit's without harm).
//
// The clang analyser is a separate module, libcujit-analysis.so (analysis/), loaded on the
// first analysis; without it analyze_snippets checks nothing and NVRTC's errors, mapped to
// the snippets, are what users see. The snippet sets and the error formatting here are
// libcujit's own (snippet_set.cpp, snippet_format.cpp).

#include "codegen/signature.hpp"

#include <optional>
#include <set>
#include <string>
#include <utility>
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
  /// Statements: a statement sequence, a final ';' optional (as CuPy appends one); `continue`
  /// and `break` are accepted. Expression: one C++ expression; one without tokens (an absent
  /// identity) is not analysed. TopLevel: declarations and directives (the preamble).
  enum class Form { Statements, Expression, TopLevel } form = Form::Statements;
  std::vector<SnippetVariable> variables;  ///< in scope (TopLevel: none)
  /// Index of an earlier Statements snippet whose declarations this one sees, as the
  /// operation sees what loop_prep declares (after_loop too); -1 for none. The snippet is
  /// checked in a block nested after the parent's text.
  int scope_parent = -1;
};

/// Everything one kernel's snippets need to be analysed together.
struct SnippetSet {
  std::string kernel_name;
  std::vector<Snippet> snippets;  ///< any TopLevel (preamble) snippet comes first
  /// Type names snippets may use, declared before the preamble as the generated code does:
  /// ("T", "float") becomes `typedef float T;`. The C++ type must be one the analysis
  /// prelude knows (built-in types, half, __nv_bfloat16, complex<...>, vector types).
  std::vector<std::pair<std::string, std::string>> type_aliases;
  /// The C++ standard NVRTC compiles the kernel with (17, NVRTC's default, or 20 for
  /// -std=c++20): keywords and syntax differ, so the analysis must parse the same language.
  int cxx_standard = 17;
};

/// What analyze_snippets found.
struct SnippetReport {
  /// Identifiers each snippet references (same order as SnippetSet::snippets); without the
  /// analyser module, one empty set per snippet.
  std::vector<std::set<std::string>> identifiers;
  /// True when clang could fully check the set; false when it deferred to NVRTC or the
  /// analyser module is not installed.
  bool fully_checked = true;
};

/// Analyses the snippets with clang against a built-in prelude that stands in for what
/// generated code offers (CUDA qualifiers, built-ins, vector types, half, bfloat16,
/// complex<T>, math functions and intrinsics), precompiled once per process. Throws
/// CompileError (message "<kernel>: <label> line L, column C: <what>" plus the snippet line and
/// a caret; line()/column() 1-based within the snippet; log() the clang diagnostics; source()
/// the analysed translation unit) only for errors clang is certain of:
///  - syntax and lexical errors, when no error about an unknown name, a template instantiation
///    or anything outside the snippets came first;
///  - writing a read-only variable (an input, `a`/`b`, `i`, `_ind`), where clang failed too;
///  - declaring `i`, `_ind`, `_in_ind`, `_out_ind`, `_J`, `_raw_<name>` or a `_cj`/`_cujit`
///    name in a snippet's outermost scope (or at file scope in the preamble), or redeclaring
///    one of the snippet's element variables there;
///  - using one of cujit's variables where it is not defined (`_raw_q`, `_ind` in a
///    reduction, `_J` in an elementwise kernel);
///  - clear type errors on built-in types only (float % float, member access on a float).
/// Anything else is left to NVRTC (fully_checked false, no throw), as is everything when a
/// preprocessor conditional tests a compiler macro (__CUDA_ARCH__, CUDART_VERSION, ...).
/// Throws ArgumentError for an invalid scope_parent. Thread-safe (clang runs are serialised
/// internally: one analysis at a time per process). Setting the environment
/// variable CUJIT_DEBUG_ANALYSIS=1 prints the analysed source and clang's verdicts to stderr.
/// The first call loads libcujit-analysis.so (analysis_loader.hpp says from where); when it
/// cannot be loaded, every call returns fully_checked false without checking or throwing, and
/// the process prints one "cujit: info:" line to stderr.
SnippetReport analyze_snippets(const SnippetSet& set);

/// How analyze_snippets reads its prelude. Automatic: from a PCH built once per process on a
/// background thread at first use, as text until that is ready (so a process that specialises
/// one kernel never waits for it). Text and Precompiled (which waits for the PCH) exist for
/// tests and benchmarks; all three give the same results.
enum class PreludeMode { Automatic, Text, Precompiled };
SnippetReport analyze_snippets(const SnippetSet& set, PreludeMode mode);

/// True when the clang analyser module is loaded, loading it (as the first analysis would) if
/// it is not yet. For tests and tools; thread-safe, never throws.
bool analysis_available();

/// The snippets of an ElementwiseKernel, always four, in this order: 0 "preamble" (TopLevel),
/// 1 "loop_prep" (Statements: raw parameters, `_raw_<name>` for every non-raw parameter,
/// `_ind`), 2 "operation" (Statements in loop_prep's scope: also `i` and every non-raw
/// parameter as an element, inputs read-only, outputs writable), 3 "after_loop" (Statements
/// in loop_prep's scope, loop_prep's variables). `types` gives each parameter's dtype (from
/// resolve_types); its placeholders become type aliases. Empty snippets are fine.
SnippetSet elementwise_snippet_set(const std::string& kernel, const std::vector<Param>& in,
                                   const std::vector<Param>& out, const ResolvedTypes& types,
                                   const std::string& operation, const std::string& preamble = "",
                                   const std::string& loop_prep = "",
                                   const std::string& after_loop = "");

/// The snippets of a ReductionKernel, always five, in this order: 0 "preamble" (TopLevel),
/// 1 "identity" (Expression, no variables; empty when there is none), 2 "map_expr"
/// (Expression: inputs read-only, `_raw_<input>`, `_J`, `_in_ind`, `_out_ind`), 3
/// "reduce_expr" (Expression: `a` and `b` of `reduce_type`, read-only), 4 "post_map_expr"
/// (Statements: `a` read-only, outputs writable, `_raw_<output>`, `_in_ind`, `_out_ind`).
/// `reduce_type` is a C++ type such as "float" or a struct the preamble defines.
SnippetSet reduction_snippet_set(const std::string& kernel, const std::vector<Param>& in,
                                 const std::vector<Param>& out, const ResolvedTypes& types,
                                 const std::string& reduce_type, const std::string& map_expr,
                                 const std::string& reduce_expr, const std::string& post_map_expr,
                                 const std::string& identity, const std::string& preamble = "");

/// Formats "<label> line L, column C" plus the snippet's line and a caret under the column,
/// each on its own line indented by two spaces (no caret lines when `line` is out of range).
/// Lines and columns are 1-based; tabs before the column are kept so the caret lines up.
/// Line `line` (1-based) of `text`, without its newline; nullopt when out of range.
std::optional<std::string> snippet_line(const std::string& text, int line);

std::string format_snippet_location(const std::string& label, const std::string& text, int line,
                                    int column);

/// The complete message of an error in a snippet, as analyze_snippets throws it and as NVRTC
/// errors mapped back to a snippet should read:
///   "cujit: kernel '<kernel>': <message>\n<label> line L, column C\n  <snippet line>\n  <caret>"
std::string format_snippet_error(const std::string& kernel, const std::string& label,
                                 const std::string& text, int line, int column,
                                 const std::string& message);

}  // namespace cujit::detail
