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
// Every command takes --json for machine-readable output.

#include "cache/compiler_identity.hpp"
#include "cache/database_admin.hpp"
#include "cache/database_files.hpp"
#include "cache/entry_signature.hpp"
#include "support/json_text.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "cache/record.hpp"
#include "support/sha256.hpp"
#include "cache/sqlite_store.hpp"
#include "cache/units.hpp"
#include "core/checked_file.hpp"
#include "core/version.hpp"
#include "tools/cujit_cache/precompile_jobs.hpp"
#include "tools/cujit_cache/remote_commands.hpp"
#include "tools/cujit_cache/signing.hpp"
#include "tools/cujit_cache/tool_util.hpp"

#include <cujit/cache.hpp>
#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

namespace cujit::tool {
namespace {

using detail::DatabaseAdmin;
using detail::SqliteStore;
using nlohmann::json;

struct Options {
  std::string db;
  bool json = false;
  bool force = false;  // replace an output file that is not a cujit database
  bool allow_foreign = false;
};

std::string db_path(const Options& o) {
  return o.db.empty() ? default_cache_directory() + "/kernels.db" : o.db;
}

detail::StoreOptions store_options(const Options& o) {
  detail::StoreOptions s;
  s.allow_foreign_owner = o.allow_foreign;
  s.max_size = 0;  // maintenance never evicts behind the user's back
  return s;
}

std::string first_lines(const std::string& text, int lines) {
  std::size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos == 0 ? 0 : pos + 1);
  }
  return pos == std::string::npos ? text : text.substr(0, pos) + "\n    ...";
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    start = comma + 1;
  }
  return out;
}

json summary_json(const detail::RecordSummary& r) {
  return {{"key", r.content_key},
          {"name", r.name},
          {"kind", r.kind},
          {"target", r.target},
          {"record_size", r.record_size},
          {"binary_size", r.binary_size},
          {"source_size", r.source_size},
          {"created", iso_time(r.created)},
          {"last_used", iso_time(r.last_used)}};
}

// ---- precompile -------------------------------------------------------------------------

struct PrecompileArgs {
  std::string manifest;
  std::vector<std::string> archs;
  bool ptx = false;
  std::string output;
  unsigned jobs = 0;
  bool threads = false;
  std::string sign_key;  // --sign: secret key file; empty: the output is not signed
};

std::vector<Target> targets_of(const PrecompileArgs& a) {
  std::vector<Target> out;
  auto add = [&](const Target& t) {
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  };
  for (const auto& list : a.archs) {
    for (const auto& name : split_list(list)) {
      Target t = Target::parse(name);
      add(t);
      if (a.ptx && t.format == BinaryFormat::Cubin) add(Target{t.arch, BinaryFormat::Ptx});
    }
  }
  if (out.empty()) throw ArgumentError("cujit-cache: --arch names no target");
  return out;
}

// An output that exists must be an SQLite database (cujit's own, or empty) unless --force: a
// typo must not move a manifest or any other file aside and put a database in its place. An
// SQLite database that is not cujit's is refused later, when it is opened, and left untouched.
void check_output(const Options& o, const std::string& path) {
  if (o.force) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return;  // missing: created; unreadable: opening it reports why
  char header[16] = {};
  const ssize_t n = ::read(fd, header, sizeof header);
  ::close(fd);
  if (n == 0 || (n == 16 && std::memcmp(header, "SQLite format 3", 16) == 0)) return;
  throw ArgumentError("cujit-cache: output " + path +
                      " exists and is not an SQLite database; not replaced (pass --force to move "
                      "it aside and start a new database there)");
}

json sign_json(const DatabaseAdmin::SignOutcome& s, const detail::SigningKey& key) {
  return {{"entries", s.entries},
          {"requests", s.requests},
          {"damaged_skipped", s.damaged},
          {"key_id", detail::key_id(key.public_key)}};
}

