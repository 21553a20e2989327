// analyze_snippets in libcujit: a thin front of the clang analyser, which lives in
// libcujit-analysis.so (analysis/) so that libcujit.so itself carries no clang or LLVM.
#include "codegen/snippet_analysis.hpp"

#include "codegen/analysis_abi.hpp"
#include "codegen/analysis_loader.hpp"
#include "codegen/large_stack.hpp"

#include <cujit/error.hpp>

#include <new>
#include <utility>

namespace cujit::detail {
namespace {

// Without the analyser nothing was checked: NVRTC judges the snippets, and
// rethrow_snippet_error (runtime/launcher.cpp) maps its errors to their lines and columns.
SnippetReport unchecked(const SnippetSet& set) {
  SnippetReport report;
  report.identifiers.resize(set.snippets.size());
  report.fully_checked = false;
  return report;
}

SnippetReport report_or_throw(const SnippetSet& set, AnalysisOutcome&& outcome) {
  switch (outcome.kind) {
    case AnalysisOutcome::Kind::Report:
      return std::move(outcome.report);
    case AnalysisOutcome::Kind::CompileError:
      throw CompileError(outcome.message, std::move(outcome.log), std::move(outcome.options),
                         std::move(outcome.source), outcome.line, outcome.column);
    case AnalysisOutcome::Kind::ArgumentError:
      throw ArgumentError(outcome.message);
    case AnalysisOutcome::Kind::OutOfMemory:
      throw std::bad_alloc();
    case AnalysisOutcome::Kind::Internal:
      break;
  }
  throw Error(set.kernel_name + ": the snippet analyser failed: " + outcome.message);
}

}  // namespace

SnippetReport analyze_snippets(const SnippetSet& set) {
  return analyze_snippets(set, PreludeMode::Automatic);
}

SnippetReport analyze_snippets(const SnippetSet& set, PreludeMode mode) {
  const AnalysisTable* table = analysis_table();
  if (table == nullptr) return unchecked(set);
  AnalysisOutcome outcome;
  // clang's parser recurses per nesting level, like NVRTC's: never on a worker's small stack.
  run_on_large_stack([&] { table->analyze(set, mode, outcome); });
  return report_or_throw(set, std::move(outcome));
}

bool analysis_available() { return analysis_table() != nullptr; }

}  // namespace cujit::detail
