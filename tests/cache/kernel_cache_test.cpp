#include "cache/kernel_cache.hpp"

#include "cache/database_admin.hpp"
#include "cache/database_transfer.hpp"
#include "cache/manifest.hpp"
#include "cache/sqlite_store.hpp"
#include "cache/store.hpp"
#include "cache_test_util.hpp"
#include "support/warning.hpp"

#include <cujit/error.hpp>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

namespace cujit::detail {
namespace {

using test::fake_kernel;
using test::FakeCompiler;
using test::TempDir;
using test::WarningCapture;

CacheConfig config_in(const TempDir& dir) {
  CacheConfig c;
  c.database_path = dir.file("kernels.db");
  return c;
}

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

TEST(KernelCache, MemoryHitReturnsTheSameProgram) {
  KernelCache cache(nullptr, {});
  FakeCompiler compiler;
  auto k = fake_kernel("k");
  CacheOutcome where{};
  auto a = cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  auto b = cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::MemoryHit);
  EXPECT_EQ(a.get(), b.get());
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(cache.stats().memory_hits, 1u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(a->lowered_name("k"), "_Zk");
  // Another target, kind or spec is another kernel.
  auto other = fake_kernel("k", Target{90});
  cache.get_or_compile(other.request, other.generator(), compiler.fn(Target{90}));
  auto kind = fake_kernel("k");
  kind.request.kind = "other";
  cache.get_or_compile(kind.request, kind.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(compiler.calls, 3);
  EXPECT_EQ(cache.memory_size(), 3u);
}

TEST(KernelCache, ConcurrentRequestsCompileOnce) {
  KernelCache cache(nullptr, {});
  FakeCompiler compiler;
  auto k = fake_kernel("k");
  std::atomic<bool> go{false};
  auto slow = [&](const SourceProgram& p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return compiler.fn(Target{80})(p);
  };
  std::vector<std::thread> threads;
  std::vector<const CompiledProgram*> results(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      while (!go) std::this_thread::yield();
      results[i] = cache.get_or_compile(k.request, k.generator(), slow).get();
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiler.calls, 1);
  for (auto* r : results) EXPECT_EQ(r, results[0]);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().memory_hits, 15u);
}

TEST(KernelCache, CompileErrorsPropagateToAllWaitersAndAreRetried) {
  KernelCache cache(nullptr, {});
  auto k = fake_kernel("k");
  std::atomic<int> calls{0};
  auto failing = [&](const SourceProgram& p) -> CompiledProgram {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    throw CompileError("cujit: bad kernel", "log", {}, p.source);
  };
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      try {
        cache.get_or_compile(k.request, k.generator(), failing);
      } catch (const CompileError&) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 4);
  EXPECT_LE(calls, 4);
  EXPECT_EQ(cache.memory_size(), 0u);
  FakeCompiler compiler;
  EXPECT_NO_THROW(cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80})));
  EXPECT_EQ(compiler.calls, 1);
}

TEST(KernelCache, WarmDatabaseHitSkipsGenerationAndCompilation) {
  TempDir dir;
  FakeCompiler compiler;
  std::atomic<int> generated{0};
  auto k = fake_kernel("k");
  k.generate_calls = &generated;
  std::shared_ptr<const CompiledProgram> first;
  {
    KernelCache cache(config_in(dir));
    first = cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  }
  EXPECT_EQ(generated, 1);
  KernelCache fresh(config_in(dir));  // as a new process would
  CacheOutcome where{};
  auto again = fresh.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(generated, 1);
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(again->binary, first->binary);
  EXPECT_EQ(again->lowered_names, first->lowered_names);
  EXPECT_EQ(again->metadata, first->metadata);
  EXPECT_EQ(again->log, first->log);
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
}