std::string sign_text(const std::string& path, const DatabaseAdmin::SignOutcome& s,
                      const detail::SigningKey& key) {
  std::string out = fmt::format("signed {} entries and {} request mappings of {} with key {}\n",
                                s.entries, s.requests, path, detail::key_id(key.public_key));
  if (s.damaged > 0) {
    out += fmt::format("skipped {} damaged entries (run cujit-cache verify on it)\n", s.damaged);
  }
  return out;
}

// Removes a database with SQLite's side files and its leases folder.
void remove_database(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
  ::rmdir((path + ".leases").c_str());  // only when empty
}

// Copies every intact entry of `from`, with its request keys and signatures, into `to`; an
// entry or request `to` has already is kept as it is.
void copy_entries(SqliteStore& from, SqliteStore& to) {
  DatabaseAdmin source(from);
  DatabaseAdmin destination(to);
  const std::map<std::string, std::string> signatures = source.signatures();
  source.for_each_record([&](const detail::CacheRecord& r, const std::vector<std::string>& keys) {
    destination.import_record(r, keys, signatures);
  });
}

// Precompiles into a database that only this process writes, beside the output, so that
// concurrent precompiles into one path neither lock each other out nor report entries another
// process removes. It starts as a copy of the output when there is one (what is present is not
// compiled again) and is published at the end: renamed into place when the output does not
// exist, else merged into it. Seeding and publishing hold an flock on the output's directory
// (between precompiles only, held for the copy alone, and leaving no lock file behind).
// Removed with its side files when destroyed.
class PrivateDatabase {
 public:
  PrivateDatabase(std::string output, detail::StoreOptions options)
      : output_(std::move(output)), options_(std::move(options)) {
    const std::size_t slash = output_.find_last_of('/');
    directory_ = slash == std::string::npos ? "." : slash == 0 ? "/" : output_.substr(0, slash);
    detail::create_private_directories(directory_);
    path_ = directory_ + "/." + output_.substr(slash + 1) + ".precompile-XXXXXX";
    const int fd = ::mkostemp(path_.data(), O_CLOEXEC);
    if (fd < 0) {
      throw CacheError("cujit-cache: cannot create a database beside " + output_ + ": " +
                       std::strerror(errno));
    }
    ::close(fd);
    try {
      const DirectoryLock lock(directory_);
      auto work = SqliteStore::open_writable(path_, options_);
      struct stat st {};
      if (::lstat(output_.c_str(), &st) == 0)
        copy_entries(*SqliteStore::open_writable(output_, options_), *work);
    } catch (...) {
      remove_database(path_);
      throw;
    }
  }
  PrivateDatabase(const PrivateDatabase&) = delete;
  PrivateDatabase& operator=(const PrivateDatabase&) = delete;
  ~PrivateDatabase() { remove_database(path_); }

  const std::string& path() const { return path_; }

  // Signs (with `key`, when given) and finalises what the output will hold, and publishes it;
  // returns what signing did.
  DatabaseAdmin::SignOutcome publish(const detail::SigningKey* key) {
    const DirectoryLock lock(directory_);
    struct stat st {};
    const bool merge = ::lstat(output_.c_str(), &st) == 0;
    DatabaseAdmin::SignOutcome signed_entries;
    {
      auto out = SqliteStore::open_writable(merge ? output_ : path_, options_);
      if (merge) copy_entries(*SqliteStore::open_writable(path_, options_), *out);
      DatabaseAdmin admin(*out);
      if (key != nullptr) signed_entries = sign_database(admin, *key);  // what was there too
      admin.finalize_for_deployment();
    }
    if (!merge) {
      // mkostemp made it 0600; a deployment database is read by others, as SQLite creates it.
      const mode_t mask = ::umask(0);
      ::umask(mask);
      if (::chmod(path_.c_str(), 0666 & ~mask) != 0 ||
          std::rename(path_.c_str(), output_.c_str()) != 0) {
        throw CacheError("cujit-cache: cannot move the new database to " + output_ + ": " +
                         std::strerror(errno));
      }
    }
    return signed_entries;
  }

