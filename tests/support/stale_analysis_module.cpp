// A stand-in for a libcujit-analysis.so left behind by an older cujit: it exports the entry
// point, but its table has another interface version. The loader must refuse it without
// calling into it (analysis_module_test.cpp).
#include "codegen/analysis_abi.hpp"

namespace {

void never_called(const cujit::detail::SnippetSet&, cujit::detail::PreludeMode,
                  cujit::detail::AnalysisOutcome&) noexcept {
  __builtin_trap();
}

constexpr cujit::detail::AnalysisTable kStale = {
    cujit::detail::kAnalysisAbiVersion + 1000, sizeof(cujit::detail::SnippetSet),
    sizeof(cujit::detail::AnalysisOutcome), &never_called};

}  // namespace

extern "C" __attribute__((visibility("default"))) const cujit::detail::AnalysisTable*
cujit_analysis_entry_v1() {
  return &kStale;
}
