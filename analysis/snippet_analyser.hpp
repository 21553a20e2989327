#pragma once
// The clang snippet analyser of libcujit-analysis.so: what analyze_snippets does when the module
// is installed (codegen/snippet_analysis.hpp documents the checks).

#include "codegen/snippet_analysis.hpp"

namespace cujit::detail {

/// analyze_snippets(set, mode) with clang, on the calling thread: the caller provides a large
/// stack (clang's parser recurses once per nesting level). Throws CompileError and
/// ArgumentError exactly as analyze_snippets documents. Thread-safe (clang runs are serialised).
SnippetReport analyze_with_clang(const SnippetSet& set, PreludeMode mode);

}  // namespace cujit::detail
