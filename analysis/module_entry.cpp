// The entry point of libcujit-analysis.so, its only exported symbol (codegen/analysis_abi.hpp
// describes the interface).
//
// The module does not link libcujit.so: everything it needs is in it (clang, LLVM, the
// analyser, the pure snippet_format.cpp, the header-only exception classes), so it loads on
// its own, needs no RUNPATH, holds no second copy of libcujit's global state, and can be
// checked with -z defs to stay that way.

#include "codegen/analysis_abi.hpp"

#include "analysis/snippet_analyser.hpp"

#include <cujit/error.hpp>

#include <exception>
#include <new>

namespace cujit::detail {
namespace {

using Kind = AnalysisOutcome::Kind;

void record_compile_error(const CompileError& e, AnalysisOutcome& out) {
  out.kind = Kind::CompileError;
  out.message = e.what();
  out.log = e.log();
  out.options = e.options();
  out.source = e.source();
  out.line = e.line();
  out.column = e.column();
}

void analyze(const SnippetSet& set, PreludeMode mode, AnalysisOutcome& out) noexcept {
  try {
    try {
      out.report = analyze_with_clang(set, mode);
      out.kind = Kind::Report;
    } catch (const CompileError& e) {
      record_compile_error(e, out);
    } catch (const ArgumentError& e) {
      out.kind = Kind::ArgumentError;
      out.message = e.what();
    } catch (const std::bad_alloc&) {
      out.kind = Kind::OutOfMemory;
    } catch (const std::exception& e) {
      out.kind = Kind::Internal;
      out.message = e.what();
    } catch (...) {
      out.kind = Kind::Internal;
      out.message = "an exception of unknown type";
    }
  } catch (...) {
    out.kind = Kind::OutOfMemory;  // copying the error's text failed
  }
}

constexpr AnalysisTable kTable = {kAnalysisAbiVersion, sizeof(SnippetSet), sizeof(AnalysisOutcome),
                                  &analyze};

}  // namespace
}  // namespace cujit::detail

extern "C" __attribute__((visibility("default"))) const cujit::detail::AnalysisTable*
cujit_analysis_entry_v1() {
  return &cujit::detail::kTable;
}
