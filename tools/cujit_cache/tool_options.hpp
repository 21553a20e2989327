#pragma once
// The options every cujit-cache command shares (--db, --json, --force, --allow-foreign) and the
// helpers the command files build on them.

#include "cache/sqlite_store.hpp"

#include <string>
#include <vector>

namespace cujit::tool {

/// The tool's shared options, filled in by the command line's parse.
struct Options {
  std::string db;              ///< --db; empty: the user cache
  bool json = false;           ///< --json: machine-readable output
  bool force = false;          ///< --force: replace an output file that is not a cujit database
  bool allow_foreign = false;  ///< --allow-foreign: open databases of another owner
};

/// The database the command works on: --db, or the user cache's kernels.db.
std::string db_path(const Options& o);

/// How the commands open databases: --allow-foreign, and never evicting (maintenance never
/// evicts behind the user's back).
detail::StoreOptions store_options(const Options& o);

/// The items of a comma-separated list ("sm_80, sm_90"), trimmed, empty ones dropped.
std::vector<std::string> split_list(const std::string& text);

/// Refuses to write a database over `path` when it exists and is not an SQLite database (unless
/// --force): a typo must not move a manifest or any other file aside and put a database in its
/// place. Throws ArgumentError.
void check_output(const Options& o, const std::string& path);

}  // namespace cujit::tool
