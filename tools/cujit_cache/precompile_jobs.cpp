#include "tools/cujit_cache/precompile_jobs.hpp"

#include "cache/manifest.hpp"
#include "support/json_text.hpp"

#include <cujit/error.hpp>

#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace cujit::tool {
namespace {

using json = nlohmann::json;

JobResult run_job(detail::KernelCache& cache, const std::vector<std::string>& entries,
                  const std::vector<Target>& targets, std::size_t job) {
  JobResult r;
  r.job = job;
  try {
    detail::ReplayedKernel k =
        detail::replay(entries[job / targets.size()], targets[job % targets.size()]);
    detail::CacheOutcome where{};
    // A target without the headers the kernel was built with looks it up without them.
    k.request.link_without_headers = true;
    cache.get_or_compile(k.request, k.generate, k.compile, &where);
    r.outcome = where == detail::CacheOutcome::Compiled ? JobResult::Outcome::Compiled
                                                        : JobResult::Outcome::Present;
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  return r;
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A worker process and the read end of the pipe its results come back on.
struct Worker {
  pid_t pid;
  int fd;
  std::string buffer;
};

// The jobs a worker process runs, taking them from the shared counter `next`; its results go
// to `fd` as JSON lines. Never returns.
[[noreturn]] void work(const CacheConfig& config, const std::vector<std::string>& entries,
                       const std::vector<Target>& targets, std::atomic<std::size_t>& next, int fd) {
  const std::size_t total = entries.size() * targets.size();
  int rc = 0;
  try {
    detail::KernelCache cache(config);
    for (std::size_t job; (job = next.fetch_add(1)) < total;) {
      JobResult r = run_job(cache, entries, targets, job);
      json line = {{"job", r.job}, {"outcome", static_cast<int>(r.outcome)}, {"error", r.error}};
      if (!write_all(fd, detail::dump_json(line) + "\n")) {
        rc = 1;
        break;
      }
    }
  } catch (...) {
    rc = 1;
  }
  ::_exit(rc);  // the parent's atexit handlers and buffers are not the child's to run
}

// Forks up to `count` workers (fewer when the system refuses more).
std::vector<Worker> start_workers(const CacheConfig& config,
                                  const std::vector<std::string>& entries,
                                  const std::vector<Target>& targets,
                                  std::atomic<std::size_t>& next, unsigned count) {
  std::fflush(nullptr);  // nothing buffered may be written twice by the children
  std::vector<Worker> children;
  for (unsigned w = 0; w < count; ++w) {
    int fds[2];
    if (::pipe(fds) != 0) break;
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      break;
    }
    if (pid == 0) {
      ::close(fds[0]);
      for (const auto& c : children) ::close(c.fd);
      work(config, entries, targets, next, fds[1]);
    }
    ::close(fds[1]);
    children.push_back({pid, fds[0], {}});
  }
  return children;
}

// The complete JSON lines in `buffer`, tallied (and removed from it).
void tally_lines(std::string& buffer, std::size_t total, Tally& tally) {
  for (std::size_t nl; (nl = buffer.find('\n')) != std::string::npos;) {
    json line = json::parse(buffer.substr(0, nl), nullptr, false);
    buffer.erase(0, nl + 1);
    if (!line.is_object()) continue;
    JobResult r;
    r.job = line.value("job", std::size_t{0});
    r.outcome = static_cast<JobResult::Outcome>(line.value("outcome", 2));
    auto error = line.find("error");
    r.error = error != line.end() ? detail::json_text(*error).value_or("") : "";
    if (r.job < total) tally.add(r);
  }
}

// Reads every worker's results until all their pipes are closed.
void collect(std::vector<Worker>& children, std::size_t total, Tally& tally) {
  std::vector<pollfd> polls;
  for (const auto& c : children) polls.push_back({c.fd, POLLIN, 0});
  std::size_t open = children.size();
  while (open > 0) {
    if (::poll(polls.data(), polls.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].fd < 0 || (polls[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      char chunk[4096];
      ssize_t n = ::read(polls[i].fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(polls[i].fd);
        polls[i].fd = -1;
        --open;
        continue;
      }
      children[i].buffer.append(chunk, static_cast<std::size_t>(n));
      tally_lines(children[i].buffer, total, tally);
    }
  }
}

// Waits for every worker; how the last one that did not end well ended, or empty.
std::string reap(const std::vector<Worker>& children) {
  std::string deaths;
  for (const auto& c : children) {
    int status = 0;
    while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
      deaths = fmt::format("a worker process died from signal {} ({}) while compiling it",
                           WTERMSIG(status), strsignal(WTERMSIG(status)));
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && deaths.empty()) {
      deaths = "a worker process failed while compiling it";
    }
  }
  return deaths;
}

}  // namespace

void Progress::step(bool failed) {
  std::lock_guard lock(mutex_);
  ++done_;
  failed_ += failed ? 1 : 0;
  const std::string failures = failed_ > 0 ? fmt::format("  ({} failed)", failed_) : "";
  if (bar_) {
    constexpr int kWidth = 30;
    int filled = total_ == 0 ? kWidth : static_cast<int>(kWidth * done_ / total_);
    std::fprintf(stderr, "\r[%s%s] %zu/%zu%s", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done_, total_, failures.c_str());
    if (done_ == total_) std::fputc('\n', stderr);
  } else if (lines_) {
    const auto now = std::chrono::steady_clock::now();
    const std::size_t tenth = std::max<std::size_t>(1, total_ / 10);
    if (done_ == total_ || done_ % tenth == 0 || now - last_ >= std::chrono::seconds(1)) {
      last_ = now;
      std::fprintf(stderr, "cujit-cache: precompile: %zu/%zu done%s\n", done_, total_,
                   failures.c_str());
    }
  }
  std::fflush(stderr);
}

void Tally::add(const JobResult& r) {
  {
    std::lock_guard lock(mutex_);
    reported_.insert(r.job);
    if (r.outcome == JobResult::Outcome::Compiled) ++compiled_;
    if (r.outcome == JobResult::Outcome::Present) ++present_;
    if (r.outcome == JobResult::Outcome::Failed) {
      std::size_t e = r.job / targets_.size();
      std::string kind;
      try {
        kind = detail::manifest_entry_kind(entries_[e]);
      } catch (const Error&) {
        kind = "?";
      }
      failures_.push_back(
          {e + 1, lines_[e], kind, targets_[r.job % targets_.size()].name(), r.error});
    }
  }
  progress_.step(r.outcome == JobResult::Outcome::Failed);
}

bool Tally::reported(std::size_t job) {
  std::lock_guard lock(mutex_);
  return reported_.count(job) != 0;
}

void run_in_threads(const CacheConfig& config, const std::vector<std::string>& entries,
                    const std::vector<Target>& targets, unsigned workers, Tally& tally) {
  detail::KernelCache cache(config);
  const std::size_t total = entries.size() * targets.size();
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < workers; ++i) {
    threads.emplace_back([&] {
      for (std::size_t job; (job = next.fetch_add(1)) < total;) {
        tally.add(run_job(cache, entries, targets, job));
      }
    });
  }
  for (auto& t : threads) t.join();
}

// Jobs are handed out through an atomic counter in shared memory; results come back as JSON
// lines on one pipe per worker.
void run_in_processes(const CacheConfig& config, const std::vector<std::string>& entries,
                      const std::vector<Target>& targets, unsigned workers, Tally& tally) {
  const std::size_t total = entries.size() * targets.size();
  void* shared = ::mmap(nullptr, sizeof(std::atomic<std::size_t>), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED)
    throw Error("cujit-cache: mmap failed: " + std::string(std::strerror(errno)));
  auto* next = new (shared) std::atomic<std::size_t>(0);
  std::vector<Worker> children = start_workers(config, entries, targets, *next, workers);
  if (children.empty()) {
    ::munmap(shared, sizeof(std::atomic<std::size_t>));
    throw Error("cujit-cache: cannot start worker processes: " + std::string(std::strerror(errno)));
  }
  collect(children, total, tally);
  const std::string deaths = reap(children);
  ::munmap(shared, sizeof(std::atomic<std::size_t>));
  for (std::size_t job = 0; job < total; ++job) {
    if (!tally.reported(job)) {
      JobResult r;
      r.job = job;
      r.error = deaths.empty() ? "not compiled: no worker reported it" : deaths;
      tally.add(r);
    }
  }
}

}  // namespace cujit::tool