TEST(KernelCache, SameSourceFromAnotherRequestIsFoundByContent) {
  TempDir dir;
  FakeCompiler compiler;
  KernelCache cache(config_in(dir));
  auto a = fake_kernel("k");
  cache.get_or_compile(a.request, a.generator(), compiler.fn(Target{80}));
  auto b = a;
  b.request.spec = "another spelling of the same kernel";
  CacheOutcome where{};
  cache.get_or_compile(b.request, b.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(compiler.calls, 1);
  // The new request is now mapped: a fresh cache finds it without generating.
  KernelCache fresh(config_in(dir));
  std::atomic<int> generated{0};
  b.generate_calls = &generated;
  fresh.get_or_compile(b.request, b.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(generated, 0);
}

// A stored binary is damaged; a new cache (after prefetch() when `prefetched`: the read-ahead
// must skip the entry, so the lookup meets it) deletes it, warns once and recompiles.
void expect_damaged_binary_recompiled(bool prefetched) {
  TempDir dir;
  FakeCompiler compiler;
  auto k = fake_kernel("k");
  {
    KernelCache cache(config_in(dir));
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
    ASSERT_TRUE(store);
    store->exec("UPDATE kernels SET binary = CAST(upper(binary) AS BLOB)");
  }
  WarningCapture warnings;
  KernelCache cache(config_in(dir));
  if (prefetched) cache.prefetch().wait();
  CacheOutcome where{};
  auto p = cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(compiler.calls, 2);
  EXPECT_EQ(p->binary.substr(0, 8), "FAKEBIN:");
  EXPECT_TRUE(warnings.contains("checksum")) << warnings.joined();
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  KernelCache fresh(config_in(dir));
  fresh.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(p->binary,
            fresh.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}))->binary);
}

TEST(KernelCache, ChecksumMismatchDeletesAndRecompiles) { expect_damaged_binary_recompiled(false); }

TEST(KernelCache, DamagedMemoryStoreEntryIsRemoved) {
  auto store = std::make_shared<MemoryStore>();
  FakeCompiler compiler;
  auto k = fake_kernel("k");
  KernelCache(store, {}).get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  ASSERT_EQ(store->size(), 1u);
  store->records().begin()->second.program.binary += "tampered";
  WarningCapture warnings;
  KernelCache cache(store, {});
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(compiler.calls, 2);
  EXPECT_TRUE(store->records().begin()->second.checksum_ok());
  EXPECT_EQ(warnings.count(), 1u);
}

TEST(KernelCache, CorruptDatabaseFileIsMovedAsideWithOneWarning) {
  TempDir dir;
  std::ofstream(dir.file("kernels.db")) << std::string(4096, 'z');
  WarningCapture warnings;
  FakeCompiler compiler;
  KernelCache cache(config_in(dir));
  auto k = fake_kernel("k");
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains(dir.file("kernels.db")));
  KernelCache fresh(config_in(dir));
  CacheOutcome where{};
  fresh.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
}

TEST(KernelCache, DatabaseTruncatedWhileClosedIsRecoveredDuringLookup) {
  TempDir dir;
  FakeCompiler compiler;
  std::vector<test::FakeKernel> kernels;
  for (int i = 0; i < 40; ++i) kernels.push_back(fake_kernel("k" + std::to_string(i)));
  {
    KernelCache cache(config_in(dir));
    for (auto& k : kernels) {
      k.source.source += std::string(20000, ' ') + "// " + k.request.spec;
      cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    }
  }
  std::filesystem::resize_file(dir.file("kernels.db"),
                               std::filesystem::file_size(dir.file("kernels.db")) / 4);
  WarningCapture warnings;
  KernelCache cache(config_in(dir));
  for (auto& k : kernels) {
    EXPECT_NO_THROW(cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80})));
  }
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("moved it to")) << warnings.joined();
  auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
  ASSERT_TRUE(store);
  EXPECT_EQ(store->integrity_check(), "ok");
}

TEST(KernelCache, DamageSeenByManyThreadsIsRepairedOnce) {
  TempDir dir;
  FakeCompiler compiler;
  std::vector<test::FakeKernel> kernels;
  for (int i = 0; i < 32; ++i) kernels.push_back(fake_kernel("k" + std::to_string(i)));
  {
    KernelCache cache(config_in(dir));
    for (auto& k : kernels) {
      k.source.source += std::string(20000, ' ') + "// " + k.request.spec;
      cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    }
  }
  WarningCapture warnings;
  KernelCache cache(config_in(dir));
  ASSERT_TRUE(cache.writable_store());  // opened while intact
  std::filesystem::resize_file(dir.file("kernels.db"),
                               std::filesystem::file_size(dir.file("kernels.db")) / 4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < 32; i += 8) {
        cache.get_or_compile(kernels[i].request, kernels[i].generator(), compiler.fn(Target{80}));
      }
    });
  }
  for (auto& t : threads) t.join();
  int moved = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    moved += e.path().filename().string().find(".corrupt-") != std::string::npos;
  }
  EXPECT_EQ(moved, 1);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_EQ(std::dynamic_pointer_cast<SqliteStore>(cache.writable_store())->integrity_check(),
            "ok");
}

