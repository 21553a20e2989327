#pragma once
// cujit-cache precompile's jobs: one (manifest entry, target) pair each, run by threads sharing
// one kernel cache or by worker processes, with their outcomes tallied and a progress display.

#include "cache/kernel_cache.hpp"

#include <cujit/cache.hpp>
#include <cujit/program.hpp>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace cujit::tool {

/// A job that failed: its manifest entry (1-based) and line, the entry's kind, the target and
/// the error.
struct Failure {
  std::size_t entry;
  std::size_t line;  // in the manifest file
  std::string kind;
  std::string target;
  std::string error;
};

/// On a terminal, a bar redrawn in place; elsewhere (a CI log), a line at every tenth of the
/// jobs and at most one a second otherwise, and the last one. Thread-safe.
class Progress {
 public:
  Progress(std::size_t total, bool bar, bool lines)
      : total_(total), bar_(bar), lines_(lines), last_(std::chrono::steady_clock::now()) {}
  /// One more job done (`failed`: it failed).
  void step(bool failed);

 private:
  std::mutex mutex_;
  std::size_t total_;
  std::size_t done_ = 0;
  std::size_t failed_ = 0;
  bool bar_;
  bool lines_;
  std::chrono::steady_clock::time_point last_;
};

/// What happened to one (entry, target) job.
struct JobResult {
  std::size_t job = 0;
  enum class Outcome { Compiled, Present, Failed } outcome = Outcome::Failed;
  std::string error;
};

/// Collects job results from any thread and drives the progress display. Thread-safe.
class Tally {
 public:
  Tally(const std::vector<std::string>& entries, const std::vector<std::size_t>& lines,
        const std::vector<Target>& targets, Progress& progress)
      : entries_(entries), lines_(lines), targets_(targets), progress_(progress) {}

  void add(const JobResult& r);
  bool reported(std::size_t job);
  std::size_t compiled() const { return compiled_; }
  std::size_t present() const { return present_; }
  std::vector<Failure>& failures() { return failures_; }

 private:
  const std::vector<std::string>& entries_;
  const std::vector<std::size_t>& lines_;
  const std::vector<Target>& targets_;
  Progress& progress_;
  std::mutex mutex_;
  std::set<std::size_t> reported_;
  std::size_t compiled_ = 0;
  std::size_t present_ = 0;
  std::vector<Failure> failures_;
};

/// Runs every job (entries x targets) on `workers` threads sharing one kernel cache of
/// `config`. NVRTC serialises much of a compilation inside one process, so this scales only to
/// about 3 threads (measured on 16 cores).
void run_in_threads(const CacheConfig& config, const std::vector<std::string>& entries,
                    const std::vector<Target>& targets, unsigned workers, Tally& tally);

/// Runs every job on `workers` worker processes, each with its own NVRTC and its own connection
/// to the database of `config` (which many processes may write at once). A worker that crashes
/// (NVRTC dying on a bad kernel) fails only the job it was running. Throws Error when no worker
/// can be started.
void run_in_processes(const CacheConfig& config, const std::vector<std::string>& entries,
                      const std::vector<Target>& targets, unsigned workers, Tally& tally);

}  // namespace cujit::tool