 private:
  // An exclusive flock on a directory while alive (none where the filesystem has no flock).
  class DirectoryLock {
   public:
    explicit DirectoryLock(const std::string& directory)
        : fd_(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
      while (fd_.valid() && ::flock(fd_.get(), LOCK_EX) != 0 && errno == EINTR) {
      }
    }

   private:
    detail::FileDescriptor fd_;  // closing it releases the lock
  };

  std::string output_;
  detail::StoreOptions options_;
  std::string directory_;
  std::string path_;
};

// `stored`: whether any kernel was compiled into the output.
int precompile_into(const Options& o, const PrecompileArgs& a, bool& stored) {
  auto started = std::chrono::steady_clock::now();
  std::vector<std::size_t> lines;
  std::vector<std::string> entries = detail::read_manifest(a.manifest, &lines);
  check_output(o, a.output);
  // Read before compiling: an unusable key fails the command before any work.
  std::optional<detail::SigningKey> key;
  if (!a.sign_key.empty()) key = detail::read_signing_key(a.sign_key);
  std::vector<Target> targets = targets_of(a);
  PrivateDatabase work(a.output, store_options(o));
  CacheConfig config;
  config.database_path = work.path();
  config.max_size = 0;
  config.allow_foreign_owner = o.allow_foreign;

  const std::size_t total = entries.size() * targets.size();
  unsigned jobs = a.jobs != 0 ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, std::max<std::size_t>(total, 1)));
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  Progress progress(total, terminal && !o.json, !terminal);
  Tally tally(entries, lines, targets, progress);
  if (a.threads || jobs == 1) {
    run_in_threads(config, entries, targets, jobs, tally);
  } else {
    run_in_processes(config, entries, targets, jobs, tally);
  }
  std::vector<Failure>& failures = tally.failures();
  std::sort(failures.begin(), failures.end(), [](const Failure& x, const Failure& y) {
    return std::tie(x.entry, x.target) < std::tie(y.entry, y.target);
  });
  std::size_t compiled = tally.compiled();
  std::size_t present = tally.present();
  stored = compiled > 0;
  std::optional<DatabaseAdmin::SignOutcome> signed_entries;
  // A run that failed and compiled nothing has nothing to add: the output stays as it was.
  if (stored || failures.empty()) signed_entries = work.publish(key ? &*key : nullptr);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  if (o.json) {
    json j = {{"database", a.output}, {"manifest", a.manifest},   {"entries", entries.size()},
              {"jobs", jobs},         {"compiled", compiled},     {"already_present", present},
              {"seconds", seconds},   {"targets", json::array()}, {"failed", json::array()}};
    for (const auto& t : targets) j["targets"].push_back(t.name());
    if (key && signed_entries) j["signed"] = sign_json(*signed_entries, *key);
    for (const auto& f : failures) {
      j["failed"].push_back({{"entry", f.entry},
                             {"line", f.line},
                             {"kind", f.kind},
                             {"target", f.target},
                             {"error", f.error}});
    }
    print_json(j);
  } else {
    std::string names;
    for (const auto& t : targets) names += (names.empty() ? "" : ",") + t.name();
    std::cout << fmt::format(
        "precompiled {} entries x {} targets ({}) into {} with {} jobs in {:.1f} s: {} "
        "compiled, {} already present, {} failed\n",
        entries.size(), targets.size(), names, a.output, jobs, seconds, compiled, present,
        failures.size());
    if (key && signed_entries) std::cout << sign_text(a.output, *signed_entries, *key);
    for (const auto& f : failures) {
      std::cerr << fmt::format("cujit-cache: failed: line {} ({}) for {}: {}\n", f.line, f.kind,
                               f.target, first_lines(f.error, 4));
    }
  }
  return failures.empty() ? 0 : 1;
}

// A precompile that fails leaves no new file behind: nothing is written at the output before
// its database is published, and a run with failures and nothing compiled publishes nothing.
int precompile(const Options& o, const PrecompileArgs& a) {
  struct stat st {};
  const bool existed = ::lstat(a.output.c_str(), &st) == 0;
  bool stored = false;
  const int rc = precompile_into(o, a, stored);
  if (!existed && rc != 0 && !stored) {
    std::cerr << "cujit-cache: nothing was compiled; " << a.output << " was not created\n";
  }
  return rc;
}

