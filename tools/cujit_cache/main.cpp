// cujit-cache: inspect, maintain and build cujit kernel-cache databases.
//
//   cujit-cache precompile manifest.jsonl --arch sm_80,sm_86,sm_90 [--ptx] -o app.db -j 8
//               [--sign builder.key]
//   cujit-cache [--db PATH] ls | info | show KEY [--source]
//   cujit-cache [--db PATH] verify [--fix] [--trusted-keys a.pub:b.pub]
//   cujit-cache [--db PATH] prune [--max-size 512M] [--older-than 30d] [--arch sm_70]
//   cujit-cache [--db PATH] export OUT.db | import IN.db | clear
//   cujit-cache [--db PATH] sign --key builder.key | keygen PREFIX
//   cujit-cache [--db PATH] push | pull -o OUT.db | ls --remote | info --remote  (the fleet tier's
//   Redis server: remote_commands.hpp)
// Every command takes --json for machine-readable output; --db, --json and --allow-foreign go
// before or after the command. Exit status: 0 done, 1 done but something was wrong (damaged
// entries, failed manifest entries, no such key), 2 an error, a command line that does not
// parse included (with --json, an {"error": ...} object on stdout).
//
// This file builds the command line and dispatches; the commands live by group in
// precompile_command, inspect_commands, maintain_commands, signing and remote_commands.

#include "cache/record.hpp"
#include "core/version.hpp"
#include "tools/cujit_cache/inspect_commands.hpp"
#include "tools/cujit_cache/maintain_commands.hpp"
#include "tools/cujit_cache/precompile_command.hpp"
#include "tools/cujit_cache/remote_commands.hpp"
#include "tools/cujit_cache/signing.hpp"
#include "tools/cujit_cache/tool_options.hpp"
#include "tools/cujit_cache/tool_util.hpp"

#include <cujit/cache.hpp>
#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace cujit::tool {
namespace {

// --version: this tool's libcujit, the generated code and record format it writes, and the
// NVRTC it would compile with (when one can be loaded here).
std::string version_text() {
  std::string nvrtc;
  try {
    nvrtc = "NVRTC " + nvrtc_version();
  } catch (const Error& e) {
    nvrtc = "NVRTC not available here (" + std::string(e.what()) + ")";
  }
  return fmt::format("cujit-cache (cujit {})\ncodegen version {}, record format {}\n{}",
                     detail::library_version(), detail::kCodegenVersion,
                     detail::kRecordFormatVersion, nvrtc);
}

// Every subcommand, registered on one CLI::App in the order --help lists them, with the values
// the parse fills in; dispatch() runs the one chosen. Lives as long as the parse.
class CommandLine {
 public:
  explicit CommandLine(CLI::App& app) {
    add_shared(app);
    add_precompile(app);
    add_inspection(app);
    add_maintenance(app);
    add_signing(app);
    remote_.emplace(app, *ls_, *info_, o_.json, o_.db);
  }

  // The chosen command's exit status; throws what the command throws.
  int dispatch() const {
    const ToolContext context{db_path(o_), o_.json, store_options(o_),
                              [this](const std::string& path) { check_output(o_, path); }};
    if (auto status = remote_->run(context)) return *status;
    if (*precompile_) return precompile(o_, pa_);
    if (*ls_) return ls(o_, kernel_filter_);
    if (*info_) return info(o_);
    if (*show_) return show(o_, key_, with_source_);
    if (*verify_) return verify(o_, fix_, trusted_keys_);
    if (*prune_) return prune(o_, max_size_, older_than_, prune_archs_, stale_);
    if (*export_) return export_to(o_, other_);
    if (*import_) return import_from(o_, other_);
    if (*clear_) return clear(o_, yes_);
    if (*keygen_) return keygen(o_, key_prefix_);
    if (*sign_) return sign(o_, sign_key_);
    return 0;
  }

  const Options& options() const { return o_; }

 private:
  void add_shared(CLI::App& app);
  void add_precompile(CLI::App& app);
  void add_inspection(CLI::App& app);
  void add_maintenance(CLI::App& app);
  void add_signing(CLI::App& app);
  void add_json(CLI::App& command) {
    command.add_flag("--json", o_.json, "machine-readable output");
  }

