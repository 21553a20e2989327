#pragma once
// Which parameters a kernel's snippets use: one small lexer, run once per definition, shared by
// every kernel family. The clang analyser is not used for this because it is optional at run
// time (a deployed program may not have it) and because this answer selects the generated code,
// so it must be the same with and without the analyser.

#include <set>
#include <string>
#include <vector>

namespace cujit::detail {

/// Identifiers in code (a lexer-level scan: skips comments, strings, and members after . or ->).
std::set<std::string> referenced_identifiers(const std::string& code);

/// True when `operation` writes output `name` before reading it on every path we can see
/// cheaply: the operation starts with "name = " and mentions name nowhere else.
bool output_is_write_only(const std::string& operation, const std::string& name);

/// Per parameter (inputs, then outputs): whether its value is loaded, whether its `_raw_`
/// view is used, whether the operation only writes it.
struct ParamUse {
  std::vector<char> used, raw_view_used, write_only;
  bool any_raw_view = false;
};

/// The use of parameters `names` by `snippets` (a preamble's macros and functions count:
/// an identifier anywhere in them is a use). `reads[k]` forces a parameter used (outputs a
/// post-map always writes); `operation`, when given, decides write_only.
ParamUse param_use(const std::vector<std::string>& names, const std::vector<char>& reads,
                   const std::vector<const std::string*>& snippets, const std::string* operation);

}  // namespace cujit::detail
