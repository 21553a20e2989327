// Issue 16, finding 2: nothing another user could have planted in the cache directory is
// opened. Each test failed on the code before the fix (eb933fb): the planted WAL was replayed
// and its binary served without a warning, the symlinked database was followed and the file
// it named turned into an SQLite database, and shared directories were used without a word.

#include "cache/kernel_cache.hpp"
#include "cache/sqlite_store.hpp"
#include "cache_test_util.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace cujit::detail {
namespace {

using test::FakeCompiler;
using test::TempDir;
using test::WarningCapture;
namespace fs = std::filesystem;

CacheConfig config_in(const std::string& dir) {
  CacheConfig c;
  c.directory = dir;
  c.preload_records = 0;
  return c;
}

struct Victim {
  TempDir dir;
  FakeCompiler compiler;
  test::FakeKernel kernel = test::fake_kernel("k");
  std::string db() const { return dir.file("kernels.db"); }

  // Compiles the kernel once, so the database holds its real binary.
  void use_the_cache() {
    KernelCache cache(config_in(dir.path()));
    cache.get_or_compile(kernel.request, kernel.generator(), compiler.fn(Target{80}));
  }
  // A call from a new process: where the program came from, and its binary.
  std::pair<CacheOutcome, std::string> call() {
    KernelCache cache(config_in(dir.path()));
    CacheOutcome where{};
    auto p =
        cache.get_or_compile(kernel.request, kernel.generator(), compiler.fn(Target{80}), &where);
    return {where, p->binary};
  }
};

// What an attacker writes: a WAL for a copy of the victim's database whose record of the
// victim's kernel carries another (correctly checksummed) binary. Returns the WAL's path.
std::string forge_wal(const Victim& victim, const TempDir& attacker) {
  const std::string copy = attacker.file("kernels.db");
  fs::copy_file(victim.db(), copy);
  auto store = SqliteStore::open_writable(copy, {});
  store->exec("PRAGMA wal_autocheckpoint=0");
  const std::string ckey =
      content_key(victim.kernel.source, Target{80}, victim.kernel.request.kind);
  CompiledProgram evil;
  evil.target = Target{80};
  evil.binary = "EVIL BINARY";
  for (const auto& e : victim.kernel.source.name_expressions)
    evil.lowered_names.emplace_back(e, "_Z" + e);
  evil.metadata = R"({"fake":true})";
  store->remove(ckey);
  store->put(make_record(ckey, victim.kernel.request.kind, victim.kernel.source, evil, now_ms()),
             request_key(victim.kernel.request.kind, victim.kernel.request.spec, Target{80}));
  const std::string wal = attacker.file("planted-wal");
  fs::copy_file(copy + "-wal", wal);  // while the store is open: nothing checkpointed it
  return wal;
}

void expect_refused_once(const WarningCapture& warnings, const std::string& why) {
  EXPECT_EQ(warnings.count(), 1u) << warnings.joined();
  EXPECT_TRUE(warnings.contains(why)) << warnings.joined();
  EXPECT_TRUE(warnings.contains("in-process cache only")) << warnings.joined();
}

TEST(PlantedFiles, AWalLinkedInIsNeitherFollowedNorReplayed) {
  Victim victim;
  victim.use_the_cache();
  TempDir attacker;
  const std::string wal = forge_wal(victim, attacker);
  ASSERT_EQ(::symlink(wal.c_str(), (victim.db() + "-wal").c_str()), 0);
  WarningCapture warnings;
  auto [where, binary] = victim.call();
  EXPECT_NE(binary, "EVIL BINARY");
  EXPECT_EQ(where, CacheOutcome::Compiled);
  expect_refused_once(warnings, "symbolic link");
}

TEST(PlantedFiles, AWalOwnedByAnotherUserIsNotReplayed) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing a file's owner needs root";
  Victim victim;
  victim.use_the_cache();
  TempDir attacker;
  const std::string planted = victim.db() + "-wal";
  fs::copy_file(forge_wal(victim, attacker), planted);
  ASSERT_EQ(::chown(planted.c_str(), 12345, 12345), 0);
  WarningCapture warnings;
  auto [where, binary] = victim.call();
  EXPECT_NE(binary, "EVIL BINARY");
  EXPECT_EQ(where, CacheOutcome::Compiled);
  expect_refused_once(warnings, "owned by uid 12345");
}

TEST(PlantedFiles, ASymlinkedDatabaseIsNotFollowed) {
  Victim victim;
  const std::string precious = victim.dir.file("precious.txt");  // an empty file of the victim
  std::ofstream(precious).close();
  ASSERT_EQ(::symlink(precious.c_str(), victim.db().c_str()), 0);
  WarningCapture warnings;
  EXPECT_EQ(victim.call().first, CacheOutcome::Compiled);
  EXPECT_EQ(fs::file_size(precious), 0u);  // before the fix: an SQLite database
  expect_refused_once(warnings, "symbolic link");
}

TEST(PlantedFiles, ASharedStickyDirectoryIsRefused) {
  Victim victim;
  ASSERT_EQ(::chmod(victim.dir.path().c_str(), 01777), 0);
  WarningCapture warnings;
  EXPECT_EQ(victim.call().first, CacheOutcome::Compiled);
  EXPECT_FALSE(fs::exists(victim.db()));
  expect_refused_once(warnings, "writable by group or others");
  // Allowed explicitly, it is used.
  CacheConfig allowed = config_in(victim.dir.path());
  allowed.allow_foreign_owner = true;
  KernelCache cache(allowed);
  cache.get_or_compile(victim.kernel.request, victim.kernel.generator(),
                       victim.compiler.fn(Target{80}));
  EXPECT_TRUE(fs::exists(victim.db()));
}

TEST(PlantedFiles, ADirectoryOwnedByAnotherUserIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "changing a directory's owner needs root";
  Victim victim;
  ASSERT_EQ(::chown(victim.dir.path().c_str(), 12345, 12345), 0);
  WarningCapture warnings;
  EXPECT_EQ(victim.call().first, CacheOutcome::Compiled);
  expect_refused_once(warnings, "owned by uid 12345");
  ASSERT_EQ(::chown(victim.dir.path().c_str(), ::geteuid(), ::getegid()), 0);
}

// Only what lies inside the private directory is judged: a cache reached through a symbolic
// link higher up (a linked home or scratch directory) is used as before.
TEST(PlantedFiles, ALinkedParentDirectoryIsFine) {
  TempDir dir;
  fs::create_directory(dir.file("real"));
  ASSERT_EQ(::symlink(dir.file("real").c_str(), dir.file("home").c_str()), 0);
  FakeCompiler compiler;
  auto k = test::fake_kernel("k");
  WarningCapture warnings;
  for (CacheOutcome expected : {CacheOutcome::Compiled, CacheOutcome::DiskHit}) {
    KernelCache cache(config_in(dir.file("home") + "/cache"));
    CacheOutcome where{};
    cache.get_or_compile(k.request, k.generator(), compiler.fn(Target{80}), &where);
    EXPECT_EQ(where, expected);
  }
  EXPECT_EQ(warnings.count(), 0u) << warnings.joined();
}

}  // namespace
}  // namespace cujit::detail