  Options o_;
  PrecompileArgs pa_;
  std::string kernel_filter_;
  std::string key_;
  bool with_source_ = false;
  bool fix_ = false;
  std::string trusted_keys_;
  std::string max_size_;
  std::string older_than_;
  std::vector<std::string> prune_archs_;
  bool stale_ = false;
  std::string other_;  // export's output, import's input
  bool yes_ = false;
  std::string key_prefix_;
  std::string sign_key_;
  CLI::App* precompile_ = nullptr;
  CLI::App* ls_ = nullptr;
  CLI::App* info_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* verify_ = nullptr;
  CLI::App* prune_ = nullptr;
  CLI::App* export_ = nullptr;
  CLI::App* import_ = nullptr;
  CLI::App* clear_ = nullptr;
  CLI::App* keygen_ = nullptr;
  CLI::App* sign_ = nullptr;
  std::optional<RemoteCommands> remote_;
};

void CommandLine::add_shared(CLI::App& app) {
  app.add_option(
      "--db", o_.db,
      "cache database (default: the user cache, " + default_cache_directory() + "/kernels.db)");
  app.add_flag("--json", o_.json, "machine-readable output");
  app.add_flag("--allow-foreign", o_.allow_foreign,
               "open databases owned by another user or writable by others");
}

void CommandLine::add_precompile(CLI::App& app) {
  auto* pre = app.add_subcommand("precompile", "compile every manifest entry for every target");
  precompile_ = pre;
  pre->add_option("manifest", pa_.manifest, "manifest recorded with CUJIT_RECORD")->required();
  pre->add_option("--arch", pa_.archs, "targets, e.g. sm_80,sm_86,sm_90 or compute_90")->required();
  pre->add_flag("--ptx", pa_.ptx, "also build PTX (compute_XY) for every sm_XY target");
  pre->add_option("-o,--output", pa_.output, "output database")->required();
  pre->add_option("-j,--jobs", pa_.jobs, "parallel compilations (default: all cores)");
  pre->add_flag("--threads", pa_.threads,
                "compile in threads of one process instead of worker processes (NVRTC "
                "serialises much of a compilation within a process)");
  pre->add_option("--sign", pa_.sign_key,
                  "sign every entry and request mapping of the output with this secret key file "
                  "(cujit-cache keygen), for readers with CUJIT_CACHE_REQUIRE_SIGNED=1; "
                  "CUJIT_CACHE_SIGNING_KEY is not used here: a database is signed only when "
                  "asked");
  add_json(*pre);
  pre->add_flag("--force", o_.force, "replace an output file that is not a cujit database");
}

void CommandLine::add_inspection(CLI::App& app) {
  ls_ = app.add_subcommand("ls", "list entries");
  add_json(*ls_);
  ls_->add_option("--kernel", kernel_filter_, "only the entries of this kernel");
  info_ = app.add_subcommand("info", "counters, size, entries per target and kind");
  add_json(*info_);

  show_ = app.add_subcommand("show", "show one entry");
  show_->add_option("key", key_, "content or request key, or a prefix of 4+ digits")->required();
  show_->add_flag("--source", with_source_, "print the generated source");
  add_json(*show_);

  verify_ = app.add_subcommand("verify", "check integrity and every checksum");
  verify_->add_flag("--fix", fix_, "delete damaged entries");
  verify_->add_option("--trusted-keys", trusted_keys_,
                      "also check that every entry and request mapping is signed by one of "
                      "these public key files (a.pub:b.pub); fails unless all are");
  add_json(*verify_);
}

void CommandLine::add_maintenance(CLI::App& app) {
  prune_ = app.add_subcommand("prune", "remove entries by size, age or target");
  prune_->add_option("--max-size", max_size_, "evict least recently used beyond, e.g. 512M");
  prune_->add_option("--older-than", older_than_, "remove entries unused for, e.g. 30d");
  prune_->add_option("--arch", prune_archs_, "remove entries for these targets");
  prune_->add_flag("--stale", stale_,
                   "remove entries of another NVRTC or codegen version (unreachable)");
  add_json(*prune_);

  export_ = app.add_subcommand("export", "copy entries into another database");
  export_->add_option("output", other_, "destination database")->required();
  add_json(*export_);
  export_->add_flag("--force", o_.force, "replace an output file that is not a cujit database");
  import_ = app.add_subcommand("import", "copy entries from another database");
  import_->add_option("input", other_, "source database")->required();
  add_json(*import_);
  clear_ = app.add_subcommand("clear", "remove every entry");
  add_json(*clear_);
  clear_->add_flag("--yes", yes_, "confirm (needed when stdin is a terminal)");
}

void CommandLine::add_signing(CLI::App& app) {
  keygen_ = app.add_subcommand("keygen", "write an Ed25519 key pair for signing entries");
  keygen_->add_option("prefix", key_prefix_, "writes PREFIX.key and PREFIX.pub")->required();
  keygen_->add_flag("--force", o_.force, "replace existing key files");
  add_json(*keygen_);
  sign_ = app.add_subcommand(
      "sign", "sign every entry and request mapping of a database (replacing older signatures)");
  sign_->add_option("--key", sign_key_, "secret key file (cujit-cache keygen)")->required();
  add_json(*sign_);
}

// Reports an error the way every command does (exit status 2).
int report_error(bool json, std::string m) {
  if (m.rfind("cujit: ", 0) == 0) m.erase(0, 7);
  if (m.rfind("cujit-cache: ", 0) == 0) m.erase(0, 13);
  if (json) {
    print_json({{"error", m}});
  } else {
    std::cerr << "cujit-cache: error: " << m << "\n";
  }
  return 2;
}

// A command line that does not parse: an error like any other (exit status 2, JSON with --json
// anywhere on the line), naming an unknown command and where usage is.
int usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  bool json = false;
  std::string unknown;
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    json = json || arg == "--json";
    const bool value_of_db = k > 1 && std::string(argv[k - 1]) == "--db";
    const auto named = [&arg](CLI::App* command) { return command->check_name(arg); };
    if (unknown.empty() && !value_of_db && arg.rfind('-', 0) != 0 &&
        app.get_subcommands(named).empty()) {
      unknown = arg;
    }
  }
  std::string m = e.what();
  if (!unknown.empty() && m == "A subcommand is required") {
    m = "unknown command '" + unknown + "'";
  }
  return report_error(json, m + " (cujit-cache --help lists the commands, cujit-cache COMMAND "
                                "--help their options)");
}

int run(int argc, char** argv) {
  CLI::App app{"cujit-cache: inspect, maintain and build cujit kernel-cache databases"};
  app.require_subcommand(1);
  app.fallthrough();  // --db, --json and --allow-foreign also after the command
  app.set_version_flag("--version", version_text);
  CommandLine commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return usage_error(app, e, argc, argv);
  }
  try {
    return commands.dispatch();
  } catch (const std::exception& e) {  // cujit::Error, and anything else: never terminate
    return report_error(commands.options().json, e.what());
  }
}

}  // namespace
}  // namespace cujit::tool

int main(int argc, char** argv) { return cujit::tool::run(argc, argv); }