TEST(KernelCache, FullDiskFallsBackToMemoryWithOneWarning) {
  TempDir dir;
  WarningCapture warnings;
  FakeCompiler compiler;
  KernelCache cache(config_in(dir));
  auto store = std::dynamic_pointer_cast<SqliteStore>(cache.writable_store());
  ASSERT_TRUE(store);
  store->exec("PRAGMA max_page_count = " +
              std::to_string(std::filesystem::file_size(dir.file("kernels.db")) / 4096 + 4));
  std::vector<std::shared_ptr<const CompiledProgram>> programs;
  for (int i = 0; i < 20; ++i) {
    auto k = fake_kernel("k" + std::to_string(i));
    k.source.source += std::string(30000, ' ') + "// " + std::to_string(i);
    programs.push_back(cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80})));
  }
  EXPECT_EQ(compiler.calls, 20);
  ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("full")) << warnings.joined();
  EXPECT_TRUE(warnings.contains(dir.file("kernels.db"))) << warnings.joined();
  // Still served from memory.
  auto k = fake_kernel("k3");
  k.source.source += std::string(30000, ' ') + "// 3";
  CacheOutcome where{};
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::MemoryHit);
  EXPECT_EQ(store->integrity_check(), "ok");
  // The flush at exit meets the same full disk: still one warning per cause (issue 16).
  auto again = fake_kernel("k0");
  again.source.source += std::string(30000, ' ') + "// 0";
  KernelCache reader(config_in(dir));
  for (int i = 0; i < 3; ++i) {
    reader.get_or_compile(again.request, again.generator(), compiler.fn(Target{80}));
  }
  cache.flush();
  reader.flush();
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
}

TEST(KernelCache, LockHeldTooLongFallsBackWithOneWarning) {
  TempDir dir;
  CacheConfig config = config_in(dir);
  config.busy_timeout_ms = 100;
  auto holder = SqliteStore::open_writable(config.database_path, {});
  holder->exec("BEGIN EXCLUSIVE");
  WarningCapture warnings;
  FakeCompiler compiler;
  KernelCache cache(config);
  for (int i = 0; i < 5; ++i) {
    auto k = fake_kernel("k" + std::to_string(i));
    EXPECT_NO_THROW(cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80})));
  }
  holder->exec("ROLLBACK");
  EXPECT_EQ(compiler.calls, 5);
  ASSERT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("locked")) << warnings.joined();
  EXPECT_TRUE(warnings.contains("in-process cache only")) << warnings.joined();
}

TEST(KernelCache, UnusableDirectoryFallsBackWithOneWarning) {
  TempDir dir;
  std::ofstream(dir.file("not-a-dir")) << "file";
  CacheConfig config;
  config.directory = dir.file("not-a-dir/cujit");
  WarningCapture warnings;
  FakeCompiler compiler;
  KernelCache cache(config);
  for (int i = 0; i < 3; ++i) {
    auto k = fake_kernel("k" + std::to_string(i));
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  }
  EXPECT_EQ(compiler.calls, 3);
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains("not-a-dir")) << warnings.joined();
  EXPECT_EQ(cache.writable_store(), nullptr);
}

// Runs `body` as an unprivileged user in a child process (root ignores permissions); the
// child's exit status is the number of failed checks.
int as_unprivileged(const std::function<int()>& body) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) ::_exit(100);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

