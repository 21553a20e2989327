#pragma once
// The compile errors of programs that failed to compile in this process: asked for again (a
// retry loop, a notebook cell run twice), such a program fails again at once, with the same
// error, and NVRTC is not run again (issue 35). Only errors located in the user's code are
// kept: they are the program's own.

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <mutex>
#include <string>
#include <unordered_map>

namespace cujit::detail {

/// Compile errors by the failed program's key (its request and content keys). Thread-safe.
class RecentFailures {
 public:
  /// Most errors kept; when full, all are forgotten before the next is kept.
  static constexpr std::size_t kMaxKept = 256;

  /// Keeps `error` as the outcome of compiling the program of `key` when it points at a line
  /// of the user's code: such an error comes back for the same program, options, compiler and
  /// headers (which the key covers). Errors without a line (NVRTC out of memory, say) may not,
  /// and are not kept.
  void remember(const std::string& key, const CompileError& error);
  /// Whether a failure of `program` may be remembered: not when it computes an include
  /// (`#include MACRO`), whose file no key covers, so a fix to it must be seen.
  static bool rememberable(const SourceProgram& program);
  /// Throws (a copy of) the error kept for `key`, if any.
  void rethrow_if_known(const std::string& key) const;

 private:
  mutable std::mutex mutex_;
  std::unordered_map<std::string, CompileError> errors_;
};

}  // namespace cujit::detail
