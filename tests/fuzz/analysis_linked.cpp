// The fuzzers link the clang analyser into their own binary, instrumented for coverage, so
// their analysis_table() hands out the linked-in module entry instead of loading
// libcujit-analysis.so (codegen/analysis_loader.cpp, which they do not build).
#include "codegen/analysis_loader.hpp"

namespace cujit::detail {

const AnalysisTable* analysis_table() noexcept { return cujit_analysis_entry_v1(); }

}  // namespace cujit::detail