TEST(KernelCache, ReadOnlyDirectoryFallsBackWithOneWarning) {
  TempDir dir;
  std::string ro = dir.file("ro");
  ASSERT_EQ(::mkdir(ro.c_str(), 0555), 0);
  ::chmod(dir.path().c_str(), 0755);
  int failures = as_unprivileged([&] {
    int bad = 0;
    std::atomic<int> warned{0};
    set_warning_sink([&](const std::string&) { ++warned; });
    CacheConfig config;
    config.directory = ro;
    KernelCache cache(config);
    FakeCompiler compiler;
    for (int i = 0; i < 3; ++i) {
      auto k = fake_kernel("k" + std::to_string(i));
      try {
        cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
      } catch (...) {
        ++bad;
      }
    }
    bad += compiler.calls != 3;
    bad += warned != 1;
    return bad;
  });
  EXPECT_EQ(failures, 0);
}

TEST(KernelCache, DeploymentDatabaseIsConsultedBeforeCompilingAndNeverWritten) {
  TempDir dir;
  FakeCompiler compiler;
  auto k = fake_kernel("k");
  auto other = fake_kernel("other");
  {
    CacheConfig build;
    build.database_path = dir.file("app.db");
    KernelCache cache(build);
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    DatabaseTransfer(*std::dynamic_pointer_cast<SqliteStore>(cache.writable_store()))
        .finalize_for_deployment();
  }
  auto app_size = std::filesystem::file_size(dir.file("app.db"));
  CacheConfig run = config_in(dir);
  run.deployment_databases = {dir.file("missing.db"), dir.file("app.db")};
  WarningCapture warnings;
  KernelCache cache(run);
  std::atomic<int> generated{0};
  k.generate_calls = &generated;
  CacheOutcome where{};
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DeploymentHit);
  EXPECT_EQ(generated, 0);
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_EQ(warnings.count(), 1u);  // the missing deployment database
  EXPECT_TRUE(warnings.contains("missing.db"));
  cache.get_or_compile(other.request, other.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
  EXPECT_EQ(std::filesystem::file_size(dir.file("app.db")), app_size);
  EXPECT_FALSE(std::filesystem::exists(dir.file("app.db-wal")));
  EXPECT_EQ(cache.stats().deployment_hits, 1u);
  // The compiled kernel went to the writable database, not to app.db.
  auto ro = SqliteStore::open_read_only(dir.file("app.db"), {});
  EXPECT_EQ(DatabaseAdmin(*ro).list().size(), 1u);
  EXPECT_THROW(cache.add_deployment_database(dir.file("missing.db")), CacheError);
}

