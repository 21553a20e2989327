#pragma once
// Finds and loads libcujit-analysis.so, the clang snippet analyser, on the first analysis (the
// compiler is optional at run time: a process whose kernels all come from a cache never maps
// clang).

#include "codegen/analysis_abi.hpp"

namespace cujit::detail {

/// The analyser's table, loaded on the first call and kept for the life of the process: from
/// the file the environment variable CUJIT_ANALYSIS_PATH names when it is set and not empty
/// (that file only), else from libcujit-analysis.so in the directory of the libcujit.so that
/// is running. Null when it cannot be loaded (absent, not loadable, another interface version);
/// the first such call writes one "cujit: info:" line to stderr. Thread-safe; never throws.
const AnalysisTable* analysis_table() noexcept;

}  // namespace cujit::detail
