#pragma once
// The headers a compilation may read from disk, as part of its cache keys. NVRTC cannot report
// the files it read, so cujit finds them the way the preprocessor would, over-approximating:
// every `#include` line of the program and of every header found (conditionals are not
// evaluated, so a header behind `#if 0` counts too), each name looked up in every place it could
// come from (the including file's directory, or the working directory for the program itself,
// then each -I/--include-path directory, in-memory headers first), and every file that exists
// there hashed with its path. Headers of the toolkit that NVRTC itself supplies are not on those
// paths; they belong to the compiler's identity, as today. `#include MACRO` cannot be followed
// and is not keyed (documented).
//
// Editing a header found through -I thus changes the request and content keys: the next
// process compiles again instead of serving the binary built from the old header.

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace cujit::detail {

/// Bounds on what one digest reads (a hostile include tree must not exhaust the process).
struct IncludeLimits {
  std::size_t max_files = 4096;
  std::size_t max_file_bytes = std::size_t{16} << 20;
  std::size_t max_total_bytes = std::size_t{256} << 20;
};

/// The digest (64 hex digits) of every on-disk header `texts` (the program, and what it is
/// compiled with) may include under compile `options` (-I/--include-path directories,
/// -include/--pre-include headers); empty when none exists, so that programs without on-disk
/// headers keep their keys. `memory_headers` (name, text) are found before the disk, and their
/// own includes are followed. Throws ArgumentError naming `who` beyond `limits`.
/// `main_file`: the program's file name (its directory is where quoted includes of `texts` are
/// looked for besides the working directory); empty or a bare name: the working directory.
std::string include_digest(const std::vector<std::string>& texts,
                           const std::vector<std::string>& options,
                           const std::vector<std::pair<std::string, std::string>>& memory_headers,
                           const std::string& who, const std::string& main_file = "",
                           const IncludeLimits& limits = {});

/// The include directories and pre-included headers of NVRTC `options`, in order: "-I<dir>",
/// "-I <dir>", "--include-path=<dir>" or a separate entry after "-I"/"--include-path"; the
/// same for "-include"/"--pre-include".
struct IncludeOptions {
  std::vector<std::string> directories;
  std::vector<std::string> pre_includes;
};
IncludeOptions include_options(const std::vector<std::string>& options);

/// The names of the `#include "..."` and `#include <...>` lines of `text`, with whether each
/// was quoted, in order (`#include_next` too; a computed `#include MACRO` is skipped, and sets
/// `*computed` when given).
std::vector<std::pair<std::string, bool>> include_names(const std::string& text,
                                                         bool* computed = nullptr);

}  // namespace cujit::detail
