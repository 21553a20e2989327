// prefetch_cache() on a machine whose caches are empty loads the compiler in the background.
// A process that forks meanwhile must not hand its child the dynamic loader's lock held: the
// child's first dlopen would wait forever (the fresh-clone CI's ThreadSanitizer run hung that
// way in a test forking sixteen processes). Needs no GPU; NVRTC is loaded where it is
// installed, and the test holds (trivially) where it is not.
#include <cujit/cache.hpp>

#include <dlfcn.h>
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

TEST(CompilerPreload, ForksWhileTheCompilerLoadsDoNotHangTheirChildren) {
  for (int round = 0; round < 6; ++round) {
    test::TempDir dir;
    const pid_t pid = test::spawn_test(
        "CompilerPreloadChild.ForkWhilePreloading",
        {"CUJIT_TEST_PRELOAD_CHILD=1", "CUJIT_CACHE_DIR=" + dir.path()}, dir.file("stderr"));
    ASSERT_GT(pid, 0);
    EXPECT_EQ(wait_for(pid, std::chrono::seconds(120)), 0)
        << "round " << round << "; the child's standard error:\n"
        << read_file(dir.file("stderr"));
  }
}

// In a fresh process (the compiler not loaded yet): prefetch an empty cache, then fork
// children for half a second; each child dlopens (taking the loader's lock) and exits.
TEST(CompilerPreloadChild, ForkWhilePreloading) {
  if (std::getenv("CUJIT_TEST_PRELOAD_CHILD") == nullptr) {
    GTEST_SKIP() << "run in a fresh process by CompilerPreload.ForksWhileTheCompilerLoads...";
  }
  prefetch_cache();
  const auto end = Clock::now() + std::chrono::milliseconds(500);
  int children = 0, hung = 0;
  while (Clock::now() < end) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      void* handle = ::dlopen("libm.so.6", RTLD_NOW);
      ::_exit(handle != nullptr ? 0 : 3);
    }
    ++children;
    const int rc = wait_for(pid, std::chrono::seconds(10));
    hung += rc == -1;
    ASSERT_TRUE(rc == 0 || rc == -1) << "child exited with " << rc;
  }
  EXPECT_EQ(hung, 0) << hung << " of " << children << " children hung in dlopen";
}

}  // namespace
}  // namespace cujit
