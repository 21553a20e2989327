#pragma once
// cujit-cache's commands that change a database: prune, export, import and clear. Each returns
// the tool's exit status and throws cujit::Error for what the tool reports with exit status 2.

#include "tools/cujit_cache/tool_options.hpp"

#include <string>
#include <vector>

namespace cujit::tool {

/// Removes entries beyond `max_size` (least recently used first), unused for `older_than`, for
/// the targets in `archs` (comma-separated lists) or, when `stale`, of another NVRTC or codegen
/// version. Throws ArgumentError when a value does not parse or none is given. Returns 0.
int prune(const Options& o, const std::string& max_size, const std::string& older_than,
          const std::vector<std::string>& archs, bool stale);

/// Copies every intact entry into the database `out` (created when missing, refused by
/// check_output) and finalises it for deployment. Returns 1 when damaged entries were skipped.
int export_to(const Options& o, const std::string& out);

/// Copies every intact entry of the database `in` into --db (created when missing). Returns 1
/// when damaged entries were skipped.
int import_from(const Options& o, const std::string& in);

/// Removes every entry. `yes` (--yes): confirmed; on a terminal, clear asks for it (throws
/// ArgumentError without it); scripts (stdin not a terminal) clear as before. Returns 0.
int clear(const Options& o, bool yes);

}  // namespace cujit::tool
