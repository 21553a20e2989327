#pragma once
// The interface between libcujit.so and libcujit-analysis.so, the separately loaded clang
// snippet analyser (analysis/): the module exports one C function that returns a table.
//
// Both sides are built from one tree and installed side by side, so the C++ types of
// snippet_analysis.hpp cross the boundary as they are (both use the shared libstdc++); the
// version number and the sizes in the table turn a stale module left beside a newer library
// into "no analyser" instead of a crash. Bump kAnalysisAbiVersion on any change to this file
// or to SnippetSet, SnippetReport or PreludeMode. No exception crosses the boundary: the
// module catches everything and describes it in an AnalysisOutcome, and libcujit rethrows
// it, so that callers catch exactly the classes libcujit exports (the module's copies of
// them are hidden inside it).

#include "codegen/snippet_analysis.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace cujit::detail {

inline constexpr std::uint32_t kAnalysisAbiVersion = 1;
/// The module's file name, looked for beside libcujit.so (or the program linking cujit
/// statically), then in the install's library directory (analysis_loader.cpp).
inline constexpr const char* kAnalysisModuleFile = "libcujit-analysis.so";
/// The name of its entry point (cujit_analysis_entry_v1 below).
inline constexpr const char* kAnalysisEntryName = "cujit_analysis_entry_v1";

/// What one analysis gave: a report, or the exception analyze_snippets throws, as data.
struct AnalysisOutcome {
  enum class Kind : std::uint32_t { Report, CompileError, ArgumentError, OutOfMemory, Internal };
  Kind kind = Kind::Internal;
  SnippetReport report;  ///< Kind::Report
  std::string message;   ///< every other kind: the exception's what()
  /// Kind::CompileError: the rest of CompileError.
  std::string log;
  std::vector<std::string> options;
  std::string source;
  int line = 0;
  int column = 0;
};

/// The module's functions. Static storage in the module: valid while it is loaded (always,
/// as libcujit never unloads it).
struct AnalysisTable {
  std::uint32_t abi_version;    ///< the module's kAnalysisAbiVersion
  std::uint32_t set_bytes;      ///< sizeof(SnippetSet) in the module
  std::uint32_t outcome_bytes;  ///< sizeof(AnalysisOutcome) in the module
  /// analyze_snippets(set, mode) on the calling thread, whose stack must be large
  /// (kCompilerStackBytes); fills `outcome`. Thread-safe; never throws.
  void (*analyze)(const SnippetSet& set, PreludeMode mode, AnalysisOutcome& outcome) noexcept;
};

}  // namespace cujit::detail

/// The module's only exported symbol: its table.
extern "C" const cujit::detail::AnalysisTable* cujit_analysis_entry_v1();