// ---- inspection and maintenance ---------------------------------------------------------

// True when `names` (kernel_names' "a,b") holds `kernel`.
bool names_kernel(const std::string& names, const std::string& kernel) {
  return ("," + names + ",").find("," + kernel + ",") != std::string::npos;
}

// `kernel` (--kernel): only the entries of that kernel. Without --db and before anything was
// cached, the user cache does not exist yet: an empty listing, not an error.
int ls(const Options& o, const std::string& kernel) {
  std::vector<detail::RecordSummary> records;
  struct stat st {};
  if (!o.db.empty() || ::stat(db_path(o).c_str(), &st) == 0) {
    records = DatabaseAdmin(*SqliteStore::open_existing(db_path(o), store_options(o))).list(true);
  }
  if (!kernel.empty()) {
    records.erase(std::remove_if(records.begin(), records.end(),
                                 [&](const auto& r) { return !names_kernel(r.name, kernel); }),
                  records.end());
  }
  if (o.json) {
    json j = json::array();
    for (const auto& r : records) j.push_back(summary_json(r));
    print_json(j);
    return 0;
  }
  std::cout << fmt::format("{:<16}  {:<24}  {:<11}  {:<11}  {:>10}  {}\n", "KEY", "KERNEL", "KIND",
                           "TARGET", "SIZE", "LAST USED");
  for (const auto& r : records) {
    std::cout << fmt::format("{:<16}  {:<24}  {:<11}  {:<11}  {:>10}  {}\n",
                             r.content_key.substr(0, 16), r.name.empty() ? "?" : r.name, r.kind,
                             r.target, detail::format_bytes(r.record_size), iso_time(r.last_used));
  }
  std::cout << records.size() << " entries in " << db_path(o)
            << (::stat(db_path(o).c_str(), &st) != 0 ? " (no cache yet)" : "") << "\n";
  return 0;
}

int info(const Options& o) {
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  detail::DatabaseInfo i = DatabaseAdmin(*store).info();
  if (o.json) {
    print_json({{"path", i.path},
                {"schema_version", i.schema_version},
                {"file_size", i.file_size},
                {"entries", i.entries},
                {"requests", i.requests},
                {"stored_bytes", i.stored_bytes},
                {"journal_mode", i.journal_mode},
                {"hits", i.hits},
                {"misses", i.misses},
                {"evictions", i.evictions},
                {"stale", i.stale},
                {"signatures", i.signatures},
                {"per_target", i.per_target},
                {"per_kind", i.per_kind},
                {"nvrtc_version", detail::compiler_version()}});
    return 0;
  }
  std::cout << fmt::format(
      "database:     {}\nschema:       {}\nfile size:    {}\nentries:      {} ({} stored, {} "
      "request keys)\njournal:      {}\nhits:         {}\nmisses:       {}\nevictions:    "
      "{}\nstale:        {} (other NVRTC or codegen version)\nsignatures:   {}\nnvrtc:        {}\n",
      i.path, i.schema_version, detail::format_bytes(i.file_size), i.entries,
      detail::format_bytes(i.stored_bytes), i.requests, i.journal_mode, i.hits, i.misses,
      i.evictions, i.stale, i.signatures,
      detail::compiler_version().empty() ? "not available here" : detail::compiler_version());
  std::cout << "per target:  ";
  for (const auto& [t, n] : i.per_target) std::cout << " " << t << "=" << n;
  std::cout << "\nper kind:    ";
  for (const auto& [k, n] : i.per_kind) std::cout << " " << k << "=" << n;
  std::cout << "\n";
  return 0;
}

