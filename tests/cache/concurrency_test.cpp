// Many processes sharing one cache database.

#include "cache/database_admin.hpp"
#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <thread>

namespace cujit::detail {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::TempDir;

constexpr int kProcesses = 16;
constexpr int kKernels = 40;
constexpr int kPerProcess = 15;

int kernel_index(int process, int i) { return (process * 5 + i * 3) % kKernels; }

// The child's exit status: the number of failures it saw (0 is success).
int child_main(const std::string& db, int process) {
  int failures = 0;
  set_warning_sink([&](const std::string& m) {
    std::fprintf(stderr, "child %d warning: %s\n", static_cast<int>(::getpid()), m.c_str());
    ++failures;
  });
  CacheConfig config;
  config.database_path = db;
  KernelCache cache(config);
  FakeCompiler compiler;
  auto slow = [&](const SourceProgram& p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // a compile takes a while
    return compiler.fn(Target{80})(p);
  };
  // Kernels shared with other processes, and one only this process writes.
  for (int i = 0; i <= kPerProcess; ++i) {
    auto k = fake_kernel(i < kPerProcess ? "k" + std::to_string(kernel_index(process, i))
                                         : "unique" + std::to_string(process));
    try {
      auto p = cache.get_or_compile(k.request, k.generator(), slow);
      if (p->binary != compiler.fn(Target{80})(k.source).binary) ++failures;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child error: %s\n", e.what());
      ++failures;
    }
  }
  return std::min(failures, 100);
}

TEST(Concurrency, SixteenProcessesShareOneDatabase) {
  TempDir dir;
  std::string db = dir.file("kernels.db");
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) ::_exit(child_main(db, p));
    children.push_back(pid);
  }
  std::set<std::string> expected;
  for (int p = 0; p < kProcesses; ++p) {
    for (int i = 0; i < kPerProcess; ++i) expected.insert("k" + std::to_string(kernel_index(p, i)));
    expected.insert("unique" + std::to_string(p));
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 0) << "child reported failures";
  }
  auto store = SqliteStore::open_writable(db, {});
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_EQ(DatabaseAdmin(*store).list().size(), expected.size());
  for (const auto& name : expected) {
    auto kernel = fake_kernel(name);
    EXPECT_EQ(store->find_by_request(request_key("test", kernel.request.spec, Target{80})).status,
              Lookup::Status::Hit)
        << "lost entry " << name;
  }
  DatabaseAdmin admin(*store);
  EXPECT_EQ(admin.verify(false).damaged.size(), 0u);
  EXPECT_EQ(admin.info().misses, expected.size());  // each kernel stored once
}

TEST(Concurrency, ProcessKilledDuringWritesLeavesAUsableDatabase) {
  TempDir dir;
  std::string db = dir.file("kernels.db");
  int pipe_fd[2];
  ASSERT_EQ(::pipe(pipe_fd), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipe_fd[0]);
    auto store = SqliteStore::open_writable(db, {});
    FakeCompiler compiler;
    for (int i = 0;; ++i) {
      auto k = fake_kernel("k" + std::to_string(i));
      k.source.source += std::string(static_cast<std::size_t>(5000 + i % 7 * 3000), 'x');
      CompiledProgram c = compiler.fn(Target{80})(k.source);
      store->put(
          make_record(content_key(k.source, Target{80}, "test"), "test", k.source, c, now_ms()),
          request_key("test", k.request.spec, Target{80}));
      if (i == 20) (void)!::write(pipe_fd[1], "x", 1);  // enough written: kill me any time now
    }
  }
  ::close(pipe_fd[1]);
  char c;
  ASSERT_EQ(::read(pipe_fd[0], &c, 1), 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(pipe_fd[0]);
  ASSERT_TRUE(WIFSIGNALED(status));
  test::WarningCapture warnings;
  auto store = SqliteStore::open_writable(db, {});
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_EQ(warnings.count(), 0u) << warnings.joined();
  VerifyReport report = DatabaseAdmin(*store).verify(false);
  EXPECT_GE(report.checked, 21u);
  EXPECT_TRUE(report.damaged.empty());
  auto k = fake_kernel("k5");
  EXPECT_EQ(store->find_by_request(request_key("test", k.request.spec, Target{80})).status,
            Lookup::Status::Hit);
}

}  // namespace
}  // namespace cujit::detail
