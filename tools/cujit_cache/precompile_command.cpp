#include "tools/cujit_cache/precompile_command.hpp"

#include "cache/database_files.hpp"
#include "cache/database_transfer.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/manifest.hpp"
#include "core/checked_file.hpp"
#include "tools/cujit_cache/precompile_jobs.hpp"
#include "tools/cujit_cache/signing.hpp"
#include "tools/cujit_cache/tool_util.hpp"

#include <cujit/error.hpp>
#include <cujit/program.hpp>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

namespace cujit::tool {
namespace {

using detail::DatabaseTransfer;
using detail::SqliteStore;
using nlohmann::json;

std::string first_lines(const std::string& text, int lines) {
  std::size_t pos = 0;
  for (int i = 0; i < lines && pos != std::string::npos; ++i) {
    pos = text.find('\n', pos == 0 ? 0 : pos + 1);
  }
  return pos == std::string::npos ? text : text.substr(0, pos) + "\n    ...";
}

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

// Removes a database with SQLite's side files and its leases folder.
void remove_database(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
  ::rmdir((path + ".leases").c_str());  // only when empty
}

// Copies every intact entry of `from`, with its request keys and signatures, into `to`; an
// entry or request `to` has already is kept as it is.
void copy_entries(SqliteStore& from, SqliteStore& to) {
  DatabaseTransfer source(from);
  DatabaseTransfer destination(to);
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
  DatabaseTransfer::SignOutcome publish(const detail::SigningKey* key) {
    const DirectoryLock lock(directory_);
    struct stat st {};
    const bool merge = ::lstat(output_.c_str(), &st) == 0;
    DatabaseTransfer::SignOutcome signed_entries;
    {
      auto out = SqliteStore::open_writable(merge ? output_ : path_, options_);
      if (merge) copy_entries(*SqliteStore::open_writable(path_, options_), *out);
      DatabaseTransfer admin(*out);
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

// What a precompile did, for its report.
struct PrecompileOutcome {
  std::size_t entries = 0;
  std::size_t generic = 0;  ///< of the entries, generic specialisations added to recorded ones
  std::vector<Target> targets;
  unsigned jobs = 0;
  std::size_t compiled = 0;
  std::size_t present = 0;
  std::vector<Failure> failures;  ///< sorted by entry and target
  double seconds = 0;
  const detail::SigningKey* key = nullptr;                      ///< --sign's key, when given
  std::optional<DatabaseTransfer::SignOutcome> signed_entries;  ///< when published
};

// The worker count: -j (default every core), at most one per job.
unsigned jobs_for(const PrecompileArgs& a, std::size_t total) {
  unsigned jobs = a.jobs != 0 ? a.jobs : std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::min<std::size_t>(jobs, std::max<std::size_t>(total, 1)));
}

void report(const Options& o, const PrecompileArgs& a, const PrecompileOutcome& r) {
  if (o.json) {
    json j = {{"database", a.output},         {"manifest", a.manifest}, {"entries", r.entries},
              {"generic", r.generic},         {"jobs", r.jobs},         {"compiled", r.compiled},
              {"already_present", r.present}, {"seconds", r.seconds},   {"targets", json::array()},
              {"failed", json::array()}};
    for (const auto& t : r.targets) j["targets"].push_back(t.name());
    if (r.key && r.signed_entries) j["signed"] = sign_json(*r.signed_entries, *r.key);
    for (const auto& f : r.failures) {
      j["failed"].push_back({{"entry", f.entry},
                             {"line", f.line},
                             {"kind", f.kind},
                             {"target", f.target},
                             {"error", f.error}});
    }
    print_json(j);
    return;
  }
  std::string names;
  for (const auto& t : r.targets) names += (names.empty() ? "" : ",") + t.name();
  std::cout << fmt::format(
      "precompiled {}{} x {} ({}) into {} with {} in {:.1f} s: {} compiled, {} already present, "
      "{} failed\n",
      count(r.entries, "entry", "entries"),
      r.generic > 0 ? fmt::format(" ({} generic)", r.generic) : std::string(),
      count(r.targets.size(), "target", "targets"), names, a.output, count(r.jobs, "job", "jobs"),
      r.seconds, r.compiled, r.present, r.failures.size());
  if (r.key && r.signed_entries) std::cout << sign_text(a.output, *r.signed_entries, *r.key);
  for (const auto& f : r.failures) {
    std::cerr << fmt::format("cujit-cache: failed: line {} ({}) for {}: {}\n", f.line, f.kind,
                             f.target, first_lines(f.error, 4));
  }
}

// Adds, after the recorded entries, the generic specialisation of each that has one (what a
// target without a compiler runs for a layout nobody recorded), with the recorded entry's line;
// returns how many. A malformed entry adds nothing here: its own job reports it.
std::size_t add_generic_entries(std::vector<std::string>& entries,
                                std::vector<std::size_t>& lines) {
  std::set<std::string> present(entries.begin(), entries.end());
  const std::size_t recorded = entries.size();
  for (std::size_t k = 0; k < recorded; ++k) {
    std::optional<std::string> generic;
    try {
      generic = detail::generic_entry(entries[k]);
    } catch (const Error&) {
      continue;
    }
    if (!generic || !present.insert(*generic).second) continue;
    entries.push_back(std::move(*generic));
    lines.push_back(lines[k]);
  }
  return entries.size() - recorded;
}

// `stored`: whether any kernel was compiled into the output.
int precompile_into(const Options& o, const PrecompileArgs& a, bool& stored) {
  auto started = std::chrono::steady_clock::now();
  std::vector<std::size_t> lines;
  std::vector<std::string> entries = detail::read_manifest(a.manifest, &lines);
  const std::size_t generic = add_generic_entries(entries, lines);
  check_output(o, a.output);
  // Read before compiling: an unusable key fails the command before any work.
  std::optional<detail::SigningKey> key;
  if (!a.sign_key.empty()) key = detail::read_signing_key(a.sign_key);
  PrecompileOutcome r;
  r.entries = entries.size();
  r.generic = generic;
  r.targets = targets_of(a);
  r.key = key ? &*key : nullptr;
  PrivateDatabase work(a.output, store_options(o));
  CacheConfig config;
  config.database_path = work.path();
  config.max_size = 0;
  config.allow_foreign_owner = o.allow_foreign;

  const std::size_t total = entries.size() * r.targets.size();
  r.jobs = jobs_for(a, total);
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  Progress progress(total, terminal && !o.json, !terminal);
  Tally tally(entries, lines, r.targets, progress);
  if (a.threads || r.jobs == 1) {
    run_in_threads(config, entries, r.targets, r.jobs, tally);
  } else {
    run_in_processes(config, entries, r.targets, r.jobs, tally);
  }
  r.failures = std::move(tally.failures());
  std::sort(r.failures.begin(), r.failures.end(), [](const Failure& x, const Failure& y) {
    return std::tie(x.entry, x.target) < std::tie(y.entry, y.target);
  });
  r.compiled = tally.compiled();
  r.present = tally.present();
  stored = r.compiled > 0;
  // A run that failed and compiled nothing has nothing to add: the output stays as it was.
  if (stored || r.failures.empty()) r.signed_entries = work.publish(r.key);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  report(o, a, r);
  return r.failures.empty() ? 0 : 1;
}

}  // namespace

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

}  // namespace cujit::tool