int show(const Options& o, const std::string& key, bool with_source) {
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  auto r = DatabaseAdmin(*store).load(key, true);
  if (!r) {
    const std::string message = "no entry with key " + key + " in " + db_path(o);
    if (o.json) {
      print_json({{"error", message}});
    } else {
      std::cerr << "cujit-cache: " << message << "\n";
    }
    return 1;
  }
  auto source = DatabaseAdmin::source_of(*r);
  bool intact = r->checksum_ok() && source.has_value();
  json names = json::array();
  for (const auto& [e, l] : r->program.lowered_names) names.push_back({e, l});
  if (o.json) {
    json j = {{"key", r->content_key},
              {"kind", r->kind},
              {"target", r->program.target.name()},
              {"binary_size", r->program.binary.size()},
              {"source_size", r->source_size},
              {"checksum", detail::to_hex(r->checksum)},
              {"intact", intact},
              {"created", iso_time(r->created)},
              {"last_used", iso_time(r->last_used)},
              {"nvrtc_version", r->nvrtc_version},
              {"codegen_version", r->codegen_version},
              {"lowered_names", names},
              {"options", json::parse(r->options, nullptr, false)},
              {"metadata", r->program.metadata},
              {"log", r->program.log}};
    if (with_source) j["source"] = source.value_or("");
    print_json(j);
    return intact ? 0 : 1;
  }
  std::cout << fmt::format(
      "key:          {}\nkind:         {}\ntarget:       {}\nbinary:       {} "
      "(xxh64 {}{})\ncreated:      {}\nlast used:    {}\nnvrtc:        {}\ncodegen:      "
      "{}\noptions:      {}\nmetadata:     {}\n",
      r->content_key, r->kind, r->program.target.name(),
      detail::format_bytes(r->program.binary.size()), detail::to_hex(r->checksum),
      intact ? "" : ", DAMAGED", iso_time(r->created), iso_time(r->last_used), r->nvrtc_version,
      r->codegen_version, r->options, r->program.metadata);
  for (const auto& [e, l] : r->program.lowered_names) {
    std::cout << "name:         " << e << " -> " << l << "\n";
  }
  if (!r->program.log.empty()) std::cout << "log:\n" << r->program.log << "\n";
  if (with_source) std::cout << "source:\n" << source.value_or("(damaged)") << "\n";
  return intact ? 0 : 1;
}

// `trusted_keys` (--trusted-keys): also check every signature against these public keys.
int verify(const Options& o, bool fix, const std::string& trusted_keys) {
  // Read first: a key file that cannot be used is an error (exit 2), not a finding.
  std::vector<detail::TrustedKey> trusted;
  if (!trusted_keys.empty()) trusted = detail::read_trusted_keys(trusted_keys);
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseAdmin admin(*store);
  detail::VerifyReport r = admin.verify(fix);
  bool ok = r.integrity_ok && (r.damaged.empty() || r.removed);
  std::optional<SignatureAudit> audit;
  if (!trusted_keys.empty()) {
    audit = audit_signatures(admin, trusted);
    ok = ok && audit->ok();
  }
  if (o.json) {
    json j = {{"path", db_path(o)},   {"integrity", r.integrity_message},
              {"checked", r.checked}, {"damaged", r.damaged},
              {"removed", r.removed}, {"ok", ok}};
    if (audit) j["signatures"] = audit_json(*audit, trusted);
    print_json(j);
  } else {
    std::cout << fmt::format("{}: integrity {}; {} entries checked, {} damaged{}\n", db_path(o),
                             r.integrity_ok ? "ok" : "FAILED", r.checked, r.damaged.size(),
                             r.removed ? " (removed)" : "");
    if (!r.integrity_ok) std::cout << r.integrity_message << "\n";
    for (const auto& k : r.damaged) std::cout << "  damaged: " << k << "\n";
    if (audit) std::cout << audit_text(*audit, trusted);
  }
  return ok ? 0 : 1;
}

// Signs every entry and request mapping of an existing database (one this user owns).
int sign(const Options& o, const std::string& key_file) {
  const detail::SigningKey key = detail::read_signing_key(key_file);
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseAdmin admin(*store);
  const DatabaseAdmin::SignOutcome s = sign_database(admin, key);
  if (o.json) {
    json j = sign_json(s, key);
    j["path"] = db_path(o);
    print_json(j);
  } else {
    std::cout << sign_text(db_path(o), s, key);
  }
  return s.damaged > 0 ? 1 : 0;
}

