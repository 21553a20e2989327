#pragma once
// cujit-cache's commands for the fleet tier (a Redis server shared by many hosts, issue 19):
//
//   cujit-cache [--db DB] push [--remote URL] [--sign KEYFILE]      seed the server from a database
//   cujit-cache pull [--remote URL] [--trusted-keys a.pub:b.pub | --trust-any] -o OUT.db
//   cujit-cache ls --remote [URL] [--trusted-keys ...] | info --remote [URL]
//
// URL defaults to $CUJIT_CACHE_REMOTE, --sign to $CUJIT_CACHE_SIGNING_KEY and --trusted-keys to
// $CUJIT_CACHE_TRUSTED_KEYS, as for the library. Everything read from the server is untrusted:
// values are read bounded, decoded defensively and verified like the runtime tier does.

#include "cache/sqlite_store.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

namespace cujit::tool {

/// What the remote commands take from the tool's shared options.
struct ToolContext {
  std::string db_path;         ///< --db, or the user cache
  bool json = false;           ///< --json
  detail::StoreOptions store;  ///< how databases are opened
  /// Refuses to write over an output that is not a cujit database (unless --force): throws.
  std::function<void(const std::string&)> check_output;
};

/// The push and pull subcommands and the --remote option of ls and info. Lives as long as the
/// parse; not thread-safe.
class RemoteCommands {
 public:
  /// Registers push and pull on `app`, and --remote (with its options) on `ls` and `info`.
  /// `json` and `db` are the tool's flags, accepted after push and pull too.
  RemoteCommands(CLI::App& app, CLI::App& ls, CLI::App& info, bool& json, std::string& db);

  /// Runs the command the parsed command line chose when it is one of these (its exit status:
  /// 0 done, 1 done with entries skipped or refused); nullopt when it is none of them. Throws
  /// cujit::Error (ArgumentError for a missing URL or trust, RedisError, CacheError): the tool
  /// reports it and exits with 2.
  std::optional<int> run(const ToolContext& context) const;

  /// Values of the options, filled in by the parse.
  struct Args {
    std::string url;  ///< empty: $CUJIT_CACHE_REMOTE
    int timeout_ms = 10000;
    std::string sign;
    std::string trusted;
    bool trust_any = false;
    std::string output;
  };

 private:
  void add_push(CLI::App& app, bool& json, std::string& db);
  void add_pull(CLI::App& app, bool& json, std::string& db);
  void add_inspection(CLI::App& ls, CLI::App& info);

  Args args_;
  CLI::App* push_ = nullptr;
  CLI::App* pull_ = nullptr;
  CLI::Option* ls_remote_ = nullptr;
  CLI::Option* info_remote_ = nullptr;
};

}  // namespace cujit::tool