TEST(KernelCache, PrefetchOpensTheDatabasesInTheBackground) {
  TempDir dir;
  CacheConfig config = config_in(dir);
  config.deployment_databases = {dir.file("missing.db")};
  WarningCapture warnings;
  {
    KernelCache cache(config);
    cache.prefetch();
    for (int i = 0; i < 500 && !std::filesystem::exists(config.database_path); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_TRUE(std::filesystem::exists(config.database_path));
    EXPECT_TRUE(warnings.contains("missing.db")) << warnings.joined();
    FakeCompiler compiler;
    auto k = fake_kernel("k");
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
    EXPECT_EQ(compiler.calls, 1);
  }
  // The cache may be destroyed while its prefetch runs (nothing on disk here: the thread
  // would outlive the temporary directory).
  CacheConfig memory_only;
  memory_only.writable = false;
  KernelCache unused(memory_only);
  unused.prefetch();
}

// Kernels "a" then "b" compiled into the database in `dir` through a cache that was then
// closed (a process that ran them and ended).
struct TwoStoredKernels {
  TempDir dir;
  FakeCompiler compiler;
  test::FakeKernel a = fake_kernel("a");
  test::FakeKernel b = fake_kernel("b");

  TwoStoredKernels() {
    KernelCache cache(config_in(dir));
    cache.get_or_compile(a.request, a.generator(), compiler.fn(Target{80}));
    cache.get_or_compile(b.request, b.generator(), compiler.fn(Target{80}));
  }
};

TEST(KernelCache, PrefetchReadsRecentlyUsedKernelsAhead) {
  TwoStoredKernels stored;
  auto& [dir, compiler, a, b] = stored;
  KernelCache fresh(config_in(dir));  // as a new process would
  fresh.prefetch().wait();
  // Served from what prefetch read, even with the database emptied underneath.
  auto store = std::dynamic_pointer_cast<SqliteStore>(fresh.writable_store());
  ASSERT_TRUE(store);
  store->exec("DELETE FROM requests; DELETE FROM kernels");
  std::atomic<int> generated{0};
  a.generate_calls = &generated;
  CacheOutcome where{};
  auto p = fresh.get_or_compile(a.request, a.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(generated, 0);
  EXPECT_EQ(compiler.calls, 2);
  EXPECT_EQ(p->binary.substr(0, 8), "FAKEBIN:");
  EXPECT_EQ(fresh.stats().disk_hits, 1u);
  fresh.get_or_compile(b.request, b.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::DiskHit);
  EXPECT_EQ(compiler.calls, 2);

  // preload_records = 0 reads nothing ahead: the emptied database means compiling again.
  {
    KernelCache cache(config_in(dir));
    cache.get_or_compile(a.request, a.generator(), compiler.fn(Target{80}));
  }
  CacheConfig none = config_in(dir);
  none.preload_records = 0;
  KernelCache off(none);
  off.prefetch().wait();
  std::dynamic_pointer_cast<SqliteStore>(off.writable_store())
      ->exec("DELETE FROM requests; DELETE FROM kernels");
  off.get_or_compile(a.request, a.generator(), compiler.fn(Target{80}), &where);
  EXPECT_EQ(where, CacheOutcome::Compiled);
}

TEST(KernelCache, PreloadedProgramsAreThoseNoLookupTookYet) {
  TwoStoredKernels stored;
  auto& [dir, compiler, a, b] = stored;
  KernelCache fresh(config_in(dir));
  EXPECT_TRUE(fresh.preloaded_programs().empty());  // nothing read before prefetch()
  fresh.prefetch().wait();
  auto ahead = fresh.preloaded_programs();
  ASSERT_EQ(ahead.size(), 2u);
  EXPECT_EQ(ahead[0]->lowered_name("b"), "_Zb");  // most recently used first
  EXPECT_EQ(ahead[1]->lowered_name("a"), "_Za");
  // A lookup hands over the very program read ahead (the runtime keys the modules it loads
  // ahead by it) and takes it out of the list.
  auto p = fresh.get_or_compile(b.request, b.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(p.get(), ahead[0].get());
  auto left = fresh.preloaded_programs();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].get(), ahead[1].get());
  // A second prefetch of the same configuration (Python's import started one, the device's
  // start asks again) is the first one: nothing is read twice, no taken kernel comes back.
  fresh.prefetch().wait();
  EXPECT_EQ(fresh.preloaded_programs().size(), 1u);
}

TEST(KernelCache, PrefetchNeverReadsADamagedKernelAhead) { expect_damaged_binary_recompiled(true); }

// A program that failed to compile fails again with the same error, without the compiler
// (issue 35: one NVRTC run per snippet error in a process); another program still compiles.
TEST(KernelCache, AProgramThatFailedToCompileFailsAgainWithoutTheCompiler) {
  TempDir dir;
  KernelCache cache(config_in(dir));
  auto bad = fake_kernel("bad");
  int calls = 0;
  const CompileFn failing = [&](const SourceProgram&) -> CompiledProgram {
    ++calls;
    throw CompileError("cujit: kernel 'bad': 2:8: expected an expression", "log", {"-minimal"},
                       "source", 2, 8);
  };
  for (int round = 0; round < 3; ++round) {
    try {
      cache.get_or_compile(bad.request, bad.generator(), failing);
      ADD_FAILURE() << "compiled";
    } catch (const CompileError& e) {
      EXPECT_EQ(std::string(e.what()), "cujit: kernel 'bad': 2:8: expected an expression");
      EXPECT_EQ(e.line(), 2);
      EXPECT_EQ(e.column(), 8);
      EXPECT_EQ(e.log(), "log");
    }
  }
  EXPECT_EQ(calls, 1);
  // A computed include's file is in no key: its failures are not kept, so a fix is seen.
  auto computed = fake_kernel("computed");
  const GenerateFn with_macro = [] {
    SourceProgram p;
    p.source = "#define HEADER \"h.cuh\"\n#include HEADER\n";
    return p;
  };
  for (int round = 0; round < 2; ++round) {
    EXPECT_THROW(cache.get_or_compile(computed.request, with_macro, failing), CompileError);
  }
  EXPECT_EQ(calls, 3);
  FakeCompiler compiler;
  auto good = fake_kernel("good");
  cache.get_or_compile(good.request, good.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(compiler.calls, 1);
}

TEST(KernelCache, MemoryStoreListsRecentKernelsNewestFirst) {
  auto store = std::make_shared<MemoryStore>();
  FakeCompiler compiler;
  KernelCache cache(store, {});
  for (const char* name : {"a", "b", "c"}) {
    auto k = fake_kernel(name);
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  }
  std::int64_t stamp = 100;
  for (auto& [key, record] : store->records()) record.last_used = stamp++;
  store->records().begin()->second.program.binary += "tampered";  // oldest, and damaged
  auto recent = store->recent(5);
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_GT(recent[0].second.last_used, recent[1].second.last_used);
  EXPECT_TRUE(recent[0].second.checksum_ok());
  EXPECT_EQ(store->recent(1).size(), 1u);
}

TEST(KernelCache, DisabledCacheUsesNoFiles) {
  TempDir dir;
  CacheConfig config = config_in(dir);
  config.writable = false;
  KernelCache cache(config);
  FakeCompiler compiler;
  auto k = fake_kernel("k");
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}));
  EXPECT_EQ(compiler.calls, 1);
  EXPECT_FALSE(std::filesystem::exists(dir.file("kernels.db")));
  EXPECT_EQ(cache.writable_store(), nullptr);
}

