// A process that exits while prefetch_cache()'s background thread is still at work (opening
// the database, reading kernels ahead) exits cleanly. Issue 20 tried loading NVRTC on that
// thread too: a process exiting during the load crashed inside NVRTC's static initialisers
// (their destructors, registered during the load, ran first at exit), in 7 of 40 runs of the
// child below; the load was taken out again. Needs no GPU.
#include <cujit/cache.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "cache_test_util.hpp"
#include "support/child_process.hpp"

namespace cujit {
namespace {

using Clock = std::chrono::steady_clock;

// Waits up to `limit` for `pid`; kills it and returns -1 when it is still running then.
int wait_for(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(PrefetchExit, ExitingWhilePrefetchWorksIsClean) {
  for (int round = 0; round < 12; ++round) {
    test::TempDir dir;
    const pid_t pid = test::spawn_test(
        "PrefetchExitChild.ExitAtOnce",
        {"CUJIT_TEST_PREFETCH_CHILD=1", "CUJIT_CACHE_DIR=" + dir.path()}, dir.file("stderr"));
    ASSERT_GT(pid, 0);
    EXPECT_EQ(wait_for(pid, std::chrono::seconds(120)), 0)
        << "round " << round << "; the child's standard error:\n"
        << read_file(dir.file("stderr"));
  }
}

// In a fresh process: prefetch an empty cache, then exit after 0-9.5 ms.
TEST(PrefetchExitChild, ExitAtOnce) {
  if (std::getenv("CUJIT_TEST_PREFETCH_CHILD") == nullptr) {
    GTEST_SKIP() << "run in a fresh process by PrefetchExit.ExitingWhilePrefetchWorksIsClean";
  }
  prefetch_cache();
  std::this_thread::sleep_for(std::chrono::microseconds((::getpid() % 20) * 500));
}

}  // namespace
}  // namespace cujit
