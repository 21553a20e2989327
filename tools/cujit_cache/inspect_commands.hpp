#pragma once
// cujit-cache's commands that read a database: ls, info, show and verify. Each returns the
// tool's exit status and throws cujit::Error for what the tool reports with exit status 2.

#include "tools/cujit_cache/tool_options.hpp"

#include <string>

namespace cujit::tool {

/// Lists the entries (only those of `kernel` when not empty). Without --db and before anything
/// was cached, the user cache does not exist yet: an empty listing, not an error. Returns 0.
int ls(const Options& o, const std::string& kernel);

/// Prints the database's counters, size and entries per target and kind. Returns 0.
int info(const Options& o);

/// Prints the entry of `key` (a content or request key, or a prefix), with its generated
/// source when `with_source`. Returns 1 when there is none or it is damaged, else 0.
int show(const Options& o, const std::string& key, bool with_source);

/// Checks integrity and every checksum, deleting damaged entries when `fix`; with
/// `trusted_keys` (--trusted-keys a.pub:b.pub), also every signature. Returns 1 when anything
/// is left wrong, else 0.
int verify(const Options& o, bool fix, const std::string& trusted_keys);

}  // namespace cujit::tool