TEST(KernelCache, RecordsManifestEntriesOnce) {
  TempDir dir;
  std::string manifest = dir.file("manifest.jsonl");
  std::ofstream(manifest) << R"({"kind":"test","name":"pre"})"
                          << "\n";
  KernelCache cache(nullptr, {}, manifest);
  FakeCompiler compiler;
  auto a = fake_kernel("a");
  a.request.manifest_entry = R"({"name": "a", "kind": "test"})";
  auto pre = fake_kernel("pre");
  pre.request.manifest_entry = R"({"name":"pre","kind":"test"})";
  auto none = fake_kernel("none");
  for (int round = 0; round < 3; ++round) {
    cache.get_or_compile(a.request, a.generator(), compiler.fn(Target{80}));
    cache.get_or_compile(pre.request, pre.generator(), compiler.fn(Target{80}));
    cache.get_or_compile(none.request, none.generator(), compiler.fn(Target{80}));
    cache.clear_memory();  // so that every round reaches the recorder
  }
  // The same entry for another target is the same manifest line.
  auto a90 = fake_kernel("a", Target{90});
  a90.request.manifest_entry = a.request.manifest_entry;
  cache.get_or_compile(a90.request, a90.generator(), compiler.fn(Target{90}));
  auto lines = lines_of(manifest);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], R"({"kind":"test","name":"pre"})");
  EXPECT_EQ(lines[1], R"({"kind":"test","name":"a"})");
  // Another recorder (another process) does not duplicate either.
  ManifestRecorder other(manifest);
  EXPECT_FALSE(other.record(R"({"kind":"test","name":"a"})"));
  EXPECT_TRUE(other.record(R"({"kind":"test","name":"b"})"));
  EXPECT_EQ(lines_of(manifest).size(), 3u);
  EXPECT_THROW(other.record(R"({"name":"no kind"})"), ArgumentError);
  EXPECT_THROW(other.record("not json"), ArgumentError);
}

