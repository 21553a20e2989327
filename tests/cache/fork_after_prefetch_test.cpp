// A process that forks while prefetch_cache()'s background thread reads the database: the
// child must not inherit a lock that thread held (SQLite's allocator mutex, seen deadlocking
// a forked child in CI), so a child that opens a database of its own finishes.

#include <cujit/cache.hpp>

#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace cujit {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::TempDir;

// The child's work: SQLite calls of its own, on a database of its own.
[[noreturn]] void child_opens_a_database(const std::string& path) {
  try {
    CacheConfig config;
    config.database_path = path;
    detail::KernelCache cache(config);
    FakeCompiler compiler;
    auto k = fake_kernel("child");
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  } catch (...) {
    ::_exit(3);
  }
  ::_exit(0);
}

// Waits for the child up to `limit`: "" when it exited with 0, otherwise what went wrong
// (a child still running at the limit is killed).
std::string outcome_within(pid_t pid, std::chrono::seconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) != pid) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } else if (WIFEXITED(status)) {
      return WEXITSTATUS(status) == 0 ? "" : "exit " + std::to_string(WEXITSTATUS(status));
    } else {
      return "signal " + std::to_string(WTERMSIG(status));
    }
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return "still running after " + std::to_string(limit.count()) + " s";
}

TEST(ForkAfterPrefetch, ChildrenForkedDuringPrefetchFinish) {
  CacheConfig saved = cache_config();
  TempDir dir;
  CacheConfig config;
  config.database_path = dir.file("parent.db");
  config.preload_records = 512;
  {
    // Records for prefetch's thread to read ahead: the longer it works, the likelier a fork
    // lands while it is inside SQLite.
    detail::KernelCache writer(config);
    FakeCompiler compiler;
    for (int i = 0; i < 300; ++i) {
      auto k = fake_kernel("parent" + std::to_string(i));
      writer.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    }
  }
  std::string failures;
  for (int round = 0; round < 40; ++round) {
    configure_cache(config);
    prefetch_cache();
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_opens_a_database(dir.file("child" + std::to_string(round) + ".db"));
    std::string outcome = outcome_within(pid, std::chrono::seconds(10));
    if (!outcome.empty()) failures += "round " + std::to_string(round) + ": " + outcome + "\n";
  }
  configure_cache(saved);
  EXPECT_EQ(failures, "") << "children forked during prefetch_cache() did not finish";
}

}  // namespace
}  // namespace cujit