int prune(const Options& o, const std::string& max_size, const std::string& older_than,
          const std::vector<std::string>& archs, bool stale) {
  detail::PruneOptions p;
  p.stale = stale;
  if (!max_size.empty()) {
    p.max_size = detail::parse_byte_size(max_size);
    if (!p.max_size)
      throw ArgumentError("cujit-cache: --max-size '" + max_size + "' is not a size");
  }
  if (!older_than.empty()) {
    p.older_than_ms = detail::parse_duration_ms(older_than);
    if (!p.older_than_ms) {
      throw ArgumentError("cujit-cache: --older-than '" + older_than +
                          "' is not a duration (like 90m, 12h, 30d)");
    }
  }
  for (const auto& list : archs) {
    for (const auto& name : split_list(list)) p.targets.push_back(Target::parse(name).name());
  }
  if (!p.max_size && !p.older_than_ms && p.targets.empty() && !p.stale) {
    throw ArgumentError("cujit-cache: prune needs --max-size, --older-than, --arch or --stale");
  }
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  DatabaseAdmin admin(*store);
  std::uint64_t removed = admin.prune(p);
  if (o.json) {
    print_json({{"path", db_path(o)}, {"removed", removed}, {"entries", admin.list().size()}});
  } else {
    std::cout << fmt::format("{}: removed {} entries, {} left\n", db_path(o), removed,
                             admin.list().size());
  }
  return 0;
}

int copy(const Options& o, SqliteStore& from, SqliteStore& to, const char* verb) {
  std::uint64_t copied = 0;
  std::uint64_t present = 0;
  std::uint64_t kept = 0;
  DatabaseAdmin source(from);
  DatabaseAdmin destination(to);
  const std::map<std::string, std::string> signatures = source.signatures();
  const std::uint64_t damaged = source.for_each_record(
      [&](const detail::CacheRecord& r, const std::vector<std::string>& keys) {
        const auto outcome = destination.import_record(r, keys, signatures);
        (outcome.inserted ? copied : present) += 1;
        kept += outcome.kept_requests;
      });
  if (o.json) {
    print_json({{"from", from.name()},
                {"to", to.name()},
                {"copied", copied},
                {"already_present", present},
                {"damaged_skipped", damaged},
                {"requests_kept", kept}});
  } else {
    std::cout << fmt::format("{} {} entries from {} to {} ({} already present)\n", verb, copied,
                             from.name(), to.name(), present);
    if (damaged > 0) {
      std::cout << fmt::format("skipped {} damaged entries of {} (run cujit-cache verify on it)\n",
                               damaged, from.name());
    }
    if (kept > 0) {
      std::cout << fmt::format("kept {} request mappings of {} that {} maps to other entries\n",
                               kept, to.name(), from.name());
    }
  }
  return damaged > 0 ? 1 : 0;
}

int export_to(const Options& o, const std::string& out) {
  auto from = SqliteStore::open_existing(db_path(o), store_options(o));
  check_output(o, out);
  auto to = SqliteStore::open_writable(out, store_options(o));
  int rc = copy(o, *from, *to, "exported");
  DatabaseAdmin(*to).finalize_for_deployment();  // an exported database is usually shipped
  return rc;
}

int import_from(const Options& o, const std::string& in) {
  auto from = SqliteStore::open_existing(in, store_options(o));
  std::string path = db_path(o);
  auto to = ::access(path.c_str(), F_OK) == 0 ? SqliteStore::open_existing(path, store_options(o))
                                              : SqliteStore::open_writable(path, store_options(o));
  return copy(o, *from, *to, "imported");
}