TEST(KernelCache, ManifestFromConcurrentProcessesHasNoDuplicates) {
  TempDir dir;
  std::string manifest = dir.file("manifest.jsonl");
  std::vector<pid_t> children;
  for (int p = 0; p < 8; ++p) {
    pid_t pid = ::fork();
    if (pid == 0) {
      ManifestRecorder recorder(manifest);
      for (int i = 0; i < 30; ++i) {
        recorder.record(R"({"kind":"test","i":)" + std::to_string((i * 7 + p) % 40) + "}");
      }
      ::_exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto lines = lines_of(manifest);
  std::set<std::string> unique(lines.begin(), lines.end());
  EXPECT_EQ(unique.size(), lines.size());
  EXPECT_EQ(lines.size(), 40u);
}

TEST(Replay, UnknownKindAndMalformedEntries) {
  try {
    replay(R"({"kind":"no-such-kind"})", Target{80});
    FAIL();
  } catch (const ArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-kind"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("raw"), std::string::npos);  // lists known kinds
  }
  EXPECT_THROW(replay("{", Target{80}), ArgumentError);
  EXPECT_THROW(replay(R"({"kind":"raw"})", Target{80}), ArgumentError);  // no source
  EXPECT_THROW(replay(R"({"kind":"raw","source":"x","options":"-O3"})", Target{80}), ArgumentError);
}

TEST(Replay, RegisteredKindRebuildsTheRequest) {
  register_replay("test-replay", [](const std::string& entry, const Target& target) {
    ReplayedKernel k;
    k.request.kind = "test-replay";
    k.request.spec = entry;
    k.request.target = target;
    k.generate = [] { return SourceProgram{}; };
    return k;
  });
  ReplayedKernel k = replay(R"({"kind":"test-replay","x":1})", Target{86});
  EXPECT_EQ(k.request.target, Target{86});
  EXPECT_EQ(k.request.spec, R"({"kind":"test-replay","x":1})");
}

TEST(CacheConfig, FromEnvironment) {
  WarningCapture warnings;
  const std::string home = std::getenv("HOME") != nullptr ? std::getenv("HOME") : "";
  ::setenv("CUJIT_CACHE", "readonly", 1);
  ::setenv("CUJIT_CACHE_PATH", "/a.db::/b.db", 1);
  ::setenv("CUJIT_CACHE_DIR", "/tmp/somewhere", 1);
  ::setenv("CUJIT_CACHE_MAX_SIZE", "512M", 1);
  ::setenv("CUJIT_RECORD", "/tmp/m.jsonl", 1);
  ::setenv("CUJIT_CACHE_ALLOW_FOREIGN", "1", 1);
  CacheConfig c = CacheConfig::from_environment();
  EXPECT_FALSE(c.writable);
  EXPECT_EQ(c.deployment_databases, (std::vector<std::string>{"/a.db", "/b.db"}));
  EXPECT_EQ(c.directory, "/tmp/somewhere");
  EXPECT_EQ(default_cache_directory(), "/tmp/somewhere");
  EXPECT_EQ(c.max_size, 512u << 20);
  EXPECT_EQ(c.record_path, "/tmp/m.jsonl");
  EXPECT_TRUE(c.allow_foreign_owner);
  ::setenv("CUJIT_CACHE", "off", 1);
  ::setenv("CUJIT_CACHE_MAX_SIZE", "lots", 1);
  c = CacheConfig::from_environment();
  EXPECT_FALSE(c.writable);
  EXPECT_TRUE(c.deployment_databases.empty());
  EXPECT_EQ(c.max_size, kDefaultCacheMaxSize);
  EXPECT_EQ(warnings.count(), 1u);
  for (const char* v : {"CUJIT_CACHE", "CUJIT_CACHE_PATH", "CUJIT_CACHE_DIR",
                        "CUJIT_CACHE_MAX_SIZE", "CUJIT_RECORD", "CUJIT_CACHE_ALLOW_FOREIGN"}) {
    ::unsetenv(v);
  }
  c = CacheConfig::from_environment();
  EXPECT_TRUE(c.writable);
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(default_cache_directory(), "/xdg/cujit");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_cache_directory(), "/home/someone/.cache/cujit");
  ::setenv("HOME", home.c_str(), 1);
}

TEST(Warnings, GoThroughTheSinkAndAreCounted) {
  std::uint64_t before = warning_count();
  {
    WarningCapture warnings;
    warn("hello");
    EXPECT_EQ(warnings.messages(), std::vector<std::string>{"hello"});
  }
  EXPECT_EQ(warning_count(), before + 1);
  testing::internal::CaptureStderr();
  warn("to stderr");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "cujit: warning: to stderr\n");
}

}  // namespace
}  // namespace cujit::detail