// `yes` (--yes): confirmed. On a terminal, clear asks for it; scripts (stdin not a terminal)
// clear as before.
int clear(const Options& o, bool yes) {
  if (!yes && ::isatty(STDIN_FILENO) != 0) {
    throw ArgumentError("cujit-cache: clear removes every entry of " + db_path(o) +
                        "; pass --yes to confirm");
  }
  auto store = SqliteStore::open_existing(db_path(o), store_options(o));
  std::uint64_t removed = DatabaseAdmin(*store).clear();
  if (o.json) {
    print_json({{"path", db_path(o)}, {"removed", removed}});
  } else {
    std::cout << fmt::format("{}: removed {} entries\n", db_path(o), removed);
  }
  return 0;
}

// Writes a key pair for signing cache entries; the secret stays with builders.
int keygen(const Options& o, const std::string& prefix) {
  const detail::SigningKey key = detail::generate_signing_key();
  detail::write_key_pair(prefix, key, o.force);
  const std::string id = detail::key_id(key.public_key);
  if (o.json) {
    print_json({{"secret_key", prefix + ".key"}, {"public_key", prefix + ".pub"}, {"key_id", id}});
    return 0;
  }
  std::cout << "wrote " << prefix << ".key (secret, mode 0600: for builders, "
            << "CUJIT_CACHE_SIGNING_KEY)\nwrote " << prefix << ".pub (key id " << id
            << ": for readers, CUJIT_CACHE_TRUSTED_KEYS)\n";
  return 0;
}

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

int run(int argc, char** argv) {
  CLI::App app{"cujit-cache: inspect, maintain and build cujit kernel-cache databases"};
  app.require_subcommand(1);
  app.set_version_flag("--version", version_text);
  Options o;
  app.add_option(
      "--db", o.db,
      "cache database (default: the user cache, " + default_cache_directory() + "/kernels.db)");
  app.add_flag("--json", o.json, "machine-readable output");
  app.add_flag("--allow-foreign", o.allow_foreign,
               "open databases owned by another user or writable by others");

  PrecompileArgs pa;
  auto* pre = app.add_subcommand("precompile", "compile every manifest entry for every target");
  pre->add_option("manifest", pa.manifest, "manifest recorded with CUJIT_RECORD")->required();
  pre->add_option("--arch", pa.archs, "targets, e.g. sm_80,sm_86,sm_90 or compute_90")->required();
  pre->add_flag("--ptx", pa.ptx, "also build PTX (compute_XY) for every sm_XY target");
  pre->add_option("-o,--output", pa.output, "output database")->required();
  pre->add_option("-j,--jobs", pa.jobs, "parallel compilations (default: all cores)");
  pre->add_flag("--threads", pa.threads,
                "compile in threads of one process instead of worker processes (NVRTC "
                "serialises much of a compilation within a process)");
  pre->add_option("--sign", pa.sign_key,
                  "sign every entry and request mapping of the output with this secret key file "
                  "(cujit-cache keygen), for readers with CUJIT_CACHE_REQUIRE_SIGNED=1; "
                  "CUJIT_CACHE_SIGNING_KEY is not used here: a database is signed only when "
                  "asked");
  pre->add_flag("--json", o.json, "machine-readable output");
  pre->add_flag("--force", o.force, "replace an output file that is not a cujit database");

  auto* ls_cmd = app.add_subcommand("ls", "list entries");
  ls_cmd->add_flag("--json", o.json, "machine-readable output");
  std::string kernel_filter;
  ls_cmd->add_option("--kernel", kernel_filter, "only the entries of this kernel");
  auto* info_cmd = app.add_subcommand("info", "counters, size, entries per target and kind");
  info_cmd->add_flag("--json", o.json, "machine-readable output");

  std::string key;
  bool with_source = false;
  auto* show_cmd = app.add_subcommand("show", "show one entry");
  show_cmd->add_option("key", key, "content or request key, or a prefix of 4+ digits")->required();
  show_cmd->add_flag("--source", with_source, "print the generated source");
  show_cmd->add_flag("--json", o.json, "machine-readable output");

  bool fix = false;
  std::string trusted_keys;
  auto* verify_cmd = app.add_subcommand("verify", "check integrity and every checksum");
  verify_cmd->add_flag("--fix", fix, "delete damaged entries");
  verify_cmd->add_option("--trusted-keys", trusted_keys,
                         "also check that every entry and request mapping is signed by one of "
                         "these public key files (a.pub:b.pub); fails unless all are");
  verify_cmd->add_flag("--json", o.json, "machine-readable output");

  std::string max_size;
  std::string older_than;
  std::vector<std::string> prune_archs;
  auto* prune_cmd = app.add_subcommand("prune", "remove entries by size, age or target");
  prune_cmd->add_option("--max-size", max_size, "evict least recently used beyond, e.g. 512M");
  prune_cmd->add_option("--older-than", older_than, "remove entries unused for, e.g. 30d");
  prune_cmd->add_option("--arch", prune_archs, "remove entries for these targets");
  bool stale = false;
  prune_cmd->add_flag("--stale", stale,
                      "remove entries of another NVRTC or codegen version (unreachable)");
  prune_cmd->add_flag("--json", o.json, "machine-readable output");

  std::string other;
  auto* export_cmd = app.add_subcommand("export", "copy entries into another database");
  export_cmd->add_option("output", other, "destination database")->required();
  export_cmd->add_flag("--json", o.json, "machine-readable output");
  export_cmd->add_flag("--force", o.force, "replace an output file that is not a cujit database");
  auto* import_cmd = app.add_subcommand("import", "copy entries from another database");
  import_cmd->add_option("input", other, "source database")->required();
  import_cmd->add_flag("--json", o.json, "machine-readable output");
  auto* clear_cmd = app.add_subcommand("clear", "remove every entry");
  clear_cmd->add_flag("--json", o.json, "machine-readable output");
  bool yes = false;
  clear_cmd->add_flag("--yes", yes, "confirm (needed when stdin is a terminal)");
  std::string key_prefix;
  auto* keygen_cmd = app.add_subcommand("keygen", "write an Ed25519 key pair for signing entries");
  keygen_cmd->add_option("prefix", key_prefix, "writes PREFIX.key and PREFIX.pub")->required();
  keygen_cmd->add_flag("--force", o.force, "replace existing key files");
  keygen_cmd->add_flag("--json", o.json, "machine-readable output");
  std::string sign_key;
  auto* sign_cmd = app.add_subcommand(
      "sign", "sign every entry and request mapping of a database (replacing older signatures)");
  sign_cmd->add_option("--key", sign_key, "secret key file (cujit-cache keygen)")->required();
  sign_cmd->add_flag("--json", o.json, "machine-readable output");

  RemoteCommands remote(app, *ls_cmd, *info_cmd, o.json, o.db);

  CLI11_PARSE(app, argc, argv);
  try {
    const ToolContext context{db_path(o), o.json, store_options(o),
                              [&o](const std::string& path) { check_output(o, path); }};
    if (auto status = remote.run(context)) return *status;
    if (*pre) return precompile(o, pa);
    if (*ls_cmd) return ls(o, kernel_filter);
    if (*info_cmd) return info(o);
    if (*show_cmd) return show(o, key, with_source);
    if (*verify_cmd) return verify(o, fix, trusted_keys);
    if (*prune_cmd) return prune(o, max_size, older_than, prune_archs, stale);
    if (*export_cmd) return export_to(o, other);
    if (*import_cmd) return import_from(o, other);
    if (*clear_cmd) return clear(o, yes);
    if (*keygen_cmd) return keygen(o, key_prefix);
    if (*sign_cmd) return sign(o, sign_key);
  } catch (const std::exception& e) {  // cujit::Error, and anything else: never terminate
    std::string m = e.what();
    if (m.rfind("cujit: ", 0) == 0) m.erase(0, 7);
    if (m.rfind("cujit-cache: ", 0) == 0) m.erase(0, 13);
    if (o.json) {
      print_json({{"error", m}});
    } else {
      std::cerr << "cujit-cache: error: " << m << "\n";
    }
    return 2;
  }
  return 0;
}

}  // namespace
}  // namespace cujit::tool

int main(int argc, char** argv) { return cujit::tool::run(argc, argv); }
